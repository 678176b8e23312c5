"""Activities of the thesis (Tables 6.1, 6.2), the courses subjects walk, and the
knobs that set how hard the simulated activities are to tell apart.

Courses
-------
``course_segments(course, rng)`` yields ``(activity code, duration s)``:

* ``"exp1"``: experiment 1 (healthy subjects, 7 activities, Table 6.1). The thesis's
  figure 6.1 and its course description are missing, so the course is designed here:
  sitting on a chair not touching the walker, sit-to-stand transfer, a hallway loop
  with more left than right corners, walking backwards twice, stand-to-sit back onto
  the chair. Each subject walks it TWICE (the thesis includes one run in training).
  Mean durations reproduce the per-run shares of the exp-1 confusion matrices
  (Table 6.5 row sums / 14 runs: NTW 18 s, ST 7 s, WF 95 s, TL 19 s, TR 10 s,
  WB 12.5 s, TRS 6 s; ~168 s per run).
* ``"exp2"``: experiment 2 (older adults, Figure 6.2, 12 classes). The figure is
  missing too; the designed course uses only transitions that are non-zero in
  Table 6.4 (e.g. WB only after a reaching task, SW only from standing, ramps and
  curbs entered from walking) and its mean durations reproduce the per-subject
  sample shares of Table 6.3 (counts / 20 subjects / 50 Hz: NTW 8.6 s, ST 52 s,
  WF 71 s, TL 17 s, TR 16 s, WB 1 s, RT 12 s, SW 71 s, GUR 3 s, GDR 3.2 s, GUC 3.1 s,
  GDC 1.7 s; ~260 s per subject).
* ``"free"``: free living, an endless Markov chain with the transition matrix of
  Table 6.4 (``EXP2_TRANSITIONS``); each dwell is drawn from the geometric
  distribution the diagonal implies at 50 Hz.

Durations carry per-subject randomness: a pace factor (slow subjects take longer
to walk the same hallway), a per-class factor (one subject rests longer, another
reaches longer) and a per-segment factor.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

# The vocabulary is the product's (domain/activities.py); the simulator uses it.
from domain.activities import (  # noqa: E402,F401  (re-exported for the simulator)
    ACTIVITIES,
    ACTIVITY_NAMES,
    EXP1_CLASSES,
    EXP2_CLASSES,
    EXP2_SAMPLE_COUNTS,
    EXP2_SUBJECTS,
    EXP2_TRANSITIONS,
    LABEL_RATE_HZ,
)

COURSES = ("exp1", "exp1-run1", "exp1-run2", "exp2", "free")

#: Seed of the person the monitor's virtual walker shows by default: the first seed
#: (counting from 1) whose free-living course touches the walker within 1 s and walks
#: within 5 s, so a first `make run` shows activities change at once (seed 0 stands
#: by the walker for 47 s).  The default model never trained on it.
DEMO_SEED = 21


def base_course(course: str) -> str:
    """The designed course a course name belongs to ("exp1-run2" -> "exp1").

    Experiment 1's subjects walked its course twice; "exp1" is both runs in one
    session, "exp1-run1"/"exp1-run2" one run each (the thesis's protocol trains on
    one run of the test subject), drawn exactly as the halves of "exp1".
    """
    return course.split("-run")[0]


# ---- difficulty knobs ---------------------------------------------------------------
@dataclass
class Difficulty:
    """Every knob that sets how hard the simulated activities are to tell apart.

    Defaults are tuned by measurement against the thesis' Tables 6.12 and 6.13
    (benchmarks/thesis_tables.py: the thesis protocol, forward-backward, leave one
    subject out; exp1 with one run of the test subject in training). Physics reads
    them when a subject is drawn / a chunk is rendered, the sensors when a walker is
    drawn and for the labels' annotation slop, so change them before building a
    SimulatedSensors (or pass a modified copy as ``difficulty=``).

    Measured with these defaults, supervised HMM on normalised loads, windows 0 / 25:
    exp1 77.7 / 87.5 % (thesis 78.2 / 90.7), exp2 65.3 / 79.2 % (thesis 61.7 / 76.4);
    31 of the 38 per-activity cells within 10 points of the thesis'. The misses (exp2
    TR and WB, which our signed rear-right encoder gives away; exp2 GUR; exp1 TRS and
    ST at window 0) are explained in docs/benchmarks.md. Every knob added for realism
    (hand rests, annotation slop, creep, gait and weight variability) draws from its
    own random stream: turning it off changes no other draw.
    """

    # Between-subject spread of SubjectProfile.draw (1 = the documented spreads,
    # 0 = every subject is the average subject).
    subject_variability: float = 1.0
    # Within-activity drift of load, speed, lateral balance and lean (slow random
    # processes), relative to their documented amplitudes.
    within_variability: float = 1.0
    # How strongly a turn shifts load to the outer handle (TL/TR vs WF), relative.
    turn_signature: float = 2.5
    # How strongly a reach unloads one handle (RT vs ST), relative.
    reach_signature: float = 1.5
    # Path wander while walking forward (rad/s rms of yaw rate): WF looks a bit turny.
    wf_yaw_wander_rps: float = 0.03
    # Gentle curves inside half of the WF segments (peak rad/s; a turn is ~0.5-1).
    wf_curve_rps: float = 0.0
    # Share of WF segments with a hesitation (1-3 s slowed to 25-65 % of the speed).
    wf_hesitation_probability: float = 0.3
    # Share of turns pivoted almost on the spot instead of walked as an arc.
    turn_pivot_probability: float = 0.0
    # Turn-to-turn spread of the load shift to the outer handle (relative sd).
    turn_style_spread: float = 0.3
    # Smooth changes between activities: two cascaded moving averages of this length,
    # so a blend takes twice this (speed and seat load use their own, longer ones).
    transition_tau_s: float = 0.15
    # Load-cell noise per HX711 conversion (N rms; electrical + mechanical pick-up).
    load_noise_n: float = 0.5
    # Slow drift of each load cell's zero (temperature, creep): N rms, time constant
    # LOAD_DRIFT_TAU_S. Makes "not touching" and a light touch hard to tell apart.
    load_drift_n: float = 3.0
    # Mechanical load vibration while rolling (N rms per m/s of speed).
    load_vibration_n_per_mps: float = 3.0
    # Accelerometer white noise (g rms) and rolling vibration (g rms per m/s).
    accel_noise_g: float = 0.006
    vibration_g_per_mps: float = 0.015
    # Floor unevenness: share of the load that moves diagonally between legs
    # (invisible in TotalLoad/COP, visible in the individual load cells).
    floor_unevenness: float = 0.04
    # Hands resting on the handles while "not touching the walker" (NTW): the share of
    # NTW segments in which the subject lays their hands on the grips for part of the
    # segment, next to the neighbouring activity (before getting up, after sitting
    # down), with a light, drifting load (SubjectProfile.ntw_rest_load_fraction). The
    # thesis' annotators still call it NTW, and its supervised HMM recognizes NTW only
    # 62-73 % of the time (Tables 6.12, 6.13). 0 turns it off.
    ntw_hand_rest_probability: float = 1.0
    # Median over subjects of that resting load, as a share of body weight (each
    # subject's own is lognormal about it, SubjectProfile.ntw_rest_load_fraction).
    ntw_rest_load_median: float = 0.05
    # A resting subject keeps their hands on the grips for this share of the NTW
    # segment at least (uniform up to all of it).
    ntw_rest_share_min: float = 0.85
    # Annotation slop: the simulated labels (never the physics) are what a human
    # annotator marks watching video. Each session's annotator marks a boundary
    # label_reaction_s late on average (their own reaction time is this times a
    # lognormal factor, sigma LABEL_REACTION_SIGMA) and misplaces it by a further
    # normal offset of sd label_disagreement_s times the boundary's factor
    # (sensors.LABEL_SLOP_FACTOR: turns, transfers, reaches, hands touching or leaving
    # the walker are where annotators disagree most). 0 and 0 turn it off.
    label_reaction_s: float = 0.3
    label_disagreement_s: float = 0.5
    # Load-cell creep (HX711 + cell): under a sustained load the reading creeps by
    # this fraction of the load, first order with time constant LOAD_CREEP_TAU_S,
    # and recovers the same way when unloaded. 0 turns it off.
    load_creep_fraction: float = 0.01
    # Between-subject spread (lognormal sigma) of how irregular a subject's gait is
    # (SubjectProfile.gait_irregularity: step-to-step cadence and load swing) and of
    # how much their weight on the walker wanders within an activity
    # (SubjectProfile.load_wander). 0: every subject has the historical values.
    gait_variability: float = 0.3
    weight_variability: float = 0.3


DIFFICULTY = Difficulty()


# ---- courses ------------------------------------------------------------------------
# (code, mean duration s, kind): kind "walk" durations scale with the subject's pace.
_EXP1_RUN = (
    ("NTW", 9.0, "rest"),     # seated on a chair beside the walker
    ("TRS", 3.1, "xfer"),     # sit to stand
    ("ST", 2.5, "rest"),
    ("WF", 14.0, "walk"),
    ("TL", 4.5, "walk"),
    ("WF", 12.0, "walk"),
    ("TL", 5.0, "walk"),
    ("WF", 14.0, "walk"),
    ("TR", 5.0, "walk"),
    ("WF", 12.0, "walk"),
    ("ST", 2.0, "rest"),
    ("WB", 6.0, "walk"),      # back out of a dead end
    ("WF", 12.0, "walk"),
    ("TL", 5.0, "walk"),
    ("WF", 12.0, "walk"),
    ("TR", 5.0, "walk"),
    ("WF", 12.0, "walk"),
    ("TL", 4.5, "walk"),
    ("WF", 7.0, "walk"),
    ("WB", 6.5, "walk"),      # back up to the chair
    ("ST", 2.8, "rest"),
    ("TRS", 3.1, "xfer"),     # stand to sit
    ("NTW", 9.0, "rest"),
)

_EXP2_COURSE = (
    ("NTW", 4.5, "rest"),     # standing beside the walker
    ("ST", 5.5, "rest"),      # hands on the handles, wait for the start signal
    ("WF", 6.0, "walk"),
    ("TL", 4.2, "walk"),
    ("WF", 5.0, "walk"),
    ("GUR", 3.0, "walk"),     # curb-cut ramp up (1:12)
    ("WF", 4.0, "walk"),
    ("TR", 3.0, "walk"),
    ("WF", 4.0, "walk"),
    ("GDR", 3.2, "walk"),     # ramp down on the other side
    ("WF", 4.0, "walk"),
    ("ST", 5.0, "rest"),      # stop in front of the curb
    ("WF", 1.5, "walk"),      # shuffle up to it
    ("GUC", 3.1, "curb"),
    ("ST", 5.5, "rest"),
    ("WF", 5.0, "walk"),
    ("TR", 3.3, "walk"),
    ("WF", 4.0, "walk"),
    ("GDC", 1.8, "curb"),
    ("ST", 5.0, "rest"),
    ("WF", 5.0, "walk"),
    ("TL", 4.3, "walk"),
    ("WF", 4.0, "walk"),
    ("RT", 6.0, "task"),      # open a door
    ("WB", 1.3, "walk"),      # back up to let it swing open
    ("RT", 2.0, "task"),      # hold it
    ("WF", 4.5, "walk"),
    ("TR", 3.2, "walk"),
    ("WF", 4.5, "walk"),
    ("ST", 5.5, "rest"),
    ("SW", 36.0, "rest"),     # rest on the walker's seat
    ("ST", 6.0, "rest"),
    ("WF", 5.0, "walk"),
    ("TL", 4.2, "walk"),
    ("WF", 4.5, "walk"),
    ("RT", 4.5, "task"),      # take an object from a shelf
    ("TL", 4.2, "walk"),
    ("WF", 4.5, "walk"),
    ("TR", 3.2, "walk"),
    ("WF", 4.0, "walk"),
    ("ST", 6.0, "rest"),
    ("SW", 35.0, "rest"),     # second rest, then the end
    ("ST", 6.0, "rest"),
    ("TR", 3.0, "walk"),      # turn away from the seat
    ("WF", 3.0, "walk"),
    ("ST", 6.0, "rest"),
    ("NTW", 4.0, "rest"),     # let go of the walker
)

# Per-subject spread (lognormal sigma) of the three duration factors.
_PACE_SIGMA = 0.20
_CLASS_SIGMA = 0.20
_SEGMENT_SIGMA = 0.20
_MIN_SEGMENT_S = 0.6


def _course_table(course: str):
    if course == "exp1":
        return _EXP1_RUN
    if course == "exp2":
        return _EXP2_COURSE
    raise ValueError("unknown course %r: choose one of %s" % (course, ", ".join(COURSES)))


def _designed(table, rng: np.random.Generator, pace: float):
    class_factor = {code: float(np.exp(rng.normal(0.0, _CLASS_SIGMA)))
                    for code in ACTIVITIES}
    for code, mean_s, kind in table:
        factor = class_factor[code] * float(np.exp(rng.normal(0.0, _SEGMENT_SIGMA)))
        if kind in ("walk",):
            factor *= pace
        elif kind == "curb":
            factor *= np.sqrt(pace)
        yield code, max(_MIN_SEGMENT_S, mean_s * factor)


def _free(rng: np.random.Generator) -> Iterator[tuple[str, float]]:
    P = EXP2_TRANSITIONS
    n = len(EXP2_CLASSES)
    state = 0  # start not touching the walker
    while True:
        stay = P[state, state]
        steps = int(rng.geometric(1.0 - stay))  # >= 1 sample at 50 Hz
        yield EXP2_CLASSES[state], steps / LABEL_RATE_HZ
        row = P[state].copy()
        row[state] = 0.0
        state = int(rng.choice(n, p=row / row.sum()))


def course_segments(course: str, rng: np.random.Generator, duration_s: float | None = None,
                    pace: float | None = None) -> Iterator[tuple[str, float]]:
    """Yield (activity code, duration s) of one subject's course.

    course: "exp1" (the experiment-1 course, walked twice), "exp2" (Figure 6.2's
    course, once) or "free" (endless Markov chain of Table 6.4).
    duration_s: stop after this much time (the last segment is cut); for "free"
    without it the iterator never ends.
    pace: > 1 for a slower walker (walking segments take longer); None draws one
    from rng (lognormal, sigma 0.2). SimulatedSensors passes nominal/subject speed.
    """
    if course not in COURSES:
        raise ValueError("unknown course %r: choose one of %s" % (course, ", ".join(COURSES)))
    if duration_s is not None and not duration_s > 0:
        raise ValueError("duration_s must be positive, got %r" % (duration_s,))
    if course == "free":
        source = _free(rng)
    else:
        if pace is None:
            pace = float(np.exp(rng.normal(0.0, _PACE_SIGMA)))
        table = _course_table(base_course(course))
        if base_course(course) == "exp1":
            runs = [list(_designed(table, rng, pace)) for _ in range(2)]
            source = iter(runs[0] + runs[1] if course == "exp1"
                          else runs[int(course[-1]) - 1])
        else:
            source = _designed(table, rng, pace)
    elapsed = 0.0
    for code, d in source:
        if duration_s is not None:
            if elapsed + d >= duration_s:
                rest = duration_s - elapsed
                if rest > 1e-9:
                    yield code, rest
                return
        elapsed += d
        yield code, d


def designed_sequence(course: str) -> tuple[str, ...]:
    """The activity codes of a designed course in order (exp1: both runs)."""
    table = _course_table(base_course(course))
    codes = tuple(code for code, _, _ in table)
    return codes * 2 if course == "exp1" else codes


def mean_course_shares(course: str) -> dict[str, float]:
    """Mean seconds per activity of one pass of a designed course (exp1: one run)."""
    shares: dict[str, float] = {}
    for code, mean_s, _ in _course_table(base_course(course)):
        shares[code] = shares.get(code, 0.0) + mean_s
    return shares
