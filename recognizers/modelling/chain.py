"""Exact inference in a linear chain, in log space, compiled with Numba.

Every chain model in WalkerLab (the supervised HMM, the CRF, the BMM-HMM) calls
these functions; no model class contains a recursion of its own.  They are pure:
they take arrays, never model objects, and never modify their inputs.

Notation and axes (``T`` time steps, ``K`` states):

``log_pi``   ``(K,)``     log initial weights, ``log p(y_1 = k)``.
``log_A``    ``(K, K)``   log transition weights, ``log_A[i, j] = log p(y_t = j | y_{t-1} = i)``;
             or ``(T, K, K)`` time-varying: ``log_A[t]`` links step ``t - 1`` to
             step ``t`` and ``log_A[0]`` (and, with ``lengths``, the slice at the
             first step of every sequence) is ignored.
``log_lik``  ``(T, K)``   ``log_lik[t, k] = log p(x_t | y_t = k)`` (an HMM) or any
             state log-potential (a CRF).

Nothing requires the weights to be normalised, so a linear-chain CRF passes
log-potentials and gets ``log Z`` where an HMM gets ``log p(x_1..T)``.  Entries
may be ``-inf`` (impossible starts, transitions or observations); they never
produce NaN.  Inputs must not contain NaN or ``+inf``.

Several sequences are passed as one concatenated ``log_lik`` (and, if
time-varying, ``log_A``) plus ``lengths`` (hmmlearn's convention); each sequence
restarts from ``log_pi`` and the results are concatenated along time, with
scalar results (log-likelihood, Viterbi score, transition counts) summed over
the sequences.

Degenerate evidence (documented, not an error):

* an observation impossible in every state given the past (``-inf``
  normaliser) leaves the filtered posterior at the predictive distribution and
  makes the log-likelihood ``-inf``;
* where the smoothed posterior is undefined because the whole sequence has
  probability zero, the filtered posterior is returned instead, and such steps
  add nothing to the transition counts.

Two numerics are used.  :func:`forward`, :func:`backward`, :func:`viterbi` and
:func:`filter_step` work in log space (``forward`` and ``filter_step`` run the
same compiled step, so streaming reproduces batch filtering bit for bit).
:func:`smooth` and :func:`log_likelihood` with time-invariant transitions use a
*scaled* recursion in linear space (Rabiner scaling with per-step shifts:
``exp(log_lik[t] - max_k log_lik[t])`` and ``exp(log_A - max log_A)``, every
message renormalised), which needs K exponentials per step instead of ~3K and
is several times faster.  Every term it adds is at most 1, so whatever
underflows is below 1e-307 in absolute value; whenever a per-step normaliser
drops below 1e-280 (where such a loss could matter, or the step is impossible)
that sequence is recomputed exactly by the log-space kernels.  The two agree to
rounding (about 1e-13 relative) and both are checked against brute force.

The ``*_into`` kernels (:func:`forward_init_into`, :func:`forward_step_into`,
:func:`transition_exp_into`) are plain ``@numba.njit`` functions that write into
caller-owned buffers, for use from other compiled code (streaming recognizers);
they do no validation.
"""
from __future__ import annotations

import threading
from typing import NamedTuple

import numba
import numpy as np

__all__ = [
    "ForwardResult",
    "BackwardResult",
    "SmoothResult",
    "ViterbiResult",
    "FilterStepResult",
    "forward",
    "backward",
    "smooth",
    "viterbi",
    "filter_step",
    "log_likelihood",
    "sample_path",
    "forward_init_into",
    "forward_step_into",
    "transition_exp_into",
    "lengths_to_offsets",
]

_NEG_INF = -np.inf
# Below this a shifted-exponential sum may have lost its dominant term to
# underflow (exp(-745) is the smallest double), so it is redone in log space.
_TINY = 1e-280


# --------------------------------------------------------------------------- results


class ForwardResult(NamedTuple):
    """Filtering result.

    log_alpha : (T, K) float
        ``log p(y_t = k | x_1..t)`` (normalised: ``exp(log_alpha[t])`` sums to 1).
    loglik : float
        ``log p(x_1..T)`` (``log Z`` for unnormalised potentials), summed over
        sequences when ``lengths`` is given.
    """

    log_alpha: np.ndarray
    loglik: float


class BackwardResult(NamedTuple):
    """Backward messages, rescaled per step for precision.

    log_beta : (T, K) float
        ``log p(x_{t+1..T} | y_t = k)`` minus ``log_scale[t]``; each row has
        ``logsumexp == 0`` (or is all ``-inf`` when the future is impossible).
    log_scale : (T,) float
        Per-step constant: the unscaled message is
        ``log_beta + log_scale[:, None]``; ``log_scale[T - 1] == 0``.
    """

    log_beta: np.ndarray
    log_scale: np.ndarray


class SmoothResult(NamedTuple):
    """Forward-backward result.

    posterior : (T, K) float
        ``p(y_t = k | x_1..T)``; every row sums to 1.
    trans_counts : (K, K) float
        ``sum_t p(y_{t-1} = i, y_t = j | x_1..T)`` over ``t >= 1`` of every
        sequence: the expected transition counts of an EM M-step.
    loglik : float
        ``log p(x_1..T)``, as in :class:`ForwardResult`.
    """

    posterior: np.ndarray
    trans_counts: np.ndarray
    loglik: float


class ViterbiResult(NamedTuple):
    """Most probable state path.

    path : (T,) int64
        ``argmax_y p(y_1..T, x_1..T)``; ties go to the lowest state index.
    score : float
        ``max_y log p(y_1..T, x_1..T)``, summed over sequences.
    """

    path: np.ndarray
    score: float


class FilterStepResult(NamedTuple):
    """One filtering step.

    log_alpha : (K,) float
        ``log p(y_t = k | x_1..t)``, normalised.
    log_norm : float
        ``log p(x_t | x_1..t-1)``; the sum over steps is the log-likelihood.
    """

    log_alpha: np.ndarray
    log_norm: float


# --------------------------------------------------------------------------- kernels


@numba.njit(cache=True)
def _normalise_inplace(v):
    """Subtract logsumexp(v) from v; an all -inf vector becomes uniform."""
    k = v.shape[0]
    m = _NEG_INF
    for i in range(k):
        if v[i] > m:
            m = v[i]
    if m == _NEG_INF:
        u = -np.log(k)
        for i in range(k):
            v[i] = u
        return _NEG_INF
    s = 0.0
    for i in range(k):
        s += np.exp(v[i] - m)
    c = m + np.log(s)
    for i in range(k):
        v[i] -= c
    return c


