"""Editing a closed recording's labels and video sync, crash-safely.

The annotator saves often (autosave), and HDF5 does not promise that a metadata write
is atomic: a process killed inside one can leave the file's metadata unreadable. So a
label save never writes into the recording in place. It copies the recording to a
temporary file beside it, edits the copy, fsyncs it and renames it over the original
(copy-on-write). A kill at any instant leaves the original (old labels) or the renamed
copy (new labels), never neither; a failed save or import changes nothing; the sensor
data is copied byte for byte, never rewritten. The cost is one file copy per save,
about 20 MB per recorded hour (docs/reliability.md gives the measured times).

Files saved by WalkerLab 0.1 may hold a track staged under /annotations/_staging by
an interrupted in-place save; the next save (finish_staged) completes that move.

Video synchronisation lives beside the tracks, in /annotations/_sync/<video name>:
a table of anchors (t_video_s, t_sensor_s, sample, frame) with the fit as
attributes (a, b: t_sensor = a * t_video + b; video_path; rms_s; modified).
Groups under /annotations are not label tracks (readers skip them), and recover()
copies /annotations whole, so both survive it.
"""
from __future__ import annotations

import contextlib
import glob
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from host.recording import layout as L
from host.recording.reader import (
    LabelTrack, ReadBudget, RecordingFormatError, _read_track, check_format,
    checked_dataset, label_track_names, open_h5, text,
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


SAVING_SUFFIX = ".saving-"  # temporary copies: .<name>.saving-<pid>
STALE_AFTER_S = 600.0  # a temporary copy this old belongs to a save that died


def _fsync(path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_folder(folder) -> None:
    if os.name != "posix":  # Windows cannot open a folder; its rename is journaled
        return
    with contextlib.suppress(OSError):
        _fsync(folder)


def _remove_stale_copies(path: Path) -> None:
    for tmp in glob.glob(glob.escape(str(path.parent / ("." + path.name + SAVING_SUFFIX)))
                         + "*"):
        with contextlib.suppress(OSError):
            if time.time() - os.path.getmtime(tmp) > STALE_AFTER_S:
                os.remove(tmp)


@contextlib.contextmanager
def _edit(path):
    """Yield a private copy of the recording opened for writing; on success it
    replaces the original in one rename, on any failure it is deleted."""
    path = Path(os.fspath(path))
    with open_h5(path, live_ok=False) as f:  # a foreign, damaged or live file fails
        check_format(f, path)
    _remove_stale_copies(path)
    tmp = path.with_name("." + path.name + SAVING_SUFFIX + str(os.getpid()))
    try:
        shutil.copyfile(path, tmp)
        shutil.copymode(path, tmp)
        with h5py.File(tmp, "r+") as f:
            f.require_group(L.ANNOTATIONS)
            finish_staged(f)
            yield f
            f.attrs["writer_version"] = walkerlab_version()
        _fsync(tmp)  # the copy is on disk before it takes the recording's name
        os.replace(tmp, path)
        _fsync_folder(path.parent)  # and the rename survives a power cut
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def save_tracks(path, tracks: list[LabelTrack], delete: tuple[str, ...] = ()) -> None:
    """Replace (or create) these tracks and delete others, in one atomic save.

    A track keeps its 'created' time if it existed; 'modified' is now.
    """
    now = iso_time()
    finals = [check_track(track) for track in tracks]  # bad names fail before any copy
    doomed = [L.ANNOTATIONS + "/" + check_track_name(name) for name in delete]
    with _edit(path) as f:
        for track, final in zip(tracks, finals):
            created = now
            if final in f:
                created = text(f[final].attrs.get("created", "")) or now
                del f[final]
            create_track_table(f, final, track, created=created, modified=now)
        for final in doomed:
            if final in f:
                del f[final]


def read_tracks(path) -> dict[str, LabelTrack]:
    """Every label track, checked: LabelFormatError names a damaged or foreign one."""
    out = {}
    with open_h5(path) as f:
        check_format(f, path)
        budget = ReadBudget(path)
        for name in label_track_names(f):
            where = L.ANNOTATIONS + "/" + name
            try:
                raw = _read_track(f, where, budget)
            except RecordingFormatError as exc:
                detail = str(exc)
                detail = detail[len(str(path)) + 2:] if detail.startswith(str(path)) \
                    else detail
                raise LabelFormatError("%s: label track %r is not a WalkerLab label table "
                                       "(%s; expected start_s, stop_s, activity)"
                                       % (path, name, detail)) from None
            except (TypeError, OSError) as exc:
                raise LabelFormatError("%s: label track %r is damaged: %s"
                                       % (path, name, str(exc).splitlines()[0])) from None
            try:  # the checks a saved track passed: finite, start < stop, named
                out[name] = LabelTrack.from_segments(
                    name, raw, **{k: getattr(raw, k) for k in L.LABEL_ATTRS})
            except ValueError as exc:
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
    """Store (replace) one video's anchors and fit, atomically like a label save."""
    name = record.video.replace("/", "_") or "video"
    rows = np.asarray(record.anchors, dtype=ANCHOR_DTYPE).reshape(-1)
    with _edit(path) as f:
        g = f.require_group(SYNC)
        if name in g:
            del g[name]
        ds = g.create_dataset(name, data=rows, maxshape=(None,), chunks=True)
        ds.attrs["video_path"] = record.video_path
        ds.attrs["a"] = float(record.a)
        ds.attrs["b"] = float(record.b)
        ds.attrs["rms_s"] = float(record.rms_s)
        ds.attrs["modified"] = iso_time()


def read_sync(path) -> dict[str, SyncRecord]:
    out = {}
    with open_h5(path) as f:
        check_format(f, path)
        if SYNC not in f:
            return out
        if not isinstance(f[SYNC], h5py.Group):
            raise LabelFormatError("%s: %s is a dataset, not a group" % (path, SYNC))
        budget = ReadBudget(path)
        for name, ds in f[SYNC].items():
            if name.startswith(".") or not isinstance(ds, h5py.Dataset):
                continue
            try:
                rows = np.asarray(checked_dataset(f, SYNC + "/" + name, ANCHOR_DTYPE, (),
                                                  budget)[()], dtype=ANCHOR_DTYPE)
                a = ds.attrs
                out[name] = SyncRecord(name, text(a.get("video_path", "")), rows,
                                       float(a["a"]), float(a["b"]),
                                       float(a.get("rms_s", 0.0)),
                                       text(a.get("modified", "")))
            except RecordingFormatError as exc:
                raise LabelFormatError(str(exc)) from None
            except (KeyError, ValueError, TypeError, OSError) as exc:
                raise LabelFormatError("%s: video sync %r is damaged: %s"
                                       % (path, name, str(exc).splitlines()[0])) from None
    return out
