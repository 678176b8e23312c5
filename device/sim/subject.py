"""The subject of a simulated session: one person's body and habits.

``SubjectProfile.draw`` gives a person of a population ("older" or "young") with the
between-subject spreads of ``DIFFICULTY``; ``PersonSimulator`` (person.py) turns the
profile and an activity script into forces and motion.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .activities import DIFFICULTY, Difficulty
from .sensors import GRAVITY

def _clip_normal(rng, mean, sd, lo, hi, scale):
    return float(np.clip(mean + scale * sd * rng.standard_normal(), lo, hi))


@dataclass
class SubjectProfile:
    """One person's body and habits. All loads scale with body weight."""

    mass_kg: float = 70.0
    speed_mps: float = 0.6  # comfortable walking speed with the walker
    cadence_hz: float = 1.6  # steps per second (stride frequency is half of it)
    handle_load_fraction: float = 0.15  # of body weight on the handles while walking
    stand_load_fraction: float = 0.10  # ... while standing (can be a light touch)
    lean: float = 0.0  # m: grip point along the handles (+ forward: COP forward)
    lateral_bias: float = 0.0  # (left - right) / (left + right) of the handle load
    handle_height_m: float = 0.87
    gait_load_amp: float = 0.25  # handle load oscillation with each step, relative
    gait_lateral_amp: float = 0.20  # left/right alternation with each stride
    speed_surge: float = 0.12  # walker speed modulation with each step, relative
    backward_speed_mps: float = 0.25
    backward_load_factor: float = 0.35  # WB handle load / WF handle load (lean back)
    turn_speed_factor: float = 0.65  # speed in turns / walking speed
    turn_load_shift: float = 0.18  # handle load moved to the outer handle in turns
    seat_fraction: float = 0.80  # share of body weight on the seat when sitting
    seat_dx_m: float = 0.0  # where the person sits relative to the seat centre
    seat_dy_m: float = 0.0
    transfer_peak_fraction: float = 0.35  # peak handle load pushing up in a transfer
    transfer_uses_walker: bool = True  # else pushes up from the chair's armrests
    reach_hand: int = 1  # +1: the right hand reaches (the left keeps holding), -1 left
    reach_load_factor: float = 0.8  # handle load during a reach / standing load
    ramp_up_load_factor: float = 1.3  # more load leaning into an up-ramp
    ramp_down_load_factor: float = 0.7  # less load holding back down a ramp
    curb_tip_probability: float = 0.75  # tip the walker at curbs (else lift it whole)
    sway: float = 1.0  # postural sway, relative
    population: str = "older"
    # Hands resting on the grips during NTW: light load (of body weight) and the seed
    # of this subject's own NTW choices (which segments, how long), kept apart from the
    # other random streams so turning the rest off changes nothing else.
    ntw_rest_load_fraction: float = 0.02
    ntw_rest_seed: int = 0
    # Step-to-step irregularity of the gait (relative rms of the cadence's slow
    # wander; the handle-load swing of each step wanders by 5 times its excess over
    # the population's 0.03) and how much
    # the weight put on the walker wanders within an activity (relative to the
    # documented 12 % walking / 15 % standing rms). Drawn per subject with
    # Difficulty.gait_variability / weight_variability as lognormal sigmas; at 0 every
    # subject has these defaults, the historical values.
    gait_irregularity: float = 0.03
    load_wander: float = 1.0

    @property
    def weight_n(self) -> float:
        return self.mass_kg * GRAVITY

    @classmethod
    def draw(cls, rng: np.random.Generator, population: str = "older",
             variability: float | None = None,
             difficulty: Difficulty | None = None) -> "SubjectProfile":
        """A random subject. population "older" (experiment 2: walker users aged
        80-97) or "young" (experiment 1: healthy subjects using a walker).
        variability scales every spread (default DIFFICULTY.subject_variability);
        difficulty (default DIFFICULTY) gives gait_variability and
        weight_variability."""
        if population not in ("older", "young"):
            raise ValueError("population must be 'older' or 'young', got %r" % (population,))
        k = DIFFICULTY.subject_variability if variability is None else variability
        old = population == "older"
        n = lambda mean, sd, lo, hi: _clip_normal(rng, mean, sd, lo, hi, k)  # noqa: E731
        logn = lambda median, sigma, lo, hi: float(  # noqa: E731
            np.clip(median * math.exp(k * sigma * rng.standard_normal()), lo, hi))
        child = rng.spawn(1)[0]
        z, seed = float(child.standard_normal()), int(child.integers(2 ** 31))
        # Later additions draw after these from the same child: earlier fields keep
        # their values.
        z_gait, z_weight = (float(v) for v in child.standard_normal(2))
        d = DIFFICULTY if difficulty is None else difficulty
        return cls(
            mass_kg=n(70.0 if old else 72.0, 13.0, 42.0, 120.0),
            speed_mps=n(0.55 if old else 0.95, 0.17 if old else 0.12, 0.2, 1.3),
            cadence_hz=n(1.55 if old else 1.80, 0.2, 1.0, 2.4),
            handle_load_fraction=logn(0.14 if old else 0.08, 0.5, 0.02, 0.45),
            # Standing many only rest their hands on the grips: a light-touch tail.
            stand_load_fraction=logn(0.07 if old else 0.05, 0.3, 0.005, 0.4),
            lean=n(0.0, 0.028, -0.07, 0.07),
            lateral_bias=n(0.0, 0.14, -0.5, 0.5),
            handle_height_m=n(0.86, 0.05, 0.74, 1.0),
            gait_load_amp=n(0.25, 0.11, 0.03, 0.6),
            gait_lateral_amp=n(0.20, 0.11, 0.02, 0.5),
            speed_surge=n(0.06, 0.03, 0.01, 0.2),
            backward_speed_mps=n(0.03 if old else 0.35, 0.08 if not old else 0.015, 0.01, 0.6),
            backward_load_factor=n(0.35, 0.17, 0.05, 1.0),
            turn_speed_factor=n(0.65, 0.17, 0.25, 1.0),
            turn_load_shift=n(0.18, 0.11, -0.05, 0.5),
            seat_fraction=n(0.80, 0.08, 0.55, 0.97),
            seat_dx_m=n(0.0, 0.04, -0.09, 0.09),
            seat_dy_m=n(0.0, 0.03, -0.07, 0.07),
            transfer_peak_fraction=n(0.35 if old else 0.25, 0.14, 0.05, 0.7),
            transfer_uses_walker=bool(rng.random() < 0.9),
            reach_hand=1 if rng.random() < 0.8 else -1,
            reach_load_factor=n(0.8, 0.28, 0.2, 1.6),
            ramp_up_load_factor=n(1.3, 0.21, 0.8, 2.0),
            ramp_down_load_factor=n(0.7, 0.21, 0.2, 1.2),
            curb_tip_probability=float(np.clip(0.75 + 0.25 * k * rng.standard_normal(), 0, 1)),
            sway=n(1.0, 0.4, 0.2, 2.5),
            population=population,
            # From a spawned child stream: rng's own stream (and so every draw made
            # after this one, e.g. a course sharing rng) is unchanged.
            ntw_rest_load_fraction=float(np.clip(d.ntw_rest_load_median * math.exp(k * 0.6 * z),
                                                   0.004, 0.15)),
            ntw_rest_seed=seed,
            gait_irregularity=float(np.clip(
                0.03 * math.exp(d.gait_variability * z_gait), 0.005, 0.3)),
            load_wander=float(np.clip(math.exp(d.weight_variability * z_weight), 0.2, 5.0)),
        )
