"""Guided calibration of a walker over its serial link (`walkerlab calibrate`).

The procedures' arithmetic and their checks live in calibration/procedures.py (pure
functions of readings). This module runs them against a live walker: it says what to
do (`Step`), waits for the technician, waits for a steady reading while showing the
live one, measures, and refuses a bad step with the reason (the technician redoes it
or gives up). The same runner serves the terminal (`TerminalUI`), the GUI wizard and
scripted runs; a `technician` callback, when given, performs each step on a virtual
walker's bench (device/sim/bench.py) as the instruction is confirmed.

Results go to a `CalibrationStore`: the walker's current calibration
(`<dir>/<walker>.json`, what `calibration_for` reads) and, for every calibration made,
a record in `<dir>/history/<walker>/` (never overwritten).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import pathlib
import sys
import time

import numpy as np

from calibration import (GRAVITY, CalibrationError, WalkerCalibration, calibration_dir,
                         calibration_for)
from calibration.procedures import (SIX_POSITIONS, CalibrationStepError, FitResult, apply,
                                    check_accel_position, encoder_rolls, load_gains,
                                    mass_step_rise, standard_error, tare)
from calibration.walker_calibration import (NOMINAL_ACCEL_COUNTS_PER_G, stored_calibration_path,
                                            to_walker,
                                            NOMINAL_ENCODER_TICKS_PER_REV,
                                            NOMINAL_LOAD_GAIN_COUNTS_PER_N,
                                            NOMINAL_WHEEL_DIAMETER_M)
from device.protocol import wire
from host.errors import UserError
from host.outputs import check_free, exclusive_output

PROCEDURES = ("load", "accel", "encoder")
CELL_NAMES = ("FR (front right)", "FL (front left)", "RL (rear left)", "RR (rear right)")
POSITION_TEXT = (
    "stand the walker on its rear legs, front pointing at the ceiling (x axis up)",
    "stand the walker on its front legs, rear pointing at the ceiling (x axis down)",
    "lay the walker on its right side, left side up (y axis up)",
    "lay the walker on its left side, right side up (y axis down)",
    "stand the walker upright on its wheels (z axis up)",
    "turn the walker upside down, on its handles (z axis down)",
)
# Steadiness limits, in physical units at nominal gains (the walker's own gains are
# what is being measured): several times the sensors' noise, far below a wobble.
LOAD_STEADY_N = 2.0
ACCEL_STEADY_G = 0.03
SETTLE_S = 1.0  # the reading must have been steady this long before measuring ...
MEASURE_S = 2.0  # ... then this long is averaged (and must be steady too)
STEADY_TIMEOUT_S = 20.0  # device seconds to wait for a steady reading
NO_DATA_TIMEOUT_S = 5.0  # wall seconds without a sample: the walker stopped sending
ACK_TIMEOUT_S = 30.0  # wall seconds for the walker's ACK to a HELLO (a hang guard)


@dataclasses.dataclass
class Step:
    """One thing the technician does. kind: tare, mass, position, still, roll, done."""
    kind: str
    instruction: str
    cell: int | None = None
    mass_kg: float | None = None
    position: int | None = None
    distance_m: float | None = None
    direction: int = 1


class CalibrationAbandoned(UserError):
    """The technician gave up on a refused step."""


# ---- the user's side -------------------------------------------------------------------
class TerminalUI:
    """Prompts on stdout, answers from stdin, a live status line redrawn in place."""

    def __init__(self, stream=None, instream=None) -> None:
        self.out = stream or sys.stdout
        self.inp = instream or sys.stdin
        self._live = False
        self._last_live = 0.0

    def _end_live(self) -> None:
        if self._live:
            self.out.write("\n")
            self._live = False

    def say(self, text: str) -> None:
        self._end_live()
        self.out.write(text + "\n")
        self.out.flush()

    def ask(self, prompt: str, default: str = "") -> str:
        self._end_live()
        self.out.write(prompt + (" [%s]" % default if default else "") + ": ")
        self.out.flush()
        line = self.inp.readline()
        if not line:
            raise UserError("no answer (end of input) at: %s" % prompt)
        return line.strip() or default

    def live(self, text: str) -> None:
        now = time.monotonic()
        if now - self._last_live < 0.2:
            return
        self._last_live = now
        self.out.write("\r  " + text + "\x1b[K")
        self.out.flush()
        self._live = True


def ask_number(ui, prompt: str, default: float, what: str, lo: float = 0.0,
               hi: float = math.inf) -> float:
    """A number from the user; asks again on anything else."""
    while True:
        text = ui.ask(prompt, "%g" % default)
        try:
            value = float(text)
        except ValueError:
            ui.say("  not a %s: %r" % (what, text))
            continue
        if not (math.isfinite(value) and lo < value < hi):
            ui.say("  %s must be between %g and %g, got %g" % (what, lo, hi, value))
            continue
        return value


# ---- the walker's side -----------------------------------------------------------------
class LiveReadings:
    """Samples of a running SerialLink, taken from a non-blocking sink."""

    def __init__(self, link) -> None:
        from host.link import QueueSink

        self.link = link
        self.sink = QueueSink(maxsize=100_000)
        link.add_sink(self.sink)
        self._t = np.zeros(0, np.int64)
        self._host = np.zeros(0)
        self._loads = np.zeros((0, 4))
        self._accel = np.zeros((0, 3))
        self._enc = np.zeros(0)
        self._status = np.zeros(0, np.uint8)
        self._acks: dict[int, int] = {}  # command seq -> the walker's t_us of its ACK
        self._last_sample_wall = time.monotonic()

    def wait_info(self, timeout_s: float = 30.0) -> dict:
        end = time.monotonic() + timeout_s
        while self.link.info is None:
            if time.monotonic() > end:
                raise UserError("the walker on %s did not say who it is (no INFO frame in "
                                "%g s)" % (self.link.port_name, timeout_s))
            time.sleep(0.02)
        return self.link.info

    def _pull(self) -> None:
        batches = self.sink.drain()
        for batch in batches:
            for t_us, frame in batch.others:
                if frame.frame_type == wire.ACK:
                    try:
                        self._acks[wire.unpack_ack(frame.payload)[1]] = t_us
                    except ValueError:
                        pass
        blocks = [b.block for b in batches if len(b.block)]
        if not blocks:
            if time.monotonic() - self._last_sample_wall > NO_DATA_TIMEOUT_S:
                raise UserError("the walker on %s stopped sending samples"
                                % self.link.port_name)
            time.sleep(0.01)
            return
        self._last_sample_wall = time.monotonic()
        self._t = np.concatenate([self._t] + [b.t_us for b in blocks])
        self._host = np.concatenate([self._host] + [b.host_time for b in blocks])
        self._loads = np.concatenate([self._loads] + [b.loads.astype(float) for b in blocks])
        self._accel = np.concatenate([self._accel] + [b.accel.astype(float) for b in blocks])
        self._enc = np.concatenate([self._enc] + [b.encoder.astype(float) for b in blocks])
        self._status = np.concatenate([self._status] + [b.status for b in blocks])

    def walker_now(self) -> int:
        """The walker's clock now (t_us): the time stamp of its ACK to a HELLO sent here.

        Readings taken before it may still be on their way (a busy machine reads the
        port late), so "after now" is decided on this clock, not by arrival."""
        seq = self.link.send_command(wire.CMD_HELLO)
        end = time.monotonic() + ACK_TIMEOUT_S
        while seq not in self._acks:
            if time.monotonic() > end:
                raise UserError("the walker on %s does not answer (no ACK in %g s)"
                                % (self.link.port_name, ACK_TIMEOUT_S))
            self._pull()
        return self._acks.pop(seq)

    def forget(self) -> None:
        """Drop every reading the walker took before now (see walker_now)."""
        now = self.walker_now()
        keep = self._t > now
        for name in ("_t", "_host", "_loads", "_accel", "_enc", "_status"):
            setattr(self, name, getattr(self, name)[keep])
        self._acks.clear()
        self._last_sample_wall = time.monotonic()

    def channel(self, name: str) -> np.ndarray:
        return {"loads": self._loads, "accel": self._accel, "encoder": self._enc[:, None]}[name]

    def tared(self) -> bool:
        return bool(len(self._status) and self._status[-1] & wire.STATUS_TARED)

    def wait_steady(self, name: str, max_sd: float, show=None, settle_s: float = SETTLE_S,
                    measure_s: float = MEASURE_S, timeout_s: float = STEADY_TIMEOUT_S
                    ) -> np.ndarray:
        """Readings (n, k) of `measure_s` device seconds, taken once the channel has
        been steady (sd <= max_sd per column) for `settle_s`; CalibrationStepError if no
        steady reading comes within `timeout_s` device seconds."""
        self.forget()
        start = None
        steady_from = None  # index where the current steady run starts
        worst = float("nan")  # not known until settle_s of readings are in
        while True:
            self._pull()
            n = len(self._t)
            if not n:
                continue
            t = self._t
            if start is None:
                start = t[0]
            x = self.channel(name)
            if show is not None:
                show(x[-1], worst)
            # Settle: the last settle_s must be steady.
            if steady_from is None:
                i0 = int(np.searchsorted(t, t[-1] - settle_s * 1e6))
                if t[-1] - t[0] >= settle_s * 1e6:
                    sd = x[i0:].std(axis=0)
                    worst = float(np.max(sd))
                    if np.all(sd <= max_sd):
                        steady_from = n
            else:
                seg = x[steady_from:]
                if len(seg) >= 2:
                    sd = seg.std(axis=0)
                    worst = float(np.max(sd))
                    if not np.all(sd <= max_sd):
                        steady_from = None  # moved again: settle again
                        continue
                if steady_from < n and t[-1] - t[steady_from] >= measure_s * 1e6:
                    return x[steady_from:].copy()
            if t[-1] - start > timeout_s * 1e6:
                raise CalibrationStepError(
                    "no steady reading within %g s (sd %.3g > %.3g); keep the walker still"
                    % (timeout_s, worst, max_sd))

    def wait_encoder_still(self, show=None, still_s: float = 1.0,
                           timeout_s: float = 60.0) -> float:
        """The encoder count once it has not changed for `still_s` device seconds."""
        self.forget()
        start = None
        while True:
            self._pull()
            if not len(self._t):
                continue
            t, e = self._t, self._enc
            start = t[0] if start is None else start
            if show is not None:
                show(e[-1])
            i0 = int(np.searchsorted(t, t[-1] - still_s * 1e6))
            if t[-1] - t[0] >= still_s * 1e6 and np.all(e[i0:] == e[-1]):
                return float(e[-1])
            if t[-1] - start > timeout_s * 1e6:
                raise CalibrationStepError("the walker did not stand still within %g s"
                                           % timeout_s)


# ---- the store -------------------------------------------------------------------------
RECORD_FORMAT = "walkerlab-calibration-record"


def _safe_id(walker_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in walker_id) or "walker"


class CalibrationStore:
    """Per-walker calibrations: the current one and every one ever made."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = pathlib.Path(root) if root is not None else calibration_dir()

    def current_path(self, walker_id: str) -> pathlib.Path:
        return stored_calibration_path(walker_id, self.root)

    def history_dir(self, walker_id: str) -> pathlib.Path:
        return self.root / "history" / _safe_id(walker_id)

    def current(self, walker_id: str, reported: dict | None = None) -> WalkerCalibration:
        """The newer of the walker's stored calibration and the one it `reported` from
        its flash, else nominal values (never a simulator's)."""
        return calibration_for(walker_id, reported, use_sources=False, directory=self.root)

    def save(self, calibration: WalkerCalibration, result: FitResult) -> pathlib.Path:
        """Make `calibration` current and add it to the history; the record's path."""
        wid = calibration.walker_id
        hist = self.history_dir(wid)
        hist.mkdir(parents=True, exist_ok=True)
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
        record = {"format": RECORD_FORMAT, "version": 1, "walker_id": wid,
                  "procedure": result.procedure, "kind": result.kind, "date": result.date,
                  "result": result.to_dict(), "calibration": calibration.to_dict()}
        path = hist / ("%s-%s.json" % (stamp, result.kind))
        with exclusive_output(path) as tmp:
            tmp.write_text(json.dumps(record, indent=2, allow_nan=False))
        calibration.save(self.current_path(wid))
        return path

    def history(self, walker_id: str) -> list[dict]:
        """Every calibration record of the walker, oldest first."""
        hist = self.history_dir(walker_id)
        out = []
        for path in sorted(hist.glob("*.json")) if hist.is_dir() else []:
            try:
                rec = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise CalibrationError("%s: unreadable calibration record (%s)"
                                       % (path, exc)) from None
            if not isinstance(rec, dict) or rec.get("format") != RECORD_FORMAT:
                raise CalibrationError("%s: not a calibration record" % path)
            WalkerCalibration.from_dict(rec.get("calibration"), str(path))
            rec["path"] = str(path)
            out.append(rec)
        return out


