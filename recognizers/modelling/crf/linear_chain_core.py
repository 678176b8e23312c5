"""Linear-chain CRF cores: feature functions, state scores, likelihood and gradient.

Pure functions of arrays, compiled with Numba; the chain recursions themselves
(forward-backward, Viterbi, filtering) are :mod:`recognizers.modelling.chain`'s,
run on unnormalised log-potentials (``log_pi = 0``), so ``loglik`` is ``log Z``.

Features of a frame ``x`` (n_sensors,) come in two kinds:

``dense``  (D,) floats: ``[1 (bias), z (standardised x, NaN -> 0) if raw,
           window mean and std of z over the last ``window`` frames if window]``;
``codes``  (S,) ints: for every thresholded sensor ``s`` the interval of ``x[s]``
           among that sensor's sorted thresholds (``#{tau <= x[s]}``), offset so
           the codes of all sensors index one table; NaN gets the sensor's
           "missing" code, whose table row stays 0.

A frame's score for label ``k`` is ``dense @ W[:, k] + sum_s table[codes[s], k]``.
The thesis's threshold features (6.5: weight ``lambda^(e)`` if ``x >= tau``,
``lambda^(n)`` otherwise) are linear in the table: ``table = M @ W_thr`` with a
fixed 0/1 matrix ``M`` (:func:`threshold_code_matrix`), so a frame costs one
lookup per sensor instead of one multiply per threshold.

Objective (thesis 6.24, as a loss, CRFsuite's scaling of the penalty):
``sum_n [log Z_n - score(y_n)] + c2 ||w||^2 (+ c1 ||w||_1)``; its gradient
(6.25) is ``E[f] - f(y) + 2 c2 w`` with the expectations from the smoothed
marginals and expected transition counts.
"""
from __future__ import annotations

import numba
import numpy as np

from recognizers.modelling import chain

__all__ = [
    "FeatureSpec",
    "featurize",
    "featurize_frame",
    "new_feature_state",
    "threshold_code_matrix",
    "state_scores",
    "frame_scores_into",
    "feature_gradient",
    "chain_nll",
    "crf_filter_run",
]


# --------------------------------------------------------------------------- features


class FeatureSpec:
    """The arrays a feature function needs (every kernel takes them unpacked).

    mean, scale : (F,) standardisation of the raw sensors.
    raw : bool, window : int >= 0 (0: no window statistics).
    cuts : (n_cuts,) every sensor's sorted thresholds, concatenated.
    cut_offsets : (F + 1,) sensor ``s``'s thresholds are ``cuts[cut_offsets[s]:cut_offsets[s+1]]``.
    code_sensors : (S,) the sensors that have thresholds (in order).
    code_offsets : (S,) first code of each thresholded sensor; sensor ``code_sensors[i]``
        uses codes ``code_offsets[i] .. code_offsets[i] + P`` for its ``P + 1``
        intervals and ``code_offsets[i] + P + 1`` for a missing reading.
    """

    def __init__(self, mean, scale, raw, window, cuts, cut_offsets):
        self.mean = np.ascontiguousarray(mean, dtype=np.float64)
        self.scale = np.ascontiguousarray(scale, dtype=np.float64)
        self.raw = bool(raw)
        self.window = int(window)
        self.cuts = np.ascontiguousarray(cuts, dtype=np.float64)
        self.cut_offsets = np.ascontiguousarray(cut_offsets, dtype=np.int64)
        n_per = np.diff(self.cut_offsets)
        self.code_sensors = np.flatnonzero(n_per > 0).astype(np.int64)
        sizes = n_per[self.code_sensors] + 2  # P + 1 intervals and "missing"
        self.code_offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
        self.n_codes = int(sizes.sum())
        F = self.mean.shape[0]
        self.n_dense = 1 + (F if self.raw else 0) + (2 * F if self.window > 0 else 0)

    @property
    def n_sensors(self) -> int:
        return int(self.mean.shape[0])

    def kernel_args(self):
        return (self.mean, self.scale, self.raw, self.window, self.cuts, self.cut_offsets,
                self.code_sensors, self.code_offsets)


def new_feature_state(spec: FeatureSpec):
    """(ring buffer (max(window, 1), F), counters [position, filled]) for a fresh stream."""
    return (np.zeros((max(spec.window, 1), spec.n_sensors)), np.zeros(2, dtype=np.int64))


