"""Live commands: a walker on a serial port (or a virtual one), and recordings made from it.

Each command is a thin layer over a library call; `register` adds them to the
`walkerlab` parser.
"""
from __future__ import annotations

import signal
import sys

from device.sim.activities import COURSES, DEMO_SEED
from host.cli.common import (
    has_display,
    load_model_or_default,
    nonneg_float,
    pos_float,
    print_json,
    probability,
    rate_hz,
)
from host.errors import UserError
from host.link import ANSWER_TIMEOUT_S


def cmd_virtual_walker(args) -> int:
    from device.sim.virtual_walker import FaultConfig, PtyServer, VirtualWalker

    storage = None
    if args.flash_dir:
        import os

        from device.firmware.storage import FileStorage

        os.makedirs(args.flash_dir, exist_ok=True)
        storage = FileStorage(args.flash_dir)
    walker = VirtualWalker(args.course, args.seed, args.rate, repeat=True,
                           label_jitter_s=args.label_jitter, storage=storage,
                           factory_flash=True)
    faults = FaultConfig(corrupt_rate=args.corrupt_rate, drop_rate=args.drop_rate,
                         disconnect_every_s=args.disconnect_every,
                         disconnect_duration_s=args.disconnect_duration,
                         stall_every_s=args.stall_every,
                         stall_duration_s=args.stall_duration, seed=args.seed)
    server = PtyServer(walker, faults, path=args.link)
    stop = {"flag": False}

    def _stop(*_):
        stop["flag"] = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    with server:
        print(server.path, flush=True)
        print("virtual walker %s, course %s, seed %d, %d Hz; Ctrl-C to stop"
              % (walker.board.walker_id, args.course, args.seed, args.rate),
              file=sys.stderr, flush=True)
        server.serve(duration_s=args.duration, should_stop=lambda: stop["flag"])
    return 0


def cmd_monitor(args) -> int:
    from host.headless_monitor import run_headless_monitor
    from host.virtual_port import BackgroundVirtualWalker

    if args.after is not None and not args.screenshot:
        raise UserError("--after goes with --screenshot FILE.png")
    if args.after is not None and args.after < 0:
        raise UserError("--after must not be negative")
    if not args.headless:
        if has_display() or sys.platform in ("win32", "darwin"):
            from host.gui.app import run_monitor
            from host.workbench.app import open_workbench

            return run_monitor(port=args.port, model_path=args.model,
                               screenshot=args.screenshot, after_s=args.after,
                               course=args.course, seed=args.seed,
                               duration_s=args.duration, replay=args.replay,
                               speed=args.speed, workbench_opener=open_workbench)
        if args.screenshot or args.replay:
            raise UserError("--%s needs a display (or QT_QPA_PLATFORM=offscreen)"
                            % ("screenshot" if args.screenshot else "replay"))
        print("no display: showing the terminal monitor (use --headless to skip this "
              "message)", file=sys.stderr)
    elif args.screenshot or args.replay:
        raise UserError("--%s is for the window: drop --headless (`walkerlab replay FILE` "
                        "replays without one)" % ("screenshot" if args.screenshot
                                                  else "replay"))
    recognizer = load_model_or_default(args.model, default=True)
    if args.port:
        run_headless_monitor(args.port, recognizer, duration_s=args.duration)
        return 0
    with BackgroundVirtualWalker(course=args.course, seed=args.seed) as walker:
        print("no port given: monitoring a virtual walker on %s" % walker.path,
              file=sys.stderr)
        run_headless_monitor(walker.path, recognizer, duration_s=args.duration)
    return 0


def cmd_record(args) -> int:
    from host.record import record_session

    health = record_session(args.port, args.out, args.duration, subject_id=args.subject,
                            notes=args.notes, rate_hz=args.rate, overwrite=args.overwrite,
                            progress=not args.quiet, answer_timeout_s=args.answer_timeout)
    if health["interrupted"]:
        if not health["kept"]:
            print("interrupted after %.1f s, before any frame arrived: no file written"
                  % health["recorded_s"], file=sys.stderr)
            return 130
        print("interrupted: kept %.1f s of %g s in %s (%d frames, %d CRC errors, %d "
              "sequence gaps, %d reconnects)"
              % (health["recorded_s"], args.duration, args.out, health["frames"],
                 health["crc_errors"], health["seq_gaps"], health["reconnects"]),
              file=sys.stderr)
    else:
        print("recorded %s: %d frames, %d CRC errors, %d sequence gaps, %d reconnects"
              % (args.out, health["frames"], health["crc_errors"], health["seq_gaps"],
                 health["reconnects"]), file=sys.stderr)
    if not health.get("info_received", True):
        print("WARNING: the walker never sent its INFO frame (identity and calibration); "
              "attach them with: walkerlab recover %s --calibration FILE" % args.out,
              file=sys.stderr)
    return 130 if health["interrupted"] else 0