# ---- the procedures --------------------------------------------------------------------
class GuidedCalibration:
    """Runs one procedure: steps, live readings, checks, fit.

    ui: say(text), ask(prompt, default) -> str, live(text).
    technician: optional callable(Step) performing a confirmed step (virtual walker).
    """

    def __init__(self, readings: LiveReadings, ui, technician=None,
                 masses_kg=(10.0, 20.0), distance_m: float = 5.0, rolls: int = 2) -> None:
        self.readings = readings
        self.ui = ui
        self.technician = technician
        self.masses_kg = [float(m) for m in masses_kg]
        self.distance_m = float(distance_m)
        self.rolls = int(rolls)
        self.steps_refused: list[str] = []

    # -- helpers
    def _confirm(self, step: Step, prompt: str = "press Enter when done",
                 default: str = "") -> str:
        self.ui.say(step.instruction)
        answer = self.ui.ask("  " + prompt, default)
        if answer.lower() in ("q", "quit"):
            raise CalibrationAbandoned("calibration abandoned by the user")
        if self.technician is not None:
            self.technician(step)
        return answer

    def _refused(self, exc: CalibrationStepError) -> None:
        self.steps_refused.append(str(exc))
        self.ui.say("  REFUSED: %s" % exc)
        answer = self.ui.ask("  redo this step (Enter) or give up (q)", "")
        if answer.lower() in ("q", "quit"):
            raise CalibrationAbandoned("calibration abandoned: %s" % exc)

    def _show_loads(self, counts, sd):
        n = counts / NOMINAL_LOAD_GAIN_COUNTS_PER_N
        self.ui.live("loads (counts / nominal N): " + "  ".join(
            "%s %9.0f (%6.1f N)" % (c[:2], v, f) for c, v, f in zip(CELL_NAMES, counts, n))
            + ("   sd %.2f N" % (sd / NOMINAL_LOAD_GAIN_COUNTS_PER_N) if sd == sd
               else "   sd -"))

    def _show_accel(self, counts, sd):
        g = counts / NOMINAL_ACCEL_COUNTS_PER_G
        self.ui.live("accel: x %+.3f  y %+.3f  z %+.3f g (nominal)   sd %s"
                     % (g[0], g[1], g[2], "%.3f g" % (sd / NOMINAL_ACCEL_COUNTS_PER_G)
                                          if sd == sd else "-"))

    # -- load cells
    def load(self) -> tuple[FitResult, np.ndarray]:
        ui, rd = self.ui, self.readings
        sd_counts = LOAD_STEADY_N * NOMINAL_LOAD_GAIN_COUNTS_PER_N
        ui.say("Load cells: tare, then known masses over each leg in turn (%s kg)."
               % ", ".join("%g" % m for m in self.masses_kg))
        while True:
            self._confirm(Step("tare", "Step 1: take every mass off the walker and let it "
                               "stand still, upright on level floor."))
            try:
                block = rd.wait_steady("loads", sd_counts, self._show_loads)
                if rd.tared():
                    raise CalibrationStepError("the walker reports tared load counts; "
                                               "power-cycle it so it sends raw counts")
                offsets = tare(block, sd_counts)
                offsets_se = standard_error(block)
                break
            except CalibrationStepError as exc:
                self._refused(exc)
        ui.say("  tare: " + "  ".join("%s %.0f" % (c[:2], o)
                                      for c, o in zip(CELL_NAMES, offsets)) + " counts")
        steps = []
        n = 1
        for cell in range(4):
            for mass in self.masses_kg:
                n += 1
                while True:
                    step = Step("mass", "Step %d: place %g kg over leg %s, right above the "
                                "load cell, nothing else on the walker." % (n, mass,
                                                                          CELL_NAMES[cell]),
                                cell=cell, mass_kg=mass)
                    answer = self._confirm(step, "mass placed, in kg (Enter: as said)",
                                           "%g" % mass)
                    try:
                        kg = float(answer)
                        if not (math.isfinite(kg) and kg > 0):
                            raise ValueError
                    except ValueError:
                        ui.say("  not a mass in kg: %r" % answer)
                        continue
                    try:
                        block = rd.wait_steady("loads", sd_counts, self._show_loads)
                        rise = mass_step_rise(offsets, cell, kg, block, sd_counts)
                    except CalibrationStepError as exc:
                        self._refused(exc)
                        continue
                    ui.say("  %s rose %.0f counts under %g kg (%.1f counts/N)"
                           % (CELL_NAMES[cell][:2], rise, kg, rise / (kg * GRAVITY)))
                    steps.append((cell, kg, block))
                    break
        self._confirm(Step("tare", "Last step: take the mass off the walker."), "Enter")
        fit = load_gains(offsets, steps, sd_counts, offsets_stderr=offsets_se)
        return fit, offsets

    # -- accelerometer
    def accel(self) -> FitResult:
        sd_counts = ACCEL_STEADY_G * NOMINAL_ACCEL_COUNTS_PER_G
        self.ui.say("Accelerometer: six still positions, each axis up then down.")
        blocks = []
        for i, text in enumerate(POSITION_TEXT):
            while True:
                axis, sign = SIX_POSITIONS[i]
                self._confirm(Step("position", "Position %d/6: %s." % (i + 1, text),
                                   position=i))
                try:
                    block = self.readings.wait_steady("accel", sd_counts, self._show_accel)
                    check_accel_position(block.mean(axis=0), i, NOMINAL_ACCEL_COUNTS_PER_G)
                except CalibrationStepError as exc:
                    self._refused(exc)
                    continue
                blocks.append(block)
                g = block.mean(axis=0) / NOMINAL_ACCEL_COUNTS_PER_G
                self.ui.say("  reads %+.3f %+.3f %+.3f g (nominal)" % tuple(g))
                break
        from calibration.procedures import accel_six_position

        fit = accel_six_position(blocks, sd_counts)
        self._confirm(Step("position", "Last step: stand the walker upright on its "
                           "wheels again.", position=4), "Enter")
        return fit

    # -- encoder
    def encoder(self) -> FitResult:
        ui, rd = self.ui, self.readings
        ui.say("Wheel encoder: roll the walker straight over a measured distance, there "
               "and back (the encoder is on the rear right wheel).")
        self.distance_m = ask_number(ui, "  distance you will roll, in metres",
                                     self.distance_m, "distance in metres", 0.5, 100.0)
        nominal_mpt = math.pi * NOMINAL_WHEEL_DIAMETER_M / NOMINAL_ENCODER_TICKS_PER_REV

        def show(e, start=[None]):
            ui.live("encoder %d ticks" % e)

        rolls = []
        while len(rolls) < self.rolls:
            k = len(rolls)
            direction = 1 if k % 2 == 0 else -1
            where = ("the start mark, rear right wheel on it" if direction > 0
                     else "the end mark")
            self._confirm(Step("still", "Roll %d/%d: stand the walker at %s, still."
                               % (k + 1, self.rolls, where)))
            try:
                e0 = rd.wait_encoder_still(show)
            except CalibrationStepError as exc:
                self._refused(exc)
                continue
            self._confirm(Step("roll", "Roll %d/%d: roll it %s in a straight line, %g m, "
                               "to the %s mark, and stop." % (
                                   k + 1, self.rolls, "forward" if direction > 0 else "back",
                                   self.distance_m, "end" if direction > 0 else "start"),
                               distance_m=self.distance_m, direction=direction),
                          "press Enter when it stands at the mark")
            try:
                e1 = rd.wait_encoder_still(show)
                ticks = e1 - e0
                if abs(ticks) < 10:
                    raise CalibrationStepError("the wheel did not turn (%d ticks)" % ticks)
                if k and abs(abs(ticks) / abs(rolls[0]) - 1) > 0.02:
                    raise CalibrationStepError(
                        "this roll gave %d ticks, the first %d (%.1f %% apart); roll "
                        "straight, without slipping, and again"
                        % (abs(ticks), abs(rolls[0]),
                           100 * abs(abs(ticks) / abs(rolls[0]) - 1)))
            except CalibrationStepError as exc:
                self._refused(exc)
                continue
            ui.say("  %d ticks over %g m (%.4f m at the nominal wheel)"
                   % (abs(ticks), self.distance_m, abs(ticks) * nominal_mpt))
            rolls.append(ticks)
        return encoder_rolls(rolls, self.distance_m)

    def run(self, procedure: str) -> FitResult:
        if procedure == "load":
            return self.load()[0]
        if procedure == "accel":
            return self.accel()
        if procedure == "encoder":
            return self.encoder()
        raise UserError("unknown procedure %r (one of %s)" % (procedure, ", ".join(PROCEDURES)))


