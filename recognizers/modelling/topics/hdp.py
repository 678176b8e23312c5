"""Variational hierarchical Dirichlet process topic model (Wang, Paisley & Blei 2011).

    from recognizers.modelling import HDP
    hdp = HDP(n_components=30, doc_truncation=10).fit(X)   # X: (n_docs, n_words) counts
    hdp.n_topics_used_, hdp.topic_word_, hdp.transform(X), hdp.perplexity(X_test)

``fit`` is batch coordinate ascent: the document factors are warm-started from the
previous iteration, so the bound (``bound_``) never decreases.  ``partial_fit`` is
the online (stochastic natural-gradient) form: each mini-batch's documents are
inferred from scratch and the corpus factors move by ``rho = (tau0 + t)^-kappa``
towards the estimate from ``total_samples`` copies of the batch.

The corpus sticks use ``sticks.py`` (E[log beta], conjugate Beta update, KL);
the topics' E[log phi] ``dirichlet.expected_log``; the document kernel is
``hdp_core.doc_estep`` (numba).
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy.special import gammaln
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from recognizers.modelling import dirichlet, sticks
from recognizers.modelling.topics.hdp_core import doc_bound, doc_estep, doc_estep_labelled
from recognizers.modelling.topics.perplexity import check_counts, check_vocabulary, heldout_perplexity

__all__ = ["HDP"]


class HDP(TransformerMixin, BaseEstimator):
    """Variational HDP topic model: the number of topics is learnt below a truncation.

    Parameters
    ----------
    n_components : corpus truncation K (the most topics the model can use).
    doc_truncation : document truncation T (doc-level topics per document).
    corpus_concentration : gamma, the corpus stick's Beta(1, gamma) prior.
    doc_concentration : alpha_0, the documents' Beta(1, alpha_0) sticks.
    topic_word_prior : eta, the symmetric Dirichlet of the topics.
    max_iter : batch iterations of ``fit``.  tol : ``fit`` stops when the bound's
        relative change is below it.
    max_doc_iter, doc_tol : each document's coordinate-ascent limit and tolerance.
    n_warm : iterations without the stick terms for a fresh document (Wang et al.'s
        warm-up, digest P9).
    learning_offset, learning_decay : tau0 and kappa of the online learning rate.
    total_samples : corpus size D the online updates scale a mini-batch to.
    merge : batch only: when the bound has converged, try merging near-duplicate
        topics and keep a merge only if the bound rises, then continue (monotone).
    n_merge_tries : candidate pairs (most similar first) tried at each convergence.
    sort_topics : online only: reorder the topics by size after each update (as
        Wang et al.'s code), so the truncated stick keeps the big topics first.
    random_state : int, RandomState-like seed or None.

    Attributes
    ----------
    components_ : (K, W) lambda, the topics' Dirichlet parameters.
    topic_word_ : (K, W) their means.  stick_a_, stick_b_ : (K-1,) q(beta').
    topic_weights_ : (K,) E[beta].  topic_counts_ : (K,) expected words per topic.
    n_topics_used_ : topics that carry at least 1 % of the corpus' words.
    bound_ : fit's evidence lower bound after each iteration.  n_iter_ : iterations.
    stick_counts_ : (K,) expected document-level topics mapped to each corpus topic
        (the corpus sticks' statistics).  seed_ : the int seed the model draws from.
    n_documents_seen_, n_batches_ : documents fitted; online steps taken.

    The learned state is the plain arrays and numbers named in ``_learned_attributes``:
    set them on a fresh instance (same parameters) to restore a model, e.g. from npz.
    ``partial_fit`` on a fitted model continues from its state (the first online step
    replaces the random start only on an unfitted model).
    """

    _learned_attributes = ("components_", "stick_a_", "stick_b_", "topic_counts_",
                           "stick_counts_", "seed_", "n_features_in_", "n_topics_used_",
                           "n_documents_seen_", "n_batches_", "n_iter_", "bound_")

    _parameter_constraints = {
        "n_components": [Interval(Integral, 2, None, closed="left")],
        "doc_truncation": [Interval(Integral, 2, None, closed="left")],
        "corpus_concentration": [Interval(Real, 0, None, closed="neither")],
        "doc_concentration": [Interval(Real, 0, None, closed="neither")],
        "topic_word_prior": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_doc_iter": [Interval(Integral, 1, None, closed="left")],
        "doc_tol": [Interval(Real, 0, None, closed="left")],
        "n_warm": [Interval(Integral, 0, None, closed="left")],
        "learning_offset": [Interval(Real, 0, None, closed="left")],
        "learning_decay": [Interval(Real, 0.5, 1.0, closed="right")],
        "total_samples": [Interval(Real, 0, None, closed="neither")],
        "sort_topics": ["boolean"],
        "merge": ["boolean"],
        "n_merge_tries": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, n_components=30, *, doc_truncation=10, corpus_concentration=1.0,
                 doc_concentration=1.0, topic_word_prior=0.01, max_iter=100, tol=1e-5,
                 max_doc_iter=100, doc_tol=1e-6, n_warm=3, learning_offset=1.0,
                 learning_decay=0.6, total_samples=1e4, sort_topics=True,
                 merge=True, n_merge_tries=3, random_state=None):
        self.n_components = n_components
        self.doc_truncation = doc_truncation
        self.corpus_concentration = corpus_concentration
        self.doc_concentration = doc_concentration
        self.topic_word_prior = topic_word_prior
        self.max_iter = max_iter
        self.tol = tol
        self.max_doc_iter = max_doc_iter
        self.doc_tol = doc_tol
        self.n_warm = n_warm
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.total_samples = total_samples
        self.sort_topics = sort_topics
        self.merge = merge
        self.n_merge_tries = n_merge_tries
        self.random_state = random_state

    # ---- state ----------------------------------------------------------------------
    def _init_state(self, M) -> None:
        K, W = self.n_components, M.shape[1]
        rs = self.random_state
        self.seed_ = int(np.random.RandomState(rs).randint(2**31 - 1)) if not isinstance(
            rs, (int, np.integer)) else int(rs)
        rng = np.random.default_rng(self.seed_)
        self.n_features_in_ = W
        # Random topics of about the corpus' size (Wang et al. / gensim start).
        scale = max(float(M.data.sum()), 1.0) / (K * W)
        self.components_ = self.topic_word_prior + rng.gamma(1.0, 1.0, (K, W)) * scale
        self.topic_counts_ = np.zeros(K)
        self.stick_counts_ = np.zeros(K)  # expected doc-level topics per corpus topic
        self.stick_a_ = np.ones(K - 1)
        self.stick_b_ = np.full(K - 1, float(self.corpus_concentration))
        self.n_documents_seen_ = 0
        self.n_batches_ = 0
        self.bound_ = np.zeros(0)

    def _elogs(self):
        return (dirichlet.expected_log(self.components_),
                sticks.expected_log_weights(self.stick_a_, self.stick_b_))

    def _estep(self, M, varphi, zeta, fresh, labels=None):
        """Document factors in place; returns the corpus statistics and the documents'
        bounds.  ``labels`` (encoded classes) switch on a subclass' label terms."""
        K, W = self.components_.shape
        elog_phi, elog_beta = self._elogs()
        sstats = np.zeros((K, W))
        counts = np.zeros(K)
        doc_bound = np.zeros(M.shape[0])
        args = (M.indptr, M.indices, M.data.astype(np.float64), elog_phi, elog_beta,
                float(self.doc_concentration), varphi, zeta, fresh, int(self.n_warm),
                int(self.max_doc_iter), float(self.doc_tol), sstats, counts, doc_bound)
        label_args = self._label_args(labels)
        if label_args is None:
            doc_estep(*args)
        else:
            doc_estep_labelled(*args, *label_args)
        return sstats, counts, doc_bound

    def _label_args(self, labels):
        """``(mu, labels, label_weight)`` for the labelled kernel, or None (plain HDP)."""
        return None

    def _update_label_weights(self, M, varphi, zeta, labels, scale=1.0, rho=1.0):
        """Hook after each corpus update (the supervised HDP's M-step for mu)."""

    def _permute_topics(self, order) -> None:
        """Reorder the corpus topics (online sorting by size)."""
        self.components_ = self.components_[order]
        self.stick_counts_ = self.stick_counts_[order]
        self.topic_counts_ = self.topic_counts_[order]
        self.stick_a_, self.stick_b_ = sticks.stick_posterior(
            self.stick_counts_, self.corpus_concentration)

    def _fresh_local(self, M, rng):
        T = self.doc_truncation
        zeta = rng.dirichlet(np.ones(T), size=M.nnz) if M.nnz else np.zeros((0, T))
        varphi = np.zeros((M.shape[0], T, self.n_components))
        return varphi, zeta

    def _set_globals(self, sstats, counts, scale=1.0, rho=1.0):
        eta, gamma = self.topic_word_prior, self.corpus_concentration
        self.components_ = (1 - rho) * self.components_ + rho * (eta + scale * sstats)
        self.stick_counts_ = (1 - rho) * self.stick_counts_ + rho * scale * counts
        self.topic_counts_ = (self.components_.sum(1) - eta * self.components_.shape[1])
        self.stick_a_, self.stick_b_ = sticks.stick_posterior(self.stick_counts_, gamma)

    def _global_bound(self) -> float:
        eta, lam = self.topic_word_prior, self.components_
        W = lam.shape[1]
        elog_phi = dirichlet.expected_log(lam)
        # KL(Dir(lam) || Dir(eta)) = log C(lam) - log C(eta) + (lam - eta) E[log phi]
        kl_phi = (np.sum((lam - eta) * elog_phi) + np.sum(dirichlet.log_normaliser(lam))
                  - lam.shape[0] * (gammaln(W * eta) - W * gammaln(eta)))
        kl_sticks = sticks.kl_beta(self.stick_a_, self.stick_b_, 1.0,
                                   self.corpus_concentration).sum()
        return float(-kl_phi - kl_sticks)

    # ---- fitting --------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Batch coordinate ascent from scratch (monotone bound, ``bound_``)."""
        M = check_counts(X)
        self._init_state(M)
        return self._fit_batch(M, None)

    def _fit_batch(self, M, labels):
        rng = np.random.default_rng(self.seed_ + 1)
        varphi, zeta = self._fresh_local(M, rng)
        bounds = []
        for it in range(self.max_iter):
            sstats, counts, doc_bound = self._estep(M, varphi, zeta, it == 0, labels)
            self._set_globals(sstats, counts)
            self._update_label_weights(M, varphi, zeta, labels)
            # The documents' bounds used E[log phi], E[log beta] of the old globals;
            # re-evaluate at the new ones with one more (monotone) sweep next round.
            bounds.append(self._bound(M, varphi, zeta, labels))
            if len(bounds) > 1 and abs(bounds[-1] - bounds[-2]) <= self.tol * abs(bounds[-2]):
                if not (self.merge and self._merge_moves(M, varphi, zeta, bounds, labels)):
                    break
        self.bound_ = np.asarray(bounds)
        self.n_iter_ = len(bounds)
        self.n_documents_seen_ = M.shape[0]
        self.n_topics_used_ = sticks.n_used(self.topic_counts_, 0.01)
        return self

    def _merge_moves(self, M, varphi, zeta, bounds, labels=None) -> bool:
        """Merge duplicate topics where that raises the bound (Bryant & Sudderth 2012).

        Coordinate ascent splits a true topic into near-copies it cannot rejoin; a
        merge moves all of topic l's doc-level mass (varphi[..., l]) onto topic k and
        is kept only if the full bound, after three sweeps in the merged state, beats the last one,
        so ``bound_`` stays monotone.  Candidates: used topic pairs by cosine
        similarity of their word distributions.  Returns whether any merge was kept.
        """
        used = np.flatnonzero(self.topic_counts_ >= 0.01 * self.topic_counts_.sum())
        tw = self.topic_word_[used]
        tw = tw / np.linalg.norm(tw, axis=1, keepdims=True)
        sim = tw @ tw.T
        pairs = [(sim[i, j], used[i], used[j]) for i in range(len(used))
                 for j in range(i + 1, len(used)) if sim[i, j] > 0.3]
        merged = False
        for _, k, l in sorted(pairs, reverse=True)[:self.n_merge_tries]:
            saved = (varphi.copy(), zeta.copy(), self.components_, self.stick_counts_,
                     self.topic_counts_, self.stick_a_, self.stick_b_)
            varphi[:, :, k] += varphi[:, :, l]
            varphi[:, :, l] = 0.0
            self._set_globals(*corpus_statistics(M, varphi, zeta))
            # a few sweeps let the documents settle into the merged topic
            for _ in range(3):
                sstats, counts, _ = self._estep(M, varphi, zeta, False, labels)
                self._set_globals(sstats, counts)
            new = self._bound(M, varphi, zeta, labels)
            if new > bounds[-1]:
                bounds.append(new)
                merged = True
                break  # topic indices and similarities changed; converge, then retry
            varphi[...], zeta[...] = saved[0], saved[1]
            (self.components_, self.stick_counts_, self.topic_counts_, self.stick_a_,
             self.stick_b_) = saved[2:]
        return merged

    def _bound(self, M, varphi, zeta, labels=None) -> float:
        """The full bound at the current globals and the given document factors."""
        elog_phi, elog_beta = self._elogs()
        out = np.zeros(M.shape[0])
        doc_bound(M.indptr, M.indices, M.data.astype(np.float64), elog_phi, elog_beta,
            float(self.doc_concentration), varphi, zeta, out)
        return float(out.sum()) + self._global_bound()

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """One online step on the mini-batch X (the first call initialises)."""
        M = check_counts(X)
        first = not hasattr(self, "components_")
        if first:
            self._init_state(M)
        else:
            check_vocabulary(M, self.n_features_in_)
        return self._online_step(M, None, first)

    def _online_step(self, M, labels, first):
        rng = np.random.default_rng(self.seed_ + 7919 * (self.n_batches_ + 1))
        varphi, zeta = self._fresh_local(M, rng)
        sstats, counts, _ = self._estep(M, varphi, zeta, True, labels)
        rho = (self.learning_offset + self.n_batches_ + 1.0) ** (-self.learning_decay)
        if first:
            rho = 1.0  # the first batch replaces the random start
        scale = self.total_samples / M.shape[0]
        self._set_globals(sstats, counts, scale=scale, rho=rho)
        self._update_label_weights(M, varphi, zeta, labels, scale=scale, rho=rho)
        if self.sort_topics:
            self._permute_topics(np.argsort(-self.topic_counts_, kind="stable"))
        self.n_batches_ += 1
        self.n_iter_ = self.n_batches_
        self.n_documents_seen_ += M.shape[0]
        self.n_topics_used_ = sticks.n_used(self.topic_counts_, 0.01)
        return self

    # ---- using the model ------------------------------------------------------------
    @property
    def topic_word_(self) -> np.ndarray:
        check_is_fitted(self, "components_")
        return self.components_ / self.components_.sum(1, keepdims=True)

    @property
    def topic_weights_(self) -> np.ndarray:
        check_is_fitted(self, "components_")
        return sticks.expected_weights(self.stick_a_, self.stick_b_)

    def _check_X(self, X):
        check_is_fitted(self, "components_")
        return check_vocabulary(check_counts(X), self.n_features_in_)

    def local_factors(self, X):
        """Document factors with the corpus fixed: ``(M, varphi (D,T,K), zeta (nnz,T))``."""
        M = self._check_X(X)
        varphi, zeta = self._fresh_local(M, np.random.default_rng(self.seed_ + 3))
        self._estep(M, varphi, zeta, True)
        return M, varphi, zeta

    def transform(self, X) -> np.ndarray:
        """(n_docs, K) expected corpus-topic frequencies of each document's words
        (rows sum to 1; for an empty document, the doc-level topics' prior mix)."""
        M, varphi, zeta = self.local_factors(X)
        return topic_frequencies(M, varphi, zeta)

    def perplexity(self, X) -> float:
        """Held-out perplexity by document completion (``heldout_perplexity``), with the
        finite-K Dirichlet ``alpha_0 E[beta]`` as the documents' prior."""
        self._check_X(X)
        prior = np.maximum(self.doc_concentration * self.topic_weights_, 1e-10)
        return heldout_perplexity(self.topic_word_, prior, X, random_state=0)


def corpus_statistics(M, varphi, zeta) -> tuple[np.ndarray, np.ndarray]:
    """``(sstats (K, W), counts (K,))`` of the corpus update from the document factors:
    ``sum_e n_e sum_t zeta_et varphi_tk [w_e = w]`` and ``sum_d sum_t varphi_dtk``."""
    D, T, K = varphi.shape
    rows = np.repeat(np.arange(D), np.diff(M.indptr))
    per_entry = np.einsum("et,etk->ek", zeta, varphi[rows]) * M.data[:, None]
    sstats = np.zeros((K, M.shape[1]))
    np.add.at(sstats.T, M.indices, per_entry)
    return sstats, varphi.sum((0, 1))


def topic_frequencies(M, varphi, zeta) -> np.ndarray:
    """``thetabar_dk = (1/N_d) sum_n sum_t zeta_nt varphi_tk`` (digest eq. 5); an empty
    document gets the mean of its doc-level topics' maps."""
    D, T, K = varphi.shape
    rows = np.repeat(np.arange(D), np.diff(M.indptr))
    per_entry = np.einsum("et,etk->ek", zeta, varphi[rows]) * M.data[:, None]
    out = np.zeros((D, K))
    np.add.at(out, rows, per_entry)
    n = out.sum(1, keepdims=True)
    empty = n[:, 0] <= 0
    out[empty] = varphi[empty].mean(1)
    n[empty] = 1.0
    return out / n