@numba.njit(cache=True)
def _absorb_evidence(out, log_lik_t):
    """out <- normalise(out + log_lik_t); returns the log normaliser.

    ``out`` holds the (log) prediction.  If the evidence is impossible in every
    state, ``out`` is left as the normalised prediction and ``-inf`` returned.
    """
    k = out.shape[0]
    m = _NEG_INF
    for j in range(k):
        v = out[j] + log_lik_t[j]
        if v > m:
            m = v
    if m == _NEG_INF:
        _normalise_inplace(out)
        return _NEG_INF
    s = 0.0
    for j in range(k):
        s += np.exp(out[j] + log_lik_t[j] - m)
    c = m + np.log(s)
    for j in range(k):
        out[j] = out[j] + log_lik_t[j] - c
    return c


@numba.njit(cache=True)
def forward_init_into(log_pi, log_lik_t, out):
    """First filtering step into ``out`` (K,); returns ``log p(x_1)``."""
    for j in range(out.shape[0]):
        out[j] = log_pi[j]
    return _absorb_evidence(out, log_lik_t)


@numba.njit(cache=True)
def transition_exp_into(log_A, exp_A, log_colmax):
    """Column-shifted transition weights for :func:`forward_step_into`.

    ``log_colmax[j] = max_i log_A[i, j]`` and ``exp_A[i, j] = exp(log_A[i, j] -
    log_colmax[j])`` (0 where the column is all ``-inf``), so every entry is in
    [0, 1] whatever the scale of the log-potentials.
    """
    k = log_A.shape[0]
    for j in range(k):
        m = _NEG_INF
        for i in range(k):
            if log_A[i, j] > m:
                m = log_A[i, j]
        log_colmax[j] = m
    for i in range(k):
        for j in range(k):
            if log_colmax[j] == _NEG_INF:
                exp_A[i, j] = 0.0
            else:
                exp_A[i, j] = np.exp(log_A[i, j] - log_colmax[j])


@numba.njit(cache=True)
def forward_step_into(log_alpha_prev, log_A, exp_A, log_colmax, log_lik_t, out, scratch):
    """One filtering step into ``out`` (K,); returns ``log p(x_t | x_1..t-1)``.

    ``log_alpha_prev`` (K,) normalised; ``log_A`` (K, K) with ``exp_A`` and
    ``log_colmax`` from :func:`transition_exp_into`; ``scratch`` (K,) is
    overwritten.  ``out`` must not alias ``log_alpha_prev``.

    The prediction ``logsumexp_i(log_alpha_prev[i] + log_A[i, j])`` is computed
    as a matrix-vector product of shifted exponentials (K exps instead of K^2);
    a column whose sum falls below ``_TINY`` (where underflow could lose its
    dominant term) is recomputed exactly in log space.
    """
    k = out.shape[0]
    m_prev = _NEG_INF
    for i in range(k):
        if log_alpha_prev[i] > m_prev:
            m_prev = log_alpha_prev[i]
    if m_prev == _NEG_INF:
        for j in range(k):
            out[j] = 0.0
        return _absorb_evidence(out, log_lik_t)
    for i in range(k):
        scratch[i] = np.exp(log_alpha_prev[i] - m_prev)
    for j in range(k):
        out[j] = 0.0
    for i in range(k):
        p = scratch[i]
        if p == 0.0:
            continue
        for j in range(k):
            out[j] += p * exp_A[i, j]
    for j in range(k):
        if log_colmax[j] == _NEG_INF:
            out[j] = _NEG_INF
        elif out[j] > _TINY:
            out[j] = m_prev + log_colmax[j] + np.log(out[j])
        else:
            out[j] = _lse_col(log_alpha_prev, log_A, j)
    return _absorb_evidence(out, log_lik_t)


@numba.njit(cache=True)
def _lse_col(v, log_A, j):
    """logsumexp_i(v[i] + log_A[i, j]), exactly."""
    k = v.shape[0]
    m = _NEG_INF
    for i in range(k):
        x = v[i] + log_A[i, j]
        if x > m:
            m = x
    if m == _NEG_INF:
        return _NEG_INF
    s = 0.0
    for i in range(k):
        s += np.exp(v[i] + log_A[i, j] - m)
    return m + np.log(s)


@numba.njit(cache=True)
def _lse_row(log_A, i, v):
    """logsumexp_j(log_A[i, j] + v[j]), exactly."""
    k = v.shape[0]
    m = _NEG_INF
    for j in range(k):
        x = log_A[i, j] + v[j]
        if x > m:
            m = x
    if m == _NEG_INF:
        return _NEG_INF
    s = 0.0
    for j in range(k):
        s += np.exp(log_A[i, j] + v[j] - m)
    return m + np.log(s)


@numba.njit(cache=True)
def _forward_kernel(log_pi, log_A3, log_lik, offsets, log_alpha):
    """Forward pass over every sequence; returns the summed log normalisers."""
    tv = log_A3.shape[0] > 1
    k = log_lik.shape[1]
    exp_A = np.empty((k, k))
    colmax = np.empty(k)
    scratch = np.empty(k)
    if not tv:
        transition_exp_into(log_A3[0], exp_A, colmax)
    total = 0.0
    for n in range(offsets.shape[0] - 1):
        a, b = offsets[n], offsets[n + 1]
        if b <= a:
            continue
        total += forward_init_into(log_pi, log_lik[a], log_alpha[a])
        for t in range(a + 1, b):
            lA = log_A3[t] if tv else log_A3[0]
            if tv:
                transition_exp_into(lA, exp_A, colmax)
            total += forward_step_into(log_alpha[t - 1], lA, exp_A, colmax,
                                       log_lik[t], log_alpha[t], scratch)
    return total


@numba.njit(cache=True)
def _row_exp_into(log_A, exp_A, log_rowmax):
    """exp_A[i, j] = exp(log_A[i, j] - max_j log_A[i, j]) (0 on all -inf rows)."""
    k = log_A.shape[0]
    for i in range(k):
        m = _NEG_INF
        for j in range(k):
            if log_A[i, j] > m:
                m = log_A[i, j]
        log_rowmax[i] = m
        for j in range(k):
            exp_A[i, j] = 0.0 if m == _NEG_INF else np.exp(log_A[i, j] - m)


