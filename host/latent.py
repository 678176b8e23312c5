"""A latent map of walker windows: a dual-wing Bayesian harmonium (Guo and Xing,
"Bayesian Exponential Family Harmoniums", CMU technical report CMU-ML-06-103, 2006) over
per-window event indicators and continuous window statistics.

Each recording is cut into non-overlapping windows of ``WINDOW_S`` seconds of the
``loadcells`` features.  A window is described by

* a Bernoulli wing of events: handle loaded, wheels turning, turn detected,
  load asymmetry, walker lifted (thresholds below), and
* a Gaussian wing of statistics: acceleration RMS, jerk, mean total load
  (normalised by the session's 95th percentile, a body-weight proxy), mean
  speed, load oscillation (std of the total load, a cadence proxy).

``fit_latent`` learns a :class:`~recognizers.modelling.BayesianHarmonium` on the
windows of several recordings and saves it as ``.npz`` + JSON header (never a
pickle); :class:`LatentModel` projects windows with one matrix (eq. 22).
"""
from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from host.errors import UserError
from host.models import LATENT_MODEL_KIND
from host.outputs import check_free, exclusive_output

WINDOW_S = 1.0
EVENT_NAMES = ("handle_loaded", "wheels_turning", "turn_detected", "load_asymmetry", "walker_lifted")
STAT_NAMES = ("accel_rms", "jerk", "mean_load", "mean_speed", "load_oscillation")
FEATURE_NAMES = EVENT_NAMES + STAT_NAMES
FORMAT_VERSION = 1

# event thresholds (physical units of host/features.py)
LOADED_N = 20.0            # total handle load above this: someone leans on the walker
TURNING_MPS = 0.05         # mean |speed| above this: the wheels turn
TURN_ASYM_MIN = 0.2        # |left - right| / total load beyond this: load asymmetry
TURN_LATERAL_MPS2 = 0.07   # |window mean of lateral acceleration| beyond this while rolling: a turn
LIFT_VERTICAL_MPS2 = 3.0   # |vertical acceleration - its median| spike ...
LIFT_LOAD_N = 10.0         # ... while the handles carry almost nothing: walker lifted


@dataclass
class SessionWindows:
    path: str
    subject: str
    X: np.ndarray            # (n_windows, 10): 5 events (0/1) then 5 statistics
    labels: np.ndarray       # (n_windows,) majority activity ("" if unlabelled)
    t_start: np.ndarray      # (n_windows,) device time of each window's first sample, seconds
    t_end: np.ndarray
    label_counts: list | None = None   # per window {activity: labelled frames}, for frame accuracy


def window_features(X: np.ndarray, t_s: np.ndarray, names, labels=None, window_s: float = WINDOW_S,
                    counts_out: list | None = None):
    """Cut ``loadcells`` features (n, 8) into windows; returns (F, labels, t_start, t_end).
    With ``counts_out`` (a list) and labels, appends each window's {activity: frames}."""
    col = {n: i for i, n in enumerate(names)}
    need = ("accel_x", "accel_y", "accel_z", "speed", "load_FR", "load_FL", "load_RL", "load_RR")
    missing = [n for n in need if n not in col]
    if missing:
        raise UserError("the latent map needs the loadcells feature set (missing %s)" % ", ".join(missing))
    if len(t_s) == 0:
        raise UserError("the recording has no samples")
    idx = np.floor((t_s - t_s[0]) / window_s).astype(int)
    bounds = np.flatnonzero(np.diff(idx)) + 1
    starts = np.r_[0, bounds]
    ends = np.r_[bounds, len(t_s)]
    loads = X[:, [col["load_FR"], col["load_FL"], col["load_RL"], col["load_RR"]]]
    total = loads.sum(axis=1)
    left = loads[:, 1] + loads[:, 2]
    right = loads[:, 0] + loads[:, 3]
    acc = X[:, [col["accel_x"], col["accel_y"], col["accel_z"]]]
    speed = X[:, col["speed"]]
    ref = max(float(np.percentile(total, 95)), 1.0)
    vert_med = float(np.median(acc[:, 2]))
    dt = float(np.median(np.diff(t_s))) if len(t_s) > 1 else 1.0
    F = np.zeros((len(starts), len(FEATURE_NAMES)))
    lab = np.full(len(starts), "", dtype=object)
    for w, (a, b) in enumerate(zip(starts, ends)):
        tot = total[a:b]
        mean_tot = float(tot.mean())
        asym = abs(float(left[a:b].sum() - right[a:b].sum())) / max(float(tot.sum()), 1e-9)
        mean_speed = float(np.abs(speed[a:b]).mean())
        A = acc[a:b] - acc[a:b].mean(axis=0)
        F[w, 0] = mean_tot > LOADED_N
        F[w, 1] = mean_speed > TURNING_MPS
        F[w, 2] = (mean_speed > TURNING_MPS) and abs(float(acc[a:b, 1].mean())) > TURN_LATERAL_MPS2
        F[w, 3] = (mean_tot > LOADED_N) and asym > TURN_ASYM_MIN
        F[w, 4] = (np.abs(acc[a:b, 2] - vert_med).max() > LIFT_VERTICAL_MPS2) and tot.min() < LIFT_LOAD_N
        F[w, 5] = float(np.sqrt((A ** 2).sum(axis=1).mean()))
        F[w, 6] = float(np.abs(np.diff(acc[a:b], axis=0)).sum(axis=1).mean() / dt) if b - a > 1 else 0.0
        F[w, 7] = mean_tot / ref
        F[w, 8] = mean_speed
        F[w, 9] = float(tot.std()) / ref
        if labels is not None:
            vals, counts = np.unique(np.asarray(labels[a:b]).astype(str), return_counts=True)
            lab[w] = vals[np.argmax(counts)]
            if counts_out is not None:
                counts_out.append({str(v): int(c) for v, c in zip(vals, counts) if v != ""})
    return F, lab.astype(str), t_s[starts], t_s[ends - 1]


