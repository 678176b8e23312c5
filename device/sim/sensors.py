"""The walker's simulated hardware: geometry, nominal sensor constants, the per-walker
ground truth, and SimulatedSensors, the device a firmware hardware layer talks to.

Sensor models
-------------
* Load cells: one HX711 per leg, free-running at ~80 SPS (RATE pin high; internal
  oscillator, so each converter runs 80 Hz +-2 % with its own phase, not
  synchronised with the others or the frame clock). Each conversion is the force
  averaged over its 1/rate integration window, plus noise, in 24-bit two's
  complement counts: ``offset + gain * force + noise``, clipped to
  [-2**23, 2**23 - 1]. The offset is the zero-load reading, and includes the
  walker's own weight resting on that leg (so a tared cell reads the user's load).
* Gain: a 50 kg, 2 mV/V cell at 5 V excitation gives 10 mV at full load; the HX711
  at gain 128 spans +-20 mV over +-2**23 counts, so full load is 2**22 counts and
  2**22 / (50 kg * 9.80665) = 8554 counts/N. The project's nominal (calibration
  module) rounds 50 kg to 490 N: 8560 counts/N, used here as NOMINAL.
* Accelerometer: ADXL345-like, full resolution 256 counts/g (3.9 mg/LSB) at
  +-16 g, so values saturate at [-4096, 4095] (well inside int16). Axes: x forward,
  y left, z up; standing on level ground it reads (0, 0, +256) plus bias.
* Encoder: on the rear-right wheel, 256 ticks per revolution, 0.2 m wheel;
  cumulative signed count, quantised (floor) from the distance that wheel rolled.

Time is session time in seconds. Physics is rendered lazily in pieces of at most
PIECE_S seconds and only the current piece is kept, so an endless free-living
course runs in bounded memory; reads index into the current piece (O(1)).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .activities import COURSES, DIFFICULTY, Difficulty, base_course

GRAVITY = 9.80665

# A sync tap: a knock on the frame (for aligning video, host/annotate/sync.py). The
# accelerometer and the load cells see a sharp jolt that decays within ~0.1 s.
TAP_ACCEL_MPS2 = np.array([0.3, 0.2, 1.0]) * 4.0 * GRAVITY  # peak specific force
TAP_LOAD_N = 120.0  # peak extra load on each cell
TAP_DECAY_S = 0.02
TAP_LENGTH_S = 0.15


def tap_pulse(t_s: np.ndarray, taps_s) -> np.ndarray:
    """Shape (0..1) of the sync taps at times t_s: a step up at each tap, then decay."""
    out = np.zeros(len(t_s))
    for t0 in taps_s:
        dt = t_s - t0
        on = (dt >= 0) & (dt < TAP_LENGTH_S)
        out[on] += np.exp(-dt[on] / TAP_DECAY_S)
    return out


# ---- geometry -----------------------------------------------------------------------
@dataclass(frozen=True)
class WalkerGeometry:
    """Walker frame geometry, metres, frame axes x forward, y left, z up.

    Origin: on the floor, midway between the front and rear axles, on the midline.
    Leg half-widths are the thesis's eq 6.3 constants (front 21.25 cm, rear 26.6 cm
    from the midline). The front-rear spacing (wheelbase) is not in the thesis: 0.45 m
    is chosen, typical of a four-wheel rollator and the calibration module's value.
    """

    front_half_width_m: float = 0.2125
    rear_half_width_m: float = 0.266
    wheelbase_m: float = 0.45
    # Handle grips: 5.5 cm ahead of the rear axle, 40 cm apart, height set per subject.
    handle_x_m: float = -0.17
    handle_half_width_m: float = 0.20
    # Seat between the legs; the accelerometer is fixed under it.
    seat_x_m: float = 0.02
    seat_z_m: float = 0.55
    accel_xyz_m: tuple = (0.02, 0.0, 0.52)
    # The frame's own mass and centre of gravity.
    mass_kg: float = 7.5
    cg_x_m: float = 0.0
    cg_z_m: float = 0.42
    # The encoder wheel: rear right.
    encoder_leg: int = 3

    @property
    def front_x_m(self) -> float:
        return self.wheelbase_m / 2

    @property
    def rear_x_m(self) -> float:
        return -self.wheelbase_m / 2

    @property
    def legs_xy_m(self) -> np.ndarray:
        """(4, 2) leg positions (x, y), order FR, FL, RL, RR."""
        xf, xr = self.front_x_m, self.rear_x_m
        wf, wr = self.front_half_width_m, self.rear_half_width_m
        return np.array([[xf, -wf], [xf, wf], [xr, wr], [xr, -wr]])

    @property
    def static_leg_forces_n(self) -> np.ndarray:
        """(4,) the frame's own weight on each leg, unloaded on level ground."""
        w = self.mass_kg * GRAVITY
        front = w * (self.cg_x_m - self.rear_x_m) / self.wheelbase_m
        return np.array([front / 2, front / 2, (w - front) / 2, (w - front) / 2])


