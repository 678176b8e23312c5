"""Numba kernels for latent Dirichlet allocation (functions of arrays, no model objects).

Corpus layout: a CSR document-term matrix given as ``indptr`` (D + 1), ``indices``
(word ids) and ``counts`` (positive int64 counts), or, for the token-level
learners, flat ``doc``/``word`` token arrays.

Bayesian moment matching (thesis ch. 5)
---------------------------------------
After each word ``w`` of document ``d`` the exact posterior is the mixture
``sum_t c_t Dir(alpha_d + e_t) prod_s Dir(beta_s + delta(s, t) e_w)`` with
``c_t ∝ E[theta_dt] E[phi_tw]`` (eqs 5.18, 5.32).  It is projected back onto one
product of Dirichlets by matching every first moment and one second moment per
Dirichlet (the trace ``E[sum_i x_i^2]``, see ``dirichlet.py``; the thesis' pivot
coordinate, eqs 5.44-5.45, is ill-conditioned for a 1000-word topic whose first
word is rare):

* ``theta_d`` (Algorithm 3 when ``phi`` is fixed): the mixture over topics
  ``sum_t c_t Dir(alpha_d + e_t)``, projected by ``dirichlet.update_row`` (the same
  O(K) projection the HMM BMM uses for a transition row).
* ``phi_t`` (Algorithm 6): the two-component mixture
  ``c_t Dir(beta_t + e_w) + (1 - c_t) Dir(beta_t)``.  Its projection rescales every
  entry ``v != w`` by one common factor (eq 5.42) and moves entry ``w`` (eq 5.43), so
  the row is stored lazily as ``beta_t = scale_t * raw_t`` together with its sum
  ``B_t`` and sum of squares ``S2_t``; the precision needs only those, so the update
  is O(1) per topic and O(K) per word, independent of the vocabulary size.

Label switching: all topics start from the prior plus a small seeded asymmetric
perturbation (the slightly asymmetric start of eq 5.9); with an exactly symmetric
start every topic would receive identical updates forever.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from recognizers.modelling.dirichlet import MODE_SUM, update_row

__all__ = [
    "bmm_phi_update",
    "bmm_sweep",
    "bmm_fold_in",
    "renormalise_rows",
    "gibbs_init_counts",
    "gibbs_sweep",
    "fold_in_theta",
    "completion_loglik",
    "vb_estep",
]

_MIN_PREC = 1e-8
_SCALE_LO = 1e-120
_SCALE_HI = 1e120


# ---------------------------------------------------------------------------
# BMM
# ---------------------------------------------------------------------------


@njit(cache=True, inline="always")
def bmm_phi_update(B, S2, bw, c):
    """Project ``c Dir(beta + e_w) + (1 - c) Dir(beta)`` (one topic row, O(1)).

    ``B = sum beta``, ``S2 = sum beta^2``, ``bw = beta_w``.  Returns
    ``(f, new_bw, new_B, new_S2)``: every entry ``v != w`` is multiplied by ``f``.
    The mixture variance is accumulated from non-negative within- and
    between-component terms (law of total variance) so no near-equal raw
    moments are subtracted.
    """
    B1 = B + 1.0
    inv0 = 1.0 / B
    inv1 = 1.0 / B1
    q = 1.0 - c
    g = c * inv1 + q * inv0  # the new mean of v != w is g * beta_v
    mw = g * bw + c * inv1  # the new mean of w
    rest = S2 - bw * bw
    if rest < 0.0:
        rest = 0.0
    summ2 = g * g * rest + mw * mw  # sum_v mean_v^2 of the mixture
    spread = 1.0 - summ2
    within1 = (1.0 - (rest + (bw + 1.0) * (bw + 1.0)) * inv1 * inv1) / (B + 2.0)
    within0 = (1.0 - S2 * inv0 * inv0) / B1
    diff = (rest + (B - bw) * (B - bw)) * (inv0 * inv1) * (inv0 * inv1)
    var = c * within1 + q * within0 + c * q * diff
    s = B + c  # fallback: the mean precision of the components
    if var > 0.0 and spread > 0.0:
        t = spread / var - 1.0
        if np.isfinite(t):
            s = t
    if s > B1:
        s = B1
    if s < _MIN_PREC:
        s = _MIN_PREC
    return s * g, s * mw, s, s * s * summ2


@njit(cache=True)
def renormalise_rows(raw, scale, S2):
    """Fold the lazy scales into the rows and recompute the sums of squares exactly."""
    K, W = raw.shape
    for t in range(K):
        sc = scale[t]
        acc = 0.0
        for v in range(W):
            x = raw[t, v] * sc
            raw[t, v] = x
            acc += x * x
        scale[t] = 1.0
        S2[t] = acc


@njit(cache=True)
def _longest_document(indptr, counts):
    """The most tokens any document of the CSR corpus holds."""
    longest = 0
    for d in range(indptr.shape[0] - 1):
        n = 0
        for j in range(indptr[d], indptr[d + 1]):
            n += counts[j]
        if n > longest:
            longest = n
    return longest


@njit(cache=True)
def _doc_tokens(indices, counts, lo, hi, seed, out):
    """Expand one document's counts into tokens and shuffle them (seeded per document,
    so the order does not depend on how the corpus is cut into batches)."""
    n = 0
    for j in range(lo, hi):
        for _ in range(counts[j]):
            out[n] = indices[j]
            n += 1
    np.random.seed(seed)
    for i in range(n - 1, 0, -1):
        k = np.random.randint(0, i + 1)
        tmp = out[i]
        out[i] = out[k]
        out[k] = tmp
    return n


@njit(cache=True, nogil=True)  # shards run on threads (LDA.fit_parallel)
def bmm_sweep(indptr, indices, counts, raw, scale, B, S2, alpha_prior, doc_seeds, doc_alpha,
              learn_phi):
    """One BMM pass over documents (Algorithm 6; Algorithm 3 when ``learn_phi`` is False).

    ``raw``/``scale``/``B``/``S2``: the lazy topic-word Dirichlets (updated in place).
    ``alpha_prior`` (K,): each document starts from it.  ``doc_seeds`` (D,): token-order
    seeds.  ``doc_alpha`` (D, K) receives each document's final Dirichlet.
    Returns the number of tokens processed.
    """
    D = indptr.shape[0] - 1
    K = raw.shape[0]
    toks = np.empty(_longest_document(indptr, counts), np.int64)
    c = np.empty(K)
    mwork = np.empty(K)
    alpha = np.empty(K)
    total = 0
    for d in range(D):
        n = _doc_tokens(indices, counts, indptr[d], indptr[d + 1], doc_seeds[d], toks)
        A = 0.0
        for t in range(K):
            alpha[t] = alpha_prior[t]
            A += alpha[t]
        for i in range(n):
            w = toks[i]
            z = 0.0
            for t in range(K):
                c[t] = alpha[t] * raw[t, w] * scale[t] / B[t]
                z += c[t]
            for t in range(K):
                c[t] /= z
            update_row(alpha, 1.0, c, MODE_SUM, _MIN_PREC, mwork)
            if learn_phi:
                for t in range(K):
                    if c[t] < 1e-300:
                        continue  # the mixture is the old row: nothing moves
                    bw = raw[t, w] * scale[t]
                    f, nbw, nB, nS2 = bmm_phi_update(B[t], S2[t], bw, c[t])
                    scale[t] *= f
                    B[t] = nB
                    S2[t] = nS2
                    if scale[t] < _SCALE_LO or scale[t] > _SCALE_HI:
                        for v in range(raw.shape[1]):
                            raw[t, v] *= scale[t]
                        scale[t] = 1.0
                    raw[t, w] = nbw / scale[t]
        for t in range(K):
            doc_alpha[d, t] = alpha[t]
        total += n
    return total


@njit(cache=True)
def bmm_fold_in(indptr, indices, counts, topic_word, alpha_prior, doc_seeds, n_passes):
    """Algorithm 3: each document's Dirichlet over topics with ``topic_word`` known.

    Later passes start again from the prior with the tokens in a new order and
    average the posterior means (a cheap variance reduction for short documents).
    """
    D = indptr.shape[0] - 1
    K = topic_word.shape[0]
    toks = np.empty(_longest_document(indptr, counts), np.int64)
    out = np.zeros((D, K))
    c = np.empty(K)
    mwork = np.empty(K)
    alpha = np.empty(K)
    for d in range(D):
        for p in range(n_passes):
            n = _doc_tokens(indices, counts, indptr[d], indptr[d + 1], doc_seeds[d] + p, toks)
            for t in range(K):
                alpha[t] = alpha_prior[t]
            for i in range(n):
                w = toks[i]
                z = 0.0
                for t in range(K):
                    c[t] = alpha[t] * topic_word[t, w]
                    z += c[t]
                if not z > 0.0:
                    continue  # a word no topic can emit carries no information
                for t in range(K):
                    c[t] /= z
                update_row(alpha, 1.0, c, MODE_SUM, _MIN_PREC, mwork)
            A = 0.0
            for t in range(K):
                A += alpha[t]
            for t in range(K):
                out[d, t] += alpha[t] / A / n_passes
    return out


# ---------------------------------------------------------------------------
# collapsed Gibbs
# ---------------------------------------------------------------------------


@njit(cache=True)
def gibbs_init_counts(doc, word, z, ndk, nkw, nk):
    """Add every token's topic to the count tables."""
    for i in range(doc.shape[0]):
        t = z[i]
        ndk[doc[i], t] += 1
        nkw[t, word[i]] += 1
        nk[t] += 1


