"""The feature cache (host/feature_cache.py): what it stores, when it is reused."""
import shutil

import numpy as np
import pytest

import host.datasets
from host.datasets import load_session
from host.feature_cache import CachedSessions, cache_key, cached_features
from host.simulate import simulate_to_files


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    out = tmp_path_factory.mktemp("rec")
    return [str(p) for p in simulate_to_files("exp2", 2, 11, out, duration_s=20,
                                              progress=False)]


def test_an_entry_reads_back_exactly_what_load_session_computes(recordings, tmp_path):
    entries = [cached_features(p, "cop", cache_dir=tmp_path) for p in recordings]
    source = CachedSessions(entries)
    fresh = [load_session(p, "cop") for p in recordings]
    for i, want in enumerate(fresh):
        got = source[i]
        assert np.array_equal(got.X, want.X, equal_nan=True)
        assert np.array_equal(got.y, want.y) and np.array_equal(got.t_s, want.t_s)
        assert (got.subject, got.track, got.rate_hz, got.feature_names) == (
            want.subject, want.track, want.rate_hz, want.feature_names)
        assert np.array_equal(source.labels(i), want.y)
        assert entries[i].labels == tuple(sorted(set(want.y.tolist())))
    for j in range(fresh[0].X.shape[1]):
        assert np.array_equal(source.column(j), np.concatenate([s.X[:, j] for s in fresh]),
                              equal_nan=True)
    # Never pickle: every member loads with allow_pickle=False.
    with np.load(entries[0].file, allow_pickle=False) as z:
        assert all(z[k].dtype != object for k in z.files)


def test_a_hit_is_not_recomputed_and_the_key_follows_content_and_settings(
        recordings, tmp_path, monkeypatch):
    first = cached_features(recordings[0], "cop", cache_dir=tmp_path)

    def fail(*args, **kwargs):
        raise AssertionError("recomputed a cached recording")

    monkeypatch.setattr(host.datasets, "load_session", fail)
    assert cached_features(recordings[0], "cop", cache_dir=tmp_path) == first
    # A copy under another name is the same content: same entry.
    copy = tmp_path / "copy.h5"
    shutil.copyfile(recordings[0], copy)
    assert cache_key(copy, "cop", None, None) == cache_key(recordings[0], "cop", None, None)
    # Other settings, or other bytes, are other entries.
    keys = {cache_key(recordings[0], "cop", None, None),
            cache_key(recordings[0], "loadcells", None, None),
            cache_key(recordings[0], "cop", "simulator", None),
            cache_key(recordings[0], "cop", None, {"WF": "W"}),
            cache_key(recordings[1], "cop", None, None)}
    assert len(keys) == 5
    with open(copy, "ab") as fh:
        fh.write(b"\0")
    assert cache_key(copy, "cop", None, None) != cache_key(recordings[0], "cop", None, None)


def test_a_missing_or_damaged_entry_is_computed_again(recordings, tmp_path):
    entry = cached_features(recordings[0], "cop", cache_dir=tmp_path)
    want = CachedSessions([entry])[0].X
    open(entry.file, "wb").close()  # damaged
    assert cached_features(recordings[0], "cop", cache_dir=tmp_path) == entry
    # A worker that cannot see the entry (a cache per machine) recomputes it.
    import os
    os.unlink(entry.file)
    assert np.array_equal(CachedSessions([entry])[0].X, want, equal_nan=True)
    assert os.path.exists(entry.file)


def test_an_entry_written_on_another_machine_is_recomputed_into_this_ones_cache(
        recordings):
    import dataclasses
    import os

    entry = cached_features(recordings[1], "cop")  # the default folder (this test's)
    want = CachedSessions([entry])[0].X
    # As a worker on another machine reports it: a file this machine cannot see.
    elsewhere = dataclasses.replace(entry, file="/nonexistent/other-machine/cache/x.npz")
    os.unlink(entry.file)
    assert np.array_equal(CachedSessions([elsewhere])[0].X, want, equal_nan=True)
    assert os.path.exists(entry.file)
