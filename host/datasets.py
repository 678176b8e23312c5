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
    rate_hz: float = 0.0  # the walker's sample rate


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


def recording_rate_hz(rec) -> float:
    """The sample rate the walker reported (INFO frame), else the median sample spacing."""
    info = rec.info or {}
    if info.get("rate_hz"):
        return float(info["rate_hz"])
    rate = rec.summary()["rate_hz"]
    return float(round(rate)) if rate else 0.0


def load_session(path, feature_set: str = "cop", track: str | None = None,
                 label_map: dict | None = None) -> LabelledSession:
    rec = open_recording(path)
    name = pick_label_track(rec, track)
    features = FeatureExtractor(recording_calibration(rec), feature_set).process(rec.samples)
    labels = rec.labels_per_sample(name)
    if label_map:
        labels = np.array([label_map.get(a, a) for a in labels.tolist()], dtype=str)
    keep = labels != ""
    if not keep.any():
        raise UserError("%s: label track %r covers no samples" % (path, name))
    subject = rec.attrs.get("subject_id") or str(path)
    return LabelledSession(str(path), subject, features.X[keep], labels[keep].astype(str),
                           features.t_s[keep], features.names, name, recording_rate_hz(rec))


def read_label_map(path) -> dict[str, str]:
    """``--label-map FILE``: a JSON object {"old code": "new code", ...}.

    Codes it names are renamed before training or evaluation; mapping several codes
    to one merges them, mapping a code to "" drops its samples.
    """
    import json

    if path is None:
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise UserError("--label-map %s: no such file" % path) from None
    except (OSError, ValueError) as exc:
        raise UserError("--label-map %s: not a JSON file (%s)" % (path, exc)) from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                             for k, v in data.items()):
        raise UserError('--label-map %s must be a JSON object of codes, e.g. '
                        '{"WF": "W", "WB": "W"}' % path)
    return data


def check_distinct(paths) -> None:
    """UserError if a recording is given twice (same file, or a copy of one session)."""
    import os

    from host.recording import read_attrs

    seen: dict = {}
    for p in paths:
        real = os.path.realpath(p)
        if real in seen:
            raise UserError("%s is given twice (as %s and %s)" % (real, seen[real], p))
        seen[real] = p
    sessions: dict = {}
    for p in paths:
        if not os.path.exists(p):
            continue  # reported by whoever opens it
        try:
            attrs = read_attrs(p)
        except (OSError, ValueError):
            continue
        key = (attrs.get("session_start_time"), attrs.get("walker_id"),
               attrs.get("subject_id"))
        if key[0]:
            if key in sessions:
                raise UserError("%s and %s are the same session (walker %s, subject %s, "
                                "started %s): give each recording once"
                                % (sessions[key], p, key[1], key[2] or "?", key[0]))
            sessions[key] = p


def check_label_sets(sessions) -> None:
    """UserError if the sessions' activity codes come from different label sets.

    Codes all within one preset (exp1 or exp2) or identical sets are one label set;
    otherwise the codes would be merged silently, so ``--label-map`` must say how.
    """
    from domain.activities import EXP1_CLASSES, EXP2_CLASSES

    sets = [frozenset(np.unique(s.y).tolist()) for s in sessions]
    union = frozenset().union(*sets) if sets else frozenset()
    if len(set(sets)) <= 1 or any(union <= set(p) for p in (EXP1_CLASSES, EXP2_CLASSES)):
        return
    first = sets[0]
    other = next(i for i, s in enumerate(sets) if s != first)
    raise UserError("%s and %s use different label sets (%s / %s): give --label-map FILE "
                    "to say how their codes correspond"
                    % (sessions[0].path, sessions[other].path, " ".join(sorted(first)),
                       " ".join(sorted(sets[other]))))


def check_rates(sessions) -> float:
    """The sessions' common sample rate; UserError if they differ."""
    rates = sorted({s.rate_hz for s in sessions})
    if len(rates) > 1:
        by_rate = {s.rate_hz: s.path for s in sessions}
        raise UserError("recordings at different sample rates (%s): a model learns per-frame "
                        "dynamics, so train on one rate"
                        % ", ".join("%g Hz: %s" % (r, by_rate[r]) for r in rates))
    return rates[0] if rates else 0.0


def load_features(path, feature_set: str = "cop"):
    """(X, t_s) of every sample of a recording, labelled or not (for unsupervised learning)."""
    rec = open_recording(path)
    features = FeatureExtractor(recording_calibration(rec), feature_set).process(rec.samples)
    return features.X, features.t_s


def load_sessions(paths, feature_set: str = "cop", track: str | None = None,
                  progress: bool = False, label_map: dict | None = None,
                  check: bool = True) -> list[LabelledSession]:
    """Labelled sessions of the recordings; with ``check`` (the default), refuses a
    recording given twice, recordings of different label sets (unless ``label_map``
    merges them) and recordings at different sample rates."""
    if not paths:
        raise UserError("no recordings given")
    if check:
        check_distinct(paths)
    sessions = [load_session(p, feature_set, track, label_map)
                for p in tqdm(paths, desc="loading", unit="file", disable=not progress)]
    if check:
        if not label_map:  # a label map is the user saying how the sets correspond
            check_label_sets(sessions)
        check_rates(sessions)
    return sessions
