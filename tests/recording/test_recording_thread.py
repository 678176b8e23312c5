"""RecorderThread: producers never block, overflow is counted and recorded, close drains."""
import threading
import time
import warnings

import numpy as np
import pytest

from host.errors import UserError
from host.link import LinkBatch, LinkEvent
from host.recording import RecorderThread, RecordingWriter, open_recording
from host.samples import SampleBlock
from recording_synth import Synth, check_samples


class GatedWriter(RecordingWriter):
    """A writer whose disk 'hangs' until the gate opens."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()

    gate_timeout_s = 10

    def write_serial(self, data, host_time=None):
        self.gate.wait(self.gate_timeout_s)
        super().write_serial(data, host_time)


def test_queue_overflow_is_counted_not_blocking(tmp_path):
    writer = GatedWriter(tmp_path / "slow.h5")
    writer.gate_timeout_s = None  # the disk stays stuck until the puts are done
    rec = RecorderThread(writer, maxsize=8).start()
    accepted = []

    def serial_thread():
        for i in range(200):
            if rec.put_serial(bytes([i]), 1e9 + i):
                accepted.append(i)

    puts = threading.Thread(target=serial_thread)
    puts.start()
    puts.join(120)  # a ceiling against a hang: had a put waited for the disk, it would
    done = not puts.is_alive()  # still be waiting, as the disk is released only below
    writer.gate.set()
    puts.join()
    assert done  # the serial thread never waits for the disk
    assert 8 <= len(accepted) <= 9 and rec.dropped == 200 - len(accepted)
    writer.gate.set()
    rec.close()
    r = open_recording(tmp_path / "slow.h5")
    assert r.raw_bytes() == bytes(accepted)
    assert r.summary()["dropped"] == rec.dropped
    overflow = r.link_events[r.link_events["kind"] == "queue_overflow"]
    assert overflow["value"].sum() == rec.dropped


def test_link_batches_are_recorded_with_their_events(tmp_path):
    s = Synth(rate_hz=100)
    path = tmp_path / "link.h5"
    with RecorderThread(path, subject_id="S3") as rec:
        rec.put(LinkBatch(1e9, s.info(), SampleBlock.empty(), [],
                          [LinkEvent(1e9 - 0.5, "connected", "/dev/ttyACM0")]))
        for k in range(20):
            rec.put(LinkBatch(1e9 + k / 10, b"".join(s.sample() for _ in range(10)),
                              SampleBlock.empty(), []))
        rec.put(LinkBatch(1e9 + 3, b"", SampleBlock.empty(), [],
                          [LinkEvent(1e9 + 3, "reconnected", "/dev/ttyACM0", 1)]))
        rec.put_event("note", "button pressed", 7, 1e9 + 4)
    r = open_recording(path)
    check_samples(r.samples)
    assert len(r.samples) == 200 and r.attrs["subject_id"] == "S3"
    assert r.link_events[["kind", "value"]].tolist() == [
        ("connected", 0), ("reconnected", 1), ("note", 7)]
    assert r.summary()["reconnects"] == 1
    assert "simulator" in r.labels and r.closed_cleanly


def test_close_drains_everything_put_before_it(tmp_path):
    s = Synth(rate_hz=100)
    rec = RecorderThread(tmp_path / "drain.h5").start()
    for k in range(300):
        rec.put_serial(s.sample(), 1e9 + k / 100)
    rec.close()
    assert not rec.put_serial(b"late", 2e9)  # after close: dropped, counted
    assert rec.dropped == 1
    assert len(open_recording(tmp_path / "drain.h5").samples) == 300


def test_thread_flushes_without_new_data(tmp_path):
    path = tmp_path / "idle.h5"
    s = Synth()
    rec = RecorderThread(path, flush_interval_s=0.1).start()
    rec.put_serial(s.info() + s.sample(), 1e9)
    copy = tmp_path / "copy.h5"

    def flushed_samples():
        with open(path, "rb") as f:  # read a copy while the writer holds its lock
            copy.write_bytes(f.read())
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                n = len(open_recording(copy).samples)
        except (OSError, ValueError, KeyError, UserError):  # not flushed yet: unreadable
            return 0, []
        return n, [str(w.message) for w in caught]

    # No more data: the thread must still flush on its own (polled; the ceiling only
    # guards against a hang).
    deadline = time.monotonic() + 120
    n, caught = flushed_samples()
    while n < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
        n, caught = flushed_samples()
    assert n == 1 and any("not closed cleanly" in m for m in caught)
    rec.close()


def test_writer_errors_surface_on_close_and_later_puts_are_dropped(tmp_path):
    class FullDisk(RecordingWriter):
        def write_serial(self, data, host_time=None):
            raise OSError(28, "No space left on device")

    rec = RecorderThread(FullDisk(tmp_path / "full.h5")).start()
    rec.put_serial(b"abc", 1e9)
    deadline = time.monotonic() + 120  # a ceiling against a hang
    while rec.error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not rec.put_serial(b"def", 1e9 + 1) and rec.dropped == 1
    with pytest.raises(OSError, match="No space left"):
        rec.close()


def test_unstarted_thread_closes_its_writer(tmp_path):
    rec = RecorderThread(tmp_path / "never.h5")
    rec.close()
    assert open_recording(tmp_path / "never.h5").closed_cleanly
    np.testing.assert_array_equal(open_recording(tmp_path / "never.h5").samples.seq, [])
