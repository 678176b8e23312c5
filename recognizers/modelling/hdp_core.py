"""Document-level kernel of the variational HDP (Wang, Paisley & Blei 2011).

Functions of arrays only (the model state lives in ``hdp.py``).  Notation of the
paper: a document has T doc-level topics with sticks ``q(pi'_t) = Beta(a_t, b_t)``,
each mapped to a corpus topic by ``q(c_t) = Mult(varphi_t)`` (T, K), and every
distinct word entry ``e`` of the CSR matrix has ``q(z_e) = Mult(zeta_e)`` over T
(the ``n_e`` copies of a word share one distribution).  Coordinate ascent, in the
order varphi, zeta, sticks, increases the document's bound at every step, so a
warm-started batch fit is monotone.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from recognizers.modelling.chain import _normalise_inplace
from recognizers.modelling.lda_core import _digamma

__all__ = ["doc_bound", "doc_estep"]


@njit(cache=True)
def _sticks(Nt, alpha, elog_pi, a, b):
    # a_t = 1 + N_t, b_t = alpha + sum_{s>t} N_s (sticks.stick_posterior), then
    # E[log pi_t] = E[log v_t] + sum_{l<t} E[log(1 - v_l)] with v_T = 1.
    T = Nt.shape[0]
    tail = 0.0
    for t in range(T - 1, 0, -1):
        tail += Nt[t]
        b[t - 1] = alpha + tail
    before = 0.0
    for t in range(T - 1):
        a[t] = 1.0 + Nt[t]
        dab = _digamma(a[t] + b[t])
        elog_pi[t] = _digamma(a[t]) - dab + before
        before += _digamma(b[t]) - dab
    elog_pi[T - 1] = before


@njit(cache=True)
def _kl_beta(a, b, a0, b0):
    dab = _digamma(a + b)
    return (math.lgamma(a0) + math.lgamma(b0) - math.lgamma(a0 + b0)
            - math.lgamma(a) - math.lgamma(b) + math.lgamma(a + b)
            + (a - a0) * (_digamma(a) - dab) + (b - b0) * (_digamma(b) - dab))


@njit(cache=True)
def _one_bound(lo, hi, d, indices, counts, elog_phi, elog_beta, alpha, varphi, zeta,
               elog_pi, a, b):
    # document d's bound; elog_pi, a, b must be the sticks of the current zeta
    K = elog_phi.shape[0]
    T = varphi.shape[1]
    bound = 0.0
    for e in range(lo, hi):
        w = indices[e]
        for t in range(T):
            q = zeta[e, t]
            if q > 0.0:
                s = elog_pi[t] - math.log(q)
                for k in range(K):
                    s += varphi[d, t, k] * elog_phi[k, w]
                bound += counts[e] * q * s
    for t in range(T):
        for k in range(K):
            q = varphi[d, t, k]
            if q > 0.0:
                bound += q * (elog_beta[k] - math.log(q))
    for t in range(T - 1):
        bound -= _kl_beta(a[t], b[t], 1.0, alpha)
    return bound


@njit(cache=True)
def doc_bound(indptr, indices, counts, elog_phi, elog_beta, alpha, varphi, zeta, out):
    """Each document's bound (without the global KL terms) at the given factors."""
    D = indptr.shape[0] - 1
    T = varphi.shape[1]
    Nt = np.empty(T)
    a = np.empty(T - 1)
    b = np.empty(T - 1)
    elog_pi = np.empty(T)
    for d in range(D):
        for t in range(T):
            s = 0.0
            for e in range(indptr[d], indptr[d + 1]):
                s += counts[e] * zeta[e, t]
            Nt[t] = s
        _sticks(Nt, alpha, elog_pi, a, b)
        out[d] = _one_bound(indptr[d], indptr[d + 1], d, indices, counts, elog_phi,
                            elog_beta, alpha, varphi, zeta, elog_pi, a, b)


@njit(cache=True)
def doc_estep(indptr, indices, counts, elog_phi, elog_beta, alpha, varphi, zeta, fresh,
              n_warm, max_iter, tol, sstats, topic_counts, doc_bound):
    """Coordinate ascent on every document's local factors, in place.

    elog_phi (K, W) ``E[log phi]``; elog_beta (K,) ``E[log beta]`` of the corpus sticks;
    varphi (D, T, K) and zeta (nnz, T) the local factors (read as the start unless
    ``fresh``, when zeta must hold a random start with rows summing to one and the
    first ``n_warm`` iterations leave out the stick terms, Wang et al.'s trick that
    keeps new documents from collapsing onto the first topics).
    Adds ``n_e sum_t zeta_et varphi_tk`` to sstats (K, W) and ``sum_t varphi_tk`` to
    topic_counts (K,); writes each document's bound (without the global KL terms)
    into doc_bound (D,).
    """
    D = indptr.shape[0] - 1
    K = elog_phi.shape[0]
    T = varphi.shape[1]
    Nt = np.empty(T)
    a = np.empty(T - 1)
    b = np.empty(T - 1)
    elog_pi = np.empty(T)
    row = np.empty(max(T, K))
    for d in range(D):
        lo = indptr[d]
        hi = indptr[d + 1]
        for t in range(T):
            s = 0.0
            for e in range(lo, hi):
                s += counts[e] * zeta[e, t]
            Nt[t] = s
        _sticks(Nt, alpha, elog_pi, a, b)
        old = -np.inf
        for it in range(max_iter):
            sticks_on = (not fresh) or it >= n_warm
            # varphi_tk ∝ exp(E[log beta_k] + sum_e n_e zeta_et E[log phi_k,w_e])
            for t in range(T):
                for k in range(K):
                    s = elog_beta[k] if sticks_on else 0.0
                    for e in range(lo, hi):
                        s += counts[e] * zeta[e, t] * elog_phi[k, indices[e]]
                    row[k] = s
                _normalise_inplace(row[:K])
                for k in range(K):
                    varphi[d, t, k] = math.exp(row[k])
            # zeta_et ∝ exp(E[log pi_t] + sum_k varphi_tk E[log phi_k,w_e])
            for e in range(lo, hi):
                w = indices[e]
                for t in range(T):
                    s = elog_pi[t] if sticks_on else 0.0
                    for k in range(K):
                        s += varphi[d, t, k] * elog_phi[k, w]
                    row[t] = s
                _normalise_inplace(row[:T])
                for t in range(T):
                    zeta[e, t] = math.exp(row[t])
            for t in range(T):
                s = 0.0
                for e in range(lo, hi):
                    s += counts[e] * zeta[e, t]
                Nt[t] = s
            _sticks(Nt, alpha, elog_pi, a, b)
            bound = _one_bound(lo, hi, d, indices, counts, elog_phi, elog_beta, alpha,
                               varphi, zeta, elog_pi, a, b)
            if sticks_on and abs(bound - old) <= tol * abs(bound):
                break
            old = bound
        doc_bound[d] = bound
        for t in range(T):
            for k in range(K):
                topic_counts[k] += varphi[d, t, k]
        for e in range(lo, hi):
            w = indices[e]
            for k in range(K):
                s = 0.0
                for t in range(T):
                    s += zeta[e, t] * varphi[d, t, k]
                sstats[k, w] += counts[e] * s
