"""Model commands: train, evaluate, list, update and deploy recognizers, and the workbench window around them.

Each command is a thin layer over a library call; `register` adds them to the
`walkerlab` parser.
"""
from __future__ import annotations

import contextlib
import sys

from host.cli.common import (
    Alias,
    ListParams,
    command_line,
    has_display,
    model_specs,
    nonneg_float,
    nonneg_int,
    pos_int,
    print_json,
)
from host.errors import UserError
from host.evaluate import CLUSTER_MIN_CORES, CLUSTER_MIN_TASKS_PER_WORKER


def cmd_train(args) -> int:
    from host.datasets import read_label_map
    from host.evaluate import cache_recordings
    from host.feature_cache import CachedSessions, check_entries
    from host.models import check_out_path, save_model, save_to_registry, training_metadata
    from host.report import json_safe
    from recognizers.sources import fit_source

    specs = model_specs(args.recognizer, args.param)
    if len(specs) != 1:
        raise UserError("train takes one --recognizer (evaluate compares several)")
    spec = specs[0]
    if args.out is not None:
        check_out_path(args.out, args.overwrite)  # before any work
    label_map = read_label_map(args.label_map)
    metrics = None
    # The folds of --evaluate and the features may run on a cluster; without
    # --evaluate on this machine, starting one costs more than it saves.
    scheduler, note = resolve_scheduler(args, len(args.files)) if args.evaluate else (
        "serial" if args.scheduler in ("auto", "local") else args.scheduler, "")
    with contextlib.ExitStack() as stack:
        client = None
        if scheduler != "serial":
            from host.evaluate import dask_client

            client = stack.enter_context(dask_client(scheduler, args.workers))
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
            if note:
                print(note, file=sys.stderr)
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
        params=spec.params, command=command_line(),
        metrics=json_safe(metrics) if metrics is not None else None,
        sample_rate_hz=model.sample_rate_hz_)
    if label_map:
        model.metadata_["label_map"] = label_map
    if args.out is None:
        path = save_to_registry(model, "%s-%s" % (spec.kind, args.feature_set))
    else:
        path = save_model(model, args.out, overwrite=args.overwrite)
    print("saved %s (%s, %d classes: %s) to %s" % (
        spec.kind, args.feature_set, len(model.classes_),
        " ".join(map(str, model.classes_)), path), file=sys.stderr)
    return 0


def resolve_scheduler(args, n_tasks: int) -> tuple[str, str]:
    """``(scheduler, note)`` for ``n_tasks`` folds: --scheduler, or what auto chose.

    ``note`` is the line to print once the run succeeded ("" when the user chose),
    so a refused input still ends in one line.
    """
    from host.evaluate import choose_scheduler

    scheduler, why = choose_scheduler(args.scheduler, n_tasks, args.workers)
    if args.scheduler != "auto":
        return scheduler, ""
    return scheduler, ("walkerlab %s: ran %s (--scheduler auto: %s; --scheduler "
                       "serial|local chooses)" % (args.command, "serially"
                                                  if scheduler == "serial" else
                                                  "on a local Dask cluster", why))


def cmd_evaluate(args) -> int:
    from tqdm import tqdm

    from host.datasets import read_label_map
    from host.evaluate import evaluate_recordings

    specs = model_specs(args.recognizer, args.param)
    label_map = read_label_map(args.label_map)
    if args.report:
        from host.report import check_report_folder

        check_report_folder(args.report, args.overwrite)  # before any work
    bars = []  # made at the first fold, so a refused input shows no empty bar

    def progress(done, total):
        if not bars:
            bars.append(tqdm(desc="folds (%s)" % scheduler, unit="fold", total=total,
                             disable=args.quiet))
        bar = bars[0]
        bar.total = total
        bar.update(done - bar.n)

    scheduler, note = resolve_scheduler(args, len(args.files) * len(specs))
    try:
        results = evaluate_recordings(
            args.files, specs, feature_set=args.feature_set, track=args.labels,
            decoder=args.decoder, own_sessions=args.own_sessions,
            transition_window=args.transition_window, scheduler=scheduler,
            n_workers=args.workers, progress=progress, label_map=label_map,
            cache_dir=args.feature_cache, variants=args.variants)
    finally:
        for bar in bars:
            bar.close()
    if note:
        print(note, file=sys.stderr)
    command = command_line()
    summary = {"command": command, "files": [str(f) for f in args.files], "models": results}
    if args.report:
        from host.report import write_report

        index = write_report(args.report, summary, overwrite=args.overwrite)
        print("report written to %s" % index, file=sys.stderr)
    if args.json:
        print_json(summary)
        return 0
    for result in results:
        n_subjects = len(result["per_subject"])
        print("%s %s on %d subjects, %s features, decoder %s%s" % (
            result["recognizer"], result["params"] or "", n_subjects, result["feature_set"],
            result["decoder"], " (variant %s: the same fits, scored another way)"
            % result["variant"] if result.get("variant") else ""))
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


