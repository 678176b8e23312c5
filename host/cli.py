"""`walkerlab`: the command line. Each subcommand is a thin layer over a library call.

User mistakes raise UserError (or the library's ValueError subclasses listed in
USER_ERRORS) and end as one line on stderr with exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys

from device.sim.activities import COURSES, DEMO_SEED
from host.cli_support import (
    Alias as _Alias,
    ListParams as _ListParams,
    OneLineParser as _Parser,
    nonneg_float as _nonneg_float,
    nonneg_int as _nonneg_int,
    number as _number,
    pos_float as _pos_float,
    pos_int as _pos_int,
    subcommand_parser as _subcommand_parser,
)
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


def cmd_simulate(args) -> int:
    from host.simulate import simulate_to_files

    paths = simulate_to_files(args.course, args.subjects, args.seed, args.out,
                              rate_hz=args.rate, duration_s=args.duration,
                              label_jitter_s=args.label_jitter, overwrite=args.overwrite,
                              progress=not args.quiet,
                              sync_taps_s=(2.0, -3.0) if args.sync_taps else ())
    for path in paths:
        print(path)
    return 0


def cmd_annotate(args) -> int:
    from host.annotate.app import run_annotator

    if not _has_display():
        raise UserError("the annotator needs a display (or QT_QPA_PLATFORM=offscreen "
                        "with --screenshot)")
    return run_annotator(args.file, args.video or (), label_set=args.label_set,
                         annotator=args.annotator, screenshot=args.screenshot,
                         cursor_s=args.at)


def cmd_labels(args) -> int:
    from host.annotate.interchange import export_labels, import_labels

    if args.labels_command == "export":
        n = export_labels(args.file, args.format, args.out, args.track, args.overwrite)
        print("%s: %d segment(s)" % (args.out, n))
    else:
        label_set = None
        if args.label_set:
            from host.annotate.labels import label_set_from_text

            try:
                label_set = label_set_from_text(args.label_set)
            except ValueError as exc:
                raise UserError("--label-set: %s" % exc) from None
        name, n = import_labels(args.file, args.labels_file, args.annotator, args.track,
                                args.name, args.replace, lenient=args.lenient,
                                label_set=label_set,
                                report=lambda m: print("walkerlab labels import: "
                                                       "trimmed: %s" % m, file=sys.stderr))
        print("%s: track %r, %d segment(s)" % (args.file, name, n))
    return 0


VIDEO_EXTENSIONS = (".mp4", ".m4v", ".mov", ".mkv", ".avi")


def cmd_render_video(args) -> int:
    import os

    from host.annotate.simulated_video import render_recording_video

    try:
        width, height = (int(x) for x in args.size.lower().split("x"))
    except ValueError:
        raise UserError("--size takes WIDTHxHEIGHT, e.g. 160x120") from None
    ext = os.path.splitext(args.out)[1].lower()
    if ext not in VIDEO_EXTENSIONS:
        raise UserError("--out %s: unknown video file type %r (use %s)"
                        % (args.out, ext or "no extension", ", ".join(VIDEO_EXTENSIONS)))
    clock = render_recording_video(args.file, args.out, fps=args.fps, width=width,
                                   height=height, offset_s=args.offset,
                                   drift_ppm=args.drift, overwrite=args.overwrite,
                                   progress=not args.quiet)
    print("%s: %d frames at %g fps; t_recording = %.9f * t_video %+.6f s"
          % (args.out, clock.n_frames, clock.fps, clock.a, clock.b))
    return 0


def _has_display() -> bool:
    import os

    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                or os.environ.get("QT_QPA_PLATFORM") == "offscreen")


def _load_model(path, default: bool = False):
    """The model at ``path`` (UserError in one line), else the shipped one if ``default``."""
    from host.models import load_default_model, load_model

    if path is None:
        return load_default_model() if default else None
    return load_model(path)


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
    recognizer = _load_model(args.model, default=True)
    if args.port:
        run_headless_monitor(args.port, recognizer, duration_s=args.duration)
        return 0
    with BackgroundVirtualWalker(course=args.course, seed=args.seed) as walker:
        print("no port given: monitoring a virtual walker on %s" % walker.path,
              file=sys.stderr)
        run_headless_monitor(walker.path, recognizer, duration_s=args.duration)
    return 0


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
                      write_to_walker=args.write_to_walker)
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
        _print_json([{k: r[k] for k in ("date", "procedure", "result", "calibration",
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


def cmd_ports(args) -> int:
    from serial.tools import list_ports

    ports = list(list_ports.comports())
    for port in ports:
        print("%s\t%s" % (port.device, port.description))
    if not ports:
        print("no serial ports found; `walkerlab virtual-walker` serves a simulated one",
              file=sys.stderr)
    return 0


def _print_json(data) -> None:
    import json

    from host.report import json_safe

    print(json.dumps(json_safe(data), indent=2, sort_keys=True, allow_nan=False))


def cmd_record(args) -> int:
    from host.record import record_session

    health = record_session(args.port, args.out, args.duration, subject_id=args.subject,
                            notes=args.notes, rate_hz=args.rate, overwrite=args.overwrite,
                            progress=not args.quiet)
    print("recorded %s: %d frames, %d CRC errors, %d sequence gaps, %d reconnects"
          % (args.out, health["frames"], health["crc_errors"], health["seq_gaps"],
             health["reconnects"]), file=sys.stderr)
    if not health.get("info_received", True):
        print("WARNING: the walker never sent its INFO frame (identity and calibration); "
              "attach them with: walkerlab recover %s --calibration FILE" % args.out,
              file=sys.stderr)
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
    if info.get("walker_info_missing"):
        print("  WARNING: no walker INFO frame and no calibration in this recording: loads, "
              "acceleration and speed use nominal constants. Attach the walker's calibration "
              "with: walkerlab recover %s --calibration FILE" % args.file)
    if info["labels"]:
        print("  labels (%s track, samples):" % info["labels_track"])
        for activity, n in info["labels"].items():
            print("    %-6s %d" % (activity, n))
    return 0


def cmd_export(args) -> int:
    import os

    from host.export import export_recording

    out = args.out or os.path.splitext(args.file)[0] + "." + args.format
    n = export_recording(args.file, args.format, out, track=args.track,
                         overwrite=args.overwrite)
    print("%s: %d rows" % (out, n), file=sys.stderr)
    return 0


def cmd_recover(args) -> int:
    from host.recording import recover

    calibration = None
    if args.calibration:
        from calibration import WalkerCalibration

        calibration = WalkerCalibration.load(args.calibration)
    report = recover(args.file, args.out, overwrite=args.overwrite, calibration=calibration)
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


def cmd_train(args) -> int:
    import datetime as dt

    from host.datasets import read_label_map
    from host.evaluate import cache_recordings
    from host.feature_cache import CachedSessions, check_entries
    from host.models import check_out_path, default_models_dir, save_model, training_metadata
    from host.report import json_safe
    from recognizers.sources import fit_source

    specs = _model_specs(args.recognizer, args.param)
    if len(specs) != 1:
        raise UserError("train takes one --recognizer (evaluate compares several)")
    spec = specs[0]
    if args.out is not None:
        check_out_path(args.out, args.overwrite)  # before any work
    label_map = read_label_map(args.label_map)
    metrics = None
    with contextlib.ExitStack() as stack:
        client = None
        if args.evaluate or args.scheduler not in ("serial", "local"):
            # The folds of --evaluate and the features run on the cluster; without
            # --evaluate on this machine, starting one costs more than it saves.
            if args.scheduler != "serial":
                from host.evaluate import dask_client

                client = stack.enter_context(dask_client(args.scheduler, args.workers))
        entries = cache_recordings(args.files, args.feature_set, args.labels, label_map,
                                   args.feature_cache, client=client)
        if args.evaluate:
            from host.evaluate import evaluate_recordings

            metrics = evaluate_recordings(
                args.files, [spec], feature_set=args.feature_set, track=args.labels,
                decoder="predict", transition_window=25,
                scheduler=client.scheduler.address if client is not None else "serial",
                label_map=label_map, cache_dir=args.feature_cache)[0]
            print("leave-one-subject-out accuracy: window 0 %.1f%%, window 25 %.1f%%" % (
                100 * metrics["accuracy_by_window"][0],
                100 * metrics["accuracy_by_window"][25]), file=sys.stderr)
    sessions = CachedSessions(entries)  # read one recording at a time where the model can
    model = spec.make()
    # Long fits (the CRF) show their own progress bar; the saved model keeps the
    # settings the user gave, not this display choice.
    show_progress = (not args.quiet and "verbose" in model.get_params(deep=False)
                     and "verbose" not in spec.params)
    if show_progress:
        model.set_params(verbose=True)
    try:
        fit_source(model, sessions, feature_set=args.feature_set)
    except ValueError as exc:
        raise UserError("cannot train: %s" % exc) from None
    if show_progress:
        model.set_params(verbose=spec.make().verbose)
    model.sample_rate_hz_ = check_entries(entries, label_map)
    model.metadata_ = training_metadata(
        files=args.files, label_track=sorted({e.track for e in entries}),
        label_set=model.classes_, feature_set=args.feature_set, kind=spec.kind,
        params=spec.params, command=_command_line(),
        metrics=json_safe(metrics) if metrics is not None else None,
        sample_rate_hz=model.sample_rate_hz_)
    if label_map:
        model.metadata_["label_map"] = label_map
    out = args.out
    if out is None:
        folder = default_models_dir()
        folder.mkdir(parents=True, exist_ok=True)
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = folder / ("%s-%s-%s.npz" % (spec.kind, args.feature_set, stamp))
    path = save_model(model, out, overwrite=args.overwrite or args.out is None)
    print("saved %s (%s, %d classes: %s) to %s" % (
        spec.kind, args.feature_set, len(model.classes_),
        " ".join(map(str, model.classes_)), path), file=sys.stderr)
    return 0


_ARGV: list[str] | None = None  # the arguments main() was given (recorded in models)


def _command_line() -> str:
    argv = _ARGV if _ARGV is not None else sys.argv[1:]
    return "walkerlab " + " ".join(map(_shell_quote, argv))


def cmd_models(args) -> int:
    import os

    from host.models import DEFAULT_MODEL, default_models_dir, list_models

    if args.dir is not None and not os.path.exists(args.dir):
        raise UserError("%s: no such folder" % args.dir)
    folder = args.dir or default_models_dir()
    entries, problems = list_models(folder)
    if args.json:
        _print_json([{"path": e.path, "kind": e.kind, "feature_set": e.feature_set,
                      "classes": e.classes, "metadata": e.metadata} for e in entries]
                    + [{"broken": p} for p in problems])
        return 0
    if not entries:
        print("no models in %s (walkerlab train saves there unless given --out)" % folder)
    for e in entries:
        acc = e.accuracy
        score = ("LOSO w0 %.1f%% w25 %.1f%%" % (100 * acc["0"], 100 * acc["25"])
                 if "0" in acc and "25" in acc else "not evaluated")
        print("%s\n    %s, %s features, %d classes, %d recordings, %s, trained %s%s" % (
            e.path, e.kind, e.feature_set, len(e.classes), e.n_recordings, score,
            e.trained_at or "?", ", runs on the walker" if e.runs_on_device else ""))
    for p in problems:
        print("broken: %s" % p)
    if DEFAULT_MODEL.exists():
        print("shipped default (the monitor runs it when no model is chosen): %s"
              % DEFAULT_MODEL)
    return 0


def cmd_learn(args) -> int:
    import os

    from tqdm import tqdm

    from host.datasets import load_features
    from host.models import check_out_path, load_model, save_model

    if args.out is not None:
        check_out_path(args.out, args.overwrite)
    model = load_model(args.model)
    if not model.get_tags().supports_partial_fit:
        raise UserError("%s is a %r model, which cannot learn from unlabelled data; "
                        "train a recognizer that can (e.g. --recognizer bmm)"
                        % (args.model, model.kind))
    feature_set = model.feature_set_ or "cop"
    frames = 0
    for path in tqdm(args.files, desc="learning", unit="file", disable=args.quiet):
        X, _ = load_features(path, feature_set)
        model.partial_fit([X])  # each recording is one new stream
        frames += len(X)
    out = save_model(model, args.out or args.model, overwrite=args.overwrite or not args.out,
                     operation="learn", command=_command_line(), frames=frames,
                     recordings=[os.path.abspath(f) for f in args.files])
    print("%s learnt from %d frames in %d recordings; saved to %s"
          % (model.kind, frames, len(args.files), out), file=sys.stderr)
    return 0


def _model_specs(recognizers: str, params: list[str]):
    """ModelSpecs for --recognizer a,b,... and --param [KIND:]KEY=VALUE (no kind: all)."""
    import json

    from host.evaluate import ModelSpec

    kinds = [k.strip() for k in recognizers.split(",") if k.strip()]
    if not kinds:
        raise UserError("--recognizer needs at least one kind")
    per_kind: dict[str, dict] = {k: {} for k in kinds}
    for item in params:
        target, colon, rest = item.partition(":")
        if colon and "=" not in target:
            if target not in per_kind:
                raise UserError("--param %s names %r, which is not among --recognizer %s"
                                % (item, target, recognizers))
            targets, item = [target], rest
        else:
            targets = kinds
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError("--param takes [KIND:]KEY=VALUE, got %r" % item)
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        for k in targets:
            per_kind[k][key] = parsed
    specs = [ModelSpec(k, per_kind[k]) for k in kinds]
    for spec in specs:
        spec.check()
    return specs


def cmd_evaluate(args) -> int:
    from tqdm import tqdm

    from host.datasets import read_label_map
    from host.evaluate import evaluate_recordings

    specs = _model_specs(args.recognizer, args.param)
    label_map = read_label_map(args.label_map)
    bars = []  # made at the first fold, so a refused input shows no empty bar

    def progress(done, total):
        if not bars:
            bars.append(tqdm(desc="folds", unit="fold", total=total, disable=args.quiet))
        bar = bars[0]
        bar.total = total
        bar.update(done - bar.n)

    try:
        results = evaluate_recordings(
            args.files, specs, feature_set=args.feature_set, track=args.labels,
            decoder=args.decoder, own_sessions=args.own_sessions,
            transition_window=args.transition_window, scheduler=args.scheduler,
            n_workers=args.workers, progress=progress, label_map=label_map,
            cache_dir=args.feature_cache)
    finally:
        for bar in bars:
            bar.close()
    command = _command_line()
    summary = {"command": command, "files": [str(f) for f in args.files], "models": results}
    if args.report:
        from host.report import write_report

        index = write_report(args.report, summary)
        print("report written to %s" % index, file=sys.stderr)
    if args.json:
        _print_json(summary)
        return 0
    for result in results:
        n_subjects = len(result["per_subject"])
        print("%s %s on %d subjects, %s features, decoder %s" % (
            result["recognizer"], result["params"] or "", n_subjects, result["feature_set"],
            result["decoder"]))
        print("accuracy by window: " + "  ".join(
            "%s: %.1f%%" % (w, 100 * a) for w, a in result["accuracy_by_window"].items()))
        tw = args.transition_window
        print("transitions (window %d): precision %.3f  recall %.3f" % (
            tw, result["transition_precision"], result["transition_recall"]))
        classes = result["classes"]
        print("confusion (rows true, columns predicted):")
        print("      " + " ".join("%6s" % c for c in classes))
        for c, row in zip(classes, result["confusion"]):
            print("%6s " % c + " ".join("%6d" % v for v in row))
        print()
    return 0


def _shell_quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def cmd_flash(args) -> int:
    from host.flash import flash

    files = flash(args.port, dry_run=args.dry_run)
    print(("would install %d files on %s:" if args.dry_run else
           "installed %d files on %s:") % (len(files), args.port), file=sys.stderr)
    for name in files:
        print(name)
    return 0


def cmd_deploy_model(args) -> int:
    from host.deploy import deploy_model

    result = deploy_model(args.model, args.port, calibration_path=args.calibration,
                          progress=not args.quiet)
    print("deployed %s to %s: %d bytes, %s features, classes %s (calibration: %s)"
          % (args.model, result["walker_id"], result["bytes"], result["feature_set"],
             " ".join(result["classes"]), result["calibration"]), file=sys.stderr)
    return 0


def cmd_latent(args) -> int:
    from host import latent

    if args.action == "fit":
        if not args.out:
            raise UserError("latent fit needs --out MODEL.npz")
        path, model = latent.fit_latent(args.files, args.out, n_components=args.components,
                                        overwrite=args.overwrite, progress=not args.quiet)
        print("%s: %d windows of %d recording(s), %d components"
              % (path, model.header["n_windows"], len(args.files), args.components))
    else:
        sessions = [latent.session_windows(p) for p in args.files]
        print("LOSO, %d sessions: accuracy over windows and over frames (mean +- std of folds)"
              % len(sessions))
        for name, acc in latent.evaluate_projection(
                sessions, args.components, progress=not args.quiet).items():
            print("%-16s windows %.3f (+- %.3f)  frames %.3f (+- %.3f)"
                  % (name, *acc["window"], *acc["frame"]))
    return 0


def cmd_topics(args) -> int:
    from host import topics

    if args.action == "fit":
        if not args.out:
            raise UserError("topics fit needs --out MODEL.npz")
        path, model = topics.fit_topics(args.files, args.out, n_topics=args.topics,
                                        n_words=args.words, doc_s=args.doc_seconds,
                                        method=args.method, overwrite=args.overwrite,
                                        progress=not args.quiet)
        print("%s: %d topics over %d documents of %d recording(s)"
              % (path, args.topics, model.header["n_documents"], len(args.files)))
    else:
        if len(args.files) != 1:
            raise UserError("topics show takes one model file")
        if _is_recognizer_file(args.files[0], "shdp"):  # walkerlab train --recognizer shdp
            from host.models import load_model

            print("\n".join(topics.describe_shdp(load_model(args.files[0]))))
        else:
            print("\n".join(topics.describe(topics.TopicModel.load(args.files[0]))))
    return 0


def _is_recognizer_file(path, kind: str) -> bool:
    """Whether ``path`` is a recognizer model file of ``kind`` (not, e.g., a topic model)."""
    from recognizers import ModelFormatError
    from recognizers.base import read_model_header

    try:
        return read_model_header(path).get("kind") == kind
    except (ModelFormatError, OSError):
        return False


def cmd_discover(args) -> int:
    from host.discover import discover

    res = discover(args.file, args.max_regimes, args.window, args.track, args.seed,
                   write=not args.dry_run, progress=not args.quiet, method=args.method)
    print("%s: %d regime(s) in %d segment(s)%s -> track %r" % (
        args.file, res.n_regimes, len(res.track), "" if res.error_vs_truth is None else
        ", %.1f %% error against the simulator's activities" % (100 * res.error_vs_truth),
        args.track) + (" (not saved: --dry-run)" if args.dry_run else ""))
    return 0


def cmd_workbench(args) -> int:
    from host.workbench.app import run_workbench

    if args.after is not None and not args.screenshot:
        raise UserError("--after goes with --screenshot FILE.png")
    if args.param and not args.run:
        raise UserError("--param goes with --run KINDS")
    if not (_has_display() or sys.platform in ("win32", "darwin")):
        raise UserError("the workbench needs a display (or QT_QPA_PLATFORM=offscreen "
                        "with --screenshot); `walkerlab evaluate` works without one")
    specs = _model_specs(args.run, args.param) if args.run else ()
    return run_workbench(args.files, args.models, screenshot=args.screenshot,
                         after_s=args.after, run_specs=specs, tab=args.tab,
                         feature_set=args.feature_set)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="walkerlab",
        description="Instrumented rolling walker: virtual walker, recording, recognition.")
    parser.add_argument("--version", action="version", version="%(prog)s " + _version(),
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("virtual-walker",
                       help="serve a simulated walker on a pseudo-terminal",
                       description="Serve a simulated walker on a pseudo-terminal. The "
                       "first line of stdout is the serial port path.")
    p.add_argument("--course", choices=COURSES, default="free",
                   help="activities the simulated person does (default: free, endless)")
    p.add_argument("--seed", type=int, default=0, help="seed of the simulated person")
    p.add_argument("--rate", type=_positive_rate, default=50, help="sample rate in Hz")
    p.add_argument("--corrupt-rate", type=_probability, default=0.0,
                   help="probability that a sent byte gets a bit flipped")
    p.add_argument("--drop-rate", type=_probability, default=0.0,
                   help="probability that a sent byte is lost")
    p.add_argument("--disconnect-every", type=_nonneg_float, default=0.0, metavar="SECONDS",
                   help="pull the virtual USB cable this often (0: never)")
    p.add_argument("--disconnect-duration", type=_nonneg_float, default=1.0, metavar="SECONDS",
                   help="how long the cable stays out (default 1)")
    p.add_argument("--stall-every", type=_nonneg_float, default=0.0, metavar="SECONDS",
                   help="freeze the firmware this often (0: never)")
    p.add_argument("--stall-duration", type=_nonneg_float, default=3.0, metavar="SECONDS",
                   help="how long the firmware stays frozen (default 3)")
    p.add_argument("--label-jitter", type=_nonneg_float, default=0.0, metavar="SECONDS",
                   help="human-like jitter of ground-truth activity boundaries")
    p.add_argument("--link", default=None, help="path of the port symlink to create")
    p.add_argument("--flash-dir", default=None, metavar="DIR",
                   help="keep the walker's flash (a deployed model) in DIR across runs "
                   "(default: in memory)")
    p.add_argument("--duration", type=_pos_float, default=None, help="stop after SECONDS")
    p.set_defaults(func=cmd_virtual_walker)

    p = sub.add_parser("simulate", help="write labelled simulated sessions to files",
                       description="Simulate subjects walking a course and write each "
                       "session as a recording (no serial link involved).")
    p.add_argument("--course", choices=COURSES, required=True,
                   help="the course each subject walks (thesis experiments 1 and 2, or free)")
    p.add_argument("--subjects", type=_pos_int, default=1, help="sessions to write, one "
                   "per simulated subject (default 1)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the first subject (the next ones count up)")
    p.add_argument("--duration", type=_pos_float, default=None,
                   help="seconds (required for the endless free-living course)")
    p.add_argument("--rate", type=_positive_rate, default=50, help="sample rate in Hz")
    p.add_argument("--label-jitter", type=_nonneg_float, default=0.0, metavar="SECONDS",
                   help="human-like jitter of the ground-truth activity boundaries")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--overwrite", action="store_true",
                   help="replace existing files of the same name")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--sync-taps", action="store_true",
                   help="knock on the frame 2 s after the start and 3 s before the end "
                   "(sync events for `walkerlab render-video` and the annotator)")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("render-video", help="synthetic camera video of a simulated session",
                       description="Render a top-down camera video of a (simulated) "
                       "recording: feet, leg loads, the activity, and a flash at each sync "
                       "tap. The camera clock is t_recording = (1 + DRIFT*1e-6) * t_video "
                       "+ OFFSET.")
    p.add_argument("file", help="recording (.h5), ideally simulated with --sync-taps")
    p.add_argument("--out", required=True, help="video file to write (.mp4)")
    p.add_argument("--offset", type=_number(float), default=0.0, metavar="S",
                   help="recording time at video time 0 (negative: the camera started "
                   "first)")
    p.add_argument("--drift", type=_number(float), default=0.0, metavar="PPM",
                   help="camera clock drift in parts per million")
    p.add_argument("--fps", type=_pos_int, default=10, help="frames per second (default 10)")
    p.add_argument("--size", default="160x120", metavar="WxH",
                   help="frame size in pixels (default 160x120)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_render_video)

    p = sub.add_parser("annotate", help="label a recording against its videos",
                       description="Open the annotator: videos beside the sensor plots, "
                       "keyboard labelling, sync taps, agreement. Labels are autosaved into "
                       "the recording; raw data is never modified.")
    p.add_argument("file", help="recording (.h5)")
    p.add_argument("--video", action="append", metavar="V",
                   help="a video (rear, then forward camera); at most two")
    p.add_argument("--label-set", dest="label_set", default=None, metavar="SET",
                   action=_Alias, deprecated=["--labels"],
                   help="label set: exp1, exp2, a JSON file or codes A,B,C (--labels is "
                   "the deprecated spelling)")
    p.add_argument("--annotator", default="", help="your name (new tracks carry it)")
    p.add_argument("--screenshot", metavar="FILE.png", default=None,
                   help="save a picture of the window and quit")
    p.add_argument("--at", type=_nonneg_float, default=None, metavar="SECONDS",
                   help="put the cursor here first")
    p.set_defaults(func=cmd_annotate)

    p = sub.add_parser("labels", help="export or import label tracks (ELAN .eaf, CSV)")
    lsub = p.add_subparsers(dest="labels_command", required=True, metavar="ACTION")
    q = lsub.add_parser("export", help="write label tracks as ELAN .eaf or CSV")
    q.add_argument("file", help="recording (.h5)")
    q.add_argument("--format", choices=("eaf", "csv"), required=True,
                   help="ELAN annotation file or comma-separated values")
    q.add_argument("--out", required=True, help="file to write")
    q.add_argument("--track", action="append", help="only this label track (repeatable)")
    q.add_argument("--overwrite", action="store_true", help="replace an existing file")
    q.set_defaults(func=cmd_labels)
    q = lsub.add_parser("import", help="add a CSV (or .eaf) file's labels as a track")
    q.add_argument("file", help="recording (.h5)")
    q.add_argument("labels_file", metavar="CSV", help="columns start_s, stop_s, activity")
    q.add_argument("--annotator", required=True, help="who made the labels")
    q.add_argument("--track", default=None, help="which track/tier of the file")
    q.add_argument("--name", default=None, help="track name (default: the annotator)")
    q.add_argument("--replace", action="store_true", help="replace a track of that name")
    q.add_argument("--label-set", default=None, metavar="SET",
                   help="allowed activity codes: exp1, exp2, a JSON file or codes A,B,C "
                   "(default: exp1 and exp2's, and codes already in the recording)")
    q.add_argument("--lenient", action="store_true",
                   help="trim overlaps, clip segments to the recording and keep unknown "
                   "codes, reporting each, instead of refusing the file")
    q.set_defaults(func=cmd_labels)

    p = sub.add_parser("monitor", help="watch a walker live (a virtual one if no port)")
    p.add_argument("--port", help="serial port of the walker (default: a virtual walker)")
    p.add_argument("--model", help="a saved recognizer to run live (default: the last one "
                   "used, else the model shipped with WalkerLab)")
    p.add_argument("--headless", action="store_true", help="terminal view, no window")
    p.add_argument("--course", choices=COURSES, default="free",
                   help="course of the virtual walker")
    p.add_argument("--seed", type=int, default=DEMO_SEED,
                   help="seed of the virtual walker's person (default %d)" % DEMO_SEED)
    p.add_argument("--duration", type=_pos_float, default=None, help="stop after SECONDS")
    p.add_argument("--screenshot", metavar="FILE.png", default=None,
                   help="save a picture of the window and quit (with --after)")
    p.add_argument("--after", type=_nonneg_float, default=None, metavar="SECONDS",
                   help="take the --screenshot this many seconds after start (default 5)")
    p.add_argument("--replay", metavar="FILE.h5", default=None,
                   help="open a recording and replay it in the window")
    p.add_argument("--speed", type=_pos_float, default=1.0,
                   help="replay speed, times real time (default 1)")
    p.set_defaults(func=cmd_monitor)

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
    p.add_argument("--store", metavar="DIR", default=None,
                   help="calibration store (default $WALKERLAB_CALIBRATION_DIR or "
                   "~/.config/walkerlab/calibration)")
    p.add_argument("--masses", type=_masses, default=[10.0, 20.0], metavar="KG,KG",
                   help="known masses put over each leg in turn (default 10,20)")
    p.add_argument("--distance", type=_pos_float, default=5.0, metavar="M",
                   help="measured roll distance for the encoder (default 5 m)")
    p.add_argument("--yes", action="store_true", help="save without asking")
    p.add_argument("--write-to-walker", action="store_true",
                   help="also store the calibration in the walker's flash")
    p.add_argument("--gui", action="store_true", help="the step-by-step wizard window")
    p.add_argument("--screenshots", metavar="DIR", default=None,
                   help="(--gui) save a picture of each wizard step here")
    p.add_argument("--seed", type=int, default=0, help="which virtual walker (SIM-SEED)")
    p.add_argument("--speed", type=_pos_float, default=1.0,
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

    p = sub.add_parser("record", help="record a session from a walker to HDF5")
    p.add_argument("--port", required=True, help="serial port of the walker")
    p.add_argument("--duration", type=_pos_float, required=True, help="seconds to record")
    p.add_argument("--out", required=True, help="recording file (.h5) to create")
    p.add_argument("--subject", default="", help="subject id")
    p.add_argument("--notes", default="", help="free-text notes stored in the file")
    p.add_argument("--rate", type=_positive_rate, default=None,
                   help="ask the walker for this sample rate (Hz)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_record)

    p = sub.add_parser("info", help="summary of a recording")
    p.add_argument("file", help="recording (.h5)")
    p.add_argument("--track", dest="labels", default=None, action=_Alias,
                   deprecated=["--labels"], help="label track to count (default: "
                   "the simulator's, else the first; --labels is the deprecated spelling)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("export", help="a recording as a table for pandas, R or MATLAB",
                       description="Write one row per sample: time, sensors in physical "
                       "units (the recording's calibration), features and one label column "
                       "per label track.")
    p.add_argument("file", help="recording (.h5)")
    p.add_argument("--format", choices=("csv", "parquet", "mat"), required=True,
                   help="comma-separated values, Apache Parquet or MATLAB .mat")
    p.add_argument("--out", default=None, help="file to write (default: FILE with the "
                   "format's extension)")
    p.add_argument("--track", default=None, help="only this label track (default: all)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing file")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("recover", help="rebuild a recording's frames from its raw byte log")
    p.add_argument("file", help="recording (.h5)")
    p.add_argument("--out", default=None, help="write the recovered copy here "
                   "(default: rebuild in place; the raw log is never touched)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.add_argument("--calibration", default=None, metavar="FILE",
                   help="attach this walker calibration (JSON) first: for recordings whose "
                   "walker INFO frame never arrived")
    p.set_defaults(func=cmd_recover)

    p = sub.add_parser("replay", help="replay a recording through the live pipeline")
    p.add_argument("file", help="recording (.h5)")
    p.add_argument("--model", help="a saved recognizer")
    p.add_argument("--speed", type=_nonneg_float, default=0.0,
                   help="times real time (default 0: as fast as possible)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_replay)

    def add_training_args(p):
        p.add_argument("files", nargs="+", help="recordings (.h5), each given once")
        p.add_argument("--recognizer", default="hmm",
                       help="recognizer kind, e.g. hmm, hmm-em, bmm, crf (an unknown "
                       "name lists every kind); evaluate takes several, comma-separated")
        p.add_argument("--feature-set", choices=("cop", "loadcells"), default="cop",
                       help="COP + TotalLoad, or the four raw load cells (thesis 6.6)")
        p.add_argument("--track", dest="labels", default=None, action=_Alias,
                       deprecated=["--labels"], help="label track to learn from (default: "
                       "the only human track, else the simulator's; --labels is the "
                       "deprecated spelling)")
        p.add_argument("--label-map", default=None, metavar="FILE.json",
                       help='merge label sets: a JSON object of old -> new codes, e.g. '
                       '{"WF": "W", "WB": "W"} (recordings with different label sets are '
                       'refused without one)')
        p.add_argument("--param", action="append", default=[], metavar="[KIND:]KEY=VALUE",
                       help="recognizer setting, e.g. tau=4000 or bmm:n_init=2 "
                       "(repeatable; without KIND it applies to every recognizer)")
        p.add_argument("--quiet", action="store_true", help="no progress bars")
        p.add_argument("--scheduler", default="local", metavar="serial|local|ADDRESS",
                       help="run the folds (train: of --evaluate) and the feature "
                       "computations in this process (serial), on a Dask cluster on this "
                       "machine (local, the default) or on the Dask scheduler at ADDRESS "
                       "(`dask scheduler` + `dask worker ADDRESS` on each machine; workers "
                       "read the recordings from storage shared with this machine)")
        p.add_argument("--workers", type=_pos_int, default=None,
                       help="processes of the local cluster (default: one per core)")
        p.add_argument("--feature-cache", default=None, metavar="DIR",
                       help="cache of per-recording features (.npz, keyed by file content "
                       "and settings; default $WALKERLAB_FEATURE_CACHE or "
                       "~/.cache/walkerlab/features; safe to delete)")

    p = sub.add_parser("train", help="train a recognizer on labelled recordings")
    add_training_args(p)
    p.add_argument("--out", default=None,
                   help="model file to write (.npz; default: a new file in the model "
                   "registry, see `walkerlab models`)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.add_argument("--list-params", action=_ListParams, metavar="RECOGNIZER",
                   help="list the recognizer's settings (--param keys) with types and "
                   "defaults, and exit")
    p.add_argument("--evaluate", action="store_true",
                   help="first run leave-one-subject-out and store the metrics in the model")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("models", help="list the saved models of the registry",
                       description="List model files with their recognizer, features, "
                       "classes, training recordings and metrics.")
    p.add_argument("dir", nargs="?", default=None,
                   help="folder of models (default: $WALKERLAB_MODELS or "
                   "~/.local/share/walkerlab/models)")
    p.add_argument("--json", action="store_true", help="print JSON (broken files included)")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("learn", help="update an online model (bmm) with unlabelled recordings",
                       description="Continue learning from recordings without labels: "
                       "the model's posterior is updated frame by frame, without "
                       "retraining from scratch.")
    p.add_argument("model", help="model file (.npz) of a recognizer that learns online")
    p.add_argument("files", nargs="+", help="recordings (.h5); labels are not needed")
    p.add_argument("--out", default=None, help="write here instead of updating MODEL")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_learn)

    p = sub.add_parser("evaluate", help="cross-validate a recognizer (thesis 6.6)")
    add_training_args(p)
    p.add_argument("--cv", choices=("loso",), default="loso",
                   help="leave-one-subject-out")
    p.add_argument("--decoder", choices=("predict", "filter", "smooth"), default="predict",
                   help="best sequence (Viterbi), causal filter, or smoothed argmax")
    p.add_argument("--own-sessions", type=_nonneg_int, default=0,
                   help="sessions of the test subject also used for training "
                   "(thesis experiment 1: 1)")
    p.add_argument("--transition-window", type=_nonneg_int, default=25, metavar="FRAMES",
                   help="tolerance for the headline transition precision/recall "
                   "(0: the thesis's formula taken literally)")
    p.add_argument("--report", metavar="DIR", default=None,
                   help="write an HTML report with plots and the JSON metrics to DIR")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("latent", help="latent map of walker windows (Bayesian harmonium)",
                       description="fit: learn a dual-wing Bayesian harmonium over per-window "
                       "events and statistics and save it (.npz + JSON); evaluate: "
                       "leave-one-subject-out accuracy of 1-NN and logistic regression on "
                       "the projection and on the raw window features.")
    p.add_argument("action", choices=("fit", "evaluate"), help="fit a model, or evaluate "
                   "the projection by leave-one-subject-out")
    p.add_argument("files", nargs="+", metavar="RECORDINGS", help="recordings (.h5)")
    p.add_argument("--out", default=None, help="model file to write (.npz), for fit")
    p.add_argument("--components", type=int, default=4, help="hidden units (map dimensions)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_latent)

    p = sub.add_parser("topics", help="topics of recordings: bags of motion words under LDA",
                       description="fit: quantise half-second windows into motion words "
                       "(k-means), cut recordings into documents and learn LDA topics "
                       "(Bayesian moment matching by default); show: each topic's motion "
                       "words in physical terms and its share in each labelled activity. "
                       "show also reads a `walkerlab train --recognizer shdp` model: the "
                       "motion-word topics each activity uses.")
    p.add_argument("action", choices=("fit", "show"), help="fit a model, or show one")
    p.add_argument("files", nargs="+", metavar="FILES",
                   help="recordings (.h5) for fit; the model (.npz) for show (a topic "
                   "model or an shdp recognizer)")
    p.add_argument("--out", default=None, help="model file to write (.npz), for fit")
    p.add_argument("--topics", type=int, default=5, help="number of topics")
    p.add_argument("--words", type=int, default=40, help="motion-word vocabulary size")
    p.add_argument("--doc-seconds", type=float, default=10.0,
                   help="length of a document (s)")
    p.add_argument("--method", choices=("bmm", "gibbs", "vb"), default="bmm",
                   help="LDA learner")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_topics)

    p = sub.add_parser("discover", help="find the regimes of a long unlabelled recording",
                       description="Fit a stick-breaking HMM (it chooses the number of "
                       "regimes) to window features and save the regimes as a label track "
                       "for the annotator to name and correct.")
    p.add_argument("file", help="recording (.h5)")
    p.add_argument("--max-regimes", type=int, default=10, metavar="C",
                   help="most regimes the model may use (truncation of the stick-breaking prior)")
    p.add_argument("--window", type=float, default=1.0, metavar="SECONDS",
                   help="features are averaged over windows of this length")
    p.add_argument("--track", default="discovered", help="label track to write")
    p.add_argument("--seed", type=int, default=0, help="random seed of the fit")
    p.add_argument("--method", choices=("sbhmm", "lm2gp"), default="sbhmm",
                   help="stick-breaking HMM on the features, or LM2GP (latent manifold)")
    p.add_argument("--dry-run", action="store_true", help="do not write the track")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_discover)

    p = sub.add_parser("workbench", help="train and evaluate recognizers in a window",
                       description="Open the training and evaluation workbench: pick "
                       "recordings, a recognizer and its settings, run leave-one-subject-"
                       "out, compare runs, export reports, save and deploy models "
                       "(docs/workbench.md).")
    p.add_argument("files", nargs="*", help="recordings (.h5) or folders to list")
    p.add_argument("--models", metavar="DIR", default=None,
                   help="model registry folder (default: $WALKERLAB_MODELS or "
                   "~/.local/share/walkerlab/models)")
    p.add_argument("--run", metavar="KINDS", default=None,
                   help="evaluate these recognizer kinds (comma-separated) at start, one "
                   "run each")
    p.add_argument("--param", action="append", default=[], metavar="[KIND:]KEY=VALUE",
                   help="setting for the --run recognizers (repeatable)")
    p.add_argument("--feature-set", choices=("cop", "loadcells"), default="cop",
                   help="features of the --run recognizers (default cop)")
    p.add_argument("--tab", choices=("evaluate", "models"), default="evaluate",
                   help="tab to show")
    p.add_argument("--screenshot", metavar="FILE.png", default=None,
                   help="save a picture of the window (after the --run runs) and quit")
    p.add_argument("--after", type=_nonneg_float, default=None, metavar="SECONDS",
                   help="take the --screenshot this many seconds after the runs (default 1)")
    p.set_defaults(func=cmd_workbench)

    p = sub.add_parser("flash", help="install the MicroPython firmware on a board",
                       description="Copy the firmware (device/protocol, device/firmware, "
                       "main.py) to a MicroPython board with mpremote.")
    p.add_argument("--port", required=True, help="serial port of the board")
    p.add_argument("--dry-run", action="store_true",
                   help="list the files that would be installed; touch nothing")
    p.set_defaults(func=cmd_flash)

    p = sub.add_parser("deploy-model", help="upload a trained HMM to a walker",
                       description="Upload a model saved by `walkerlab train --recognizer "
                       "hmm` to the walker's on-device recognizer (kept on its flash).")
    p.add_argument("model", help="model file (.npz)")
    p.add_argument("--port", required=True, help="serial port of the walker")
    p.add_argument("--calibration", default=None, metavar="FILE.json",
                   help="walker calibration for the features (default: the stored one "
                   "for the walker's id)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_deploy_model)

    p = sub.add_parser("ports", help="list serial ports")
    p.set_defaults(func=cmd_ports)
    return parser


def _version() -> str:
    from host.models import app_version

    return app_version()


def main(argv: list[str] | None = None) -> int:
    global _ARGV
    parser = build_parser()
    _ARGV = list(argv) if argv is not None else sys.argv[1:]
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the subcommand that was given them, in one line
        _subcommand_parser(parser, _ARGV).error(
            "unrecognized arguments: %s" % " ".join(extra))
    try:
        return args.func(args)
    except user_errors() as exc:
        print("walkerlab %s: error: %s" % (args.command, exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