def describe_result(fit: FitResult, calibration: WalkerCalibration) -> list[str]:
    """Lines showing a fit: constants with standard errors, residuals, worst residual."""
    v, se = fit.values, fit.stderr
    lines = ["%s, %s" % (fit.procedure, fit.date)]
    if fit.kind == "load":
        off_se = se.get("load_offsets_counts", [float("nan")] * 4)
        for c in range(4):
            g = v["load_gains_counts_per_n"][c]
            gse = se["load_gains_counts_per_n"][c]
            lines.append("  %-17s gain %8.1f +- %.1f counts/N (%.3f %%), offset %.0f +- %.0f "
                         "counts (%.3f N)" % (CELL_NAMES[c], g, gse, 100 * gse / g,
                                              v["load_offsets_counts"][c], off_se[c],
                                              off_se[c] / g))
    elif fit.kind == "accel":
        for a, name in enumerate("xyz"):
            lines.append("  %s: bias %+.2f counts (%+.4f g), scale %.2f counts/g, +- %.4f g"
                         % (name, v["accel_bias_counts"][a],
                            v["accel_bias_counts"][a] / v["accel_counts_per_g"][a],
                            v["accel_counts_per_g"][a], se["accel_bias_g"][a]))
    elif fit.kind == "encoder":
        per_m, per_m_se = v["ticks_per_m"][0], se["ticks_per_m"][0]
        lines.append("  %.2f +- %.2f ticks/m (%.3f %%): wheel diameter %.4f m at %d ticks/rev"
                     % (per_m, per_m_se, 100 * per_m_se / per_m, calibration.wheel_diameter_m,
                        calibration.encoder_ticks_per_rev))
        lines.append("  rolls differ by %.2f %%" % (100 * v["roll_difference"]))
    lines.append("  residuals (%s): %s" % (fit.residual_unit, " ".join(
        "%+.3f" % r for r in fit.residuals)))
    lines.append("  largest residual %.4f %s" % (fit.max_residual, fit.residual_unit))
    return lines


