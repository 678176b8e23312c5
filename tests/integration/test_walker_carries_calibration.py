"""The walker carries its calibration: CALIBRATION frames (protocol), the firmware's flash,
`walkerlab calibrate --write-to-walker`, and a host that takes a connected walker's
calibration from the walker or this computer's file, never from simulator code."""
import dataclasses
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from calibration import WalkerCalibration, calibration_for
from calibration.walker_calibration import from_walker, to_walker
from device.firmware.core import CALIBRATION_FILE, WalkerFirmware
from device.firmware.storage import FileStorage, MemoryStorage
from device.protocol import wire
from device.sim.factory_calibration import calibration_from_truth
from device.sim.sensors import default_truth
from device.sim.virtual_walker import VirtualWalker
from host.link import SerialLink
from host.recording import open_recording
from pty_terminal import Terminal

ROOT = Path(__file__).resolve().parents[2]


def _f32(x):
    return np.float32(x).item()


def _frames(walker, t_us):
    return wire.FrameDecoder(track_sequence=False).feed(walker.advance(t_us))


def test_calibration_payload_round_trips_in_float32_and_refuses_bad_values():
    cal = calibration_from_truth(default_truth(4))
    fields, date = to_walker(dataclasses.replace(cal, results={}))
    payload = wire.pack_calibration(fields, 1_800_000_000)
    assert len(payload) == wire.CAL_LEN and payload[0] == wire.CAL_VERSION
    back = wire.unpack_calibration(payload)
    assert back["date_s"] == 1_800_000_000
    for name in ("load_offsets_counts", "load_gains_counts_per_n", "accel_bias_counts",
                 "accel_counts_per_g"):
        assert back[name] == [_f32(v) for v in getattr(cal, name)]
    assert back["encoder_ticks_per_rev"] == cal.encoder_ticks_per_rev
    assert back["wheel_diameter_m"] == _f32(cal.wheel_diameter_m)
    again = from_walker(back, cal.walker_id)
    assert again.metres_per_tick == pytest.approx(cal.metres_per_tick, rel=1e-7)
    for bad in (dict(fields, load_gains_counts_per_n=[0.0, 1.0, 1.0, 1.0]),
                dict(fields, accel_bias_counts=[math.nan, 0.0, 0.0]),
                dict(fields, wheel_diameter_m=-0.2)):
        with pytest.raises(ValueError):
            wire.unpack_calibration(wire.pack_calibration(bad, 0))
    with pytest.raises(ValueError, match="version"):
        wire.unpack_calibration(bytes([2]) + payload[1:])
    with pytest.raises(ValueError, match="83 bytes"):
        wire.unpack_calibration(payload[:-1])


def test_firmware_stores_the_calibration_in_flash_and_reports_it_after_info(tmp_path):
    flash = FileStorage(str(tmp_path))
    walker = VirtualWalker("free", 0, storage=flash)
    walker.command(wire.CMD_CAL_READ, seq=1)
    frames = _frames(walker, 10_000)
    assert [(f.frame_type, wire.unpack_ack(f.payload)[2]) for f in frames] == [
        (wire.NAK, wire.NAK_NO_CALIBRATION)]
    fields, _ = to_walker(WalkerCalibration(walker_id="SIM-0", wheel_diameter_m=0.19))
    payload = wire.pack_calibration(fields, 1_800_000_000)
    walker.command(wire.CMD_CAL_WRITE, payload, seq=2)
    frames = _frames(walker, 20_000)
    assert [f.frame_type for f in frames] == [wire.ACK, wire.CALIBRATION]
    assert frames[1].payload == payload
    assert (tmp_path / CALIBRATION_FILE).read_bytes() == payload
    bad = bytearray(payload)
    bad[1 + 4 + 16:1 + 4 + 20] = b"\x00\x00\x00\x00"  # FR gain 0
    walker.command(wire.CMD_CAL_WRITE, bytes(bad), seq=3)
    frames = _frames(walker, 30_000)
    assert (frames[-1].frame_type, wire.unpack_ack(frames[-1].payload)[2]) == (
        wire.NAK, wire.NAK_BAD_ARGUMENT)
    # A reboot (a new firmware on the same flash): HELLO -> INFO (flagged) + CALIBRATION.
    rebooted = VirtualWalker("free", 0, storage=FileStorage(str(tmp_path)))
    rebooted.command(wire.CMD_HELLO, seq=4)
    frames = _frames(rebooted, 10_000)
    assert [f.frame_type for f in frames] == [wire.INFO, wire.CALIBRATION, wire.ACK]
    assert wire.unpack_info(frames[0].payload)["calibrated"]
    assert frames[1].payload == payload
    # Without storage the walker cannot keep one.
    fw_out = bytearray()

    class NoFlash:
        simulated, walker_id, load_cells = True, "X", []
    fw = WalkerFirmware(NoFlash(), fw_out.extend)
    fw.handle_command(wire.Frame(wire.CMD_CAL_WRITE, 5, 0, payload), 0)
    ack = wire.FrameDecoder(track_sequence=False).feed(bytes(fw_out))[-1]
    assert wire.unpack_ack(ack.payload)[2] == wire.NAK_UNSUPPORTED


