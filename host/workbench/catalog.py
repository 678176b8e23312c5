"""Recordings as the workbench lists them: who, which walker, which labels, how long.

Only attributes, label tables and the first and last timestamp are read, so a folder
of long recordings lists quickly.
"""
from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass, field

from host.errors import UserError, user_errors

RECORDING_SUFFIXES = (".h5", ".hdf5")
ANY = ""  # a filter that lets everything through


@dataclass(frozen=True)
class TrackInfo:
    name: str
    source: str  # human | model | simulator
    annotator: str
    classes: tuple[str, ...]


@dataclass(frozen=True)
class RecordingInfo:
    """One recording of the workbench's table."""

    path: str
    subject: str
    walker: str
    duration_s: float
    tracks: tuple[TrackInfo, ...] = field(default_factory=tuple)

    @property
    def annotators(self) -> tuple[str, ...]:
        return tuple(sorted({t.annotator or t.name for t in self.tracks}))

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(sorted({c for t in self.tracks for c in t.classes}))

    @property
    def label_set(self) -> str:
        return label_set_name(self.classes)


def label_set_name(classes) -> str:
    """The presets (exp1, exp2) whose activities cover the labels ('exp1/exp2' when
    only activities both share occur), else 'N classes'."""
    from domain.activities import EXP1_CLASSES, EXP2_CLASSES

    used = set(classes)
    if not used:
        return "unlabelled"
    names = [name for name, preset in (("exp1", EXP1_CLASSES), ("exp2", EXP2_CLASSES))
             if used <= set(preset)]
    return "/".join(names) if names else "%d classes" % len(used)


def describe_recording(path) -> RecordingInfo:
    """RecordingInfo of one file; UserError (one line) if it is not a readable recording."""
    import numpy as np

    from host.recording import layout as L
    from host.recording.labels import read_tracks
    from host.recording.reader import RecordingFormatError, open_h5, check_format, _plain

    from host.recording.structure_probe import probe_structure

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise UserError("%s: no such file" % path)
    probe = probe_structure(path)  # files come from anywhere: bound libhdf5's memory
    if not probe.ok:
        raise UserError(probe.message(path))
    try:
        with open_h5(path) as f:
            check_format(f, path)
            attrs = {k: _plain(v) for k, v in f.attrs.items()}
            duration = 0.0
            name = L.SAMPLES + "/timestamps"
            if name in f and f[name].shape[0]:
                ts = f[name]
                duration = float(ts[-1] - ts[0])
        tracks = read_tracks(path)
    except (OSError, RecordingFormatError) as exc:
        raise UserError(str(exc).splitlines()[0] if str(exc) else
                        "%s: not a WalkerLab recording" % path) from None
    infos = tuple(TrackInfo(t.name, t.source, t.annotator,
                            tuple(sorted(set(np.asarray(t.activity, dtype=str).tolist()))))
                  for _, t in sorted(tracks.items()))
    return RecordingInfo(path, str(attrs.get("subject_id") or ""),
                         str(attrs.get("walker_id") or ""), duration, infos)


@dataclass(frozen=True)
class BrokenFile:
    """A file of the workbench's table that is not a readable recording, and why."""

    path: str
    reason: str  # one line


def describe_recordings(paths, progress=None, results=None) -> list:
    """describe_recording of each path in turn: its RecordingInfo, or a BrokenFile
    with the one-line reason.

    ``progress(done, total)`` is called before the first file and after each one (the
    workbench's task runner stops the work there when Cancel is pressed). The outcomes
    are appended to ``results`` (a new list by default), which is returned, so a caller
    that stops early keeps the files checked so far.
    """
    from host.gui.processing import one_line

    results = [] if results is None else results
    paths = [os.fspath(p) for p in paths]
    if progress is not None:
        progress(0, len(paths))
    for done, path in enumerate(paths, start=1):
        try:
            results.append(describe_recording(path))
        except user_errors() as exc:
            results.append(BrokenFile(path, one_line(exc)))
        if progress is not None:
            progress(done, len(paths))
    return results


def recordings_in(folder) -> list[str]:
    """The recording files in a folder and its subfolders, sorted."""
    root = pathlib.Path(folder)
    if not root.is_dir():
        raise UserError("%s is not a folder" % folder)
    return sorted(str(p) for p in root.rglob("*")
                  if p.suffix.lower() in RECORDING_SUFFIXES and p.is_file())


@dataclass(frozen=True)
class Filters:
    """Exact-match filters; ANY ('') matches everything."""

    subject: str = ANY
    walker: str = ANY
    annotator: str = ANY
    label_set: str = ANY

    def accepts(self, info: RecordingInfo) -> bool:
        return ((not self.subject or info.subject == self.subject)
                and (not self.walker or info.walker == self.walker)
                and (not self.annotator or self.annotator in info.annotators)
                and (not self.label_set or info.label_set == self.label_set))


def filter_values(infos) -> dict[str, list[str]]:
    """The choices each filter offers: every value present among the recordings."""
    return {
        "subject": sorted({i.subject for i in infos}),
        "walker": sorted({i.walker for i in infos}),
        "annotator": sorted({a for i in infos for a in i.annotators}),
        "label_set": sorted({i.label_set for i in infos}),
    }


def track_for_annotator(infos, annotator: str) -> str | None:
    """The label track to learn from when filtering by annotator: that annotator's
    track if it has the same name in every recording, else None (automatic)."""
    if not annotator:
        return None
    names = set()
    for info in infos:
        names |= {t.name for t in info.tracks if (t.annotator or t.name) == annotator}
    return names.pop() if len(names) == 1 else None
