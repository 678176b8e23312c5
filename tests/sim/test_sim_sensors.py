"""The simulated walker hardware (device/sim/sensors.py), as firmware sees it."""
import dataclasses
import itertools
import math

import numpy as np
import pytest

from device.sim import activities as A
from device.sim.activities import DIFFICULTY, Difficulty
from device.sim.sensors import (ACCEL_MAX_COUNTS, GRAVITY, HX711_MAX_COUNTS,
                                HX711_MIN_COUNTS, LABEL_JITTER_FACTOR,
                                NOMINAL_LOAD_GAIN_COUNTS_PER_N, PIECE_S, WALKER_GEOMETRY,
                                SimulatedSensors, WalkerHardwareTruth, default_truth)


def _frames(sensors, rate_hz, duration_s=None, t0=0.0):
    """Poll like a firmware loop; yield (t, loads or None per cell, accel, ticks, label)."""
    k = 0
    while True:
        t = t0 + k / rate_hz
        if (duration_s is not None and t > t0 + duration_s) or (
                duration_s is None and sensors.finished):
            return
        sensors.advance_to(t)
        loads = [sensors.hx711_read(c) if sensors.hx711_ready(c) else None for c in range(4)]
        yield t, loads, sensors.accel_read(), sensors.encoder_count(), sensors.truth_label()
        k += 1


def _runs(codes):
    return [k for k, _ in itertools.groupby(codes)]


# ---- the walker's ground truth --------------------------------------------------------
def test_nominal_walker_matches_the_documented_constants():
    t = WalkerHardwareTruth.nominal()
    assert NOMINAL_LOAD_GAIN_COUNTS_PER_N == pytest.approx(2 ** 22 / (50 * 9.80665), rel=0.002)
    np.testing.assert_allclose(t.load_gains_counts_per_n, 8560.0)
    # zero-load reading = the walker's own weight on each cell
    np.testing.assert_allclose(t.load_offsets_counts,
                               WALKER_GEOMETRY.static_leg_forces_n * 8560.0)
    assert WALKER_GEOMETRY.static_leg_forces_n.sum() == pytest.approx(
        WALKER_GEOMETRY.mass_kg * GRAVITY)
    np.testing.assert_allclose(t.hx711_rates_hz, 80.0)
    np.testing.assert_allclose(t.accel_counts_per_g, 256.0)
    assert t.encoder_ticks_per_rev == 256 and t.wheel_diameter_m == 0.2
    assert t.metres_per_tick == pytest.approx(math.pi * 0.2 / 256)


def test_drawn_walkers_are_within_tolerance_and_differ():
    walkers = [WalkerHardwareTruth.draw(np.random.default_rng(s), "W%d" % s) for s in range(30)]
    for w in walkers:
        assert np.all(np.abs(w.hx711_rates_hz / 80.0 - 1) <= 0.02)
        assert np.all(np.abs(w.load_gains_counts_per_n / 8560.0 - 1) < 0.15)
        assert np.all(np.abs(w.accel_counts_per_g / 256.0 - 1) < 0.15)
        assert np.all((w.hx711_phases_s >= 0) & (w.hx711_phases_s < 1 / w.hx711_rates_hz))
        assert abs(w.wheel_diameter_m / 0.2 - 1) < 0.1
    rates = np.array([w.hx711_rates_hz for w in walkers])
    assert rates.std() > 0.2  # not synchronous, not identical
    offsets = np.array([w.load_offsets_counts for w in walkers])
    assert offsets.std(axis=0).min() > 10_000
    assert default_truth(0).walker_id == "SIM-0"
    np.testing.assert_array_equal(default_truth(3).load_offsets_counts,
                                  default_truth(3).load_offsets_counts)
    assert not np.array_equal(default_truth(3).load_offsets_counts,
                              default_truth(4).load_offsets_counts)


# ---- sessions -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def exp2_frames():
    s = SimulatedSensors("exp2", seed=21)
    frames = list(_frames(s, 50.0))
    return s, frames


def test_hx711_converts_at_about_80_hz_per_cell_free_running():
    s = SimulatedSensors("exp1", seed=2)
    counts = np.zeros(4, int)
    first = [None] * 4
    for t, loads, *_ in _frames(s, 200.0, duration_s=10.0):
        for c, v in enumerate(loads):
            if v is not None:
                counts[c] += 1
                if first[c] is None:
                    first[c] = t
    rates = s.truth.hx711_rates_hz
    for c in range(4):
        assert abs(counts[c] - 10.0 * rates[c]) <= 2, (counts, rates)
        assert 780 <= counts[c] <= 820
    assert len(set(first)) > 1 or len(set(counts)) > 1  # not in lock-step
    # once read, a cell is not ready again until its next conversion
    s.advance_to(20.0)
    assert s.hx711_ready(0)
    s.hx711_read(0)
    assert not s.hx711_ready(0)
    s.advance_to(20.0 + 1.05 / rates[0])
    assert s.hx711_ready(0)


