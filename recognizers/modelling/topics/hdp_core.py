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

from recognizers.modelling.chain import _normalise_inplace, _softmax_row
from recognizers.modelling.topics.lda_core import _digamma

__all__ = ["doc_bound", "doc_local_bound", "doc_local_bound_from_entropy", "doc_estep",
           "doc_estep_labelled", "label_value_grad", "corpus_statistics", "changed_documents",
           "document_memo", "doc_topic_mass", "entry_topic_shares"]


@njit(cache=True)
def _doc_topic_counts(lo, hi, counts, zeta, Nt):
    """``Nt[t] = sum_e n_e zeta_et`` over the word entries lo:hi of one document: the
    words on each of its document topics."""
    for t in range(Nt.shape[0]):
        s = 0.0
        for e in range(lo, hi):
            s += counts[e] * zeta[e, t]
        Nt[t] = s


@njit(cache=True)
def _mapped_topic(varphi, d, t):
    """The corpus topic document d's topic t maps to most (argmax_k varphi_dtk, the
    first on ties)."""
    m = 0
    for k in range(varphi.shape[2]):
        if varphi[d, t, k] > varphi[d, t, m]:
            m = k
    return m


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
def _gather_words(lo, hi, indices, elog_phi_t):
    """``E[log phi]`` of one document's words, (words, K): its rows are the columns
    the document's updates read at every iteration, gathered once so that each
    update is one matrix product."""
    out = np.empty((hi - lo, elog_phi_t.shape[1]))
    for e in range(lo, hi):
        out[e - lo] = elog_phi_t[indices[e]]
    return out


@njit(cache=True)
def _doc_word_scores(doc_elog_phi, varphi_d, scores):
    """``scores[e, t] = sum_k varphi_tk E[log phi_k,w_e]`` for a document's words: each
    word's expected log probability under each of its topics, the inner sum of zeta's
    update and of the bound, as one matrix product.  ``doc_elog_phi`` (words, K) holds
    the document's rows of E[log phi] (:func:`_gather_words`), ``varphi_d`` (T, K)."""
    n = doc_elog_phi.shape[0]
    if n > 0:
        scores[:n] = doc_elog_phi @ np.ascontiguousarray(varphi_d.T)


@njit(cache=True)
def _varphi_terms(d, elog_beta, varphi):
    """``sum_tk varphi_dtk (E[log beta_k] - log varphi_dtk)``: document d's terms of the
    bound in varphi alone (the same for any order of its document topics)."""
    T, K = varphi.shape[1], varphi.shape[2]
    out = 0.0
    for t in range(T):
        for k in range(K):
            q = varphi[d, t, k]
            if q > 0.0:
                out += q * (elog_beta[k] - math.log(q))
    return out


@njit(cache=True)
def _bound_from_scores(lo, hi, counts, zeta, scores, elog_pi, a, b, alpha, varphi_terms):
    """A document's bound from its words' :func:`_doc_word_scores` and
    :func:`_varphi_terms`; elog_pi, a, b must be the sticks of the current zeta.  A
    change of zeta alone leaves both inputs as they are, so the document-topic joins
    of :func:`_tidy_document` cost O(words x T) each, not O(words x T x K)."""
    T = zeta.shape[1]
    bound = varphi_terms
    for e in range(lo, hi):
        for t in range(T):
            q = zeta[e, t]
            if q > 0.0:
                bound += counts[e] * q * (elog_pi[t] - math.log(q) + scores[e - lo, t])
    for t in range(T - 1):
        bound -= _kl_beta(a[t], b[t], 1.0, alpha)
    return bound


@njit(cache=True)
def _longest(indptr):
    """The most word entries of any document of a CSR ``indptr``."""
    longest = 0
    for d in range(indptr.shape[0] - 1):
        longest = max(longest, indptr[d + 1] - indptr[d])
    return longest


@njit(cache=True)
def doc_bound(indptr, indices, counts, elog_phi, elog_beta, alpha, varphi, zeta, out):
    """Each document's bound (without the global KL terms) at the given factors."""
    D = indptr.shape[0] - 1
    T = varphi.shape[1]
    Nt = np.empty(T)
    a = np.empty(T - 1)
    b = np.empty(T - 1)
    elog_pi = np.empty(T)
    scores = np.empty((_longest(indptr), T))
    elog_phi_t = np.ascontiguousarray(elog_phi.T)
    for d in range(D):
        lo, hi = indptr[d], indptr[d + 1]
        _doc_topic_counts(lo, hi, counts, zeta, Nt)
        _sticks(Nt, alpha, elog_pi, a, b)
        _doc_word_scores(_gather_words(lo, hi, indices, elog_phi_t), varphi[d], scores)
        out[d] = _bound_from_scores(lo, hi, counts, zeta, scores, elog_pi, a, b, alpha,
                                    _varphi_terms(d, elog_beta, varphi))