@njit(cache=True)
def gibbs_sweep(doc, word, z, ndk, nkw, nk, alpha, beta, beta_sum, u):
    """One systematic-scan collapsed Gibbs sweep over all tokens (in place).

    ``p(z_i = t | z_-i, w) ∝ (n_dt^-i + alpha_t) (n_tw^-i + beta_tw) / (n_t^-i + beta_t.)``
    (Griffiths & Steyvers); ``beta`` is (K, W) so a previous fit's counts can act as
    the prior in ``partial_fit``.  ``u``: one uniform per token.
    """
    K = nkw.shape[0]
    p = np.empty(K)
    for i in range(doc.shape[0]):
        d = doc[i]
        w = word[i]
        t = z[i]
        ndk[d, t] -= 1
        nkw[t, w] -= 1
        nk[t] -= 1
        acc = 0.0
        for k in range(K):
            acc += (ndk[d, k] + alpha[k]) * (nkw[k, w] + beta[k, w]) / (nk[k] + beta_sum[k])
            p[k] = acc
        r = u[i] * acc
        t = 0
        while t < K - 1 and p[t] < r:
            t += 1
        z[i] = t
        ndk[d, t] += 1
        nkw[t, w] += 1
        nk[t] += 1


# ---------------------------------------------------------------------------
# document completion (heldout perplexity) and VB
# ---------------------------------------------------------------------------