def test_an_uncalibrated_walker_sends_the_same_bytes_as_before():
    # No calibration in flash: no INFO flag, no CALIBRATION frame.
    walker = VirtualWalker("free", 0, storage=MemoryStorage())
    walker.command(wire.CMD_HELLO, seq=0)
    frames = _frames(walker, 10_000)
    assert [f.frame_type for f in frames] == [wire.INFO, wire.ACK]
    assert not wire.unpack_info(frames[0].payload)["calibrated"]


def _link_info(port, timeout_s=30.0):
    link = SerialLink(port)
    link.open()
    try:
        end = time.monotonic() + timeout_s
        while link.info is None and time.monotonic() < end:
            time.sleep(0.02)
        return link.info
    finally:
        link.close()


def _run(env, *args):
    return subprocess.run([sys.executable, "-m", "host.cli", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=180)


def test_calibrate_write_to_walker_then_the_host_takes_it_from_the_walker(tmp_path):
    from host.virtual_port import bench_walker

    env = dict(os.environ, PYTHONPATH=str(ROOT), WALKERLAB_CALIBRATION_DIR=str(tmp_path / "a"))
    flash = FileStorage(str(tmp_path / "flash"))
    os.makedirs(tmp_path / "flash")
    walker, technician, truth = bench_walker(walker_seed=1, speed=4.0, storage=flash)
    walker.start()
    try:
        # The walker left the factory with its calibration in flash; the link reports it.
        info = _link_info(walker.path)
        factory = calibration_from_truth(truth)
        assert info is not None and info["calibrated"]
        assert info["calibration"]["wheel_diameter_m"] == _f32(factory.wheel_diameter_m)
        # Calibrate the encoder with the CLI on a pseudo-terminal, this test rolling the
        # walker as each roll is asked for.
        term = Terminal(["calibrate", "encoder", "--port", walker.path, "--yes",
                         "--write-to-walker"], env)
        try:
            term.expect(r"distance you will roll")
            term.send()
            for direction in (1, -1):
                term.expect(r"Roll \d/2: stand the walker")
                term.send()
                term.expect(r"Roll \d/2: roll it")
                technician.bench.roll(5.0 * direction, 2.0)
                technician.bench.wait_done()
                term.send()
            term.expect(r"written to the walker's flash")
            assert term.wait() == 0
        finally:
            term.close()
        stored = WalkerCalibration.load(tmp_path / "a" / "SIM-1.json")
        assert abs(stored.metres_per_tick / truth.metres_per_tick - 1) < 0.005
        # Another computer (an empty calibration folder) gets it from the walker.
        info = _link_info(walker.path)
        assert info["calibration"]["wheel_diameter_m"] == _f32(stored.wheel_diameter_m)
        env_b = dict(env, WALKERLAB_CALIBRATION_DIR=str(tmp_path / "b"))
        out = tmp_path / "rec.h5"
        p = _run(env_b, "record", "--port", walker.path, "--out", str(out),
                 "--duration", "1.5", "--quiet")
        assert p.returncode == 0, p.stderr
        rec_cal = open_recording(out).calibration
        assert rec_cal["wheel_diameter_m"] == _f32(stored.wheel_diameter_m)
        assert rec_cal["source"].startswith("walker's flash")
        # ... and on this computer, the file (newer or as new) is used, in full precision.
        got = calibration_for("SIM-1", info["calibration"], use_sources=False,
                              directory=tmp_path / "a")
        assert got.wheel_diameter_m == stored.wheel_diameter_m
    finally:
        walker.stop()


def test_live_paths_never_use_the_simulators_factory_calibration(tmp_path, monkeypatch):
    monkeypatch.setenv("WALKERLAB_CALIBRATION_DIR", str(tmp_path))
    import device.sim  # noqa: F401  (registers the factory calibration source)
    factory = calibration_from_truth(default_truth(2))
    # Offline (a recording without a calibration), the registered source still answers.
    assert calibration_for("SIM-2").wheel_diameter_m == factory.wheel_diameter_m
    # Live, with nothing reported and no file: nominal, not the simulator's constants.
    assert calibration_for("SIM-2", None, use_sources=False).source == "nominal"
    # A walker that reports one: that one.
    fields, _ = to_walker(factory)
    reported = wire.unpack_calibration(wire.pack_calibration(fields, 1_700_000_000))
    got = calibration_for("SIM-2", reported, use_sources=False)
    assert got.source.startswith("walker's flash")
    # A file newer than the walker's calibration wins; an older one loses.
    newer = dataclasses.replace(factory, wheel_diameter_m=0.25, source="file")
    newer.save(tmp_path / "SIM-2.json")
    os.utime(tmp_path / "SIM-2.json", (1_750_000_000, 1_750_000_000))
    assert calibration_for("SIM-2", reported, use_sources=False).wheel_diameter_m == 0.25
    os.utime(tmp_path / "SIM-2.json", (1_600_000_000, 1_600_000_000))
    assert calibration_for("SIM-2", reported, use_sources=False).source.startswith(
        "walker's flash")