WALKER_GEOMETRY = WalkerGeometry()
LEG_NAMES = ("FR", "FL", "RL", "RR")

# ---- nominal hardware ---------------------------------------------------------------
NOMINAL_HX711_RATE_HZ = 80.0
HX711_RATE_TOLERANCE = 0.02  # internal oscillator: +-2 %
HX711_MIN_COUNTS = -(1 << 23)
HX711_MAX_COUNTS = (1 << 23) - 1
LOAD_CELL_CAPACITY_KG = 50.0
LOAD_CELL_SENSITIVITY_MV_PER_V = 2.0
HX711_EXCITATION_V = 5.0
HX711_GAIN = 128
# 2**22 counts at full load (10 mV of +-20 mV); 50 kg ~ 490 N: 8560 counts/N.
NOMINAL_LOAD_GAIN_COUNTS_PER_N = 8560.0
NOMINAL_ACCEL_COUNTS_PER_G = 256.0
ACCEL_RANGE_G = 16
ACCEL_MIN_COUNTS = -4096  # full resolution at +-16 g is 13 bits
ACCEL_MAX_COUNTS = 4095
NOMINAL_ENCODER_TICKS_PER_REV = 256
NOMINAL_WHEEL_DIAMETER_M = 0.2

# Spread of the per-walker truth drawn by WalkerHardwareTruth.draw.
_BRIDGE_ZERO_SPREAD_COUNTS = 120_000.0  # load cell zero balance, ~ +-0.3 mV at gain 128
_LOAD_GAIN_SPREAD = 0.03  # cell sensitivity tolerance
_ACCEL_BIAS_SPREAD_COUNTS = (8.0, 8.0, 15.0)  # ADXL345 0 g offset: ~ +-40/+-80 mg
_ACCEL_GAIN_SPREAD = 0.03
_WHEEL_DIAMETER_SPREAD = 0.015  # tyre wear


