"""End to end over a real pseudo-terminal: the virtual walker as a USB walker."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import serial

from device.protocol import wire
from device.sim.virtual_walker import FaultConfig
from host.link import QueueSink, SerialLink

pytestmark = pytest.mark.integration


HANG_GUARD_S = 120  # a ceiling against a hang, never a speed requirement


def _count(frames, kind):
    return sum(f.frame_type == kind for f in frames)


def _read_frames(port, until):
    """Read frames until ``until(frames)`` holds (the walker streams in real time: a
    busy machine only takes longer)."""
    decoder = wire.FrameDecoder()
    frames = []
    end = time.monotonic() + HANG_GUARD_S
    while not until(frames):
        assert time.monotonic() < end, "the walker stopped sending"
        frames += decoder.feed(port.read(4096))
    return frames, decoder


def _drain_until(link, sink, until):
    """Batches from a running link until ``until(batches)`` holds."""
    batches = []
    end = time.monotonic() + HANG_GUARD_S
    while not until(batches):
        assert time.monotonic() < end, "the link never got there"
        time.sleep(0.05)
        batches += sink.drain()
    return batches


def test_hello_start_gives_info_acks_and_samples_at_the_rate_without_gaps(served_walker):
    served = served_walker(rate_hz=100)
    with serial.Serial(served.path, timeout=0.05) as port:
        port.write(wire.encode_frame(wire.CMD_HELLO, 0, 0))
        port.write(wire.encode_frame(wire.CMD_START, 1, 0))
        frames, decoder = _read_frames(
            port, lambda fr: _count(fr, wire.SAMPLE) >= 300 and _count(fr, wire.INFO)
            and _count(fr, wire.TRUTH) and _count(fr, wire.ACK) >= 2)
    kinds = [f.frame_type for f in frames]
    info = wire.unpack_info(frames[kinds.index(wire.INFO)].payload)
    assert info["rate_hz"] == 100 and info["simulated"] and info["walker_id"] == "SIM-0"
    acks = [wire.unpack_ack(f.payload) for f in frames if f.frame_type == wire.ACK]
    assert (wire.CMD_HELLO, 0, 0) in acks and (wire.CMD_START, 1, 0) in acks
    samples = [f for f in frames if f.frame_type == wire.SAMPLE]
    t = np.array([f.t_us for f in samples])
    # the rate: exactly the configured period on the device clock, nothing skipped
    assert np.all(np.diff(t) == 10_000) and len(samples) >= 300
    assert decoder.seq_gaps == 0 and decoder.crc_errors == 0
    assert any(f.frame_type == wire.TRUTH for f in frames)


def test_set_rate_and_bad_rate_and_unknown_command(served_walker):
    served = served_walker()
    with serial.Serial(served.path, timeout=0.05) as port:
        port.write(wire.encode_frame(wire.CMD_SET_RATE, 5, 0, wire.pack_set_rate(25)))
        port.write(wire.encode_frame(wire.CMD_SET_RATE, 6, 0, wire.pack_set_rate(1000)))
        port.write(wire.encode_frame(0x3F, 7, 0))
        port.write(wire.encode_frame(wire.CMD_START, 8, 0))
        frames, _ = _read_frames(port, lambda fr: _count(fr, wire.NAK) >= 2
                                 and _count(fr, wire.SAMPLE) > 10)
    naks = [wire.unpack_ack(f.payload) for f in frames if f.frame_type == wire.NAK]
    assert (wire.CMD_SET_RATE, 6, wire.NAK_BAD_ARGUMENT) in naks
    assert (0x3F, 7, wire.NAK_UNKNOWN_COMMAND) in naks
    t = np.array([f.t_us for f in frames if f.frame_type == wire.SAMPLE])
    assert len(t) > 10 and np.all(np.diff(t) == 40_000)


def test_tare_zeroes_the_loads_and_sets_the_status_bit(served_walker, monkeypatch):
    # exp1 starts with nobody touching it (its subjects rest their hands on the grips
    # during NTW by default: not here)
    from device.sim.activities import DIFFICULTY
    monkeypatch.setattr(DIFFICULTY, "ntw_hand_rest_probability", 0.0)
    served = served_walker(course="exp1", seed=2)
    with serial.Serial(served.path, timeout=0.05) as port:
        port.write(wire.encode_frame(wire.CMD_START, 0, 0))
        port.write(wire.encode_frame(wire.CMD_TARE, 1, 0))
        frames, _ = _read_frames(port, lambda fr: sum(
            bool(f.frame_type == wire.SAMPLE
                 and wire.unpack_sample(f.payload)[9] & wire.STATUS_TARED)
            for f in fr) > 10)
    logs = [wire.unpack_log(f.payload)[1] for f in frames if f.frame_type == wire.LOG]
    assert "tare done" in logs
    samples = [wire.unpack_sample(f.payload) for f in frames if f.frame_type == wire.SAMPLE]
    tared = [s for s in samples if s[9] & wire.STATUS_TARED]
    assert len(tared) > 10
    loads = np.array([s[3:7] for s in tared[-10:]])
    # Not touching the walker: tared counts are noise around zero (< 3 N at ~8560/N),
    # before the tare the cells carried the walker's own weight (7.5 kg, ~74 N).
    assert np.all(np.abs(loads) < 3 * 8560)
    untared = np.array([s[3:7] for s in samples if not s[9] & wire.STATUS_TARED])[5:]
    assert untared.sum(axis=1).min() > 40 * 8560


def test_cli_prints_the_port_path_first_and_serves_until_interrupted(tmp_path):
    link = str(tmp_path / "cli-port")
    proc = subprocess.Popen([sys.executable, "-m", "host.cli", "virtual-walker",
                             "--rate", "50", "--link", link], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline().strip()
        assert first == link and os.path.exists(first)
        with serial.Serial(first, timeout=0.05) as port:
            port.write(wire.encode_frame(wire.CMD_START, 0, 0))
            frames, _ = _read_frames(port, lambda fr: _count(fr, wire.SAMPLE) >= 40)
        assert _count(frames, wire.SAMPLE) >= 40
    finally:
        proc.send_signal(2)
        assert proc.wait(10) == 0
    assert not os.path.exists(link)  # the port goes away with the walker


def test_link_survives_disconnect_and_reconnect(served_walker):
    served = served_walker(faults=FaultConfig(disconnect_every_s=1.5,
                                              disconnect_duration_s=0.5))
    sink = QueueSink()
    link = SerialLink(served.path)
    link.add_sink(sink)
    link.open()

    def reconnected_twice_and_streaming(batches):
        events = [(e.kind, e.host_time) for b in batches for e in b.events]
        again = [t for kind, t in events if kind == "reconnected"]
        return len(again) >= 2 and any(len(b.block) for b in batches
                                       if b.host_time > max(again))
    try:
        batches = _drain_until(link, sink, reconnected_twice_and_streaming)
        health = link.health()
    finally:
        link.close()
    batches += sink.drain()
    events = [e.kind for b in batches for e in b.events]
    assert health["reconnects"] >= 2 and "disconnected" in events and "reconnected" in events
    # Frames keep arriving after the last reconnect, sequence and time base continuous.
    t = np.concatenate([b.block.t_us for b in batches])
    assert np.all(np.diff(t) > 0)
    last_reconnect = max(e.host_time for b in batches for e in b.events
                         if e.kind == "reconnected")
    after = sum(len(b.block) for b in batches if b.host_time > last_reconnect)
    assert after > 0
    assert health["seq_gaps"] >= 1  # frames sent while unplugged are counted as lost


def test_watchdog_reports_a_stalled_walker(served_walker):
    served = served_walker(faults=FaultConfig(stall_every_s=1.0, stall_duration_s=2.6))
    sink = QueueSink()
    link = SerialLink(served.path)
    link.add_sink(sink)
    with link:
        batches = _drain_until(link, sink, lambda batches: {"stalled", "resumed"} <= {
            e.kind for b in batches for e in b.events})
    events = [e.kind for b in batches for e in b.events]
    assert "stalled" in events and "resumed" in events


def test_missing_port_is_a_user_error():
    from host.errors import UserError

    with pytest.raises(UserError, match="does not exist"):
        SerialLink("/dev/walkerlab-no-such-port").open()