@numba.njit(cache=True)
def _backward_kernel(log_A3, log_lik, offsets, log_beta, log_scale):
    tv = log_A3.shape[0] > 1
    k = log_lik.shape[1]
    tmp = np.empty(k)
    q = np.empty(k)
    exp_A = np.empty((k, k))
    rowmax = np.empty(k)
    if not tv:
        _row_exp_into(log_A3[0], exp_A, rowmax)
    for n in range(offsets.shape[0] - 1):
        a, b = offsets[n], offsets[n + 1]
        if b <= a:
            continue
        for j in range(k):
            log_beta[b - 1, j] = 0.0
        log_scale[b - 1] = 0.0
        for t in range(b - 2, a - 1, -1):
            lA = log_A3[t + 1] if tv else log_A3[0]
            if tv:
                _row_exp_into(lA, exp_A, rowmax)
            mq = _NEG_INF
            for j in range(k):
                tmp[j] = log_lik[t + 1, j] + log_beta[t + 1, j]
                if tmp[j] > mq:
                    mq = tmp[j]
            if mq == _NEG_INF:
                # The future is impossible from every state: keep a -inf row.
                for i in range(k):
                    log_beta[t, i] = _NEG_INF
                log_scale[t] = log_scale[t + 1]
                continue
            for j in range(k):
                q[j] = np.exp(tmp[j] - mq)
            mrow = _NEG_INF
            for i in range(k):
                s = 0.0
                for j in range(k):
                    s += exp_A[i, j] * q[j]
                if rowmax[i] == _NEG_INF:
                    v = _NEG_INF
                elif s > _TINY:
                    v = rowmax[i] + mq + np.log(s)
                else:
                    v = _lse_row(lA, i, tmp)
                log_beta[t, i] = v
                if v > mrow:
                    mrow = v
            if mrow == _NEG_INF:
                log_scale[t] = log_scale[t + 1]
                continue
            s = 0.0
            for i in range(k):
                s += np.exp(log_beta[t, i] - mrow)
            c = mrow + np.log(s)
            for i in range(k):
                log_beta[t, i] -= c
            log_scale[t] = log_scale[t + 1] + c


@numba.njit(cache=True)
def _smooth_kernel(log_A3, log_lik, offsets, log_alpha, log_beta, posterior, xi):
    tv = log_A3.shape[0] > 1
    T, k = log_lik.shape
    row = np.empty(k)
    p = np.empty(k)
    q = np.empty(k)
    tmp = np.empty(k)
    w = np.empty((k, k))
    exp_A = np.empty((k, k))
    for t in range(T):
        for j in range(k):
            row[j] = log_alpha[t, j] + log_beta[t, j]
        c = _normalise_inplace(row)
        if c == _NEG_INF:
            # Sequence has probability zero: fall back to the filtered posterior.
            for j in range(k):
                posterior[t, j] = np.exp(log_alpha[t, j])
        else:
            for j in range(k):
                posterior[t, j] = np.exp(row[j])
    gmax = _NEG_INF
    for n in range(offsets.shape[0] - 1):
        a, b = offsets[n], offsets[n + 1]
        for t in range(a + 1, b):
            lA = log_A3[t] if tv else log_A3[0]
            if tv or gmax == _NEG_INF:
                gmax = _NEG_INF
                for i in range(k):
                    for j in range(k):
                        if lA[i, j] > gmax:
                            gmax = lA[i, j]
                if gmax == _NEG_INF:
                    continue
                for i in range(k):
                    for j in range(k):
                        exp_A[i, j] = np.exp(lA[i, j] - gmax)
            ma = _NEG_INF
            mq = _NEG_INF
            for i in range(k):
                if log_alpha[t - 1, i] > ma:
                    ma = log_alpha[t - 1, i]
                tmp[i] = log_lik[t, i] + log_beta[t, i]
                if tmp[i] > mq:
                    mq = tmp[i]
            if ma == _NEG_INF or mq == _NEG_INF:
                continue
            for i in range(k):
                p[i] = np.exp(log_alpha[t - 1, i] - ma)
                q[i] = np.exp(tmp[i] - mq)
            s = 0.0
            for i in range(k):
                for j in range(k):
                    w[i, j] = p[i] * exp_A[i, j] * q[j]
                    s += w[i, j]
            if not s > _TINY:
                # Underflow could have lost the dominant terms: redo exactly.
                m = _NEG_INF
                for i in range(k):
                    for j in range(k):
                        w[i, j] = log_alpha[t - 1, i] + lA[i, j] + tmp[j]
                        if w[i, j] > m:
                            m = w[i, j]
                if m == _NEG_INF:
                    continue
                s = 0.0
                for i in range(k):
                    for j in range(k):
                        w[i, j] = np.exp(w[i, j] - m)
                        s += w[i, j]
            for i in range(k):
                for j in range(k):
                    xi[i, j] += w[i, j] / s


@numba.njit(cache=True, inline="always")
def _shift_to_zero(cur, prev, delta_row):
    """Subtract the row's maximum so path decisions are made at O(1) magnitudes,
    copy it into ``prev`` and ``delta_row``; returns what was subtracted."""
    k = cur.shape[0]
    m = _NEG_INF
    for j in range(k):
        m = cur[j] if cur[j] > m else m
    shift = 0.0
    if m != _NEG_INF:
        for j in range(k):
            cur[j] -= m
        shift = m
    for j in range(k):
        prev[j] = cur[j]
        delta_row[j] = cur[j]
    return shift


@numba.njit(cache=True, inline="always")
def _backtrack(delta, path, a, b, log_A3, tv, offset):
    """Fill ``path[a:b]`` from the shifted scores (argmax recomputed for the one state
    on the path, ties to the lowest index); returns the sequence's best log score."""
    k = delta.shape[1]
    best = _NEG_INF
    arg = 0
    for j in range(k):
        if delta[b - 1, j] > best:
            best = delta[b - 1, j]
            arg = j
    path[b - 1] = arg
    for t in range(b - 1, a, -1):
        lA = log_A3[t] if tv else log_A3[0]
        j = path[t]
        top = _NEG_INF
        argmax = 0
        for i in range(k):
            v = delta[t - 1, i] + lA[i, j]
            if v > top:
                top = v
                argmax = i
        path[t - 1] = argmax
    return _NEG_INF if best == _NEG_INF else offset + best


@numba.njit(cache=True)
def _viterbi_kernel(log_pi, log_A3, log_lik, offsets, path, delta):
    """Max-product recursion storing the (shifted) scores ``delta`` (T, K).

    The forward pass keeps only maxima, ``delta[t, j] = max_i(delta[t-1, i] +
    log_A[i, j]) + log_lik[t, j]`` (read from the transposed ``log_A``, so the
    inner loop is contiguous and branch-free); the backtrack recomputes each
    argmax for the one state on the path.  Both use the same floating-point
    sums, so the path (ties to the lowest index) and the score are those of
    the textbook algorithm with back-pointers.
    """
    tv = log_A3.shape[0] > 1
    T, k = log_lik.shape
    prev = np.empty(k)
    cur = np.empty(k)
    lAT = np.empty((k, k))
    if not tv:
        for i in range(k):
            for j in range(k):
                lAT[j, i] = log_A3[0, i, j]
    total = 0.0
    for n in range(offsets.shape[0] - 1):
        a, b = offsets[n], offsets[n + 1]
        if b <= a:
            continue
        offset = 0.0
        for t in range(a, b):
            if t == a:
                for j in range(k):
                    cur[j] = log_pi[j] + log_lik[a, j]
            else:
                if tv:
                    for i in range(k):
                        for j in range(k):
                            lAT[j, i] = log_A3[t, i, j]
                for j in range(k):
                    m = _NEG_INF
                    for i in range(k):
                        v = prev[i] + lAT[j, i]
                        m = v if v > m else m
                    cur[j] = m + log_lik[t, j]
            offset += _shift_to_zero(cur, prev, delta[t])
        total += _backtrack(delta, path, a, b, log_A3, tv, offset)
    return total


