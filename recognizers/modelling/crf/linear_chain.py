"""Linear-chain conditional random field for continuous sensor features (thesis 6.5).

:class:`LinearChainCRF` has sklearn-crfsuite's interface, but each sequence is a
float array ``(T, n_features)`` instead of a list of feature dicts::

    from recognizers.modelling.crf import LinearChainCRF
    crf = LinearChainCRF(c2=1.0, max_iterations=100).fit(X_list, y_list)
    crf.predict(X_list)            # list of lists of labels (Viterbi)
    crf.predict_marginals(X_list)  # list of lists of {label: probability}
    crf.predict_proba(X_list)      # list of (T, n_classes) arrays, columns classes_

Model.  State features (:mod:`recognizers.modelling.crf.features`,
:mod:`recognizers.modelling.crf.linear_chain_core`): a bias, the standardised raw sensors
(``raw``), their mean and standard deviation over the last ``window`` frames
(causal, so the live filter can compute them), and the thesis's threshold
features (one threshold per pair of activities and sensor, separate weights
above and below it, thresholds chosen from the training data by ``thresholds``);
each feature has one weight per activity.  Transitions: a full ``K x K``
log-potential matrix (``transitions="full"``) or the thesis's single weight on
``delta(y_{t-1} = y_t)`` (``"self"``).

Training minimises ``sum_n [log Z_n - score(y_n)] + c2 ||w||^2 + c1 ||w||_1``
(thesis 6.24 with ``c2 = 1 / (2 sigma^2)``; CRFsuite's scaling, so ``c1``/``c2``
mean the same as in CRFsuite) by L-BFGS (scipy), the gradient (6.25) from
forward-backward over every sequence.  With ``c1 > 0`` the weights are split
into positive and negative parts with L-BFGS-B bounds, which optimises the L1
penalty exactly (elastic net when ``c2 > 0`` too).

:class:`recognizers.crf_recognizer.CRFRecognizer` (kind ``"crf"``) is the
walker recognizer around it.
"""
from __future__ import annotations

import numbers

import numpy as np
import scipy.optimize
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from recognizers.base import _as_sequence_list, _check_sequence, check_is_fitted
from recognizers.modelling.crf.features import THRESHOLD_METHODS, fit_feature_spec
from recognizers.modelling import chain
from recognizers.modelling.crf.linear_chain_core import (
    FeatureSpec,
    chain_nll,
    feature_gradient,
    featurize,
    state_scores,
    threshold_code_matrix,
)

__all__ = ["LinearChainCRF"]


_CONSTRAINTS = {
    "thresholds": [StrOptions(set(THRESHOLD_METHODS)), None],
    "raw": ["boolean"],
    "window": [Interval(numbers.Integral, 0, None, closed="left")],
    "transitions": [StrOptions({"full", "self"})],
    "c1": [Interval(numbers.Real, 0, None, closed="left")],
    "c2": [Interval(numbers.Real, 0, None, closed="left")],
    "max_iterations": [Interval(numbers.Integral, 1, None, closed="left")],
    "tol": [Interval(numbers.Real, 0, None, closed="left")],
    "verbose": ["boolean"],
}


# --------------------------------------------------------------------------- the CRF


