"""Calibration procedures as pure functions of raw readings (no I/O, no simulator).

A technician's step produces a block of raw counts; each function here checks the
step (steady reading, mass detected, consistent positions), refuses a bad one with a
CalibrationStepError naming the reason, and fits the constants with their residuals.
`apply_*` folds a result into a WalkerCalibration (the stored, versioned JSON).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import math

import numpy as np

from .walker_calibration import GRAVITY, CalibrationError, WalkerCalibration


class CalibrationStepError(CalibrationError):
    """A calibration step that cannot be used; the message says why and what to redo."""


@dataclasses.dataclass
class FitResult:
    """Fitted constants, their standard errors and residuals of one procedure."""
    procedure: str
    values: dict
    stderr: dict
    residuals: list
    residual_unit: str
    date: str = dataclasses.field(
        default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))

    @property
    def max_residual(self) -> float:
        return float(np.max(np.abs(self.residuals))) if len(self.residuals) else 0.0

    @property
    def kind(self) -> str:
        """"load", "accel" or "encoder": the part of the calibration it sets."""
        return self.procedure.split(":", 1)[0]

    def to_dict(self) -> dict:
        """JSON-ready: what a calibration file keeps of how its constants were found."""
        def plain(v):
            if isinstance(v, dict):
                return {k: plain(x) for k, x in v.items()}
            if isinstance(v, (list, tuple, np.ndarray)):
                return [plain(x) for x in v]
            if isinstance(v, (float, np.floating)):
                return float(v) if math.isfinite(v) else None
            return v
        return {"procedure": self.procedure, "date": self.date, "values": plain(self.values),
                "stderr": plain(self.stderr), "residuals": plain(self.residuals),
                "residual_unit": self.residual_unit, "max_residual": self.max_residual}


def steady_mean(samples, max_sd: float, what: str = "reading") -> np.ndarray:
    """Mean of a block of readings (n,) or (n, k); refuses an unsteady block.

    max_sd: largest standard deviation (same units) accepted per channel."""
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.shape[0] < 5:
        raise CalibrationStepError("%s: too few samples (%d); hold still longer"
                                   % (what, x.shape[0]))
    if not np.all(np.isfinite(x)):
        raise CalibrationStepError("%s: readings contain non-finite values" % what)
    sd = x.std(axis=0, ddof=1)
    worst = int(np.argmax(sd / max_sd))
    if sd[worst] > max_sd:
        raise CalibrationStepError(
            "%s: unsteady reading on channel %d (sd %.1f > %.1f); keep the walker still"
            % (what, worst, sd[worst], max_sd))
    return x.mean(axis=0)


# ---- load cells -----------------------------------------------------------------------

def tare(load_counts, max_sd_counts: float) -> np.ndarray:
    """Zero-load offsets (4,) from readings (n, 4) of the unloaded walker."""
    return steady_mean(load_counts, max_sd_counts, "tare")


def standard_error(samples) -> np.ndarray:
    """Standard error of the mean per channel of a block (n,) or (n, k)."""
    x = np.asarray(samples, dtype=np.float64)
    return x.std(axis=0, ddof=1) / math.sqrt(x.shape[0])


def mass_step_rise(offsets, cell: int, mass_kg: float, readings, max_sd_counts: float,
                   min_counts: float = 2000.0) -> float:
    """The rise (counts) of `cell` under a known mass over it; refuses the step when the
    reading is unsteady, the mass is not detected, or another cell rose more."""
    if cell not in range(4):
        raise CalibrationStepError("cell must be 0..3, got %r" % (cell,))
    if not (isinstance(mass_kg, (int, float)) and mass_kg > 0 and math.isfinite(mass_kg)):
        raise CalibrationStepError("mass must be positive, got %r kg" % (mass_kg,))
    rise = (steady_mean(readings, max_sd_counts, "cell %d, %.3g kg" % (cell, mass_kg))
            - np.asarray(offsets, dtype=np.float64))
    other = int(np.argmax(np.abs(rise)))
    if other != cell and abs(rise[other]) >= min_counts:
        raise CalibrationStepError("cell %d, %.3g kg: cell %d rose more; is the mass over "
                                   "the right cell?" % (cell, mass_kg, other))
    if abs(rise[cell]) < min_counts:
        raise CalibrationStepError("cell %d, %.3g kg: mass not detected (rise %.0f counts)"
                                   % (cell, mass_kg, rise[cell]))
    return float(rise[cell])


def load_gains(offsets, steps, max_sd_counts: float, min_counts: float = 2000.0,
               offsets_stderr=None) -> FitResult:
    """Gain per cell (counts/N) from known masses placed over single cells.

    steps: list of (cell, mass_kg, readings (n, 4)). With several masses per cell the
    gain is the least-squares slope through the tare (linearity check); residuals in N.
    A mass whose cell rises less than min_counts, or which loads another cell more
    than its own, is refused (mass not detected / wrong cell)."""
    offsets = np.asarray(offsets, dtype=np.float64)
    per_cell: dict[int, list[tuple[float, float]]] = {c: [] for c in range(4)}
    step_se: dict[int, list[float]] = {c: [] for c in range(4)}
    for cell, mass_kg, readings in steps:
        rise = mass_step_rise(offsets, cell, mass_kg, readings, max_sd_counts, min_counts)
        per_cell[cell].append((mass_kg * GRAVITY, rise))
        step_se[cell].append(float(standard_error(readings)[cell]))
    missing = [c for c, v in per_cell.items() if not v]
    if missing:
        raise CalibrationStepError("no mass placed over cell(s) %s" % missing)
    gains, errs, residuals = [], [], []
    for c in range(4):
        f, r = np.array(per_cell[c]).T
        g = float(f @ r / (f @ f))  # slope through the tare
        res_n = (r - g * f) / g
        gains.append(g)
        dof = len(f) - 1
        # Noise of the means: var(g) = (sum f_i^2 se_i^2 + se_tare^2 (sum f_i)^2) / (f.f)^2
        # (the tare is shared by every step of the cell); with several masses, the
        # scatter about the line too, whichever is larger.
        se_i = np.array(step_se[c])
        se_t = 0.0 if offsets_stderr is None else float(offsets_stderr[c])
        noise = math.sqrt(float((f * f) @ (se_i * se_i)) + se_t ** 2 * f.sum() ** 2) / (f @ f)
        scatter = math.sqrt(res_n @ res_n / dof / (f @ f)) * g if dof else 0.0
        errs.append(float(max(noise, scatter)))
        residuals.extend(res_n.tolist())
    return FitResult("load: tare + known masses per cell",
                     {"load_offsets_counts": offsets.tolist(), "load_gains_counts_per_n": gains},
                     {"load_gains_counts_per_n": errs,
                      **({"load_offsets_counts": [float(v) for v in offsets_stderr]}
                         if offsets_stderr is not None else {})}, residuals, "N")


# ---- accelerometer --------------------------------------------------------------------

# The six positions: each axis pointing up (+1 g) and down (-1 g).
SIX_POSITIONS = [(0, 1), (0, -1), (1, 1), (1, -1), (2, 1), (2, -1)]


def check_accel_position(mean_counts, position: int,
                         nominal_counts_per_g: float = 256.0, tolerance_g: float = 0.3) -> None:
    """Refuse a static position (index into SIX_POSITIONS) whose expected axis does not
    read about +-1 g with the expected sign (the walker was turned the wrong way)."""
    axis, sign = SIX_POSITIONS[position]
    g = np.asarray(mean_counts, dtype=np.float64) / nominal_counts_per_g
    names = "xyz"
    if abs(g[axis] - sign) > tolerance_g or int(np.argmax(np.abs(g))) != axis:
        raise CalibrationStepError(
            "position %d: the %s axis should point %s (reads %+.2f, %+.2f, %+.2f g); turn "
            "the walker as shown" % (position + 1, names[axis], "up" if sign > 0 else "down",
                                     g[0], g[1], g[2]))


def accel_six_position(readings, max_sd_counts: float, cross_axis: bool = False) -> FitResult:
    """Bias (counts) and scale (counts/g) per axis from the six static positions.

    readings: six blocks (n, 3), in SIX_POSITIONS order. Least squares of
    counts = bias + M @ g_vec (M diagonal unless cross_axis). Residual in g.
    A position whose dominant axis is not the expected one is refused."""
    if len(readings) != 6:
        raise CalibrationStepError("six positions are needed, got %d" % len(readings))
    means = np.array([steady_mean(r, max_sd_counts, "position %d" % (i + 1))
                      for i, r in enumerate(readings)])
    g_vecs = np.zeros((6, 3))
    for i, (axis, sign) in enumerate(SIX_POSITIONS):
        g_vecs[i, axis] = sign
    # Consistency: opposite positions must differ most on their own axis.
    for axis in range(3):
        diff = np.abs(means[2 * axis] - means[2 * axis + 1])
        if int(np.argmax(diff)) != axis or means[2 * axis, axis] <= means[2 * axis + 1, axis]:
            raise CalibrationStepError("positions %d/%d: axis %d did not turn up then down; "
                                       "inconsistent positions" % (2 * axis + 1, 2 * axis + 2, axis))
    design = np.hstack([np.ones((6, 1)), g_vecs])  # (6, 4)
    coef, *_ = np.linalg.lstsq(design, means, rcond=None)  # (4, 3): bias row, M^T
    bias, m = coef[0], coef[1:].T
    fitted = design @ coef
    if not cross_axis:
        scale = np.diag(m).copy()
        fitted = bias + g_vecs * scale
        m = np.diag(scale)
    res_g = (means - fitted) / np.diag(m)
    # Six positions fit four parameters per axis exactly with cross terms; the residual
    # then is zero, so the spread reported is the sample noise of the means.
    noise_g = np.array([np.asarray(r, float).std(axis=0, ddof=1) / math.sqrt(len(r))
                        for r in readings]).mean(axis=0) / np.diag(m)
    values = {"accel_bias_counts": bias.tolist(), "accel_counts_per_g": np.diag(m).tolist()}
    if cross_axis:
        values["accel_matrix_counts_per_g"] = m.tolist()
    return FitResult("accel: six-position" + (" with cross-axis" if cross_axis else ""),
                     values, {"accel_bias_g": (noise_g / math.sqrt(2)).tolist()},
                     res_g.ravel().tolist(), "g")


# ---- encoders -------------------------------------------------------------------------

def encoder_roll(ticks_left: float, ticks_right: float, distance_m: float,
                 max_wheel_difference: float = 0.02) -> FitResult:
    """Ticks per metre per wheel from a straight roll over a measured distance.

    Refuses a roll with no ticks, or with wheels differing by more than
    max_wheel_difference (fraction): the roll was not straight or a wheel slipped.
    The one residual is half the distance one wheel rolled further than the other (m)."""
    if not distance_m > 0:
        raise CalibrationStepError("distance must be positive, got %r m" % (distance_m,))
    ticks = np.abs(np.array([ticks_left, ticks_right], dtype=np.float64))
    if np.any(ticks < 10):
        raise CalibrationStepError("encoder roll: a wheel did not turn (ticks %s)" % ticks.tolist())
    diff = abs(ticks[0] - ticks[1]) / ticks.mean()
    if diff > max_wheel_difference:
        raise CalibrationStepError("encoder roll: wheels differ by %.1f %% (> %.1f %%); roll "
                                   "straight and again" % (100 * diff, 100 * max_wheel_difference))
    per_m = ticks / distance_m
    return FitResult("encoder: measured roll", {"ticks_per_m": per_m.tolist(),
                                                "wheel_difference": float(diff)},
                     {"ticks_per_m": [1.0 / distance_m] * 2},  # +-1 tick quantisation
                     [float((ticks[0] - ticks[1]) / 2 / per_m.mean())], "m")


def encoder_rolls(ticks, distance_m: float, max_difference: float = 0.02) -> FitResult:
    """Ticks per metre of the encoder wheel from several rolls over one measured
    distance (there and back; a walker with one encoder, like the virtual walker, cannot
    compare wheels, so it compares rolls). Refuses a roll with no ticks, or rolls that
    differ by more than max_difference (fraction): a roll was not straight, or slipped.
    Residuals: each roll's distance by the fitted constant minus the measured one (m)."""
    if not (isinstance(distance_m, (int, float)) and distance_m > 0):
        raise CalibrationStepError("distance must be positive, got %r m" % (distance_m,))
    t = np.abs(np.asarray(ticks, dtype=np.float64))
    if t.size < 1 or np.any(t < 10):
        raise CalibrationStepError("encoder roll: the wheel did not turn (ticks %s)"
                                   % [int(v) for v in t])
    spread = (t.max() - t.min()) / t.mean()
    if spread > max_difference:
        raise CalibrationStepError("encoder rolls differ by %.1f %% (> %.1f %%); roll "
                                   "straight and again" % (100 * spread, 100 * max_difference))
    per_m = float(t.mean() / distance_m)
    # +-1 tick of quantisation per roll, and the spread of the rolls.
    sem = float(np.sqrt((t.std(ddof=1) ** 2 if t.size > 1 else 0.0) / t.size + 1.0 / 6))  # count difference: var 1/6 tick^2
    return FitResult("encoder: measured rolls", {"ticks_per_m": [per_m],
                                                 "roll_difference": float(spread)},
                     {"ticks_per_m": [sem / distance_m]},
                     (t / per_m - distance_m).tolist(), "m")


# ---- into the stored calibration ------------------------------------------------------

def apply(calibration: WalkerCalibration, result: FitResult) -> WalkerCalibration:
    """A new WalkerCalibration with `result`'s constants; the original is unchanged."""
    new = dataclasses.replace(calibration)
    new.results = {**calibration.results, result.kind: result.to_dict()}
    v = result.values
    if "load_gains_counts_per_n" in v:
        new.load_offsets_counts = list(v["load_offsets_counts"])
        new.load_gains_counts_per_n = list(v["load_gains_counts_per_n"])
    if "accel_bias_counts" in v:
        new.accel_bias_counts = list(v["accel_bias_counts"])
        new.accel_counts_per_g = list(v["accel_counts_per_g"])
    if "ticks_per_m" in v:
        # The stored form is ticks/rev and diameter; keep ticks/rev, fit the diameter.
        per_m = float(np.mean(v["ticks_per_m"]))
        new.wheel_diameter_m = new.encoder_ticks_per_rev / (math.pi * per_m)
    new.source = "%s (%s)" % (result.procedure, result.date)
    return new.validate()
