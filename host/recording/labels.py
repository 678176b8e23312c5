"""Editing a closed recording's labels and video sync, crash-safely.

The annotator saves often (autosave). Each save replaces whole label tracks; a track
is first written completely under /annotations/_staging, flushed, and only then
swapped in (delete the old link, move the new one). A crash before the swap leaves
the old track; a crash inside the swap leaves the new one staged, and the next save
or read (finish_staged) completes the move. Nothing outside /annotations is opened
for writing, so raw bytes and samples are never touched.

Video synchronisation lives beside the tracks, in /annotations/_sync/<video name>:
a table of anchors (t_video_s, t_sensor_s, sample, frame) with the fit as
attributes (a, b: t_sensor = a * t_video + b; video_path; rms_s; modified).
Groups under /annotations are not label tracks (readers skip them), and recover()
copies /annotations whole, so both survive it.
"""
from __future__ import annotations

from dataclasses import dataclass

import h5py
import numpy as np

from host.recording import layout as L
from host.recording.reader import (
    LabelTrack, RecordingFormatError, check_format, open_h5, text,
)
from host.recording.writer import (
    check_track_name, check_track, create_track_table, iso_time, walkerlab_version,
)

STAGING = L.ANNOTATIONS + "/_staging"
SYNC = L.ANNOTATIONS + "/_sync"
ANCHOR_DTYPE = np.dtype([("t_video_s", "<f8"), ("t_sensor_s", "<f8"), ("sample", "<i8"),
                         ("frame", "<i8")])
SYNC_ATTRS = ("video_path", "a", "b", "rms_s", "modified")


class LabelFormatError(RecordingFormatError):
    """A label track or sync table that is damaged or not ours."""


def finish_staged(f: h5py.File) -> list[str]:
    """Complete swaps a crash interrupted: staged tracks whose final name is free."""
    done = []
    if STAGING in f:
        for name in list(f[STAGING]):
            final = L.ANNOTATIONS + "/" + name
            if final in f:
                del f[STAGING + "/" + name]  # the swap never started: old track stands
            else:
                f.move(STAGING + "/" + name, final)
                done.append(name)
    return done


def _open(path) -> h5py.File:
    f = open_h5(path, "r+")
    try:
        check_format(f, path)
        f.require_group(L.ANNOTATIONS)
        finish_staged(f)
    except BaseException:
        f.close()
        raise
    return f


def save_tracks(path, tracks: list[LabelTrack], delete: tuple[str, ...] = ()) -> None:
    """Replace (or create) these tracks and delete others, one crash-safe swap each.

    A track keeps its 'created' time if it existed; 'modified' is now.
    """
    now = iso_time()
    with _open(path) as f:
        for track in tracks:
            final = check_track(track)
            name = track.name
            created = now
            if final in f:
                created = text(f[final].attrs.get("created", "")) or now
            f.require_group(STAGING)
            staged = STAGING + "/" + name
            if staged in f:
                del f[staged]
            create_track_table(f, staged, track, created=created, modified=now)
            f.flush()  # the new track is complete on disk before the old one goes
            if final in f:
                del f[final]
            f.move(staged, final)
            f.flush()
        for name in delete:
            final = L.ANNOTATIONS + "/" + check_track_name(name)
            if final in f:
                del f[final]
        f.attrs["writer_version"] = walkerlab_version()
        f.flush()


def read_tracks(path) -> dict[str, LabelTrack]:
    """Every label track, checked: LabelFormatError names a damaged or foreign one."""
    out = {}
    with open_h5(path) as f:
        check_format(f, path)
        if L.ANNOTATIONS not in f:
            return out
        for name, ds in f[L.ANNOTATIONS].items():
            if not isinstance(ds, h5py.Dataset):
                continue
            names = ds.dtype.names or ()
            if ds.ndim != 1 or not {"start_s", "stop_s", "activity"} <= set(names):
                raise LabelFormatError(
                    "%s: label track %r is not a WalkerLab label table (fields %s; "
                    "expected start_s, stop_s, activity)"
                    % (path, name, ", ".join(names) or "none"))
            try:
                rows = ds[()]
                out[name] = LabelTrack.from_segments(
                    name, [(a, b, text(c)) for a, b, c in
                           zip(rows["start_s"], rows["stop_s"], rows["activity"])],
                    **{k: text(ds.attrs.get(k, "")) for k in L.LABEL_ATTRS})
            except (ValueError, TypeError, OSError) as exc:
                raise LabelFormatError("%s: label track %r is damaged: %s"
                                       % (path, name, str(exc).splitlines()[0])) from None
    return out


@dataclass
class SyncRecord:
    """One video's anchors and clock fit, as stored."""

    video: str  # name (the file's base name)
    video_path: str
    anchors: np.ndarray  # ANCHOR_DTYPE
    a: float
    b: float
    rms_s: float
    modified: str = ""


def write_sync(path, record: SyncRecord) -> None:
    """Store (replace) one video's anchors and fit, crash-safely like a track."""
    name = record.video.replace("/", "_") or "video"
    with _open(path) as f:
        g = f.require_group(SYNC)
        tmp = "." + name + ".new"
        if tmp in g:
            del g[tmp]
        rows = np.asarray(record.anchors, dtype=ANCHOR_DTYPE).reshape(-1)
        ds = g.create_dataset(tmp, data=rows, maxshape=(None,), chunks=True)
        ds.attrs["video_path"] = record.video_path
        ds.attrs["a"] = float(record.a)
        ds.attrs["b"] = float(record.b)
        ds.attrs["rms_s"] = float(record.rms_s)
        ds.attrs["modified"] = iso_time()
        f.flush()
        if name in g:
            del g[name]
        g.move(tmp, name)
        f.flush()


def read_sync(path) -> dict[str, SyncRecord]:
    out = {}
    with open_h5(path) as f:
        check_format(f, path)
        if SYNC not in f:
            return out
        for name, ds in f[SYNC].items():
            if name.startswith(".") or not isinstance(ds, h5py.Dataset):
                continue
            try:
                rows = np.asarray(ds[()], dtype=ANCHOR_DTYPE)
                a = ds.attrs
                out[name] = SyncRecord(name, text(a.get("video_path", "")), rows,
                                       float(a["a"]), float(a["b"]),
                                       float(a.get("rms_s", 0.0)),
                                       text(a.get("modified", "")))
            except (KeyError, ValueError, TypeError) as exc:
                raise LabelFormatError("%s: video sync %r is damaged: %s"
                                       % (path, name, exc)) from None
    return out
