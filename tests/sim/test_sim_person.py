"""Physics of a person using the walker (device/sim/person.py)."""
import dataclasses
import math

import numpy as np
import pytest

from device.sim.activities import DIFFICULTY, course_segments
from device.sim.person import PersonSimulator, PhysicalChunk
from device.sim.subject import SubjectProfile
from device.sim.sensors import GRAVITY, WALKER_GEOMETRY as G

FS = 1000.0


class Session:
    """A whole course rendered for one subject, with per-sample bookkeeping."""

    def __init__(self, course, seed, population=None, profile=None, fs=FS):
        rng = np.random.default_rng(seed)
        population = population or ("young" if course == "exp1" else "older")
        self.profile = profile or SubjectProfile.draw(rng, population)
        sim = PersonSimulator(self.profile, rng, fs)
        self.segments = list(course_segments(course, rng, 600.0 if course == "free" else None))
        self.ch = PhysicalChunk.concatenate([sim.render(c, d) for c, d in self.segments])
        self.fs = fs
        # seconds since the start of / until the end of the current activity
        n = len(self.ch)
        change = np.flatnonzero(self.ch.labels[1:] != self.ch.labels[:-1]) + 1
        starts = np.r_[0, change]
        ends = np.r_[change, n]
        run = np.repeat(np.arange(len(starts)), ends - starts)
        i = np.arange(n)
        self.since = (i - starts[run]) / fs
        self.until = (ends[run] - 1 - i) / fs
        # the user's COP by the thesis's eqs 6.1-6.3 (metres for COP_FP)
        F = self.ch.leg_forces_n
        self.total = F.sum(axis=1)
        safe = np.where(np.abs(self.total) > 1e-9, self.total, 1.0)
        self.cop_sp = (F[:, 1] + F[:, 0] - F[:, 2] - F[:, 3]) / safe
        self.cop_fp = (G.front_half_width_m * (F[:, 1] - F[:, 0])
                       + G.rear_half_width_m * (F[:, 2] - F[:, 3])) / safe

    def settled(self, code, after=1.5, before=0.0):
        """Samples of `code` at least `after` s into the segment (transition done)."""
        return (self.ch.labels == code) & (self.since >= after) & (self.until >= before)


@pytest.fixture(scope="module")
def exp2_sessions():
    return [Session("exp2", seed) for seed in (1, 2, 3)]


@pytest.fixture(scope="module")
def exp1_session():
    return Session("exp1", 7)


@pytest.fixture(scope="module")
def free_session():
    return Session("free", 5)


def _all(exp2_sessions, exp1_session, free_session):
    return list(exp2_sessions) + [exp1_session, free_session]


def _inside_polygon(x, y, poly):
    """Points (x, y) inside or on the convex polygon (vertices counter-clockwise)."""
    inside = np.ones(len(x), bool)
    for (x0, y0), (x1, y1) in zip(poly, np.roll(poly, -1, axis=0)):
        cross = (x1 - x0) * (y - y0) - (y1 - y0) * (x - x0)
        inside &= cross >= -1e-9
    return inside


def test_wheels_press_on_the_floor_and_their_cop_stays_in_the_footprint(
        exp2_sessions, exp1_session, free_session):
    poly = G.legs_xy_m[[2, 3, 0, 1]]  # RL, RR, FR, FL: counter-clockwise
    for s in _all(exp2_sessions, exp1_session, free_session):
        contact = s.ch.contact_forces_n
        assert contact.min() >= -1e-6  # a wheel can push on the floor, never pull
        total = contact.sum(axis=1)
        m = total > 20.0
        x = contact[m] @ G.legs_xy_m[:, 0] / total[m]
        y = contact[m] @ G.legs_xy_m[:, 1] / total[m]
        assert _inside_polygon(x, y, poly).all()


