"""Data commands: simulated sessions, a recording's summary and tables, labels, annotation and synthetic video.

Each command is a thin layer over a library call; `register` adds them to the
`walkerlab` parser.
"""
from __future__ import annotations

import sys

from device.sim.activities import COURSES
from host.cli.common import (
    Alias,
    has_display,
    nonneg_float,
    number,
    pos_float,
    pos_int,
    print_json,
    rate_hz,
)
from host.errors import UserError


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


def _info_dict(path, track=None) -> dict:
    from host.recording import open_recording

    rec = open_recording(path, untrusted=True)  # a FILE from the user
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
        print_json(info)
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
                                report=lambda m: print("walkerlab labels import: %s" % m,
                                                       file=sys.stderr))
        print("%s: track %r, %d segment(s)" % (args.file, name, n))
    return 0


def cmd_annotate(args) -> int:
    from host.annotate.app import run_annotator

    if not has_display():
        raise UserError("the annotator needs a display (or QT_QPA_PLATFORM=offscreen "
                        "with --screenshot)")
    return run_annotator(args.file, args.video or (), label_set=args.label_set,
                         annotator=args.annotator, screenshot=args.screenshot,
                         cursor_s=args.at)


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


def register(sub) -> None:
    """Add the data commands to the subparsers ``sub``."""
    p = sub.add_parser("simulate", help="write labelled simulated sessions to files",
                       description="Simulate subjects walking a course and write each "
                       "session as a recording (no serial link involved).")
    p.add_argument("--course", choices=COURSES, required=True,
                   help="the course each subject walks (thesis experiments 1 and 2, or free)")
    p.add_argument("--subjects", type=pos_int, default=1, help="sessions to write, one "
                   "per simulated subject (default 1)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the first subject (the next ones count up)")
    p.add_argument("--duration", type=pos_float, default=None,
                   help="seconds (required for the endless free-living course)")
    p.add_argument("--rate", type=rate_hz, default=50, help="sample rate in Hz")
    p.add_argument("--label-jitter", type=nonneg_float, default=0.0, metavar="SECONDS",
                   help="human-like jitter of the ground-truth activity boundaries")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--overwrite", action="store_true",
                   help="replace existing files of the same name")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--sync-taps", action="store_true",
                   help="knock on the frame 2 s after the start and 3 s before the end "
                   "(sync events for `walkerlab render-video` and the annotator)")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("info", help="summary of a recording")
    p.add_argument("file", help="recording (.h5)")
    p.add_argument("--track", dest="labels", default=None, action=Alias,
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
    q = lsub.add_parser("import", help="add a CSV (or .eaf) file's labels as a track",
                        description="Add a CSV (or ELAN .eaf) file's segments to the "
                        "recording as a label track. Times are seconds from the "
                        "recording's start (0 s; the time_s column of `walkerlab export`): "
                        "a segment from 0 s to the recording's length as `walkerlab info` "
                        "shows it fits, with one sample period of tolerance at both ends.")
    q.add_argument("file", help="recording (.h5)")
    q.add_argument("labels_file", metavar="CSV", help="columns start_s, stop_s, activity "
                   "(seconds from the recording's start)")
    q.add_argument("--annotator", required=True, help="who made the labels")
    q.add_argument("--track", default=None, help="which track/tier of the file")
    q.add_argument("--name", default=None, help="track name (default: the annotator)")
    q.add_argument("--replace", action="store_true", help="replace a track of that name")
    q.add_argument("--label-set", default=None, metavar="SET",
                   help="allowed activity codes: exp1, exp2, a JSON file or codes A,B,C "
                   "(default: exp1 and exp2's, and codes already in the recording)")
    q.add_argument("--lenient", action="store_true",
                   help="trim overlaps, clip segments to the recording (drop those wholly "
                   "outside) and keep unknown codes, saying what was done to each line, "
                   "instead of refusing the file")
    q.set_defaults(func=cmd_labels)

    p = sub.add_parser("annotate", help="label a recording against its videos",
                       description="Open the annotator: videos beside the sensor plots, "
                       "keyboard labelling, sync taps, agreement. Labels are autosaved into "
                       "the recording; raw data is never modified.")
    p.add_argument("file", help="recording (.h5)")
    p.add_argument("--video", action="append", metavar="V",
                   help="a video (rear, then forward camera); at most two")
    p.add_argument("--label-set", dest="label_set", default=None, metavar="SET",
                   action=Alias, deprecated=["--labels"],
                   help="label set: exp1, exp2, a JSON file or codes A,B,C (--labels is "
                   "the deprecated spelling)")
    p.add_argument("--annotator", default="", help="your name (new tracks carry it)")
    p.add_argument("--screenshot", metavar="FILE.png", default=None,
                   help="save a picture of the window and quit")
    p.add_argument("--at", type=nonneg_float, default=None, metavar="SECONDS",
                   help="put the cursor here first")
    p.set_defaults(func=cmd_annotate)

    p = sub.add_parser("render-video", help="synthetic camera video of a simulated session",
                       description="Render a top-down camera video of a (simulated) "
                       "recording: feet, leg loads, the activity, and a flash at each sync "
                       "tap. The camera clock is t_recording = (1 + DRIFT*1e-6) * t_video "
                       "+ OFFSET.")
    p.add_argument("file", help="recording (.h5), ideally simulated with --sync-taps")
    p.add_argument("--out", required=True, help="video file to write (.mp4)")
    p.add_argument("--offset", type=number(float), default=0.0, metavar="S",
                   help="recording time at video time 0 (negative: the camera started "
                   "first)")
    p.add_argument("--drift", type=number(float), default=0.0, metavar="PPM",
                   help="camera clock drift in parts per million")
    p.add_argument("--fps", type=pos_int, default=10, help="frames per second (default 10)")
    p.add_argument("--size", default="160x120", metavar="WxH",
                   help="frame size in pixels (default 160x120)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_render_video)
