"""The ``"hcrf-dpm"`` walker recognizer: HCRF-DPM (paper 000) over sliding windows.

Each window of ``window`` frames gets one activity (digest 000-8): training windows
are cut every ``hop`` frames and labelled by their majority activity; frames are
standardised, NaN (a missing reading) set to the mean, and encoded nonnegatively by
:func:`~recognizers.modelling.hcrfdpm.encode_signed` ([x+, x-, 1]), as the model needs.

Streaming (``filter``/``step``): every ``hop`` frames the trailing window is
classified and the posterior is smoothed, ``p <- (1 - smoothing) p + smoothing q``;
between updates the last posterior is held, so the latency is at most ``hop``
frames plus one window's forward pass. ``predict_proba`` (offline) averages the
posteriors of every window that covers a frame.
"""
from __future__ import annotations

import numbers

import numpy as np

from recognizers.base import (Interval, NotFittedError, Recognizer, RecognizerTags,
                              check_is_fitted, register_recognizer)
from recognizers.crf import _Bool
from recognizers.modelling import hcrfdpm_core
from recognizers.modelling.hcrfdpm import HCRFDPM, encode_signed


def window_starts(T: int, window: int, hop: int) -> np.ndarray:
    """Starts of windows every ``hop`` frames; the last one ends at T (one window if T <= window)."""
    if T <= window:
        return np.array([0])
    starts = np.arange(0, T - window + 1, hop)
    if starts[-1] != T - window:
        starts = np.r_[starts, T - window]
    return starts


