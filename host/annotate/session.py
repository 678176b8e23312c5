"""What the annotator works on, without Qt: the recording, its videos and syncs, and
the label tracks under edit (loaded from and saved to the recording).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from host.annotate.labels import SampleGrid
from host.annotate.sync import ClockFit, SyncEvent, detect_taps, event_video_time, fit_clock
from host.annotate.video import VideoReader
from host.errors import UserError
from host.features import FeatureExtractor
from host.recording import LabelTrack, open_recording
from host.recording.labels import ANCHOR_DTYPE, SyncRecord, read_sync, read_tracks, \
    save_tracks, write_sync
from host.replay import recording_calibration

READ_ONLY_SOURCES = ("simulator", "model")


@dataclass
class EditTrack:
    name: str
    segments: list  # sorted, non-overlapping (start_s, stop_s, activity)
    annotator: str = ""
    source: str = "human"
    model: str = ""

    @property
    def read_only(self) -> bool:
        return self.source in READ_ONLY_SOURCES

    def to_label_track(self) -> LabelTrack:
        return LabelTrack.from_segments(self.name, self.segments, annotator=self.annotator,
                                        source=self.source, model=self.model)


@dataclass
class VideoSync:
    """One video, its anchors {tap index or -1-based manual id: (t_video, t_sensor,
    sample, frame)} and the fit."""

    reader: VideoReader
    name: str
    anchors: dict = field(default_factory=dict)
    fit: ClockFit = field(default_factory=ClockFit)
    flashes: list | None = None  # first frames of detected flashes (None: not searched)

    def refit(self) -> ClockFit:
        rows = list(self.anchors.values())
        self.fit = fit_clock([r[0] for r in rows], [r[1] for r in rows])
        return self.fit

    def record(self) -> SyncRecord:
        rows = np.array(sorted(self.anchors.values()), dtype=ANCHOR_DTYPE)
        return SyncRecord(self.name, os.path.abspath(self.reader.path), rows, self.fit.a,
                          self.fit.b, self.fit.rms_s)


class AnnotationSession:
    """A recording opened for annotation with zero or more videos."""

    def __init__(self, path, videos=(), video_max_width: int | None = 960) -> None:
        self.path = os.fspath(path)
        self.recording = open_recording(self.path, untrusted=True)  # a file from outside
        rec = self.recording
        if len(rec.time_s) == 0:
            raise UserError("%s: the recording holds no samples to annotate" % self.path)
        self.time_s = rec.time_s
        self.grid = SampleGrid(rec.time_s)
        fx = FeatureExtractor(recording_calibration(rec), "cop")
        self.accel = fx.accel_mps2(rec.samples)
        self.loads = fx.loads_newton(rec.samples)
        self.tracks: dict[str, EditTrack] = {}
        for name, tr in read_tracks(self.path).items():
            self.tracks[name] = EditTrack(name, sorted(tr.segments()), tr.annotator,
                                          tr.source, tr.model)
        self.taps: list[SyncEvent] = detect_taps(rec)
        stored = read_sync(self.path)
        self.videos: list[VideoSync] = []
        for v in videos:
            reader = VideoReader(v, max_width=video_max_width)
            name = os.path.basename(reader.path)
            sync = VideoSync(reader, name)
            if name in stored:
                for row in stored[name].anchors:
                    key = self._tap_key(int(row["sample"]))
                    sync.anchors[key] = (float(row["t_video_s"]), float(row["t_sensor_s"]),
                                         int(row["sample"]), int(row["frame"]))
                sync.refit()
            self.videos.append(sync)
        self.dirty: set[str] = set()
        self.deleted: set[str] = set()

    def _tap_key(self, sample: int) -> int:
        for i, tap in enumerate(self.taps):
            if tap.index == sample:
                return i
        return -1 - sample  # a manual anchor at a sample with no detected tap

    @property
    def start_s(self) -> float:
        return self.grid.start

    @property
    def end_s(self) -> float:
        return self.grid.end

    # ---- sync ---------------------------------------------------------------------
    def anchor(self, video: int, tap: int, frame: int) -> ClockFit:
        """Tap `tap` is first visible in frame `frame` of video `video`: an anchor."""
        sync = self.videos[video]
        t_video = event_video_time(sync.reader.time_s, frame)
        ev = self.taps[tap]
        sync.anchors[tap] = (t_video, ev.t_s, ev.index, int(frame))
        fit = sync.refit()
        write_sync(self.path, sync.record())
        return fit

    def unanchor(self, video: int, tap: int) -> ClockFit:
        sync = self.videos[video]
        sync.anchors.pop(tap, None)
        fit = sync.refit()
        write_sync(self.path, sync.record())
        return fit

    def proposals(self, video: int) -> tuple[list[int], list[bool]]:
        """For each tap, the proposed frame and whether a flash backs it: its flash
        if one matches, else where the current fit puts it."""
        from host.annotate.sync import match_flashes

        sync = self.videos[video]
        r = sync.reader
        proposed = [r.index_at(float(sync.fit.video_time(t.t_s))) for t in self.taps]
        flashed = [False] * len(self.taps)
        if sync.flashes:
            t_flash = [event_video_time(r.time_s, k) for k in sync.flashes]
            for i, j in enumerate(match_flashes([t.t_s for t in self.taps], t_flash)):
                if j is not None:
                    proposed[i] = sync.flashes[j]
                    flashed[i] = True
        return proposed, flashed

    def find_flashes(self, video: int, progress=None) -> list[int]:
        from host.annotate.sync import detect_flashes

        sync = self.videos[video]
        sync.flashes = detect_flashes(sync.reader.mean_brightness(progress=progress))
        return sync.flashes

    # ---- labels -------------------------------------------------------------------
    def set_segments(self, name: str, segments) -> None:
        self.tracks[name].segments = list(segments)
        self.dirty.add(name)

    def add_track(self, track: EditTrack) -> None:
        self.tracks[track.name] = track
        self.deleted.discard(track.name)
        self.dirty.add(track.name)

    def remove_track(self, name: str) -> EditTrack:
        track = self.tracks.pop(name)
        self.dirty.discard(name)
        self.deleted.add(name)
        return track

    def save(self) -> int:
        """Write the changed tracks (and delete removed ones); returns how many."""
        if not self.dirty and not self.deleted:
            return 0
        tracks = [self.tracks[n].to_label_track() for n in sorted(self.dirty)
                  if n in self.tracks]
        save_tracks(self.path, tracks, delete=tuple(sorted(self.deleted)))
        n = len(tracks) + len(self.deleted)
        self.dirty.clear()
        self.deleted.clear()
        return n

    def predictions(self, model_path) -> EditTrack:
        """A read-only track of a recognizer's predictions (one label per sample)."""
        from recognizers.base import load_recognizer

        model = load_recognizer(model_path)
        feature_set = getattr(model, "feature_set_", None) or "cop"
        fx = FeatureExtractor(recording_calibration(self.recording), feature_set)
        feats = fx.process(self.recording.samples)
        y = np.asarray(model.predict(feats.X)).astype(str)
        segs = runs_to_segments(feats.t_s, y, self.grid.end)
        name = "model-" + os.path.splitext(os.path.basename(os.fspath(model_path)))[0]
        return EditTrack(name, segs, annotator=type(model).__name__, source="model",
                         model="%s %s" % (type(model).__name__, os.path.basename(
                             os.fspath(model_path))))

    def close(self) -> None:
        for v in self.videos:
            v.reader.close()


def runs_to_segments(time_s, labels, end_s: float) -> list:
    """Per-sample labels -> segments (each run from its first sample to the next run)."""
    t = np.asarray(time_s, dtype=np.float64)
    y = np.asarray(labels).astype(str)
    if not t.size:
        return []
    change = np.flatnonzero(y[1:] != y[:-1]) + 1
    starts = np.concatenate([[0], change])
    stops = np.concatenate([change, [len(t)]])
    out = []
    for a, b in zip(starts, stops):
        if y[a]:
            out.append((float(t[a]), float(t[b]) if b < len(t) else float(end_s), str(y[a])))
    return out