# --------------------------------------------------------------------------- scaled kernels
#
# Time-invariant transitions only.  ``expA = exp(log_A - gmax)`` (every entry in
# [0, 1]) and ``expAT`` its transpose (contiguous rows for the forward dot
# products).  A per-sequence kernel returns NaN when a normaliser falls below
# _TINY; the driver then redoes that sequence with the exact log-space kernels.


@numba.njit(cache=True)
def _transition_scaled(log_A):
    k = log_A.shape[0]
    gmax = _NEG_INF
    for i in range(k):
        for j in range(k):
            if log_A[i, j] > gmax:
                gmax = log_A[i, j]
    expA = np.zeros((k, k))
    if gmax != _NEG_INF:
        for i in range(k):
            for j in range(k):
                expA[i, j] = np.exp(log_A[i, j] - gmax)
    return expA, np.ascontiguousarray(expA.T), gmax


@numba.njit(cache=True)
def _scaled_start(log_pi, lik_row, out):
    """out <- normalise(exp(log_pi - max) * lik_row); returns log of the normaliser
    (with the shift of log_pi added back), or NaN if it is below _TINY."""
    k = out.shape[0]
    pm = _NEG_INF
    for j in range(k):
        if log_pi[j] > pm:
            pm = log_pi[j]
    if pm == _NEG_INF:
        return np.nan
    s = 0.0
    for j in range(k):
        v = np.exp(log_pi[j] - pm) * lik_row[j]
        out[j] = v
        s += v
    if not s > _TINY:
        return np.nan
    inv = 1.0 / s
    for j in range(k):
        out[j] *= inv
    return np.log(s) + pm


@numba.njit(cache=True)
def _scaled_predict(prev, expAT, lik_row, out):
    """out <- normalise((prev @ expA) * lik_row); returns the normaliser (0 if tiny)."""
    k = out.shape[0]
    s = 0.0
    for j in range(k):
        acc = 0.0
        for i in range(k):
            acc += expAT[j, i] * prev[i]
        acc *= lik_row[j]
        out[j] = acc
        s += acc
    if not s > _TINY:
        return 0.0
    inv = 1.0 / s
    for j in range(k):
        out[j] *= inv
    return s


@numba.njit(cache=True)
def _shifted_lik_row(log_lik_t, out):
    """out <- exp(log_lik_t - max); returns the max (-inf if every entry is -inf)."""
    k = out.shape[0]
    m = _NEG_INF
    for j in range(k):
        if log_lik_t[j] > m:
            m = log_lik_t[j]
    if m == _NEG_INF:
        return m
    for j in range(k):
        out[j] = np.exp(log_lik_t[j] - m)
    return m


@numba.njit(cache=True)
def _loglik_scaled_seq(log_pi, expAT, gmax, log_lik, a, b, prev, cur, lik):
    """log p(x_a..b-1) by the scaled forward recursion, or NaN (redo exactly)."""
    m = _shifted_lik_row(log_lik[a], lik)
    if m == _NEG_INF:
        return np.nan
    c = _scaled_start(log_pi, lik, prev)
    if c != c:
        return c
    total = c + m
    for t in range(a + 1, b):
        m = _shifted_lik_row(log_lik[t], lik)
        if m == _NEG_INF:
            return np.nan
        s = _scaled_predict(prev, expAT, lik, cur)
        if s == 0.0:
            return np.nan
        total += np.log(s) + gmax + m
        for j in range(prev.shape[0]):
            prev[j] = cur[j]
    return total


@numba.njit(cache=True)
def _loglik_scaled_kernel(log_pi, log_A, log_lik, offsets):
    k = log_lik.shape[1]
    expA, expAT, gmax = _transition_scaled(log_A)
    prev = np.empty(k)
    cur = np.empty(k)
    lik = np.empty(k)
    log_A3 = log_A.reshape(1, k, k)
    total = 0.0
    for n in range(offsets.shape[0] - 1):
        a, b = offsets[n], offsets[n + 1]
        if b <= a:
            continue
        v = np.nan
        if gmax != _NEG_INF or b - a == 1:
            v = _loglik_scaled_seq(log_pi, expAT, gmax, log_lik, a, b, prev, cur, lik)
        if v != v:
            offs = np.array([0, b - a], dtype=np.int64)
            v = _forward_kernel(log_pi, log_A3, log_lik[a:b], offs, np.empty((b - a, k)))
        total += v
    return total


@numba.njit(cache=True)
def _smooth_scaled_seq(log_pi, expA, expAT, gmax, log_lik, a, b, lik, post, xi_seq,
                       beta, bu, q):
    """Scaled forward-backward over one sequence.

    Writes ``post[a:b]`` and adds the sequence's two-slice sums (without the
    factor ``expA``) to ``xi_seq``; returns the log-likelihood or NaN (redo
    exactly).  The forward messages are stored in ``post`` and replaced by
    the posteriors during the backward pass.
    """
    k = log_lik.shape[1]
    total = 0.0
    for t in range(a, b):
        m = _shifted_lik_row(log_lik[t], lik[t])
        if m == _NEG_INF:
            return np.nan
        total += m
    c = _scaled_start(log_pi, lik[a], post[a])
    if c != c:
        return c
    total += c
    for t in range(a + 1, b):
        s = _scaled_predict(post[t - 1], expAT, lik[t], post[t])
        if s == 0.0:
            return np.nan
        total += np.log(s) + gmax
    # Backward: beta (normalised to sum 1) for step t + 1; bu = expA @ (lik * beta).
    u = 1.0 / k
    for j in range(k):
        beta[j] = u
    for t in range(b - 2, a - 1, -1):
        for j in range(k):
            q[j] = lik[t + 1, j] * beta[j]
        s = 0.0
        z = 0.0
        for i in range(k):
            acc = 0.0
            for j in range(k):
                acc += expA[i, j] * q[j]
            bu[i] = acc
            s += acc
            z += post[t, i] * acc
        if not (s > _TINY and z > _TINY):
            return np.nan
        inv_z = 1.0 / z
        for i in range(k):
            ai = post[t, i] * inv_z
            if ai != 0.0:
                for j in range(k):
                    xi_seq[i, j] += ai * q[j]
            post[t, i] = ai * bu[i]
        inv_s = 1.0 / s
        for i in range(k):
            beta[i] = bu[i] * inv_s
    return total