class LinearChainCRF(BaseEstimator):
    """Linear-chain CRF over dense float features (sklearn-crfsuite style).

    Parameters
    ----------
    thresholds : {"ks", "median"} or None, default "ks"
        How the per-pair thresholds are chosen (:mod:`recognizers.modelling.crf.features`);
        None: no threshold features.
    raw : bool, default True
        Include the standardised features themselves.
    window : int, default 0
        Also include each feature's mean and standard deviation over the last
        ``window`` frames (0: none).
    transitions : {"full", "self"}, default "full"
        Full transition matrix, or one weight on staying in the same activity.
    c1, c2 : float, default 0.0 and 1.0
        L1 and L2 penalties (CRFsuite's meaning).
    max_iterations : int, default 100
    tol : float, default 1e-7
        Stop when the relative decrease of the objective falls below it.
    verbose : bool, default False
        Progress bar over the iterations.

    Attributes
    ----------
    classes_ : (K,) str, sorted labels
    n_features_in_ : int
    spec_ : :class:`~recognizers.modelling.crf.linear_chain_core.FeatureSpec`
    state_weights_ : (n_dense, K) weights of bias, raw and window features
    threshold_weights_ : (n_thresholds, 2, K) weights above / below each threshold
    transition_ : (K, K) transition log-potentials
    n_iter_, n_evaluations_, objective_ : L-BFGS iterations, objective evaluations
        and the final objective (penalties included)

    References
    ----------
    Lafferty, J., McCallum, A. and Pereira, F. "Conditional Random Fields:
    Probabilistic Models for Segmenting and Labeling Sequence Data", ICML, 2001.
    Okazaki, N. "CRFsuite: a fast implementation of Conditional Random Fields
    (CRFs)", software, 2007.
    """

    _parameter_constraints = _CONSTRAINTS

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False  # a list of (T_i, n_features) sequences
        tags.target_tags.required = True  # a list of label sequences
        return tags

    def __init__(self, *, thresholds="ks", raw=True, window=0, transitions="full", c1=0.0,
                 c2=1.0, max_iterations=100, tol=1e-7, verbose=False):
        self.thresholds = thresholds
        self.raw = raw
        self.window = window
        self.transitions = transitions
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.tol = tol
        self.verbose = verbose

    # -- data -------------------------------------------------------------------
    def _check_X(self, X, name) -> np.ndarray:
        X = _check_sequence(X, name)
        if np.isinf(X).any():
            raise ValueError("%s contains infinite values (NaN marks a missing reading)" % name)
        if hasattr(self, "n_features_in_") and X.shape[1] != self.n_features_in_:
            raise ValueError("%s has %d features, but the CRF was fitted with %d"
                             % (name, X.shape[1], self.n_features_in_))
        return X

    def _check_fit_data(self, X_list, y_list):
        seqs = _as_sequence_list(X_list, "X")
        labs = _as_sequence_list(y_list, "y")
        if not seqs:
            raise ValueError("fit needs at least one sequence")
        if len(labs) != len(seqs):
            raise ValueError("got %d sequences but %d label sequences" % (len(seqs), len(labs)))
        Xs, ys = [], []
        for i, (X, y) in enumerate(zip(seqs, labs)):
            X = _check_sequence(X, "X[%d]" % i)
            if np.isinf(X).any():
                raise ValueError("X[%d] contains infinite values (NaN marks a missing "
                                 "reading)" % i)
            if Xs and X.shape[1] != Xs[0].shape[1]:
                raise ValueError("X[%d] has %d features, X[0] has %d"
                                 % (i, X.shape[1], Xs[0].shape[1]))
            y = np.asarray(y)
            if y.ndim != 1 or y.shape[0] != X.shape[0]:
                raise ValueError("y[%d] has shape %s but X[%d] has %d frames"
                                 % (i, y.shape, i, X.shape[0]))
            Xs.append(X)
            ys.append(y.astype(str))
        if sum(len(y) for y in ys) == 0:
            raise ValueError("fit needs at least one labelled frame")
        return Xs, ys

    # -- parameters vector --------------------------------------------------------
    def _n_trans(self, K) -> int:
        return K * K if self.transitions == "full" else 1

    def _unpack(self, theta, D, n_thr2, K):
        a = D * K
        b = a + n_thr2 * K
        W = theta[:a].reshape(D, K)
        Wt = theta[a:b].reshape(n_thr2, K)
        tr = theta[b:]
        log_A = tr.reshape(K, K) if self.transitions == "full" else tr[0] * np.eye(K)
        return W, Wt, np.ascontiguousarray(log_A)

    # -- fitting ----------------------------------------------------------------
    def _problem(self, X, y) -> "_Problem":
        """The training objective on sequences ``X`` and labels ``y`` (before fitting)."""
        Xs, ys = self._check_fit_data(X, y)
        classes = np.unique(np.concatenate(ys))
        yi = [np.searchsorted(classes, v).astype(np.int64) for v in ys]
        spec = fit_feature_spec(Xs, yi, len(classes), thresholds=self.thresholds,
                                raw=bool(self.raw), window=int(self.window))
        return _Problem(self, classes, Xs[0].shape[1], spec, [featurize(spec, X) for X in Xs],
                        yi)

    def fit(self, X, y):
        """Learn from sequences ``X`` (list of (T_i, n_features) floats) and labels ``y``.

        ``y`` is a list of label sequences (str).  Returns ``self``.
        """
        self._validate_params()
        problem = self._problem(X, y)
        objective, n_params = problem.objective, problem.n_params
        c1 = float(self.c1)

        if c1 > 0:
            # w = u - v with u, v >= 0: the L1 norm becomes the linear sum(u + v).
            def fun(x):
                f, g = objective(x[:n_params] - x[n_params:])
                return f + c1 * x.sum(), np.concatenate((g + c1, c1 - g))

            x0 = np.zeros(2 * n_params)
            bounds = [(0.0, None)] * (2 * n_params)
        else:
            fun, x0, bounds = objective, np.zeros(n_params), None

        bar = tqdm(total=int(self.max_iterations), desc="CRF L-BFGS", unit="it",
                   disable=not self.verbose, leave=False)

        def callback(intermediate_result):
            bar.update(1)
            bar.set_postfix(objective="%.6g" % intermediate_result.fun, refresh=False)

        # The heavy work is single-threaded compiled code; BLAS threads would only
        # spin on L-BFGS's small vectors (doubling CPU time on a busy machine).
        try:
            with threadpool_limits(1, user_api="blas"):
                res = scipy.optimize.minimize(
                    fun, x0, jac=True, method="L-BFGS-B", bounds=bounds, callback=callback,
                    options={"maxiter": int(self.max_iterations), "ftol": float(self.tol),
                             "gtol": 1e-10, "maxcor": 10})
        finally:
            bar.close()
        theta = res.x[:n_params] - res.x[n_params:] if c1 > 0 else res.x
        self._set_fitted(problem.classes, problem.n_features, problem.spec, theta)
        self.n_iter_ = int(res.nit)
        self.n_evaluations_ = int(res.nfev)
        self.objective_ = float(res.fun)
        return self

    def _set_fitted(self, classes, n_features, spec: FeatureSpec, theta) -> None:
        K = len(classes)
        M = threshold_code_matrix(spec)
        n_thr2 = M.shape[1]
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        expected = (spec.n_dense + n_thr2) * K + self._n_trans(K)
        if theta.shape != (expected,):
            raise ValueError("weight vector has %s entries, the model needs %d"
                             % (theta.shape, expected))
        W, Wt, log_A = self._unpack(theta, spec.n_dense, n_thr2, K)
        self.classes_ = np.asarray(classes, dtype=str)
        self.n_features_in_ = int(n_features)
        self.spec_ = spec
        self.theta_ = theta
        self.state_weights_ = np.ascontiguousarray(W)
        self.threshold_weights_ = np.ascontiguousarray(Wt).reshape(-1, 2, K)
        self.transition_ = log_A
        self.table_ = np.ascontiguousarray(M @ Wt)
        self.n_iter_, self.n_evaluations_, self.objective_ = 0, 0, float("nan")

    @property
    def self_transition_(self) -> float:
        """The single same-activity weight (``transitions="self"`` only)."""
        check_is_fitted(self, "theta_")
        if self.transitions != "self":
            raise AttributeError("self_transition_ exists only with transitions='self'")
        return float(self.theta_[-1])

    # -- inference ----------------------------------------------------------------
    def state_scores(self, X) -> np.ndarray:
        """Per-frame label scores (T, K) of one sequence (the state log-potentials)."""
        check_is_fitted(self, "theta_")
        X = self._check_X(X, "X")
        dense, codes = featurize(self.spec_, X)
        return state_scores(dense, codes, self.state_weights_, self.table_)

    def _K(self) -> int:
        return len(self.classes_)

    def predict_single(self, X) -> list:
        """Viterbi labels of one sequence (list of str)."""
        U = self.state_scores(X)
        if U.shape[0] == 0:
            return []
        path = chain.viterbi(np.zeros(self._K()), self.transition_, U).path
        return self.classes_[path].tolist()

    def predict_proba_single(self, X) -> np.ndarray:
        """Marginals ``p(y_t = k | X)`` (T, K) of one sequence, columns ``classes_``."""
        U = self.state_scores(X)
        if U.shape[0] == 0:
            return np.empty((0, self._K()))
        return chain.smooth(np.zeros(self._K()), self.transition_, U).posterior

    def predict_marginals_single(self, X) -> list:
        """Marginals of one sequence as a list of ``{label: probability}``."""
        names = self.classes_.tolist()
        return [dict(zip(names, row.tolist())) for row in self.predict_proba_single(X)]

    def log_partition(self, X) -> float:
        """``log Z(X)`` of one sequence."""
        U = self.state_scores(X)
        if U.shape[0] == 0:
            return 0.0
        return chain.log_likelihood(np.zeros(self._K()), self.transition_, U)

    def predict(self, X) -> list:
        """Viterbi labels of every sequence in ``X`` (list of lists of str)."""
        return [self.predict_single(x) for x in _as_sequence_list(X, "X")]

    def predict_marginals(self, X) -> list:
        """Marginals of every sequence (lists of ``{label: probability}``, as sklearn-crfsuite)."""
        return [self.predict_marginals_single(x) for x in _as_sequence_list(X, "X")]

    def predict_proba(self, X) -> list:
        """Marginals of every sequence as (T_i, K) arrays with columns ``classes_``."""
        return [self.predict_proba_single(x) for x in _as_sequence_list(X, "X")]

    def score(self, X, y) -> float:
        """Frame accuracy of the Viterbi labels against ``y`` (lists of sequences)."""
        pred = np.concatenate([np.asarray(p, dtype=str) for p in self.predict(X)])
        true = np.concatenate([np.asarray(t).astype(str) for t in _as_sequence_list(y, "y")])
        if pred.shape != true.shape:
            raise ValueError("y has %d frames, X has %d" % (true.size, pred.size))
        return float(np.mean(pred == true)) if true.size else float("nan")

    # -- files ------------------------------------------------------------------
    def save(self, path):
        """Write the model to ``path`` (npz + JSON header, no pickle; a ``"crf"`` model file)."""
        from recognizers.crf_recognizer import CRFRecognizer  # the file format is the recognizer's

        return CRFRecognizer._wrap(self).save(path)

    @classmethod
    def load(cls, path) -> "LinearChainCRF":
        """Read a model written by :meth:`save` or by a ``"crf"`` recognizer."""
        from recognizers.crf_recognizer import CRFRecognizer

        return CRFRecognizer.load(path).crf_