@dataclass
class WalkerHardwareTruth:
    """The ground truth of one walker's hardware, which calibration later estimates."""

    walker_id: str
    load_offsets_counts: np.ndarray  # (4,) zero-load reading incl. the walker's weight
    load_gains_counts_per_n: np.ndarray  # (4,)
    load_noise_counts: float  # rms per conversion
    hx711_rates_hz: np.ndarray  # (4,) ~80 Hz +-2 %
    accel_bias_counts: np.ndarray  # (3,)
    accel_counts_per_g: np.ndarray  # (3,)
    accel_noise_counts: float  # rms per sample (white)
    encoder_ticks_per_rev: int
    wheel_diameter_m: float
    # Additions:
    hx711_phases_s: np.ndarray | None = None  # (4,) time of each first conversion
    geometry: WalkerGeometry = field(default_factory=lambda: WALKER_GEOMETRY)
    # Slow drift of each cell's zero during a session (rms counts, starts at 0).
    load_drift_counts: float = 0.0

    def __post_init__(self):
        self.load_offsets_counts = np.asarray(self.load_offsets_counts, dtype=np.float64)
        self.load_gains_counts_per_n = np.asarray(self.load_gains_counts_per_n, dtype=np.float64)
        self.hx711_rates_hz = np.asarray(self.hx711_rates_hz, dtype=np.float64)
        self.accel_bias_counts = np.asarray(self.accel_bias_counts, dtype=np.float64)
        self.accel_counts_per_g = np.asarray(self.accel_counts_per_g, dtype=np.float64)
        if self.hx711_phases_s is None:  # spread evenly over one period
            self.hx711_phases_s = np.arange(4) / 4.0 / self.hx711_rates_hz
        self.hx711_phases_s = np.asarray(self.hx711_phases_s, dtype=np.float64)
        shapes = {"load_offsets_counts": 4, "load_gains_counts_per_n": 4,
                  "hx711_rates_hz": 4, "hx711_phases_s": 4, "accel_bias_counts": 3,
                  "accel_counts_per_g": 3}
        for name, n in shapes.items():
            if getattr(self, name).shape != (n,):
                raise ValueError("%s must have %d values" % (name, n))

    @property
    def metres_per_tick(self) -> float:
        return math.pi * self.wheel_diameter_m / self.encoder_ticks_per_rev

    @classmethod
    def nominal(cls, walker_id: str = "SIM-NOMINAL",
                difficulty: Difficulty | None = None) -> "WalkerHardwareTruth":
        """A walker exactly at nominal values (zero bridge imbalance, no bias)."""
        d = difficulty or DIFFICULTY
        g = WALKER_GEOMETRY
        gains = np.full(4, NOMINAL_LOAD_GAIN_COUNTS_PER_N)
        return cls(
            walker_id=walker_id,
            load_offsets_counts=g.static_leg_forces_n * gains,
            load_gains_counts_per_n=gains,
            load_noise_counts=d.load_noise_n * NOMINAL_LOAD_GAIN_COUNTS_PER_N,
            load_drift_counts=d.load_drift_n * NOMINAL_LOAD_GAIN_COUNTS_PER_N,
            hx711_rates_hz=np.full(4, NOMINAL_HX711_RATE_HZ),
            hx711_phases_s=np.array([0.0, 0.25, 0.5, 0.75]) / NOMINAL_HX711_RATE_HZ,
            accel_bias_counts=np.zeros(3),
            accel_counts_per_g=np.full(3, NOMINAL_ACCEL_COUNTS_PER_G),
            accel_noise_counts=d.accel_noise_g * NOMINAL_ACCEL_COUNTS_PER_G,
            encoder_ticks_per_rev=NOMINAL_ENCODER_TICKS_PER_REV,
            wheel_diameter_m=NOMINAL_WHEEL_DIAMETER_M,
        )

    @classmethod
    def draw(cls, rng: np.random.Generator, walker_id: str = "SIM-0",
             difficulty: Difficulty | None = None) -> "WalkerHardwareTruth":
        """One manufactured walker: offsets, gains, rates, biases within tolerance."""
        d = difficulty or DIFFICULTY
        g = WALKER_GEOMETRY
        gains = NOMINAL_LOAD_GAIN_COUNTS_PER_N * (1 + _LOAD_GAIN_SPREAD * rng.standard_normal(4))
        offsets = (g.static_leg_forces_n * gains
                   + _BRIDGE_ZERO_SPREAD_COUNTS * rng.standard_normal(4))
        rates = NOMINAL_HX711_RATE_HZ * (1 + rng.uniform(-HX711_RATE_TOLERANCE,
                                                         HX711_RATE_TOLERANCE, 4))
        return cls(
            walker_id=walker_id,
            load_offsets_counts=np.round(offsets),
            load_gains_counts_per_n=gains,
            load_noise_counts=d.load_noise_n * NOMINAL_LOAD_GAIN_COUNTS_PER_N,
            load_drift_counts=d.load_drift_n * NOMINAL_LOAD_GAIN_COUNTS_PER_N,
            hx711_rates_hz=rates,
            hx711_phases_s=rng.uniform(0, 1, 4) / rates,
            accel_bias_counts=np.round(np.array(_ACCEL_BIAS_SPREAD_COUNTS)
                                       * rng.standard_normal(3)),
            accel_counts_per_g=NOMINAL_ACCEL_COUNTS_PER_G
            * (1 + _ACCEL_GAIN_SPREAD * rng.standard_normal(3)),
            accel_noise_counts=d.accel_noise_g * NOMINAL_ACCEL_COUNTS_PER_G,
            encoder_ticks_per_rev=NOMINAL_ENCODER_TICKS_PER_REV,
            wheel_diameter_m=NOMINAL_WHEEL_DIAMETER_M
            * (1 + _WHEEL_DIAMETER_SPREAD * float(rng.standard_normal())),
        )


