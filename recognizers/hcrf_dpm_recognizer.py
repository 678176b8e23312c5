"""The ``"hcrf-dpm"`` walker recognizer: HCRF-DPM over sliding windows.

Each window of ``window`` frames gets one activity: training windows
are cut every ``hop`` frames and labelled by their majority activity. Frames are
standardised and NaN (a missing reading) set to the mean; every ``pool`` frames of a
window become one step of the hidden chain, described by the block's mean, encoded
nonnegatively as by :func:`~recognizers.modelling.crf.hcrfdpm.encode_signed` ([m+, m-], as
the model needs), and its standard deviation (already nonnegative; the
walker's motion energy), plus a constant: (3 d + 1) features per step. With
``n_knots`` > 0 (the default) each block mean and deviation is instead expanded on
piecewise-linear "hat" functions at quantile knots of the training blocks
(:func:`hat_encode`: nonnegative, two nonzero per value), so each hidden state's
potential is any continuous piecewise-linear function of each feature, not only a
penalty growing away from the mean as with [m+, m-]. Pooling makes
the chain ``pool`` times shorter (2 s at 50 Hz, pool 10: 10 steps instead of 100), so training
and streaming are that much cheaper, and averages out the sensor noise a linear
potential cannot.

Streaming (``filter``/``step``): every ``hop`` frames the trailing window is
classified and the posterior is smoothed, ``p <- (1 - smoothing) p + smoothing q``;
between updates the last posterior is held, so the latency is at most ``hop``
frames plus one window's forward pass. ``predict_proba`` (offline) averages the
posteriors of every window that covers a frame.

References
----------
K. Bousmalis, S. Zafeiriou, L.-P. Morency, M. Pantic and Z. Ghahramani, "Variational
Hidden Conditional Random Fields with Coupled Dirichlet Process Mixtures", ECML PKDD
2013, LNAI 8189, pp. 531-547.
"""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils._param_validation import Options

from recognizers.base import (Interval, Recognizer, RecognizerTags, StrOptions,
                              StreamRunMixin, check_is_fitted, register_recognizer)
from recognizers.modelling.crf import hcrfdpm_core
from recognizers.modelling.crf.hcrfdpm import HCRFDPM