def cmd_replay(args) -> int:
    from collections import Counter

    from host.replay import replay_recording

    recognizer = load_model_or_default(args.model)
    rec, result = replay_recording(args.file, recognizer, speed=args.speed)
    summary = {
        "file": args.file, "frames": result.frames, "samples": len(result.t_s),
        "duration_s": float(result.t_s[-1] - result.t_s[0]) if len(result.t_s) else 0.0,
        "elapsed_s": result.elapsed_s,
        "frames_per_s": result.frames / result.elapsed_s if result.elapsed_s else 0.0,
        "features": list(result.feature_names),
    }
    if result.posterior is not None:
        predicted = result.predicted()
        summary["predicted"] = dict(sorted(Counter(predicted.tolist()).items()))
        if rec.labels:
            track = "simulator" if "simulator" in rec.labels else sorted(rec.labels)[0]
            truth = rec.labels_per_sample(track)  # replay yields the recorded samples
            mask = truth != ""
            summary["accuracy_vs_" + track] = float((predicted[mask] == truth[mask]).mean()) \
                if mask.any() else None
    if args.json:
        print_json(summary)
    else:
        for key, value in summary.items():
            print("%-22s %s" % (key, value))
    return 0


def cmd_recover(args) -> int:
    from host.recording import recover

    calibration = None
    if args.calibration:
        from calibration import CalibrationError, WalkerCalibration

        try:
            calibration = WalkerCalibration.load(args.calibration)
        except CalibrationError as exc:
            raise UserError(str(exc)) from None
    report = recover(args.file, args.out, overwrite=args.overwrite, calibration=calibration)
    print(describe_recovery(report))
    return 0


def describe_recovery(report) -> str:
    """A RecoverReport in words: what was rebuilt from what, and what was odd."""
    text = ("%s: %d samples (%d before) in %d frames, rebuilt from %d bytes of raw log "
            "in %d reads" % (report.path, report.samples, report.samples_before,
                             report.frames, report.raw_bytes, report.reads))
    notes = []
    if report.salvaged_from:
        notes.append("salvaged from a damaged file of %d bytes" % report.salvaged_from)
    if report.left_out:
        notes.append("left out as unreadable: " + ", ".join(report.left_out))
    if report.ignored_reads:
        notes.append("%d reads past the end of the log ignored (the writer stopped "
                     "mid-write)" % report.ignored_reads)
    if report.trailing_bytes:
        notes.append("%d trailing bytes decoded as one more read" % report.trailing_bytes)
    counts = ["%s %s" % (v, k.replace("_", " ")) for k, v in sorted(report.counters.items())
              if v]
    if counts:
        notes.append("link: " + ", ".join(counts))
    return text + "".join("; " + n for n in notes)


def cmd_ports(args) -> int:
    from serial.tools import list_ports

    ports = list(list_ports.comports())
    for port in ports:
        print("%s\t%s" % (port.device, port.description))
    if not ports:
        print("no serial ports found; `walkerlab virtual-walker` serves a simulated one",
              file=sys.stderr)
    return 0


