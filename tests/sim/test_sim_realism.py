"""What makes the virtual walker as hard as a real one (issue 23, item 3): annotation
slop on the labels, load-cell creep, per-subject gait irregularity and load wander,
and NTW hand rests' knobs. Each is seeded, draws from its own stream (turning it off
leaves every other draw unchanged) and has the documented size."""
import dataclasses
import math

import numpy as np
import pytest

from device.sim.activities import DIFFICULTY, course_segments
from device.sim.person import PersonSimulator
from device.sim.subject import SubjectProfile
from device.sim.sensors import (LABEL_REACTION_SIGMA, LABEL_SLOP_FACTOR, LOAD_CREEP_TAU_S,
                                SimulatedSensors)

NO_SLOP = dataclasses.replace(DIFFICULTY, label_reaction_s=0.0, label_disagreement_s=0.0)


def _frames(sensors, rate_hz, duration_s):
    out = []
    for k in range(int(duration_s * rate_hz)):
        sensors.advance_to(k / rate_hz)
        loads = tuple(sensors.hx711_read(c) for c in range(4))
        out.append((loads, sensors.accel_read(), sensors.encoder_count(),
                    sensors.truth_label()))
    return out


def _all_segments(sensors):
    while sensors._pull_segment():
        pass
    return list(sensors._segments)


# ---- annotation slop ------------------------------------------------------------------
def test_annotation_slop_is_seeded_and_moves_only_the_labels():
    on = _frames(SimulatedSensors("exp2", seed=8), 50.0, 120.0)
    again = _frames(SimulatedSensors("exp2", seed=8), 50.0, 120.0)
    off = _frames(SimulatedSensors("exp2", seed=8, difficulty=NO_SLOP), 50.0, 120.0)
    assert on == again  # seeded
    # the sensors read exactly the same: slop touches the labels, never the physics
    assert [f[:3] for f in on] == [f[:3] for f in off]
    a = np.array([f[3] for f in off])
    b = np.array([f[3] for f in on])
    runs = lambda x: [x[0]] + [v for u, v in zip(x[:-1], x[1:]) if u != v]  # noqa: E731
    assert runs(list(a)) == runs(list(b))  # same activities in the same order
    diff = np.flatnonzero(a != b)
    assert 0 < len(diff) < 0.15 * len(a)
    bounds = np.flatnonzero(a[1:] != a[:-1]) + 1
    # every disagreement lies within reaction + 3 sd of a true boundary
    limit = (DIFFICULTY.label_reaction_s * math.exp(3 * LABEL_REACTION_SIGMA)
             + 3 * DIFFICULTY.label_disagreement_s) * 50 + 1
    assert np.abs(diff[:, None] - bounds[None, :]).min(axis=1).max() <= limit


def test_annotation_slop_offsets_have_the_documented_distribution():
    """Each session's annotator reacts label_reaction_s late (lognormal, sigma
    LABEL_REACTION_SIGMA); each boundary moves by a further normal offset of sd
    label_disagreement_s times the boundary's LABEL_SLOP_FACTOR."""
    dif = dataclasses.replace(DIFFICULTY, label_reaction_s=0.3, label_disagreement_s=0.5)
    reactions, z = [], []
    for seed in range(150):
        s = SimulatedSensors("exp2", seed=seed, physics_rate_hz=100.0, difficulty=dif)
        reactions.append(s.label_reaction_s)
        segs = _all_segments(s)
        for prev, seg in zip(segs[:-1], segs[1:]):
            offset = seg.label_start - round(seg.start * s.fs) / s.fs
            sd = 0.5 * max(LABEL_SLOP_FACTOR[prev.code], LABEL_SLOP_FACTOR[seg.code])
            half = 0.45 * min(prev.end - prev.start, seg.end - seg.start)
            if abs(offset) < min(half, 1.5) - 1e-9:  # not clipped
                z.append((offset - s.label_reaction_s) / sd)
    log_r = np.log(reactions)
    assert np.exp(np.median(log_r)) == pytest.approx(0.3, rel=0.1)
    assert log_r.std() == pytest.approx(LABEL_REACTION_SIGMA, rel=0.15)
    z = np.array(z)
    assert len(z) > 3000
    assert abs(np.median(z)) < 0.06
    assert np.median(np.abs(z)) == pytest.approx(0.6745, rel=0.08)  # a unit normal's


def test_annotation_slop_off_labels_the_physics_exactly():
    s = SimulatedSensors("exp2", seed=3, physics_rate_hz=100.0, difficulty=NO_SLOP)
    assert s.label_reaction_s == 0.0
    for seg in _all_segments(s):
        assert seg.label_start == round(seg.start * s.fs) / s.fs


# ---- load-cell creep ------------------------------------------------------------------
def test_creep_follows_a_first_order_lag_carried_across_pieces():
    f = 0.02
    dif = dataclasses.replace(DIFFICULTY, load_creep_fraction=f)
    fs = 100.0
    n = int(2 * LOAD_CREEP_TAU_S * fs)
    force = np.full((n, 4), 200.0)
    s1 = SimulatedSensors("exp1", seed=0, physics_rate_hz=fs, difficulty=dif)
    s1._creep_state[:] = 0.0
    whole = s1._creep_forces(force)
    s2 = SimulatedSensors("exp1", seed=0, physics_rate_hz=fs, difficulty=dif)
    s2._creep_state[:] = 0.0
    pieces = np.concatenate([s2._creep_forces(force[:777]), s2._creep_forces(force[777:])])
    np.testing.assert_allclose(pieces, whole, rtol=1e-12, atol=1e-12)
    a = math.exp(-1.0 / (fs * LOAD_CREEP_TAU_S))
    exact = f * 200.0 * (1 - a ** np.arange(1, n + 1))
    np.testing.assert_allclose(whole[:, 2], exact, rtol=1e-9)
    # after one time constant, 63 % of the creep: the documented size
    assert whole[int(LOAD_CREEP_TAU_S * fs) - 1, 0] == pytest.approx(
        (1 - math.exp(-1)) * f * 200.0, rel=1e-3)


