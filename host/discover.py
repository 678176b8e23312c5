"""`walkerlab discover`: find the regimes of a long unlabelled recording.

Features are averaged over fixed windows (an hour at 50 Hz is 180,000 frames;
1 s windows give 3,600 points, which the stick-breaking HMM fits in seconds),
a :class:`recognizers.modelling.hmm.sbhmm.StickBreakingHMM` chooses the number of
regimes, and the Viterbi path is written back as a label track (source
"model") that the annotator opens for a person to name and correct.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from host.datasets import load_features
from host.errors import UserError
from host.recording.reader import LabelTrack, open_recording
from host.recording.labels import save_tracks
from recognizers.modelling.gp.lm2gp import LM2GP
from recognizers.modelling.matching import hungarian_error
from recognizers.modelling.hmm.sbhmm import StickBreakingHMM


@dataclass
class DiscoverResult:
    track: LabelTrack
    n_regimes: int
    window_t_s: np.ndarray  # (W,) window start times
    regimes: np.ndarray  # (W,) regime index per window
    features: np.ndarray  # (W, D) window means (standardised)
    latent: np.ndarray  # (W, 2) LM2GP latent points (method lm2gp) or PCA scores (sbhmm)
    error_vs_truth: float | None  # Hungarian-matched error against the simulator track


def window_means(X, t_s, window_s):
    """Mean and std of each feature over consecutive ``window_s`` windows."""
    if window_s <= 0:
        raise UserError("--window must be positive")
    idx = np.floor((t_s - t_s[0]) / window_s).astype(np.int64)
    n = int(idx[-1]) + 1
    counts = np.bincount(idx, minlength=n).astype(float)
    keep = counts > 0
    s1 = np.stack([np.bincount(idx, X[:, j], n) for j in range(X.shape[1])], 1)
    s2 = np.stack([np.bincount(idx, X[:, j] ** 2, n) for j in range(X.shape[1])], 1)
    mean = s1[keep] / counts[keep, None]
    std = np.sqrt(np.maximum(s2[keep] / counts[keep, None] - mean ** 2, 0.0))
    starts = t_s[0] + window_s * np.flatnonzero(keep)
    return np.hstack([mean, std]), starts


def discover(path, max_regimes=10, window_s=1.0, track_name="discovered", seed=0,
             write=True, progress=True, method="sbhmm") -> DiscoverResult:
    """Fit the regimes of one recording and (optionally) save them as a label track."""
    if max_regimes < 2:
        raise UserError("--max-regimes must be at least 2")
    try:
        X, t_s = load_features(path)
    except (OSError, ValueError) as exc:
        raise UserError("cannot read %s: %s" % (path, exc)) from None
    if len(X) < 2:
        raise UserError("%s has too few samples to discover regimes" % path)
    X = np.nan_to_num(np.asarray(X, dtype=np.float64))
    F, starts = window_means(X, np.asarray(t_s, dtype=np.float64), window_s)
    if len(F) < max_regimes:
        raise UserError("%s: only %d windows of %g s; use a shorter --window"
                        % (path, len(F), window_s))
    sd = F.std(axis=0)
    F = (F[:, sd > 1e-9] - F[:, sd > 1e-9].mean(axis=0)) / sd[sd > 1e-9]
    if method not in ("sbhmm", "lm2gp"):
        raise UserError("--method must be sbhmm or lm2gp")
    from tqdm import tqdm
    sticky = 0.05 * len(F) / max_regimes
    with tqdm(total=1, desc="discovering regimes", unit="fit", disable=not progress) as bar:
        if method == "lm2gp":
            model = LM2GP(n_latent=2, max_states=max_regimes, sticky=sticky, n_outer=5,
                          max_points=600, random_state=seed).fit(F)
            path_, latent = model.predict(F), model.transform(F)
            n_regimes = model.n_states_used_
        else:
            model = StickBreakingHMM(max_states=max_regimes, sticky=sticky, n_init=2,
                                     random_state=seed).fit(F)
            path_, n_regimes = model.labels_, model.n_states_used_
            U, S, _ = np.linalg.svd(F - F.mean(0), full_matrices=False)
            latent = U[:, :2] * S[:2] / np.sqrt(len(F))
        bar.update(1)
    # relabel regimes 1..k in order of first appearance, and merge runs into segments
    order = {s: i + 1 for i, s in enumerate(dict.fromkeys(path_.tolist()))}
    names = np.array(["R%d" % order[s] for s in path_])
    stops = np.append(starts[1:], starts[-1] + window_s)
    change = np.flatnonzero(np.r_[True, names[1:] != names[:-1]])
    ends = np.r_[change[1:], len(names)] - 1
    segments = [(starts[a], stops[b], names[a]) for a, b in zip(change, ends)]
    track = LabelTrack.from_segments(track_name, segments, source="model",
                                     model="StickBreakingHMM(max_states=%d)" % max_regimes)
    err = None
    rec = open_recording(path)
    if "simulator" in rec.labels:
        truth = rec.labels["simulator"].labels_at(starts + window_s / 2)
        ok = truth != ""
        if ok.any():
            _, y = np.unique(truth[ok], return_inverse=True)
            err = hungarian_error(path_[ok], y)
    if write:
        save_tracks(path, [track])
    return DiscoverResult(track, n_regimes, starts, path_, F, latent, err)