def test_load_counts_are_signed_24_bit_ints_that_follow_the_forces(exp2_frames):
    s, frames = exp2_frames
    t = s.truth
    values = [v for _, loads, *_ in frames for v in loads if v is not None]
    assert all(isinstance(v, int) for v in values)
    assert HX711_MIN_COUNTS <= min(values) and max(values) <= HX711_MAX_COUNTS
    # sitting on the seat loads every cell far above its offset
    sw = [(np.array(l, float) - t.load_offsets_counts) / t.load_gains_counts_per_n
          for _, l, _, _, lab in frames if lab == "SW" and None not in l]
    assert np.mean(sw, axis=0).sum() > 0.5 * s.profile.mass_kg * GRAVITY


def test_not_touching_reads_the_offsets_plus_noise():
    quiet = Difficulty(load_drift_n=0.0, load_noise_n=0.5, ntw_hand_rest_probability=0.0)
    truth = default_truth(0)
    truth.load_noise_counts = quiet.load_noise_n * NOMINAL_LOAD_GAIN_COUNTS_PER_N
    truth.load_drift_counts = 0.0
    s = SimulatedSensors("exp2", seed=4, truth=truth, difficulty=quiet)
    got = [[] for _ in range(4)]
    for t, loads, _, _, label in _frames(s, 100.0, duration_s=3.5):
        if label == "NTW" and t > 0.2:
            for c, v in enumerate(loads):
                if v is not None:
                    got[c].append(v)
    for c in range(4):
        x = np.array(got[c], float)
        assert len(x) > 200
        noise = truth.load_noise_counts
        assert abs(x.mean() - truth.load_offsets_counts[c]) < 5 * noise / math.sqrt(len(x))
        assert x.std() == pytest.approx(noise, rel=0.2)


def test_load_cell_zero_drifts_slowly_when_enabled():
    truth = default_truth(1)
    truth.load_drift_counts = 8.0 * NOMINAL_LOAD_GAIN_COUNTS_PER_N  # exaggerated
    # starts and ends not touching (no hands resting on the grips in NTW, NTW labels
    # where the physics has it, no creep left over from standing)
    no_rest = dataclasses.replace(DIFFICULTY, ntw_hand_rest_probability=0.0,
                                  label_reaction_s=0.0, label_disagreement_s=0.0,
                                  load_creep_fraction=0.0)
    s = SimulatedSensors("exp2", seed=9, truth=truth, difficulty=no_rest)
    ntw = [[], []]
    for t, loads, _, _, label in _frames(s, 50.0):
        if label == "NTW" and None not in loads:
            part = 0 if t < 60 else 1
            ntw[part].append((np.array(loads, float) - truth.load_offsets_counts)
                             / truth.load_gains_counts_per_n)
    first, last = (np.mean(x, axis=0) for x in ntw)
    # the drift starts at zero (just calibrated) and wanders by newtons over minutes
    assert np.abs(first).max() < 2.5
    assert np.abs(last).max() > 2 * np.abs(first).max() and np.abs(last).max() > 3.0
    assert np.abs(last).max() < 40.0


def test_accelerometer_reads_one_g_up_standing_on_level_ground(exp2_frames):
    s, frames = exp2_frames
    t = s.truth
    standing = np.array([a for _, _, a, _, lab in frames if lab in ("ST", "NTW")], float)
    assert len(standing) > 1000
    assert all(isinstance(v, int) for v in frames[100][2])
    g = (standing - t.accel_bias_counts) / t.accel_counts_per_g
    np.testing.assert_allclose(np.median(g, axis=0), [0.0, 0.0, 1.0], atol=0.02)
    noise_g = t.accel_noise_counts / t.accel_counts_per_g
    assert np.all(np.quantile(np.abs(g - [0, 0, 1]), 0.5, axis=0) < 3 * noise_g + 0.01)
    # rolling shakes the walker: more spread while walking forward
    walking = np.array([a for _, _, a, _, lab in frames if lab == "WF"], float)
    assert walking[:, 2].std() > 2 * standing[:, 2].std()


def test_accelerometer_saturates_at_full_scale():
    truth = default_truth(0)
    truth.accel_counts_per_g = np.array([256.0, 256.0, 5000.0])  # 1 g beyond 16 g scale
    s = SimulatedSensors("exp1", seed=0, truth=truth)
    s.advance_to(1.0)
    assert s.accel_read()[2] == ACCEL_MAX_COUNTS


def test_encoder_count_matches_the_wheel_distance_within_one_tick(exp2_frames):
    s = SimulatedSensors("exp2", seed=21)
    m = s.truth.metres_per_tick
    moved = 0
    for t, _, _, ticks, _ in _frames(s, 37.0):
        d = s.physical_state()["wheel_distance_m"]
        assert isinstance(ticks, int)
        assert abs(ticks * m - d) <= m
        moved = max(moved, ticks)
    assert moved * m > 20.0  # the course really goes somewhere


