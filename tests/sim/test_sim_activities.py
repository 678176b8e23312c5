"""Activities, courses and the free-living Markov chain (device/sim/activities.py)."""
import itertools

import numpy as np
import pytest

from device.sim import activities as A
from device.sim.activities import (ACTIVITIES, ACTIVITY_NAMES, EXP1_CLASSES, EXP2_CLASSES,
                                   EXP2_TRANSITIONS, course_segments)


def _runs(codes):
    """Run-length encode a sequence of codes (consecutive repeats merged)."""
    return [k for k, _ in itertools.groupby(codes)]


def test_activity_sets_follow_the_thesis_tables():
    assert len(ACTIVITIES) == 13 and set(ACTIVITY_NAMES) == set(ACTIVITIES)
    assert EXP1_CLASSES == ("NTW", "ST", "WF", "TL", "TR", "WB", "TRS")
    # The 12 classes of the experiment-2 result tables, in their order; no TRS.
    assert EXP2_CLASSES == ("NTW", "ST", "WF", "TL", "TR", "WB", "RT", "SW",
                            "GUR", "GDR", "GUC", "GDC")
    assert set(EXP2_CLASSES) == set(ACTIVITIES) - {"TRS"}


def test_exp2_transitions_are_table_6_4_renormalised():
    T = EXP2_TRANSITIONS
    assert T.shape == (12, 12)
    assert np.all(T >= 0)
    np.testing.assert_allclose(T.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(np.diag(T) > 0.99)
    i = EXP2_CLASSES.index
    # Spot values of Table 6.4 (renormalisation changes them by < 0.1 %).
    assert T[i("SW"), i("SW")] == pytest.approx(0.9995, abs=1e-3)
    assert T[i("GDC"), i("WF")] == pytest.approx(0.0071, rel=0.01)
    assert T[i("RT"), i("WB")] == pytest.approx(0.0006, rel=0.01)
    assert T[i("ST"), i("WB")] == 0 and T[i("WF"), i("WB")] == 0
    with pytest.raises(ValueError):
        T[0, 0] = 0.5  # read-only


def test_exp1_course_is_the_designed_run_walked_twice():
    run = [code for code, _, _ in A._EXP1_RUN]
    assert run[0] == "NTW" and run[1] == "TRS" and run[-2] == "TRS" and run[-1] == "NTW"
    assert set(run) == set(EXP1_CLASSES)
    for seed in range(5):
        segs = list(course_segments("exp1", np.random.default_rng(seed)))
        codes = [c for c, _ in segs]
        assert codes == run + run
        assert all(d > 0 for _, d in segs)
        # the two runs are separate draws: same order, different durations
        d1 = [d for _, d in segs[:len(run)]]
        d2 = [d for _, d in segs[len(run):]]
        assert d1 != d2
        total = sum(d for _, d in segs)
        assert 2 * 168 * 0.6 < total < 2 * 168 * 1.6


def test_exp2_course_uses_all_classes_and_only_observed_transitions():
    segs = list(course_segments("exp2", np.random.default_rng(0)))
    codes = [c for c, _ in segs]
    assert codes == [c for c, _, _ in A._EXP2_COURSE]
    assert set(codes) == set(EXP2_CLASSES)
    i = EXP2_CLASSES.index
    for a, b in zip(codes, codes[1:]):
        assert a != b
        assert EXP2_TRANSITIONS[i(a), i(b)] > 0, "%s -> %s never happens in Table 6.4" % (a, b)


def test_exp2_durations_follow_table_6_3_shares():
    totals = dict.fromkeys(EXP2_CLASSES, 0.0)
    n_subjects = 40
    for seed in range(n_subjects):
        for code, d in course_segments("exp2", np.random.default_rng(seed)):
            totals[code] += d
    target = {c: n / A.EXP2_SUBJECTS / A.LABEL_RATE_HZ for c, n in A.EXP2_SAMPLE_COUNTS.items()}
    for code in EXP2_CLASSES:
        mean = totals[code] / n_subjects
        if code == "WB":  # ~1 s per subject in the thesis: only check it is short
            assert 0.3 < mean < 3.0
            continue
        assert 0.75 * target[code] < mean < 1.35 * target[code], (code, mean, target[code])
    per_subject = [sum(d for _, d in course_segments("exp2", np.random.default_rng(s)))
                   for s in range(10)]
    assert np.std(per_subject) > 5.0  # subjects differ


def test_pace_stretches_walking_not_sitting():
    fast = list(course_segments("exp2", np.random.default_rng(3), pace=0.8))
    slow = list(course_segments("exp2", np.random.default_rng(3), pace=1.6))
    for (c1, d1), (c2, d2) in zip(fast, slow):
        assert c1 == c2
        if c1 in ("WF", "TL", "TR"):
            assert d2 == pytest.approx(2 * d1)
        if c1 in ("SW", "ST", "NTW", "RT"):
            assert d2 == pytest.approx(d1)


def test_free_course_transitions_only_where_table_6_4_allows():
    rng = np.random.default_rng(11)
    segs = list(course_segments("free", rng, duration_s=6 * 3600))
    codes = [c for c, _ in segs]
    assert codes[0] == "NTW"
    i = EXP2_CLASSES.index
    seen = set()
    for a, b in zip(codes, codes[1:]):
        assert a != b
        assert EXP2_TRANSITIONS[i(a), i(b)] > 0, (a, b)
        seen.add((a, b))
    assert len(seen) > 25  # the chain really wanders through the table
    assert sum(d for _, d in segs) == pytest.approx(6 * 3600)
    # Dwell times are the geometric ones implied at 50 Hz: mean 1 / (1 - p_ii) samples.
    dwell = {}
    for c, d in segs[:-1]:
        dwell.setdefault(c, []).append(d)
    for c in ("ST", "WF", "SW"):
        expected = 1.0 / (1.0 - EXP2_TRANSITIONS[i(c), i(c)]) / 50.0
        assert np.mean(dwell[c]) == pytest.approx(expected, rel=0.35), c
        assert all(abs(d * 50 - round(d * 50)) < 1e-9 for d in dwell[c])  # whole samples


def test_free_course_is_endless_without_duration():
    it = course_segments("free", np.random.default_rng(0))
    total = sum(d for _, d in itertools.islice(it, 2000))
    assert total > 3600


def test_duration_cuts_designed_courses_too():
    segs = list(course_segments("exp2", np.random.default_rng(0), duration_s=30.0))
    assert sum(d for _, d in segs) == pytest.approx(30.0)
    assert [c for c, _ in segs] == [c for c, _, _ in A._EXP2_COURSE][:len(segs)]


def test_same_rng_same_course_different_rng_different_course():
    a = list(course_segments("exp2", np.random.default_rng(5)))
    b = list(course_segments("exp2", np.random.default_rng(5)))
    c = list(course_segments("exp2", np.random.default_rng(6)))
    assert a == b and a != c


@pytest.mark.parametrize("bad", ["exp3", "", "EXP1", None])
def test_unknown_course_is_a_clear_value_error(bad):
    with pytest.raises(ValueError, match="unknown course.*exp1, exp1-run1, exp1-run2, exp2, free"):
        list(course_segments(bad, np.random.default_rng(0)))


def test_exp1_runs_are_the_two_halves_of_the_exp1_session():
    both = list(course_segments("exp1", np.random.default_rng(3)))
    run1 = list(course_segments("exp1-run1", np.random.default_rng(3)))
    run2 = list(course_segments("exp1-run2", np.random.default_rng(3)))
    assert run1 + run2 == both and len(run1) == len(run2)


def test_bad_duration_is_rejected():
    with pytest.raises(ValueError, match="duration_s"):
        list(course_segments("free", np.random.default_rng(0), duration_s=0))