@njit(cache=True)
def fold_in_theta(indptr, indices, counts, topic_word, alpha, n_iter, tol):
    """Topic proportions of each document with ``topic_word`` fixed.

    Fixed point ``theta_t ∝ alpha_t + sum_w n_w r_wt``, ``r_wt ∝ theta_t phi_tw``
    (EM for the Dirichlet-smoothed mixture weights).  When every word is emitted
    by one topic only, the responsibilities are 0/1 and the fixed point is the
    exact posterior mean ``(alpha_t + n_t) / (alpha_. + N)``.
    """
    D = indptr.shape[0] - 1
    K = topic_word.shape[0]
    theta = np.empty((D, K))
    new = np.empty(K)
    A = 0.0
    for t in range(K):
        A += alpha[t]
    for d in range(D):
        lo = indptr[d]
        hi = indptr[d + 1]
        N = 0.0
        for j in range(lo, hi):
            N += counts[j]
        for t in range(K):
            theta[d, t] = 1.0 / K
        for it in range(n_iter):
            for t in range(K):
                new[t] = alpha[t]
            for j in range(lo, hi):
                w = indices[j]
                z = 0.0
                for t in range(K):
                    z += theta[d, t] * topic_word[t, w]
                if not z > 0.0:
                    continue
                f = counts[j] / z
                for t in range(K):
                    new[t] += f * theta[d, t] * topic_word[t, w]
            tot = 0.0
            for t in range(K):
                tot += new[t]
            change = 0.0
            for t in range(K):
                x = new[t] / tot
                change += abs(x - theta[d, t])
                theta[d, t] = x
            if change < tol:
                break
    return theta