def test_user_cop_by_thesis_equations_stays_in_the_footprint(
        exp2_sessions, exp1_session, free_session):
    """COP_FP (eq 6.3) is a lateral position inside the walker whenever the user loads it;
    COP_SP (eq 6.2) is inside [-1, 1] whenever the user leans on it without pushing or
    braking (a push at handle height legitimately moves it out: the walker's own
    weight then keeps the wheels down, see the contact-force test)."""
    for s in _all(exp2_sessions, exp1_session, free_session):
        loaded = s.total > 40.0
        assert loaded.sum() > 1000
        assert np.abs(s.cop_fp[loaded]).max() <= G.rear_half_width_m + 1e-9
        for code in ("ST", "SW", "RT"):
            m = s.settled(code) & loaded
            if m.any():
                assert np.abs(s.cop_sp[m]).max() <= 1.0 + 1e-9, code


def _render(course, seed, difficulty):
    rng = np.random.default_rng(seed)
    profile = SubjectProfile.draw(rng, "young" if course == "exp1" else "older")
    sim = PersonSimulator(profile, rng, FS, difficulty)
    segments = list(course_segments(course, rng))
    return profile, PhysicalChunk.concatenate([sim.render(c, d) for c, d in segments])


def test_not_touching_without_hand_rests_means_zero_user_load():
    no_rest = dataclasses.replace(DIFFICULTY, ntw_hand_rest_probability=0.0)
    for course, seed in (("exp2", 1), ("exp1", 7)):
        _, ch = _render(course, seed, no_rest)
        m = ch.labels == "NTW"
        assert m.sum() > 1000
        # Away from the neighbouring activity's hand-off, nothing touches the walker.
        change = np.flatnonzero(ch.labels[1:] != ch.labels[:-1]) + 1
        near = np.zeros(len(ch), bool)
        for c in change:
            near[max(0, c - 1500):c + 1500] = True
        assert np.abs(ch.leg_forces_n[m & ~near]).max() == 0.0


def test_hands_resting_in_ntw_are_light_and_change_nothing_else():
    """NTW hand rests (on by default) put a light load on the grips in some NTW
    segments, and come from their own random stream: every other activity renders
    exactly as with the rests turned off. (The resting hands nudge the walker by
    centimetres, which moves the floor's unevenness under the wheels, so that is
    switched off here.)"""
    no_rest = dataclasses.replace(DIFFICULTY, ntw_hand_rest_probability=0.0,
                                  floor_unevenness=0.0)
    all_rest = dataclasses.replace(DIFFICULTY, ntw_hand_rest_probability=1.0,
                                   floor_unevenness=0.0)
    profile, off = _render("exp1", 7, no_rest)
    _, on = _render("exp1", 7, all_rest)
    np.testing.assert_array_equal(off.labels, on.labels)
    ntw = off.labels == "NTW"
    load = on.leg_forces_n[ntw].sum(axis=1)
    assert load.max() > 0.002 * profile.weight_n  # the hands do rest ...
    assert load.max() < 0.2 * profile.weight_n  # ... lightly
    assert (load < 1e-9).any()  # and only for part of a segment
    # exp1 starts and ends with NTW: compare everything 3 s clear of both.
    idx = np.flatnonzero(ntw)
    gap = np.flatnonzero(np.diff(idx) > 1)[0]
    first_end, last_start = idx[gap], idx[gap + 1]
    far = np.zeros(len(off), bool)
    far[first_end + 3000:last_start - 3000] = True
    assert far.sum() > 10000
    np.testing.assert_allclose(off.leg_forces_n[far], on.leg_forces_n[far], atol=1e-9)


def test_not_touching_means_zero_user_load_and_a_still_walker(exp2_sessions, exp1_session):
    for s in list(exp2_sessions) + [exp1_session]:
        m = s.settled("NTW", after=1.5)
        assert m.sum() > 1000
        # Hands may rest on the grips (light load) and nudge the walker a little
        # (centimetres per second, as a standing user's hands do); it never rolls off.
        assert np.abs(s.ch.leg_forces_n[m]).sum(axis=1).max() < 0.2 * s.profile.weight_n
        assert np.abs(s.ch.speed_mps[m]).max() < 0.04
        np.testing.assert_allclose(s.ch.accel_mps2[m] - [0, 0, GRAVITY], 0.0, atol=0.2)