@njit(cache=True)
def _doc_entropy(lo, hi, d, counts, varphi, zeta, no_beta):
    """Document d's entropy terms of the bound, ``-sum_tk varphi_tk log varphi_tk -
    sum_e n_e sum_t zeta_et log zeta_et``: the part of :func:`doc_local_bound` with
    a logarithm per entry, and the only part that needs no prior.  ``no_beta``: K
    zeros (varphi's part is :func:`_varphi_terms` without ``E[log beta]``)."""
    T = varphi.shape[1]
    out = _varphi_terms(d, no_beta, varphi)
    for e in range(lo, hi):
        for t in range(T):
            q = zeta[e, t]
            if q > 0.0:
                out -= counts[e] * q * math.log(q)
    return out


@njit(cache=True)
def _doc_stick_terms(lo, hi, counts, alpha, zeta, Nt, elog_pi, a, b):
    """Document d's terms of the bound in its sticks: ``sum_t N_t E[log pi_t]`` less
    their KL from Beta(1, alpha)."""
    _doc_topic_counts(lo, hi, counts, zeta, Nt)
    _sticks(Nt, alpha, elog_pi, a, b)
    out = 0.0
    for t in range(Nt.shape[0]):
        out += Nt[t] * elog_pi[t]
    for t in range(Nt.shape[0] - 1):
        out -= _kl_beta(a[t], b[t], 1.0, alpha)
    return out


@njit(cache=True)
def doc_local_bound(indptr, counts, alpha, varphi, zeta, out):
    """Each document's bound without the terms in ``E[log phi]`` and ``E[log beta]``
    (those are linear in the corpus statistics): its sticks' KL and the entropies and
    ``E[log pi]`` terms of zeta and varphi.  :func:`doc_bound` is this plus
    ``sum_e n_e sum_t zeta_et sum_k varphi_tk E[log phi_kw_e] + sum_tk varphi_tk
    E[log beta_k]``."""
    entropy = np.empty(indptr.shape[0] - 1)
    no_beta = np.zeros(varphi.shape[2])
    for d in range(entropy.shape[0]):
        entropy[d] = _doc_entropy(indptr[d], indptr[d + 1], d, counts, varphi, zeta,
                                  no_beta)
    doc_local_bound_from_entropy(indptr, counts, alpha, zeta, entropy, out)


@njit(cache=True)
def _same_factors(lo, hi, d, varphi, zeta, seen_varphi, seen_zeta):
    """Whether document d's factors equal the seen ones (stops at the first change)."""
    T, K = varphi.shape[1], varphi.shape[2]
    for t in range(T):
        for k in range(K):
            if varphi[d, t, k] != seen_varphi[d, t, k]:
                return False
    for e in range(lo, hi):
        for t in range(T):
            if zeta[e, t] != seen_zeta[e, t]:
                return False
    return True


@njit(cache=True)
def changed_documents(indptr, varphi, zeta, seen_varphi, seen_zeta, changed):
    """``changed[d]``: whether document d's factors differ from the seen ones."""
    for d in range(indptr.shape[0] - 1):
        changed[d] = not _same_factors(indptr[d], indptr[d + 1], d, varphi, zeta,
                                       seen_varphi, seen_zeta)


@njit(cache=True)
def document_memo(indptr, indices, counts, varphi, zeta, changed, seen_varphi, seen_zeta,
                  entropy, word_topic, topic_counts):
    """Bring a memo of the corpus' document terms up to date, in place: for each
    document with ``changed[d]``, its entropy terms of the bound (:func:`_doc_entropy`)
    into ``entropy`` (D,), and its contribution to the statistics ``word_topic`` (W, K)
    and ``topic_counts`` (K,) (as :func:`corpus_statistics` sums them) swapped from the
    seen factors' to the current ones; the seen factors become the current.  With
    every document changed and the statistics zeroed, it builds the memo in
    :func:`corpus_statistics`' order.  A move's proposal changes a few documents, then
    asks for the whole corpus' statistics and local terms."""
    T, K = varphi.shape[1], varphi.shape[2]
    mixed = np.empty(K)
    no_beta = np.zeros(K)
    minus = -counts
    for d in range(indptr.shape[0] - 1):
        if not changed[d]:
            continue
        lo, hi = indptr[d], indptr[d + 1]
        if not np.isnan(seen_varphi[d, 0, 0]):  # (NaN: never seen)
            for t in range(T):
                for k in range(K):
                    topic_counts[k] -= seen_varphi[d, t, k]
            _add_word_statistics(lo, hi, d, indices, minus, seen_varphi, seen_zeta, mixed,
                                 word_topic)
        for t in range(T):
            for k in range(K):
                topic_counts[k] += varphi[d, t, k]
        _add_word_statistics(lo, hi, d, indices, counts, varphi, zeta, mixed, word_topic)
        entropy[d] = _doc_entropy(lo, hi, d, counts, varphi, zeta, no_beta)
        seen_varphi[d] = varphi[d]
        seen_zeta[lo:hi] = zeta[lo:hi]