def test_same_seed_same_readings_different_seed_different():
    def readings(seed, rate):
        s = SimulatedSensors("exp2", seed=seed, duration_s=40.0)
        return [(t, tuple(l), a, e, lab) for t, l, a, e, lab in _frames(s, rate, 30.0)]

    a, b, c = readings(5, 50.0), readings(5, 50.0), readings(6, 50.0)
    assert a == b
    assert [x[2] for x in a] != [x[2] for x in c]
    assert [x[1] for x in a] != [x[1] for x in c]
    # the readings at a moment do not depend on how often the firmware polls
    s1 = SimulatedSensors("exp2", seed=5)
    s2 = SimulatedSensors("exp2", seed=5)
    for t in np.arange(0, 60, 0.01):
        s1.advance_to(float(t))
    s2.advance_to(59.99)
    assert s1.accel_read() == s2.accel_read()
    assert s1.encoder_count() == s2.encoder_count()
    assert s1.hx711_read(2) == s2.hx711_read(2)


@pytest.mark.parametrize("course", ["exp1", "exp2"])
def test_label_sequence_is_the_designed_course(course):
    s = SimulatedSensors(course, seed=3)
    labels = [lab for *_, lab in _frames(s, 25.0)]
    assert s.finished
    assert _runs(labels) == _runs(A.designed_sequence(course))
    assert len(labels) / 25.0 == pytest.approx(s.end_s, abs=0.1)


def test_truth_label_equals_the_physics_label_without_jitter(exp2_frames):
    exact = dataclasses.replace(DIFFICULTY, label_reaction_s=0.0, label_disagreement_s=0.0)
    s = SimulatedSensors("exp2", seed=8, difficulty=exact)
    for t, *_, lab in _frames(s, 50.0, duration_s=120.0):
        assert lab == s.physical_state()["label"]


def test_label_jitter_moves_boundaries_like_a_human_labeller():
    exact = SimulatedSensors("exp2", seed=8)
    jit = SimulatedSensors("exp2", seed=8, label_jitter_s=0.4)
    a = [lab for *_, lab in _frames(exact, 50.0)]
    b = [lab for *_, lab in _frames(jit, 50.0)]
    assert len(a) == len(b)
    assert _runs(a) == _runs(b)  # same activities in the same order
    diff = np.flatnonzero(np.array(a) != np.array(b))
    assert 0 < len(diff) < 0.1 * len(a)
    # every disagreement is close to a true boundary
    bounds = np.flatnonzero(np.array(a[1:]) != np.array(a[:-1])) + 1
    limit = 3 * 0.4 * max(LABEL_JITTER_FACTOR.values()) * 50 + 1
    assert np.abs(diff[:, None] - bounds[None, :]).min(axis=1).max() <= limit


def test_free_course_runs_for_its_duration_or_forever():
    s = SimulatedSensors("free", seed=1, duration_s=90.0, physics_rate_hz=200.0)
    s.advance_to(89.9)
    assert not s.finished
    s.advance_to(90.0)
    assert s.finished
    s.advance_to(95.0)  # past the end: the last reading holds
    assert isinstance(s.accel_read()[0], int)
    endless = SimulatedSensors("free", seed=1, physics_rate_hz=200.0)
    endless.advance_to(600.0)
    assert not endless.finished and endless.end_s == math.inf


def test_memory_stays_bounded_on_a_long_free_course():
    s = SimulatedSensors("free", seed=2, physics_rate_hz=100.0, label_jitter_s=0.3)
    sizes = []
    t = 0.0
    while t < 2 * 3600:
        t += 60.0
        s.advance_to(t)
        s.truth_label()
        for c in range(4):
            s.hx711_read(c)
        sizes.append(s.buffer_sizes())
    piece = int(PIECE_S * 100) + 1
    for sz in sizes:
        assert sz["piece_samples"] <= piece
        assert sz["segments"] <= 15  # a few s of look-ahead for jittered labels
        assert sz["conversions"] <= PIECE_S * 82 + 2
        assert sz["accel"] <= PIECE_S * 100 + 2
    assert s.person._ou_pts.shape[1] < 500
    assert s._drift_pts.shape[1] < 20
    assert s.physical_state()["t_s"] == pytest.approx(7200.0)
    # nothing grows with time: the second hour holds no more than the first
    first = max(sz["segments"] for sz in sizes[:60])
    assert max(sz["segments"] for sz in sizes[60:]) <= first + 10


def test_time_only_moves_forward_and_bad_arguments_are_clear():
    s = SimulatedSensors("exp1", seed=0)
    s.advance_to(5.0)
    with pytest.raises(ValueError, match="forward"):
        s.advance_to(4.0)
    with pytest.raises(ValueError, match="unknown course"):
        SimulatedSensors("hallway")
    with pytest.raises(ValueError, match="seed"):
        SimulatedSensors("exp1", seed=-1)
    with pytest.raises(ValueError, match="duration_s"):
        SimulatedSensors("free", duration_s=-3)


def test_physical_state_reports_forces_accel_speed_and_label(exp2_frames):
    s = SimulatedSensors("exp2", seed=21)
    s.advance_to(20.0)
    st = s.physical_state()
    assert set(st) >= {"leg_forces_n", "accel_mps2", "speed_mps", "label"}
    assert st["leg_forces_n"].shape == (4,) and st["accel_mps2"].shape == (3,)
    assert st["label"] in A.EXP2_CLASSES
