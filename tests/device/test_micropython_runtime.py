"""The firmware runs on MicroPython itself (the unix port, double precision) and
produces the same bytes as under CPython: drivers, framing, tare, model upload and
storage, on-device HMM and ACTIVITY frames."""
import pathlib
import subprocess
import sys

import pytest
from micropython_port import micropython_exe

from calibration import calibration_for
from device.protocol import wire
from host.deploy import model_bytes

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCENARIO = pathlib.Path(__file__).with_name("mpy_scenario.py")




def _run(exe, model_file, storage, n):
    storage.mkdir()
    result = subprocess.run([exe, str(SCENARIO), str(ROOT), str(model_file), str(storage),
                             str(n)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return bytes.fromhex(result.stdout.replace("\n", ""))


def test_firmware_session_is_byte_identical_on_micropython(trained_hmms, tmp_path):
    model_file = tmp_path / "model.wlm"
    model_file.write_bytes(model_bytes(trained_hmms["loadcells"], calibration_for("SIM-0")))
    n = 1500
    mpy = _run(micropython_exe(), model_file, tmp_path / "mpy", n)
    cpy = _run(sys.executable, model_file, tmp_path / "cpy", n)
    assert mpy == cpy
    assert mpy.endswith(b"REBOOT")
    assert (tmp_path / "mpy" / "model.wlm").read_bytes() == model_file.read_bytes()
    frames = wire.FrameDecoder().feed(mpy[:-len(b"REBOOT")])
    kinds = [f.frame_type for f in frames]
    assert kinds.count(wire.SAMPLE) == n and wire.NAK not in kinds
    acts = [wire.unpack_activity(f.payload) for f in frames if f.frame_type == wire.ACTIVITY]
    assert len(acts) >= 15  # at least once a second over 15 s at 100 Hz
    status = [wire.unpack_sample(f.payload)[9] for f in frames if f.frame_type == wire.SAMPLE]
    assert all(s & wire.STATUS_MODEL_ACTIVE for s in status)
    assert status[-1] & wire.STATUS_TARED and not status[0] & wire.STATUS_TARED