@numba.njit(cache=True)
def _smooth_scaled_kernel(log_pi, log_A, log_lik, offsets, posterior, xi, lik):
    """Forward-backward over every sequence; returns the summed log-likelihood.

    ``lik`` (T, K) is scratch space.
    """
    T, k = log_lik.shape
    expA, expAT, gmax = _transition_scaled(log_A)
    beta = np.empty(k)
    bu = np.empty(k)
    q = np.empty(k)
    xi_seq = np.zeros((k, k))
    acc = np.zeros((k, k))
    log_A3 = log_A.reshape(1, k, k)
    total = 0.0
    for n in range(offsets.shape[0] - 1):
        a, b = offsets[n], offsets[n + 1]
        if b <= a:
            continue
        xi_seq[:, :] = 0.0
        v = np.nan
        if gmax != _NEG_INF or b - a == 1:
            v = _smooth_scaled_seq(log_pi, expA, expAT, gmax, log_lik, a, b, lik, posterior,
                                   xi_seq, beta, bu, q)
        if v == v:
            for i in range(k):
                for j in range(k):
                    acc[i, j] += xi_seq[i, j]
        else:
            # Exact log-space recursions for this sequence.
            L = b - a
            offs = np.array([0, L], dtype=np.int64)
            ll = log_lik[a:b]
            log_alpha = np.empty((L, k))
            v = _forward_kernel(log_pi, log_A3, ll, offs, log_alpha)
            log_beta = np.empty((L, k))
            _backward_kernel(log_A3, ll, offs, log_beta, np.empty(L))
            _smooth_kernel(log_A3, ll, offs, log_alpha, log_beta, posterior[a:b], xi)
        total += v
    for i in range(k):
        for j in range(k):
            xi[i, j] += expA[i, j] * acc[i, j]
    return total


# --------------------------------------------------------------------------- persistence-structured transitions
#
# The default walker model stays with probability p and otherwise moves uniformly:
# A = (p - q) I + q 11^T.  Then max_i(delta_i + log A_ij) and sum_i alpha_i A_ij
# need only the diagonal term and one statistic over all states (the top two
# maxima, resp. the sum), O(K) per step instead of O(K^2).  The public
# functions pick these kernels automatically when log_A has that structure.


# Below this many states the dense Viterbi step (K^2 branch-free max-adds that
# vectorise) beats the O(K) one (a data-dependent argmax per step): measured on
# 100k frames, K=6 4.0 vs 5.7 ms, K=12 8.6 vs 8.3 ms, K=16 13.1 vs 9.1 ms.  Both
# give the same path and score, so only the speed depends on this.
_VITERBI_PERSIST_MIN_K = 12


def persistence_structure(log_A):
    """``(log_stay, log_move)`` if the (K, K) ``log_A`` has one value on its
    diagonal and one value everywhere off it (exactly), else ``None``."""
    log_A = np.asarray(log_A)
    if log_A.ndim != 2 or log_A.shape[0] != log_A.shape[1] or log_A.shape[0] < 2:
        return None
    k = log_A.shape[0]
    diag = np.diagonal(log_A)
    stay = diag[0]
    off = log_A[~np.eye(k, dtype=bool)]
    move = off[0]
    if not (np.all(diag == stay) and np.all(off == move)):
        return None
    if stay == _NEG_INF and move == _NEG_INF:
        return None
    return float(stay), float(move)


@numba.njit(cache=True)
def _viterbi_persist_kernel(log_pi, log_A, log_stay, log_move, log_lik, offsets, path, delta):
    """:func:`_viterbi_kernel` for ``A = persistence``: same sums, same ties.

    For column j the best predecessor is either j itself (``+ log_stay``) or
    the best other state (``+ log_move``): the top maximum of ``prev`` unless
    that is j, then the second.  Every candidate value is the very float the
    dense kernel forms, so scores and paths (ties to the lowest index) agree.
    """
    T, k = log_lik.shape
    prev = np.empty(k)
    cur = np.empty(k)
    total = 0.0
    for n in range(offsets.shape[0] - 1):
        a, b = offsets[n], offsets[n + 1]
        if b <= a:
            continue
        offset = 0.0
        for t in range(a, b):
            if t == a:
                for j in range(k):
                    cur[j] = log_pi[j] + log_lik[a, j]
            else:
                # max_i fl(prev_i + log_move) = fl(max_i prev_i + log_move) (rounding
                # is monotone), so the best other state needs only the top two of prev.
                m1 = prev[0]
                i1 = 0
                for i in range(1, k):
                    if prev[i] > m1:
                        m1 = prev[i]
                        i1 = i
                m2 = _NEG_INF
                for i in range(k):
                    v = prev[i] if i != i1 else _NEG_INF
                    m2 = v if v > m2 else m2
                o1 = m1 + log_move
                o2 = m2 + log_move
                for j in range(k):
                    other = o2 if j == i1 else o1
                    s = prev[j] + log_stay
                    cur[j] = (s if s > other else other) + log_lik[t, j]
            offset += _shift_to_zero(cur, prev, delta[t])
        total += _backtrack(delta, path, a, b, log_A.reshape(1, k, k), False, offset)
    return total


@numba.njit(cache=True)
def _loglik_persist_kernel(log_pi, log_A, log_stay, log_move, log_lik, offsets):
    """:func:`_loglik_scaled_kernel` with the O(K) persistence prediction
    ``(alpha A)_j = (p - q) alpha_j + q sum(alpha)``; NaN-guarded sequences
    fall back to the exact log-space forward, as there."""
    k = log_lik.shape[1]
    gmax = log_stay if log_stay > log_move else log_move
    es = np.exp(log_stay - gmax)
    em = np.exp(log_move - gmax)
    d = es - em
    prev = np.empty(k)
    cur = np.empty(k)
    lik = np.empty(k)
    log_A3 = log_A.reshape(1, k, k)
    total = 0.0
    for n in range(offsets.shape[0] - 1):
        a, b = offsets[n], offsets[n + 1]
        if b <= a:
            continue
        v = np.nan
        m = _shifted_lik_row(log_lik[a], lik)
        if m != _NEG_INF:
            c = _scaled_start(log_pi, lik, prev)
            if c == c:
                v = c + m
                for t in range(a + 1, b):
                    m = _shifted_lik_row(log_lik[t], lik)
                    if m == _NEG_INF:
                        v = np.nan
                        break
                    ssum = 0.0
                    for i in range(k):
                        ssum += prev[i]
                    base = em * ssum
                    s = 0.0
                    for j in range(k):
                        x = (d * prev[j] + base) * lik[j]
                        cur[j] = x
                        s += x
                    if not s > _TINY:
                        v = np.nan
                        break
                    inv = 1.0 / s
                    for j in range(k):
                        prev[j] = cur[j] * inv
                    v += np.log(s) + gmax + m
        if v != v:
            offs = np.array([0, b - a], dtype=np.int64)
            v = _forward_kernel(log_pi, log_A3, log_lik[a:b], offs, np.empty((b - a, k)))
        total += v
    return total