def test_speed_is_about_zero_standing_sitting_and_reaching(exp2_sessions, free_session):
    for s in list(exp2_sessions) + [free_session]:
        for code in ("ST", "SW", "RT", "NTW"):
            m = s.settled(code, after=1.5)
            if m.any():
                assert np.abs(s.ch.speed_mps[m]).max() < 0.12, code
                assert np.abs(s.ch.speed_mps[m]).mean() < 0.03, code
        m = s.settled("WF")
        assert s.ch.speed_mps[m].mean() > 0.1


def test_walking_loads_oscillate_at_the_cadence_alternating_left_right(exp1_session):
    s = exp1_session
    labels = s.ch.labels
    # the longest settled stretch of walking forward
    m = s.settled("WF", after=1.0, before=0.5)
    edges = np.flatnonzero(np.diff(np.r_[0, m.astype(int), 0]))
    a, b = max(zip(edges[::2], edges[1::2]), key=lambda ab: ab[1] - ab[0])
    assert (b - a) / s.fs > 6.0 and set(labels[a:b]) == {"WF"}
    F = s.ch.leg_forces_n[a:b]

    def peak_hz(x):
        x = x - x.mean()
        spec = np.abs(np.fft.rfft(x * np.hanning(len(x))))
        f = np.fft.rfftfreq(len(x), 1 / s.fs)
        band = f > 0.4
        return f[band][np.argmax(spec[band])]

    cadence = s.profile.cadence_hz
    assert peak_hz(F.sum(axis=1)) == pytest.approx(cadence, rel=0.1)
    left_minus_right = F[:, 1] + F[:, 2] - F[:, 0] - F[:, 3]
    assert peak_hz(left_minus_right) == pytest.approx(cadence / 2, rel=0.1)


def test_left_and_right_turns_are_mirror_images(exp2_sessions):
    for s in exp2_sessions:
        tl, tr, wf = s.settled("TL", 0.5, 0.5), s.settled("TR", 0.5, 0.5), s.settled("WF")
        ch = s.ch
        assert ch.yaw_rate_rps[tl].mean() > 0.2 and ch.yaw_rate_rps[tr].mean() < -0.2
        # centripetal acceleration v * w: to the left in left turns
        assert ch.accel_mps2[tl, 1].mean() > 0.02 > -0.02 > ch.accel_mps2[tr, 1].mean()
        assert ch.accel_mps2[tl, 1].mean() - ch.accel_mps2[tr, 1].mean() > 0.08
        # the encoder (rear right) wheel is the outer wheel in a left turn
        wheel = np.gradient(ch.wheel_distance_m) * s.fs
        assert (wheel[tl] - ch.speed_mps[tl]).mean() > 0.05
        assert (wheel[tr] - ch.speed_mps[tr]).mean() < -0.05
        # on average the outer handle carries more (COP_FP: + is left)
        shift_tl = s.cop_fp[tl].mean() - s.cop_fp[wf].mean()
        shift_tr = s.cop_fp[tr].mean() - s.cop_fp[wf].mean()
        assert shift_tr > shift_tl


def test_walking_backwards_rolls_backwards_with_less_load(exp1_session):
    s = exp1_session
    wb, wf = s.settled("WB", 1.0, 0.5), s.settled("WF")
    assert s.ch.speed_mps[wb].mean() < -0.1
    assert np.gradient(s.ch.wheel_distance_m)[wb].mean() < 0
    assert s.total[wb].mean() < s.total[wf].mean()


