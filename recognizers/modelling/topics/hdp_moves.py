"""The batch variational HDP's moves: exact bound changes of merges and reorders, and
the proposals of deletes, purifies, splits and joined merges, and the document
restart's start from the words' best topics.

Coordinate ascent cannot join two copies of one topic, nor empty a junk topic: every
small step from such a state lowers the bound.  Hughes, Kim & Sudderth's memoized
inference makes those jumps as moves (merge, delete, birth) that are kept only when
the whole-corpus bound rises.  This module holds the arithmetic that makes the merge
test cheap and exact; ``hdp.HDP`` runs the moves.

In Wang, Paisley & Blei's parametrisation (``hdp_core``), with the corpus factors at
their conjugate optimum given the document factors (``lambda_k = eta + S_k``, the
corpus sticks ``a_k = 1 + c_k``, ``b_k = gamma + sum_{m>k} c_m``) the bound is

    L = Z(zeta) + sum_k [log B(lambda_k) - log B(eta)]
        + sum_{k<K} [log B(a_k, b_k) - log B(1, gamma)] - sum_dtk varphi_dtk log varphi_dtk

(``log B`` the log multivariate Beta function; ``Z`` collects the word-assignment and
document-stick terms, which do not depend on which corpus topic a document topic maps
to).  Merging topic ``j`` into ``i`` (``varphi_i += varphi_j``, ``varphi_j = 0``) leaves
``Z`` alone, so its change needs only ``S``, ``c`` and the pair's varphi columns.

References
----------
Hughes, M. C., Kim, D. I. & Sudderth, E. B., "Reliable and scalable variational
inference for the hierarchical Dirichlet process", AISTATS 2015.
Wang, C., Paisley, J. & Blei, D. M., "Online variational inference for the
hierarchical Dirichlet process", AISTATS 2011.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.special import digamma, gammaln, logsumexp

from recognizers.modelling.chain import _softmax_row
from recognizers.modelling.topics.hdp_core import (_doc_topic_counts, _gather_words, _lbeta2,
                                                   _mapped_topic)
from recognizers.modelling.topics.perplexity import entry_documents

__all__ = ["neg_entropy", "stick_term", "MergeScores", "stick_merge_gains", "split_proposal",
           "varphi_without_topic", "move_off_topic_words", "off_topic_words",
           "join_document_topics", "split_document_topics"]


@njit(cache=True)
def stick_term(c, gamma):
    """``sum_{k<K} log B(a_k, b_k) - log B(1, gamma)`` of the corpus sticks' optimum
    given the topic counts ``c`` (K,) (``sticks.stick_posterior``)."""
    K = c.shape[0]
    lb0 = _lbeta2(1.0, gamma)
    tail = c[K - 1]
    total = 0.0
    for k in range(K - 2, -1, -1):
        total += _lbeta2(1.0 + c[k], gamma + tail) - lb0
        tail += c[k]
    return total


@njit(cache=True)
def stick_merge_gains(c, gamma, out):
    """``out[i, j]`` (i < j): change of :func:`stick_term` when topic j's count moves
    onto topic i; ``-inf`` elsewhere.

    Only the sticks from i to j change: i's count and the tails ``b_k = gamma +
    sum_{m>k} c_m`` of i <= k < j, which lose c_j, and j's count (if j has a stick), so
    each pair costs O(1) given the sums over k of the middle sticks' changes, O(K^2)
    in all (a stick_term per pair was O(K^3))."""
    K = c.shape[0]
    out[...] = -np.inf
    tail = np.empty(K)  # sum_{m>k} c_m
    s = 0.0
    for k in range(K - 1, -1, -1):
        tail[k] = s
        s += c[k]
    base = np.empty(K)
    for k in range(K - 1):  # (the last topic has no stick)
        base[k] = _lbeta2(1.0 + c[k], gamma + tail[k])
    for j in range(1, K):
        last = 0.0 if j == K - 1 else _lbeta2(1.0, gamma + tail[j]) - base[j]
        middle = 0.0  # the sticks i < k < j, which lose c_j from their tails
        for i in range(j - 1, -1, -1):
            first = _lbeta2(1.0 + c[i] + c[j], gamma + tail[i] - c[j]) - base[i]
            out[i, j] = first + middle + last
            middle += _lbeta2(1.0 + c[i], gamma + tail[i] - c[j]) - base[i]


@njit(cache=True)
def neg_entropy(VT, out):
    """``out[k] = sum_r V_rk log V_rk`` of varphi with the documents' topics as rows,
    given transposed: VT (K, rows)."""
    K, R = VT.shape
    for k in range(K):
        s = 0.0
        for r in range(R):
            x = VT[k, r]
            if x > 0.0:
                s += x * math.log(x)
        out[k] = s


# Below this share of eta, a topic's statistic enters a merge's change to first order
# (the second-order term is under (share)^2 / 2 < 1e-14 nats a word): most words of
# most pairs, whose lgamma was three quarters of a pair's cost.
_FIRST_ORDER = 1e-7


@njit(cache=True)
def _pair_topic_part(i, j, sstats, totals, eta, log_gamma, psi, eta_terms):
    """The topic part of merging topic j into i (see :class:`MergeScores`), by words:
    ``log B(eta + S_i + S_j) + log B(eta) - log B(eta + S_i) - log B(eta + S_j) = sum_w
    d_w - [G(T_i + T_j) - G(T_i) - G(T_j) + G(0)]`` with ``g(x) = lgamma(eta + x)``,
    ``d_w = g(a + b) - g(a) - g(b) + g(0)`` for the pair's statistics a, b of word w,
    ``G(x) = lgamma(W eta + x)`` and T the topics' totals.  A d_w whose smaller
    statistic s is tiny is ``s (psi(eta + b) - psi(eta))`` to first order (b the
    other)."""
    W = sstats.shape[1]
    lgamma_eta, psi_eta = eta_terms[0], eta_terms[1]
    small_limit = _FIRST_ORDER * eta
    d = 0.0
    for w in range(W):
        a = sstats[i, w]
        b = sstats[j, w]
        if a <= b:
            small, other = a, j
        else:
            small, other = b, i
        if small < small_limit:
            d += small * (psi[other, w] - psi_eta)
        else:
            d += math.lgamma(eta + a + b) - log_gamma[i, w] - log_gamma[j, w] + lgamma_eta
    we = W * eta
    return d - (math.lgamma(we + totals[i] + totals[j]) - math.lgamma(we + totals[i])
                - math.lgamma(we + totals[j]) + math.lgamma(we))


@njit(cache=True)
def _update_topic_parts(sstats, totals, eta, log_gamma, psi, eta_terms, topics, out):
    """Recompute the topic part ``out[i, j]`` (i < j) of every pair that involves one of
    ``topics``."""
    K = sstats.shape[0]
    for a in range(topics.shape[0]):
        m = topics[a]
        for o in range(K):
            if o == m:
                continue
            i, j = min(m, o), max(m, o)
            out[i, j] = _pair_topic_part(i, j, sstats, totals, eta, log_gamma, psi,
                                         eta_terms)


@njit(cache=True)
def _entropy_parts(first, second, VT, negent, out):
    """``out[i, j] = -(v_i + v_j) log(v_i + v_j) + v_i log v_i + v_j log v_j`` summed over
    the documents' topics, for each pair (first[p], second[p]): the entropy part of a
    merge, never positive."""
    for p in range(first.shape[0]):
        i, j = first[p], second[p]
        h = 0.0
        for r in range(VT.shape[1]):
            x = VT[i, r] + VT[j, r]
            if x > 0.0:
                h += x * math.log(x)
        out[i, j] = -(h - negent[i] - negent[j])


class MergeScores:
    """The exact bound change of merging topic j into topic i, for every pair i < j,
    kept current as merges are made.

    Parameters
    ----------
    sstats : (K, W) ndarray, the topics' word statistics ``S = lambda - eta``.
    counts : (K,) ndarray, ``c_k = sum_dt varphi_dtk``.
    V : (R, K) ndarray, the document-topic maps varphi with the documents' topics as rows.
    eta, gamma : the topic-word prior and the corpus concentration.

    The change is a topic part (``log B`` of the merged topic against the two), an
    entropy part (of the pair's varphi columns, never positive) and the corpus sticks'
    part (:func:`stick_merge_gains`).  The entropy part, half of a pair's cost, is
    computed only for the pairs whose other parts could make them the best
    (:meth:`best`): on NewsArticles a few percent of them, a quarter at most.  The
    inputs are copied."""

    _BATCH = 64  # entropy parts computed in best's first step (doubling after)

    def __init__(self, sstats, counts, V, eta, gamma):
        self.sstats = np.array(sstats, dtype=np.float64)
        self.counts = np.array(counts, dtype=np.float64)
        self.VT = np.ascontiguousarray(np.asarray(V, dtype=np.float64).T)
        self.eta, self.gamma = float(eta), float(gamma)
        K = self.sstats.shape[0]
        self.eta_terms = np.array([gammaln(self.eta), digamma(self.eta)])
        self.totals = self.sstats.sum(1)
        self.log_gamma = gammaln(self.eta + self.sstats)
        self.psi = digamma(self.eta + self.sstats)
        self.negent = np.empty(K)
        neg_entropy(self.VT, self.negent)
        self.topic = np.full((K, K), -np.inf)
        self.entropy = np.full((K, K), np.nan)  # (NaN: not computed yet)
        self._sticks = np.empty((K, K))
        self._sticks_current = False
        self._update(np.arange(K))

    def _update(self, topics):
        topics = np.asarray(topics, np.int64)
        _update_topic_parts(self.sstats, self.totals, self.eta, self.log_gamma, self.psi,
                            self.eta_terms, topics, self.topic)
        self.entropy[topics, :] = np.nan
        self.entropy[:, topics] = np.nan
        self._sticks_current = False

    def _stick_gains(self) -> np.ndarray:
        if not self._sticks_current:
            stick_merge_gains(self.counts, self.gamma, self._sticks)
            self._sticks_current = True
        return self._sticks

    def _compute_entropy(self, flat) -> None:
        K = self.topic.shape[0]
        flat = np.asarray(flat, np.int64)
        _entropy_parts(flat // K, flat % K, self.VT, self.negent, self.entropy)

    def _upper(self, allowed=None) -> np.ndarray:
        """The gains where the entropy part is known, their upper bounds (entropy part
        0) where not; ``-inf`` outside ``allowed``."""
        upper = self.topic + self._stick_gains() + np.nan_to_num(self.entropy, nan=0.0)
        if allowed is not None:
            upper[~allowed] = -np.inf
        return upper

    def gains(self) -> np.ndarray:
        """(K, K) bound changes of every merge of j into i (``-inf`` on and below the
        diagonal)."""
        unknown = np.isnan(self.entropy) & np.isfinite(self.topic)
        self._compute_entropy(np.flatnonzero(unknown))
        return self._upper()

    def best(self, allowed=None, above=-np.inf):
        """``(i, j, gain)`` of the merge with the largest bound change among the pairs
        ``allowed`` ((K, K) bool, default all), or None if no such gain is above
        ``above`` (then the search stops as soon as no upper bound is)."""
        batch = self._BATCH
        while True:
            upper = self._upper(allowed).ravel()
            top = int(np.argmax(upper))
            if not (np.isfinite(upper[top]) and upper[top] > above):
                return None
            if not np.isnan(self.entropy.ravel()[top]):
                i, j = divmod(top, self.topic.shape[0])
                return i, j, float(upper[top])
            # the entropy parts of the best few upper bounds not yet exact (among those
            # only: the best may tie with exact ones, as every merge into an empty topic
            # ties at 0)
            unknown = np.where(np.isnan(self.entropy.ravel()), upper, -np.inf)
            few = np.argpartition(unknown, -batch)[-batch:] if upper.size > batch else \
                np.arange(upper.size)
            self._compute_entropy(few[np.isfinite(unknown[few])])
            batch *= 2  # (a search that needs many pairs takes few steps)

    def merge(self, i, j) -> None:
        """Merge topic j into topic i and re-score every pair of either."""
        pair = np.array([i, j])
        self.sstats[i] += self.sstats[j]
        self.sstats[j] = 0.0
        self.counts[i] += self.counts[j]
        self.counts[j] = 0.0
        self.VT[i] += self.VT[j]
        self.VT[j] = 0.0
        self.totals[pair] = self.sstats[pair].sum(1)
        self.log_gamma[pair] = gammaln(self.eta + self.sstats[pair])
        self.psi[pair] = digamma(self.eta + self.sstats[pair])
        pair_negent = np.empty(2)
        neg_entropy(self.VT[pair], pair_negent)
        self.negent[pair] = pair_negent
        self._update(pair)


def _dirichlet_kl(lam, prior):
    """``KL(Dir(lam_r) || Dir(prior))`` summed over the rows of lam (prior a scalar)."""
    n = lam.shape[1]
    elog = digamma(lam) - digamma(lam.sum(1, keepdims=True))
    return float(np.sum((lam - prior) * elog) + np.sum(gammaln(lam.sum(1)))
                 - np.sum(gammaln(lam)) - lam.shape[0] * (gammaln(n * prior)
                                                          - n * gammaln(prior)))


def split_proposal(rows, words, owned, n_docs, n_words, eta, alpha, seed, n_iter=40):
    """Two sub-topics of one topic's words, by a restricted two-topic LDA over them.

    A topic that blends two themes is a local optimum of coordinate ascent: no small
    step separates the themes.  Hughes, Kim & Sudderth's split proposals fit a small
    model to the words the topic owns only; here that model is a two-topic variational
    LDA (topics ``Dir(eta)``, proportions ``Dir(alpha)`` per document) started from
    2-means of the documents' owned word distributions.

    Parameters
    ----------
    rows, words : (E,) int arrays, the document and word of each owned word entry.
    owned : (E,) float array, the entry's words the topic owns (``n_e sum_t zeta_et
        varphi_dtk``).
    n_docs, n_words : sizes of the corpus.
    eta, alpha : the topic-word prior and the proportions' prior.
    seed : int, seed of the 2-means start.

    Returns
    -------
    share_b : (E,) float array, each entry's responsibility of the second sub-topic
        (the smaller one).
    gain : float, the two-topic model's bound minus the one-topic evidence
        ``log B(eta + S) - log B(eta)`` of the same words: the split's approximate
        gain before the document sticks' cost (a ranking score, not the test).
    """
    from sklearn.cluster import KMeans
    S = np.bincount(words, owned, minlength=n_words)
    one = float(np.sum(gammaln(eta + S)) - gammaln(n_words * eta + S.sum())
                - n_words * gammaln(eta) + gammaln(n_words * eta))
    per_doc = sp.csr_matrix((owned, (rows, words)), shape=(n_docs, n_words))
    mass = np.asarray(per_doc.sum(1)).ravel()
    docs = np.flatnonzero(mass > 1.0)
    if docs.size < 2 or owned.sum() <= 0:
        return np.zeros_like(owned), -np.inf
    P = sp.csr_matrix(per_doc[docs].multiply(1.0 / mass[docs][:, None]))
    centres = KMeans(2, n_init=1, random_state=seed).fit(P).cluster_centers_
    lam = eta + np.maximum(centres, 0.0) * (S.sum() / 2.0)
    gam = np.full((n_docs, 2), alpha)
    for _ in range(n_iter):
        elog_phi = digamma(lam) - digamma(lam.sum(1, keepdims=True))
        elog_theta = digamma(gam) - digamma(gam.sum(1, keepdims=True))
        logr = elog_theta[rows] + elog_phi[:, words].T
        r = np.exp(logr - np.logaddexp(logr[:, 0], logr[:, 1])[:, None])
        gam = alpha + np.stack([np.bincount(rows, owned * r[:, j], minlength=n_docs)
                                for j in range(2)], 1)
        lam = eta + np.stack([np.bincount(words, owned * r[:, j], minlength=n_words)
                              for j in range(2)])
    elog_phi = digamma(lam) - digamma(lam.sum(1, keepdims=True))
    elog_theta = digamma(gam) - digamma(gam.sum(1, keepdims=True))
    logr = elog_theta[rows] + elog_phi[:, words].T
    r = np.exp(logr - np.logaddexp(logr[:, 0], logr[:, 1])[:, None])
    safe = np.maximum(r, 1e-300)
    two = (float(np.sum(owned[:, None] * r * (logr - np.log(safe))))
           - _dirichlet_kl(gam, alpha) - _dirichlet_kl(lam, eta))
    small = int(np.argmin(lam.sum(1)))
    return r[:, small].copy(), two - one


@njit(cache=True)
def _reassign_words(lo, hi, d, indices, counts, elog_phi, zeta, varphi, j, targets,
                    keep_better, row, Ndk, Nt, holder):
    """Document d's words on its document topics mapped mostly to corpus topic ``j``
    move word by word to the best corpus topic ``k`` among ``targets`` (highest
    ``E[log phi_k,w] + log(0.5 + N_dk)``, ``N_dk`` the document's words on ``k``
    outside ``j``): to the document topic holding ``k`` if there is one, else to a
    free document topic, which is mapped to ``k``.  With ``keep_better`` a word stays
    where ``j`` explains it at least as well (``E[log phi_j,w] >= E[log phi_k,w]``).
    Leaves Nt (T,) the document topics' words; returns whether any document topic
    is mapped mostly to ``j``."""
    T, K = varphi.shape[1], varphi.shape[2]
    for k in range(K):
        Ndk[k] = 0.0
        holder[k] = -1
    on_j = False
    _doc_topic_counts(lo, hi, counts, zeta, Nt)
    for t in range(T):
        m = _mapped_topic(varphi, d, t)
        if m == j and varphi[d, t, j] > 0.5:
            on_j = True
            continue
        for k in range(K):
            Ndk[k] += Nt[t] * varphi[d, t, k]
        if Nt[t] > 0.0 and (holder[m] < 0 or Nt[t] > Nt[holder[m]]):
            holder[m] = t
    if not on_j:
        return False
    for t in range(T):
        if _mapped_topic(varphi, d, t) != j or varphi[d, t, j] <= 0.5 or Nt[t] <= 0.0:
            continue
        for e in range(lo, hi):
            if zeta[e, t] <= 0.0:
                continue
            best = -1
            for k in range(K):
                if k == j or not targets[k]:
                    continue
                row[k] = elog_phi[k, indices[e]] + math.log(0.5 + Ndk[k])
                if best < 0 or row[k] > row[best]:
                    best = k
            if best < 0 or (keep_better
                            and elog_phi[j, indices[e]] >= elog_phi[best, indices[e]]):
                continue
            u = holder[best]
            if u < 0:  # a free document topic (no words) takes topic best
                for v in range(T):
                    if Nt[v] <= 0.0 and v != t:
                        u = v
                        break
                if u < 0:
                    continue  # no free document topic: the word stays
                holder[best] = u
                for k in range(K):
                    varphi[d, u, k] = 0.0
                varphi[d, u, best] = 1.0
            moved = zeta[e, t]
            zeta[e, u] += moved
            zeta[e, t] = 0.0
            Nt[u] += counts[e] * moved
            Nt[t] -= counts[e] * moved
    return True


def off_topic_words(owned, scores, used) -> np.ndarray:
    """The purify move's ranking: for each topic k among ``used`` (K,) bool, the words
    it holds (``owned``, (nnz, K) expected counts) whose entries another used topic
    scores higher (``scores``, (nnz, K): ``E[log phi_k,w]``); 0 for the others.

    Another used topic scores an entry higher than k exactly when the best used topic
    does (the best topic itself has none above it), so one maximum serves every k."""
    best = np.where(used, scores, -np.inf).max(1)
    off = np.zeros(scores.shape[1])
    for k in np.flatnonzero(used):
        off[k] = owned[best > scores[:, k], k].sum()
    return off


@njit(cache=True)
def move_off_topic_words(indptr, indices, counts, elog_phi, zeta, varphi, j, targets):
    """Purify move's proposal, in place: the words on document topics mapped mostly to
    corpus topic ``j`` that another topic among ``targets`` (K,) bool explains better
    (``E[log phi_k,w] > E[log phi_j,w]``) move to the document's topic of that theme
    (:func:`_reassign_words`).  A topic contaminated by a little of every theme is a
    fixed point of coordinate ascent: in each document, opening a document topic for
    a few off-theme words costs more stick than the contaminated topic charges them;
    only all documents moving at once, and the topic then losing the contamination,
    pays.  Returns the number of document topics mapped to ``j`` (0: no proposal)."""
    D, T, K = varphi.shape
    row = np.empty(K)
    Ndk = np.empty(K)
    Nt = np.empty(T)
    holder = np.empty(K, np.int64)
    touched = 0
    for d in range(D):
        if _reassign_words(indptr[d], indptr[d + 1], d, indices, counts, elog_phi, zeta,
                           varphi, j, targets, True, row, Ndk, Nt, holder):
            touched += 1
    return touched


@njit(cache=True)
def varphi_without_topic(indptr, indices, counts, elog_phi, elog_beta, zeta, varphi, j):
    """Delete move's proposal, in place: corpus topic ``j`` loses every document topic.

    First, in each document, the words of each document topic mapped mostly to ``j``
    move word by word to the best other corpus topic (:func:`_reassign_words`), so a
    blended topic's words split across the document's themes, which no single
    document topic could do.
    Then every document topic still mapped to ``j`` with positive probability gets
    the optimal map over the other topics,
    ``varphi_tk ∝ exp(E[log beta_k] + sum_e n_e zeta_et E[log phi_k,w_e])``, k != j, and
    ``varphi_tj = 0``.  Rows with ``varphi_tj = 0`` are left as they are (so deleting an
    empty topic changes nothing).  Returns the number of rows changed."""
    D, T, K = varphi.shape
    row = np.empty(K)
    Ndk = np.empty(K)
    Nt = np.empty(T)
    holder = np.empty(K, np.int64)
    targets = np.ones(K, np.bool_)
    elog_phi_t = np.ascontiguousarray(elog_phi.T)  # (W, K): a word's row contiguous
    changed = 0
    for d in range(D):
        lo, hi = indptr[d], indptr[d + 1]
        _reassign_words(lo, hi, d, indices, counts, elog_phi, zeta, varphi, j, targets,
                        False, row, Ndk, Nt, holder)
        on_j = False
        for t in range(T):
            on_j = on_j or varphi[d, t, j] > 0.0
        if not on_j:
            continue
        # sum_e n_e zeta_et E[log phi_k,w_e] for every t and k, as one matrix product
        weighted = np.empty((T, hi - lo))
        for e in range(lo, hi):
            for t in range(T):
                weighted[t, e - lo] = counts[e] * zeta[e, t]
        word_terms = (weighted @ _gather_words(lo, hi, indices, elog_phi_t) if hi > lo
                      else np.zeros((T, K)))
        for t in range(T):
            if varphi[d, t, j] <= 0.0:
                continue
            changed += 1
            for k in range(K):
                row[k] = elog_beta[k] + word_terms[t, k]
            row[j] = -np.inf
            _softmax_row(row, varphi[d, t])
            varphi[d, t, j] = 0.0
    return changed


@njit(cache=True)
def join_document_topics(indptr, counts, varphi, zeta, k):
    """After corpus topics merged into ``k``: in each document, the document topics
    mapped mostly to ``k`` hand their words (zeta) to the biggest of them, in place.
    Without it, a document that kept two halves of a topic in two document topics
    pays for both sticks and the merge looks worse than it is.  Returns the number
    of document topics emptied."""
    D, T, K = varphi.shape
    joined = 0
    Nt = np.empty(T)
    for d in range(D):
        lo, hi = indptr[d], indptr[d + 1]
        best = -1
        _doc_topic_counts(lo, hi, counts, zeta, Nt)
        for t in range(T):
            if _mapped_topic(varphi, d, t) != k:
                Nt[t] = -1.0
            elif best < 0 or Nt[t] > Nt[best]:
                best = t
        if best < 0:
            continue
        for t in range(T):
            if t == best or Nt[t] < 0.0:
                continue
            joined += 1
            for e in range(lo, hi):
                zeta[e, best] += zeta[e, t]
                zeta[e, t] = 0.0
    return joined


@njit(cache=True)
def split_document_topics(indptr, counts, varphi, zeta, k, k2, share):
    """Split move's proposal, in place: corpus topic ``k`` splits into ``k`` and ``k2``.

    In each document, every document topic ``t`` mapped mostly to ``k`` hands the
    ``share[e]`` part of each word entry's assignment to the document's least used
    other document topic ``u`` if that is nearly empty (under 1 % of the words),
    which takes ``t``'s map with the mass on ``k`` moved to ``k2``; ``share`` (nnz,)
    is each entry's responsibility of the new sub-topic.  Returns the number of
    document topics split."""
    D, T, K = varphi.shape
    Nt = np.empty(T)
    taken = np.zeros(T, np.bool_)
    split = 0
    for d in range(D):
        lo, hi = indptr[d], indptr[d + 1]
        _doc_topic_counts(lo, hi, counts, zeta, Nt)
        for t in range(T):
            taken[t] = _mapped_topic(varphi, d, t) == k  # (topics on k are split, not reused)
        for t in range(T):
            if not taken[t] or Nt[t] <= 0.0:
                continue
            u = -1
            for v in range(T):
                if not taken[v] and (u < 0 or Nt[v] < Nt[u]):
                    u = v
            total = 0.0
            for v in range(T):
                total += Nt[v]
            if u < 0 or Nt[u] > 0.01 * total:
                break  # every document topic is in use
            taken[u] = True
            split += 1
            for e in range(lo, hi):
                moved = zeta[e, t] * share[e]
                zeta[e, t] -= moved
                zeta[e, u] += moved
            for m in range(K):
                varphi[d, u, m] = varphi[d, t, m]
            varphi[d, u, k2] += varphi[d, u, k]
            varphi[d, u, k] = 0.0
    return split


def best_topic_start(M, elog_phi, elog_beta, doc_truncation):
    """A document start from the words' best corpus topics: ``(varphi (D, T, K), zeta
    (nnz, T))``.

    Each word entry's responsibilities ``r_ek ∝ exp(E[log beta_k] + E[log phi_k,w_e])``
    are summed over the document (``n_e r_ek``); its T biggest corpus topics, largest
    first, become its document topics (``varphi_t`` one-hot on the t-th), and each
    word is shared among them in proportion to ``r_ek``.  A random start (each
    document topic a random blend of the document's words) is mapped to the corpus
    topic of the blend's majority theme; with sharp topics every document topic can
    end up on the same theme and the minority theme's words have nowhere to go, a
    fixed point of coordinate ascent.  Depends on the document's own words only.
    """
    D, T, K = M.shape[0], int(doc_truncation), elog_phi.shape[0]
    rows = entry_documents(M)
    r = elog_beta[None, :] + elog_phi[:, M.indices].T              # (nnz, K)
    r = np.exp(r - r.max(1, keepdims=True))
    r /= r.sum(1, keepdims=True)
    mass = np.zeros((D, K))
    np.add.at(mass, rows, M.data[:, None] * r)
    top = np.argsort(-mass, axis=1, kind="stable")[:, :T]           # (D, min(T, K))
    varphi = np.zeros((D, T, K))
    t = np.arange(top.shape[1])
    varphi[np.arange(D)[:, None], t[None, :], top] = 1.0
    if T > K:  # (more document topics than corpus topics: the rest start on the prior)
        varphi[:, K:] = np.exp(elog_beta - logsumexp(elog_beta))
    zeta = np.zeros((M.nnz, T))
    zeta[:, :top.shape[1]] = np.take_along_axis(r, top[rows], axis=1) + 1e-12
    zeta /= zeta.sum(1, keepdims=True)
    return varphi, zeta