@numba.njit(cache=True)
def featurize_frame(x, mean, scale, raw, window, cuts, cut_offsets, code_sensors,
                    code_offsets, ring, counters, z, dense, codes):
    """Features of one frame into ``dense`` (D,) and ``codes`` (S,); advances the ring.

    ``z`` (F,) is scratch.  The window statistics skip NaN readings; with none
    in the window both are 0.
    """
    F = x.shape[0]
    for f in range(F):
        z[f] = (x[f] - mean[f]) / scale[f]
    d = 0
    dense[d] = 1.0
    d += 1
    if raw:
        for f in range(F):
            v = z[f]
            dense[d] = 0.0 if v != v else v
            d += 1
    if window > 0:
        pos = counters[0]
        for f in range(F):
            ring[pos, f] = z[f]
        counters[0] = (pos + 1) % window
        if counters[1] < window:
            counters[1] += 1
        filled = counters[1]
        for f in range(F):
            n = 0
            s = 0.0
            for i in range(filled):
                v = ring[i, f]
                if v == v:
                    n += 1
                    s += v
            m = s / n if n > 0 else 0.0
            q = 0.0
            for i in range(filled):
                v = ring[i, f]
                if v == v:
                    q += (v - m) * (v - m)
            dense[d] = m
            dense[d + F] = np.sqrt(q / n) if n > 0 else 0.0
            d += 1
    for i in range(code_sensors.shape[0]):
        s = code_sensors[i]
        a, b = cut_offsets[s], cut_offsets[s + 1]
        v = x[s]
        if v != v:
            codes[i] = code_offsets[i] + (b - a) + 1
        else:
            # number of thresholds <= v (binary search; thresholds sorted)
            lo, hi = a, b
            while lo < hi:
                mid = (lo + hi) // 2
                if cuts[mid] <= v:
                    lo = mid + 1
                else:
                    hi = mid
            codes[i] = code_offsets[i] + (lo - a)


@numba.njit(cache=True)
def _featurize_kernel(X, mean, scale, raw, window, cuts, cut_offsets, code_sensors,
                      code_offsets, ring, counters, dense, codes):
    z = np.empty(X.shape[1])
    for t in range(X.shape[0]):
        featurize_frame(X[t], mean, scale, raw, window, cuts, cut_offsets, code_sensors,
                        code_offsets, ring, counters, z, dense[t], codes[t])


def featurize(spec: FeatureSpec, X):
    """``(dense (T, D), codes (T, S) int64)`` of one sequence, from a fresh stream."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    T = X.shape[0]
    dense = np.empty((T, spec.n_dense))
    codes = np.empty((T, spec.code_sensors.shape[0]), dtype=np.int64)
    ring, counters = new_feature_state(spec)
    _featurize_kernel(X, *spec.kernel_args(), ring, counters, dense, codes)
    return dense, codes


def threshold_code_matrix(spec: FeatureSpec) -> np.ndarray:
    """(n_codes, 2 n_cuts) 0/1 matrix ``M`` with ``table = M @ W_thr``.

    Column ``2p`` is threshold ``p``'s "at or above" indicator, ``2p + 1`` its
    "below" indicator, as functions of the interval code; missing rows are 0.
    """
    M = np.zeros((spec.n_codes, 2 * spec.cuts.shape[0]))
    for i, s in enumerate(spec.code_sensors):
        a, b = spec.cut_offsets[s], spec.cut_offsets[s + 1]
        cs = spec.cuts[a:b]
        # x >= tau_p  <=>  code >= #{tau <= tau_p} (ties included)
        rank = np.searchsorted(cs, cs, side="right")
        intervals = np.arange(b - a + 1)[:, None]
        above = intervals >= rank[None, :]
        rows = slice(spec.code_offsets[i], spec.code_offsets[i] + b - a + 1)
        cols = 2 * np.arange(a, b)
        M[rows, cols] = above
        M[rows, cols + 1] = ~above
    return M


# --------------------------------------------------------------------------- scores


@numba.njit(cache=True)
def frame_scores_into(dense, codes, W, table, out):
    """One frame's scores (K,): ``dense @ W`` plus the code table rows."""
    K = out.shape[0]
    for k in range(K):
        out[k] = 0.0
    for d in range(dense.shape[0]):
        v = dense[d]
        for k in range(K):
            out[k] += v * W[d, k]
    for i in range(codes.shape[0]):
        row = table[codes[i]]
        for k in range(K):
            out[k] += row[k]


@numba.njit(cache=True)
def _scores_kernel(dense, codes, W, table, out):
    for t in range(dense.shape[0]):
        frame_scores_into(dense[t], codes[t], W, table, out[t])


