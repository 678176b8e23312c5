"""Per-walker calibration: counts -> physical units, and the walker's geometry.

A calibration is a small versioned JSON file, one per walker, so it can be redone
without touching recordings (which keep raw counts). A missing or malformed file
is a CalibrationError naming the file and the field.
"""
from __future__ import annotations

import json
import math
import os
import pathlib
from dataclasses import asdict, dataclass, field, fields

CALIBRATION_FORMAT = "walkerlab-calibration"
CALIBRATION_VERSION = 2  # 2 added 'results'; version 1 files are still read
READABLE_VERSIONS = (1, 2)
GRAVITY = 9.80665

# Nominal hardware of a WalkerLab walker (and of the virtual walker):
# HX711 at gain 128 reads +-20 mV over +-2**23 counts; a 50 kg, 2 mV/V cell excited at
# 5 V gives 10 mV at 490 N, so about 2**22 / 490 = 8560 counts per newton.
NOMINAL_LOAD_GAIN_COUNTS_PER_N = 8560.0
NOMINAL_ACCEL_COUNTS_PER_G = 256.0  # ADXL345 full resolution
NOMINAL_ENCODER_TICKS_PER_REV = 256
NOMINAL_WHEEL_DIAMETER_M = 0.2
# Thesis eq 6.3: front load cells 21.25 cm, rear 26.6 cm from the midline.
FRONT_HALF_WIDTH_M = 0.2125
REAR_HALF_WIDTH_M = 0.266
WHEELBASE_M = 0.45


class CalibrationError(ValueError):
    """A calibration file that is missing, unreadable or has a bad field."""