@numba.njit(cache=True)
def _smooth_persist_seq(log_pi, es, em, gmax, log_lik, a, b, lik, post, abuf, beta, bu):
    """:func:`_smooth_scaled_seq` with O(K) steps for ``A = persistence``.

    The forward prediction is ``((es - em) alpha_j + em sum(alpha)) lik_j`` and
    the backward product ``(expA q)_i = (es - em) q_i + em sum(q)``.  The
    two-slice sums, an outer product per step, are left to one matrix product
    over the whole sequence: ``abuf[t]`` receives ``alpha_t / z_t`` (zero on the
    last step) and ``lik[t + 1]`` is overwritten by ``q_{t+1} = lik_{t+1} *
    beta_{t+1}`` (zero on the first step), so the sequence adds ``abuf[a:b-1].T
    @ lik[a+1:b]`` to the counts before the factor ``expA``.  Returns the
    log-likelihood or NaN (redo exactly).
    """
    k = log_lik.shape[1]
    d = es - em
    total = 0.0
    for t in range(a, b):
        m = _shifted_lik_row(log_lik[t], lik[t])
        if m == _NEG_INF:
            return np.nan
        total += m
    c = _scaled_start(log_pi, lik[a], post[a])
    if c != c:
        return c
    total += c
    for t in range(a + 1, b):
        prev = post[t - 1]
        cur = post[t]
        lk = lik[t]
        ssum = 0.0
        for i in range(k):
            ssum += prev[i]
        base = em * ssum
        s = 0.0
        for j in range(k):
            x = (d * prev[j] + base) * lk[j]
            cur[j] = x
            s += x
        if not s > _TINY:
            return np.nan
        inv = 1.0 / s
        for j in range(k):
            cur[j] *= inv
        total += np.log(s) + gmax
    u = 1.0 / k
    for j in range(k):
        beta[j] = u
        abuf[b - 1, j] = 0.0
    for t in range(b - 2, a - 1, -1):
        q = lik[t + 1]
        sq = 0.0
        for j in range(k):
            q[j] *= beta[j]
            sq += q[j]
        base = em * sq
        s = 0.0
        z = 0.0
        pt = post[t]
        for i in range(k):
            v = d * q[i] + base
            bu[i] = v
            s += v
            z += pt[i] * v
        if not (s > _TINY and z > _TINY):
            return np.nan
        inv_z = 1.0 / z
        inv_s = 1.0 / s
        at = abuf[t]
        for i in range(k):
            ai = pt[i] * inv_z
            at[i] = ai
            pt[i] = ai * bu[i]
            beta[i] = bu[i] * inv_s
    for j in range(k):
        lik[a, j] = 0.0
    return total


@numba.njit(cache=True)
def _smooth_persist_kernel(log_pi, log_A, log_stay, log_move, log_lik, offsets, posterior,
                           xi, lik, abuf):
    """:func:`_smooth_scaled_kernel` for ``A = persistence``: O(K) per step plus one
    (K, T) x (T, K) product for the expected counts.  ``lik`` and ``abuf`` (T, K) are
    scratch; rows of sequences redone exactly are zeroed there."""
    T, k = log_lik.shape
    gmax = log_stay if log_stay > log_move else log_move
    es = np.exp(log_stay - gmax)
    em = np.exp(log_move - gmax)
    beta = np.empty(k)
    bu = np.empty(k)
    log_A3 = log_A.reshape(1, k, k)
    total = 0.0
    for n in range(offsets.shape[0] - 1):
        a, b = offsets[n], offsets[n + 1]
        if b <= a:
            continue
        v = _smooth_persist_seq(log_pi, es, em, gmax, log_lik, a, b, lik, posterior, abuf,
                                beta, bu)
        if v != v:
            L = b - a
            offs = np.array([0, L], dtype=np.int64)
            ll = log_lik[a:b]
            log_alpha = np.empty((L, k))
            v = _forward_kernel(log_pi, log_A3, ll, offs, log_alpha)
            log_beta = np.empty((L, k))
            _backward_kernel(log_A3, ll, offs, log_beta, np.empty(L))
            _smooth_kernel(log_A3, ll, offs, log_alpha, log_beta, posterior[a:b], xi)
            for t in range(a, b):
                for j in range(k):
                    lik[t, j] = 0.0
                    abuf[t, j] = 0.0
        total += v
    return total, es, em


@numba.njit(cache=True)
def persistence_params(log_A):
    """Compiled :func:`persistence_structure` for the streaming step: ``(ok,
    log_stay, log_move)`` with ``ok`` False unless (K, K) ``log_A`` (K >= 2) has
    one value on its diagonal and one off it, not both ``-inf``."""
    k = log_A.shape[0]
    if k < 2 or log_A.shape[1] != k:
        return False, 0.0, 0.0
    stay = log_A[0, 0]
    move = log_A[0, 1]
    for i in range(k):
        for j in range(k):
            if log_A[i, j] != (stay if i == j else move):
                return False, 0.0, 0.0
    if stay == _NEG_INF and move == _NEG_INF:
        return False, 0.0, 0.0
    return True, stay, move


@numba.njit(cache=True)
def forward_step_persist_into(log_alpha_prev, log_A, log_stay, log_move, log_lik_t, out,
                              scratch):
    """:func:`forward_step_into` for ``A = persistence`` in O(K): the prediction
    ``sum_i alpha_i A_ij = stay alpha_j + move (1 - alpha_j)`` from the shifted
    exponentials; a column whose sum falls below ``_TINY`` is redone exactly in log
    space, as there."""
    k = out.shape[0]
    m_prev = _NEG_INF
    for i in range(k):
        if log_alpha_prev[i] > m_prev:
            m_prev = log_alpha_prev[i]
    if m_prev == _NEG_INF:
        for j in range(k):
            out[j] = 0.0
        return _absorb_evidence(out, log_lik_t)
    gmax = log_stay if log_stay > log_move else log_move
    es = np.exp(log_stay - gmax)
    em = np.exp(log_move - gmax)
    ssum = 0.0
    for i in range(k):
        v = np.exp(log_alpha_prev[i] - m_prev)
        scratch[i] = v
        ssum += v
    for j in range(k):
        v = es * scratch[j] + em * (ssum - scratch[j])
        if v > _TINY:
            out[j] = m_prev + gmax + np.log(v)
        else:
            out[j] = _lse_col(log_alpha_prev, log_A, j)
    return _absorb_evidence(out, log_lik_t)


