"""Label interchange: ELAN .eaf (EAF 3.0) export/import and CSV export/import.

Times in files are the recording's time base. CSV keeps full float precision
(repr), so a round trip is exact. EAF counts whole milliseconds; importing snaps each
boundary back to the sample grid, which is exact while samples are more than 1 ms
apart.

ELAN alignment: each video is a MEDIA_DESCRIPTOR whose TIME_ORIGIN (ms) is the media
time at recording time 0, i.e. -b/a of the clock fit t_sensor = a t_video + b. ELAN
has no clock drift, so the fitted drift is written as a header PROPERTY; over a
30-minute session 100 ppm is 0.18 s.
"""
from __future__ import annotations

import csv
import datetime as _dt
import math
import os
import pathlib
import uuid
import xml.etree.ElementTree as ET
from typing import NamedTuple

import numpy as np

from host.errors import UserError
from host.outputs import check_free, exclusive_output

EAF_VERSION = "3.0"
EAF_SCHEMA = "http://www.mpi.nl/tools/elan/EAFv3.0.xsd"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
LINGUISTIC_TYPE = "walkerlab-activity"
CSV_FIELDS = ("track", "annotator", "source", "start_s", "stop_s", "activity")
MIME = {".mp4": "video/mp4", ".m4v": "video/mp4", ".mov": "video/quicktime",
        ".avi": "video/x-msvideo", ".mkv": "video/x-matroska", ".webm": "video/webm",
        ".mpg": "video/mpeg", ".mpeg": "video/mpeg", ".wav": "audio/x-wav"}


# ---- CSV ---------------------------------------------------------------------------
def export_csv(tracks, out) -> int:
    """tracks: LabelTrack-likes (name, annotator, source, segments()). Rows written."""
    n = 0
    with open(out, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_FIELDS)
        for tr in tracks:
            for a, b, c in tr.segments():
                w.writerow([tr.name, tr.annotator, tr.source, repr(float(a)),
                            repr(float(b)), c])
                n += 1
    return n