@njit(cache=True)
def doc_local_bound_from_entropy(indptr, counts, alpha, zeta, entropy, out):
    """:func:`doc_local_bound` from each document's entropy terms (:func:`document_memo`):
    only the sticks' terms, which need the prior, are computed."""
    T = zeta.shape[1]
    Nt = np.empty(T)
    a = np.empty(T - 1)
    b = np.empty(T - 1)
    elog_pi = np.empty(T)
    for d in range(indptr.shape[0] - 1):
        lo, hi = indptr[d], indptr[d + 1]
        out[d] = entropy[d] + _doc_stick_terms(lo, hi, counts, alpha, zeta, Nt, elog_pi,
                                               a, b)


@njit(cache=True)
def doc_estep(indptr, indices, counts, elog_phi, elog_beta, alpha, varphi, zeta, fresh,
              n_warm, max_iter, tol, sstats, topic_counts, doc_bound):
    """Coordinate ascent on every document's local factors, in place (plain HDP).

    elog_phi (K, W) ``E[log phi]``; elog_beta (K,) ``E[log beta]`` of the corpus sticks;
    varphi (D, T, K) and zeta (nnz, T) the local factors (read as the start unless
    ``fresh``, when zeta must hold a random start with rows summing to one and the
    first ``n_warm`` iterations leave out the stick terms, Wang et al.'s trick that
    keeps new documents from collapsing onto the first topics).
    Adds ``n_e sum_t zeta_et varphi_tk`` to sstats (K, W) and ``sum_t varphi_tk`` to
    topic_counts (K,); writes each document's bound (without the global KL terms)
    into doc_bound (D,).
    """
    K = elog_phi.shape[0]
    doc_estep_labelled(indptr, indices, counts, elog_phi, elog_beta, alpha, varphi, zeta,
                       fresh, n_warm, max_iter, tol, sstats, topic_counts, doc_bound,
                       np.zeros((0, K)), np.full(indptr.shape[0] - 1, -1, np.int64), 0.0)


@njit(cache=True)
def _label_r(d, varphi, Ex, r):
    # r_tl = sum_k varphi_dtk exp(mu_lk / N)
    T, K = varphi.shape[1], varphi.shape[2]
    C = Ex.shape[1]
    for t in range(T):
        for l in range(C):
            s = 0.0
            for k in range(K):
                s += varphi[d, t, k] * Ex[k, l]
            r[t, l] = s


@njit(cache=True)
def _label_w(logG, w):
    # w_l = softmax_l(log G_l): the label term's weights over classes
    C = logG.shape[0]
    m = -np.inf
    for l in range(C):
        m = max(m, logG[l])
    s = 0.0
    for l in range(C):
        w[l] = math.exp(logG[l] - m)
        s += w[l]
    for l in range(C):
        w[l] /= s


@njit(cache=True)
def _label_g(lo, hi, counts, zeta, r, g, logG, w):
    # g_el = sum_t zeta_et r_tl (= sum_k P_ek exp(mu_lk/N)), log G_l = sum_e n_e log g_el
    T, C = r.shape
    for l in range(C):
        logG[l] = 0.0
    for e in range(lo, hi):
        for l in range(C):
            s = 0.0
            for t in range(T):
                s += zeta[e, t] * r[t, l]
            g[e - lo, l] = s
            logG[l] += counts[e] * math.log(s)
    _label_w(logG, w)


@njit(cache=True)
def _lse(x):
    m = -np.inf
    for v in x:
        m = max(m, v)
    s = 0.0
    for v in x:
        s += math.exp(v - m)
    return m + math.log(s)


@njit(cache=True)
def _mix(x, R, out):
    # out_l = sum_i x_i R_il: a document topic's (or word's) label factors
    C = R.shape[1]
    for l in range(C):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i] * R[i, l]
        out[l] = s


@njit(cache=True)
def _assignment_objective(x, logx, base, lin, entropy_scale, lin_scale, label_weight,
                          logG):
    """The terms of the bound that depend on one assignment row ``x`` (a document
    topic's map varphi_t, or a word's zeta_e), shared by both label-aware updates:

        entropy_scale sum_i x_i (base_i - log x_i)
            + label_weight (lin_scale sum_i x_i lin_i - log sum_l exp(logG_l))

    with ``logG`` the label term's class scores after the change of ``x``."""
    f = 0.0
    linear = 0.0
    for i in range(x.shape[0]):
        f += x[i] * (base[i] - logx[i])
        linear += x[i] * lin[i]
    return entropy_scale * f + label_weight * (lin_scale * linear - _lse(logG))


@njit(cache=True)
def _rho_objective(lo, hi, t, counts, zeta, rho, logrho, base, mu_y, nt_over_n, Ex, g, r,
                   label_weight, rnew, logG):
    # varphi_t = rho: the HDP part sum_k rho_k (base_k - log rho_k) and the label term
    # (9), whose g_el moves by zeta_et (rnew_l - r_tl) for every word of the document
    K = Ex.shape[0]  # (the buffers may be longer than K)
    _mix(rho[:K], Ex, rnew)
    for l in range(rnew.shape[0]):
        logG[l] = 0.0
    for e in range(lo, hi):
        for l in range(rnew.shape[0]):
            logG[l] += counts[e] * math.log(g[e - lo, l] + zeta[e, t] * (rnew[l] - r[t, l]))
    return _assignment_objective(rho[:K], logrho[:K], base[:K], mu_y[:K], 1.0, nt_over_n,
                                 label_weight, logG)


