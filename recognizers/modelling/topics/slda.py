"""Multi-class supervised LDA with a fixed number of topics (Wang, Blei & Fei-Fei 2009),
the baseline of the supervised HDP of Zhang et al. (2013).

    from recognizers.modelling import SupervisedLDA
    clf = SupervisedLDA(n_components=10).fit(X, y)        # X: (n_docs, n_words) counts
    clf.predict(X_test), clf.predict_proba(X_test), clf.coef_, clf.topic_word_

Variational EM: ``q(theta_d) = Dir(gamma_d)``, ``q(z_n) = Mult(phi_n)`` (the ``n_e`` copies of
a word share one phi), topics ``q(beta_k) = Dir(lambda_k)``, and a label per document
``p(y | zbar) = softmax_y(eta_y . zbar)``.  The expected log-softmax is bounded as in
Wang et al. (and Zhang et al.'s eq. 9, of which sLDA is the case "document topic =
corpus topic"): ``eta_y . E[zbar] - log sum_l prod_n sum_k phi_nk exp(eta_lk / N)``, which
is a true bound here (the z_n are independent).  The phi step is the fixed point
``phi_nk ∝ exp(E[log theta_k] + E[log beta_k,w] + eta_yk / N - sum_l w_l e^(eta_lk/N) / g_nl)``
with the safeguarded step and the label term of ``hdp_core`` (log space), the eta step
is L-BFGS on ``hdp_core.label_value_grad`` with an L2 penalty.  Test documents are
inferred without the label terms, and ``predict`` is ``argmax_y eta_y . zbar``.

References
----------
Wang, Blei and Fei-Fei, "Simultaneous Image Classification and Annotation", CVPR, 2009.
Zhang, Ek, Gratal, Pokorny and Kjellström, "Supervised Hierarchical Dirichlet
Processes with Variational Inference", ICCV Workshops, 2013.
"""
from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from numba import njit
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils import check_random_state
from sklearn.utils.validation import _num_samples, check_is_fitted

from recognizers.modelling import dirichlet, sticks
from recognizers.modelling.chain import _normalise_inplace
from recognizers.modelling.topics.hdp_core import (_label_g, _labelled_assignment_step,
                                                   _longest, label_value_grad)
from recognizers.modelling.topics.lda_core import _digamma
from recognizers.modelling.topics.perplexity import (check_counts, check_vocabulary,
                                                        entry_documents, heldout_perplexity)
from recognizers.modelling.topics.shdp import (TopicSoftmaxMixin, _check_classes, check_labels,
                                        encode_labels, fit_label_weights)

__all__ = ["SupervisedLDA", "slda_estep"]


