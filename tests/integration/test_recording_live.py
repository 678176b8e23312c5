"""Read while recording (HDF5 SWMR): a second process reads a recording that the
virtual walker is still streaming into; a kill mid-recording is recovered."""
import json
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

from host.cli import main as walkerlab
from host.recording import open_recording, recover
from host.recording.reader import LiveRecordingError, UnsealedRecordingError, open_h5, \
    writer_alive

pytestmark = pytest.mark.integration
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The second process: open the live file, save what it sees.
READER = r"""
import sys, warnings
import numpy as np
from host.recording import open_recording
warnings.simplefilter("ignore")
rec = open_recording(sys.argv[1])
np.savez(sys.argv[2], seq=rec.samples.seq, t_us=rec.samples.t_us,
         loads=rec.samples.loads, raw=np.frombuffer(rec.raw_bytes(), np.uint8))
"""


def _read_in_second_process(path, out):
    env = dict(os.environ, PYTHONPATH=ROOT)
    subprocess.run([sys.executable, "-c", READER, str(path), str(out)], check=True,
                   env=env, cwd=ROOT, timeout=60)
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


def _record(served, out, seconds):
    return subprocess.Popen([sys.executable, "-m", "host.cli", "record", "--port",
                             served.path, "--duration", str(seconds), "--out", str(out),
                             "--quiet"], stderr=subprocess.PIPE, cwd=ROOT)


def _wait_for_samples(path, proc, n=1, timeout=120.0):
    """Wait until the file holds n samples (the timeout guards against a hang only)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        if os.path.exists(path) and writer_alive(path):
            with open_h5(path) as f:
                if f["acquisition/samples/seq"].shape[0] >= n:
                    return
        time.sleep(0.2)
    pytest.fail("no samples within %s s" % timeout)


def test_a_second_process_reads_the_recording_while_it_is_written(served_walker, tmp_path,
                                                                  capsys):
    served = served_walker(rate_hz=50)
    out = tmp_path / "live.h5"
    proc = _record(served, out, 30)  # long enough for two reads on a busy machine
    try:
        _wait_for_samples(out, proc, n=25)
        first = _read_in_second_process(out, tmp_path / "a.npz")
        # `walkerlab info` on the live file: one answer, no traceback.
        assert walkerlab(["info", str(out), "--json"]) == 0
        live_info = json.loads(capsys.readouterr().out)
        # Changing a file being written is refused in one line.
        with pytest.raises(LiveRecordingError, match="still being written"):
            open_h5(out, "r+")
        _wait_for_samples(out, proc, n=len(first["seq"]) + 25)  # more written since
        second = _read_in_second_process(out, tmp_path / "b.npz")
        assert proc.wait(120) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    assert not writer_alive(out)
    assert 0 < len(first["seq"]) < len(second["seq"])
    assert live_info["samples"] >= 25 and not live_info["closed_cleanly"]
    assert live_info["walker_id"] and not live_info["walker_info_missing"]
    final = open_recording(out)
    assert final.closed_cleanly
    h5py.File(out, "r").close()  # a finished file opens plainly, as format 1.0 files do
    for seen in (first, second):
        n = len(seen["seq"])
        assert n < len(final.samples)
        assert np.array_equal(seen["seq"], final.samples.seq[:n])
        assert np.array_equal(seen["t_us"], final.samples.t_us[:n])
        assert np.array_equal(seen["loads"], final.samples.loads[:n])
        assert seen["raw"].tobytes() == final.raw_bytes()[:len(seen["raw"])]
    assert final.info is not None and final.info["walker_id"]
    assert final.attrs["walker_id"] and final.calibration is not None


def test_kill_during_a_live_recording_then_recover_in_place(served_walker, tmp_path):
    served = served_walker(rate_hz=50)
    out = tmp_path / "killed.h5"
    proc = _record(served, out, 60)
    try:
        _wait_for_samples(out, proc, n=100)
        # a second more of data: identity and calibration have arrived by now
        _wait_for_samples(out, proc, n=150)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc.stderr.close()
    assert not writer_alive(out)  # the kernel dropped the dead writer's lock
    with pytest.warns(Warning, match="not closed cleanly"):
        rec = open_recording(out)  # readable as it is (SWMR read)
    n = len(rec.samples)
    assert n > 100
    with pytest.raises(UnsealedRecordingError, match="walkerlab recover"):
        open_h5(out, "r+")
    report = recover(out)  # in place: sealed, then rebuilt from the raw log
    assert report.samples >= n
    h5py.File(out, "r+").close()  # a plain HDF5 file again
    rec2 = open_recording(out)
    assert np.array_equal(rec2.samples.seq[:n], rec.samples.seq)
    # The session attributes the recorder set while live survived the kill.
    assert rec2.attrs["walker_id"] and rec2.calibration is not None


@pytest.mark.parametrize("name", ["exp1-run1_subject001.h5", "exp2_subject101.h5"])
def test_format_1_0_recordings_still_read(name):
    path = os.path.join(ROOT, "recordings", "samples", name)
    rec = open_recording(path)
    assert rec.attrs["format_version"].startswith("1.0")
    assert len(rec.samples) > 0 and rec.closed_cleanly
