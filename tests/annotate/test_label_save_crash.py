"""Label saves are atomic: a process killed at any instant of a save leaves the
recording with the old or the new labels, never neither, and its sensor data intact."""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from host.recording import LabelTrack, open_recording
from host.recording import layout as L
from host.recording.labels import SAVING_SUFFIX, read_tracks, save_tracks

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "recordings" / "samples" / "exp1-run1_subject001.h5"
OLD = [(0.0, 1.0, "ST"), (1.0, 2.0, "WF")]
NEW = [(0.0, 1.5, "WF"), (1.5, 2.0, "ST"), (2.0, 3.0, "TL")]

# Saves alternate between OLD and NEW as fast as they can until killed.
SAVER = textwrap.dedent("""
    import sys
    from host.recording import LabelTrack
    from host.recording.labels import save_tracks
    path, old, new = sys.argv[1], %r, %r
    print("ready", flush=True)
    i = 0
    while True:
        i += 1
        save_tracks(path, [LabelTrack.from_segments("alice", new if i %% 2 else old,
                                                    annotator="alice")])
        print("saved", i, flush=True)
""" % (OLD, NEW))
# Kill trials: at least MIN_TRIALS, more (up to the hang guard MAX_TRIALS) until the kills
# have left both label sets, which a busy machine may take longer to show.
MIN_TRIALS, MAX_TRIALS = 8, 60


def sensor_digest(path) -> str:
    """Hash of everything outside /annotations (the bytes a label save must not touch)."""
    h = hashlib.sha256()
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and not name.startswith("annotations"):
                h.update(name.encode())
                data = obj[()]
                h.update(repr(data.tolist()).encode() if obj.dtype.hasobject
                         else np.ascontiguousarray(data).tobytes())
        f.visititems(visit)
    return h.hexdigest()


@pytest.fixture
def recording(tmp_path):
    path = tmp_path / "rec.h5"
    shutil.copyfile(SAMPLE, path)
    save_tracks(path, [LabelTrack.from_segments("alice", OLD, annotator="alice")])
    return path


def test_kill_at_random_instants_of_a_save_never_loses_labels(recording):
    digest = sensor_digest(recording)
    rng = np.random.default_rng(7)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    seen = set()
    for trial in range(MAX_TRIALS):
        proc = subprocess.Popen([sys.executable, "-c", SAVER, str(recording)],
                                stdout=subprocess.PIPE, env=env)
        assert proc.stdout.readline().strip() == b"ready"
        # Wait for a random number of finished saves (an odd count left NEW, an even
        # one OLD), then kill at a random instant of the saves that follow (~10 ms
        # each on a quiet machine): the count, not the clock, varies where kills land.
        for _ in range(rng.integers(1, 5)):
            assert proc.stdout.readline().startswith(b"saved")
        time.sleep(rng.uniform(0.0, 0.02))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        tracks = read_tracks(recording)  # readable after every kill
        got = tracks["alice"].segments()
        assert got in (OLD, NEW), "trial %d left %r" % (trial, got)
        seen.add(tuple(got))
        assert sensor_digest(recording) == digest
        if trial + 1 >= MIN_TRIALS and len(seen) == 2:
            break
    assert len(open_recording(recording).time_s) > 0
    assert len(seen) == 2  # the kills really landed at different points of the loop
    # the next save works and sweeps nothing it should keep
    save_tracks(recording, [LabelTrack.from_segments("bob", OLD, annotator="bob")])
    assert set(read_tracks(recording)) == {"alice", "bob", "simulator"}


def test_failed_save_changes_nothing(recording, monkeypatch):
    before = recording.read_bytes()
    import host.recording.labels as labels

    def boom(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(labels, "create_track_table", boom)
    with pytest.raises(OSError, match="No space"):
        save_tracks(recording, [LabelTrack.from_segments("carol", NEW)])
    assert recording.read_bytes() == before
    assert not list(recording.parent.glob("*" + SAVING_SUFFIX + "*"))


def test_save_keeps_file_mode_and_stale_copies_are_swept(recording):
    os.chmod(recording, 0o640)
    stale = recording.with_name("." + recording.name + SAVING_SUFFIX + "99999")
    stale.write_bytes(b"half a copy")
    os.utime(stale, (0, 0))  # from a save that died long ago
    fresh = recording.with_name("." + recording.name + SAVING_SUFFIX + "99998")
    fresh.write_bytes(b"another process saving right now")
    save_tracks(recording, [LabelTrack.from_segments("alice", NEW, annotator="alice")])
    assert read_tracks(recording)["alice"].segments() == NEW
    assert (os.stat(recording).st_mode & 0o777) == 0o640
    assert not stale.exists() and fresh.exists()


def test_save_refuses_a_recording_still_being_written(tmp_path):
    from host.recording.reader import RecordingFormatError

    path = tmp_path / "live.h5"
    shutil.copyfile(SAMPLE, path)
    holder = subprocess.Popen(  # another process writing it (HDF5 file lock)
        [sys.executable, "-c", "import h5py, sys, time; f = h5py.File(sys.argv[1], 'r+'); "
         "print('open', flush=True); time.sleep(60)", str(path)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"open"
        with pytest.raises(RecordingFormatError, match="open for writing"):
            save_tracks(path, [LabelTrack.from_segments("alice", OLD)])
    finally:
        holder.kill()
        holder.wait()
    with h5py.File(path, "r") as f:
        assert L.ANNOTATIONS + "/alice" not in f
