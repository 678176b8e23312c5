"""Variational hierarchical Dirichlet process topic model (Wang, Paisley & Blei 2011).

    from recognizers.modelling import HDP
    hdp = HDP(n_components=30, doc_truncation=10).fit(X)   # X: (n_docs, n_words) counts
    hdp.n_topics_used_, hdp.topic_word_, hdp.transform(X), hdp.completion_perplexity(X_test)

``fit`` is batch coordinate ascent from a word-cluster start: the document factors are
warm-started from the previous iteration (the kernel also joins and reorders each
document's topics when that raises its bound), and when the bound settles, document
restarts (from the words' best topics), merge, delete, purify, birth and reorder moves
(and splits, if ``moves`` names them; Hughes, Kim & Sudderth 2015; exact merge gains and
the proposals in ``hdp_moves``; which to try and when in ``hdp_search``) are kept only
if the whole-corpus bound rises, so ``bound_`` never decreases.  ``transform`` infers each
document from two starts and keeps the better.  ``partial_fit`` is the online
(stochastic natural-gradient) form: each mini-batch's documents are inferred from
scratch and the corpus factors move by ``rho = (tau0 + t)^-kappa`` towards the
estimate from ``total_samples`` copies of the batch (no moves).

The corpus sticks use ``sticks.py`` (E[log beta], conjugate Beta update, KL);
the topics' E[log phi] ``dirichlet.expected_log``; the document kernel is
``hdp_core.doc_estep`` (numba).
"""
from __future__ import annotations

import contextlib
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.special import digamma, gammaln
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data
from tqdm import tqdm

from recognizers.modelling import dirichlet, sticks
from recognizers.modelling.topics.hdp_core import (changed_documents, doc_bound, doc_estep,
                                                   doc_estep_labelled, doc_local_bound,
                                                   doc_local_bound_from_entropy,
                                                   document_memo, entry_topic_shares)
from recognizers.modelling.topics.hdp_moves import best_topic_start, stick_term
from recognizers.modelling.topics.hdp_search import MoveSearch, corpus_statistics
from recognizers.modelling.topics.perplexity import entry_documents, heldout_perplexity

__all__ = ["HDP"]