def session_windows(path, track: str | None = None, window_s: float = WINDOW_S) -> SessionWindows:
    """The windows of one recording (labels from its label track when it has one)."""
    from host.datasets import pick_label_track
    from host.features import FeatureExtractor
    from host.recording import open_recording
    from host.replay import recording_calibration

    rec = open_recording(path)
    fb = FeatureExtractor(recording_calibration(rec), "loadcells").process(rec.samples)
    labels = None
    if rec.labels:
        labels = rec.labels_per_sample(pick_label_track(rec, track))
    counts = [] if labels is not None else None
    F, lab, t0, t1 = window_features(fb.X, fb.t_s, fb.names, labels, window_s, counts_out=counts)
    subject = rec.attrs.get("subject_id") or str(path)
    return SessionWindows(str(path), str(subject), F, lab, t0, t1, counts)


def gaussian_columns():
    return list(range(len(EVENT_NAMES), len(FEATURE_NAMES)))


def make_harmonium(n_components: int = 4, random_state: int = 0, verbose: bool = False):
    """The dual-wing Bayesian harmonium used for the map (settings in docs/modelling.md)."""
    from recognizers.modelling import BayesianHarmonium
    return BayesianHarmonium(n_components, gaussian_columns=gaussian_columns(), step_size=0.5,
                             n_burn_in=300, n_samples=50, thinning=2, n_em_iter=5, em_samples=5,
                             init="ml", ml_learning_rate=0.01, ml_n_iter=50, random_state=random_state,
                             verbose=verbose)


class LatentModel:
    """A fitted latent map: ``transform(F) = standardise(F) @ components.T``."""

    def __init__(self, components, intercept, gaussian_mask, gaussian_mean, gaussian_scale, header):
        self.components = np.asarray(components, dtype=float)
        self.intercept = np.asarray(intercept, dtype=float)
        self.gaussian_mask = np.asarray(gaussian_mask, dtype=bool)
        self.gaussian_mean = np.asarray(gaussian_mean, dtype=float)
        self.gaussian_scale = np.asarray(gaussian_scale, dtype=float)
        self.header = header

    @classmethod
    def from_estimator(cls, est, header):
        return cls(est.components_, est.intercept_visible_, est.gaussian_mask_, est.gaussian_mean_,
                   est.gaussian_scale_, header)

    def transform(self, F):
        F = np.asarray(F, dtype=float)
        if F.ndim != 2 or F.shape[1] != self.components.shape[1]:
            raise UserError("window features have %s columns, the latent model expects %d"
                            % (F.shape[1:] or "?", self.components.shape[1]))
        V = F.copy()
        V[:, self.gaussian_mask] = (V[:, self.gaussian_mask] - self.gaussian_mean) / self.gaussian_scale
        return V @ self.components.T

    def save(self, path, overwrite: bool = False) -> pathlib.Path:
        path = pathlib.Path(path)
        if path.suffix != ".npz":
            raise UserError("the latent model file must end in .npz: %s" % path)
        header = json.dumps(self.header).encode()
        with exclusive_output(path, overwrite=overwrite) as tmp:
            np.savez(tmp, header=np.frombuffer(header, dtype=np.uint8),
                     components=self.components, intercept=self.intercept,
                     gaussian_mask=self.gaussian_mask, gaussian_mean=self.gaussian_mean,
                     gaussian_scale=self.gaussian_scale)
        return path

    @classmethod
    def load(cls, path) -> "LatentModel":
        try:
            with np.load(path, allow_pickle=False) as z:
                header = json.loads(bytes(z["header"]).decode())
                if header.get("kind") != LATENT_MODEL_KIND:
                    raise UserError("%s is not a latent map model" % path)
                return cls(z["components"], z["intercept"], z["gaussian_mask"], z["gaussian_mean"],
                           z["gaussian_scale"], header)
        except (OSError, KeyError, ValueError) as exc:
            raise UserError("cannot read latent model %s: %s" % (path, exc)) from None