def write_calibration_to_walker(link, calibration: WalkerCalibration,
                                timeout_s: float = 3.0, attempts: int = 3) -> dict:
    """Store `calibration` in the flash of the walker on the open `link` (CAL_WRITE);
    returns what the walker then reports. UserError if it refuses or never answers."""
    from host.link import QueueSink

    fields, date_s = to_walker(calibration)
    payload = wire.pack_calibration(fields, date_s)
    expected = wire.unpack_calibration(payload)
    sink = QueueSink()
    link.add_sink(sink)
    for _ in range(attempts):
        link.send_command(wire.CMD_CAL_WRITE, payload)
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            for batch in sink.drain():
                for event in batch.events:
                    if event.kind == "nak" and event.detail == "CAL_WRITE":
                        raise UserError("walker %s refused the calibration (its firmware "
                                        "cannot store one, or the values are out of range)"
                                        % calibration.walker_id)
            if link.walker_calibration == expected:
                return expected
            time.sleep(0.02)
    raise UserError("walker %s did not confirm the calibration written to it"
                    % calibration.walker_id)


def run_calibration(port: str, procedure: str, ui, store: CalibrationStore,
                    technician=None, out: str | None = None, masses_kg=(10.0, 20.0),
                    distance_m: float = 5.0, save: bool | None = None,
                    write_to_walker: bool = False, overwrite: bool = False
                    ) -> tuple[WalkerCalibration, FitResult]:
    """Open the walker on `port`, run `procedure` with `ui`, and store the result.

    save: True/False, or None to ask the user. out: also write the calibration there
    (a new file unless overwrite). Returns the new calibration and the fit.
    """
    from host.link import SerialLink

    if procedure not in PROCEDURES:
        raise UserError("unknown procedure %r (one of %s)" % (procedure, ", ".join(PROCEDURES)))
    if out:
        check_free(out, overwrite)  # before the technician does any step
    link = SerialLink(port)
    link.open()
    try:
        readings = LiveReadings(link)
        info = readings.wait_info()
        walker_id = info["walker_id"]
        base = store.current(walker_id, info.get("calibration"))
        ui.say("walker %s on %s, firmware %s; its calibration: %s"
               % (walker_id, port, info.get("firmware_version", "?"), base.source))
        guided = GuidedCalibration(readings, ui, technician, masses_kg, distance_m)
        fit = guided.run(procedure)
        new = apply(base, fit)
        ui.say("")
        for line in describe_result(fit, new):
            ui.say(line)
        if save is None:
            answer = ui.ask("save this calibration for walker %s? (y/n)" % walker_id, "y")
            save = answer.lower().startswith("y")
        if not save:
            ui.say("not saved")
            return new, fit
        record = store.save(new, fit)
        ui.say("saved %s (history: %s)" % (store.current_path(walker_id), record))
        if out:
            with exclusive_output(out, overwrite=overwrite) as tmp:
                new.save(tmp)
            ui.say("written to %s" % out)
        if write_to_walker:
            write_calibration_to_walker(link, new)
            ui.say("written to the walker's flash; it reports it with its identity")
        return new, fit
    finally:
        link.close()