@njit(cache=True)
def _zeta_objective(i, n, zeta_e, logz, base, mr, r, g, logG, label_weight, tmp):
    # zeta_e: n_e sum_t zeta_t (base_t - log zeta_t) and the label term (9) with
    # entry i's g replaced
    T = r.shape[0]  # (the buffers may be longer than T)
    _mix(zeta_e[:T], r, tmp)
    for l in range(tmp.shape[0]):
        tmp[l] = logG[l] + n * (math.log(tmp[l]) - math.log(g[i, l]))
    return _assignment_objective(zeta_e[:T], logz[:T], base[:T], mr[:T], n, n, label_weight,
                                 tmp)


@njit(cache=True)
def _labelled_assignment_step(e, lo, count, assign, row, base, mr, r, g, logG, w,
                              label_weight, lold, cand, prob, best, tmp):
    """One word's label-aware update of its assignment row ``assign[e]`` (zeta in the
    supervised HDP, phi in sLDA), shared by both kernels.

    ``row`` holds the unlabelled log-weights (and ``base`` a copy of them); the label
    gradient is added, then the best of the damped steps 1, 1/2, 1/4, ... towards the
    fixed point is taken, and kept only if the objective does not fall (the undamped
    fixed point of eq. 18 can 2-cycle). Updates ``g[e - lo]``, ``logG`` and ``w``.
    """
    n, C = r.shape
    for t in range(n):
        s = 0.0
        for l in range(C):
            s += w[l] * r[t, l] / g[e - lo, l]
        row[t] += label_weight * (mr[t] - s)
    _normalise_inplace(row[:n])
    for t in range(n):
        lold[t] = math.log(max(assign[e, t], 1e-300))
    f_old = _zeta_objective(e - lo, count, assign[e], lold, base, mr, r, g, logG,
                            label_weight, tmp)
    step = 1.0
    f_best = -np.inf
    for attempt in range(12):
        for t in range(n):
            cand[t] = (1.0 - step) * lold[t] + step * row[t]
        if step < 1.0:  # (row is normalised already)
            _normalise_inplace(cand[:n])
        for t in range(n):
            prob[t] = math.exp(cand[t])
        f_new = _zeta_objective(e - lo, count, prob, cand, base, mr, r, g, logG,
                                label_weight, tmp)
        if f_new <= f_best + 1e-12 * (1.0 + abs(f_best)):
            break
        f_best = f_new
        for t in range(n):
            best[t] = prob[t]
        step *= 0.5
    if f_best < f_old - 1e-10 * (1.0 + abs(f_old)):
        return
    for t in range(n):
        assign[e, t] = best[t]
    for l in range(C):
        s = 0.0
        for t in range(n):
            s += best[t] * r[t, l]
        logG[l] += count * (math.log(s) - math.log(g[e - lo, l]))
        g[e - lo, l] = s
    _label_w(logG, w)


@njit(cache=True)
def _bound_if_better(lo, hi, counts, alpha, zeta, Nt, elog_pi, a, b, bound, scores,
                     varphi_terms):
    # the bound after a change of a document's factors (Nt and the sticks made
    # current), or -inf if it does not clearly beat ``bound`` (the caller undoes it)
    _doc_topic_counts(lo, hi, counts, zeta, Nt)
    _sticks(Nt, alpha, elog_pi, a, b)
    new = _bound_from_scores(lo, hi, counts, zeta, scores, elog_pi, a, b, alpha,
                             varphi_terms)
    if new > bound + 1e-9 * abs(bound):  # (a clear gain: ties do not flip the choice)
        return new
    return -np.inf


@njit(cache=True)
def _lbeta2(a, b):
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


@njit(cache=True)
def _stick_move_gain(Nt, alpha, keep, gone):
    """The change of ``sum_{t<T-1} log B(1 + N_t, alpha + sum_{s>t} N_s) - log B(1,
    alpha)`` when ``gone``'s count moves onto ``keep``: the sticks' terms of a bound at
    their optimum (``N_t E[log pi_t]`` less their KL; ``hdp_moves.stick_term``), of
    which only the sticks from the first of the two topics to the last change."""
    T = Nt.shape[0]
    first, last = min(keep, gone), min(max(keep, gone), T - 2)
    moved = Nt[gone]
    tail = 0.0  # sum_{s > t} N_s
    for s in range(last + 1, T):
        tail += Nt[s]
    change = 0.0
    for t in range(last, first - 1, -1):
        n_new = Nt[t] + (moved if t == keep else 0.0) - (moved if t == gone else 0.0)
        tail_new = tail + (moved if keep > t else 0.0) - (moved if gone > t else 0.0)
        change += _lbeta2(1.0 + n_new, alpha + tail_new) - _lbeta2(1.0 + Nt[t], alpha + tail)
        tail += Nt[t]
    return change