@njit(cache=True)
def slda_estep(indptr, indices, counts, elog_beta, alpha, phi, gamma, fresh, max_iter, tol,
               mu, labels, label_weight, sstats):
    """Variational E-step of (multi-class) sLDA on every document, in place.

    elog_beta (K, W) ``E[log beta]``; alpha (K,) the Dirichlet prior; phi (nnz, K) and
    gamma (D, K) the factors (``fresh``: start from uniform phi); mu (C, K) the label
    weights, labels (D,) class indices (negative: unlabelled, the plain LDA step).
    Adds ``n_e phi_ek`` to sstats (K, W).
    """
    D = indptr.shape[0] - 1
    K = elog_beta.shape[0]
    C = mu.shape[0]
    longest = _longest(indptr)
    elog_theta = np.empty(K)
    row = np.empty(K)
    base = np.empty(K)
    lold = np.empty(K)
    cand = np.empty(K)
    prob = np.empty(K)
    best = np.empty(K)
    Ex = np.empty((K, C))
    g = np.empty((longest, C))
    logG = np.empty(C)
    w = np.empty(C)
    tmp = np.empty(C)
    mr = np.empty(K)
    old_gamma = np.empty(K)
    for d in range(D):
        lo = indptr[d]
        hi = indptr[d + 1]
        N = 0.0
        for e in range(lo, hi):
            N += counts[e]
        y = labels[d] if labels.shape[0] > 0 else -1
        sup = C > 0 and y >= 0 and N > 0.0
        if fresh:
            for e in range(lo, hi):
                for k in range(K):
                    phi[e, k] = 1.0 / K
        for k in range(K):
            s = alpha[k]
            for e in range(lo, hi):
                s += counts[e] * phi[e, k]
            gamma[d, k] = s
        if sup:
            for k in range(K):
                mr[k] = mu[y, k] / N
                for l in range(C):
                    Ex[k, l] = math.exp(mu[l, k] / N)
            _label_g(lo, hi, counts, phi, Ex, g, logG, w)
        for it in range(max_iter):
            total = 0.0
            for k in range(K):
                total += gamma[d, k]
            dt = _digamma(total)
            for k in range(K):
                elog_theta[k] = _digamma(gamma[d, k]) - dt
                old_gamma[k] = gamma[d, k]
            for e in range(lo, hi):
                wd = indices[e]
                for k in range(K):
                    base[k] = elog_theta[k] + elog_beta[k, wd]
                    row[k] = base[k]
                if not sup:
                    _normalise_inplace(row)
                    for k in range(K):
                        phi[e, k] = math.exp(row[k])
                    continue
                _labelled_assignment_step(e, lo, counts[e], phi, row, base, mr, Ex, g, logG,
                                          w, label_weight, lold, cand, prob, best, tmp)
            change = 0.0
            for k in range(K):
                s = alpha[k]
                for e in range(lo, hi):
                    s += counts[e] * phi[e, k]
                gamma[d, k] = s
                change += abs(s - old_gamma[k])
            if change / K < tol:
                break
        for e in range(lo, hi):
            wd = indices[e]
            for k in range(K):
                sstats[k, wd] += counts[e] * phi[e, k]


