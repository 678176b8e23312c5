"""Procedures recover a virtual walker's hidden constants from noisy raw readings."""
import math

import numpy as np
import pytest

from calibration import WalkerCalibration
from calibration.procedures import (CalibrationStepError, SIX_POSITIONS, accel_six_position,
                                    apply, encoder_roll, load_gains, steady_mean, tare)
from calibration.walker_calibration import GRAVITY
from device.sim.sensors import default_truth


@pytest.fixture(params=[0, 3])
def truth(request):
    return default_truth(request.param)


def _load_block(truth, rng, forces_n, n=200):
    f = np.asarray(forces_n, float)
    return (truth.load_offsets_counts + truth.load_gains_counts_per_n * f
            + truth.load_noise_counts * rng.standard_normal((n, 4)))


def _accel_block(truth, rng, g_vec, n=200):
    return (truth.accel_bias_counts + truth.accel_counts_per_g * np.asarray(g_vec, float)
            + truth.accel_noise_counts * rng.standard_normal((n, 3)))


def test_load_tare_and_gains_recover_truth(truth):
    rng = np.random.default_rng(1)
    sd = 5 * truth.load_noise_counts
    offsets = tare(_load_block(truth, rng, np.zeros(4)), sd)
    steps = []
    for cell in range(4):
        for mass in (5.0, 10.0, 20.0):
            f = np.zeros(4)
            f[cell] = mass * GRAVITY
            steps.append((cell, mass, _load_block(truth, rng, f)))
    fit = load_gains(offsets, steps, sd)
    gains = np.array(fit.values["load_gains_counts_per_n"])
    assert np.all(np.abs(gains / truth.load_gains_counts_per_n - 1) < 0.005)
    offset_err_n = np.abs(offsets - truth.load_offsets_counts) / truth.load_gains_counts_per_n
    assert np.all(offset_err_n < 0.2)
    assert fit.residual_unit == "N" and len(fit.residuals) == 12
    assert fit.max_residual < 0.5  # linear truth: residuals are noise only
    cal = apply(WalkerCalibration(walker_id=truth.walker_id), fit)
    again = WalkerCalibration.from_json(cal.to_json())  # the stored JSON round-trips
    assert again.load_gains_counts_per_n == pytest.approx(gains.tolist())


def test_load_refuses_bad_steps(truth):
    rng = np.random.default_rng(2)
    sd = 5 * truth.load_noise_counts
    unsteady = _load_block(truth, rng, np.zeros(4))
    unsteady[::2, 1] += 50 * sd
    with pytest.raises(CalibrationStepError, match="unsteady"):
        tare(unsteady, sd)
    offsets = truth.load_offsets_counts
    with pytest.raises(CalibrationStepError, match="not detected"):
        load_gains(offsets, [(0, 5.0, _load_block(truth, rng, np.zeros(4)))], sd)
    f = np.zeros(4)
    f[0], f[2] = 40.0, 100.0  # the mass sits nearer cell 2
    with pytest.raises(CalibrationStepError, match="cell 2 rose more"):
        load_gains(offsets, [(0, 10.0, _load_block(truth, rng, f))], sd)
    f = np.zeros(4)
    f[0] = 100.0
    with pytest.raises(CalibrationStepError, match=r"cell\(s\) \[1, 2, 3\]"):
        load_gains(offsets, [(0, 10.2, _load_block(truth, rng, f))], sd)


@pytest.mark.parametrize("cross_axis", [False, True])
def test_accel_six_position_recovers_truth(truth, cross_axis):
    rng = np.random.default_rng(3)
    blocks = []
    for axis, sign in SIX_POSITIONS:
        g = np.zeros(3)
        g[axis] = sign
        blocks.append(_accel_block(truth, rng, g))
    fit = accel_six_position(blocks, 5 * truth.accel_noise_counts, cross_axis=cross_axis)
    bias = np.array(fit.values["accel_bias_counts"])
    scale = np.array(fit.values["accel_counts_per_g"])
    assert np.all(np.abs(bias - truth.accel_bias_counts) / truth.accel_counts_per_g < 0.01)
    assert np.all(np.abs(scale / truth.accel_counts_per_g - 1) < 0.005)
    assert fit.residual_unit == "g" and fit.max_residual < 0.01


def test_accel_least_squares_matches_closed_form():
    # Without noise the diagonal fit is (up + down)/2 and (up - down)/2 exactly.
    truth = default_truth(1)
    blocks = []
    for axis, sign in SIX_POSITIONS:
        g = np.zeros(3)
        g[axis] = sign
        blocks.append(np.tile(truth.accel_bias_counts + truth.accel_counts_per_g * g, (10, 1)))
    fit = accel_six_position(blocks, 1.0)
    assert fit.values["accel_bias_counts"] == pytest.approx(truth.accel_bias_counts.tolist())
    assert fit.values["accel_counts_per_g"] == pytest.approx(truth.accel_counts_per_g.tolist())


def test_accel_refuses_swapped_positions(truth):
    rng = np.random.default_rng(4)
    blocks = []
    for axis, sign in SIX_POSITIONS:
        g = np.zeros(3)
        g[axis] = sign
        blocks.append(_accel_block(truth, rng, g))
    blocks[0], blocks[1] = blocks[1], blocks[0]
    with pytest.raises(CalibrationStepError, match="inconsistent positions"):
        accel_six_position(blocks, 5 * truth.accel_noise_counts)


def test_encoder_roll_recovers_truth(truth):
    distance = 5.0
    ticks = round(distance / truth.metres_per_tick)
    fit = encoder_roll(ticks, ticks + 1, distance)
    cal = apply(WalkerCalibration(walker_id=truth.walker_id), fit)
    assert abs(cal.metres_per_tick / truth.metres_per_tick - 1) < 0.005
    with pytest.raises(CalibrationStepError, match="wheels differ"):
        encoder_roll(ticks, ticks * 1.1, distance)
    with pytest.raises(CalibrationStepError, match="did not turn"):
        encoder_roll(0, ticks, distance)


def test_steady_mean_needs_samples():
    with pytest.raises(CalibrationStepError, match="too few"):
        steady_mean(np.zeros((3, 2)), 1.0)