@njit(cache=True)
def _join_word_gain(lo, hi, counts, zeta, scores, keep, gone):
    """The words' part of :func:`_join_gain`: the two columns' entropy and score terms,
    O(words)."""
    gain = 0.0
    for e in range(lo, hi):
        zk = zeta[e, keep]
        zg = zeta[e, gone]
        if zg <= 0.0:
            continue
        joined = zk + zg
        change = zg * (scores[e - lo, keep] - scores[e - lo, gone]) \
            - joined * math.log(joined) + zg * math.log(zg)
        if zk > 0.0:
            change += zk * math.log(zk)
        gain += counts[e] * change
    return gain


@njit(cache=True)
def _join_word_ceiling(lo, hi, counts, zeta, scores, keep, gone):
    """An upper bound on :func:`_join_word_gain` with no logarithms: a join never raises
    the two columns' entropy (``x log x`` is superadditive), so it is at most ``sum_e
    n_e zeta_e,gone max(scores_e,keep - scores_e,gone, 0)``.  Most candidates are a
    document's unused topics with the same scores, which it rules out."""
    gain = 0.0
    for e in range(lo, hi):
        change = zeta[e, gone] * (scores[e - lo, keep] - scores[e - lo, gone])
        if change > 0.0:
            gain += counts[e] * change
    return gain


@njit(cache=True)
def _join_gain(lo, hi, counts, zeta, scores, Nt, keep, gone, alpha):
    """The change of a document's bound (:func:`_bound_from_scores`) if its document
    topic ``gone`` is joined into ``keep``: O(words) for the two columns' entropy and
    score terms, and the sticks between the two topics (:func:`_stick_move_gain`).
    Recomputing the bound costs O(words x T) logarithms and every stick's digammas."""
    return (_join_word_gain(lo, hi, counts, zeta, scores, keep, gone)
            + _stick_move_gain(Nt, alpha, keep, gone))


@njit(cache=True)
def _undo_zeta(lo, hi, counts, alpha, zeta, zeta_copy, Nt, elog_pi, a, b):
    # a refused change: zeta back from its copy, Nt and the sticks with it
    zeta[lo:hi] = zeta_copy[:hi - lo]
    _doc_topic_counts(lo, hi, counts, zeta, Nt)
    _sticks(Nt, alpha, elog_pi, a, b)


@njit(cache=True)
def _tidy_document(lo, hi, d, counts, alpha, varphi, zeta, Nt, elog_pi, a, b, bound,
                   scores, varphi_terms, zeta_copy, varphi_copy, scores_copy):
    """Two jumps coordinate ascent cannot make in one document, each kept only if the
    document's bound rises: join document topics mapped (mostly) to the same corpus
    topic, and order the document topics by their word counts, largest first.

    A document that keeps one theme in two document topics, or a big theme deep in
    the stick order, pays for it on every word of that theme (its ``E[log pi_t]``), and
    the cheaper way out is to leak words into the wrong corpus topics.  ``scores`` are
    the words' :func:`_doc_word_scores` at varphi and ``varphi_terms`` its
    :func:`_varphi_terms`: a join changes neither and an order permutes the scores'
    columns, so no candidate sums over the corpus topics.  Returns the document's
    bound; Nt, the sticks and the scores are left current."""
    T = varphi.shape[1]
    n = hi - lo
    mapped = np.empty(T, np.int64)  # (a join leaves varphi, so these, as they are)
    for t in range(T):
        mapped[t] = _mapped_topic(varphi, d, t)
    for t in range(T):
        for u in range(t + 1, T):
            if Nt[t] <= 0.0 or Nt[u] <= 0.0 or mapped[t] != mapped[u]:
                continue
            keep, gone = (t, u) if Nt[t] >= Nt[u] else (u, t)
            # Most candidates are a document's unused topics, all mapped to the same
            # corpus topic: a log-free ceiling rules most out, then the exact change
            # (_join_gain, its sticks' part computed once) decides; recomputing the
            # bound for each candidate was over half of the E-step.
            least = 1e-9 * abs(bound)
            sticks = _stick_move_gain(Nt, alpha, keep, gone)
            if sticks + _join_word_ceiling(lo, hi, counts, zeta, scores, keep,
                                           gone) <= least:
                continue
            gain = _join_word_gain(lo, hi, counts, zeta, scores, keep, gone) + sticks
            if gain <= least:  # (a clear gain: ties do not flip the choice)
                continue
            for e in range(lo, hi):
                zeta[e, keep] += zeta[e, gone]
                zeta[e, gone] = 0.0
            _doc_topic_counts(lo, hi, counts, zeta, Nt)
            _sticks(Nt, alpha, elog_pi, a, b)
            bound += gain
    order = np.argsort(-Nt, kind="mergesort")
    moved = False
    for t in range(T):
        moved = moved or order[t] != t
    if not moved:
        return bound
    zeta_copy[:n] = zeta[lo:hi]
    scores_copy[:n] = scores[:n]
    varphi_copy[...] = varphi[d]
    for e in range(lo, hi):
        for s in range(T):
            zeta[e, s] = zeta_copy[e - lo, order[s]]
            scores[e - lo, s] = scores_copy[e - lo, order[s]]
    for s in range(T):
        varphi[d, s] = varphi_copy[order[s]]
    new = _bound_if_better(lo, hi, counts, alpha, zeta, Nt, elog_pi, a, b, bound, scores,
                           varphi_terms)
    if new > -np.inf:
        return new
    scores[:n] = scores_copy[:n]
    varphi[d] = varphi_copy
    _undo_zeta(lo, hi, counts, alpha, zeta, zeta_copy, Nt, elog_pi, a, b)
    return bound


