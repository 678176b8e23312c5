"""Physical units and the thesis's features, computed block by block.

`FeatureExtractor.process(block)` turns a SampleBlock of raw counts into loads (N),
acceleration (m/s^2), speed (m/s), TotalLoad and the centre of pressure (thesis eqs
6.1-6.3). It keeps the little state the speed estimate needs, so feeding a session in
blocks of any size gives exactly the features of feeding it whole: live, replay and
offline training all share this one code path.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibration import GRAVITY, WalkerCalibration
from device.protocol import wire
from host.errors import UserError
from host.samples import SampleBlock

# The thesis's two feature sets (6.6): raw load cells, or COP + TotalLoad.
FEATURE_SETS = {
    "loadcells": ("accel_x", "accel_y", "accel_z", "speed", "load_FR", "load_FL",
                  "load_RL", "load_RR"),
    "cop": ("accel_x", "accel_y", "accel_z", "speed", "cop_fp", "cop_sp", "total_load"),
}
SPEED_WINDOW_S = 0.2  # encoder differences over this span: 1 tick is ~2.5 mm


class UnknownFeatureSetError(UserError, ValueError):
    """A feature set this WalkerLab does not compute (a model file may name any)."""


def cop_features(loads_n: np.ndarray, calibration: WalkerCalibration,
                 out: np.ndarray | None = None):
    """TotalLoad, COP_SP and COP_FP from loads (n, 4) in N, order FR, FL, RL, RR.

    Thesis eqs 6.1-6.3:
      TotalLoad = L_RR + L_RL + L_FR + L_FL
      COP_SP = (L_FL + L_FR - L_RL - L_RR) / TotalLoad           (dimensionless)
      COP_FP = (d_f (L_FL - L_FR) + d_r (L_RL - L_RR)) / TotalLoad  (metres here)
    with d_f, d_r the distances of the front and rear cells from the midline. Where
    TotalLoad is below calibration.min_total_load_n the COP is undefined: both are 0
    and valid is False, so nothing downstream ever sees NaN or inf.
    Returns (total, cop_sp, cop_fp, valid).
    """
    fr, fl, rl, rr = loads_n[:, 0], loads_n[:, 1], loads_n[:, 2], loads_n[:, 3]
    total = fr + fl + rl + rr
    valid = total >= calibration.min_total_load_n
    safe = np.where(valid, total, 1.0)
    cop_sp = np.where(valid, (fl + fr - rl - rr) / safe, 0.0)
    cop_fp = np.where(valid, (calibration.front_half_width_m * (fl - fr)
                              + calibration.rear_half_width_m * (rl - rr)) / safe, 0.0)
    return total, cop_sp, cop_fp, valid


@dataclass
class FeatureBlock:
    """Features of one SampleBlock: X (n, len(names)) float64, plus COP validity."""

    t_s: np.ndarray  # device time, seconds (unwrapped)
    X: np.ndarray
    cop_valid: np.ndarray
    names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.t_s)


class FeatureExtractor:
    """Raw counts -> features of one of FEATURE_SETS, streaming-safe."""

    def __init__(self, calibration: WalkerCalibration, feature_set: str = "cop") -> None:
        if not isinstance(feature_set, str) or feature_set not in FEATURE_SETS:
            raise UnknownFeatureSetError("unknown feature set %r (choose from %s)"
                                         % (feature_set, ", ".join(FEATURE_SETS)))
        self.calibration = calibration
        self.feature_set = feature_set
        self.names = FEATURE_SETS[feature_set]
        c = calibration
        self._load_offsets = np.asarray(c.load_offsets_counts, dtype=np.float64)
        self._load_scale = 1.0 / np.asarray(c.load_gains_counts_per_n, dtype=np.float64)
        self._accel_bias = np.asarray(c.accel_bias_counts, dtype=np.float64)
        self._accel_scale = GRAVITY / np.asarray(c.accel_counts_per_g, dtype=np.float64)
        self._m_per_tick = c.metres_per_tick
        self.reset()

    def reset(self) -> None:
        """Forget the history used by the speed estimate (a new session)."""
        self._hist_t = np.zeros(0, dtype=np.int64)
        self._hist_ticks = np.zeros(0, dtype=np.int64)
        self._shift = 0  # added to device time so that it never goes back (see _monotonic)

    def _monotonic(self, t_us: np.ndarray) -> np.ndarray:
        """Device time made non-decreasing: where it steps back (a walker reset, a
        damaged clock), every later sample is shifted to one window past the previous
        one, so the step reads as a gap and no speed window spans it (a reset)."""
        t = t_us.astype(np.int64) + self._shift
        prev = np.concatenate([self._hist_t[-1:], t[:-1]])
        back = np.flatnonzero(t[len(t) - len(prev):] < prev) + (len(t) - len(prev))
        if len(back):
            window = int(SPEED_WINDOW_S * 1e6)
            step = np.zeros(len(t), dtype=np.int64)
            step[back] = prev[back - (len(t) - len(prev))] - t[back] + window + 1
            t += np.cumsum(step)
            self._shift += int(step.sum())
        return t

    def loads_newton(self, block: SampleBlock) -> np.ndarray:
        """Loads in N. Counts the firmware already tared are not offset again."""
        tared = (block.status & wire.STATUS_TARED) != 0
        offsets = np.where(tared[:, None], 0.0, self._load_offsets)
        return (block.loads - offsets) * self._load_scale

    def accel_mps2(self, block: SampleBlock) -> np.ndarray:
        return (block.accel - self._accel_bias) * self._accel_scale

    def speed_mps(self, block: SampleBlock) -> np.ndarray:
        """Encoder speed: tick difference over the last SPEED_WINDOW_S, causal. Time
        going back is a gap and a reset (_monotonic): speed 0 until it moves again."""
        n = len(block)
        t = np.concatenate([self._hist_t, self._monotonic(block.t_us)])
        ticks = np.concatenate([self._hist_ticks, block.encoder.astype(np.int64)])
        h = len(self._hist_t)
        # For each new sample, the earliest past sample within the window.
        start = np.searchsorted(t, t[h:] - int(SPEED_WINDOW_S * 1e6), side="left")
        idx = np.arange(h, h + n)
        dt = (t[idx] - t[start]) * 1e-6
        speed = np.zeros(n)
        moved = dt > 0
        speed[moved] = (ticks[idx][moved] - ticks[start][moved]) * self._m_per_tick / dt[moved]
        if n:
            keep = np.searchsorted(t, t[-1] - int(SPEED_WINDOW_S * 1e6), side="left")
            self._hist_t = t[keep:]
            self._hist_ticks = ticks[keep:]
        return speed

    def process(self, block: SampleBlock) -> FeatureBlock:
        accel = self.accel_mps2(block)
        speed = self.speed_mps(block)
        loads = self.loads_newton(block)
        total, cop_sp, cop_fp, valid = cop_features(loads, self.calibration)
        n = len(block)
        X = np.empty((n, len(self.names)))
        X[:, 0:3] = accel
        X[:, 3] = speed
        if self.feature_set == "loadcells":
            X[:, 4:8] = loads
        else:
            X[:, 4] = cop_fp
            X[:, 5] = cop_sp
            X[:, 6] = total
        return FeatureBlock(t_s=block.t_us * 1e-6, X=X, cop_valid=valid, names=self.names)