class _Problem:
    """Training data in feature form and the L2-penalised objective over the weights.

    ``objective(theta) -> (value, gradient)`` with ``theta`` laid out as
    ``[state weights (D, K), threshold weights (2 n_thresholds, K), transitions]``.
    """

    def __init__(self, crf, classes, n_features, spec, feats, yi):
        self.crf = crf
        self.classes = classes
        self.n_features = n_features
        self.spec = spec
        self.dense = np.concatenate([f[0] for f in feats])
        self.codes = np.concatenate([f[1] for f in feats])
        self.y = np.concatenate(yi)
        self.lengths = np.array([len(v) for v in yi], dtype=np.int64)
        self.M = threshold_code_matrix(spec)
        self.K = len(classes)
        self.n_params = (spec.n_dense + self.M.shape[1]) * self.K + crf._n_trans(self.K)

    def objective(self, theta):
        crf, spec, K = self.crf, self.spec, self.K
        W, Wt, log_A = crf._unpack(theta, spec.n_dense, self.M.shape[1], K)
        U = state_scores(self.dense, self.codes, W, self.M @ Wt)
        nll, dU, dA = chain_nll(U, log_A, self.y, self.lengths)
        gW, gC = feature_gradient(self.dense, self.codes, dU, spec.n_codes)
        gT = self.M.T @ gC
        gA = dA.ravel() if crf.transitions == "full" else np.array([np.trace(dA)])
        c2 = float(crf.c2)
        grad = np.concatenate((gW.ravel(), gT.ravel(), gA))
        return nll + c2 * (theta @ theta), grad + 2.0 * c2 * theta


# --------------------------------------------------------------------------- recognizer