@numba.njit(cache=True)
def _sample_path_kernel(cum_pi, cum_A, u, first, out):
    k = cum_pi.shape[0]
    n = out.shape[0]
    if n == 0:
        return
    if first >= 0:
        s = first
    else:
        s = 0
        while s < k - 1 and u[0] > cum_pi[s]:
            s += 1
    out[0] = s
    for t in range(1, n):
        row = cum_A[s]
        j = 0
        while j < k - 1 and u[t] > row[j]:
            j += 1
        s = j
        out[t] = s


# --------------------------------------------------------------------------- wrappers


def lengths_to_offsets(n_samples: int, lengths=None) -> np.ndarray:
    """Sequence boundaries ``(n_seq + 1,)`` int64 from ``lengths``.

    ``lengths=None`` means one sequence.  Raises ``ValueError`` when a length is
    negative or they do not sum to ``n_samples``.
    """
    if lengths is None:
        return np.array([0, n_samples], dtype=np.int64)
    lens = np.asarray(lengths)
    if lens.ndim != 1 or (lens.size and lens.dtype.kind not in "iu"):
        raise ValueError("lengths must be a 1-D array of integers, got %r" % (lengths,))
    lens = lens.astype(np.int64)
    if np.any(lens < 0):
        raise ValueError("lengths must be non-negative, got %s" % lens)
    if int(lens.sum()) != n_samples:
        raise ValueError("lengths sum to %d but there are %d samples"
                         % (int(lens.sum()), n_samples))
    return np.concatenate(([0], np.cumsum(lens))).astype(np.int64)


@numba.njit(cache=True)
def _count_nan_or_posinf(flat):
    """How many entries are NaN or +inf: one compiled, vectorisable pass (numpy's
    isnan + isposinf were 2 ms of a 9 ms Viterbi over 100k x 6)."""
    n = 0
    for i in range(flat.shape[0]):
        n += not (flat[i] < np.inf)
    return n


def _as_f8(a, name, ndim):
    arr = np.ascontiguousarray(a, dtype=np.float64)
    if arr.ndim not in ndim:
        raise ValueError("%s must have %s dimensions, got shape %s"
                         % (name, " or ".join(map(str, ndim)), arr.shape))
    if arr.size and _count_nan_or_posinf(arr.reshape(-1)):
        raise ValueError("%s contains NaN or +inf" % name)
    return arr


def _prepare(log_pi, log_A, log_lik, lengths, need_pi=True):
    log_lik = _as_f8(log_lik, "log_lik", (2,))
    T, K = log_lik.shape
    if K == 0:
        raise ValueError("log_lik has no states (shape %s)" % (log_lik.shape,))
    if need_pi:
        log_pi = _as_f8(log_pi, "log_pi", (1,))
        if log_pi.shape != (K,):
            raise ValueError("log_pi has shape %s, expected (%d,)" % (log_pi.shape, K))
    log_A = _as_f8(log_A, "log_A", (2, 3))
    if log_A.ndim == 2:
        if log_A.shape != (K, K):
            raise ValueError("log_A has shape %s, expected (%d, %d)" % (log_A.shape, K, K))
        log_A3 = log_A.reshape(1, K, K)
    else:
        if log_A.shape != (T, K, K):
            raise ValueError("time-varying log_A has shape %s, expected (%d, %d, %d)"
                             % (log_A.shape, T, K, K))
        # A (1, K, K) array would be read as time-invariant; for T == 1 the
        # only slice is ignored anyway, so this is the same thing.
        log_A3 = log_A
    offsets = lengths_to_offsets(T, lengths)
    return log_pi, log_A3, log_lik, offsets


def forward(log_pi, log_A, log_lik, lengths=None) -> ForwardResult:
    """Filtered log posteriors and the log-likelihood.

    Parameters
    ----------
    log_pi : (K,)
    log_A : (K, K) or (T, K, K)
    log_lik : (T, K)
    lengths : sequence of int, optional
        Lengths of the concatenated sequences (sum ``T``).

    Returns
    -------
    ForwardResult
        ``log_alpha`` (T, K) with ``exp(log_alpha[t]) = p(y_t | x_1..t)`` and
        ``loglik = log p(x_1..T)`` (summed over sequences).
    """
    log_pi, log_A3, log_lik, offsets = _prepare(log_pi, log_A, log_lik, lengths)
    log_alpha = np.empty_like(log_lik)
    loglik = _forward_kernel(log_pi, log_A3, log_lik, offsets, log_alpha)
    return ForwardResult(log_alpha, float(loglik))


def backward(log_A, log_lik, lengths=None) -> BackwardResult:
    """Backward messages ``log p(x_{t+1..T} | y_t)``, stored rescaled.

    See :class:`BackwardResult`: ``log_beta + log_scale[:, None]`` is the
    unscaled message; the last step of every sequence is 0.
    """
    _, log_A3, log_lik, offsets = _prepare(None, log_A, log_lik, lengths, need_pi=False)
    log_beta = np.empty_like(log_lik)
    log_scale = np.empty(log_lik.shape[0])
    _backward_kernel(log_A3, log_lik, offsets, log_beta, log_scale)
    return BackwardResult(log_beta, log_scale)


_WORKSPACE = threading.local()
_WORKSPACE_MAX = 1 << 22  # floats kept per thread between calls (32 MB)


def _scratch(shape) -> np.ndarray:
    """An uninitialised float64 buffer, reused between calls of this thread.

    Large fresh arrays cost page faults on first touch (a few ms per 10^6
    floats), a sizeable part of a forward-backward pass; the buffer never
    leaves this module.
    """
    n = int(np.prod(shape))
    buf = getattr(_WORKSPACE, "buf", None)
    if buf is None or buf.size < n:
        buf = np.empty(n)
        if n <= _WORKSPACE_MAX:
            _WORKSPACE.buf = buf
    return buf[:n].reshape(shape)