def register(sub) -> None:
    """Add the live commands to the subparsers ``sub``."""
    p = sub.add_parser("virtual-walker",
                       help="serve a simulated walker on a pseudo-terminal",
                       description="Serve a simulated walker on a pseudo-terminal. The "
                       "first line of stdout is the serial port path.")
    p.add_argument("--course", choices=COURSES, default="free",
                   help="activities the simulated person does (default: free, endless)")
    p.add_argument("--seed", type=int, default=0, help="seed of the simulated person")
    p.add_argument("--rate", type=rate_hz, default=50, help="sample rate in Hz")
    p.add_argument("--corrupt-rate", type=probability, default=0.0,
                   help="probability that a sent byte gets a bit flipped")
    p.add_argument("--drop-rate", type=probability, default=0.0,
                   help="probability that a sent byte is lost")
    p.add_argument("--disconnect-every", type=nonneg_float, default=0.0, metavar="SECONDS",
                   help="pull the virtual USB cable this often (0: never)")
    p.add_argument("--disconnect-duration", type=nonneg_float, default=1.0, metavar="SECONDS",
                   help="how long the cable stays out (default 1)")
    p.add_argument("--stall-every", type=nonneg_float, default=0.0, metavar="SECONDS",
                   help="freeze the firmware this often (0: never)")
    p.add_argument("--stall-duration", type=nonneg_float, default=3.0, metavar="SECONDS",
                   help="how long the firmware stays frozen (default 3)")
    p.add_argument("--label-jitter", type=nonneg_float, default=0.0, metavar="SECONDS",
                   help="human-like jitter of ground-truth activity boundaries")
    p.add_argument("--link", default=None, help="path of the port symlink to create")
    p.add_argument("--flash-dir", default=None, metavar="DIR",
                   help="keep the walker's flash (a deployed model) in DIR across runs "
                   "(default: in memory)")
    p.add_argument("--duration", type=pos_float, default=None, help="stop after SECONDS")
    p.set_defaults(func=cmd_virtual_walker)

    p = sub.add_parser("monitor", help="watch a walker live (a virtual one if no port)")
    p.add_argument("--port", help="serial port of the walker (default: a virtual walker)")
    p.add_argument("--model", help="a saved recognizer to run live (default: the last one "
                   "used, else the model shipped with WalkerLab)")
    p.add_argument("--headless", action="store_true", help="terminal view, no window")
    p.add_argument("--course", choices=COURSES, default="free",
                   help="course of the virtual walker")
    p.add_argument("--seed", type=int, default=DEMO_SEED,
                   help="seed of the virtual walker's person (default %d)" % DEMO_SEED)
    p.add_argument("--duration", type=pos_float, default=None, help="stop after SECONDS")
    p.add_argument("--screenshot", metavar="FILE.png", default=None,
                   help="save a picture of the window and quit (with --after)")
    p.add_argument("--after", type=nonneg_float, default=None, metavar="SECONDS",
                   help="take the --screenshot this many seconds after start (default 5)")
    p.add_argument("--replay", metavar="FILE.h5", default=None,
                   help="open a recording and replay it in the window")
    p.add_argument("--speed", type=pos_float, default=1.0,
                   help="replay speed, times real time (default 1)")
    p.set_defaults(func=cmd_monitor)

    p = sub.add_parser("record", help="record a session from a walker to HDF5")
    p.add_argument("--port", required=True, help="serial port of the walker")
    p.add_argument("--duration", type=pos_float, required=True, help="seconds to record")
    p.add_argument("--out", required=True, help="recording file (.h5) to create")
    p.add_argument("--subject", default="", help="subject id")
    p.add_argument("--notes", default="", help="free-text notes stored in the file")
    p.add_argument("--rate", type=rate_hz, default=None,
                   help="ask the walker for this sample rate (Hz)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing file")
    p.add_argument("--answer-timeout", type=pos_float, default=ANSWER_TIMEOUT_S,
                   metavar="SECONDS",
                   help="give up on a port that sends not one byte for this long "
                        "(default %g; a walker that answers is never cut off for being "
                        "slow)" % ANSWER_TIMEOUT_S)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_record)

    p = sub.add_parser("replay", help="replay a recording through the live pipeline")
    p.add_argument("file", help="recording (.h5)")
    p.add_argument("--model", help="a saved recognizer")
    p.add_argument("--speed", type=nonneg_float, default=0.0,
                   help="times real time (default 0: as fast as possible)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("recover", help="rebuild a recording's frames from its raw byte log")
    p.add_argument("file", help="recording (.h5)")
    p.add_argument("--out", default=None, help="write the recovered copy here "
                   "(default: rebuild in place; the raw log is never touched)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.add_argument("--calibration", default=None, metavar="FILE",
                   help="attach this walker calibration (JSON) first: for recordings whose "
                   "walker INFO frame never arrived")
    p.set_defaults(func=cmd_recover)

    p = sub.add_parser("ports", help="list serial ports")
    p.set_defaults(func=cmd_ports)