def block_stats(Z: np.ndarray, pool: int) -> np.ndarray:
    """Windows of standardised frames (..., T, d) -> chain steps (..., k, 2 d): the mean
    and standard deviation of each block of ``pool`` frames.

    k = max(1, T // pool) blocks from the end of the window (the most recent frames;
    up to pool - 1 oldest frames are left out); one block of all T frames when T < pool.
    """
    T, d = Z.shape[-2:]
    k = max(1, T // pool)
    size = T // k if T < pool else pool
    B = Z[..., T - k * size:, :].reshape(Z.shape[:-2] + (k, size, d))
    return np.concatenate([B.mean(axis=-2), B.std(axis=-2)], axis=-1)


def hat_encode(V: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """Piecewise-linear ("hat") basis: (..., d) values, (d, K) increasing knots ->
    (..., d K) nonnegative weights, two adjacent nonzero per value, summing to 1
    (values beyond the end knots clamp to them). A linear potential over these
    features is any continuous piecewise-linear function of each value."""
    d, K = knots.shape
    out = np.zeros(V.shape + (K,))
    for i in range(d):
        v = V[..., i]
        hi = np.clip(np.searchsorted(knots[i], v), 1, K - 1)
        lo_k, hi_k = knots[i, hi - 1], knots[i, hi]
        w = np.clip((v - lo_k) / (hi_k - lo_k), 0.0, 1.0)
        np.put_along_axis(out[..., i, :], (hi - 1)[..., None], (1.0 - w)[..., None], axis=-1)
        np.put_along_axis(out[..., i, :], hi[..., None], w[..., None], axis=-1)
    return out.reshape(V.shape[:-1] + (d * K,))


def fit_knots(V: np.ndarray, n_knots: int) -> np.ndarray:
    """(d, n_knots) strictly increasing knots at evenly spaced quantiles of V (n, d)."""
    q = np.quantile(V, np.linspace(0.02, 0.98, n_knots), axis=0).T
    eps = 1e-6 * np.maximum(1.0, np.abs(q).max(axis=1, keepdims=True))
    return np.maximum.accumulate(q + eps * np.arange(n_knots), axis=1) + 0.0


def window_starts(T: int, window: int, hop: int) -> np.ndarray:
    """Starts of windows every ``hop`` frames; the last one ends at T (one window if T <= window)."""
    if T <= window:
        return np.array([0])
    starts = np.arange(0, T - window + 1, hop)
    if starts[-1] != T - window:
        starts = np.r_[starts, T - window]
    return starts


@register_recognizer
class HCRFDPMRecognizer(StreamRunMixin, Recognizer):
    """Sliding-window HCRF-DPM: hidden states shared by activities, their number learnt.

    Parameters
    ----------
    window : frames per window (default 100: 2 s at 50 Hz).
    hop : frames between windows, in training and when streaming (default 50: 1 s).
    The defaults (10 steps of 0.2 s per window, one alternation of capped phases) are
    what docs/benchmarks.md measured on exp1 / exp2.
    pool : frames per chain step (mean and spread of each block, see the module).
    n_knots : hat functions per block statistic (0: the signed encoding [m+, m-, sd]).
    smoothing : weight of a new window posterior in the streamed (filtered) output.
    n_states, alpha, update_alpha, clamped, init, n_restarts, n_outer, max_var_iter,
    max_grad_iter, warm_grad_iter, random_state : as
        :class:`~recognizers.modelling.crf.hcrfdpm.HCRFDPM` (its iteration caps lower here).

    Attributes
    ----------
    model_ : the fitted :class:`HCRFDPM` (``state_usage_`` (n_window_classes, n_states),
        ``n_states_used_``, ``states_per_label_``); ``window_classes_`` index into
        ``classes_`` of the model's labels (an activity never the majority of a
        window gets probability 0).
    """

    kind = "hcrf-dpm"
    format_version = 2  # 2: pooled steps and knots; version 1 held per-frame [x+, x-, 1]
    min_format_version = 2
    _frame_params = ("window", "hop", "pool")
    _tags = RecognizerTags(supports_streaming=True, supports_partial_fit=False,
                           requires_labels=True)
    _parameter_constraints = {
        "window": [Interval(numbers.Integral, 2, None, closed="left")],
        "hop": [Interval(numbers.Integral, 1, None, closed="left")],
        "pool": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_knots": [Options(numbers.Integral, {0}),
                    Interval(numbers.Integral, 2, None, closed="left")],
        "smoothing": [Interval(numbers.Real, 0, 1, closed="right")],
        "n_states": [Interval(numbers.Integral, 2, None, closed="left")],
        "alpha": [Interval(numbers.Real, 0, None, closed="neither")],
        "update_alpha": ["boolean"],
        "clamped": ["boolean"],
        "init": [StrOptions({"prior", "label-prior", "uniform"})],
        "n_restarts": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_outer": [Interval(numbers.Integral, 0, None, closed="left")],
        "max_var_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_grad_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "warm_grad_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": [Interval(numbers.Integral, 0, None, closed="left"), None],
    }

    def __init__(self, *, window=100, hop=50, pool=10, n_knots=5, smoothing=0.5, n_states=10,
                 alpha=1.0, update_alpha=False, clamped=True, init="label-prior", n_restarts=1,
                 n_outer=1, max_var_iter=10, max_grad_iter=60, warm_grad_iter=20,
                 random_state=0):
        self.window = window
        self.hop = hop
        self.pool = pool
        self.n_knots = n_knots
        self.smoothing = smoothing
        self.n_states = n_states
        self.alpha = alpha
        self.update_alpha = update_alpha
        self.clamped = clamped
        self.init = init
        self.n_restarts = n_restarts
        self.n_outer = n_outer
        self.max_var_iter = max_var_iter
        self.max_grad_iter = max_grad_iter
        self.warm_grad_iter = warm_grad_iter
        self.random_state = random_state

    def __sklearn_is_fitted__(self) -> bool:
        return "model_" in self.__dict__

    def _model_params(self) -> dict:
        names = ("n_states", "alpha", "update_alpha", "clamped", "init", "n_restarts",
                 "n_outer", "max_var_iter", "max_grad_iter", "warm_grad_iter", "random_state")
        return {n: getattr(self, n) for n in names}

    def _standardise(self, X) -> np.ndarray:
        Z = (X - self.mean_) / self.scale_
        return np.where(np.isnan(Z), 0.0, Z)

    def _stats(self, Z) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every window of a standardised session as block statistics (n*k, 2d),
        with the windows' lengths in steps and their starts."""
        W = min(int(self.window), len(Z))
        starts = window_starts(len(Z), W, int(self.hop))
        st = block_stats(Z[starts[:, None] + np.arange(W)], int(self.pool))
        n, k, d = st.shape
        return st.reshape(n * k, d), np.full(n, k), starts

    def _features(self, S) -> np.ndarray:
        """Block statistics (n, 2d) -> nonnegative chain-step features of the model."""
        one = np.ones((len(S), 1))
        if int(self.n_knots) > 0:
            return np.hstack([hat_encode(S, self.knots_), one])
        d = S.shape[1] // 2
        m = S[:, :d]
        return np.hstack([np.maximum(m, 0.0), np.maximum(-m, 0.0), S[:, d:], one])

    def _windows(self, Z) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every window of a standardised session as chain steps: (F, lengths, starts)."""
        S, lengths, starts = self._stats(Z)
        return self._features(S), lengths, starts

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
        W = int(self.window)
        Ss, lens, wlab = [], [], []
        for X, y in zip(Xs, ys):
            S, lengths, starts = self._stats(self._standardise(X))
            yi = np.searchsorted(self.classes_, y)
            Ss.append(S)
            lens.append(lengths)
            wlab += [np.bincount(yi[a:a + W], minlength=len(self.classes_)).argmax()
                     for a in starts]
        wlab = np.asarray(wlab)
        if len(np.unique(wlab)) < 2:
            raise ValueError("hcrf-dpm needs windows of at least two activities; "
                             "give longer recordings or a shorter window")
        S = np.vstack(Ss)
        self.knots_ = (fit_knots(S, int(self.n_knots)) if int(self.n_knots) > 0
                       else np.zeros((S.shape[1], 0)))
        model = HCRFDPM(**self._model_params()).fit(self._features(S), wlab,
                                                     lengths=np.concatenate(lens))
        self.model_ = model
        self.window_classes_ = model.classes_.astype(np.int64)
        self.feature_set_ = feature_set
        self.reset()
        return self

    # -- inference ------------------------------------------------------------------
    def _proba(self, F, lengths) -> np.ndarray:
        """Posteriors over ``classes_`` (n_windows, C) of windows of chain steps."""
        m = self.model_
        lp = hcrfdpm_core.predict_log_proba(F, lengths, m._params(), m.El_)
        out = np.zeros((len(lengths), len(self.classes_)))
        out[:, self.window_classes_] = np.exp(lp)
        return out

    def predict_proba(self, X) -> np.ndarray:
        """Per-frame average of the posteriors of all windows covering the frame, (T, C)."""
        check_is_fitted(self, "model_")
        X = self._X(X)
        F, lengths, starts = self._windows(self._standardise(X))
        Q = self._proba(F, lengths)
        T, W = len(X), min(int(self.window), len(X))
        # Sum of the window posteriors over the windows covering each frame, by
        # differences: +Q at a window's start, -Q at its end.
        acc = np.zeros((T + 1, len(self.classes_)))
        np.add.at(acc, starts, Q)
        np.add.at(acc, starts + W, -Q)
        cover = np.zeros(T + 1)
        np.add.at(cover, starts, 1.0)
        np.add.at(cover, starts + W, -1.0)
        return np.cumsum(acc, axis=0)[:T] / np.cumsum(cover)[:T, None]

    # -- streaming ------------------------------------------------------------------
    def _new_stream(self) -> dict:
        return {"buf": np.zeros((int(self.window), self.n_features_in_)), "n": 0, "p": None}

    def _run(self, stream, X) -> np.ndarray:
        Z = self._standardise(X)
        W, H, s = int(self.window), int(self.hop), float(self.smoothing)
        out = np.empty((len(X), len(self.classes_)))
        buf = stream["buf"]
        t = 0
        while t < len(X):
            # Frames up to the next classification: the first frame, then every hop-th.
            n = stream["n"]
            nxt = 1 if stream["p"] is None else H - n % H
            m = min(nxt, len(X) - t)
            if m >= W:
                buf[:] = Z[t + m - W:t + m]
            else:
                buf[:-m] = buf[m:].copy()
                buf[-m:] = Z[t:t + m]
            stream["n"] = n + m
            if stream["p"] is not None:
                out[t:t + m] = stream["p"]
            if m == nxt:
                steps = self._features(block_stats(buf[W - min(n + m, W):], int(self.pool)))
                q = self._proba(steps, np.array([len(steps)]))[0]
                stream["p"] = q if stream["p"] is None else (1 - s) * stream["p"] + s * q
                out[t + m - 1] = stream["p"]
            t += m
        return out

    # -- persistence ----------------------------------------------------------------
    def _get_state(self) -> dict:
        m = self.model_
        return {"mean": self.mean_, "scale": self.scale_, "knots": self.knots_,
                "window_classes": self.window_classes_,
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
        self.knots_ = np.asarray(arrays["knots"], dtype=np.float64)
        K = int(self.n_knots)
        if self.knots_.shape != (2 * self.n_features_in_, K) or (
                K > 1 and not np.all(np.diff(self.knots_, axis=1) > 0)):
            raise ValueError("knots do not match the header's features and n_knots")
        m.n_features_in_ = (2 * self.n_features_in_ * K if K else 3 * self.n_features_in_) + 1
        m.theta_x_, m.theta_y_, m.theta_e_ = (np.asarray(arrays[k], dtype=np.float64)
                                             for k in ("theta_x", "theta_y", "theta_e"))
        m.El_ = tuple(np.asarray(arrays[k], dtype=np.float64) for k in ("el_x", "el_y", "el_e"))
        m.state_usage_ = np.asarray(arrays["state_usage"], dtype=np.float64)
        L, C = m.theta_y_.shape
        if (m.theta_x_.shape != (L, m.n_features_in_) or m.theta_e_.shape != (C, L, L)
                or tuple(e.shape for e in m.El_) != (m.theta_x_.shape, (L, C), (C, L, L))
                or m.state_usage_.shape != (C, L)
                or m.classes_.max() >= len(self.classes_) or C != len(m.classes_)):
            raise ValueError("HCRF-DPM arrays have inconsistent shapes")
        m._count_used_states()
        self.model_ = m
        self.window_classes_ = m.classes_
        self.reset()