@njit(cache=True)
def doc_estep_labelled(indptr, indices, counts, elog_phi, elog_beta, alpha, varphi, zeta,
                       fresh, n_warm, max_iter, tol, sstats, topic_counts, doc_bound, mu,
                       labels, label_weight):
    """:func:`doc_estep` with supervised-HDP label terms (Zhang et al. 2013).

    mu (C, K) the softmax weights; labels (D,) class indices, where a negative label
    (an unlabelled document) or an empty document gets the plain HDP updates; the
    label terms are scaled by ``label_weight``.  With ``g_el = sum_k P_ek exp(mu_lk/N)``,
    ``P_ek = sum_t zeta_et varphi_tk`` and ``w = softmax_l(sum_e n_e log g_el)`` (log
    space) the fixed points are (18) and (11)/(23):

        varphi_tk ∝ exp(HDP terms + mu_yk N_t / N - sum_l w_l sum_e n_e zeta_et e^(mu_lk/N) / g_el)
        zeta_et   ∝ exp(HDP terms + mu_y . varphi_t / N - sum_l w_l r_tl / g_el)

    (``r_tl = sum_k varphi_tk e^(mu_lk/N)``), applied topic by topic and word by word
    with g and w kept current.  doc_bound gets the HDP part of the bound only (the
    label term is an approximation; the documents' convergence test uses it too).
    With mu = 0 the label terms are constant over k and t and the updates are HDP's.
    """
    D = indptr.shape[0] - 1
    K = elog_phi.shape[0]
    T = varphi.shape[1]
    C = mu.shape[0]
    Nt = np.empty(T)
    a = np.empty(T - 1)
    b = np.empty(T - 1)
    elog_pi = np.empty(T)
    row = np.empty(max(T, K))
    longest = _longest(indptr)
    Ex = np.empty((K, C))
    g = np.empty((longest, C))
    r = np.empty((T, C))
    logG = np.empty(C)
    w = np.empty(C)
    q = np.empty(C)
    base = np.empty(max(T, K))
    lold = np.empty(max(T, K))
    cand = np.empty(max(T, K))
    prob = np.empty(max(T, K))
    best = np.empty(max(T, K))
    tmp = np.empty(C)
    mr = np.empty(T)
    rnew = np.empty(C)
    zeta_copy = np.empty((longest, T))
    scores = np.empty((longest, T))
    scores_copy = np.empty((longest, T))
    # E[log phi] transposed once, (W, K): each word's row is contiguous for the
    # updates' inner loops over k (the (K, W) layout strides them by W)
    elog_phi_t = np.ascontiguousarray(elog_phi.T)
    varphi_copy = np.empty((T, K))
    word_topic = np.zeros((sstats.shape[1], K))  # (the statistics, as (W, K))
    mixed = np.empty(K)
    for d in range(D):
        lo = indptr[d]
        hi = indptr[d + 1]
        N = 0.0
        for e in range(lo, hi):
            N += counts[e]
        y = labels[d] if labels.shape[0] > 0 else -1
        sup = C > 0 and y >= 0 and N > 0.0
        # a fresh document has no varphi yet: its first varphi update is HDP's
        ready = sup and not fresh
        if sup:
            for k in range(K):
                for l in range(C):
                    Ex[k, l] = math.exp(mu[l, k] / N)
        if ready:
            _label_r(d, varphi, Ex, r)
            _label_g(lo, hi, counts, zeta, r, g, logG, w)
        _doc_topic_counts(lo, hi, counts, zeta, Nt)
        _sticks(Nt, alpha, elog_pi, a, b)
        doc_elog_phi = _gather_words(lo, hi, indices, elog_phi_t)
        weighted = np.empty((T, hi - lo))
        old = -np.inf
        bound = 0.0
        for it in range(max_iter):
            sticks_on = (not fresh) or it >= n_warm
            # varphi_tk ∝ exp(E[log beta_k] + sum_e n_e zeta_et E[log phi_k,w_e]) (+ labels)
            for e in range(lo, hi):
                for t in range(T):
                    weighted[t, e - lo] = counts[e] * zeta[e, t]
            word_terms = weighted @ doc_elog_phi if hi > lo else np.zeros((T, K))
            # varphi's terms of the bound, summed as the HDP updates set it (without a
            # log per entry); a labelled update takes _varphi_terms after
            labelled_varphi = ready
            new_terms = 0.0
            for t in range(T):
                for k in range(K):
                    row[k] = (elog_beta[k] if sticks_on else 0.0) + word_terms[t, k]
                for k in range(K):
                    base[k] = row[k]
                if not ready:
                    _softmax_row(row[:K], varphi[d, t])
                    for k in range(K):  # (row holds log varphi_tk)
                        if varphi[d, t, k] > 0.0:
                            new_terms += varphi[d, t, k] * (elog_beta[k] - row[k])
                    continue
                # q_l = w_l sum_e n_e zeta_et / g_el, label gradient sum_l q_l Ex[k, l]
                for l in range(C):
                    q[l] = 0.0
                for e in range(lo, hi):
                    c = counts[e] * zeta[e, t]
                    for l in range(C):
                        q[l] += c / g[e - lo, l]
                for k in range(K):
                    s = 0.0
                    for l in range(C):
                        s += w[l] * q[l] * Ex[k, l]
                    row[k] += label_weight * (mu[y, k] * Nt[t] / N - s)
                _normalise_inplace(row[:K])
                # The fixed point of (18) can cycle: step from the old varphi_t towards
                # it in log space, halving the step until L_rho(varphi_t) does not fall.
                for k in range(K):
                    lold[k] = math.log(max(varphi[d, t, k], 1e-300))
                f_old = _rho_objective(lo, hi, t, counts, zeta, varphi[d, t], lold, base,
                                       mu[y], Nt[t] / N, Ex, g, r, label_weight, rnew, tmp)
                # the best of the steps 1, 1/2, 1/4, ... (while halving helps)
                step = 1.0
                f_best = -np.inf
                for attempt in range(12):
                    for k in range(K):
                        cand[k] = (1.0 - step) * lold[k] + step * row[k]
                    if step < 1.0:  # (row is normalised already)
                        _normalise_inplace(cand[:K])
                    for k in range(K):
                        prob[k] = math.exp(cand[k])
                    f_new = _rho_objective(lo, hi, t, counts, zeta, prob, cand, base, mu[y],
                                           Nt[t] / N, Ex, g, r, label_weight, rnew, tmp)
                    if f_new <= f_best + 1e-12 * (1.0 + abs(f_best)):
                        break
                    f_best = f_new
                    for k in range(K):
                        best[k] = prob[k]
                    step *= 0.5
                if f_best < f_old - 1e-10 * (1.0 + abs(f_old)):
                    continue
                for k in range(K):
                    prob[k] = best[k]
                for k in range(K):
                    varphi[d, t, k] = prob[k]
                # keep r, g, log G and w current after the change of varphi_t
                for l in range(C):
                    s = 0.0
                    for k in range(K):
                        s += prob[k] * Ex[k, l]
                    rnew[l] = s
                for l in range(C):
                    logG[l] = 0.0
                for e in range(lo, hi):
                    for l in range(C):
                        g[e - lo, l] += zeta[e, t] * (rnew[l] - r[t, l])
                        logG[l] += counts[e] * math.log(g[e - lo, l])
                for l in range(C):
                    r[t, l] = rnew[l]
                _label_w(logG, w)
            if sup and not ready:
                _label_r(d, varphi, Ex, r)
                _label_g(lo, hi, counts, zeta, r, g, logG, w)
                ready = True
            if sup:
                for t in range(T):
                    s = 0.0
                    for k in range(K):
                        s += mu[y, k] * varphi[d, t, k]
                    mr[t] = s / N
            # zeta_et ∝ exp(E[log pi_t] + sum_k varphi_tk E[log phi_k,w_e]) (+ labels)
            _doc_word_scores(doc_elog_phi, varphi[d], scores)
            for e in range(lo, hi):
                for t in range(T):
                    s = scores[e - lo, t] + (elog_pi[t] if sticks_on else 0.0)
                    row[t] = s
                    base[t] = s
                if not sup:
                    _softmax_row(row[:T], zeta[e])
                    continue
                _labelled_assignment_step(e, lo, counts[e], zeta, row, base, mr, r, g,
                                          logG, w, label_weight, lold, cand, prob, best,
                                          tmp)
            _doc_topic_counts(lo, hi, counts, zeta, Nt)
            _sticks(Nt, alpha, elog_pi, a, b)
            varphi_terms = (_varphi_terms(d, elog_beta, varphi) if labelled_varphi
                            else new_terms)
            bound = _bound_from_scores(lo, hi, counts, zeta, scores, elog_pi, a, b, alpha,
                                       varphi_terms)
            if sticks_on:
                bound = _tidy_document(lo, hi, d, counts, alpha, varphi, zeta, Nt, elog_pi,
                                       a, b, bound, scores, varphi_terms, zeta_copy,
                                       varphi_copy, scores_copy)
                if ready:  # the label term's r and g follow the document topics
                    _label_r(d, varphi, Ex, r)
                    _label_g(lo, hi, counts, zeta, r, g, logG, w)
            if sticks_on and abs(bound - old) <= tol * abs(bound):
                break
            old = bound
        doc_bound[d] = bound
        for t in range(T):
            for k in range(K):
                topic_counts[k] += varphi[d, t, k]
        _add_word_statistics(lo, hi, d, indices, counts, varphi, zeta, mixed, word_topic)
    sstats += word_topic.T


