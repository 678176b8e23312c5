"""SWMR recording (format 1.1): readers in other processes while the writer runs,
attributes deferred to close, a dead writer's session attributes restored by recover."""
import os
import pathlib
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

from host.recording import RecordingWriter, open_recording, recover
from host.recording.reader import LiveRecordingError, open_h5, writer_alive
from recording_synth import Synth, check_samples

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
from calibration import calibration_for  # noqa: E402

CAL = calibration_for("WL-TEST").to_json()

# Holds a SWMR reader open until stdin closes; prints the sample count it saw.
HOLDER = r"""
import sys
sys.path[:0] = [sys.argv[2]]
from host.recording.reader import open_h5
f = open_h5(sys.argv[1])
print(f["acquisition/samples/seq"].shape[0], flush=True)
sys.stdin.read()
"""


def _feed(w, synth, n):
    for _ in range(n):
        w.write_serial(synth.sample(), time.time())


def test_close_succeeds_while_another_process_holds_the_file_open(tmp_path):
    path = tmp_path / "held.h5"
    synth = Synth()
    w = RecordingWriter(path)
    w.write_serial(synth.info(), time.time())
    _feed(w, synth, 150)
    w.set_session(calibration=CAL, notes="live note")
    w.write_labels("alice", [(0.0, 1.0, "walk")], annotator="alice")
    w.flush()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), str(ROOT)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        seen = int(holder.stdout.readline())
        assert seen == 150
        assert writer_alive(path)
        with pytest.raises(LiveRecordingError):
            open_h5(path, "r+")
        with pytest.warns(Warning):
            live = open_recording(path)  # in this process too, and with the deferred attrs
        assert live.attrs["notes"] == "live note" and live.calibration is not None
        assert live.info["walker_id"] == "WL-TEST"
        _feed(w, synth, 50)
        w.close()  # the reader still holds the file
    finally:
        holder.stdin.close()
        holder.wait(10)
        holder.stdout.close()
    assert not writer_alive(path)
    with h5py.File(path, "r") as f:  # finished: a plain file with every attribute
        assert f.attrs["closed_cleanly"] == 1 and f.attrs["notes"] == "live note"
        assert f["acquisition/info"].attrs["walker_id"] == "WL-TEST"
        assert f["acquisition/samples"].attrs["rate"] == 100
        assert f["events/decoder"].attrs["frames_ok"] > 200
        assert "alice" in f["annotations"] and "simulator" in f["annotations"]
    rec = open_recording(path)
    check_samples(rec.samples)
    assert len(rec.samples) == 200 and rec.labels["alice"].segments() == [(0.0, 1.0, "walk")]


def test_deferred_label_writes_are_checked_when_made(tmp_path):
    with RecordingWriter(tmp_path / "a.h5") as w:
        with pytest.raises(ValueError, match="track name"):
            w.write_labels("_bad", [(0.0, 1.0, "walk")])
        with pytest.raises(ValueError, match="mode"):
            w.write_labels("ok", [(0.0, 1.0, "walk")], mode="merge")


CRASH = r"""
import sys, time, os
sys.path[:0] = [sys.argv[2], sys.argv[3]]
from host.recording import RecordingWriter
from recording_synth import Synth
w = RecordingWriter(sys.argv[1])
s = Synth()
w.write_serial(s.info(), time.time())
w.set_session(walker_id="WL-TEST", calibration=sys.argv[4])
for _ in range(120):
    w.write_serial(s.sample(), time.time())
w.flush()
os._exit(9)  # as kill -9: nothing closed
"""


def test_session_attributes_of_a_dead_writer_are_restored_by_recover(tmp_path):
    path = tmp_path / "dead.h5"
    subprocess.run([sys.executable, "-c", CRASH, str(path), str(ROOT), str(HERE), CAL],
                   check=False, timeout=60)
    assert not writer_alive(path)
    with pytest.warns(Warning, match="not closed cleanly"):
        rec = open_recording(path)
    assert rec.calibration is not None and len(rec.samples) == 120
    recover(path)
    with h5py.File(path, "r") as f:
        assert f.attrs["walker_id"] == "WL-TEST"
        assert f["acquisition/info"].attrs["walker_id"] == "WL-TEST"
        assert f.attrs["calibration"] == CAL
    rec2 = open_recording(path)
    assert np.array_equal(rec2.samples.seq, rec.samples.seq)


def test_plain_mode_writes_a_format_1_0_style_file(tmp_path):
    path = tmp_path / "plain.h5"
    synth = Synth()
    with RecordingWriter(path, swmr=False) as w:
        w.write_serial(synth.info(), time.time())
        _feed(w, synth, 10)
        w.flush()
        assert writer_alive(path)
    assert not writer_alive(path)
    with h5py.File(path, "r") as f:  # default libver: superblock version 0, as 1.0 files
        assert f.id.get_create_plist().get_version()[0] == 0
    assert len(open_recording(path).samples) == 10