def cmd_models(args) -> int:
    import os

    from host.models import (
        ANALYSIS_MODELS,
        DEFAULT_MODEL,
        default_models_dir,
        list_analysis_models,
        list_models,
    )

    if args.dir is not None and not os.path.exists(args.dir):
        raise UserError("%s: no such folder" % args.dir)
    folder = args.dir or default_models_dir()
    entries, problems = list_models(folder)
    others = list_analysis_models(folder)
    if args.json:
        print_json([{"path": e.path, "kind": e.kind, "feature_set": e.feature_set,
                     "classes": e.classes, "metadata": e.metadata} for e in entries]
                   + [{"path": path, "analysis_model": kind} for path, kind in others]
                   + [{"broken": p} for p in problems])
        return 0
    if not entries:
        print("no recognizers in %s (walkerlab train saves there unless given --out)"
              % folder)
    for e in entries:
        acc = e.accuracy
        score = ("LOSO w0 %.1f%% w25 %.1f%%" % (100 * acc["0"], 100 * acc["25"])
                 if "0" in acc and "25" in acc else "not evaluated")
        print("%s\n    %s recognizer, %s features, %d classes, %d recordings, %s, "
              "trained %s%s" % (e.path, e.kind, e.feature_set, len(e.classes),
                                e.n_recordings, score, e.trained_at or "?",
                                ", runs on the walker" if e.runs_on_device else ""))
    for path, kind in others:
        print("%s\n    %s, not a recognizer" % (path, ANALYSIS_MODELS[kind]))
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
                     operation="learn", command=command_line(), frames=frames,
                     recordings=[os.path.abspath(f) for f in args.files])
    print("%s learnt from %d frames in %d recordings; saved to %s"
          % (model.kind, frames, len(args.files), out), file=sys.stderr)
    return 0


def cmd_deploy_model(args) -> int:
    from host.deploy import deploy_model

    result = deploy_model(args.model, args.port, calibration_path=args.calibration,
                          progress=not args.quiet)
    print("deployed %s to %s: %d bytes, %s features, classes %s (calibration: %s)"
          % (args.model, result["walker_id"], result["bytes"], result["feature_set"],
             " ".join(result["classes"]), result["calibration"]), file=sys.stderr)
    return 0


def cmd_flash(args) -> int:
    from host.flash import flash

    files = flash(args.port, dry_run=args.dry_run)
    print(("would install %d files on %s:" if args.dry_run else
           "installed %d files on %s:") % (len(files), args.port), file=sys.stderr)
    for name in files:
        print(name)
    return 0


def cmd_workbench(args) -> int:
    from host.workbench.app import run_workbench

    if args.after is not None and not args.screenshot:
        raise UserError("--after goes with --screenshot FILE.png")
    if args.param and not args.run:
        raise UserError("--param goes with --run KINDS")
    if not (has_display() or sys.platform in ("win32", "darwin")):
        raise UserError("the workbench needs a display (or QT_QPA_PLATFORM=offscreen "
                        "with --screenshot); `walkerlab evaluate` works without one")
    specs = model_specs(args.run, args.param) if args.run else ()
    return run_workbench(args.files, args.models, screenshot=args.screenshot,
                         after_s=args.after, run_specs=specs, tab=args.tab,
                         feature_set=args.feature_set)


