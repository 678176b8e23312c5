"""Calibration commands: guided calibration of a walker, its history, and recalibrating a recording.

Each command is a thin layer over a library call; `register` adds them to the
`walkerlab` parser.
"""
from __future__ import annotations

import argparse
import math
import os
import sys

from host.cli.common import pos_float, print_json
from host.errors import UserError


def _masses(text: str) -> list[float]:
    try:
        masses = [float(m) for m in text.split(",") if m.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("masses are kg separated by commas, got %r" % text)
    if not masses or not all(math.isfinite(m) and 0 < m < 200 for m in masses):
        raise argparse.ArgumentTypeError("masses must be between 0 and 200 kg, got %r" % text)
    return masses


def cmd_calibrate(args) -> int:
    from calibration import CalibrationError
    from host.calibrate import CalibrationStore, TerminalUI, run_calibration

    store = CalibrationStore(args.store)
    try:
        if args.procedure == "history":
            return _calibration_history(store, args)
        if args.walker:
            raise UserError("a walker id goes with `calibrate history`; the walker to "
                            "calibrate is the one on --port (got %r)" % args.walker)
        if args.gui:
            from host.gui.calibration_wizard import run_wizard
            wizard_args = dict(store=store, masses_kg=args.masses, distance_m=args.distance,
                               screenshots=args.screenshots)
            if args.port:
                return run_wizard(args.procedure, args.port, **wizard_args)
            from host.virtual_port import bench_walker, virtual_flash

            walker, technician, _ = bench_walker(args.seed, speed=args.speed,
                                                 storage=virtual_flash("SIM-%d" % args.seed))
            with walker:
                return run_wizard(args.procedure, walker.path, technician=technician,
                                  **wizard_args)
        ui = TerminalUI()
        kwargs = dict(out=args.out, masses_kg=args.masses, distance_m=args.distance,
                      save=True if args.yes else None,
                      write_to_walker=args.write_to_walker, overwrite=args.overwrite)
        if args.port:
            run_calibration(args.port, args.procedure, ui, store, **kwargs)
            return 0
        from host.virtual_port import bench_walker, virtual_flash

        walker, technician, _ = bench_walker(args.seed, speed=args.speed,
                                             storage=virtual_flash("SIM-%d" % args.seed))
        with walker:
            print("no port given: calibrating virtual walker SIM-%d on a calibration bench "
                  "(%s); its technician does each step as you confirm it"
                  % (args.seed, walker.path), file=sys.stderr)
            run_calibration(walker.path, args.procedure, ui, store, technician=technician,
                            **kwargs)
        return 0
    except CalibrationError as exc:
        raise UserError(str(exc)) from None


def _calibration_history(store, args) -> int:
    if not args.walker:
        raise UserError("which walker? `walkerlab calibrate history WALKER_ID`")
    records = store.history(args.walker)
    if args.json:
        print_json([{k: r[k] for k in ("date", "procedure", "result", "calibration",
                                        "path")} for r in records])
        return 0
    if not records:
        print("no calibrations of walker %s in %s" % (args.walker, store.root))
        return 0
    current = store.current_path(args.walker)
    print("calibrations of walker %s (%s; current: %s)" % (args.walker, store.root, current))
    for r in records:
        res = r["result"]
        print("%s  %-36s largest residual %.4g %s  %s" % (
            r["date"], r["procedure"], res["max_residual"], res["residual_unit"],
            os.path.basename(r["path"])))
    return 0


def cmd_recalibrate(args) -> int:
    from calibration import CalibrationError, WalkerCalibration
    from host.recording.recalibrate import recalibrate

    try:
        cal = WalkerCalibration.load(args.calibration)
    except CalibrationError as exc:
        raise UserError(str(exc)) from None
    written = recalibrate(args.file, cal, out=args.out, overwrite=args.overwrite,
                          any_walker=args.any_walker)
    print("%s: physical values now from %s (%s); raw data unchanged"
          % (written, args.calibration, cal.source), file=sys.stderr)
    return 0


def register(sub) -> None:
    """Add the calibrate commands to the subparsers ``sub``."""
    p = sub.add_parser("calibrate", help="calibrate a walker's load cells, accelerometer "
                       "or encoder, step by step (a virtual walker if no port)",
                       description="Guided calibration. Each step says what to do, waits "
                       "for a steady reading, and refuses a bad step with the reason. "
                       "Results go to the per-walker store (current calibration + "
                       "history); `calibrate history WALKER` lists them.")
    p.add_argument("procedure", choices=("load", "accel", "encoder", "history"),
                   help="load cells, accelerometer, wheel encoder, or the history of a "
                   "walker's calibrations")
    p.add_argument("walker", nargs="?", help="walker id (for history)")
    p.add_argument("--port", help="serial port of the walker (default: a virtual walker "
                   "on a calibration bench)")
    p.add_argument("--out", metavar="FILE.json", help="also write the calibration here")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.add_argument("--store", metavar="DIR", default=None,
                   help="calibration store (default $WALKERLAB_CALIBRATION_DIR or "
                   "~/.config/walkerlab/calibration)")
    p.add_argument("--masses", type=_masses, default=[10.0, 20.0], metavar="KG,KG",
                   help="known masses put over each leg in turn (default 10,20)")
    p.add_argument("--distance", type=pos_float, default=5.0, metavar="M",
                   help="measured roll distance for the encoder (default 5 m)")
    p.add_argument("--yes", action="store_true", help="save without asking")
    p.add_argument("--write-to-walker", action="store_true",
                   help="also store the calibration in the walker's flash")
    p.add_argument("--gui", action="store_true", help="the step-by-step wizard window")
    p.add_argument("--screenshots", metavar="DIR", default=None,
                   help="(--gui) save a picture of each wizard step here")
    p.add_argument("--seed", type=int, default=0, help="which virtual walker (SIM-SEED)")
    p.add_argument("--speed", type=pos_float, default=1.0,
                   help="virtual walker's device seconds per real second (default 1)")
    p.add_argument("--json", action="store_true", help="(history) as JSON")
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("recalibrate", help="derive a recording's physical values with "
                       "another calibration (raw data unchanged)")
    p.add_argument("file", metavar="FILE.h5", help="the recording")
    p.add_argument("--calibration", required=True, metavar="C.json",
                   help="the calibration to use (walkerlab calibrate writes them)")
    p.add_argument("--out", metavar="NEW.h5", default=None,
                   help="write a recalibrated copy here (default: replace FILE.h5 "
                   "atomically; its previous calibration is kept in its history)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.add_argument("--any-walker", action="store_true",
                   help="accept a calibration of another walker")
    p.set_defaults(func=cmd_recalibrate)
