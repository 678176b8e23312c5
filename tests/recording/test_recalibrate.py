"""`walkerlab recalibrate`: new physical values from the same raw data.

The physical values of a recalibrated recording equal those of a recording made with
that calibration from the start, and every dataset (raw byte log, sample columns,
events, labels) is byte for byte what it was."""
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from calibration import WalkerCalibration
from device.sim.factory_calibration import calibration_from_truth
from device.sim.sensors import default_truth
from device.sim.virtual_walker import simulate_session_bytes
from host.export import recording_table
from host.recording import RecordingWriter, open_recording
from host.recording.recalibrate import recalibrate

ROOT = Path(__file__).resolve().parents[2]


def _record(path, calibration, chunks):
    w = RecordingWriter(path, walker_id=calibration.walker_id, calibration=calibration,
                        subject_id="S001", session_start_time=1.7e9)
    for device_s, data in chunks:
        w.write_serial(data, 1.7e9 + device_s)
    w.close()


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """The same session recorded with the factory calibration (A) and with another (C)."""
    tmp = tmp_path_factory.mktemp("recal")
    chunks = list(simulate_session_bytes("exp1", 3, duration_s=12.0))
    factory = calibration_from_truth(default_truth(0))
    other = dataclasses.replace(
        factory, load_offsets_counts=[o + 5000.0 for o in factory.load_offsets_counts],
        load_gains_counts_per_n=[g * 1.02 for g in factory.load_gains_counts_per_n],
        accel_bias_counts=[b + 3.0 for b in factory.accel_bias_counts],
        accel_counts_per_g=[c * 0.98 for c in factory.accel_counts_per_g],
        wheel_diameter_m=0.21, source="a later calibration", results={}).validate()
    a, c = tmp / "a.h5", tmp / "c.h5"
    _record(a, factory, chunks)
    _record(c, other, chunks)
    cal_path = tmp / "other.json"
    other.save(cal_path)
    return a, c, other, cal_path


def _datasets(path):
    """Every dataset's contents: bytes, or values where it holds variable-length strings
    (whose in-memory bytes are pointers)."""
    out = {}

    def take(name, obj):
        if isinstance(obj, h5py.Dataset):
            arr = obj[()]
            out[name] = arr.tolist() if arr.dtype.hasobject else arr.tobytes()

    with h5py.File(path, "r") as f:
        f.visititems(take)
    return out


def test_recalibrated_values_equal_a_recording_made_with_that_calibration(recordings,
                                                                         tmp_path):
    a, c, other, _ = recordings
    before = Path(a).read_bytes()
    b = recalibrate(a, other, out=tmp_path / "b.h5")
    assert Path(a).read_bytes() == before  # --out leaves the original alone
    ta, tb, tc = recording_table(a), recording_table(b), recording_table(c)
    for name in tc:
        np.testing.assert_array_equal(tb[name], tc[name], err_msg=name)
    assert not np.allclose(ta["load_FR_n"], tb["load_FR_n"])  # the values did change
    # Raw data: every dataset byte for byte.
    assert _datasets(b) == _datasets(a)
    ra, rb = open_recording(a), open_recording(b)
    assert ra.raw_bytes() == rb.raw_bytes()
    for col in ("loads", "accel", "encoder", "t_us"):
        np.testing.assert_array_equal(getattr(ra.samples, col), getattr(rb.samples, col))
    # The calibration now in use, the one replaced in the history, and the per-channel
    # attributes the same as in the recording made with it.
    assert WalkerCalibration.from_dict(rb.calibration).to_dict() == other.to_dict()
    with h5py.File(b, "r") as fb, h5py.File(c, "r") as fc:
        history = json.loads(fb.attrs["calibration_history"])
        assert [h["calibration"]["source"] for h in history] == [
            "virtual walker factory calibration"]
        for ds in ("loads", "accel", "encoder"):
            for k, v in fc["acquisition/samples"][ds].attrs.items():
                np.testing.assert_array_equal(fb["acquisition/samples"][ds].attrs[k], v, err_msg=k)


def test_cli_recalibrates_in_place_and_refuses_another_walkers_calibration(recordings,
                                                                          tmp_path):
    a, c, other, cal_path = recordings
    target = tmp_path / "in-place.h5"
    target.write_bytes(Path(a).read_bytes())
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}

    def run(*args):
        return subprocess.run([sys.executable, "-m", "host.cli", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)

    p = run("recalibrate", str(target), "--calibration", str(cal_path))
    assert p.returncode == 0, p.stderr
    np.testing.assert_array_equal(recording_table(target)["total_load_n"],
                                  recording_table(c)["total_load_n"])
    stranger = dataclasses.replace(other, walker_id="SIM-9")
    stranger.save(tmp_path / "stranger.json")
    p = run("recalibrate", str(target), "--calibration", str(tmp_path / "stranger.json"))
    assert p.returncode == 2 and "walker SIM-9" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    p = run("recalibrate", str(target), "--calibration", str(tmp_path / "missing.json"))
    assert p.returncode == 2 and "not found" in p.stderr
    p = run("recalibrate", str(target), "--calibration", str(cal_path), "--out", str(c))
    assert p.returncode == 2 and "already exists" in p.stderr
