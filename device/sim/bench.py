"""The virtual walker on a calibration bench: its physics answers a technician's actions.

A technician calibrating a walker does physical things: leaves it unloaded, puts a
known mass over a leg, turns it so an accelerometer axis points up or down, rolls it
over a measured distance. `CalibrationBench` is that technician's side (thread safe:
a test or a virtual technician calls it while the pty server samples); `BenchSensors`
is the walker's side, the same device interface as `SimulatedSensors`, so the real
firmware (bit-level drivers included) reads the walker's hidden per-walker constants
(`WalkerHardwareTruth`: load offsets and gains, accelerometer bias and scale, wheel
diameter) through the bench's physics:

* load cell c: ``offset_c + gain_c * F_c(t) + noise`` per HX711 conversion (~80 Hz,
  each cell its own rate), where F_c is the force of the masses resting on that leg
  (a mass over a leg: all of it; a mass at a point (x, y) of the frame: shared between
  the legs bilinearly in the leg positions). Offsets include the frame's own weight, as
  on the walker.
* accelerometer: ``bias + counts_per_g * (up vector in the sensor frame) + noise``,
  saturated like the ADXL345.
* encoder: the wheel's distance over ``metres_per_tick`` (floor), a roll advancing it
  smoothly over the roll's duration.

Every change sets off a damped wobble (the mass settling, the frame rocking after
being turned) that decays in about a second, so a procedure has to wait for a steady
reading, as on a real bench.
"""
from __future__ import annotations

import math
import threading
import time

import numpy as np

from .sensors import (ACCEL_MAX_COUNTS, ACCEL_MIN_COUNTS, GRAVITY, HX711_MAX_COUNTS,
                      HX711_MIN_COUNTS, WalkerHardwareTruth, default_truth)

WOBBLE_TAU_S = 0.25  # decay time of the wobble after a change
WOBBLE_HZ = 3.0
WOBBLE_LOAD_FRACTION = 0.15  # peak wobble, as a fraction of the force change
WOBBLE_ACCEL_G = 0.3  # peak wobble of the accelerometer after turning the walker
ROLL_BOUNCE_G = 0.05  # vibration while rolling