# ---- the simulated device -----------------------------------------------------------
PIECE_S = 4.0  # physics is rendered and kept in pieces of at most this long
ACCEL_ODR_HZ = 200.0  # accelerometer output data rate
LOAD_DRIFT_TAU_S = 300.0  # time constant of the load cells' zero drift
_DRIFT_GRID_S = 1.0  # the drift is drawn once a second and interpolated
# Labelling error (label_jitter_s) is larger at some boundaries: the thesis's labeller
# saw only a legs-and-feet camera, so hands touching or leaving the walker (NTW),
# reaching (RT) and the start/end of a transfer (TRS) are guesses.
LABEL_JITTER_FACTOR = {"NTW": 4.0, "RT": 3.0, "TRS": 2.0}
# Annotation slop (Difficulty.label_reaction_s / label_disagreement_s): how much more
# annotators disagree at the boundaries of an activity, relative (the larger of the two
# activities at a boundary counts). Where a turn starts and ends, when a transfer
# begins, when hands touch or leave the grips are judgement calls; where walking
# starts or the walker goes onto a ramp or curb is plain on video.
LABEL_SLOP_FACTOR = {"TL": 0.8, "TR": 0.8, "TRS": 0.5, "NTW": 2.0, "RT": 1.0, "WB": 0.7,
                     "ST": 0.3, "SW": 0.5, "WF": 0.3, "GUR": 0.3, "GDR": 0.3,
                     "GUC": 0.3, "GDC": 0.3}
LABEL_REACTION_SIGMA = 0.4  # annotator-to-annotator spread of the reaction time
LOAD_CREEP_TAU_S = 30.0  # time constant of load-cell creep (Difficulty.load_creep_fraction)
_SEED_TAG = 0x57414C4B  # "WALK": keeps walker seeds apart from subject seeds


def default_truth(walker_seed: int = 0,
                  difficulty: Difficulty | None = None) -> WalkerHardwareTruth:
    """The walker used when none is given: one fixed walker per walker_seed, so many
    subjects (seeds) can share the same walker, as in the thesis's experiments."""
    rng = np.random.default_rng(np.random.SeedSequence([int(walker_seed), _SEED_TAG]))
    return WalkerHardwareTruth.draw(rng, walker_id="SIM-%d" % walker_seed,
                                    difficulty=difficulty)


class _Segment:
    __slots__ = ("code", "start", "end", "label_start")

    def __init__(self, code, start, end, label_start):
        self.code, self.start, self.end, self.label_start = code, start, end, label_start