def import_csv(path, track: str | None = None, lines: list | None = None
               ) -> list[tuple[float, float, str]]:
    """Segments from a CSV with columns start_s, stop_s, activity (and optionally
    track: then `track` picks one when the file holds several). UserError on a file
    that is not such a table, naming the line.  ``lines`` (a list) receives the file
    line of each segment."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise UserError("%s: no such file" % path)
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except UnicodeDecodeError:
        raise UserError("%s: not a text CSV file" % path) from None
    except csv.Error as exc:
        raise UserError("%s: not a readable CSV file (%s)" % (path, exc)) from None
    if not rows:
        raise UserError("%s: empty file; expected a header start_s,stop_s,activity" % path)
    header = [h.strip().lower() for h in rows[0]]
    missing = [f for f in ("start_s", "stop_s", "activity") if f not in header]
    if missing:
        raise UserError("%s: not a label CSV: the header lacks %s (expected columns "
                        "start_s, stop_s, activity; got %s)"
                        % (path, ", ".join(missing), ",".join(rows[0])[:80]))
    col = {h: i for i, h in enumerate(header)}
    body = [(n, r) for n, r in enumerate(rows[1:], start=2) if any(x.strip() for x in r)]
    if "track" in col:
        names = sorted({r[col["track"]] for _, r in body if len(r) > col["track"]})
        if track is None and len(names) > 1:
            raise UserError("%s holds several tracks (%s): choose one with --track"
                            % (path, ", ".join(names)))
        if track is not None:
            if track not in names:
                raise UserError("%s has no track %r (tracks: %s)"
                                % (path, track, ", ".join(names) or "none"))
            body = [(n, r) for n, r in body if r[col["track"]] == track]
    out = []
    for n, r in body:
        try:
            a = float(r[col["start_s"]])
            b = float(r[col["stop_s"]])
            c = r[col["activity"]].strip()
        except (IndexError, ValueError):
            raise UserError("%s line %d: expected numbers start_s, stop_s and an "
                            "activity, got %s" % (path, n, ",".join(r)[:80])) from None
        if not (math.isfinite(a) and math.isfinite(b)) or b <= a:
            raise UserError("%s line %d: stop_s must be after start_s (%s, %s)"
                            % (path, n, r[col["start_s"]], r[col["stop_s"]]))
        if not c:
            raise UserError("%s line %d: empty activity" % (path, n))
        out.append((a, b, c))
        if lines is not None:
            lines.append(n)
    return out


# ---- EAF ---------------------------------------------------------------------------
def _ms(t: float) -> int:
    return max(0, int(round(t * 1000.0)))


def export_eaf(tracks, out, media=(), author: str = "WalkerLab") -> None:
    """Write an EAF 3.0 document: one TIER per track, one MEDIA_DESCRIPTOR per video.

    media: (video_path, a, b) per video, with t_sensor = a * t_video + b.
    """
    out = pathlib.Path(out)
    now = _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds")
    root = ET.Element("ANNOTATION_DOCUMENT", {
        "AUTHOR": author, "DATE": now, "FORMAT": EAF_VERSION, "VERSION": EAF_VERSION,
        "xmlns:xsi": XSI, "xsi:noNamespaceSchemaLocation": EAF_SCHEMA})
    header = ET.SubElement(root, "HEADER", {"MEDIA_FILE": "", "TIME_UNITS": "milliseconds"})
    for path, a, b in media:
        path = os.path.abspath(os.fspath(path))
        rel = os.path.relpath(path, out.parent.resolve())
        origin = int(round(-b / a * 1000.0))
        ET.SubElement(header, "MEDIA_DESCRIPTOR", {
            "MEDIA_URL": pathlib.Path(path).as_uri(),
            "MIME_TYPE": MIME.get(os.path.splitext(path)[1].lower(), "video/*"),
            "RELATIVE_MEDIA_URL": "./" + rel.replace(os.sep, "/"),
            "TIME_ORIGIN": str(origin)})
    n_ann = sum(len(t.segments()) for t in tracks)
    ET.SubElement(header, "PROPERTY", {"NAME": "URN"}).text = \
        "urn:nl-mpi-tools-elan-eaf:%s" % uuid.uuid4()
    ET.SubElement(header, "PROPERTY", {"NAME": "lastUsedAnnotationId"}).text = str(n_ann)
    for path, a, b in media:
        ET.SubElement(header, "PROPERTY", {"NAME": "walkerlab:drift_ppm:%s"
                                           % os.path.basename(os.fspath(path))}).text = \
            "%.3f" % ((a - 1.0) * 1e6)
    order = ET.SubElement(root, "TIME_ORDER")
    slots: dict[int, str] = {}
    for tr in tracks:
        for a, b, _ in tr.segments():
            for ms in (_ms(a), _ms(b)):
                slots.setdefault(ms, "")
    for i, ms in enumerate(sorted(slots), start=1):
        slots[ms] = "ts%d" % i
        ET.SubElement(order, "TIME_SLOT", {"TIME_SLOT_ID": slots[ms], "TIME_VALUE": str(ms)})
    ann_id = 0
    for tr in tracks:
        attrs = {"LINGUISTIC_TYPE_REF": LINGUISTIC_TYPE, "TIER_ID": tr.name}
        if tr.annotator:
            attrs["ANNOTATOR"] = tr.annotator
        tier = ET.SubElement(root, "TIER", attrs)
        for a, b, c in tr.segments():
            if _ms(b) <= _ms(a):
                continue  # shorter than a millisecond: not representable
            ann_id += 1
            ann = ET.SubElement(tier, "ANNOTATION")
            al = ET.SubElement(ann, "ALIGNABLE_ANNOTATION", {
                "ANNOTATION_ID": "a%d" % ann_id, "TIME_SLOT_REF1": slots[_ms(a)],
                "TIME_SLOT_REF2": slots[_ms(b)]})
            ET.SubElement(al, "ANNOTATION_VALUE").text = c
    ET.SubElement(root, "LINGUISTIC_TYPE", {
        "GRAPHIC_REFERENCES": "false", "LINGUISTIC_TYPE_ID": LINGUISTIC_TYPE,
        "TIME_ALIGNABLE": "true"})
    for stereotype, text in (
            ("Time_Subdivision", "Time subdivision of parent annotation's time interval, "
             "no time gaps allowed within this interval"),
            ("Symbolic_Subdivision", "Symbolic subdivision of a parent annotation. "
             "Annotations refering to the same parent are ordered"),
            ("Symbolic_Association", "1-1 association with a parent annotation"),
            ("Included_In", "Time alignable annotations within the parent annotation's "
             "time interval, gaps are allowed")):
        ET.SubElement(root, "CONSTRAINT", {"DESCRIPTION": text, "STEREOTYPE": stereotype})
    ET.indent(root)
    ET.ElementTree(root).write(out, encoding="UTF-8", xml_declaration=True)


def import_eaf(path) -> dict[str, list[tuple[float, float, str]]]:
    """{tier id: segments (s)} of the time-aligned tiers of an .eaf file."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise UserError("%s: no such file" % path)
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise UserError("%s: not an XML file (%s)" % (path, exc)) from None
    if root.tag != "ANNOTATION_DOCUMENT":
        raise UserError("%s: not an ELAN .eaf file (root element %s)" % (path, root.tag))
    slots = {}
    for s in root.iter("TIME_SLOT"):
        if s.get("TIME_VALUE") is not None:
            try:
                slots[s.get("TIME_SLOT_ID")] = int(s.get("TIME_VALUE")) / 1000.0
            except ValueError:
                raise UserError("%s: time slot %s has TIME_VALUE %r, not milliseconds"
                                % (path, s.get("TIME_SLOT_ID"),
                                   s.get("TIME_VALUE")[:40])) from None
    out = {}
    for tier in root.iter("TIER"):
        segs = []
        for al in tier.iter("ALIGNABLE_ANNOTATION"):
            a = slots.get(al.get("TIME_SLOT_REF1"))
            b = slots.get(al.get("TIME_SLOT_REF2"))
            value = (al.findtext("ANNOTATION_VALUE") or "").strip()
            if a is None or b is None or b <= a or not value:
                continue  # unaligned or empty annotations carry no segment
            segs.append((a, b, value))
        out[tier.get("TIER_ID", "tier")] = segs
    return out