@njit(cache=True)
def label_value_grad(indptr, counts, P, thetabar, labels, mu, grad):
    """The label term (eq. 9 of Zhang et al., ICCV-W 2013) summed over documents, and its gradient (eq. 24) in mu.

    P (nnz, K) ``sum_t zeta_et varphi_tk`` per word entry, thetabar (D, K), labels (D,)
    class indices, mu (C, K); writes d/dmu into grad (C, K) and returns the value
    ``sum_d mu_{y_d} . thetabar_d - log sum_l exp(sum_e n_e log g_el)`` (log space;
    an empty document contributes ``-log C``).
    """
    D = indptr.shape[0] - 1
    C, K = mu.shape
    longest = _longest(indptr)
    Ex = np.empty((K, C))
    g = np.empty((longest, C))
    logG = np.empty(C)
    w = np.empty(C)
    for l in range(C):
        for k in range(K):
            grad[l, k] = 0.0
    value = 0.0
    for d in range(D):
        lo = indptr[d]
        hi = indptr[d + 1]
        N = 0.0
        for e in range(lo, hi):
            N += counts[e]
        if N <= 0.0:
            value -= math.log(C)
            continue
        y = labels[d]
        for k in range(K):
            for l in range(C):
                Ex[k, l] = math.exp(mu[l, k] / N)
        _label_g(lo, hi, counts, P, Ex, g, logG, w)
        logF = _lse(logG)
        s = 0.0
        for k in range(K):
            s += mu[y, k] * thetabar[d, k]
            grad[y, k] += thetabar[d, k]
        value += s - logF
        for e in range(lo, hi):
            for l in range(C):
                c = w[l] * counts[e] / (N * g[e - lo, l])
                for k in range(K):
                    grad[l, k] -= c * P[e, k] * Ex[k, l]
    return value


