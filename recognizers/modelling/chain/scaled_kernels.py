"""Scaled (probability-space) chain kernels for time-invariant transitions.

Faster than the log-space kernels; a sequence whose normaliser underflows is
returned as NaN and redone by the caller with the log-space kernels.
"""
from __future__ import annotations

import numba
import numpy as np

from recognizers.modelling.chain.log_kernels import (
    _NEG_INF,
    _TINY,
    _backward_kernel,
    _forward_kernel,
    _smooth_kernel,
)

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
