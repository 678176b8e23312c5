"""A cache of labelled features per recording, so folds read features, not HDF5.

Evaluating or training over a fleet of recordings (100 sessions of 10 minutes) computes
each recording's features once, on whichever machine has time (a Dask worker), and
writes them as one ``.npz`` file (no pickle: plain arrays and a JSON header) in a
cache folder.  Folds then read the cached features of the recordings they need, one
recording at a time where the recognizer can learn that way
(``recognizers.sources``), so no process holds more than one fold's features.

The cache key is a digest of the recording's *content* (not its name or time stamp),
the feature settings (feature set, label track, label map), the calibration the
features use, and the source of the code that computes them: a changed recording, a
new calibration or a new feature extractor never reads a stale entry.  Entries are
written to a temporary name and renamed, so workers sharing a folder never see half a
file; a worker that cannot see an entry (a cache folder per machine) recomputes it.

The folder is ``--feature-cache DIR``, else ``$WALKERLAB_FEATURE_CACHE``, else
``~/.cache/walkerlab/features``.  Deleting it is always safe.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pathlib
import tempfile
import zipfile
from dataclasses import dataclass

import numpy as np

from host.errors import UserError

#: Bump to invalidate every entry when the file layout changes.
CACHE_FORMAT = 1

_CODE_FILES = ("host/features.py", "host/datasets.py", "host/feature_cache.py",
               "host/recording/reader.py", "host/recording/labels.py",
               "calibration/walker_calibration.py")
_code_digest: str | None = None


def default_cache_dir() -> pathlib.Path:
    env = os.environ.get("WALKERLAB_FEATURE_CACHE")
    if env:
        return pathlib.Path(env)
    return pathlib.Path.home() / ".cache" / "walkerlab" / "features"


def _code_version() -> str:
    """Digest of the source that turns a recording into labelled features."""
    global _code_digest
    if _code_digest is None:
        root = pathlib.Path(__file__).resolve().parents[1]
        h = hashlib.blake2b(digest_size=16)
        for rel in _CODE_FILES:
            f = root / rel
            h.update(rel.encode())
            h.update(f.read_bytes() if f.exists() else b"-")
        _code_digest = h.hexdigest()
    return _code_digest


def file_digest(path) -> str:
    """blake2b of a file's bytes."""
    h = hashlib.blake2b(digest_size=20)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class CacheEntry:
    """One recording's cached labelled features (small: what the client handles)."""

    recording: str  # the HDF5 file
    file: str  # the cache .npz
    subject: str
    n_frames: int
    rate_hz: float
    labels: tuple[str, ...]  # distinct activity codes
    track: str
    feature_names: tuple[str, ...]
    # settings, so a worker without the file can recompute it
    feature_set: str = "cop"
    requested_track: str | None = None
    label_map: tuple[tuple[str, str], ...] = ()
    cache_dir: str | None = None  # as given (None: each machine's default folder)


def cache_key(path, feature_set: str, track: str | None, label_map: dict | None) -> str:
    from host.recording import read_attrs

    attrs = read_attrs(path)
    calibration = attrs.get("calibration")
    if not calibration:  # features use the walker's calibration file: key on its content
        from calibration import calibration_for

        calibration = calibration_for(attrs.get("walker_id") or "walker").to_dict()
    if not isinstance(calibration, str):
        calibration = json.dumps(calibration, sort_keys=True)
    settings = json.dumps({"format": CACHE_FORMAT, "code": _code_version(),
                           "feature_set": feature_set, "track": track,
                           "label_map": sorted((label_map or {}).items()),
                           "calibration": calibration}, sort_keys=True)
    h = hashlib.blake2b(digest_size=20)
    h.update(file_digest(path).encode())
    h.update(settings.encode())
    return h.hexdigest()


def cached_features(path, feature_set: str = "cop", track: str | None = None,
                    label_map: dict | None = None, cache_dir=None) -> CacheEntry:
    """The cache entry of a recording's labelled features, computing it on a miss."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise UserError("%s: no such file" % path)
    folder = pathlib.Path(cache_dir) if cache_dir is not None else default_cache_dir()
    file = folder / (cache_key(path, feature_set, track, label_map) + ".npz")
    settings = dict(feature_set=feature_set, requested_track=track,
                    label_map=tuple(sorted((label_map or {}).items())),
                    cache_dir=None if cache_dir is None else os.fspath(cache_dir))
    if file.exists():
        try:
            with np.load(file, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
            return _entry(path, file, meta, settings)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            pass  # a damaged entry: compute it again
    from host.datasets import load_session

    session = load_session(path, feature_set, track, label_map)
    meta = {"subject": session.subject, "n_frames": int(len(session.y)),
            "rate_hz": float(session.rate_hz),
            "labels": sorted(np.unique(session.y).tolist()), "track": session.track,
            "feature_names": list(session.feature_names)}
    arrays = {"col%d" % j: np.ascontiguousarray(session.X[:, j])
              for j in range(session.X.shape[1])}
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".part-", suffix=".npz", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, y=session.y.astype(str), t_s=session.t_s,
                     meta=np.array(json.dumps(meta)), **arrays)
        os.replace(tmp, file)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return _entry(path, file, meta, settings)


def _entry(path, file, meta, settings) -> CacheEntry:
    return CacheEntry(str(path), str(file), meta["subject"], int(meta["n_frames"]),
                      float(meta["rate_hz"]), tuple(meta["labels"]), meta["track"],
                      tuple(meta["feature_names"]), **settings)


def _ensure(entry: CacheEntry) -> str:
    """The entry's file, recomputed here if this machine cannot see it."""
    if os.path.exists(entry.file):
        return entry.file
    fresh = cached_features(entry.recording, entry.feature_set, entry.requested_track,
                            dict(entry.label_map), entry.cache_dir)
    return fresh.file


class CachedSessions:
    """The sessions of cache entries as a source (``recognizers.sources``): each
    ``[i]`` reads one recording's features from its ``.npz``, nothing is kept."""

    def __init__(self, entries):
        self.entries = list(entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i):
        from host.datasets import LabelledSession

        e = self.entries[i]
        with np.load(_ensure(e), allow_pickle=False) as z:
            cols = [z["col%d" % j] for j in range(len(e.feature_names))]
            X = np.column_stack(cols) if cols else np.empty((e.n_frames, 0))
            return LabelledSession(e.recording, e.subject, X, z["y"], z["t_s"],
                                   e.feature_names, e.track, e.rate_hz)

    def labels(self, i) -> np.ndarray:
        with np.load(_ensure(self.entries[i]), allow_pickle=False) as z:
            return z["y"]

    def column(self, j) -> np.ndarray:
        parts = []
        for e in self.entries:
            with np.load(_ensure(e), allow_pickle=False) as z:
                parts.append(z["col%d" % j])
        return np.concatenate(parts) if parts else np.empty(0)


def check_entries(entries, label_map: dict | None = None) -> float:
    """``host.datasets``' checks (one label set, one sample rate) on cache entries;
    returns the common rate."""
    from types import SimpleNamespace

    from host.datasets import check_label_sets, check_rates

    stand_ins = [SimpleNamespace(path=e.recording, y=np.array(e.labels, dtype=str),
                                 rate_hz=e.rate_hz) for e in entries]
    if not label_map:
        check_label_sets(stand_ins)
    return check_rates(stand_ins)