def test_creep_changes_the_load_cells_only():
    on = dataclasses.replace(DIFFICULTY, load_creep_fraction=0.05)
    off = dataclasses.replace(DIFFICULTY, load_creep_fraction=0.0)
    a = _frames(SimulatedSensors("exp1", seed=4, difficulty=on), 50.0, 60.0)
    b = _frames(SimulatedSensors("exp1", seed=4, difficulty=off), 50.0, 60.0)
    assert [f[1:] for f in a] == [f[1:] for f in b]  # accel, encoder, labels
    la = np.array([f[0] for f in a], float)
    lb = np.array([f[0] for f in b], float)
    assert np.abs(la - lb).max() > 1000  # counts: a few tenths of a newton and more


# ---- per-subject gait irregularity and load wander -------------------------------------
def test_gait_and_weight_variability_off_keeps_every_other_draw():
    off = dataclasses.replace(DIFFICULTY, gait_variability=0.0, weight_variability=0.0)
    on = dataclasses.replace(DIFFICULTY, gait_variability=0.3, weight_variability=0.3)
    for seed in range(20):
        p_off = SubjectProfile.draw(np.random.default_rng(seed), "older", difficulty=off)
        p_on = SubjectProfile.draw(np.random.default_rng(seed), "older", difficulty=on)
        assert p_on == SubjectProfile.draw(np.random.default_rng(seed), "older",
                                           difficulty=on)  # seeded
        assert p_off.gait_irregularity == 0.03 and p_off.load_wander == 1.0
        rest = dataclasses.replace(p_on, gait_irregularity=0.03, load_wander=1.0)
        assert rest == p_off


@pytest.mark.parametrize("knob,field,centre", [("gait_variability", "gait_irregularity", 0.03),
                                              ("weight_variability", "load_wander", 1.0)])
def test_gait_and_weight_variability_spread_subjects_lognormally(knob, field, centre):
    dif = dataclasses.replace(DIFFICULTY, **{knob: 0.3})
    x = np.log([getattr(SubjectProfile.draw(np.random.default_rng(s), "young",
                                            difficulty=dif), field) / centre
                for s in range(400)])
    assert abs(np.median(x)) < 0.05
    assert x.std() == pytest.approx(0.3, rel=0.12)


def test_load_wander_scales_the_slow_wander_of_the_standing_load():
    """Standing load = stand_load (1 + 0.15 load_wander ou): linear in load_wander,
    15 % rms at load_wander 1."""
    base = SubjectProfile.draw(np.random.default_rng(3), "older")
    loads = []
    for w in (0.0, 0.5, 1.0):  # (small enough that the load never clips at zero)
        profile = dataclasses.replace(base, load_wander=w)
        sim = PersonSimulator(profile, np.random.default_rng(11), 200.0)
        loads.append(sim.render("ST", 400.0).handle_load_n[400:])
    p0, p_half, p1 = loads
    np.testing.assert_allclose(p1 - p_half, p_half - p0, atol=1e-9)
    rel = (p1 - p0).std() / p0.mean()
    assert rel == pytest.approx(0.15, rel=0.35)


def test_gait_irregularity_makes_the_steps_irregular():
    base = SubjectProfile.draw(np.random.default_rng(5), "older")

    def step_periods(irr):
        profile = dataclasses.replace(base, gait_irregularity=irr)
        sim = PersonSimulator(profile, np.random.default_rng(2), 200.0)
        P = sim.render("WF", 120.0).handle_load_n[400:]
        x = P - np.convolve(P, np.ones(200) / 200, mode="same")
        up = np.flatnonzero((x[1:] > 0) & (x[:-1] <= 0))[2:-2]
        return np.diff(up) / 200.0

    regular, irregular = step_periods(0.03), step_periods(0.15)
    assert irregular.std() / irregular.mean() > 2 * regular.std() / regular.mean()


# ---- NTW hand rests' knobs --------------------------------------------------------------
def test_ntw_rest_load_median_sets_the_subjects_median():
    for median in (0.02, 0.05):
        dif = dataclasses.replace(DIFFICULTY, ntw_rest_load_median=median)
        x = [SubjectProfile.draw(np.random.default_rng(s), "older", difficulty=dif)
             .ntw_rest_load_fraction for s in range(300)]
        assert np.median(x) == pytest.approx(median, rel=0.1)


def test_ntw_rest_share_min_keeps_hands_on_the_grips_that_long():
    dif = dataclasses.replace(DIFFICULTY, ntw_hand_rest_probability=1.0, ntw_rest_share_min=0.85)
    for seed in range(5):
        rng = np.random.default_rng(seed)
        profile = SubjectProfile.draw(rng, "older", difficulty=dif)
        sim = PersonSimulator(profile, rng, 200.0, dif)
        code, d = next(course_segments("exp2", rng))
        assert code == "NTW"
        ch = sim.render(code, d)
        touched = np.mean(ch.handle_load_n > 0)
        assert touched >= 0.85 - 0.35 / d  # minus the hands' landing ramp