@njit(cache=True)
def completion_loglik(indptr, indices, counts, topic_word, theta):
    """``sum_d sum_w n_dw log sum_t theta_dt phi_tw`` (natural log)."""
    D = indptr.shape[0] - 1
    K = topic_word.shape[0]
    ll = 0.0
    for d in range(D):
        for j in range(indptr[d], indptr[d + 1]):
            w = indices[j]
            p = 0.0
            for t in range(K):
                p += theta[d, t] * topic_word[t, w]
            ll += counts[j] * np.log(p)
    return ll


@njit(cache=True)
def _digamma(x):
    # asymptotic series after shifting x above 6; accurate to ~1e-12 for x > 0
    r = 0.0
    while x < 6.0:
        r -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    return r + np.log(x) - 0.5 / x - f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (
        1.0 / 240 - f * (1.0 / 132)))))


@njit(cache=True)
def vb_estep(indptr, indices, counts, exp_elog_beta, alpha, gamma, max_inner, tol, sstats):
    """Batch-VB E-step (Blei et al. 2003), warm-started from ``gamma`` (D, K) in place.

    ``exp_elog_beta``: (K, W) ``exp E[log phi]``.  Adds the expected counts
    ``n_dw r_dwt`` into ``sstats`` (K, W) using the responsibilities of the final
    ``gamma`` (so the M-step maximises the bound the E-step ended at).
    """
    D = indptr.shape[0] - 1
    K = exp_elog_beta.shape[0]
    e_theta = np.empty(K)
    new = np.empty(K)
    for d in range(D):
        lo = indptr[d]
        hi = indptr[d + 1]
        for it in range(max_inner + 1):
            g0 = 0.0
            for t in range(K):
                g0 += gamma[d, t]
            dg0 = _digamma(g0)
            for t in range(K):
                e_theta[t] = np.exp(_digamma(gamma[d, t]) - dg0)
            if it == max_inner:
                break
            for t in range(K):
                new[t] = alpha[t]
            for j in range(lo, hi):
                w = indices[j]
                z = 1e-100
                for t in range(K):
                    z += e_theta[t] * exp_elog_beta[t, w]
                f = counts[j] / z
                for t in range(K):
                    new[t] += f * e_theta[t] * exp_elog_beta[t, w]
            change = 0.0
            for t in range(K):
                change += abs(new[t] - gamma[d, t])
                gamma[d, t] = new[t]
            if change / K < tol:
                # recompute e_theta for the final gamma before collecting statistics
                g0 = 0.0
                for t in range(K):
                    g0 += gamma[d, t]
                dg0 = _digamma(g0)
                for t in range(K):
                    e_theta[t] = np.exp(_digamma(gamma[d, t]) - dg0)
                break
        for j in range(lo, hi):
            w = indices[j]
            z = 1e-100
            for t in range(K):
                z += e_theta[t] * exp_elog_beta[t, w]
            f = counts[j] / z
            for t in range(K):
                sstats[t, w] += f * e_theta[t] * exp_elog_beta[t, w]