def test_ramps_tilt_the_walker_by_about_4_8_degrees(exp2_sessions):
    slope = math.atan(1 / 12)
    for s in exp2_sessions:
        ch = s.ch
        up, down = s.settled("GUR", 1.0, 1.0), s.settled("GDR", 1.0, 1.0)
        for m, sign in ((up, 1), (down, -1)):
            pitch = ch.pitch_rad[m]
            assert np.all(sign * pitch > 0.5 * slope) and np.all(sign * pitch < 1.25 * slope)
            # gravity projects onto x: + going up (nose up), - going down
            expected = GRAVITY * np.sin(pitch).mean()
            assert ch.accel_mps2[m, 0].mean() == pytest.approx(expected, abs=0.25)
        # the walker's own weight moves back on an up-ramp (frame forces)
        fr = ch.frame_forces_n
        assert (fr[up, :2].sum(1) - fr[up, 2:].sum(1)).mean() < -3.0
        assert (fr[down, :2].sum(1) - fr[down, 2:].sum(1)).mean() > 3.0


def test_curbs_lift_the_front_then_put_it_down_with_a_spike(exp2_sessions):
    found = 0
    for s in exp2_sessions:
        ch = s.ch
        guc = ch.labels == "GUC"
        tipped = guc & (ch.wheels_down[:, 0] == 0) & (ch.pitch_rad > 0.1)
        if not tipped.any():
            continue  # this subject lifted the whole walker
        found += 1
        # front wheels in the air: no user load on the front legs, the walker's own
        # weight has moved off them too (cells read below their tare)
        assert np.abs(ch.leg_forces_n[tipped, :2]).max() < 1e-6
        assert ch.cell_forces_n[tipped, :2].max() < -5.0
        assert np.abs(ch.speed_mps[tipped]).max() < 0.35
        # then the front wheels land on the curb: a spike on the front legs
        after = guc & (ch.t_s > ch.t_s[tipped][-1])
        front = ch.leg_forces_n[after, :2].sum(axis=1)
        assert front.max() > 40.0
        # and the accelerometer sees the tilt
        assert ch.accel_mps2[tipped, 0].mean() > GRAVITY * math.sin(0.1)
    assert found >= 1
    for s in exp2_sessions:  # going down: front wheels first (nose down) or lifted whole
        gdc = s.ch.labels == "GDC"
        in_air = s.ch.wheels_down[gdc].max(axis=1).min() == 0
        assert s.ch.pitch_rad[gdc].min() < -0.1 or in_air
        assert np.abs(s.ch.speed_mps[s.settled("GDC", 0.8)]).max() < 0.4


def test_sitting_puts_most_of_the_body_weight_centrally_on_the_seat(exp2_sessions):
    for s in exp2_sessions:
        m = s.settled("SW", after=2.0)
        bw = s.profile.mass_kg * GRAVITY
        assert s.total[m].mean() == pytest.approx(s.profile.seat_fraction * bw, rel=0.12)
        assert s.total[m].mean() > 0.5 * bw
        assert np.abs(s.cop_sp[m]).mean() < 0.35
        assert np.abs(s.cop_fp[m]).mean() < 0.06
        standing = s.settled("ST")
        assert s.total[m].mean() > 2 * s.total[standing].mean()


def test_reaching_unloads_one_handle(exp2_sessions):
    for s in exp2_sessions:
        rt, st = s.settled("RT", 0.5), s.settled("ST")
        hand = 1 if s.profile.reach_hand > 0 else -1  # the holding hand's side
        lateral_rt = np.abs(s.cop_fp[rt] - s.cop_fp[st].mean())
        assert np.quantile(lateral_rt, 0.9) > 0.05
        assert (hand * s.cop_fp[rt]).max() > 0.1


def test_transfers_push_on_the_handles():
    prof = SubjectProfile(transfer_uses_walker=True, transfer_peak_fraction=0.35)
    s = Session("exp1", 3, profile=prof)
    trs = s.ch.labels == "TRS"
    st = s.settled("ST", 0.8)
    assert s.total[trs].max() > 1.5 * s.total[st].mean()
    assert s.total[trs].max() > 0.25 * prof.mass_kg * GRAVITY
    assert np.abs(s.ch.speed_mps[trs]).max() < 0.1