# ---- recordings <-> files (the `walkerlab labels` commands) ---------------------------
def export_labels(path, fmt: str, out, tracks=None, overwrite: bool = False) -> int:
    """Write the recording's label tracks (all, or the named ones) as eaf or csv; the
    .eaf links every video synchronised in the annotator. Returns segments written."""
    from host.recording.labels import read_sync, read_tracks

    if fmt not in ("eaf", "csv"):
        raise UserError("--format must be eaf or csv, not %r" % fmt)
    check_free(out, overwrite)  # before reading the recording
    have = read_tracks(path)
    names = list(tracks) if tracks else sorted(have)
    missing = [n for n in names if n not in have]
    if missing:
        raise UserError("%s has no label track %s (tracks: %s)"
                        % (path, ", ".join(map(repr, missing)), ", ".join(sorted(have))
                           or "none"))
    if not names:
        raise UserError("%s has no label tracks to export" % path)
    chosen = [have[n] for n in names]
    media = [(r.video_path, r.a, r.b) for r in read_sync(path).values() if r.video_path]
    n = sum(len(t) for t in chosen)
    with exclusive_output(out, overwrite=overwrite) as tmp:
        if fmt == "csv":
            n = export_csv(chosen, tmp)
        else:
            export_eaf(chosen, tmp, media)
    return n


class SegmentProblem(NamedTuple):
    """One problem of an imported segment: ``kind`` is "overlap", "outside" or
    "unknown"; ``text`` names the segment's line (or ELAN annotation) and what is wrong."""

    index: int
    kind: str
    text: str


def check_segments(segments, refs, start_s: float, end_s: float, codes,
                   tolerance_s: float = 0.0) -> list[SegmentProblem]:
    """What is wrong with imported segments, one problem each, naming the segment's
    ``refs`` entry (a CSV line, an ELAN annotation): overlaps, segments outside the
    recording [start_s, end_s] (+- tolerance) and codes not in ``codes``."""
    problems = []
    order = sorted(range(len(segments)), key=lambda i: (segments[i][0], segments[i][1]))
    last = None
    for i in order:
        a, b, c = segments[i]
        if last is not None and a < segments[last][1] - 1e-9:
            la, lb, lc = segments[last]
            problems.append(SegmentProblem(i, "overlap", "%s (%g-%g s %s) overlaps %s "
                                           "(%g-%g s %s)" % (refs[i], a, b, c, refs[last],
                                                             la, lb, lc)))
        if last is None or b > segments[last][1]:
            last = i
    for i, (a, b, c) in enumerate(segments):
        if a < start_s - tolerance_s or b > end_s + tolerance_s:
            problems.append(SegmentProblem(i, "outside", "%s (%g-%g s %s) is outside the "
                                           "recording (%g-%g s)"
                                           % (refs[i], a, b, c, start_s, end_s)))
    known = set(codes)
    for i, (a, b, c) in enumerate(segments):
        if c not in known:
            problems.append(SegmentProblem(i, "unknown", "%s: unknown activity code %r "
                                           "(known: %s)" % (refs[i], c,
                                                            " ".join(sorted(known)))))
    return problems


def lenient_action(problem: SegmentProblem, segment, start_s: float, end_s: float) -> str:
    """What ``--lenient`` does about ``problem``, as the message's first words."""
    a, b, _ = segment
    if problem.kind == "overlap":
        return "trimmed (the later segment wins where they overlap)"
    if problem.kind == "outside":
        if b <= start_s or a >= end_s:
            return "dropped (nothing of it is in the recording)"
        return "clipped to the recording"
    return "kept the unknown code"


