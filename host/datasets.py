"""Recordings -> labelled feature sequences for training and evaluation.

Features come from the recording's stored samples through the same FeatureExtractor
as live and replay (the samples are the decoded raw log, so this equals a replay).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from host.errors import UserError
from host.features import FeatureExtractor
from host.recording import open_recording
from host.replay import recording_calibration


@dataclass
class LabelledSession:
    path: str
    subject: str
    X: np.ndarray  # (n, k) features of the labelled samples
    y: np.ndarray  # (n,) activity codes
    t_s: np.ndarray  # (n,) device time, seconds
    feature_names: tuple[str, ...]
    track: str = ""  # the label track the labels came from


def pick_label_track(rec, track: str | None = None) -> str:
    """The named track, else the only human track, else the simulator's truth."""
    tracks = sorted(rec.labels)
    if track is not None:
        if track not in rec.labels:
            raise UserError("%s has no label track %r (tracks: %s)"
                            % (rec.path, track, ", ".join(tracks) or "none"))
        return track
    human = [t for t in tracks if rec.labels[t].source == "human"]
    if len(human) == 1:
        return human[0]
    if "simulator" in rec.labels:
        return "simulator"
    if not tracks:
        raise UserError("%s has no labels: annotate it first" % rec.path)
    raise UserError("%s has several label tracks (%s): choose one with --labels"
                    % (rec.path, ", ".join(tracks)))


def load_session(path, feature_set: str = "cop", track: str | None = None) -> LabelledSession:
    rec = open_recording(path)
    name = pick_label_track(rec, track)
    features = FeatureExtractor(recording_calibration(rec), feature_set).process(rec.samples)
    labels = rec.labels_per_sample(name)
    keep = labels != ""
    if not keep.any():
        raise UserError("%s: label track %r covers no samples" % (path, name))
    subject = rec.attrs.get("subject_id") or str(path)
    return LabelledSession(str(path), subject, features.X[keep], labels[keep].astype(str),
                           features.t_s[keep], features.names, name)


def load_features(path, feature_set: str = "cop"):
    """(X, t_s) of every sample of a recording, labelled or not (for unsupervised learning)."""
    rec = open_recording(path)
    features = FeatureExtractor(recording_calibration(rec), feature_set).process(rec.samples)
    return features.X, features.t_s


def load_sessions(paths, feature_set: str = "cop", track: str | None = None,
                  progress: bool = False) -> list[LabelledSession]:
    if not paths:
        raise UserError("no recordings given")
    return [load_session(p, feature_set, track)
            for p in tqdm(paths, desc="loading", unit="file", disable=not progress)]
