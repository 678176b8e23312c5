"""kill -9 of a recording process: the file opens with every sample flushed before the
kill, and recover() rebuilds every frame of the raw log. The kill comes 3 s of recording
after the writer's first block is on disk, whatever the machine's load."""
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import h5py
import numpy as np
import pytest

from host.recording import RecordingWarning, open_recording, recover
from host.recording import layout as L
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


# Only against hangs: every wait below ends on an event (a line, a block on disk).
HANG_GUARD_S = 300


def _samples_on_disk(path) -> int:
    """Whole rows of samples the writer has flushed so far, as a live (SWMR) reader
    sees them (the shortest column: they are extended one after the other); 0 while
    the file is being created or caught mid-flush."""
    try:
        with h5py.File(path, "r", swmr=True) as f:
            g = f.get(L.SAMPLES)
            if g is None:
                return 0
            return min(int(g[name].shape[0]) if name in g else 0
                       for name in L.SAMPLE_COLUMNS)
    except (OSError, KeyError, RuntimeError):
        return 0


def _record_and_kill(path, seconds):
    """Start the recorder, wait for its first block of samples on disk (the first
    decode can take seconds on a busy machine), let it record ``seconds`` more, kill
    it; (samples handed over, samples on disk just before the kill)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(ROOT), str(HERE), str(RATE_HZ)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    fed = [0]
    progress = threading.Condition()

    def read_counts():  # the child prints after every put: never let its pipe fill
        for line in proc.stdout:
            with progress:
                fed[0] = int(line)
                progress.notify_all()
        with progress:
            progress.notify_all()

    reader = threading.Thread(target=read_counts, daemon=True)
    reader.start()
    try:
        guard = time.monotonic() + HANG_GUARD_S
        while not _samples_on_disk(path):
            if proc.poll() is not None:
                pytest.fail("child died: %s" % proc.stderr.read())
            assert time.monotonic() < guard, "no block on disk after %d s" % HANG_GUARD_S
            time.sleep(0.1)
        with progress:
            target = fed[0] + seconds * RATE_HZ
            assert progress.wait_for(lambda: fed[0] >= target or proc.poll() is not None,
                                     timeout=HANG_GUARD_S), "child stopped feeding"
        if proc.poll() is not None:
            pytest.fail("child died: %s" % proc.stderr.read())
        flushed = _samples_on_disk(path)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(HANG_GUARD_S)
        reader.join(HANG_GUARD_S)
        return fed[0], flushed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(HANG_GUARD_S)
        proc.stdout.close()
        proc.stderr.close()


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    path = tmp_path_factory.mktemp("kill") / "killed.h5"
    fed, flushed = _record_and_kill(path, seconds=3)
    return path, fed, flushed


def test_killed_recording_opens_with_every_flushed_sample(killed):
    """What was on disk before the kill survives it. How much was not yet flushed
    depends on the machine's load (the writer flushes every FLUSH_INTERVAL_S when it
    keeps up), so it is not asserted."""
    path, fed, flushed = killed
    with pytest.warns(RecordingWarning, match="not closed cleanly"):
        rec = open_recording(path)
    assert not rec.closed_cleanly
    n = len(rec.samples)
    # The child may have handed over one more sample than it printed.
    assert 0 < flushed <= n <= fed + 1
    check_samples(rec.samples)  # an exact prefix of what was fed
    assert rec.attrs["subject_id"] == "kill-9" and rec.info["walker_id"] == "WL-TEST"


def test_recover_rebuilds_every_frame_of_the_raw_log(killed, tmp_path):
    path, fed, flushed = killed
    with pytest.warns(RecordingWarning):
        live = open_recording(path)
    raw = live.raw_bytes()
    reads = [(raw[o:o + n], t) for t, o, n in live.raw_chunks.tolist()]
    assert sum(len(d) for d, _ in reads) == len(raw)  # chunk table covers the log
    ref, others, counters = decode_reads(reads)

    report = recover(path, tmp_path / "recovered.h5")
    rec = open_recording(tmp_path / "recovered.h5")  # no warning: recovered
    assert report.samples == len(rec.samples) == len(ref) >= len(live.samples)
    assert flushed <= len(rec.samples) <= fed + 1
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
    path, _, _ = killed
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