class SimulatedSensors:
    """Simulated walker hardware for one subject walking one course.

    course: "exp1", "exp2" or "free"; seed: the subject (profile, course durations,
    noise); truth: the walker's hardware (default: default_truth(walker_seed), so
    subjects share a walker); label_jitter_s: sd of human labelling error at
    activity boundaries (on top of the difficulty's annotation slop,
    Difficulty.label_reaction_s / label_disagreement_s, which is on by default and
    draws from its own stream; label_reaction_s here is this session's annotator's
    reaction time); duration_s: cut the course (required for a finite free
    course); physics_rate_hz: rate of the rendered physics (>= 100); sync_taps_s:
    session times of knocks on the frame (negative: from the end; tap_pulse).
    Call advance_to(t) with non-decreasing session time, then read the sensors.
    """

    def __init__(self, course: str = "free", seed: int = 0,
                 truth: WalkerHardwareTruth | None = None, label_jitter_s: float = 0.0,
                 duration_s: float | None = None, physics_rate_hz: float = 1000.0, *,
                 walker_seed: int = 0, difficulty: Difficulty | None = None,
                 profile=None, sync_taps_s=()):
        from .activities import course_segments
        from .person import PersonSimulator  # person imports this module
        from .subject import SubjectProfile

        if course not in COURSES:
            raise ValueError("unknown course %r: choose one of %s" % (course, ", ".join(COURSES)))
        if not label_jitter_s >= 0:
            raise ValueError("label_jitter_s must be >= 0, got %r" % (label_jitter_s,))
        if duration_s is not None and not duration_s > 0:
            raise ValueError("duration_s must be positive, got %r" % (duration_s,))
        if int(seed) < 0:
            raise ValueError("seed must be a non-negative integer, got %r" % (seed,))
        self.course = course
        self.seed = int(seed)
        self.difficulty = difficulty or DIFFICULTY
        self.truth = truth if truth is not None else default_truth(walker_seed,
                                                                   self.difficulty)
        self.label_jitter_s = float(label_jitter_s)
        self.fs = float(physics_rate_hz)
        # Six independent streams; the sixth (annotation slop) was added later and, as
        # SeedSequence children are numbered, leaves the first five unchanged.
        rng_course, rng_profile, rng_person, rng_noise, rng_label, rng_slop = (
            np.random.default_rng(s) for s in np.random.SeedSequence(self.seed).spawn(6))
        population = "young" if base_course(course) == "exp1" else "older"
        self.profile = profile or SubjectProfile.draw(
            rng_profile, population, variability=self.difficulty.subject_variability,
            difficulty=self.difficulty)
        nominal_speed = 0.95 if population == "young" else 0.55
        pace = float(np.clip(nominal_speed / self.profile.speed_mps, 0.6, 2.0))
        self.person = PersonSimulator(self.profile, rng_person, self.fs, self.difficulty,
                                      self.truth.geometry)
        self._noise = rng_noise
        self._label_rng = rng_label
        # Annotation slop: this session's annotator (reaction time, drawn first) and the
        # per-boundary offsets, all from their own stream.
        dif = self.difficulty
        self._slop_rng = rng_slop
        self.label_reaction_s = float(dif.label_reaction_s * math.exp(
            LABEL_REACTION_SIGMA * rng_slop.standard_normal()))
        self._slop_sd = float(dif.label_disagreement_s)
        self._creep = float(dif.load_creep_fraction)
        self._creep_state = np.zeros(4)  # creep force (N) per cell, carried over
        self._course = course_segments(course, rng_course, duration_s, pace)
        if course != "free":
            segs = list(self._course)
            self._end_s = float(sum(d for _, d in segs))
            self._course = iter(segs)
        else:
            self._end_s = float(duration_s) if duration_s is not None else math.inf
        # Sync taps: negative times count back from the end of the course.
        taps = np.asarray(sync_taps_s, dtype=np.float64).reshape(-1)
        self.sync_taps_s = np.sort(np.where(taps < 0, self._end_s + taps, taps))
        self._segments: list[_Segment] = []  # known segments, oldest trimmed
        self._seg_t = 0.0  # end time of the last known segment
        self._course_done = False
        self._lab = 0  # index in _segments of the label at the current time
        self._piece_iter = None
        self._render_seg = -1  # index in _segments of the segment being rendered

        t = self.truth
        self._gains = np.asarray(t.load_gains_counts_per_n, dtype=np.float64)
        self._offsets = np.asarray(t.load_offsets_counts, dtype=np.float64)
        self._rates = [float(r) for r in t.hx711_rates_hz]
        self._phases = [float(p) for p in t.hx711_phases_s]
        self._windows = [max(1, int(round(self.fs / r))) for r in self._rates]
        tail = max(self._windows) + 2
        self._tail = np.zeros((tail, 4))  # cell forces just before the current piece
        idle = [int(round(o)) for o in self._offsets]
        # Conversions: per cell, index of the first value kept and the values.
        self._conv_base = [-1] * 4
        self._conv_vals = [[v] for v in idle]
        self._next_ready_t = list(self._phases)  # when the next unread conversion is done
        # Zero drift of the load cells (counts) on a 1 s grid, from 0 at the start.
        self._drift_pts = np.zeros((4, 1))
        self._drift_k0 = 0
        self._m_per_tick = t.metres_per_tick
        self._accel_scale = np.asarray(t.accel_counts_per_g, dtype=np.float64) / GRAVITY
        self._accel_bias = np.asarray(t.accel_bias_counts, dtype=np.float64)

        # Accelerometer output data rate (ADXL345 BW_RATE 200 Hz, or the physics rate).
        self._odr = min(ACCEL_ODR_HZ, self.fs)
        bias = [int(round(b)) for b in self._accel_bias]
        self._acc = [(bias[0], bias[1], bias[2] + int(round(self._accel_scale[2] * GRAVITY)))]
        self._acc_base = -1
        # Current piece.
        self._p0 = 0
        self._p1 = 0
        self._chunk = None
        self._dist = np.zeros(1)
        self._i = 0
        self._t = 0.0
        self._ensure_segments(0.0)
        self._render_until(0)
        self.advance_to(0.0)

    # ---- course bookkeeping ----------------------------------------------------------
    def _pull_segment(self) -> bool:
        if self._course_done:
            return False
        for code, d in self._course:
            if d <= 0:
                continue
            start = self._seg_t
            self._seg_t = start + d
            # the physics rounds segment boundaries to whole samples; so do labels
            label_start = round(start * self.fs) / self.fs
            if self._segments and self.label_jitter_s > 0:
                prev = self._segments[-1]
                sd = self.label_jitter_s * max(LABEL_JITTER_FACTOR.get(prev.code, 1.0),
                                               LABEL_JITTER_FACTOR.get(code, 1.0))
                lim = min(3 * sd, 0.45 * min(prev.end - prev.start, d))
                label_start += float(np.clip(self._label_rng.normal(0.0, sd), -lim, lim))
            if self._segments and (self.label_reaction_s > 0 or self._slop_sd > 0):
                label_start += self._slop_offset(self._segments[-1], code, d)
            self._segments.append(_Segment(code, start, self._seg_t, label_start))
            return True
        self._course_done = True
        if self._end_s == math.inf or self._end_s > self._seg_t:
            self._end_s = self._seg_t
        return False

    def _slop_offset(self, prev: "_Segment", code: str, d: float) -> float:
        """Annotation slop at the boundary prev -> code (s, + = marked late): the
        annotator's reaction time plus a disagreement offset, kept inside the middle
        of both segments so labels stay in order."""
        sd = self._slop_sd * max(LABEL_SLOP_FACTOR.get(prev.code, 1.0),
                                 LABEL_SLOP_FACTOR.get(code, 1.0))
        z = float(self._slop_rng.standard_normal())  # one draw per boundary, always
        half = 0.45 * min(prev.end - prev.start, d)
        lo = max(-half, -3 * self._slop_sd)
        hi = min(half, self.label_reaction_s + 3 * self._slop_sd)
        return float(np.clip(self.label_reaction_s + sd * z, lo, hi))

    def _ensure_segments(self, t: float) -> None:
        # Known segments must reach past t plus the largest label jitter / slop.
        margin = (3 * self.label_jitter_s * max(LABEL_JITTER_FACTOR.values())
                  + 3 * self._slop_sd + 1e-9)
        while self._seg_t <= t + margin and self._pull_segment():
            pass

    # ---- rendering -------------------------------------------------------------------
    def _next_piece(self):
        while True:
            if self._piece_iter is not None:
                chunk = next(self._piece_iter, None)
                if chunk is not None and len(chunk):
                    return chunk
            nxt = self._render_seg + 1
            if nxt >= len(self._segments):
                if not self._pull_segment():
                    return None
            self._render_seg = nxt
            seg = self._segments[nxt]
            self._piece_iter = self.person.render_iter(seg.code, seg.end - seg.start, PIECE_S)

    def _render_until(self, i: int) -> None:
        """Render pieces until global sample i is inside the current piece."""
        while i >= self._p1:
            chunk = self._next_piece()
            if chunk is None:
                return
            self._ingest(chunk)
        self.truth_label()  # moves the label pointer to now
        # Trim segments no longer needed for rendering or labels.
        drop = min(self._render_seg, self._lab) - 1
        if drop > 0:
            del self._segments[:drop]
            self._render_seg -= drop
            self._lab -= drop

    def _ingest(self, ch) -> None:
        n = len(ch)
        p0 = self._p1
        p1 = p0 + n
        fs = self.fs
        rng = self._noise
        t = self.truth
        # Load cells: HX711 conversions completed inside this piece.
        forces = ch.leg_forces_n + ch.frame_forces_n
        if self._creep > 0:
            forces = forces + self._creep_forces(forces)
        accel = ch.accel_mps2
        if self.sync_taps_s.size:
            tap = tap_pulse(ch.t_s, self.sync_taps_s)
            if tap.any():
                forces = forces + TAP_LOAD_N * tap[:, None]
                accel = accel + TAP_ACCEL_MPS2 * tap[:, None]
        allf = np.concatenate([self._tail, forces])
        g0 = p0 - len(self._tail)
        cs = np.concatenate([np.zeros((1, 4)), np.cumsum(allf, axis=0)])
        t_end = p1 / fs
        drift_at = self._drift(t_end)
        for c in range(4):
            rate, phase, win = self._rates[c], self._phases[c], self._windows[c]
            k_last_old = self._conv_base[c] + len(self._conv_vals[c]) - 1
            k_new_end = int(math.floor((t_end - phase) * rate))
            # conversion k completes at phase + k / rate, which must be < t_end
            while phase + k_new_end / rate >= t_end:
                k_new_end -= 1
            carry = self._conv_vals[c][-1]
            if k_new_end <= k_last_old:
                self._conv_base[c] = k_last_old
                self._conv_vals[c] = [carry]
                continue
            ks = np.arange(k_last_old + 1, k_new_end + 1)
            b = np.floor((phase + ks / rate) * fs).astype(np.int64) + 1 - g0
            a = b - win
            mean = (cs[b, c] - cs[a, c]) / win
            counts = (self._offsets[c] + self._gains[c] * mean
                      + drift_at(c, phase + ks / rate)
                      + t.load_noise_counts * rng.standard_normal(len(ks)))
            counts = np.clip(np.rint(counts), HX711_MIN_COUNTS, HX711_MAX_COUNTS)
            self._conv_base[c] = k_last_old
            self._conv_vals[c] = [carry] + counts.astype(np.int64).tolist()
        self._tail = allf[-len(self._tail):].copy()
        # Accelerometer: one output sample per 1/ODR (free-running, latest is read).
        odr = self._odr
        m_old = self._acc_base + len(self._acc) - 1
        m_end = int(math.floor(t_end * odr - 1e-9))
        while m_end / odr >= t_end:
            m_end -= 1
        carry = self._acc[-1]
        if m_end > m_old:
            ms = np.arange(m_old + 1, m_end + 1)
            idx = np.floor(ms * (fs / odr) + 1e-9).astype(np.int64) - p0
            acc = (self._accel_bias + accel[idx] * self._accel_scale
                   + t.accel_noise_counts * rng.standard_normal((len(ms), 3)))
            acc = np.clip(np.rint(acc), ACCEL_MIN_COUNTS, ACCEL_MAX_COUNTS).astype(np.int64)
            self._acc = [carry] + list(map(tuple, acc.tolist()))
        else:
            self._acc = [carry]
        self._acc_base = m_old
        # Encoder: quantised on read from the distance rolled.
        self._dist = ch.wheel_distance_m
        self._chunk = ch
        self._p0, self._p1 = p0, p1

    def _creep_forces(self, forces: np.ndarray) -> np.ndarray:
        """Load-cell creep (N) for this piece: the first-order lag (LOAD_CREEP_TAU_S)
        of creep_fraction times the force, carried over between pieces."""
        from scipy.signal import lfilter
        a = math.exp(-1.0 / (self.fs * LOAD_CREEP_TAU_S))
        out, zf = lfilter([(1 - a) * self._creep], [1.0, -a], forces, axis=0,
                          zi=(a * self._creep_state)[None, :])
        self._creep_state = out[-1].copy()
        return out

    def _drift(self, t_end: float):
        """Extend the drift grid past t_end; return f(cell, times) -> drift counts."""
        sd = self.truth.load_drift_counts
        k_need = int(math.floor(t_end / _DRIFT_GRID_S)) + 1
        have = self._drift_k0 + self._drift_pts.shape[1] - 1
        if sd > 0 and k_need > have:
            a = math.exp(-_DRIFT_GRID_S / LOAD_DRIFT_TAU_S)
            m = k_need - have
            eps = self._noise.standard_normal((m, 4)).T * (sd * math.sqrt(1 - a * a))
            new = np.empty((4, m))
            x = self._drift_pts[:, -1]
            for j in range(m):
                x = a * x + eps[:, j]
                new[:, j] = x
            self._drift_pts = np.concatenate([self._drift_pts, new], axis=1)
            # keep the grid from one point before this piece's start
            keep = max(0, int(math.floor(self._p1 / self.fs / _DRIFT_GRID_S)) - 1
                       - self._drift_k0)
            if keep:
                self._drift_pts = self._drift_pts[:, keep:]
                self._drift_k0 += keep
        pts, k0 = self._drift_pts, self._drift_k0

        def at(c: int, times: np.ndarray) -> np.ndarray:
            if sd <= 0:
                return 0.0
            pos = times / _DRIFT_GRID_S - k0
            return np.interp(pos, np.arange(pts.shape[1]), pts[c])

        return at

    # ---- the device interface -----------------------------------------------------------
    def advance_to(self, t_s: float) -> None:
        """Move session time forward to t_s (seconds); never backwards."""
        if t_s < self._t:
            if t_s < self._t - 1e-9:
                raise ValueError("time goes forward only: %r < %r" % (t_s, self._t))
            return
        self._t = t_s
        i = int(t_s * self.fs + 1e-9)
        if i >= self._p1:
            self._ensure_segments(t_s)
            self._render_until(i)
            if i >= self._p1:  # course over: hold the last sample
                i = self._p1 - 1
        self._i = i - self._p0

    def hx711_ready(self, cell: int) -> bool:
        """A conversion of this load cell finished since it was last read."""
        return self._t >= self._next_ready_t[cell]

    def hx711_read(self, cell: int) -> int:
        """The latest conversion in counts (signed 24-bit); clears ready."""
        rate = self._rates[cell]
        phase = self._phases[cell]
        k = int(math.floor((self._t - phase) * rate))
        base = self._conv_base[cell]
        vals = self._conv_vals[cell]
        j = k - base
        if j >= len(vals):  # past the end of a finished course
            j = len(vals) - 1
            k = base + j
        elif j < 0:
            j = 0
            k = base
        self._next_ready_t[cell] = phase + (k + 1) / rate
        return vals[j]

    def accel_read(self) -> tuple[int, int, int]:
        """Accelerometer counts now (x forward, y left, z up), saturated."""
        j = int(self._t * self._odr + 1e-9) - self._acc_base
        acc = self._acc
        return acc[j] if j < len(acc) else acc[-1]

    def encoder_count(self) -> int:
        """Cumulative encoder ticks now (signed)."""
        return math.floor(float(self._dist[self._i]) / self._m_per_tick)

    def truth_label(self) -> str:
        """The activity a human labeller would mark now (boundary jitter included)."""
        segs = self._segments
        j = self._lab
        t = self._t
        while j + 1 < len(segs) and t >= segs[j + 1].label_start:
            j += 1
        self._lab = j
        return segs[j].code

    @property
    def finished(self) -> bool:
        """The course is over (never for an endless free course)."""
        return self._t >= self._end_s

    @property
    def t_s(self) -> float:
        return self._t

    @property
    def end_s(self) -> float:
        """Length of the course in seconds (inf for an endless free course; for a
        finite free course the exact end is known once reached)."""
        return self._end_s

    def physical_state(self) -> dict:
        """The physics now: for tests and debugging."""
        ch = self._chunk
        i = self._i
        return {
            "t_s": self._t,
            "leg_forces_n": ch.leg_forces_n[i].copy(),
            "cell_forces_n": (ch.leg_forces_n[i] + ch.frame_forces_n[i]),
            "total_load_n": float(ch.leg_forces_n[i].sum()),
            "accel_mps2": ch.accel_mps2[i].copy(),
            "speed_mps": float(ch.speed_mps[i]),
            "yaw_rate_rps": float(ch.yaw_rate_rps[i]),
            "pitch_rad": float(ch.pitch_rad[i]),
            "wheel_distance_m": float(ch.wheel_distance_m[i]),
            "handle_load_n": float(ch.handle_load_n[i]),
            "seat_load_n": float(ch.seat_load_n[i]),
            "label": str(ch.labels[i]),
        }

    def buffer_sizes(self) -> dict:
        """Sizes of the internal buffers (they stay bounded on an endless course)."""
        return {
            "piece_samples": self._p1 - self._p0,
            "segments": len(self._segments),
            "conversions": max(len(v) for v in self._conv_vals),
            "accel": len(self._acc),
            "tail": len(self._tail),
        }
