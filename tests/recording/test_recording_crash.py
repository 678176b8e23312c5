"""kill -9 of a recording process: the file opens, at most one second is missing, and
recover() rebuilds every frame of the raw log."""
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from host.recording import RecordingWarning, open_recording, recover
from recording_synth import check_samples, decode_reads

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
RATE_HZ = 100

# The child records synthetic frames in real time through RecorderThread and prints
# how many samples it has handed over after each put.
CHILD = r"""
import sys, time
sys.path[:0] = [sys.argv[2], sys.argv[3]]
from host.recording import RecorderThread
from recording_synth import Synth

rate = int(sys.argv[4])
rec = RecorderThread(sys.argv[1], subject_id="kill-9").start()
synth = Synth(rate_hz=rate)
rec.put_serial(synth.info(), time.time())
start = time.monotonic()
n = 0
while True:
    delay = start + n / rate - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    rec.put_serial(synth.sample(), time.time())
    n += 1
    print(n, flush=True)
"""


def _record_and_kill(path, seconds):
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(ROOT), str(HERE), str(RATE_HZ)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        deadline = None  # from the first frame: start-up on a loaded CI machine varies
        fed = 0
        while fed < seconds * RATE_HZ:
            line = proc.stdout.readline()
            if not line:
                pytest.fail("child died: %s" % proc.stderr.read())
            fed = int(line)
            deadline = deadline or time.monotonic() + 30
            assert time.monotonic() < deadline, "child too slow"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        rest = proc.stdout.read().split()
        return int(rest[-1]) if rest else fed
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    path = tmp_path_factory.mktemp("kill") / "killed.h5"
    fed = _record_and_kill(path, seconds=3)
    return path, fed


def test_killed_recording_opens_with_at_most_one_second_missing(killed):
    path, fed = killed
    with pytest.warns(RecordingWarning, match="not closed cleanly"):
        rec = open_recording(path)
    assert not rec.closed_cleanly
    n = len(rec.samples)
    assert n > 0
    # The child may have handed over one more sample than it printed.
    missing = fed + 1 - n
    assert missing <= RATE_HZ, "%d of %d samples missing" % (missing, fed)
    check_samples(rec.samples)  # an exact prefix of what was fed
    assert rec.attrs["subject_id"] == "kill-9" and rec.info["walker_id"] == "WL-TEST"


def test_recover_rebuilds_every_frame_of_the_raw_log(killed, tmp_path):
    path, fed = killed
    with pytest.warns(RecordingWarning):
        live = open_recording(path)
    raw = live.raw_bytes()
    reads = [(raw[o:o + n], t) for t, o, n in live.raw_chunks.tolist()]
    assert sum(len(d) for d, _ in reads) == len(raw)  # chunk table covers the log
    ref, others, counters = decode_reads(reads)

    report = recover(path, tmp_path / "recovered.h5")
    rec = open_recording(tmp_path / "recovered.h5")  # no warning: recovered
    assert report.samples == len(rec.samples) == len(ref) >= len(live.samples)
    assert fed + 1 - len(rec.samples) <= RATE_HZ
    for name in ref.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(rec.samples, name), getattr(ref, name))
    np.testing.assert_array_equal(rec.samples.t_us[:len(live.samples)], live.samples.t_us)
    check_samples(rec.samples)
    assert rec.counters == counters
    assert rec.raw_bytes() == raw
    # The TRUTH frames the crash kept from becoming a label track are one now.
    assert "simulator" not in live.labels
    sim = rec.labels["simulator"]
    assert sim.source == "simulator" and len(sim) >= 1
    assert len(rec.truth) == sum(f.frame_type == 0x07 for _, f in others)


def test_recover_in_place_keeps_the_raw_log(killed, tmp_path):
    path, _ = killed
    copy = tmp_path / "inplace.h5"
    copy.write_bytes(pathlib.Path(path).read_bytes())
    with pytest.warns(RecordingWarning):
        live = open_recording(copy)
    raw, chunks = live.raw_bytes(), live.raw_chunks
    report = recover(copy)
    assert report.path == str(copy) and report.samples_before == len(live.samples)
    rec = open_recording(copy)
    assert rec.raw_bytes() == raw
    np.testing.assert_array_equal(rec.raw_chunks, chunks)
    assert len(rec.samples) >= len(live.samples) and "simulator" in rec.labels
