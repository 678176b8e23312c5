"""`walkerlab`: the command line. Each subcommand is a thin layer over a library call.

User mistakes raise UserError (or the library's ValueError subclasses listed in
USER_ERRORS) and end as one line on stderr with exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import signal
import sys

from host.errors import UserError, user_errors


def _positive_rate(text: str) -> int:
    from device.protocol import wire

    rate = int(text)
    if not wire.MIN_RATE_HZ <= rate <= wire.MAX_RATE_HZ:
        raise argparse.ArgumentTypeError(
            "rate must be %d-%d Hz" % (wire.MIN_RATE_HZ, wire.MAX_RATE_HZ))
    return rate


def _probability(text: str) -> float:
    p = float(text)
    if not 0.0 <= p <= 1.0:
        raise argparse.ArgumentTypeError("must be a probability between 0 and 1")
    return p


def cmd_virtual_walker(args) -> int:
    from device.sim.virtual_walker import FaultConfig, PtyServer, VirtualWalker

    walker = VirtualWalker(args.course, args.seed, args.rate, repeat=True,
                           label_jitter_s=args.label_jitter)
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


def cmd_simulate(args) -> int:
    from host.simulate import simulate_to_files

    paths = simulate_to_files(args.course, args.subjects, args.seed, args.out,
                              rate_hz=args.rate, duration_s=args.duration,
                              label_jitter_s=args.label_jitter, overwrite=args.overwrite,
                              progress=not args.quiet)
    for path in paths:
        print(path)
    return 0


def _has_display() -> bool:
    import os

    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                or os.environ.get("QT_QPA_PLATFORM") == "offscreen")


def _load_model(path):
    if path is None:
        return None
    from recognizers import load_recognizer

    return load_recognizer(path)


def cmd_monitor(args) -> int:
    from host.headless_monitor import run_headless_monitor
    from host.virtual_port import BackgroundVirtualWalker

    if args.after is not None and not args.screenshot:
        raise UserError("--after goes with --screenshot FILE.png")
    if args.after is not None and args.after < 0:
        raise UserError("--after must not be negative")
    if not args.headless:
        if _has_display() or sys.platform in ("win32", "darwin"):
            from host.gui.app import run_monitor

            return run_monitor(port=args.port, model_path=args.model,
                               screenshot=args.screenshot, after_s=args.after,
                               course=args.course, seed=args.seed,
                               duration_s=args.duration, replay=args.replay,
                               speed=args.speed)
        if args.screenshot or args.replay:
            raise UserError("--%s needs a display (or QT_QPA_PLATFORM=offscreen)"
                            % ("screenshot" if args.screenshot else "replay"))
        print("no display: showing the terminal monitor (use --headless to skip this "
              "message)", file=sys.stderr)
    elif args.screenshot or args.replay:
        raise UserError("--%s is for the window: drop --headless (`walkerlab replay FILE` "
                        "replays without one)" % ("screenshot" if args.screenshot
                                                  else "replay"))
    recognizer = _load_model(args.model)
    if args.port:
        run_headless_monitor(args.port, recognizer, duration_s=args.duration)
        return 0
    with BackgroundVirtualWalker(course=args.course, seed=args.seed) as walker:
        print("no port given: monitoring a virtual walker on %s" % walker.path,
              file=sys.stderr)
        run_headless_monitor(walker.path, recognizer, duration_s=args.duration)
    return 0


def cmd_ports(args) -> int:
    from serial.tools import list_ports

    ports = list(list_ports.comports())
    for port in ports:
        print("%s\t%s" % (port.device, port.description))
    if not ports:
        print("no serial ports found; `walkerlab virtual-walker` serves a simulated one",
              file=sys.stderr)
    return 0


def _json_safe(value):
    """NaN/inf (e.g. precision with no predicted transitions) become null: valid JSON."""
    import math

    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:  # numpy scalar
        return _json_safe(value.item())
    if hasattr(value, "tolist"):
        return _json_safe(value.tolist())
    return value


def _print_json(data) -> None:
    import json

    print(json.dumps(_json_safe(data), indent=2, sort_keys=True, allow_nan=False))


def cmd_record(args) -> int:
    from host.record import record_session

    health = record_session(args.port, args.out, args.duration, subject_id=args.subject,
                            notes=args.notes, rate_hz=args.rate, overwrite=args.overwrite,
                            progress=not args.quiet)
    print("recorded %s: %d frames, %d CRC errors, %d sequence gaps, %d reconnects"
          % (args.out, health["frames"], health["crc_errors"], health["seq_gaps"],
             health["reconnects"]), file=sys.stderr)
    return 0


def _info_dict(path, track=None) -> dict:
    from host.recording import open_recording

    rec = open_recording(path)
    info = rec.summary()
    tracks = sorted(rec.labels)
    chosen = track or ("simulator" if "simulator" in tracks else (tracks[0] if tracks else None))
    if track and track not in tracks:
        raise UserError("%s has no label track %r (tracks: %s)"
                        % (path, track, ", ".join(tracks) or "none"))
    info["labels"] = rec.label_sample_counts(chosen) if chosen else {}
    info["labels_track"] = chosen
    return info


def cmd_info(args) -> int:
    info = _info_dict(args.file, args.labels)
    if args.json:
        _print_json(info)
        return 0
    print("%s" % args.file)
    for key in ("subject_id", "walker_id", "firmware_version", "session_start_time",
                "frames", "samples", "duration_s", "rate_hz", "seq_gaps", "frames_lost",
                "crc_errors", "resyncs", "dropped", "reconnects", "stalls",
                "closed_cleanly", "label_tracks"):
        value = info.get(key)
        if isinstance(value, float):
            value = "%.3f" % value
        print("  %-18s %s" % (key, value))
    if info["labels"]:
        print("  labels (%s track, samples):" % info["labels_track"])
        for activity, n in info["labels"].items():
            print("    %-6s %d" % (activity, n))
    return 0


def cmd_recover(args) -> int:
    from host.recording import recover

    report = recover(args.file, args.out, overwrite=args.overwrite)
    print(report)
    return 0


def cmd_replay(args) -> int:
    from collections import Counter

    from host.replay import replay_recording

    recognizer = _load_model(args.model)
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
        _print_json(summary)
    else:
        for key, value in summary.items():
            print("%-22s %s" % (key, value))
    return 0


def _recognizer_factory(kind: str, params: list[str]):
    """A function making an unfitted recognizer of `kind` with --param KEY=VALUE set."""
    import json

    from recognizers import get_recognizer_class

    try:
        cls = get_recognizer_class(kind)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    kwargs = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep:
            raise UserError("--param takes KEY=VALUE, got %r" % item)
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    try:
        cls(**kwargs)
    except TypeError as exc:
        raise UserError("recognizer %s: %s" % (kind, exc)) from None
    return lambda: cls(**kwargs)


def cmd_train(args) -> int:
    from host.datasets import load_sessions

    factory = _recognizer_factory(args.recognizer, args.param)
    sessions = load_sessions(args.files, args.feature_set, args.labels,
                             progress=not args.quiet)
    model = factory()
    try:
        model.fit([s.X for s in sessions], [s.y for s in sessions],
                  feature_set=args.feature_set)
    except ValueError as exc:
        raise UserError("cannot train: %s" % exc) from None
    path = model.save(args.out)
    print("saved %s (%s, %d classes: %s) to %s" % (
        args.recognizer, args.feature_set, len(model.classes_),
        " ".join(map(str, model.classes_)), path), file=sys.stderr)
    return 0


def cmd_evaluate(args) -> int:
    from host.datasets import load_sessions
    from recognizers.evaluation import leave_one_subject_out

    factory = _recognizer_factory(args.recognizer, args.param)
    sessions = load_sessions(args.files, args.feature_set, args.labels,
                             progress=not args.quiet)
    subjects = sorted({s.subject for s in sessions})
    if len(subjects) < 2:
        raise UserError("leave-one-subject-out needs recordings of at least 2 subjects "
                        "(got %d)" % len(subjects))
    from tqdm import tqdm

    bar = tqdm(total=len(subjects), desc="folds", unit="subject", disable=args.quiet)
    result = leave_one_subject_out(
        factory, sessions, decoder=args.decoder,
        n_own_sessions_in_training=args.own_sessions,
        progress=lambda done, total, subject: bar.update(1))
    bar.close()
    result["recognizer"] = args.recognizer
    result["feature_set"] = args.feature_set
    result["files"] = [str(f) for f in args.files]
    if args.json:
        _print_json(result)
        return 0
    print("%s on %d subjects, %s features, decoder %s" % (
        args.recognizer, len(subjects), args.feature_set, args.decoder))
    print("accuracy by window: " + "  ".join(
        "%s: %.1f%%" % (w, 100 * a) for w, a in result["accuracy_by_window"].items()))
    print("transitions: precision %.3f  recall %.3f" % (
        result["transition_precision"], result["transition_recall"]))
    classes = result["classes"]
    print("confusion (rows true, columns predicted):")
    print("      " + " ".join("%6s" % c for c in classes))
    for c, row in zip(classes, result["confusion"]):
        print("%6s " % c + " ".join("%6d" % v for v in row))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="walkerlab",
        description="Instrumented rolling walker: virtual walker, recording, recognition.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("virtual-walker",
                       help="serve a simulated walker on a pseudo-terminal",
                       description="Serve a simulated walker on a pseudo-terminal. The "
                       "first line of stdout is the serial port path.")
    p.add_argument("--course", choices=("exp1", "exp2", "free"), default="free")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rate", type=_positive_rate, default=50, help="sample rate in Hz")
    p.add_argument("--corrupt-rate", type=_probability, default=0.0,
                   help="probability that a sent byte gets a bit flipped")
    p.add_argument("--drop-rate", type=_probability, default=0.0,
                   help="probability that a sent byte is lost")
    p.add_argument("--disconnect-every", type=float, default=0.0, metavar="SECONDS",
                   help="pull the virtual USB cable this often (0: never)")
    p.add_argument("--disconnect-duration", type=float, default=1.0, metavar="SECONDS")
    p.add_argument("--stall-every", type=float, default=0.0, metavar="SECONDS",
                   help="freeze the firmware this often (0: never)")
    p.add_argument("--stall-duration", type=float, default=3.0, metavar="SECONDS")
    p.add_argument("--label-jitter", type=float, default=0.0, metavar="SECONDS",
                   help="human-like jitter of ground-truth activity boundaries")
    p.add_argument("--link", default=None, help="path of the port symlink to create")
    p.add_argument("--duration", type=float, default=None, help="stop after SECONDS")
    p.set_defaults(func=cmd_virtual_walker)

    p = sub.add_parser("simulate", help="write labelled simulated sessions to files",
                       description="Simulate subjects walking a course and write each "
                       "session as a recording (no serial link involved).")
    p.add_argument("--course", choices=("exp1", "exp2", "free"), required=True)
    p.add_argument("--subjects", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--duration", type=float, default=None,
                   help="seconds (required for the endless free-living course)")
    p.add_argument("--rate", type=_positive_rate, default=50)
    p.add_argument("--label-jitter", type=float, default=0.0, metavar="SECONDS")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--overwrite", action="store_true",
                   help="replace existing files of the same name")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("monitor", help="watch a walker live (a virtual one if no port)")
    p.add_argument("--port", help="serial port of the walker (default: a virtual walker)")
    p.add_argument("--model", help="a saved recognizer to run live")
    p.add_argument("--headless", action="store_true", help="terminal view, no window")
    p.add_argument("--course", choices=("exp1", "exp2", "free"), default="free",
                   help="course of the virtual walker")
    p.add_argument("--seed", type=int, default=0, help="seed of the virtual walker")
    p.add_argument("--duration", type=float, default=None, help="stop after SECONDS")
    p.add_argument("--screenshot", metavar="FILE.png", default=None,
                   help="save a picture of the window and quit (with --after)")
    p.add_argument("--after", type=float, default=None, metavar="SECONDS",
                   help="take the --screenshot this many seconds after start (default 5)")
    p.add_argument("--replay", metavar="FILE.h5", default=None,
                   help="open a recording and replay it in the window")
    p.add_argument("--speed", type=float, default=1.0,
                   help="replay speed, times real time (default 1)")
    p.set_defaults(func=cmd_monitor)

    p = sub.add_parser("record", help="record a session from a walker to HDF5")
    p.add_argument("--port", required=True, help="serial port of the walker")
    p.add_argument("--duration", type=float, required=True, help="seconds to record")
    p.add_argument("--out", required=True, help="recording file (.h5) to create")
    p.add_argument("--subject", default="", help="subject id")
    p.add_argument("--notes", default="", help="free-text notes stored in the file")
    p.add_argument("--rate", type=_positive_rate, default=None,
                   help="ask the walker for this sample rate (Hz)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_record)

    p = sub.add_parser("info", help="summary of a recording")
    p.add_argument("file")
    p.add_argument("--labels", default=None, help="label track to count (default: "
                   "the simulator's, else the first)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("recover", help="rebuild a recording's frames from its raw byte log")
    p.add_argument("file")
    p.add_argument("--out", default=None, help="write the recovered copy here "
                   "(default: rebuild in place; the raw log is never touched)")
    p.add_argument("--overwrite", action="store_true")
    p.set_defaults(func=cmd_recover)

    p = sub.add_parser("replay", help="replay a recording through the live pipeline")
    p.add_argument("file")
    p.add_argument("--model", help="a saved recognizer")
    p.add_argument("--speed", type=float, default=0.0,
                   help="times real time (default 0: as fast as possible)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_replay)

    def add_training_args(p):
        p.add_argument("files", nargs="+", help="recordings (.h5)")
        p.add_argument("--recognizer", default="hmm", help="hmm (more as they land)")
        p.add_argument("--feature-set", choices=("cop", "loadcells"), default="cop",
                       help="COP + TotalLoad, or the four raw load cells (thesis 6.6)")
        p.add_argument("--labels", default=None, help="label track to learn from")
        p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                       help="recognizer setting, e.g. tau=4000 (repeatable)")
        p.add_argument("--quiet", action="store_true", help="no progress bars")

    p = sub.add_parser("train", help="train a recognizer on labelled recordings")
    add_training_args(p)
    p.add_argument("--out", required=True, help="model file to write (.npz)")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="cross-validate a recognizer (thesis 6.6)")
    add_training_args(p)
    p.add_argument("--cv", choices=("loso",), default="loso",
                   help="leave-one-subject-out")
    p.add_argument("--decoder", choices=("predict", "filter", "smooth"), default="predict",
                   help="best sequence (Viterbi), causal filter, or smoothed argmax")
    p.add_argument("--own-sessions", type=int, default=0,
                   help="sessions of the test subject also used for training "
                   "(thesis experiment 1: 1)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("ports", help="list serial ports")
    p.set_defaults(func=cmd_ports)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except user_errors() as exc:
        print("walkerlab %s: error: %s" % (args.command, exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
