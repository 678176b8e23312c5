"""A person using the walker: body, gait and activity strategies -> forces and motion.

The model (all physically motivated, then made noisy by slow random processes):

* Controls per activity (targets): walker speed v, yaw rate w, vertical handle load P
  and its left/right share, the grip point along the handles (lean), seat load S,
  gait intensity, plus explicit shapes for pitch (ramps, tipping at curbs), wheel
  contact (front/rear wheels lifted) and impacts (wheels put down on a curb).
  Targets pass through two cascaded moving averages of DIFFICULTY.transition_tau_s
  (speed: SPEED_TAU_S, seat: SEAT_TAU_S), so activities blend over a fraction of a
  second and the blend is over in finite time; the filter state, the gait phase,
  the wheel distance and the random processes carry over between chunks.
* Gait: while walking the handle load oscillates at the step frequency (cadence)
  and shifts left/right at the stride frequency (half the cadence); the walker
  surges forward with each step.
* Forces: the user's vertical handle loads, the seat load and the horizontal push
  (what is needed to accelerate the walker, roll it and hold it on a slope) are
  resolved onto the four legs by statics in the (pitched) walker frame: moments about
  the rear axle split front/rear, the lateral position splits left/right. A lifted
  pair of wheels carries nothing (its share moves to the other pair). The walker's
  own weight and inertia are resolved the same way; its change from resting on level
  ground is ``frame_forces_n`` (the load cells see leg + frame forces).
* Accelerometer (in the seat): specific force in the walker frame = kinematic
  acceleration (surges, centripetal v*w in turns, tipping rotations, impacts,
  rolling vibration) + gravity projected through the walker's pitch (ramp 1:12 is
  +-4.8 deg) and the seat's sag under load.
* Encoder wheel (rear right): rolls v + w * 0.266 m/s (faster in left turns).

Physical sign conventions: see sensors.py (x forward, y left, z up). Going up a ramp
pitches the nose up, so accel x reads +g sin(4.8 deg). (Table 6.3 of the thesis shows
the opposite sign for its x axis and COP_SP on ramps, most likely a mounting/sign
convention of its walker; the sim follows its own frame consistently.)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Iterator

import numpy as np

from .activities import ACTIVITIES, DIFFICULTY, Difficulty
from .sensors import GRAVITY, WALKER_GEOMETRY, WalkerGeometry
from .subject import SubjectProfile

ROLLING_RESISTANCE = 0.03  # rolling resistance coefficient of rollator wheels on floor
SPEED_TAU_S = 0.30  # speed changes take 2 x this (two cascaded moving averages)
SEAT_TAU_S = 0.45  # sitting down / standing up from the seat
SEAT_SAG_RAD_PER_N = math.radians(1.2) / 600.0  # the seat tilts nose-down under load
VIBRATION_HZ = 18.0  # frame resonance excited by rolling
OU_GRID_HZ = 50.0  # the slow random processes are drawn at this rate and interpolated


# ---- output -------------------------------------------------------------------------
@dataclass
class PhysicalChunk:
    """Physics at the physics rate for one stretch of the session."""

    t_s: np.ndarray  # (n,) seconds from session start
    leg_forces_n: np.ndarray  # (n, 4) user-applied vertical force per leg FR, FL, RL, RR
    accel_mps2: np.ndarray  # (n, 3) specific force at the seat, walker frame
    wheel_distance_m: np.ndarray  # (n,) cumulative signed distance of the encoder wheel
    labels: np.ndarray  # (n,) activity code
    # Additions:
    frame_forces_n: np.ndarray  # (n, 4) change of the frame's own load vs resting level
    speed_mps: np.ndarray  # (n,) walker speed (rear-axle midpoint), signed
    yaw_rate_rps: np.ndarray  # (n,) + = turning left
    pitch_rad: np.ndarray  # (n,) + = nose up
    handle_load_n: np.ndarray  # (n,) total vertical handle load (negative = lifting)
    seat_load_n: np.ndarray  # (n,)
    wheels_down: np.ndarray  # (n, 2) front pair, rear pair on the floor (1) or lifted (0)

    def __len__(self) -> int:
        return len(self.t_s)

    @property
    def cell_forces_n(self) -> np.ndarray:
        """What the load cells sense above their resting (tare) value."""
        return self.leg_forces_n + self.frame_forces_n

    @property
    def contact_forces_n(self) -> np.ndarray:
        """Absolute normal force of each wheel on the floor (>= 0): the walker's own
        resting share plus the cell forces."""
        return self.cell_forces_n + WALKER_GEOMETRY.static_leg_forces_n

    @classmethod
    def concatenate(cls, chunks: list["PhysicalChunk"]) -> "PhysicalChunk":
        return cls(**{f.name: np.concatenate([getattr(c, f.name) for c in chunks])
                      for f in fields(cls)})


# ---- shapes -------------------------------------------------------------------------
def _ramp(tau, t0, t1):
    """0 before t0, 1 after t1, raised cosine between."""
    if t1 <= t0:
        return (tau >= t0).astype(np.float64)
    x = np.clip((tau - t0) / (t1 - t0), 0.0, 1.0)
    return 0.5 - 0.5 * np.cos(np.pi * x)


def _bump(tau, t0, t1, t2, t3):
    return _ramp(tau, t0, t1) * (1.0 - _ramp(tau, t2, t3))


def _pulse(tau, t0, width):
    """Half-sine pulse starting at t0."""
    x = (tau - t0) / width
    return np.where((x >= 0) & (x < 1), np.sin(np.pi * np.clip(x, 0, 1)), 0.0)


# Slow random processes: name -> (time constant s). Unit variance, carried over.
_OU = {"load": 2.5, "speed": 3.0, "lat": 2.0, "gx": 3.0, "yaw": 1.2, "sway_lat": 0.4,
       "sway_gx": 0.5, "cadence": 4.0, "seat_x": 6.0, "seat_y": 6.0, "fidget": 0.5,
       "hands": 1.5}
_OU_NAMES = tuple(_OU)
# Targets smoothed over DIFFICULTY.transition_tau_s (speed and seat load have their own).
_SMOOTH_GROUP = ("w", "P", "lat", "gx", "gait", "push", "cad")
# Band-limited vibration channels: the frame's x, y, z.
_N_VIB = 3
# How the frame's vibration (x, z) loads each leg (FR, FL, RL, RR).
_VIB_LEGS = np.array([[0.6, 0.4, -0.4, -0.6], [1.0, 0.8, 1.0, 0.8]])


class _Plan:
    """One activity segment: code, duration and the random choices made for it."""

    def __init__(self, code: str, duration_s: float, n: int, prev: str | None):
        self.code = code
        self.duration_s = duration_s
        self.n = n
        self.prev = prev
        self.params: dict = {}
        self.impulses: list = []  # (t0 s, width s, leg forces (4,) N, accel (3,) g)


class PersonSimulator:
    """Renders the physics of one subject, activity after activity, continuously."""

    def __init__(self, profile: SubjectProfile, rng: np.random.Generator,
                 physics_rate_hz: float = 1000.0, difficulty: Difficulty | None = None,
                 geometry: WalkerGeometry | None = None):
        if not physics_rate_hz >= 100:
            raise ValueError("physics_rate_hz must be >= 100, got %r" % (physics_rate_hz,))
        self.profile = profile
        self.rng = rng
        self._rest_rng = np.random.default_rng(profile.ntw_rest_seed)  # NTW hand rests
        self.fs = float(physics_rate_hz)
        self.dt = 1.0 / self.fs
        self.difficulty = difficulty or DIFFICULTY
        self.geometry = geometry or WALKER_GEOMETRY
        self._n_done = 0  # samples rendered so far
        self._t_exact = 0.0  # exact end time of the segments so far
        self._prev_code: str | None = None
        self._pending = None  # a render_iter not yet consumed
        # Carried state.
        # Slow random processes live on a coarse grid (every _ou_r samples) and are
        # interpolated; _ou_pts holds the grid points from index _ou_k0 on.
        self._ou_r = max(1, int(round(self.fs / OU_GRID_HZ)))
        self._ou_a = np.array([math.exp(-self._ou_r / self.fs / _OU[k]) for k in _OU_NAMES])
        self._ou_k0 = 0
        self._ou_pts = rng.standard_normal((len(_OU_NAMES), 1))
        self._smooth_state = {}
        for name, tau in (("v", SPEED_TAU_S), ("nudge", SPEED_TAU_S), ("S", SEAT_TAU_S),
                          ("_", self.difficulty.transition_tau_s)):
            k = max(1, int(round(tau * self.fs)))
            shape = (k - 1,) if name != "_" else (len(_SMOOTH_GROUP), k - 1)
            self._smooth_state[name] = [np.zeros(shape), np.zeros(shape)]
        self._step_phase = float(rng.random())  # gait phase, in steps
        self._distance = 0.0
        self._last = {"v": 0.0, "w": 0.0, "pitch": 0.0, "dpitch": 0.0}
        # Floor unevenness: a fixed random profile along the distance rolled.
        self._floor_k = rng.uniform(1 / 3.0, 1 / 0.4, 4) * 2 * np.pi  # rad per metre
        self._floor_phase = rng.uniform(0, 2 * np.pi, 4)
        self._vib_cache: dict = {}

    @property
    def t_s(self) -> float:
        """Session time rendered so far."""
        return self._n_done / self.fs

    # ---- public API -----------------------------------------------------------------
    def render(self, code: str, duration_s: float) -> PhysicalChunk:
        """Physics of doing `code` for duration_s, continuing from the previous chunk."""
        chunks = list(self.render_iter(code, duration_s, max_chunk_s=None))
        if len(chunks) == 1:
            return chunks[0]
        return PhysicalChunk.concatenate(chunks) if chunks else self._empty()

    def render_iter(self, code: str, duration_s: float,
                    max_chunk_s: float | None = 4.0) -> Iterator[PhysicalChunk]:
        """Like render, in pieces of at most max_chunk_s (bounded memory).

        The activity is planned when this is called; if the returned iterator is not
        consumed to the end, the next render/render_iter call renders (and drops) the
        rest first, so the session clock stays consistent."""
        if code not in ACTIVITIES:
            raise ValueError("unknown activity %r: choose one of %s"
                             % (code, ", ".join(ACTIVITIES)))
        if not duration_s >= 0 or not math.isfinite(duration_s):
            raise ValueError("duration_s must be finite and >= 0, got %r" % (duration_s,))
        if max_chunk_s is not None and not max_chunk_s > 0:
            raise ValueError("max_chunk_s must be positive or None, got %r" % (max_chunk_s,))
        self._finish_pending()
        n_end = int(round((self._t_exact + duration_s) * self.fs))
        n = max(0, n_end - self._n_done)
        self._t_exact += duration_s
        plan = self._plan(code, n / self.fs if n else duration_s, n)
        self._prev_code = code
        step = n if max_chunk_s is None else max(1, int(round(max_chunk_s * self.fs)))
        self._pending = self._pieces(plan, n, step)
        return self._pending

    def _pieces(self, plan: "_Plan", n: int, step: int) -> Iterator[PhysicalChunk]:
        j = 0
        while j < n:
            k = min(n, j + step)
            yield self._render_span(plan, j, k)
            j = k

    def _finish_pending(self) -> None:
        if self._pending is not None:
            for _ in self._pending:
                pass
            self._pending = None

    # ---- planning: the random choices of one activity -------------------------------
    def _plan(self, code: str, D: float, n: int) -> _Plan:
        rng = self.rng
        p = self.profile
        plan = _Plan(code, D, n, self._prev_code)
        q = plan.params
        dif = self.difficulty
        W = self.geometry.mass_kg * GRAVITY
        L = self.geometry.wheelbase_m
        if code in ("TL", "TR"):
            # A corner (60-110 deg) or, one time in four, a turnaround (150-200 deg);
            # walked as an arc or, by some, pivoted almost on the spot.
            if rng.random() < 0.25:
                angle = math.radians(rng.uniform(150, 200))
            else:
                angle = math.radians(rng.uniform(60, 110))
            q["w_peak"] = min(1.6, angle / max(0.8 * D, 0.3))
            q["pivot"] = rng.random() < dif.turn_pivot_probability
            q["load"] = 1.0 + 0.1 * rng.standard_normal()
            # How much this turn moves load to the outer handle varies turn to turn.
            q["shift"] = p.turn_load_shift * dif.turn_signature \
                * (1.0 + dif.turn_style_spread * rng.standard_normal())
        elif code == "WF":
            # Hallways are not straight lines: a gentle curve the labeller calls WF.
            q["curve"] = (dif.wf_curve_rps * rng.uniform(0.3, 1.0) * rng.choice([-1.0, 1.0])
                          if rng.random() < 0.5 else 0.0)
            a = rng.uniform(0, 0.5) * D
            q["curve_t"] = (a, a + rng.uniform(0.3, 0.6) * D)
            # Hesitations: older walkers slow to a shuffle now and then (obstacles,
            # doors, people), which the labeller still calls walking forward.
            q["slow"] = []
            if rng.random() < dif.wf_hesitation_probability:
                width = min(rng.uniform(1.0, 3.0), 0.7 * D)
                start = rng.uniform(0.1 * D, max(0.1 * D, 0.9 * D - width))
                q["slow"].append((start, width, rng.uniform(0.25, 0.65)))
        elif code == "TRS":
            q["up"] = self._prev_code in (None, "NTW", "SW")
            q["peak"] = p.transfer_peak_fraction * (1 + 0.15 * rng.standard_normal())
            q["t0"] = rng.uniform(0.02, 0.15)  # the trunk leans forward before hands push
            q["t_peak"] = q["t0"] + rng.uniform(0.2, 0.35)
            q["pull"] = rng.uniform(0, 0.05)  # pulls the walker back: N per N of push
        elif code == "RT":
            # The free hand leaves the handle 1-3 times (reaching, opening a door).
            k = int(rng.integers(1, 4))
            edges = np.sort(rng.uniform(0.05, 0.95, 2 * k)) * D
            q["off"] = edges.reshape(k, 2)
            q["hand"] = p.reach_hand if rng.random() < 0.85 else -p.reach_hand
            q["lean"] = rng.uniform(0.0, 0.03)
        elif code in ("GUR", "GDR"):
            up = code == "GUR"
            v = p.speed_mps * (0.85 if up else 0.8)
            theta = math.atan(1 / 12) * rng.uniform(0.85, 1.1)
            te = min(L / max(v, 0.1), 0.3 * D)
            q.update(v=v, theta=theta if up else -theta, te=te)
            for t0 in (0.0, te, D - te - 0.05, D - 0.06):
                if 0 <= t0 < D - 0.04:
                    g = rng.uniform(0.08, 0.25)
                    plan.impulses.append((t0, 0.04, np.full(4, 8.0 * g / 0.25), (0.3 * g, 0, g)))
        elif code in ("GUC", "GDC"):
            h = rng.uniform(0.08, 0.15)
            q["theta_c"] = math.asin(h / L)
            q["theta_tip"] = q["theta_c"] + rng.uniform(0.05, 0.12)
            q["tip"] = rng.random() < p.curb_tip_probability
            q["lift"] = 0.5 * W + rng.uniform(0, 15)  # N lifted at the handles
            q["press"] = p.weight_n * rng.uniform(0.05, 0.15)
            q["step"] = p.weight_n * rng.uniform(0.12, 0.3)
            self._curb_impulses(plan, code == "GUC")
        elif code == "SW":
            q["hands"] = p.weight_n * rng.uniform(0.0, 0.03)
        elif code == "NTW":
            # Hands resting on the grips for part of the segment, next to the
            # neighbouring activity: at the end before getting up (first segment), at
            # the start after sitting down. Own stream: other activities unchanged.
            r = self._rest_rng
            if dif.ntw_hand_rest_probability > 0 and r.random() < dif.ntw_hand_rest_probability:
                share = r.uniform(dif.ntw_rest_share_min, 1.0)
                if self._prev_code is None:
                    q["rest"] = ((1 - share) * D, D)
                else:
                    q["rest"] = (0.0, share * D)
                q["rest_load"] = p.weight_n * p.ntw_rest_load_fraction * r.uniform(0.6, 1.4)
        return plan

    def _curb_impulses(self, plan: _Plan, up: bool) -> None:
        rng = self.rng
        D = plan.duration_s
        q = plan.params
        front = np.array([0.5, 0.5, 0.0, 0.0])
        rear = np.array([0.0, 0.0, 0.5, 0.5])
        if q["tip"]:
            if up:
                t_front, t_rear = 0.55 * D, 0.82 * D
            else:
                t_front, t_rear = 0.35 * D, 0.85 * D
            q["t_front"], q["t_rear"] = t_front, t_rear
            plan.impulses.append((t_front, 0.08, front * rng.uniform(60, 180),
                                  (0.2, 0.0, rng.uniform(0.6, 1.5))))
            plan.impulses.append((t_rear, 0.08, rear * rng.uniform(40, 120),
                                  (0.1, 0.0, rng.uniform(0.4, 1.0))))
        else:
            t_down = 0.55 * D
            q["t_down"] = t_down
            plan.impulses.append((t_down - 0.03, 0.07, front * rng.uniform(40, 120),
                                  (0.1, 0.0, rng.uniform(0.4, 1.0))))
            plan.impulses.append((t_down, 0.07, rear * rng.uniform(40, 120),
                                  (0.1, 0.0, rng.uniform(0.4, 1.0))))

    # ---- targets of one activity over tau (s since segment start) -------------------
    def _targets(self, plan: _Plan, tau: np.ndarray, ou: dict) -> dict:
        p = self.profile
        dif = self.difficulty
        BW = p.weight_n
        D = plan.duration_s
        q = plan.params
        code = plan.code
        n = len(tau)
        zeros = np.zeros(n)
        var = dif.within_variability
        sway = p.sway * var
        t = {
            "v": zeros, "w": zeros, "P": zeros, "lat": p.lateral_bias + zeros,
            "gx": p.lean + zeros, "S": zeros, "gait": zeros, "push": zeros,
            "cad": np.ones(n), "pitch": zeros, "slope": zeros, "cf": np.ones(n),
            "cr": np.ones(n), "cg": np.ones(n), "nudge": zeros,
        }
        load_var = var * p.load_wander
        walk_load = BW * p.handle_load_fraction * (1 + 0.12 * load_var * ou["load"])
        stand_load = BW * p.stand_load_fraction * (1 + 0.15 * load_var * ou["load"])
        walk_lat = p.lateral_bias + 0.06 * var * ou["lat"]
        walk_gx = p.lean + 0.01 * var * ou["gx"]
        speed = p.speed_mps * (1 + 0.07 * var * ou["speed"])
        wander = dif.wf_yaw_wander_rps * ou["yaw"]
        stand_lat = p.lateral_bias + 0.04 * sway * ou["sway_lat"] + 0.04 * var * ou["lat"]
        stand_gx = p.lean + 0.006 * sway * ou["sway_gx"]

        if code == "NTW":
            if "rest" in q:  # hands resting on the grips: light, drifting load
                a, b = q["rest"]
                c = min(0.3, (b - a) / 3)  # hands land / lift over c seconds
                rest = _ramp(tau, a, a + c) if a > 0 else 1.0 - _ramp(tau, b - c, b)
                # Resting hands nudge the walker as a standing user's do (ST).
                # (a nudge of its own: no rolling vibration, no other draw changes)
                t.update(P=q["rest_load"] * (1 + 0.3 * var * ou["load"]) * rest,
                         lat=stand_lat, gx=stand_gx, nudge=0.01 * ou["fidget"] * rest)
        elif code == "ST":
            t.update(P=np.maximum(stand_load, 0.0), lat=stand_lat, gx=stand_gx,
                     v=0.01 * ou["fidget"])
        elif code == "WF":
            a, b = q["curve_t"]
            curve = q["curve"] * _bump(tau, a, a + 0.5, b - 0.5, b) if b - a > 1.0 else 0.0
            slow = np.ones(n)
            for start, width, depth in q["slow"]:
                c = min(0.4, width / 3)
                slow -= (1 - depth) * _bump(tau, start, start + c, start + width - c,
                                            start + width)
            t.update(v=speed * slow, w=wander + curve, P=walk_load * (2 - slow) ** 0.5,
                     lat=walk_lat, gx=walk_gx, gait=0.4 + 0.6 * slow, cad=0.7 + 0.3 * slow)
        elif code in ("TL", "TR"):
            sgn = 1.0 if code == "TL" else -1.0
            shape = _bump(tau, 0, 0.2 * D, 0.8 * D, D)
            w = sgn * q["w_peak"] * shape + 0.5 * wander
            if q["pivot"]:
                v = speed * 0.15 + zeros
            else:
                v = speed * p.turn_speed_factor * np.clip(1.25 - 0.4 * q["w_peak"], 0.3, 1.0)
            shift = sgn * q["shift"] * shape
            t.update(v=v + zeros, w=w, P=walk_load * q["load"], lat=walk_lat - shift,
                     gx=walk_gx, gait=np.ones(n), cad=0.9 + zeros)
        elif code == "WB":
            t.update(v=-p.backward_speed_mps * (1 + 0.1 * var * ou["speed"]),
                     P=walk_load * p.backward_load_factor, lat=walk_lat,
                     gx=walk_gx - 0.02, gait=np.ones(n), cad=0.75 + zeros,
                     w=0.3 * wander)
        elif code == "TRS":
            peak = BW * q["peak"] if p.transfer_uses_walker else 0.0
            if q["up"]:
                push = _bump(tau, q["t0"] * D, q["t_peak"] * D, q["t_peak"] * D, 0.9 * D)
                P = peak * push + stand_load * _ramp(tau, 0.5 * D, D)
            else:
                push = _bump(tau, 0.1 * D, 0.45 * D, 0.45 * D, 0.75 * D)
                P = 0.8 * peak * push + stand_load * (1 - _ramp(tau, 0.7 * D, 0.95 * D))
            t.update(P=P, lat=stand_lat, gx=stand_gx + 0.03 * push,
                     push=-q["pull"] * peak * push, v=-0.03 * push + 0.01 * ou["fidget"])
        elif code == "SW":
            S = BW * p.seat_fraction * _ramp(tau, 0.0, min(1.2, 0.5 * D)) \
                * (1 + 0.03 * var * ou["load"])
            hands = q["hands"] * np.clip(1 + ou["hands"], 0, None)
            t.update(S=S, P=hands, lat=p.lateral_bias + 0.05 * ou["lat"])
        elif code == "RT":
            k = min(1.0, dif.reach_signature)
            off = zeros.copy()
            for a, b in q["off"]:
                off = np.maximum(off, _bump(tau, a, a + 0.3, b - 0.3, b) if b - a > 0.6
                                 else _bump(tau, a, (a + b) / 2, (a + b) / 2, b))
            off *= k
            hand_lat = float(q["hand"])  # the holding side carries everything
            lat = stand_lat * (1 - off) + hand_lat * 0.95 * off
            P = stand_load * p.reach_load_factor * (1 - 0.3 * off * dif.reach_signature) \
                + stand_load * (1 - p.reach_load_factor) * (1 - off)
            t.update(P=np.maximum(P, 0.0), lat=lat, gx=stand_gx + q["lean"] * off,
                     v=0.025 * ou["fidget"] * (0.5 + off))
        elif code in ("GUR", "GDR"):
            up = code == "GUR"
            te = q["te"]
            pitch = q["theta"] * _bump(tau, 0, te, D - te, D)
            factor = p.ramp_up_load_factor if up else p.ramp_down_load_factor
            t.update(v=q["v"] * (1 + 0.07 * var * ou["speed"]), P=walk_load * factor,
                     lat=walk_lat, gx=walk_gx + (0.015 if up else -0.015),
                     gait=np.ones(n), pitch=pitch, slope=pitch, cad=0.95 + zeros,
                     w=0.3 * wander)
        elif code == "GUC":
            self._curb_up(t, tau, plan, stand_load, stand_lat, stand_gx)
        elif code == "GDC":
            self._curb_down(t, tau, plan, stand_load, stand_lat, stand_gx)
        return t

    def _curb_up(self, t, tau, plan, stand_load, stand_lat, stand_gx):
        D = plan.duration_s
        q = plan.params
        t["lat"], t["gx"] = stand_lat, stand_gx
        if q["tip"]:
            # Tip the walker back (front wheels up), roll it to the curb, put the front
            # wheels down on the curb, lift the rear wheels up, then step up.
            t0, t1 = 0.05 * D, 0.25 * D
            tf, tr = q["t_front"], q["t_rear"]
            tr0 = 0.62 * D
            tc, tt = q["theta_c"], q["theta_tip"]
            t["pitch"] = (tt * _ramp(tau, t0, t1) - (tt - tc) * _ramp(tau, 0.45 * D, tf)
                          - tc * _ramp(tau, tr0, tr))
            t["cf"] = 1 - _ramp(tau, t0, t0 + 0.06) + _ramp(tau, tf - 0.03, tf)
            t["cr"] = 1 - _ramp(tau, tr0, tr0 + 0.06) + _ramp(tau, tr - 0.03, tr)
            t["v"] = 0.2 * _bump(tau, 0.27 * D, 0.32 * D, 0.4 * D, 0.45 * D) \
                + 0.08 * _bump(tau, tr0, tr0 + 0.05 * D, tr - 0.05 * D, tr)
            # pressing holds the walker tipped; easing off lowers the front wheels
            press = q["press"] * _bump(tau, t0 - 0.05, t0, 0.45 * D, tf - 0.25)
            lift = q["lift"] * _bump(tau, tr0 - 0.1, tr0, tr - 0.08, tr)
            step = q["step"] * _bump(tau, tr, 0.9 * D, 0.9 * D, D)
            hold = stand_load * (1 - _bump(tau, t0 - 0.1, t0, tr, tr + 0.1))
            t["P"] = hold + press - lift + step
            t["gx"] = stand_gx + 0.02 * _bump(tau, tr, 0.9 * D, 0.9 * D, D)
        else:
            self._curb_lift(t, tau, plan, stand_load, up=True)

    def _curb_down(self, t, tau, plan, stand_load, stand_lat, stand_gx):
        D = plan.duration_s
        q = plan.params
        t["lat"], t["gx"] = stand_lat, stand_gx
        if q["tip"]:
            # Roll to the edge, lower the front wheels down (nose down), step down,
            # roll the rear wheels off the edge.
            f0, tf = 0.15 * D, q["t_front"]
            r0, tr = 0.72 * D, q["t_rear"]
            tc = q["theta_c"]
            t["pitch"] = -tc * _ramp(tau, f0, tf) + tc * _ramp(tau, r0, tr)
            t["cf"] = 1 - _ramp(tau, f0, f0 + 0.05) + _ramp(tau, tf - 0.03, tf)
            t["cr"] = 1 - _ramp(tau, r0, r0 + 0.05) + _ramp(tau, tr - 0.03, tr)
            t["v"] = 0.15 * _bump(tau, 0, 0.05 * D, 0.1 * D, f0) \
                + 0.2 * _bump(tau, 0.65 * D, r0, r0, tr)
            lower = -q["lift"] * 0.6 * _bump(tau, f0 - 0.05, f0, tf - 0.05, tf)
            step = 0.5 * q["step"] * _bump(tau, tf, 0.5 * D, 0.55 * D, 0.65 * D)
            light = 0.4 * stand_load * _bump(tau, tf, tf + 0.1, tr, tr + 0.1)
            hold = stand_load * (1 - _bump(tau, f0 - 0.1, f0, tr, tr + 0.1))
            t["P"] = hold + lower + step + light
            t["gx"] = stand_gx - 0.02 * _bump(tau, f0, tf, tr, tr + 0.1)
        else:
            self._curb_lift(t, tau, plan, stand_load, up=False)

    def _curb_lift(self, t, tau, plan, stand_load, up: bool):
        """Lift the whole walker onto / off the curb, put it down, step."""
        D = plan.duration_s
        q = plan.params
        td = q["t_down"]
        l0 = 0.15 * D
        air = _bump(tau, l0, l0 + 0.08, td - 0.08, td)
        t["cg"] = 1 - air
        t["pitch"] = (1 if up else -1) * math.radians(3) * air
        W = self.geometry.mass_kg * GRAVITY
        t["P"] = (stand_load * (1 - _bump(tau, l0 - 0.1, l0, td, td + 0.1))
                  - W * _bump(tau, l0 - 0.1, l0, td - 0.1, td)
                  + (q["step"] if up else 0.5 * q["step"]) * _bump(tau, td, 0.85 * D, 0.85 * D, D))

    # ---- rendering ------------------------------------------------------------------
    def _ou(self, n: int) -> dict:
        """The slow random processes (unit variance) for the next n samples."""
        r = self._ou_r
        i0 = self._n_done
        k_need = (i0 + n - 1) // r + 1  # last grid point needed
        have = self._ou_k0 + self._ou_pts.shape[1] - 1
        if k_need > have:
            m = k_need - have
            a = self._ou_a[:, None]
            eps = self.rng.standard_normal((m, len(_OU_NAMES))).T * np.sqrt(1 - a * a)
            new = np.empty((len(_OU_NAMES), m))
            x = self._ou_pts[:, -1]
            for b0 in range(0, m, 256):  # x_j = a x_{j-1} + eps_j, in closed form
                e = eps[:, b0:b0 + 256]
                j = np.arange(1, e.shape[1] + 1)
                apow = a ** j[None, :]
                block = apow * (x[:, None] + np.cumsum(e / apow, axis=1))
                new[:, b0:b0 + e.shape[1]] = block
                x = block[:, -1]
            self._ou_pts = np.concatenate([self._ou_pts, new], axis=1)
        pos = (np.arange(i0, i0 + n) / r) - self._ou_k0
        k = pos.astype(np.int64)
        frac = pos - k
        pts = self._ou_pts
        vals = pts[:, k] * (1 - frac) + pts[:, np.minimum(k + 1, pts.shape[1] - 1)] * frac
        keep = (i0 + n) // r - self._ou_k0
        if keep > 0:
            self._ou_pts = self._ou_pts[:, keep:]
            self._ou_k0 += keep
        return dict(zip(_OU_NAMES, vals))

    def _smooth(self, name: str, x: np.ndarray) -> np.ndarray:
        """Two cascaded moving averages of tau each (a triangular kernel of 2 tau):
        changes complete in finite time, so e.g. NTW reaches exactly zero load.
        x: (n,) or (channels, n), filtered along the last axis."""
        out = np.asarray(x, dtype=np.float64)
        hist = self._smooth_state[name]
        for stage in range(2):
            h = hist[stage]
            k = h.shape[-1] + 1
            if k == 1:
                continue
            xx = np.concatenate([h, out], axis=-1)
            cs = np.cumsum(xx, axis=-1)
            hist[stage] = xx[..., -(k - 1):].copy()
            out = np.concatenate([cs[..., k - 1:k], cs[..., k:] - cs[..., :-k]], axis=-1) / k
        return out

    def _empty(self) -> PhysicalChunk:
        z = np.zeros(0)
        return PhysicalChunk(t_s=z, leg_forces_n=np.zeros((0, 4)), accel_mps2=np.zeros((0, 3)),
                             wheel_distance_m=z, labels=np.zeros(0, dtype="<U3"),
                             frame_forces_n=np.zeros((0, 4)), speed_mps=z, yaw_rate_rps=z,
                             pitch_rad=z, handle_load_n=z, seat_load_n=z,
                             wheels_down=np.zeros((0, 2)))

    def _render_span(self, plan: _Plan, j0: int, j1: int) -> PhysicalChunk:
        n = j1 - j0
        fs, dt = self.fs, self.dt
        p = self.profile
        dif = self.difficulty
        g = self.geometry
        tau = (np.arange(j0, j1) + 0.5) * dt  # seconds since segment start
        ou = self._ou(n)
        tg = self._targets(plan, tau, ou)

        # Smoothed controls.
        v_s = self._smooth("v", np.broadcast_to(tg["v"], (n,)))
        S = self._smooth("S", np.broadcast_to(tg["S"], (n,)))
        w, P_s, lat_s, gx, gait, push_x, cad = self._smooth(
            "_", np.stack([np.broadcast_to(tg[k], (n,)) for k in _SMOOTH_GROUP]))
        pitch = np.broadcast_to(tg["pitch"], (n,)).astype(np.float64)
        cf, cr, cg = tg["cf"], tg["cr"], tg["cg"]

        # Gait: step phase, load oscillation, left/right alternation, speed surges.
        irregular = p.gait_irregularity * ou["cadence"]
        rate = p.cadence_hz * cad * (1 + irregular)
        phase = self._step_phase + np.cumsum(rate) * dt
        self._step_phase = float(phase[-1] % 2.0)
        ang = 2 * np.pi * phase
        # An irregular gait also swings the load irregularly: the excess over the
        # population's 3 % cadence wander, times 5, is the swing's relative wander.
        swing = p.gait_load_amp * (1 + 5.0 * (p.gait_irregularity - 0.03) * ou["cadence"])
        P = P_s * (1 + gait * swing * np.cos(ang))
        lat = np.clip(lat_s + gait * p.gait_lateral_amp * np.sin(0.5 * ang), -1.0, 1.0)
        v = v_s * (1 + gait * p.speed_surge * np.sin(ang))
        # Resting hands in NTW nudge the walker (own smoothing; the rolling vibration
        # below, which draws random numbers, is decided on the rest of the speed).
        nudge = self._smooth("nudge", np.broadcast_to(tg["nudge"], (n,)))
        still = self._still(v)
        v = v + nudge

        # Derivatives continuing from the previous chunk.
        last = self._last
        dv = np.diff(v, prepend=last["v"]) * fs
        dw = np.diff(w, prepend=last["w"]) * fs
        dpitch = np.diff(pitch, prepend=last["pitch"]) * fs
        alpha = np.diff(dpitch, prepend=last["dpitch"]) * fs
        last.update(v=float(v[-1]), w=float(w[-1]), pitch=float(pitch[-1]),
                    dpitch=float(dpitch[-1]))

        # Horizontal push the user exerts (world frame): accelerate the walker, hold it
        # on a slope (gravity on the walker and on the user's own vertical load), roll.
        W = g.mass_kg * GRAVITY
        m = g.mass_kg
        vertical = np.maximum(P + S, 0.0) + W
        slope = tg["slope"]
        H = m * dv + vertical * np.sin(slope) \
            + ROLLING_RESISTANCE * vertical * np.tanh(v / 0.05) + push_x
        # Only a hand on the walker can push it (not touching: it rolls out by itself).
        touch = np.clip((np.abs(P_s) + S) / 10.0, 0.0, 1.0)
        H = H * touch * (cg > 0.5)

        # ---- statics: resolve loads onto the legs ----------------------------------
        s, c = np.sin(pitch), np.cos(pitch)
        xr, L = g.rear_x_m, g.wheelbase_m
        wf, wr = g.front_half_width_m, g.rear_half_width_m
        zh = p.handle_height_m
        xh = g.handle_x_m + gx
        yh = g.handle_half_width_m
        legs = np.zeros((n, 4))

        def add(Nz, Fx, x, z, y):
            # Normal load Nz and body-x force Fx applied at (x, y, z) of the frame.
            front = (Nz * (x - xr) + Fx * z) / L
            rear = Nz - front
            fl = np.clip(0.5 + y / (2 * wf), 0, 1)
            rl = np.clip(0.5 + y / (2 * wr), 0, 1)
            legs[:, 0] += front * (1 - fl)
            legs[:, 1] += front * fl
            legs[:, 2] += rear * rl
            legs[:, 3] += rear * (1 - rl)

        for side in (1.0, -1.0):
            Ph = P * (1 + side * lat) / 2
            Hh = H / 2
            add(Ph * c + Hh * s, Hh * c - Ph * s, xh, zh, side * yh)
        seat_x = g.seat_x_m + p.seat_dx_m + 0.01 * ou["seat_x"]
        seat_y = p.seat_dy_m + 0.008 * ou["seat_y"]
        add(S * c, -S * s, seat_x, g.seat_z_m, seat_y)
        user = self._contact(legs, cf, cr)

        legs = np.zeros((n, 4))
        add(W * c, -W * s - m * dv, g.cg_x_m, g.cg_z_m, 0.0)
        frame = self._contact(legs, cf, cr)

        # Encoder wheel (rear right) distance, floor unevenness (diagonal twist).
        y_enc = g.legs_xy_m[g.encoder_leg, 1]
        wheel_v = (v - w * y_enc) * np.minimum(cr, cg)
        dist = self._distance + np.cumsum(wheel_v) * dt
        self._distance = float(dist[-1])
        floor = np.sin(dist[:, None] * self._floor_k[None, :] + self._floor_phase).sum(1) / 2
        # (the diagonal mode needs all four wheels down)
        twist = dif.floor_unevenness * np.abs(user).sum(axis=1) * floor * np.minimum(cf, cr)
        frame += twist[:, None] * np.array([1.0, -1.0, wf / wr, -wf / wr])[None, :]
        # Rolling vibration (band-limited): accel and load cells.
        vib = np.zeros((n, _N_VIB)) if still else self._vibration(n)
        speed_abs = np.abs(v) * cg
        down = np.column_stack([cf, cf, cr, cr])
        frame += (dif.load_vibration_n_per_mps * speed_abs)[:, None] \
            * (vib[:, [0, 2]] @ _VIB_LEGS) * down

        user, frame, wheels_down = self._lift_off(user, frame, cg, cf, cr)
        frame -= g.static_leg_forces_n
        # Impacts (wheels put down on a curb / ramp edges): user part, plus accel.
        acc_imp = np.zeros((n, 3))
        for t0, width, force, acc in plan.impulses:
            if t0 + width < tau[0] or t0 > tau[-1]:
                continue
            pulse = _pulse(tau, t0, width)
            user += pulse[:, None] * force[None, :] * wheels_down[:, [0, 0, 1, 1]]
            apulse = _pulse(tau, t0, width * 0.4)
            acc_imp += apulse[:, None] * (np.asarray(acc) * GRAVITY)[None, :]


        # ---- accelerometer: specific force in the frame at the seat ----------------
        ax_, _, az_ = g.accel_xyz_m
        dxa = ax_ - xr
        th = pitch - SEAT_SAG_RAD_PER_N * S
        roll = -SEAT_SAG_RAD_PER_N * S * (seat_y / 0.1)
        acc = np.empty((n, 3))
        vib_g = dif.vibration_g_per_mps * GRAVITY * speed_abs
        acc[:, 0] = dv - w * w * dxa + GRAVITY * np.sin(th) - alpha * az_ + vib_g * vib[:, 0]
        acc[:, 1] = v * w + dw * dxa + GRAVITY * np.sin(roll) * np.cos(th) \
            + vib_g * vib[:, 1]
        acc[:, 2] = GRAVITY * np.cos(th) * np.cos(roll) + alpha * dxa \
            + 1.5 * vib_g * vib[:, 2]
        acc += acc_imp

        t_s = (self._n_done + np.arange(n)) * dt
        self._n_done += n
        return PhysicalChunk(
            t_s=t_s, leg_forces_n=user, accel_mps2=acc, wheel_distance_m=dist,
            labels=np.full(n, plan.code, dtype="<U3"), frame_forces_n=frame,
            speed_mps=v * cg, yaw_rate_rps=w, pitch_rad=pitch, handle_load_n=P,
            seat_load_n=S, wheels_down=wheels_down)

    @staticmethod
    def _lift_off(user: np.ndarray, frame: np.ndarray, cg: np.ndarray, cf: np.ndarray,
                  cr: np.ndarray):
        """Wheels press on the floor, never pull: a pair whose total would be negative
        lifts off (its load goes to the other pair), both pairs negative or cg = 0
        means the walker is held in the air; a single wheel that would pull passes
        its load to its partner on the same axle. Returns (user, frame) in absolute
        terms: frame = the walker's own weight share, user = the rest; and the
        wheels' contact (n, 2): front pair, rear pair, 1 = on the floor."""
        user = user * cg[:, None]
        frame = frame * cg[:, None]
        total = user + frame
        front = total[:, 0] + total[:, 1]
        rear = total[:, 2] + total[:, 3]
        air = (front <= 0) & (rear <= 0)
        lf = (front < 0) & ~air
        lr = (rear < 0) & ~air
        if air.any() or lf.any() or lr.any():
            for arr in (user, frame):
                arr[air] = 0.0
                arr[lf, 2:] += arr[lf, 1::-1]
                arr[lf, :2] = 0.0
                arr[lr, :2] += arr[lr, :1:-1]
                arr[lr, 2:] = 0.0
            total = user + frame
        neg = np.minimum(total, 0.0)
        if neg.any():
            user = user - neg + neg[:, [1, 0, 3, 2]]
        down = np.column_stack([cf * cg, cr * cg])
        down[air | lf, 0] = 0.0
        down[air | lr, 1] = 0.0
        return user, frame, down

    @staticmethod
    def _contact(legs: np.ndarray, cf: np.ndarray, cr: np.ndarray) -> np.ndarray:
        """A lifted pair of wheels (contact < 1) passes its load to the other pair."""
        if cf.min() >= 1.0 and cr.min() >= 1.0:
            return legs
        cf = np.asarray(cf)[:, None]
        cr = np.asarray(cr)[:, None]
        front, rear = legs[:, :2], legs[:, 2:]
        moved_f = (1 - cf) * front
        front = cf * front
        rear = rear + moved_f[:, ::-1]  # FR->RR, FL->RL
        moved_r = (1 - cr) * rear
        rear = cr * rear
        front = front + moved_r[:, ::-1]  # RL->FL, RR->FR
        return np.concatenate([front, rear], axis=1)

    def _vibration(self, n: int) -> np.ndarray:
        """(n, _N_VIB) unit-variance noise band-limited around VIBRATION_HZ (frame
        resonance excited by rolling), shaped in the frequency domain."""
        gain = self._vib_cache.get(n)
        if gain is None:
            f = np.fft.rfftfreq(n, self.dt)
            f0 = min(VIBRATION_HZ, 0.3 * self.fs)
            q = 3.0
            gain = 1.0 / np.sqrt(1.0 + q * q * (f / f0 - f0 / np.maximum(f, 1e-9)) ** 2)
            gain[0] = 0.0
            norm = math.sqrt(max(float(np.sum(gain ** 2) - 0.5 * gain[-1] ** 2), 1e-12) * 2 / n)
            gain = gain / max(norm, 1e-12)
            if len(self._vib_cache) > 8:
                self._vib_cache.clear()
            self._vib_cache[n] = gain
        white = self.rng.standard_normal((_N_VIB, n))
        return np.fft.irfft(np.fft.rfft(white, axis=1) * gain, n, axis=1).T

    def _still(self, v: np.ndarray) -> bool:
        return float(np.max(np.abs(v))) < 1e-6
