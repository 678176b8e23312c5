import numpy as np
import pytest

from calibration import GRAVITY, WalkerCalibration
from device.protocol import wire
from host.features import FeatureExtractor, cop_features
from host.samples import SampleBlock


def _block(loads, accel=None, encoder=None, t_us=None, status=0):
    loads = np.asarray(loads, dtype=np.int32)
    n = len(loads)
    return SampleBlock(
        seq=np.arange(n, dtype=np.uint16),
        t_us=np.arange(n, dtype=np.int64) * 20000 if t_us is None else np.asarray(t_us),
        host_time=np.zeros(n),
        accel=np.zeros((n, 3), np.int16) if accel is None else np.asarray(accel, np.int16),
        loads=loads,
        encoder=np.zeros(n, np.int32) if encoder is None else np.asarray(encoder, np.int32),
        fresh=np.full(n, 15, np.uint8),
        status=np.full(n, status, np.uint8),
    )


def test_cop_matches_thesis_equations_by_hand():
    cal = WalkerCalibration()
    loads = np.array([[10.0, 30.0, 40.0, 20.0]])  # FR, FL, RL, RR
    total, cop_sp, cop_fp, valid = cop_features(loads, cal)
    assert total[0] == 100.0 and valid[0]
    assert cop_sp[0] == pytest.approx((30 + 10 - 40 - 20) / 100)
    assert cop_fp[0] == pytest.approx((0.2125 * (30 - 10) + 0.266 * (40 - 20)) / 100)


def test_cop_is_zero_and_invalid_below_minimum_load_never_nan():
    cal = WalkerCalibration(min_total_load_n=20.0)
    loads = np.array([[0.0, 0.0, 0.0, 0.0], [5.0, -5.0, 1.0, 1.0], [1e-12, 0, 0, 0]])
    total, cop_sp, cop_fp, valid = cop_features(loads, cal)
    assert not valid.any()
    assert np.all(cop_sp == 0) and np.all(cop_fp == 0)


def test_units_use_calibration_and_tare_status():
    cal = WalkerCalibration(load_offsets_counts=[100, 100, 100, 100],
                            load_gains_counts_per_n=[10, 10, 10, 10],
                            accel_bias_counts=[1, 2, 3], accel_counts_per_g=[256, 256, 256])
    fx = FeatureExtractor(cal, "loadcells")
    f = fx.process(_block([[600, 100, 100, 100]], accel=[[257, 2, 259]]))
    assert f.X[0, 4:8] == pytest.approx([50, 0, 0, 0])
    assert f.X[0, 0:3] == pytest.approx([GRAVITY, 0, GRAVITY])
    tared = fx.process(_block([[500, 0, 0, 0]], status=wire.STATUS_TARED))
    assert tared.X[0, 4:8] == pytest.approx([50, 0, 0, 0])


def test_speed_from_encoder_ticks():
    cal = WalkerCalibration(encoder_ticks_per_rev=100, wheel_diameter_m=1 / np.pi)  # 1 cm/tick
    fx = FeatureExtractor(cal)
    ticks = np.arange(50) * 2  # 2 ticks per 20 ms = 1 m/s
    f = fx.process(_block(np.zeros((50, 4)), encoder=ticks))
    assert f.X[0, 3] == 0.0
    assert f.X[20:, 3] == pytest.approx(1.0)


@pytest.mark.parametrize("feature_set", ["cop", "loadcells"])
def test_blockwise_processing_equals_whole_session(feature_set):
    rng = np.random.default_rng(1)
    n = 500
    loads = rng.integers(-1000, 200000, (n, 4))
    accel = rng.integers(-300, 300, (n, 3))
    encoder = np.cumsum(rng.integers(-1, 5, n))
    t_us = np.cumsum(rng.integers(19000, 21000, n))
    whole = FeatureExtractor(WalkerCalibration(), feature_set).process(
        _block(loads, accel, encoder, t_us))
    fx = FeatureExtractor(WalkerCalibration(), feature_set)
    cuts = [0, 1, 2, 17, 100, 101, 333, n]
    parts = [fx.process(_block(loads[a:b], accel[a:b], encoder[a:b], t_us[a:b]))
             for a, b in zip(cuts, cuts[1:])]
    assert np.array_equal(np.concatenate([p.X for p in parts]), whole.X)
    assert np.isfinite(whole.X).all()


def test_unknown_feature_set_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown feature set"):
        FeatureExtractor(WalkerCalibration(), "fft")