class CalibrationBench:
    """What the technician has done to the walker; every method is safe to call from
    any thread. Changes take effect at the walker's next sample."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list = []
        self.t_s = 0.0  # the walker's time, as last seen by its sensors
        self.busy_until_s = 0.0  # the end of a roll in progress
        self._changed = threading.Condition(self._lock)

    def wait_done(self, after_s: float = 0.3, timeout_s: float = 30.0) -> None:
        """Block until every change has reached the walker, a roll in progress has
        ended, and `after_s` more walker seconds have passed (a person confirms a step
        a moment after doing it)."""
        end = None
        stop = time.monotonic() + timeout_s
        with self._changed:
            while True:
                if not self._pending:
                    if end is None:
                        end = max(self.t_s, self.busy_until_s) + after_s
                    elif self.t_s >= end:
                        return
                if time.monotonic() > stop:
                    return
                self._changed.wait(0.05)

    def _seen(self, t_s: float, busy_until_s: float | None = None) -> None:
        with self._changed:
            self.t_s = t_s
            if busy_until_s is not None:
                self.busy_until_s = busy_until_s
            self._changed.notify_all()

    def _push(self, *change) -> None:
        with self._lock:
            self._pending.append(change)

    def take_changes(self) -> list:
        with self._lock:
            out, self._pending = self._pending, []
        return out

    def has_changes(self) -> bool:
        return bool(self._pending)

    # ---- load cells ------------------------------------------------------------------
    def clear_masses(self) -> None:
        """Take every mass off the walker."""
        self._push("masses", np.zeros(4))

    def place_mass(self, kg: float, cell: int | None = None, xy_m=None,
                   geometry=None, keep: bool = False) -> None:
        """Put `kg` over leg `cell` (0..3: FR, FL, RL, RR), or at frame point `xy_m`
        (shared between the legs by `geometry`). keep: add to what is already there."""
        f = np.zeros(4)
        if cell is not None:
            f[int(cell)] = kg * GRAVITY
        else:
            f = kg * GRAVITY * leg_shares(xy_m, geometry)
        self._push("add_masses" if keep else "masses", f)

    # ---- accelerometer ---------------------------------------------------------------
    def orient(self, axis: int, sign: int) -> None:
        """Turn the walker so sensor axis `axis` (0 x, 1 y, 2 z) points up (sign +1) or
        down (-1)."""
        up = np.zeros(3)
        up[int(axis)] = 1.0 if sign > 0 else -1.0
        self._push("up", up)

    def set_up_vector(self, up) -> None:
        """Any orientation: the unit 'up' vector in the sensor frame."""
        up = np.asarray(up, dtype=np.float64)
        self._push("up", up / np.linalg.norm(up))

    def level(self) -> None:
        """Stand the walker on its wheels again (z up)."""
        self.orient(2, +1)

    # ---- encoder ---------------------------------------------------------------------
    def roll(self, distance_m: float, duration_s: float = 2.0, wheel_factor: float = 1.0
             ) -> None:
        """Roll the walker `distance_m` (negative: backwards) over `duration_s`.
        wheel_factor: how far the encoder wheel rolls per metre of the walker (1 on a
        straight line; more or less on a curve, or with a slipping wheel)."""
        self._push("roll", float(distance_m) * float(wheel_factor), float(duration_s))


def leg_shares(xy_m, geometry) -> np.ndarray:
    """(4,) share of a point load at (x, y) carried by each leg (FR, FL, RL, RR):
    bilinear between the front and rear axles and, on each axle, between its legs."""
    x, y = float(xy_m[0]), float(xy_m[1])
    xf, xr = geometry.front_x_m, geometry.rear_x_m
    a = (x - xr) / (xf - xr)  # front share
    wf, wr = geometry.front_half_width_m, geometry.rear_half_width_m
    lf = (y + wf) / (2 * wf)  # left share on the front axle
    lr = (y + wr) / (2 * wr)
    return np.array([a * (1 - lf), a * lf, (1 - a) * lr, (1 - a) * (1 - lr)])


class BenchSensors:
    """The device interface of SimulatedSensors (advance_to, hx711_ready/read,
    accel_read, encoder_count, truth_label) for a walker on a CalibrationBench."""

    finished = False
    end_s = math.inf

    def __init__(self, truth: WalkerHardwareTruth | None = None,
                 bench: CalibrationBench | None = None, seed: int = 0) -> None:
        self.truth = truth if truth is not None else default_truth(0)
        self.bench = bench if bench is not None else CalibrationBench()
        self._rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0xBE4C]))
        t = self.truth
        self._rates = [float(r) for r in t.hx711_rates_hz]
        self._phases = [float(p) for p in t.hx711_phases_s]
        self._next_ready = list(self._phases)
        self._t = 0.0
        self._masses = np.zeros(4)  # N on each cell, settled
        self._load_wobble = np.zeros(4)  # N, amplitude at _changed_t
        self._up = np.array([0.0, 0.0, 1.0])
        self._accel_wobble = 0.0
        self._changed_t = -1e9
        self._dist0 = 0.0  # wheel distance before the current roll
        self._roll = (0.0, 0.0, 1.0)  # start time, distance, duration
        self._m_per_tick = t.metres_per_tick

    # ---- physics -------------------------------------------------------------------
    def _apply_changes(self) -> None:
        if not self.bench.has_changes():
            if self._t - self.bench.t_s >= 0.01:
                self.bench._seen(self._t)
            return
        for change in self.bench.take_changes():
            kind = change[0]
            if kind in ("masses", "add_masses"):
                new = change[1] + (self._masses if kind == "add_masses" else 0.0)
                self._load_wobble = WOBBLE_LOAD_FRACTION * (new - self._masses)
                self._masses = np.asarray(new, dtype=np.float64)
                self._changed_t = self._t
            elif kind == "up":
                self._accel_wobble = WOBBLE_ACCEL_G * float(np.linalg.norm(change[1] - self._up))
                self._up = change[1]
                self._changed_t = self._t
            elif kind == "roll":
                self._dist0 = self._distance(self._t)
                self._roll = (self._t, change[1], max(change[2], 1e-3))
        start, _, dur = self._roll
        self.bench._seen(self._t, start + dur)

    def _wobble(self, t: float) -> float:
        dt = t - self._changed_t
        if dt < 0 or dt > 12 * WOBBLE_TAU_S:
            return 0.0
        return math.exp(-dt / WOBBLE_TAU_S) * math.cos(2 * math.pi * WOBBLE_HZ * dt)

    def _distance(self, t: float) -> float:
        start, dist, dur = self._roll
        u = min(max((t - start) / dur, 0.0), 1.0)
        return self._dist0 + dist * (0.5 - 0.5 * math.cos(math.pi * u))  # smooth start/stop

    def _rolling(self, t: float) -> bool:
        start, dist, dur = self._roll
        return dist != 0 and start <= t < start + dur

    # ---- the device interface ------------------------------------------------------
    def advance_to(self, t_s: float) -> None:
        if t_s < self._t - 1e-9:
            raise ValueError("time goes forward only: %r < %r" % (t_s, self._t))
        self._t = max(self._t, t_s)
        self._apply_changes()

    def hx711_ready(self, cell: int) -> bool:
        return self._t >= self._next_ready[cell]

    def hx711_read(self, cell: int) -> int:
        rate, phase = self._rates[cell], self._phases[cell]
        k = max(0, int(math.floor((self._t - phase) * rate)))
        self._next_ready[cell] = phase + (k + 1) / rate
        t_k = phase + k / rate
        t = self.truth
        force = self._masses[cell] + self._load_wobble[cell] * self._wobble(t_k)
        counts = (t.load_offsets_counts[cell] + t.load_gains_counts_per_n[cell] * force
                  + t.load_noise_counts * self._rng.standard_normal())
        return int(min(max(round(counts), HX711_MIN_COUNTS), HX711_MAX_COUNTS))

    def accel_read(self) -> tuple[int, int, int]:
        t = self.truth
        g = self._up.copy()
        w = self._wobble(self._t) * self._accel_wobble
        if w:
            g += w * np.array([0.6, -0.5, 0.4])
        if self._rolling(self._t):
            g += ROLL_BOUNCE_G * self._rng.standard_normal(3)
        counts = (t.accel_bias_counts + t.accel_counts_per_g * g
                  + t.accel_noise_counts * self._rng.standard_normal(3))
        c = np.clip(np.rint(counts), ACCEL_MIN_COUNTS, ACCEL_MAX_COUNTS).astype(int)
        return int(c[0]), int(c[1]), int(c[2])

    def encoder_count(self) -> int:
        return math.floor(self._distance(self._t) / self._m_per_tick + 1e-9)

    def truth_label(self) -> str:
        return "NTW"  # nobody is using the walker

    @property
    def t_s(self) -> float:
        return self._t

    def physical_state(self) -> dict:
        return {"t_s": self._t, "cell_forces_n": self._masses.copy(),
                "up": self._up.copy(), "wheel_distance_m": self._distance(self._t)}


class VirtualTechnician:
    """Does what a calibration step asks, on a CalibrationBench: the hands of
    `walkerlab calibrate` when it calibrates a virtual walker.

    A step (host/calibrate.py's Step, read by attribute) has a kind: "tare" (take the
    masses off, stand upright), "mass" (mass_kg over leg `cell`), "position" (turn to
    SIX_POSITIONS[position]), "still" (nothing), "roll" (distance_m * direction, stopped
    within stop_sd_m of the mark).
    `mistakes` maps a step number (1-based, in the order performed) to a callable(bench)
    done instead: for showing and testing how a bad step is refused.
    """

    SIX = ((0, 1), (0, -1), (1, 1), (1, -1), (2, 1), (2, -1))

    def __init__(self, bench: CalibrationBench, mistakes: dict | None = None,
                 roll_s: float = 2.0, stop_sd_m: float = 0.005, seed: int = 0) -> None:
        self.bench = bench
        self.mistakes = dict(mistakes or {})
        self.roll_s = roll_s
        self.stop_sd_m = stop_sd_m  # a person stops the walker within ~1 cm of the mark
        self._rng = np.random.default_rng(seed)
        self.performed = 0

    def __call__(self, step) -> None:
        self.performed += 1
        mistake = self.mistakes.pop(self.performed, None)
        if mistake is not None:
            mistake(self.bench)
            self.bench.wait_done()
            return
        kind = step.kind
        if kind == "tare":
            self.bench.clear_masses()
            self.bench.level()
        elif kind == "mass":
            self.bench.place_mass(step.mass_kg, cell=step.cell)
        elif kind == "position":
            axis, sign = self.SIX[step.position]
            self.bench.orient(axis, sign)
        elif kind == "roll":
            d = step.distance_m + self.stop_sd_m * float(self._rng.standard_normal())
            self.bench.roll(d * step.direction, self.roll_s)
        self.bench.wait_done()
