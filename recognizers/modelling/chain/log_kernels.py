"""Log-space chain kernels: forward, backward, smoothing, Viterbi, path sampling.

Exact for any weights, time-invariant or time-varying; the scaled and
persistence kernels fall back to these.  Pure Numba functions over arrays.
"""
from __future__ import annotations

import numba
import numpy as np

_NEG_INF = -np.inf
# Below this a shifted-exponential sum may have lost its dominant term to
# underflow (exp(-745) is the smallest double), so it is redone in log space.
_TINY = 1e-280

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
def _softmax_row(row, out):
    """``out = softmax(row)`` and ``row`` minus its logsumexp (the log of out), with one
    exponential per entry: :func:`_normalise_inplace` followed by exponentiating took
    two.  An all -inf row becomes uniform, as there."""
    n = row.shape[0]
    m = _NEG_INF
    for i in range(n):
        if row[i] > m:
            m = row[i]
    if m == _NEG_INF:
        for i in range(n):
            row[i] = -np.log(n)
            out[i] = 1.0 / n
        return
    s = 0.0
    for i in range(n):
        out[i] = np.exp(row[i] - m)
        s += out[i]
    c = m + np.log(s)
    for i in range(n):
        out[i] /= s
        row[i] -= c


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
