"""O(K) chain kernels for persistence-structured transitions, A = (p - q) I + q 11^T.
"""
from __future__ import annotations

import numba
import numpy as np

from recognizers.modelling.chain.log_kernels import (
    _NEG_INF,
    _TINY,
    _absorb_evidence,
    _backtrack,
    _backward_kernel,
    _forward_kernel,
    _lse_col,
    _shift_to_zero,
    _smooth_kernel,
)
from recognizers.modelling.chain.scaled_kernels import _scaled_start, _shifted_lik_row


# --------------------------------------------------------------------------- persistence-structured transitions
#
# The default walker model stays with probability p and otherwise moves uniformly:
# A = (p - q) I + q 11^T.  Then max_i(delta_i + log A_ij) and sum_i alpha_i A_ij
# need only the diagonal term and one statistic over all states (the top two
# maxima, resp. the sum), O(K) per step instead of O(K^2).  The public
# functions pick these kernels automatically when log_A has that structure.


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