@register_recognizer
class HCRFDPMRecognizer(Recognizer):
    """Sliding-window HCRF-DPM: hidden states shared by activities, their number learnt.

    Parameters
    ----------
    window : frames per window (default 40: 2 s at 20 Hz).
    hop : frames between windows, in training and when streaming.
    smoothing : weight of a new window posterior in the streamed (filtered) output.
    n_states, alpha, update_alpha, clamped, n_restarts, n_outer, max_var_iter,
    max_grad_iter, random_state : as :class:`~recognizers.modelling.hcrfdpm.HCRFDPM`.

    Attributes
    ----------
    model_ : the fitted :class:`HCRFDPM` (``state_usage_`` (n_window_classes, n_states),
        ``n_states_used_``, ``states_per_label_``); ``window_classes_`` index into
        ``classes_`` of the model's labels (an activity never the majority of a
        window gets probability 0).
    """

    kind = "hcrf-dpm"
    format_version = 1
    _frame_params = ("window", "hop")
    _tags = RecognizerTags(supports_streaming=True, supports_partial_fit=False,
                           requires_labels=True)
    _parameter_constraints = {
        "window": [Interval(numbers.Integral, 2, None, closed="left")],
        "hop": [Interval(numbers.Integral, 1, None, closed="left")],
        "smoothing": [Interval(numbers.Real, 0, 1, closed="right")],
        "n_states": [Interval(numbers.Integral, 2, None, closed="left")],
        "alpha": [Interval(numbers.Real, 0, None, closed="neither")],
        "update_alpha": [_Bool()],
        "clamped": [_Bool()],
        "n_restarts": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_outer": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_var_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_grad_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": [Interval(numbers.Integral, 0, None, closed="left"), None],
    }

    def __init__(self, *, window=40, hop=10, smoothing=0.5, n_states=10, alpha=100.0,
                 update_alpha=False, clamped=True, n_restarts=1, n_outer=2, max_var_iter=50,
                 max_grad_iter=100, random_state=0):
        self.window = window
        self.hop = hop
        self.smoothing = smoothing
        self.n_states = n_states
        self.alpha = alpha
        self.update_alpha = update_alpha
        self.clamped = clamped
        self.n_restarts = n_restarts
        self.n_outer = n_outer
        self.max_var_iter = max_var_iter
        self.max_grad_iter = max_grad_iter
        self.random_state = random_state

    def __recognizer_is_fitted__(self) -> bool:
        return "model_" in self.__dict__

    def _model_params(self) -> dict:
        names = ("n_states", "alpha", "update_alpha", "clamped", "n_restarts", "n_outer",
                 "max_var_iter", "max_grad_iter", "random_state")
        return {n: getattr(self, n) for n in names}

    def _encode(self, X) -> np.ndarray:
        Z = (X - self.mean_) / self.scale_
        return encode_signed(np.where(np.isnan(Z), 0.0, Z))

    def fit(self, sequences, labels=None, *, feature_set=None):
        """Cut labelled windows from the sequences and fit the HCRF-DPM; returns ``self``."""
        self._validate_params()
        Xs, ys = self._validate_fit_data(sequences, labels)
        allX = np.vstack(Xs)
        mean = np.nanmean(allX, axis=0) if np.isfinite(allX).any() else np.zeros(allX.shape[1])
        mean = np.where(np.isnan(mean), 0.0, mean)
        scale = np.nanstd(allX, axis=0)
        scale = np.where(~(scale > 0), 1.0, scale)
        self.mean_, self.scale_ = mean, scale
        W, H = int(self.window), int(self.hop)
        wins, wlab = [], []
        for X, y in zip(Xs, ys):
            E = self._encode(X)
            yi = np.searchsorted(self.classes_, y)
            for a in window_starts(len(X), W, H):
                wins.append(E[a:a + W])
                wlab.append(np.bincount(yi[a:a + W], minlength=len(self.classes_)).argmax())
        wlab = np.asarray(wlab)
        if len(np.unique(wlab)) < 2:
            raise ValueError("hcrf-dpm needs windows of at least two activities; "
                             "give longer recordings or a shorter window")
        model = HCRFDPM(**self._model_params()).fit(wins, wlab)
        self.model_ = model
        self.window_classes_ = model.classes_.astype(np.int64)
        self.feature_set_ = feature_set
        self.reset()
        return self

    # -- inference ------------------------------------------------------------------
    def _window_proba(self, E) -> np.ndarray:
        """Posterior over ``classes_`` of one encoded window (T, 2d+1)."""
        m = self.model_
        lp = hcrfdpm_core.predict_log_proba(E, np.array([len(E)]), m._params(), m.El_)[0]
        out = np.zeros(len(self.classes_))
        out[self.window_classes_] = np.exp(lp)
        return out

    def _X(self, X) -> np.ndarray:
        X = self._validate_X(X, reset=False)
        if np.isinf(X).any():
            raise ValueError("X contains infinite values (NaN marks a missing reading)")
        return X

    def predict_proba(self, X) -> np.ndarray:
        """Per-frame average of the posteriors of all windows covering the frame, (T, C)."""
        check_is_fitted(self, "model_")
        X = self._X(X)
        E = self._encode(X)
        T, W = len(X), int(self.window)
        acc = np.zeros((T, len(self.classes_)))
        cover = np.zeros(T)
        for a in window_starts(T, W, int(self.hop)):
            acc[a:a + W] += self._window_proba(E[a:a + W])
            cover[a:a + W] += 1
        return acc / cover[:, None]

    def filter(self, X) -> np.ndarray:
        """Causal posteriors (T, n_classes) from a fresh stream (what ``step`` returns)."""
        check_is_fitted(self, "model_")
        return self._run(self._new_stream(), self._X(X))

    # -- streaming ------------------------------------------------------------------
    def _new_stream(self) -> dict:
        return {"buf": np.zeros((int(self.window), 2 * self.n_features_in_ + 1)), "n": 0,
                "p": None}

    def _run(self, stream, X) -> np.ndarray:
        E = self._encode(X)
        W, H, s = int(self.window), int(self.hop), float(self.smoothing)
        out = np.empty((len(X), len(self.classes_)))
        buf = stream["buf"]
        for t in range(len(X)):
            buf[:-1] = buf[1:]
            buf[-1] = E[t]
            stream["n"] += 1
            n = stream["n"]
            if stream["p"] is None or n % H == 0:
                q = self._window_proba(buf[W - min(n, W):])
                stream["p"] = q if stream["p"] is None else (1 - s) * stream["p"] + s * q
            out[t] = stream["p"]
        return out

    def reset(self) -> None:
        """Forget the stream (the window buffer and the smoothed posterior)."""
        check_is_fitted(self, "model_")
        self._stream = self._new_stream()

    def step(self, x) -> np.ndarray:
        """Posterior (n_classes,) after frame ``x``; equals ``filter`` row by row."""
        if "model_" not in self.__dict__:
            raise NotFittedError("This HCRFDPMRecognizer instance is not fitted yet; call "
                                 "fit(sequences, labels) or load a saved model first.")
        x = self._validate_frame(x)
        if np.isinf(x).any():
            raise ValueError("a frame contains infinite values (NaN marks a missing reading)")
        return self._run(self._stream, x.reshape(1, -1))[0]

    def step_block(self, X) -> np.ndarray:
        check_is_fitted(self, "model_")
        return self._run(self._stream, self._X(X))

    # -- persistence ----------------------------------------------------------------
    def _get_state(self) -> dict:
        m = self.model_
        return {"mean": self.mean_, "scale": self.scale_, "window_classes": self.window_classes_,
                "theta_x": m.theta_x_, "theta_y": m.theta_y_, "theta_e": m.theta_e_,
                "el_x": m.El_[0], "el_y": m.El_[1], "el_e": m.El_[2],
                "state_usage": m.state_usage_}

    def _set_state(self, arrays) -> None:
        self.mean_ = np.asarray(arrays["mean"], dtype=np.float64)
        self.scale_ = np.asarray(arrays["scale"], dtype=np.float64)
        if self.mean_.shape != (self.n_features_in_,) or self.scale_.shape != self.mean_.shape:
            raise ValueError("standardisation does not match the header's feature count")
        m = HCRFDPM(**self._model_params())
        m.classes_ = np.asarray(arrays["window_classes"], dtype=np.int64)
        m.n_features_in_ = 2 * self.n_features_in_ + 1
        m.theta_x_, m.theta_y_, m.theta_e_ = (np.asarray(arrays[k], dtype=np.float64)
                                             for k in ("theta_x", "theta_y", "theta_e"))
        m.El_ = tuple(np.asarray(arrays[k], dtype=np.float64) for k in ("el_x", "el_y", "el_e"))
        m.state_usage_ = np.asarray(arrays["state_usage"], dtype=np.float64)
        L, C = m.theta_y_.shape
        if (m.theta_x_.shape != (L, m.n_features_in_) or m.theta_e_.shape != (C, L, L)
                or m.classes_.max() >= len(self.classes_) or C != len(m.classes_)):
            raise ValueError("HCRF-DPM arrays have inconsistent shapes")
        self.model_ = m
        self.window_classes_ = m.classes_
        self.reset()