class HDP(MoveSearch, TransformerMixin, BaseEstimator):
    """Variational HDP topic model: the data choose the number of topics.

    Wang, Paisley & Blei's variational HDP (corpus sticks, document-level sticks whose
    topics map to corpus topics), fitted by batch coordinate ascent with Hughes, Kim &
    Sudderth's moves: merges, deletes, splits and births, and document restarts, each
    kept only if the whole-corpus bound rises, so ``bound_`` never decreases and the
    count of topics follows the bound rather than the start.  ``partial_fit`` is the
    online form (no moves).

    Parameters
    ----------
    n_components : int, default=30
        Corpus truncation K to start with.  ``fit`` grows it by half (up to
        ``max_components``) whenever the births find no free slot, so a corpus with
        more topics than K still gets them (``components_`` then has more rows).
    max_components : int or None, default=None
        The largest truncation ``fit`` may grow to (None: 4 x ``n_components``; set
        it to ``n_components`` to keep the truncation fixed; :class:`SupervisedHDP`'s
        None keeps it fixed).
    doc_truncation : int, default=10
        Document truncation T: document-level topics per document.
    corpus_concentration : float, default=1.0
        gamma, the corpus sticks' ``Beta(1, gamma)`` prior (with ``learn_priors``, the
        start of its empirical-Bayes value ``corpus_concentration_``).
    doc_concentration : float, default=1.0
        alpha_0, the documents' ``Beta(1, alpha_0)`` sticks (likewise).
    topic_word_prior : float, default=0.01
        eta, the topics' symmetric Dirichlet prior (likewise).
    max_iter : int, default=100
        Batch iterations of ``fit`` (moves included).
    tol : float, default=1e-5
        ``fit`` stops when the bound's relative change is below ``tol`` and a round
        of moves raises it by less than ``tol`` too (relative).
    max_doc_iter : int, default=100
        Each document's coordinate-ascent iterations per sweep.
    doc_tol : float, default=1e-6
        Relative tolerance of a document's bound.
    n_warm : int, default=3
        Iterations without the stick terms for a fresh document (Wang et al.'s
        warm-up, which keeps new documents off the first topics).
    learning_offset, learning_decay : float, default=1.0, 0.6
        tau0 and kappa of the online learning rate ``(tau0 + t)^-kappa``.
    total_samples : float, default=1e4
        The corpus size D the online updates scale a mini-batch to.
    sort_topics : bool, default=True
        Online only: reorder the topics by size after each update (as Wang et al.'s
        code), so the truncated stick keeps the big topics first.
    moves : bool or list/tuple of str, default=True
        Batch only: the kinds of move a round tries, from "restart" (documents),
        "merge", "delete", "purify", "split", "birth" (with the truncation's growth)
        and "sort" (``hdp_search``).  True tries all but "split", which no benchmark
        fit kept (docs/benchmarks.md); False none.
    learn_priors : bool, default=True
        Batch only: empirical Bayes for gamma, alpha_0 and eta.  After every corpus
        update (and inside every move's proposal) each is set to the value that
        maximises the bound, so the bound, not a fixed guess, decides how costly a
        topic is; ``partial_fit`` keeps them at the parameters.  NewsArticles, start
        of 30 topics: perplexity 1018 against 1108 with the fixed 1, 1, 0.01.  From a
        few broad topics (``initial_topics=5`` there) eta can grow towards a smoothed
        mixture of unigrams (2 topics, eta 0.78; docs/benchmarks.md).
    initial_topics : int or None, default=None
        Topics the random start spreads the words over (None: all ``n_components``);
        births fill the others.
    init : {"word-clusters", "random"}, default="word-clusters"
        ``fit``'s start.  "word-clusters": the words are clustered by the documents
        they occur in (k-means of the vocabulary's cosine-normalised count columns
        into ``initial_topics`` or ``n_components`` groups) and each topic starts as
        the corpus frequencies of one group's words, so no topic starts as a blend of
        themes (merges then join the groups of one theme); "random": random topics
        of the corpus' size (Wang et al.'s start).  ``partial_fit`` always starts
        at random.
    verbose : int, default=0
        ``fit`` shows a progress bar over the batch iterations, with the bound, the
        topics holding at least 1 % of the words and the truncation (0: nothing).
    random_state : int, RandomState instance or None, default=None
        Seed of the random start.

    Attributes
    ----------
    components_ : ndarray of shape (K, W)
        lambda, the topics' Dirichlet parameters.
    topic_word_ : ndarray of shape (K, W)
        Their means.
    stick_a_, stick_b_ : ndarray of shape (K - 1,)
        The corpus sticks ``q(beta'_k) = Beta(a_k, b_k)``.
    topic_weights_ : ndarray of shape (K,)
        ``E[beta]``.
    topic_counts_ : ndarray of shape (K,)
        Expected words per topic.
    stick_counts_ : ndarray of shape (K,)
        Expected document-level topics mapped to each corpus topic (the corpus
        sticks' statistics).
    n_topics_used_ : int
        Topics that carry at least 1 % of the corpus' words.
    corpus_concentration_, doc_concentration_, topic_word_prior_ : float
        The priors the model uses: learnt (``learn_priors``) or the parameters.
    bound_ : ndarray
        ``fit``'s evidence lower bound after each iteration and each kept move.
    n_iter_ : int
        Entries of ``bound_`` (batch) or online steps.
    seed_ : int
        The seed the model draws from.
    n_documents_seen_, n_batches_ : int
        Documents fitted; online steps taken.
    n_features_in_ : int
        Vocabulary size W.

    Notes
    -----
    The learned state is the plain arrays and numbers named in ``_learned_attributes``:
    set them on a fresh instance (same parameters) to restore a model, e.g. from npz.
    ``partial_fit`` on a fitted model continues from its state.

    References
    ----------
    Wang, C., Paisley, J. & Blei, D. M., "Online variational inference for the
    hierarchical Dirichlet process", AISTATS 2011.
    Hughes, M. C., Kim, D. I. & Sudderth, E. B., "Reliable and scalable variational
    inference for the hierarchical Dirichlet process", AISTATS 2015.

    Examples
    --------
    >>> from recognizers.modelling.datasets import make_lda_corpus
    >>> X, _, _ = make_lda_corpus(n_topics=3, n_words=30, n_docs=40, doc_length=(50, 80))
    >>> hdp = HDP(10, doc_truncation=5, max_iter=20, random_state=0).fit(X)
    >>> hdp.transform(X).shape
    (40, 10)
    """

    _learned_attributes = ("components_", "stick_a_", "stick_b_", "topic_counts_",
                           "stick_counts_", "seed_", "n_features_in_", "n_topics_used_",
                           "n_documents_seen_", "n_batches_", "n_iter_", "bound_",
                           "corpus_concentration_", "doc_concentration_",
                           "topic_word_prior_")

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "max_components": [Interval(Integral, 1, None, closed="left"), None],
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
        "moves": ["boolean", list, tuple],
        "learn_priors": ["boolean"],
        "initial_topics": [Interval(Integral, 1, None, closed="left"), None],
        "init": [StrOptions({"word-clusters", "random"})],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
    }

    def __init__(self, n_components=30, *, max_components=None, doc_truncation=10,
                 corpus_concentration=1.0, doc_concentration=1.0, topic_word_prior=0.01,
                 max_iter=100, tol=1e-5, max_doc_iter=100, doc_tol=1e-6, n_warm=3,
                 learning_offset=1.0, learning_decay=0.6, total_samples=1e4,
                 sort_topics=True, moves=True, learn_priors=True, initial_topics=None,
                 init="word-clusters", verbose=0, random_state=None):
        self.n_components = n_components
        self.max_components = max_components
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
        self.moves = moves
        self.learn_priors = learn_priors
        self.initial_topics = initial_topics
        self.init = init
        self.verbose = verbose
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        return tags

    def set_learned_state(self, arrays, prefix="") -> None:
        """Restore a fitted model: set every name of ``_learned_attributes`` from
        ``arrays[prefix + name]`` (e.g. an npz file's arrays; 0-d arrays become
        numbers).  Files written before ``learn_priors`` lack the learnt priors: they
        are the parameters', as those models used them.  KeyError if another is missing."""
        for name in self._learned_attributes:
            if prefix + name not in arrays and name in self._PRIORS:
                value = np.asarray(getattr(self, name[:-1]), dtype=np.float64)
            else:
                value = np.asarray(arrays[prefix + name])
            setattr(self, name, value.item() if value.ndim == 0 else value)

    def _validate_counts(self, X, reset, y="no_validation"):
        """X as CSR float64 counts (non-negative; fractional weights are allowed) with
        int64 indices; with ``y``, ``(M, y)``.  ``reset`` records ``n_features_in_``,
        otherwise X must have the fitted vocabulary."""
        if isinstance(y, str) and y == "no_validation":
            X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=reset)
        else:
            X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64,
                                 reset=reset)
        check_non_negative(X, type(self).__name__)
        M = sp.csr_matrix(X, dtype=np.float64, copy=True)
        M.eliminate_zeros()
        M.sum_duplicates()
        M.indptr = M.indptr.astype(np.int64)
        M.indices = M.indices.astype(np.int64)
        return M if isinstance(y, str) and y == "no_validation" else (M, y)

    # ---- state ----------------------------------------------------------------------
    def _init_state(self, M) -> None:
        K, W = self.n_components, M.shape[1]
        rs = self.random_state
        # An int seeds every stream of the fit; None or a RandomState draws the seed.
        self.seed_ = int(rs) if isinstance(rs, (int, np.integer)) else int(
            check_random_state(rs).randint(2**31 - 1))
        rng = np.random.default_rng(self.seed_)
        self.n_features_in_ = W
        self.corpus_concentration_ = float(self.corpus_concentration)
        self.doc_concentration_ = float(self.doc_concentration)
        self.topic_word_prior_ = float(self.topic_word_prior)
        # Random topics of about the corpus' size (Wang et al. / gensim start) in the
        # first initial_topics slots; the others start empty (births fill them).
        k0 = K if self.initial_topics is None else min(int(self.initial_topics), K)
        scale = max(float(M.data.sum()), 1.0) / (k0 * W)
        self.components_ = np.full((K, W), float(self.topic_word_prior_))
        self.components_[:k0] += rng.gamma(1.0, 1.0, (k0, W)) * scale
        self.topic_counts_ = np.zeros(K)
        self.stick_counts_ = np.zeros(K)  # expected doc-level topics per corpus topic
        self.stick_a_ = np.ones(K - 1)
        self.stick_b_ = np.full(K - 1, float(self.corpus_concentration_))
        self.n_documents_seen_ = 0
        self.n_batches_ = 0
        self.bound_ = np.zeros(0)
        self._forget_failed_moves()

    def _elogs(self):
        return (dirichlet.expected_log(self.components_),
                sticks.expected_log_weights(self.stick_a_, self.stick_b_))

    def _estep(self, M, varphi, zeta, fresh, labels=None, forbid=None):
        """Document factors in place; returns the corpus statistics and the documents'
        bounds.  ``labels`` (encoded classes) switch on a subclass' label terms;
        topic ``forbid`` gets no document topic (a delete move's sweeps)."""
        words, word_stats, counts, doc_bound = self._estep_words(M, varphi, zeta, fresh,
                                                                 labels, forbid)
        sstats = np.zeros(self.components_.shape)
        sstats[:, words] = word_stats
        return sstats, counts, doc_bound

    def _estep_words(self, M, varphi, zeta, fresh, labels=None, forbid=None):
        """:meth:`_estep` with the word statistics of M's words only: ``(words,
        word_stats (K, len(words)), counts, doc_bounds)`` (a few documents' sweep
        need not build or add a (K, W) matrix)."""
        lam = self.components_
        K = lam.shape[0]
        # E[log phi] of the words M has only: a move's sweep of a few documents uses a
        # tenth of the vocabulary, and digamma of all (K, W) was a sixth of its time.
        words, columns = np.unique(M.indices, return_inverse=True)
        # (dirichlet.expected_log without its check of all (K, W) values: the fit's own)
        elog_phi = digamma(lam[:, words]) - digamma(lam.sum(1, keepdims=True))
        elog_beta = sticks.expected_log_weights(self.stick_a_, self.stick_b_)
        if forbid is not None:
            elog_beta[forbid] = -1e30  # (finite: the label kernel multiplies it by 0)
        word_stats = np.zeros((K, words.size))
        counts = np.zeros(K)
        doc_bound = np.zeros(M.shape[0])
        args = (M.indptr, columns.astype(np.int64), M.data.astype(np.float64), elog_phi,
                elog_beta, float(self.doc_concentration_), varphi, zeta, fresh,
                int(self.n_warm), int(self.max_doc_iter), float(self.doc_tol), word_stats,
                counts, doc_bound)
        label_args = self._label_args(labels)
        if label_args is None:
            doc_estep(*args)
        else:
            doc_estep_labelled(*args, *label_args)
        return words, word_stats, counts, doc_bound

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
        self._set_corpus_sticks()

    _GROWTH = 4  # max_components=None: this many times n_components

    def _max_truncation(self) -> int:
        """The largest truncation ``fit`` may grow to (``max_components``)."""
        return (self._GROWTH * int(self.n_components) if self.max_components is None
                else int(self.max_components))

    def _add_empty_topics(self, n) -> None:
        """Grow the truncation by ``n`` empty topics at the end (prior-only factors)."""
        W = self.components_.shape[1]
        self.components_ = np.vstack([self.components_,
                                      np.full((n, W), float(self.topic_word_prior_))])
        self.stick_counts_ = np.concatenate([self.stick_counts_, np.zeros(n)])
        self.topic_counts_ = np.concatenate([self.topic_counts_, np.zeros(n)])
        self._set_corpus_sticks()

    def _fresh_local(self, M, rng):
        T = self.doc_truncation
        zeta = rng.dirichlet(np.ones(T), size=M.nnz) if M.nnz else np.zeros((0, T))
        varphi = np.zeros((M.shape[0], T, self.components_.shape[0]))
        return varphi, zeta

    def _set_corpus_sticks(self) -> None:
        """``q(beta')`` from ``stick_counts_`` (no stick at all when K = 1)."""
        if self.stick_counts_.size < 2:
            self.stick_a_, self.stick_b_ = np.ones(0), np.ones(0)
            return
        self.stick_a_, self.stick_b_ = sticks.stick_posterior(self.stick_counts_,
                                                              self.corpus_concentration_)

    def _set_globals(self, sstats, counts, scale=1.0, rho=1.0):
        eta = self.topic_word_prior_
        if rho == 1.0 and scale == 1.0:  # (a batch step: the same, without 4 passes)
            self.components_ = eta + sstats
            self.stick_counts_ = np.array(counts, dtype=np.float64)
        else:
            self.components_ = (1 - rho) * self.components_ + rho * (eta + scale * sstats)
            self.stick_counts_ = (1 - rho) * self.stick_counts_ + rho * scale * counts
        self._set_topic_totals()

    def _set_word_globals(self, words, word_sstats, counts) -> None:
        """:meth:`_set_globals` (``rho = 1``) when the statistics changed in the columns
        ``words`` only (``word_sstats``, (K, len(words))): a proposal's sweeps of a few
        documents.  Writes ``components_`` in place; the proposal's own copy, made by
        the ``_set_globals`` that started it (a snapshot holds its own)."""
        eta = self.topic_word_prior_
        self.components_[:, words] = eta + word_sstats
        self.stick_counts_ = counts
        self._set_topic_totals()

    def _set_topic_totals(self) -> None:
        """The topics' word counts and the corpus sticks, after ``components_`` and
        ``stick_counts_`` changed."""
        eta = self.topic_word_prior_
        self.topic_counts_ = (self.components_.sum(1) - eta * self.components_.shape[1])
        self._set_corpus_sticks()

    def _global_bound(self) -> float:
        eta, lam = self.topic_word_prior_, self.components_
        W = lam.shape[1]
        elog_phi = dirichlet.expected_log(lam)
        # KL(Dir(lam) || Dir(eta)) = log C(lam) - log C(eta) + (lam - eta) E[log phi]
        kl_phi = (np.sum((lam - eta) * elog_phi) + np.sum(dirichlet.log_normaliser(lam))
                  - lam.shape[0] * (gammaln(W * eta) - W * gammaln(eta)))
        kl_sticks = sticks.kl_beta(self.stick_a_, self.stick_b_, 1.0,
                                   self.corpus_concentration_).sum()
        return float(-kl_phi - kl_sticks)

    # ---- fitting --------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Batch coordinate ascent with moves from scratch (monotone bound, ``bound_``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_docs, n_words)
            Word counts (non-negative; fractional weights are allowed).
        y : ignored

        Returns
        -------
        self : HDP
        """
        M = self._validate_counts(X, reset=True)
        self._init_state(M)
        return self._fit_batch(M, None)

    def _word_cluster_start(self, M) -> None:
        """Topics from k-means clusters of the words (the ``init`` parameter)."""
        from sklearn.cluster import KMeans
        from sklearn.exceptions import ConvergenceWarning
        K, W = self.components_.shape
        k0 = min(K if self.initial_topics is None else int(self.initial_topics), W)
        columns = sp.csr_matrix(M.T)
        norms = np.sqrt(np.asarray(columns.multiply(columns).sum(1)).ravel())
        unit = sp.diags(1.0 / np.maximum(norms, 1e-300)) @ columns
        with warnings.catch_warnings():  # (fewer distinct words than groups: fine)
            warnings.simplefilter("ignore", ConvergenceWarning)
            group = KMeans(k0, n_init=1, random_state=self.seed_).fit(unit).labels_
        frequency = np.asarray(M.sum(0)).ravel()
        self.components_ = np.full((K, W), float(self.topic_word_prior_))
        self.components_[group, np.arange(W)] += frequency

    def _fit_batch(self, M, labels):
        kinds = self._move_kinds()  # (checked before any work)
        if self.init == "word-clusters":
            self._word_cluster_start(M)
        rng = np.random.default_rng(self.seed_ + 1)
        varphi, zeta = self._fresh_local(M, rng)
        bounds = []
        last_moves = -self._MOVE_GAP
        self._forget_failed_moves()
        with self._documents_memoized(M), tqdm(total=self.max_iter,
                                               desc=type(self).__name__, unit="it",
                                               disable=not self.verbose, leave=False) as bar:
            for it in range(self.max_iter):
                sstats, counts, doc_bounds = self._estep(M, varphi, zeta, it == 0, labels)
                self._update_corpus(M, varphi, zeta, sstats, counts, labels)
                # The documents' bounds used E[log phi], E[log beta] of the old globals;
                # re-evaluate at the new ones with one more (monotone) sweep next round.
                bounds.append(self._bound(M, varphi, zeta, labels))
                bar.update(1)
                bar.set_postfix_str(f"bound {bounds[-1]:,.0f}, "
                                    f"{sticks.n_used(self.topic_counts_, 0.01)} topics, "
                                    f"K {self.components_.shape[0]}")
                change = (abs(bounds[-1] - bounds[-2]) / abs(bounds[-2]) if len(bounds) > 1
                          else np.inf)
                converged = change <= self.tol
                if kinds and it + 1 < self.max_iter and (
                        converged or (change <= self._MOVE_TOL
                                      and it - last_moves >= self._MOVE_GAP)):
                    last_moves, before = it, bounds[-1]
                    self._moves(M, varphi, zeta, bounds, labels, doc_bounds)
                    grown = (self._grow_move(M, varphi, zeta, bounds, labels, doc_bounds)
                             if "birth" in kinds else None)
                    if grown is not None:
                        varphi = grown
                    # A converged fit goes on only for moves worth an iteration (a kept
                    # move raises the bound; none kept, none raised): on NewsArticles the
                    # last 14 rounds gained under 40 nats each (of 163,000) for 3.6 s
                    # each, half the default fit's time (docs/benchmarks.md).
                    if bounds[-1] - before > self.tol * abs(before):
                        continue
                if converged:
                    break
        self.bound_ = np.asarray(bounds)
        self.n_iter_ = len(bounds)
        self.n_documents_seen_ = M.shape[0]
        self.n_topics_used_ = sticks.n_used(self.topic_counts_, 0.01)
        return self

    def _update_corpus(self, M, varphi, zeta, sstats, counts, labels) -> None:
        """The corpus step given the document factors and their statistics: the priors
        (``learn_priors``), then the corpus factors and the label weights at their
        optimum.  The fit's iterations and every move's proposal take it."""
        if self.learn_priors:
            self._learn_priors(M, zeta, sstats, counts)
        self._set_globals(sstats, counts)
        self._update_label_weights(M, varphi, zeta, labels)

    def _learn_priors(self, M, zeta, sstats, counts) -> None:
        """Empirical Bayes (``learn_priors``): eta, gamma and alpha_0 each set to the value
        that maximises the bound given the document factors (a one-dimensional search
        of its collapsed term: :func:`dirichlet.best_symmetric_prior`,
        :func:`sticks.best_concentration`; none needs the corpus factors, which the
        caller sets after), so the bound never falls.  With the priors fixed at 1, 1
        and 0.01 the bound on NewsArticles preferred 4 topics to 25, where held-out
        perplexity preferred 25 (docs/benchmarks.md)."""
        self.topic_word_prior_ = dirichlet.best_symmetric_prior(sstats,
                                                                self.topic_word_prior_)
        if counts.size >= 2:
            self.corpus_concentration_ = sticks.best_concentration(
                counts, self.corpus_concentration_)
        doc_topic_words = sp.csr_matrix((M.data, np.arange(M.nnz), M.indptr),
                                        shape=(M.shape[0], M.nnz)) @ zeta
        self.doc_concentration_ = sticks.best_concentration(doc_topic_words,
                                                            self.doc_concentration_)

    def _bound(self, M, varphi, zeta, labels=None) -> float:
        """The full bound at the current globals and the given document factors."""
        elog_phi, elog_beta = self._elogs()
        out = np.zeros(M.shape[0])
        doc_bound(M.indptr, M.indices, M.data.astype(np.float64), elog_phi, elog_beta,
            float(self.doc_concentration_), varphi, zeta, out)
        return float(out.sum()) + self._global_bound() + self._label_bound(M, varphi, zeta,
                                                                          labels)

    def _label_bound(self, M, varphi, zeta, labels) -> float:
        """A subclass' label terms of the bound (none for the plain HDP)."""
        return 0.0

    @contextlib.contextmanager
    def _documents_memoized(self, M):
        """Within the block, the corpus ``M``'s statistics and local terms of the bound
        (:meth:`_corpus_statistics`, :meth:`_local_bounds`) are memoized by document:
        each call recomputes the documents whose factors changed since the last
        (:func:`hdp_core.document_memo`).  The memo (copies of the document factors and
        the statistics) goes after the block."""
        self._document_memo = {"corpus": M}
        try:
            yield
        finally:
            self._document_memo = None

    def _memo_for(self, M, varphi, zeta):
        """The document memo brought up to date with ``varphi``, ``zeta``, or None if
        ``M`` is not the memoized corpus.  Where most documents changed (a fit
        iteration's sweep), it is rebuilt from scratch, which costs no more and keeps
        the swapped sums from drifting."""
        memo = getattr(self, "_document_memo", None)
        if memo is None or memo["corpus"] is not M:
            return None
        D, W, K = M.shape[0], M.shape[1], varphi.shape[2]
        changed = np.ones(D, bool)
        rebuild = memo.get("varphi") is None or memo["varphi"].shape != varphi.shape
        if not rebuild:
            changed_documents(M.indptr, varphi, zeta, memo["varphi"], memo["zeta"], changed)
            n_changed = int(changed.sum())
            if n_changed == 0:
                return memo
            rebuild = n_changed > D // 2
        if rebuild:
            changed[:] = True
            memo.update(varphi=np.full_like(varphi, np.nan), zeta=np.full_like(zeta, np.nan),
                        entropy=np.zeros(D), word_topic=np.zeros((W, K)),
                        topic_counts=np.zeros(K), counts=M.data.astype(np.float64))
        document_memo(M.indptr, M.indices, memo["counts"], varphi, zeta, changed,
                      memo["varphi"], memo["zeta"], memo["entropy"], memo["word_topic"],
                      memo["topic_counts"])
        return memo

    def _corpus_statistics(self, M, varphi, zeta) -> tuple[np.ndarray, np.ndarray]:
        """:func:`hdp_search.corpus_statistics`, from the document memo on the corpus a
        batch fit is running on (:meth:`_documents_memoized`)."""
        memo = self._memo_for(M, varphi, zeta)
        if memo is None:
            return corpus_statistics(M, varphi, zeta)
        return np.ascontiguousarray(memo["word_topic"].T), memo["topic_counts"].copy()

    def _local_bounds(self, M, varphi, zeta) -> np.ndarray:
        """Each document's terms of the bound that do not involve the corpus factors
        (:func:`hdp_core.doc_local_bound`), at the current ``doc_concentration_``; on
        the corpus a batch fit is running on, from the document memo's entropy terms
        (:meth:`_documents_memoized`)."""
        out = np.zeros(M.shape[0])
        counts = M.data.astype(np.float64)
        memo = self._memo_for(M, varphi, zeta)
        if memo is None:
            doc_local_bound(M.indptr, counts, float(self.doc_concentration_), varphi, zeta,
                            out)
        else:
            doc_local_bound_from_entropy(M.indptr, counts, float(self.doc_concentration_),
                                         zeta, memo["entropy"], out)
        return out

    def _collapsed_corpus_bound(self, words=None, other_words=None) -> float:
        """The rest of the bound, when the corpus factors are the optimum of their
        statistics ``components_ - eta`` and ``stick_counts_`` (as ``_set_globals``
        leaves them): the words' ``sum S E[log phi]`` and the topics' KL collapse to
        ``sum_k log B(lambda_k) - log B(eta 1)``, and the corpus sticks add
        ``sum_k N_k E[log beta_k]`` and their KL.  With :meth:`_local_bounds` this is
        :meth:`_bound` (plain HDP) without a pass over the documents.

        ``other_words`` (K,), if given, is ``sum_w log Gamma(lambda_kw)`` over the words
        not in ``words``, kept by a caller that changes only the columns ``words`` (a
        proposal's sweeps of a few documents): then only those columns are evaluated."""
        lam, eta = self.components_, float(self.topic_word_prior_)
        if other_words is None:
            log_b = gammaln(lam.sum(1)) - dirichlet.log_gamma_row_sums(lam, eta)
        else:  # (row sums as _set_globals leaves them: topic_counts_ + W eta)
            log_b = (gammaln(self.topic_counts_ + eta * lam.shape[1]) - other_words
                     - dirichlet.log_gamma_row_sums(lam, eta, words))
        K, W = lam.shape  # (log B(eta 1) in closed form: W equal terms)
        topics = K * float(gammaln(W * eta) - W * gammaln(eta)) - float(np.sum(log_b))
        return topics + stick_term(self.stick_counts_, float(self.corpus_concentration_))

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """One online step on the mini-batch X (the first call initialises; no moves).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_docs, n_words)
            Word counts of the mini-batch.
        y : ignored

        Returns
        -------
        self : HDP
        """
        first = not hasattr(self, "components_")
        M = self._validate_counts(X, reset=first)
        if first:
            self._init_state(M)
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
        return self._validate_counts(X, reset=False)

    def local_factors(self, X):
        """Document factors with the corpus fixed (no labels): coordinate ascent from two
        starts, a random one and the words' best topics
        (:func:`hdp_moves.best_topic_start`), and per document the one with the higher
        bound (:meth:`_take_better_start`).

        From the random start alone, sharp topics often leave a document's minority
        theme on its majority theme's topic (supervised planted topics, eta = 0.01:
        accuracy 0.78 against 0.925, docs/benchmarks.md).  Each document's random start
        depends only on its own words (a fixed random row per position in the
        document), so its factors do not depend on the others in X.

        Returns
        -------
        M : CSR matrix, the validated counts.
        varphi : ndarray of shape (n_docs, T, K), document topics' maps to corpus topics.
        zeta : ndarray of shape (nnz, T), each word entry's document-topic assignment.
        """
        M = self._check_X(X)
        varphi, zeta, doc_bounds = self._random_start_factors(M)
        self._take_better_start(M, varphi, zeta, doc_bounds)
        return M, varphi, zeta

    def _random_start_factors(self, M):
        """``(varphi, zeta, doc_bounds)``: coordinate ascent from the random start of
        :meth:`local_factors` (a fixed random row per position in the document)."""
        T, K = self.doc_truncation, self.components_.shape[0]
        position = np.arange(M.nnz) - np.repeat(M.indptr[:-1], np.diff(M.indptr))
        longest = int(position.max()) + 1 if M.nnz else 0
        start = np.random.default_rng(self.seed_ + 3).dirichlet(np.ones(T), size=longest)
        zeta = np.ascontiguousarray(start[position]) if M.nnz else np.zeros((0, T))
        varphi = np.zeros((M.shape[0], T, K))
        doc_bounds = self._estep(M, varphi, zeta, True)[2]
        return varphi, zeta, doc_bounds

    def _take_better_start(self, M, varphi, zeta, doc_bounds, labels=None) -> np.ndarray:
        """Run every document from the words' best topics (:func:`best_topic_start`) to
        convergence and, where that beats ``doc_bounds`` (the bounds of ``varphi``,
        ``zeta`` at the current corpus factors), take it, in place.  Returns the mask
        of the documents that took it."""
        elog_phi, elog_beta = self._elogs()
        varphi2, zeta2 = best_topic_start(M, elog_phi, elog_beta, self.doc_truncation)
        bounds2 = self._estep(M, varphi2, zeta2, False, labels)[2]
        better = bounds2 > doc_bounds + 1e-9 * np.abs(doc_bounds)
        entries = np.repeat(better, np.diff(M.indptr))
        varphi[better] = varphi2[better]
        zeta[entries] = zeta2[entries]
        return better

    def score(self, X, y=None) -> float:
        """The evidence lower bound of X's documents with the corpus fixed (their
        terms of the bound, without the corpus factors' KL); higher is better.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_docs, n_words)
        y : ignored

        Returns
        -------
        float
        """
        M, varphi, zeta = self.local_factors(X)
        elog_phi, elog_beta = self._elogs()
        out = np.zeros(M.shape[0])
        doc_bound(M.indptr, M.indices, M.data, elog_phi, elog_beta,
                  float(self.doc_concentration_), varphi, zeta, out)
        return float(out.sum())

    def transform(self, X) -> np.ndarray:
        """(n_docs, K) expected corpus-topic frequencies of each document's words
        (rows sum to 1; for an empty document, the doc-level topics' prior mix)."""
        M, varphi, zeta = self.local_factors(X)
        return topic_frequencies(M, varphi, zeta)

    def completion_perplexity(self, X) -> float:
        """Held-out perplexity by document completion (:func:`heldout_perplexity`: the
        proportions are folded in on half of each document's words, the other half is
        scored), with the finite-K Dirichlet ``alpha_0 E[beta]`` as the prior.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_docs, n_words)
            Held-out documents' integer word counts.

        Returns
        -------
        float
            Lower is better.
        """
        self._check_X(X)
        prior = np.maximum(self.doc_concentration_ * self.topic_weights_, 1e-10)
        return heldout_perplexity(self.topic_word_, prior, X, random_state=0)


def topic_frequencies(M, varphi, zeta) -> np.ndarray:
    """``thetabar_dk = (1/N_d) sum_n sum_t zeta_nt varphi_tk`` (Zhang et al.'s eq. 5); an empty
    document gets the mean of its doc-level topics' maps."""
    D, _, K = varphi.shape
    rows = entry_documents(M)
    per_entry = np.empty((M.nnz, K))
    entry_topic_shares(M.indptr, varphi, zeta, per_entry)
    per_entry *= M.data[:, None]
    out = np.zeros((D, K))
    np.add.at(out, rows, per_entry)
    n = out.sum(1, keepdims=True)
    empty = n[:, 0] <= 0
    out[empty] = varphi[empty].mean(1)
    n[empty] = 1.0
    return out / n