def smooth(log_pi, log_A, log_lik, lengths=None, *, out=None) -> SmoothResult:
    """Smoothed one-slice marginals and expected transition counts.

    ``out`` : optional C-contiguous float64 (T, K) array that receives the
    posterior (an EM loop reuses one buffer instead of allocating every
    iteration); it is returned as ``posterior``.

    Returns
    -------
    SmoothResult
        ``posterior`` (T, K) = ``p(y_t | x_1..T)``, ``trans_counts`` (K, K) =
        ``sum_t p(y_{t-1} = i, y_t = j | x)`` over every sequence, ``loglik``.
    """
    log_pi, log_A3, log_lik, offsets = _prepare(log_pi, log_A, log_lik, lengths)
    K = log_lik.shape[1]
    if out is None:
        posterior = np.empty_like(log_lik)
    else:
        posterior = out
        if (not isinstance(out, np.ndarray) or out.shape != log_lik.shape
                or out.dtype != np.float64 or not out.flags.c_contiguous
                or not out.flags.writeable):
            raise ValueError("out must be a writeable C-contiguous float64 array of shape %s"
                             % (log_lik.shape,))
        if np.may_share_memory(out, log_lik):
            raise ValueError("out must not share memory with log_lik")
    xi = np.zeros((K, K))
    ps = persistence_structure(log_A3[0]) if log_A3.shape[0] == 1 else None
    if ps is not None:  # O(K) per step; the counts by one matrix product
        work = _scratch((2,) + log_lik.shape)
        loglik, es, em = _smooth_persist_kernel(log_pi, log_A3[0], ps[0], ps[1], log_lik,
                                                offsets, posterior, xi, work[0], work[1])
        counts = work[1, :-1].T @ work[0, 1:]
        xi += em * counts
        xi[np.diag_indices(K)] += (es - em) * np.diagonal(counts)
        return SmoothResult(posterior, xi, float(loglik))
    if log_A3.shape[0] == 1:
        loglik = _smooth_scaled_kernel(log_pi, log_A3[0], log_lik, offsets, posterior, xi,
                                       _scratch(log_lik.shape))
        return SmoothResult(posterior, xi, float(loglik))
    log_alpha = np.empty_like(log_lik)
    loglik = _forward_kernel(log_pi, log_A3, log_lik, offsets, log_alpha)
    log_beta = np.empty_like(log_lik)
    log_scale = np.empty(log_lik.shape[0])
    _backward_kernel(log_A3, log_lik, offsets, log_beta, log_scale)
    _smooth_kernel(log_A3, log_lik, offsets, log_alpha, log_beta, posterior, xi)
    return SmoothResult(posterior, xi, float(loglik))


def log_likelihood(log_pi, log_A, log_lik, lengths=None) -> float:
    """``log p(x_1..T)`` (summed over sequences) without storing any message.

    The quantity of ``forward(...).loglik``, computed by the scaled recursion
    for time-invariant ``log_A`` (equal to it up to rounding) and by
    :func:`forward` for time-varying ones.
    """
    log_pi, log_A3, log_lik, offsets = _prepare(log_pi, log_A, log_lik, lengths)
    if log_A3.shape[0] == 1:
        ps = persistence_structure(log_A3[0])
        if ps is not None:
            return float(_loglik_persist_kernel(log_pi, log_A3[0], ps[0], ps[1], log_lik,
                                                offsets))
        return float(_loglik_scaled_kernel(log_pi, log_A3[0], log_lik, offsets))
    return float(_forward_kernel(log_pi, log_A3, log_lik, offsets, np.empty_like(log_lik)))


def viterbi(log_pi, log_A, log_lik, lengths=None) -> ViterbiResult:
    """Most probable state path and its log score (joint with the observations)."""
    log_pi, log_A3, log_lik, offsets = _prepare(log_pi, log_A, log_lik, lengths)
    path = np.zeros(log_lik.shape[0], dtype=np.int64)
    ps = persistence_structure(log_A3[0]) if log_A3.shape[0] == 1 else None
    if ps is not None and log_lik.shape[1] >= _VITERBI_PERSIST_MIN_K:
        # O(K) per step, same path and score as the dense kernel
        score = _viterbi_persist_kernel(log_pi, log_A3[0], ps[0], ps[1], log_lik, offsets,
                                        path, _scratch(log_lik.shape))
        return ViterbiResult(path, float(score))
    score = _viterbi_kernel(log_pi, log_A3, log_lik, offsets, path, _scratch(log_lik.shape))
    return ViterbiResult(path, float(score))


def filter_step(log_alpha_prev, log_pi, log_A, log_lik_t) -> FilterStepResult:
    """One step of the online filter.

    Parameters
    ----------
    log_alpha_prev : (K,) or None
        The previous step's ``log_alpha``; ``None`` at the first step of a
        sequence (then ``log_pi`` is used and ``log_A`` ignored).
    log_pi : (K,)
    log_A : (K, K)
        The transition into this step (for a time-varying model, its slice).
    log_lik_t : (K,)

    Looping it over a sequence reproduces :func:`forward` exactly (bit for bit:
    both run the same compiled step); for persistence-structured ``log_A`` (see
    :func:`persistence_structure`) the step is O(K) and equal to it to rounding.
    """
    ll = _as_f8(log_lik_t, "log_lik_t", (1,))
    K = ll.shape[0]
    out = np.empty(K)
    if log_alpha_prev is None:
        lp = _as_f8(log_pi, "log_pi", (1,))
        if lp.shape != (K,):
            raise ValueError("log_pi has shape %s, expected (%d,)" % (lp.shape, K))
        c = forward_init_into(lp, ll, out)
    else:
        prev = _as_f8(log_alpha_prev, "log_alpha_prev", (1,))
        lA = _as_f8(log_A, "log_A", (2,))
        if prev.shape != (K,) or lA.shape != (K, K):
            raise ValueError("log_alpha_prev %s / log_A %s do not match K=%d"
                             % (prev.shape, lA.shape, K))
        if not np.isfinite(prev).any():
            raise ValueError("log_alpha_prev must be a normalised log distribution, "
                             "got no finite entry")
        ok, stay, move = persistence_params(lA)
        if ok:  # O(K): the default walker model streams through this
            c = forward_step_persist_into(prev, lA, stay, move, ll, out, np.empty(K))
            return FilterStepResult(out, float(c))
        exp_A = np.empty((K, K))
        colmax = np.empty(K)
        transition_exp_into(lA, exp_A, colmax)
        c = forward_step_into(prev, lA, exp_A, colmax, ll, out, np.empty(K))
    return FilterStepResult(out, float(c))


def sample_path(startprob, transmat, n_samples: int, rng, first=None) -> np.ndarray:
    """A state path (n_samples,) int64 drawn from the Markov chain.

    ``startprob`` (K,) and ``transmat`` (K, K) are probabilities (rows summing
    to 1); ``first`` fixes the first state instead of drawing it.  ``rng`` is a
    ``numpy.random.Generator``; one uniform is used per step.
    """
    pi = np.asarray(startprob, dtype=np.float64)
    A = np.asarray(transmat, dtype=np.float64)
    K = pi.shape[0]
    if pi.ndim != 1 or A.shape != (K, K):
        raise ValueError("startprob %s / transmat %s do not match" % (pi.shape, A.shape))
    if first is not None and not 0 <= int(first) < K:
        raise ValueError("first state must be in 0..%d, got %r" % (K - 1, first))
    cum_pi = np.cumsum(pi)
    cum_A = np.ascontiguousarray(np.cumsum(A, axis=1))
    # Draw against the (rounded) total, so a row summing to 1 - 1e-16 cannot overflow.
    u = rng.random(int(n_samples))
    out = np.empty(int(n_samples), dtype=np.int64)
    _sample_path_kernel(cum_pi / cum_pi[-1], cum_A / cum_A[:, -1:], u,
                        -1 if first is None else int(first), out)
    return out