def recording_span(time_s) -> tuple[float, float, float]:
    """(start, end, sample period) of a recording's label time base, in seconds.

    Label times count from the recording's start, 0 s of its ``timestamps`` time base
    (the first sample is there or up to a period later); it ends when its last sample
    does, one period after that sample's time.
    """
    t = np.asarray(time_s, dtype=np.float64)
    period = float(np.median(np.diff(t))) if len(t) > 1 else 0.0
    return min(0.0, float(t.min())), float(t.max()) + period, period


def import_labels(path, file, annotator: str, track: str | None = None,
                  name: str | None = None, replace: bool = False, lenient: bool = False,
                  label_set=None, report=None) -> tuple[str, int]:
    """Add the segments of a CSV (or .eaf) file to the recording as a human track
    named `name` (default: the annotator), snapped to the sample grid.

    Times are seconds from the recording's start (`recording_span`), with a tolerance
    of one sample period at both ends, so a segment from 0 s to the recording's
    length (as `walkerlab info` rounds it) fits.

    Strict by default: overlapping segments, segments outside the recording and
    activity codes outside ``label_set`` (a LabelSet or codes; default: the exp1 and
    exp2 activities and any code already in the recording) are listed with their
    line numbers and the import is refused (UserError).  ``lenient``: overlaps are
    trimmed (the later segment wins), segments are clipped to the recording (dropped
    if wholly outside), unknown codes are kept, and ``report(message)`` is told what
    was done to each line ("trimmed ...: line 3 (...) overlaps ...")."""
    from host.annotate.labels import SampleGrid, normalise
    from host.recording import LabelTrack, open_recording
    from host.recording.labels import read_tracks, save_tracks

    if not annotator:
        raise UserError("--annotator must name who made the labels")
    if str(file).lower().endswith(".eaf"):
        tiers = import_eaf(file)
        if track is None and len(tiers) != 1:
            raise UserError("%s holds %d tiers (%s): choose one with --track"
                            % (file, len(tiers), ", ".join(tiers) or "none"))
        key = track if track is not None else next(iter(tiers))
        if key not in tiers:
            raise UserError("%s has no tier %r (tiers: %s)" % (file, key, ", ".join(tiers)))
        segments = tiers[key]
        refs = ["tier %s annotation %d" % (key, i + 1) for i in range(len(segments))]
    else:
        lines: list[int] = []
        segments = import_csv(file, track, lines)
        refs = ["line %d" % n for n in lines]
    if not segments:
        raise UserError("%s: no segments to import" % file)
    name = name or annotator
    rec = open_recording(path, untrusted=True)
    existing = read_tracks(path)
    if name in existing and not replace:
        raise UserError("%s already has a label track %r (use --name or --replace)"
                        % (path, name))
    if not len(rec.time_s):
        raise UserError("%s has no samples to label" % path)
    codes = _known_codes(label_set, existing)
    start, end, period = recording_span(rec.time_s)
    # One period of tolerance, and a hair more for times written in decimal.
    tolerance = period + 1e-9 * max(1.0, abs(end))
    problems = check_segments(segments, refs, start, end, codes, tolerance_s=tolerance)
    if problems and not lenient:
        more = " (and %d more)" % (len(problems) - 1) if len(problems) > 1 else ""
        raise UserError("%s: %s%s; fix the file, or import with --lenient to trim and "
                        "clip" % (file, problems[0].text, more))
    for p in problems:
        if report is not None:
            report("%s: %s" % (lenient_action(p, segments[p.index], start, end), p.text))
    segments = [(max(a, start), min(b, end), c) for a, b, c in segments]
    segments = [s for s in segments if s[1] > s[0]]
    grid = SampleGrid(rec.time_s)
    snapped = grid.snap_segments(normalise(segments))
    save_tracks(path, [LabelTrack.from_segments(name, snapped, annotator=annotator,
                                                source="human")])
    return name, len(snapped)


def _known_codes(label_set, existing_tracks) -> set[str]:
    """Codes an import may use: the label set's, else exp1/exp2's and the recording's."""
    from domain.activities import EXP1_CLASSES, EXP2_CLASSES

    if label_set is not None:
        return set(getattr(label_set, "classes", label_set))
    codes = set(EXP1_CLASSES) | set(EXP2_CLASSES)
    for tr in existing_tracks.values():
        codes.update(str(c) for _, _, c in tr.segments())
    return codes