def _finite_number(value) -> bool:
    """A JSON number that is finite as a float (an integer of 400 digits is not:
    math.isfinite raises OverflowError on it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


@dataclass
class WalkerCalibration:
    walker_id: str = "virtual"
    load_offsets_counts: list[float] = field(default_factory=lambda: [0.0] * 4)
    load_gains_counts_per_n: list[float] = field(
        default_factory=lambda: [NOMINAL_LOAD_GAIN_COUNTS_PER_N] * 4)
    accel_bias_counts: list[float] = field(default_factory=lambda: [0.0] * 3)
    accel_counts_per_g: list[float] = field(
        default_factory=lambda: [NOMINAL_ACCEL_COUNTS_PER_G] * 3)
    encoder_ticks_per_rev: int = NOMINAL_ENCODER_TICKS_PER_REV
    wheel_diameter_m: float = NOMINAL_WHEEL_DIAMETER_M
    front_half_width_m: float = FRONT_HALF_WIDTH_M
    rear_half_width_m: float = REAR_HALF_WIDTH_M
    wheelbase_m: float = WHEELBASE_M
    # Below this total load the COP is undefined (nobody leans on the walker).
    min_total_load_n: float = 20.0
    source: str = "nominal"
    # How each part was obtained: {"load"|"accel"|"encoder": {procedure, date, values,
    # stderr, residuals, residual_unit, max_residual}} (calibration/procedures.py).
    results: dict = field(default_factory=dict)

    @property
    def metres_per_tick(self) -> float:
        return math.pi * self.wheel_diameter_m / self.encoder_ticks_per_rev

    def validate(self, where: str = "calibration") -> "WalkerCalibration":
        def bad(name: str, why: str) -> CalibrationError:
            return CalibrationError("%s: field '%s' %s" % (where, name, why))

        for name, n in (("load_offsets_counts", 4), ("load_gains_counts_per_n", 4),
                        ("accel_bias_counts", 3), ("accel_counts_per_g", 3)):
            value = getattr(self, name)
            if (not isinstance(value, (list, tuple)) or len(value) != n
                    or not all(_finite_number(v) for v in value)):
                raise bad(name, "must be a list of %d finite numbers" % n)
            setattr(self, name, [float(v) for v in value])
        for name in ("load_gains_counts_per_n", "accel_counts_per_g"):
            if any(v == 0 for v in getattr(self, name)):
                raise bad(name, "must not contain zero")
        for name in ("wheel_diameter_m", "front_half_width_m", "rear_half_width_m",
                     "wheelbase_m", "min_total_load_n"):
            value = getattr(self, name)
            if not _finite_number(value) or value <= 0:
                raise bad(name, "must be a positive number")
        if (not isinstance(self.encoder_ticks_per_rev, int)
                or isinstance(self.encoder_ticks_per_rev, bool)
                or not 0 < self.encoder_ticks_per_rev < 2**31):
            raise bad("encoder_ticks_per_rev", "must be a positive integer below 2^31")
        if not isinstance(self.walker_id, str) or not self.walker_id:
            raise bad("walker_id", "must be a non-empty string")
        if not isinstance(self.results, dict) or not all(
                isinstance(k, str) and isinstance(v, dict) for k, v in self.results.items()):
            raise bad("results", "must map procedure names to objects")
        return self

    def to_dict(self) -> dict:
        return {"format": CALIBRATION_FORMAT, "version": CALIBRATION_VERSION, **asdict(self)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: dict, where: str = "calibration") -> "WalkerCalibration":
        if not isinstance(data, dict) or data.get("format") != CALIBRATION_FORMAT:
            raise CalibrationError("%s: not a WalkerLab calibration (field 'format')" % where)
        if data.get("version") not in READABLE_VERSIONS:
            raise CalibrationError("%s: field 'version' is %r; this WalkerLab reads versions %s"
                                   % (where, data.get("version"),
                                      ", ".join(map(str, READABLE_VERSIONS))))
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known - {"format", "version"})
        if unknown:
            raise CalibrationError("%s: unknown field '%s'" % (where, unknown[0]))
        missing = sorted(known - set(data) - {"source", "results"})
        if missing:
            raise CalibrationError("%s: field '%s' is missing" % (where, missing[0]))
        return cls(**{k: v for k, v in data.items() if k in known}).validate(where)

    @classmethod
    def from_json(cls, text: str, where: str = "calibration") -> "WalkerCalibration":
        try:
            data = json.loads(text)
        except ValueError as exc:  # JSONDecodeError, or an integer of > 4300 digits
            raise CalibrationError("%s: not valid JSON (%s)" % (where, exc)) from None
        except RecursionError:
            raise CalibrationError("%s: not a calibration (JSON nested too deeply)"
                                   % where) from None
        return cls.from_dict(data, where)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "WalkerCalibration":
        path = pathlib.Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise CalibrationError("%s: not a text file" % path) from None
        except FileNotFoundError:
            raise CalibrationError("%s: calibration file not found" % path) from None
        except OSError as exc:
            raise CalibrationError("%s: cannot read (%s)" % (path, exc.strerror)) from None
        return cls.from_json(text, str(path))

    def save(self, path: str | os.PathLike) -> None:
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(self.to_json())
        os.replace(tmp, path)  # never leave a half-written calibration behind


def calibration_dir() -> pathlib.Path:
    """Where per-walker calibrations live ($WALKERLAB_CALIBRATION_DIR overrides)."""
    env = os.environ.get("WALKERLAB_CALIBRATION_DIR")
    if env:
        return pathlib.Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return pathlib.Path(base) / "walkerlab" / "calibration"


# Fallbacks for walkers with no stored file, as ``source(walker_id) -> calibration or
# None``. The virtual walker registers its factory calibration here when the simulator
# is loaded (device/sim/factory_calibration.py): calibration/ never imports the
# simulator, and a real walker's constants never come from simulator code.
_SOURCES: list = []


def register_calibration_source(source) -> None:
    """Consult ``source(walker_id)`` (returns a WalkerCalibration or None) for walkers
    that have no stored calibration file, before falling back on nominal values."""
    if source not in _SOURCES:
        _SOURCES.append(source)


def calibration_date(calibration: WalkerCalibration) -> float | None:
    """Unix time of the latest procedure in `results`, or None (a hand-made file)."""
    import datetime as _dt

    latest = None
    for result in calibration.results.values():
        try:
            t = _dt.datetime.fromisoformat(str(result.get("date", ""))).timestamp()
        except ValueError:
            continue
        latest = t if latest is None else max(latest, t)
    return latest


def from_walker(reported: dict, walker_id: str) -> WalkerCalibration:
    """The calibration a walker reported (device.protocol.wire.unpack_calibration)."""
    import datetime as _dt

    names = [f.name for f in fields(WalkerCalibration)]
    values = {k: reported[k] for k in names if k in reported}
    date = _dt.datetime.fromtimestamp(int(reported.get("date_s", 0)), _dt.timezone.utc)
    stamp = date.isoformat(timespec="seconds")
    cal = WalkerCalibration(walker_id=walker_id, **values,
                            source="walker's flash, written %s" % stamp)
    return cal.validate("calibration reported by walker %s" % walker_id)


def to_walker(calibration: WalkerCalibration) -> tuple[dict, int]:
    """(fields for device.protocol.wire.pack_calibration, date in unix seconds)."""
    import time as _time

    d = asdict(calibration)
    date = calibration_date(calibration)
    return d, int(date if date is not None else _time.time())


def stored_calibration_path(walker_id: str, directory=None) -> pathlib.Path:
    """Where walker_id's calibration file is (in `directory`, default calibration_dir())."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in walker_id) or "walker"
    return (pathlib.Path(directory) if directory is not None else calibration_dir()) / (
        safe + ".json")


def calibration_for(walker_id: str, reported: dict | None = None,
                    use_sources: bool = True, directory=None) -> WalkerCalibration:
    """A walker's calibration: the newer of its stored file and the one it `reported`
    from its flash (the INFO's CALIBRATION frame; a file without dated results counts
    by its modification time); with neither, one from a registered source (a virtual
    walker's factory calibration) when `use_sources`, else nominal values (an
    uncalibrated walker). Live paths pass use_sources=False: a connected walker's
    constants come from the walker or this computer's file, never from simulator code."""
    path = stored_calibration_path(walker_id, directory)
    stored = WalkerCalibration.load(path) if path.exists() else None
    walker = from_walker(reported, walker_id) if reported else None
    if stored is not None and walker is not None:
        t_file = calibration_date(stored)
        if t_file is None:
            t_file = path.stat().st_mtime
        return walker if reported.get("date_s", 0) > t_file else stored
    if stored is not None or walker is not None:
        return stored if stored is not None else walker
    if use_sources:
        for source in _SOURCES:
            found = source(walker_id)
            if found is not None:
                return found
    return WalkerCalibration(walker_id=walker_id)