class SupervisedLDA(TopicSoftmaxMixin, ClassifierMixin, TransformerMixin, BaseEstimator):
    """Multi-class supervised LDA (Wang, Blei & Fei-Fei 2009) with K fixed topics.

    Parameters
    ----------
    n_components : int, default 10
        K, the number of topics.
    doc_topic_prior : float, default 0.1
        alpha, the symmetric Dirichlet of the proportions (Zhang et al.'s baseline).
    topic_word_prior : float, default 0.01
        eta, the Dirichlet of the topics.
    max_iter : int, default 100
        EM iterations of ``fit``.
    tol : float, default 1e-4
        ``fit`` stops when the topics' mean relative change
        ``mean |d lambda| / mean lambda`` is below it.
    max_doc_iter : int, default 100
        Each document's E-step limit.
    doc_tol : float, default 1e-4
        Each document's mean ``|d gamma|`` tolerance.
    label_weight : float, default 1.0
        Scale of the label term (0: plain LDA with a classifier that is never
        trained, ``coef_ = 0``).
    label_penalty : float, default 1.0
        L2 penalty on the label weights.
    max_label_iter : int, default 50
        L-BFGS iterations of each M-step of the weights.
    learning_offset, learning_decay : float, default 1.0 and 0.6
        ``partial_fit``'s rate ``(tau0 + t)^-kappa``.
    total_samples : float, default 1e4
        The corpus size a ``partial_fit`` mini-batch stands for.
    random_state : None, int or RandomState, default None
        Seed of the random topics at the start.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_classes, n_components)
        The softmax weights.
    components_ : ndarray of shape (n_components, n_features)
        lambda, the topics' Dirichlet parameters.
    topic_word_ : ndarray of shape (n_components, n_features)
        Their means.
    n_features_in_ : int
    n_topics_used_ : int
        Topics with at least 1 % of the words.
    n_iter_, n_batches_, n_documents_seen_, seed_ : int

    ``_learned_attributes`` names the learned state (arrays and numbers) to save and
    restore onto a fresh instance.

    References
    ----------
    Wang, C., Blei, D. M. and Fei-Fei, L. "Simultaneous Image Classification and
    Annotation", CVPR, 2009.
    Zhang, C., Ek, C. H., Gratal, X., Pokorny, F. T. and Kjellström, H. "Supervised
    Hierarchical Dirichlet Processes with Variational Inference", ICCV Workshops, 2013.
    """

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "doc_topic_prior": [Interval(Real, 0, None, closed="neither")],
        "topic_word_prior": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_doc_iter": [Interval(Integral, 1, None, closed="left")],
        "doc_tol": [Interval(Real, 0, None, closed="left")],
        "label_weight": [Interval(Real, 0, None, closed="left")],
        "label_penalty": [Interval(Real, 0, None, closed="neither")],
        "max_label_iter": [Interval(Integral, 1, None, closed="left")],
        "learning_offset": [Interval(Real, 0, None, closed="left")],
        "learning_decay": [Interval(Real, 0.5, 1.0, closed="right")],
        "total_samples": [Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
    }

    _learned_attributes = ("components_", "coef_", "classes_", "n_features_in_", "seed_",
                           "n_topics_used_", "n_iter_", "n_batches_", "n_documents_seen_")

    def __init__(self, n_components=10, *, doc_topic_prior=0.1, topic_word_prior=0.01,
                 max_iter=100, tol=1e-4, max_doc_iter=100, doc_tol=1e-4, label_weight=1.0,
                 label_penalty=1.0, max_label_iter=50, learning_offset=1.0,
                 learning_decay=0.6, total_samples=1e4, random_state=None):
        self.n_components = n_components
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.max_iter = max_iter
        self.tol = tol
        self.max_doc_iter = max_doc_iter
        self.doc_tol = doc_tol
        self.label_weight = label_weight
        self.label_penalty = label_penalty
        self.max_label_iter = max_label_iter
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.total_samples = total_samples
        self.random_state = random_state

    def _init_state(self, M, classes) -> None:
        K, W = self.n_components, M.shape[1]
        rs = self.random_state
        self.seed_ = int(rs) if isinstance(rs, (int, np.integer)) else int(
            check_random_state(rs).randint(2**31 - 1))  # None, or a RandomState instance
        rng = np.random.default_rng(self.seed_)
        scale = max(float(M.data.sum()), 1.0) / (K * W)
        self.components_ = self.topic_word_prior + rng.gamma(1.0, 1.0, (K, W)) * scale
        self.classes_ = classes
        self.coef_ = np.zeros((classes.size, K))
        self.n_features_in_ = W
        self.n_iter_ = 0
        self.n_batches_ = 0
        self.n_documents_seen_ = 0

    def _estep(self, M, phi, gamma, fresh, labels):
        K, W = self.components_.shape
        sstats = np.zeros((K, W))
        alpha = np.full(K, float(self.doc_topic_prior))
        if labels is None:
            mu, labels, lw = np.zeros((0, K)), np.full(M.shape[0], -1, np.int64), 0.0
        else:
            mu, lw = np.ascontiguousarray(self.coef_), float(self.label_weight)
        slda_estep(M.indptr, M.indices, M.data.astype(np.float64),
                   dirichlet.expected_log(self.components_), alpha, phi, gamma, fresh,
                   int(self.max_doc_iter), float(self.doc_tol), mu, labels, lw, sstats)
        return sstats

    def _zbar(self, M, phi):
        n = M.data.astype(np.float64)
        rows = entry_documents(M)
        N = np.bincount(rows, n, minlength=M.shape[0])
        per_doc = sp.csr_matrix((n, np.arange(M.nnz), M.indptr), shape=(M.shape[0], M.nnz))
        zbar = np.asarray(per_doc @ phi)
        empty = N <= 0
        zbar[empty] = 1.0 / self.n_components
        N[empty] = 1.0
        return zbar / N[:, None]

    def _m_step(self, M, phi, sstats, labels, scale=1.0, rho=1.0):
        target = self.topic_word_prior + scale * sstats
        self.components_ = (1 - rho) * self.components_ + rho * target
        if self.label_weight == 0:
            return
        zbar = self._zbar(M, phi)
        data = M.data.astype(np.float64)

        def value_grad(mu):
            grad = np.zeros_like(mu)
            v = label_value_grad(M.indptr, data, phi, zbar, labels,
                                 np.ascontiguousarray(mu), grad)
            return v, grad

        mu = fit_label_weights(self.coef_, value_grad, float(self.label_penalty),
                               float(self.label_weight) * scale, self.max_label_iter)
        self.coef_ = (1 - rho) * self.coef_ + rho * mu

    def _finish(self, M):
        self.n_documents_seen_ += M.shape[0]
        used = self.components_.sum(1) - self.topic_word_prior * self.components_.shape[1]
        self.n_topics_used_ = sticks.n_used(np.maximum(used, 0.0), 0.01)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True  # word counts
        tags.input_tags.sparse = True
        return tags

    def _check_target(self, X, y) -> np.ndarray:
        """The labels, checked before the counts so a target that cannot train a
        classifier (None, one class, continuous values) is named as such."""
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the "
                             "target y is None")
        return check_labels(y, _num_samples(X))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Batch variational EM from scratch on documents X with labels y.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_docs, n_words)
            Integer word counts.
        y : array-like of shape (n_docs,)
            Class labels (at least two classes).

        Returns
        -------
        self
        """
        y = self._check_target(X, y)
        classes = _check_classes(y)
        M = check_counts(X)
        labels = encode_labels(y, classes)
        self._init_state(M, classes)
        phi = np.zeros((M.nnz, self.n_components))
        gamma = np.zeros((M.shape[0], self.n_components))
        for it in range(self.max_iter):
            old = self.components_
            sstats = self._estep(M, phi, gamma, it == 0, labels)
            self._m_step(M, phi, sstats, labels)
            self.n_iter_ = it + 1
            change = np.mean(np.abs(self.components_ - old)) / np.mean(old)
            if change < self.tol:
                break
        return self._finish(M)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None):
        """One online step on the labelled mini-batch (X, y); ``classes`` on the first
        call (every label the stream holds)."""
        y = self._check_target(X, y)
        M = check_counts(X)
        first = not hasattr(self, "components_")
        if first:
            if classes is None:
                raise ValueError("classes must be given on the first call to partial_fit")
            all_classes = _check_classes(classes)
        else:
            check_vocabulary(M, self.n_features_in_)
            all_classes = self.classes_
            if classes is not None and not np.array_equal(_check_classes(classes),
                                                          self.classes_):
                raise ValueError("classes differ from the classes of the earlier calls: %s"
                                 % self.classes_.tolist())
        labels = encode_labels(y, all_classes)
        if first:
            self._init_state(M, all_classes)
        phi = np.zeros((M.nnz, self.n_components))
        gamma = np.zeros((M.shape[0], self.n_components))
        sstats = self._estep(M, phi, gamma, True, labels)
        rho = 1.0 if first else (self.learning_offset + self.n_batches_ + 1.0) ** (
            -self.learning_decay)
        self._m_step(M, phi, sstats, labels, scale=self.total_samples / M.shape[0], rho=rho)
        self.n_batches_ += 1
        self.n_iter_ = self.n_batches_
        return self._finish(M)

    # ---- using the model ----------------------------------------------------------------
    @property
    def topic_word_(self) -> np.ndarray:
        check_is_fitted(self, "components_")
        return self.components_ / self.components_.sum(1, keepdims=True)

    def transform(self, X) -> np.ndarray:
        """(n_docs, K) ``zbar``: the expected topic frequencies of each document's words,
        inferred without labels (an empty document gets the uniform mix)."""
        check_is_fitted(self, "components_")
        M = check_vocabulary(check_counts(X), self.n_features_in_)
        phi = np.zeros((M.nnz, self.n_components))
        gamma = np.zeros((M.shape[0], self.n_components))
        self._estep(M, phi, gamma, True, None)
        return self._zbar(M, phi)

    def perplexity(self, X) -> float:
        """Held-out perplexity by document completion (``heldout_perplexity``)."""
        check_is_fitted(self, "components_")
        check_vocabulary(check_counts(X), self.n_features_in_)
        return heldout_perplexity(self.topic_word_, float(self.doc_topic_prior), X,
                                  random_state=0)