def fit_latent(paths, out, *, n_components: int = 4, overwrite: bool = False, progress: bool = True,
               random_state: int = 0) -> tuple[pathlib.Path, LatentModel]:
    """Fit the latent map on the windows of ``paths`` and save it to ``out``."""
    if not paths:
        raise UserError("no recordings given")
    out = pathlib.Path(out)
    if out.suffix != ".npz":
        raise UserError("the latent model file must end in .npz: %s" % out)
    check_free(out, overwrite)  # before the fit
    if n_components < 1:
        raise UserError("--components must be at least 1")
    sessions = [session_windows(p) for p in tqdm(paths, desc="windows", unit="file", disable=not progress)]
    F = np.vstack([s.X for s in sessions])
    if len(F) < 2:
        raise UserError("the recordings hold fewer than two %g-second windows" % WINDOW_S)
    try:
        est = make_harmonium(n_components, random_state, verbose=progress).fit(F)
    except ValueError as exc:
        raise UserError("fitting the latent map failed: %s" % exc) from None
    header = {"kind": LATENT_MODEL_KIND, "format_version": FORMAT_VERSION, "window_s": WINDOW_S,
              "feature_names": list(FEATURE_NAMES), "n_components": int(n_components),
              "n_windows": int(len(F)), "recordings": [str(p) for p in paths],
              "settings": {k: (v if isinstance(v, (int, float, str, bool, type(None))) else list(v))
                           for k, v in est.get_params().items() if k != "verbose"}}
    model = LatentModel.from_estimator(est, header)
    return model.save(out, overwrite=overwrite), model


def evaluate_projection(sessions, n_components: int = 4, random_state: int = 0, progress: bool = False):
    """Leave-one-subject-out accuracy of 1-NN and logistic regression on the latent
    projection, beside the same classifiers on the raw window features.  The
    harmonium is fitted on the training subjects' windows only (no labels).

    Returns ``{name: {"window": (mean, std), "frame": (mean, std)}}``: the share of
    labelled windows whose majority activity is predicted, and the share of labelled
    frames whose activity is their window's prediction (comparable with the per-frame
    figures of the sequence recognizers at window 0)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from recognizers.evaluation import loso_folds

    folds = loso_folds([s.subject for s in sessions])
    names = ("1-NN latent", "logistic latent", "1-NN raw", "logistic raw")
    win = {k: [] for k in names}
    frame = {k: [] for k in names}
    for fold in tqdm(folds, desc="LOSO", disable=not progress):
        tr = [sessions[i] for i in fold.train]
        te = [sessions[i] for i in fold.test]
        Ftr = np.vstack([s.X for s in tr])
        ytr = np.concatenate([s.labels for s in tr])
        Fte = np.vstack([s.X for s in te])
        yte = np.concatenate([s.labels for s in te])
        counts = [c for s in te for c in (s.label_counts or [{}] * len(s.X))]
        keep_tr, keep_te = ytr != "", yte != ""
        est = make_harmonium(n_components, random_state).fit(Ftr)
        Ztr, Zte = est.transform(Ftr), est.transform(Fte)
        for name, (A, B) in {"latent": (Ztr, Zte), "raw": (Ftr, Fte)}.items():
            for cname, clf in (("1-NN", make_pipeline(StandardScaler(), KNeighborsClassifier(1))),
                               ("logistic", make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)))):
                clf.fit(A[keep_tr], ytr[keep_tr])
                pred = clf.predict(B)
                key = f"{cname} {name}"
                win[key].append(float(np.mean(pred[keep_te] == yte[keep_te])))
                hit = sum(c.get(p, 0) for c, p in zip(counts, pred))
                total = sum(sum(c.values()) for c in counts)
                frame[key].append(hit / total if total else float("nan"))
    return {k: {"window": (float(np.mean(win[k])), float(np.std(win[k]))),
                "frame": (float(np.mean(frame[k])), float(np.std(frame[k])))} for k in names}
