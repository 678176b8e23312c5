import json

import pytest

from calibration import CalibrationError, WalkerCalibration, calibration_for


def test_json_round_trip_is_exact(tmp_path):
    cal = WalkerCalibration(walker_id="WL-3", load_offsets_counts=[1.5, -2, 3, 4],
                            encoder_ticks_per_rev=512, min_total_load_n=15.0)
    path = tmp_path / "WL-3.json"
    cal.save(path)
    assert WalkerCalibration.load(path) == cal.validate()


@pytest.mark.parametrize("field, value, message", [
    ("load_gains_counts_per_n", [1, 2, 3], "load_gains_counts_per_n"),
    ("load_gains_counts_per_n", [1, 0, 3, 4], "must not contain zero"),
    ("wheel_diameter_m", -0.2, "wheel_diameter_m"),
    ("encoder_ticks_per_rev", 2.5, "encoder_ticks_per_rev"),
    ("accel_bias_counts", [0, "x", 0], "accel_bias_counts"),
])
def test_malformed_field_is_named(tmp_path, field, value, message):
    data = WalkerCalibration().to_dict()
    data[field] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CalibrationError, match=message):
        WalkerCalibration.load(path)


def test_missing_file_unknown_version_and_foreign_json_are_clear(tmp_path):
    with pytest.raises(CalibrationError, match="not found"):
        WalkerCalibration.load(tmp_path / "none.json")
    data = WalkerCalibration().to_dict()
    data["version"] = 99
    (tmp_path / "v.json").write_text(json.dumps(data))
    with pytest.raises(CalibrationError, match="version"):
        WalkerCalibration.load(tmp_path / "v.json")
    (tmp_path / "f.json").write_text("{\"hello\": 1}")
    with pytest.raises(CalibrationError, match="format"):
        WalkerCalibration.load(tmp_path / "f.json")
    (tmp_path / "g.json").write_text("{nope")
    with pytest.raises(CalibrationError, match="JSON"):
        WalkerCalibration.load(tmp_path / "g.json")
    data = WalkerCalibration().to_dict()
    del data["wheelbase_m"]
    (tmp_path / "m.json").write_text(json.dumps(data))
    with pytest.raises(CalibrationError, match="wheelbase_m.*missing"):
        WalkerCalibration.load(tmp_path / "m.json")


def test_stored_calibration_is_found_by_walker_id(tmp_path, monkeypatch):
    monkeypatch.setenv("WALKERLAB_CALIBRATION_DIR", str(tmp_path))
    cal = WalkerCalibration(walker_id="WL-9", wheel_diameter_m=0.25)
    cal.save(tmp_path / "WL-9.json")
    assert calibration_for("WL-9").wheel_diameter_m == 0.25