def state_scores(dense, codes, W, table) -> np.ndarray:
    """Per-frame label scores (T, K): ``dense @ W`` plus the code table lookups.

    Row by row the same arithmetic as :func:`frame_scores_into` (the live
    filter), so batch and streaming scores are identical.  Compiled loops
    rather than BLAS: these products are too skinny for BLAS threads to pay
    off, and idle BLAS threads spinning on a busy machine cost more than the
    product itself.
    """
    out = np.empty((dense.shape[0], W.shape[1]))
    _scores_kernel(dense, codes, np.ascontiguousarray(W), np.ascontiguousarray(table), out)
    return out


@numba.njit(cache=True)
def _gradient_kernel(dense, codes, R, gW, gT):
    K = R.shape[1]
    for t in range(dense.shape[0]):
        r = R[t]
        for d in range(dense.shape[1]):
            v = dense[t, d]
            g = gW[d]
            for k in range(K):
                g[k] += v * r[k]
        for i in range(codes.shape[1]):
            g = gT[codes[t, i]]
            for k in range(K):
                g[k] += r[k]


def feature_gradient(dense, codes, R, n_codes):
    """``(dense.T @ R (D, K), code sums (n_codes, K))``: the chain rule from scores to weights.

    ``R`` (T, K) is the gradient with respect to the state scores.
    """
    gW = np.zeros((dense.shape[1], R.shape[1]))
    gT = np.zeros((n_codes, R.shape[1]))
    _gradient_kernel(dense, codes, R, gW, gT)
    return gW, gT


# --------------------------------------------------------------------------- likelihood


@numba.njit(cache=True)
def _empirical_kernel(U, log_A, y, offsets, trans_counts):
    """Score of the true labels; adds their transition counts to ``trans_counts``."""
    total = 0.0
    for n in range(offsets.shape[0] - 1):
        a, b = offsets[n], offsets[n + 1]
        for t in range(a, b):
            total += U[t, y[t]]
            if t > a:
                total += log_A[y[t - 1], y[t]]
                trans_counts[y[t - 1], y[t]] += 1.0
    return total


def chain_nll(U, log_A, y, lengths):
    """Negative conditional log-likelihood of labels ``y`` and its gradient.

    Parameters
    ----------
    U : (T, K) state scores of the concatenated sequences
    log_A : (K, K) transition log-potentials
    y : (T,) int64 labels in 0..K-1
    lengths : sequence lengths (sum T)

    Returns
    -------
    (nll, dU (T, K), dA (K, K)) with ``nll = sum_n log Z_n - score(y_n)``,
    ``dU = marginals - onehot(y)`` and ``dA = expected - observed transition counts``.
    """
    K = U.shape[1]
    sm = chain.smooth(np.zeros(K), log_A, U, lengths)
    offsets = chain.lengths_to_offsets(U.shape[0], lengths)
    emp = np.zeros((K, K))
    score = _empirical_kernel(U, log_A, y, offsets, emp)
    dU = sm.posterior
    dU[np.arange(y.shape[0]), y] -= 1.0
    return sm.loglik - score, dU, sm.trans_counts - emp


# --------------------------------------------------------------------------- streaming


@numba.njit(cache=True)
def crf_filter_run(X, mean, scale, raw, window, cuts, cut_offsets, code_sensors, code_offsets,
                   ring, counters, W, table, log_pi, log_A, exp_A, colmax, started, alpha,
                   cur, z, dense, codes, u, scratch, posts):
    """Filter frames ``X`` continuing a stream; returns the new ping-pong index.

    ``alpha`` (2, K) holds the filtered log-posterior in ``alpha[cur]``; the
    feature ring and counters carry the window statistics across calls.  One
    call over a sequence and frame-by-frame calls give identical results.
    """
    for t in range(X.shape[0]):
        featurize_frame(X[t], mean, scale, raw, window, cuts, cut_offsets, code_sensors,
                        code_offsets, ring, counters, z, dense, codes)
        frame_scores_into(dense, codes, W, table, u)
        nxt = 1 - cur
        if started:
            chain.forward_step_into(alpha[cur], log_A, exp_A, colmax, u, alpha[nxt], scratch)
        else:
            chain.forward_init_into(log_pi, u, alpha[nxt])
        started = True
        cur = nxt
        for k in range(u.shape[0]):
            posts[t, k] = np.exp(alpha[cur, k])
    return cur