@njit(cache=True)
def _add_word_statistics(lo, hi, d, indices, counts, varphi, zeta, mixed, word_topic):
    """``word_topic[w_e, k] += n_e sum_t zeta_et varphi_dtk`` for document d's word
    entries lo:hi, into a (W, K) array: each add a contiguous sweep over k (a (K, W)
    array strides it by W; half of the statistics' time).  ``mixed`` (K,) scratch."""
    T, K = varphi.shape[1], varphi.shape[2]
    for e in range(lo, hi):
        mixed[:] = 0.0
        for t in range(T):
            z = zeta[e, t]
            for k in range(K):
                mixed[k] += z * varphi[d, t, k]
        w = indices[e]
        for k in range(K):
            word_topic[w, k] += counts[e] * mixed[k]


@njit(cache=True)
def corpus_statistics(indptr, indices, counts, varphi, zeta, sstats, topic_counts):
    """The corpus update's statistics of the document factors, in place (zeroed first):
    ``sstats[k, w] = sum_e [w_e = w] n_e sum_t zeta_et varphi_dtk`` (K, W) and
    ``topic_counts[k] = sum_dt varphi_dtk`` (K,)."""
    D, T, K = varphi.shape
    topic_counts[...] = 0.0
    word_topic = np.zeros((sstats.shape[1], K))
    mixed = np.empty(K)
    for d in range(D):
        for t in range(T):
            for k in range(K):
                topic_counts[k] += varphi[d, t, k]
        _add_word_statistics(indptr[d], indptr[d + 1], d, indices, counts, varphi, zeta,
                             mixed, word_topic)
    sstats[...] = word_topic.T


@njit(cache=True)
def doc_topic_mass(indptr, counts, varphi, zeta, out):
    """``out[d, k] = sum_t N_dt varphi_dtk`` (D, K): document d's expected words on
    corpus topic k (``N_dt`` its words on document topic t)."""
    D, T, K = varphi.shape
    Nt = np.empty(T)
    for d in range(D):
        _doc_topic_counts(indptr[d], indptr[d + 1], counts, zeta, Nt)
        for k in range(K):
            s = 0.0
            for t in range(T):
                s += Nt[t] * varphi[d, t, k]
            out[d, k] = s


@njit(cache=True)
def entry_topic_shares(indptr, varphi, zeta, out):
    """``out[e, k] = sum_t zeta_et varphi_dtk`` (nnz, K): the share of word entry e
    (of document d) on corpus topic k, without the (nnz, T, K) array that numpy's
    ``einsum("et,etk->ek", zeta, varphi[rows])`` builds (half a gigabyte on a corpus
    of 60,000 entries at K = 110)."""
    D, T, K = varphi.shape
    for d in range(D):
        for e in range(indptr[d], indptr[d + 1]):
            for k in range(K):
                s = 0.0
                for t in range(T):
                    s += zeta[e, t] * varphi[d, t, k]
                out[e, k] = s