def test_activities_blend_smoothly(exp2_sessions, exp1_session, free_session):
    for s in _all(exp2_sessions, exp1_session, free_session):
        ch = s.ch
        per_ms = 1000.0 / s.fs
        assert np.abs(np.diff(ch.handle_load_n)).max() < 3.0 * per_ms  # N per sample
        assert np.abs(np.diff(ch.seat_load_n)).max() < 3.0 * per_ms
        assert np.abs(np.diff(ch.speed_mps)).max() < 0.02 * per_ms
        assert np.abs(np.diff(ch.yaw_rate_rps)).max() < 0.02 * per_ms


def test_chunks_continue_each_other():
    rng = np.random.default_rng(0)
    sim = PersonSimulator(SubjectProfile(), rng, FS)
    a = sim.render("WF", 3.0)
    b = sim.render("WF", 3.0)
    assert b.t_s[0] == pytest.approx(a.t_s[-1] + 1 / FS)
    assert abs(b.speed_mps[0] - a.speed_mps[-1]) < 0.01
    assert abs(b.handle_load_n[0] - a.handle_load_n[-1]) < 2.0
    assert 0 < b.wheel_distance_m[0] - a.wheel_distance_m[-1] < 0.01
    # render_iter pieces are the same stream as one render
    s1 = PersonSimulator(SubjectProfile(), np.random.default_rng(4), FS)
    s2 = PersonSimulator(SubjectProfile(), np.random.default_rng(4), FS)
    whole = s1.render("TL", 5.0)
    pieces = PhysicalChunk.concatenate(list(s2.render_iter("TL", 5.0, max_chunk_s=5.0)))
    np.testing.assert_array_equal(whole.leg_forces_n, pieces.leg_forces_n)
    # an abandoned render_iter is finished before the next activity
    it = s2.render_iter("WF", 2.0, max_chunk_s=0.5)
    next(it)
    c = s2.render("ST", 1.0)
    assert c.t_s[0] == pytest.approx(7.0)


def test_standing_on_level_ground_reads_one_g_up(exp2_sessions):
    for s in exp2_sessions:
        m = s.settled("ST", 1.5)
        np.testing.assert_allclose(s.ch.accel_mps2[m].mean(axis=0), [0, 0, GRAVITY], atol=0.05)


def test_same_seed_same_physics_different_seed_different():
    def run(seed):
        rng = np.random.default_rng(seed)
        sim = PersonSimulator(SubjectProfile.draw(rng), rng, 500.0)
        return PhysicalChunk.concatenate([sim.render(c, 2.0) for c in ("ST", "WF", "GUC")])

    a, b, c = run(1), run(1), run(2)
    np.testing.assert_array_equal(a.leg_forces_n, b.leg_forces_n)
    np.testing.assert_array_equal(a.accel_mps2, b.accel_mps2)
    assert not np.allclose(a.leg_forces_n, c.leg_forces_n)


def test_subject_profiles_vary_with_the_knob():
    draws = [SubjectProfile.draw(np.random.default_rng(s)) for s in range(200)]
    masses = np.array([p.mass_kg for p in draws])
    assert 60 < masses.mean() < 80 and masses.std() > 8
    speeds = np.array([p.speed_mps for p in draws])
    assert speeds.min() > 0.1 and speeds.std() > 0.08
    flat = [SubjectProfile.draw(np.random.default_rng(s), variability=0.0) for s in range(5)]
    assert len({p.mass_kg for p in flat}) == 1
    young = [SubjectProfile.draw(np.random.default_rng(s), "young") for s in range(100)]
    assert np.mean([p.speed_mps for p in young]) > speeds.mean() + 0.2
    assert DIFFICULTY.subject_variability > 0
    with pytest.raises(ValueError):
        SubjectProfile.draw(np.random.default_rng(0), "teen")


def test_unknown_activity_is_rejected():
    sim = PersonSimulator(SubjectProfile(), np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown activity"):
        sim.render("RUN", 1.0)
    with pytest.raises(ValueError, match="duration_s"):
        sim.render("WF", -1.0)