def register(sub) -> None:
    """Add the models commands to the subparsers ``sub``."""
    def add_training_args(p):
        p.add_argument("files", nargs="+", help="recordings (.h5), each given once")
        p.add_argument("--recognizer", default="hmm",
                       help="recognizer kind, e.g. hmm, hmm-em, bmm, crf (an unknown "
                       "name lists every kind); evaluate takes several, comma-separated")
        p.add_argument("--feature-set", choices=("cop", "loadcells"), default="cop",
                       help="COP + TotalLoad, or the four raw load cells (thesis 6.6)")
        p.add_argument("--track", dest="labels", default=None, action=Alias,
                       deprecated=["--labels"], help="label track to learn from (default: "
                       "the only human track, else the simulator's; --labels is the "
                       "deprecated spelling)")
        p.add_argument("--label-map", default=None, metavar="FILE.json",
                       help='merge label sets: a JSON object of old -> new codes, e.g. '
                       '{"WF": "W", "WB": "W"} (recordings with different label sets are '
                       'refused without one)')
        p.add_argument("--param", action="append", default=[], metavar="[KIND:]KEY=VALUE",
                       help="recognizer setting as `--list-params KIND` lists them, e.g. "
                       "tau=4000 for hmm, c2=100 for crf, or bmm:n_init=2 (repeatable; "
                       "KIND: sets it for that recognizer only, without KIND it goes to "
                       "every --recognizer)")
        p.add_argument("--quiet", action="store_true", help="no progress bars")
        p.add_argument("--scheduler", default="auto", metavar="auto|serial|local|ADDRESS",
                       help="run the folds (train: of --evaluate) and the feature "
                       "computations in this process (serial), on a Dask cluster on this "
                       "machine (local) or on the Dask scheduler at ADDRESS (`dask "
                       "scheduler` + `dask worker ADDRESS` on each machine; workers read "
                       "the recordings from storage shared with this machine); auto, the "
                       "default, runs serial unless there are at least %d cores and %d "
                       "folds per core, and says which it chose"
                       % (CLUSTER_MIN_CORES, CLUSTER_MIN_TASKS_PER_WORKER))
        p.add_argument("--workers", type=pos_int, default=None,
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
    p.add_argument("--list-params", action=ListParams, metavar="RECOGNIZER",
                   help="list the recognizer's settings (--param keys) with types and "
                   "defaults, and exit")
    p.add_argument("--evaluate", action="store_true",
                   help="first run leave-one-subject-out and store the metrics in the model")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="cross-validate a recognizer (thesis 6.6)")
    add_training_args(p)
    p.add_argument("--cv", choices=("loso",), default="loso",
                   help="leave-one-subject-out")
    p.add_argument("--decoder", choices=("predict", "filter", "smooth"), default="predict",
                   help="best sequence (Viterbi), causal filter, or smoothed argmax")
    p.add_argument("--own-sessions", type=nonneg_int, default=0,
                   help="sessions of the test subject also used for training "
                   "(thesis experiment 1: 1)")
    p.add_argument("--transition-window", type=nonneg_int, default=25, metavar="FRAMES",
                   help="tolerance for the headline transition precision/recall "
                   "(0: the thesis's formula taken literally)")
    p.add_argument("--variants", action="store_true",
                   help="also score each recognizer's evaluation variants from the same "
                   "fits (an unsupervised one under the other state mapping: one-to-one "
                   "Hungarian beside majority), each labelled as a variant")
    p.add_argument("--report", metavar="DIR", default=None,
                   help="write an HTML report with plots and the JSON metrics as the new "
                   "folder DIR")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --report "
                   "folder")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    p.set_defaults(func=cmd_evaluate)

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
    p.add_argument("--after", type=nonneg_float, default=None, metavar="SECONDS",
                   help="take the --screenshot this many seconds after the runs (default 1)")
    p.set_defaults(func=cmd_workbench)

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

    p = sub.add_parser("flash", help="install the MicroPython firmware on a board",
                       description="Copy the firmware (device/protocol, device/firmware, "
                       "main.py) to a MicroPython board with mpremote.")
    p.add_argument("--port", required=True, help="serial port of the board")
    p.add_argument("--dry-run", action="store_true",
                   help="list the files that would be installed; touch nothing")
    p.set_defaults(func=cmd_flash)
