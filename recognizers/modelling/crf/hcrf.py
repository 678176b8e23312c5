"""Finite hidden-state CRF sequence classifier (scikit-learn estimator over hcrf_core),
and the input handling every sequence classifier of the CRF family shares."""
from __future__ import annotations

import numbers

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d, validate_data

from . import hcrf_core


def _is_sequence_list(X):
    """A list of (T_i, d) arrays (not a nested list holding one 2-D array)."""
    return isinstance(X, (list, tuple)) and (len(X) == 0 or np.ndim(X[0]) == 2)


def as_sequences(X, lengths=None):
    """(F, lengths) from sequences given in any of the accepted forms.

    Parameters
    ----------
    X : list of (T_i, d) arrays, (N, T, d) array, or (n_frames, d) array
        A list holds one array per sequence; a 3-D array holds N sequences of equal
        length; a 2-D array holds concatenated frames split by ``lengths``, or, without
        ``lengths``, one sequence of length one per row (scikit-learn's one sample per
        row).
    lengths : (N,) int array or None
        Sequence lengths of a 2-D ``X``.

    Returns
    -------
    F : (n_frames, d) float64 array, C-contiguous
    lengths : (N,) int64 array
    """
    if _is_sequence_list(X):
        if lengths is not None:
            raise ValueError("give either a list of sequences or X with lengths, not both")
        if len(X) == 0:
            raise ValueError("no sequences given")
        seqs = [check_array(x, dtype=np.float64, ensure_min_samples=1) for x in X]
        if len({s.shape[1] for s in seqs}) != 1:
            raise ValueError("all sequences must have the same number of features")
        return np.ascontiguousarray(np.vstack(seqs)), np.array([len(s) for s in seqs])
    if getattr(X, "ndim", 2) == 3:
        if lengths is not None:
            raise ValueError("a 3-D X holds equal-length sequences; lengths is not needed")
        N, T, d = X.shape
        return as_sequences(np.reshape(X, (N * T, d)), np.full(N, T))
    F = np.ascontiguousarray(check_array(X, dtype=np.float64))
    lengths = np.ones(F.shape[0], np.int64) if lengths is None else np.asarray(lengths, np.int64)
    if lengths.ndim != 1 or lengths.min() < 1 or lengths.sum() != F.shape[0]:
        raise ValueError("lengths must be positive and sum to len(X)")
    return F, lengths


class SequenceClassifier(ClassifierMixin, BaseEstimator):
    """Base of the sequence classifiers with one label per sequence.

    Subclasses implement ``_fit(F, lengths, yi)`` on validated frames and integer
    labels, and ``_log_proba(F, lengths)`` returning (N, n_classes) log posteriors.
    ``X`` may be any form :func:`as_sequences` accepts, so ``clone``, ``Pipeline``
    and scikit-learn's estimator checks work.
    """

    def _frames(self, X, lengths, reset):
        """Validated (F, lengths); sets or checks ``n_features_in_``."""
        if _is_sequence_list(X) or getattr(X, "ndim", 2) == 3:
            F, lengths = as_sequences(X, lengths)
            if reset:
                self.n_features_in_ = F.shape[1]
            elif F.shape[1] != self.n_features_in_:
                raise ValueError(f"X has {F.shape[1]} features, but {type(self).__name__} "
                                 f"is expecting {self.n_features_in_} features as input")
            return F, lengths
        F = validate_data(self, X, reset=reset, dtype=np.float64)
        return as_sequences(F, lengths)

    def _labels(self, y, n_sequences):
        """``classes_`` and integer labels; a clear error for a missing or short y."""
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target "
                             "y is None: give one label per sequence")
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)
        if y.ndim != 1 or y.shape[0] != n_sequences:
            raise ValueError(f"y needs one label per sequence ({n_sequences}), got shape {y.shape}")
        check_classification_targets(y)
        self.classes_, yi = np.unique(y, return_inverse=True)
        return yi

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, lengths=None):
        """Fit on sequences ``X`` with one label per sequence in ``y``.

        Parameters
        ----------
        X : list of (T_i, d) arrays, (N, T, d) array or (n_frames, d) array
            See :func:`as_sequences`.
        y : (N,) array-like
            One class label per sequence.
        lengths : (N,) int array, optional
            Lengths of the sequences concatenated in a 2-D ``X``.

        Returns
        -------
        self
        """
        F, lengths = self._frames(X, lengths, reset=True)
        yi = self._labels(y, len(lengths))
        self._fit(F, lengths, yi)
        return self

    def predict_log_proba(self, X, lengths=None):
        """Log posterior ``log p(y | x)`` of every class, (N, n_classes)."""
        check_is_fitted(self)
        F, lengths = self._frames(X, lengths, reset=False)
        return self._log_proba(F, lengths)

    def predict_proba(self, X, lengths=None):
        """Posterior ``p(y | x)`` of every class, (N, n_classes)."""
        return np.exp(self.predict_log_proba(X, lengths))

    def decision_function(self, X, lengths=None):
        """Class scores: the log posteriors (N, n_classes), or for two classes the
        log odds of ``classes_[1]`` (N,)."""
        lp = self.predict_log_proba(X, lengths)
        return lp[:, 1] - lp[:, 0] if lp.shape[1] == 2 else lp

    def predict(self, X, lengths=None):
        """Most probable class of every sequence, (N,)."""
        best = self.predict_log_proba(X, lengths).argmax(axis=1)
        return self.classes_[best]

    def score(self, X, y, lengths=None, sample_weight=None):
        """Mean accuracy of :meth:`predict` against ``y`` (weighted by ``sample_weight``)."""
        return float(np.average(self.predict(X, lengths) == np.asarray(y), weights=sample_weight))


class HCRFClassifier(SequenceClassifier):
    """Hidden-state CRF: one label per sequence, ``n_hidden`` hidden states per class.

    Trained by L-BFGS on the L2-penalised conditional log-likelihood (penalty
    ``alpha / 2 * ||theta||^2``); see :mod:`recognizers.modelling.hcrf_core`.

    Parameters
    ----------
    n_hidden : int, default 3
        Hidden states per class.
    alpha : float, default 1.0
        L2 penalty on every weight.
    max_iter : int, default 200
        L-BFGS iterations.
    tol : float, default 1e-6
        L-BFGS gradient tolerance.
    random_state : int, RandomState instance or None
        Seeds the small random start that breaks the symmetry of the hidden states.

    Attributes
    ----------
    classes_ : (C,) class labels.
    coef_ : (d, C * n_hidden) frame weights; ``start_`` (C * n_hidden,) start scores;
        ``transitions_`` (C * n_hidden, C * n_hidden) transition scores (used inside
        the class blocks only).
    n_iter_ : int
    objective_ : float
        Penalised negative conditional log-likelihood at the end.
    n_features_in_ : int

    References
    ----------
    A. Quattoni, S. Wang, L.-P. Morency, M. Collins and T. Darrell, "Hidden Conditional
    Random Fields", IEEE Transactions on Pattern Analysis and Machine Intelligence
    29(10), 2007.
    """

    _parameter_constraints: dict = {
        "n_hidden": [Interval(numbers.Integral, 1, None, closed="left")],
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, n_hidden=3, alpha=1.0, max_iter=200, tol=1e-6, random_state=None):
        self.n_hidden = n_hidden
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    @staticmethod
    def _unpack(theta, D, S):
        W = theta[:D * S].reshape(D, S)
        s = theta[D * S:D * S + S]
        A = theta[D * S + S:].reshape(S, S)
        return W, s, A

    def _fit(self, F, lengths, yi):
        C, H, D = len(self.classes_), int(self.n_hidden), F.shape[1]
        S = C * H
        rng = check_random_state(self.random_state)
        # Small random start breaks the symmetry between a class's hidden states.
        theta0 = 0.1 * rng.standard_normal(D * S + S + S * S)

        def f(theta):
            W, s, A = self._unpack(theta, D, S)
            nll, dW, ds, dA = hcrf_core.hcrf_nll(F, W, s, A, yi, lengths, H)
            g = np.concatenate([dW.ravel(), ds, dA.ravel()])
            return nll + 0.5 * self.alpha * theta @ theta, g + self.alpha * theta

        res = minimize(f, theta0, jac=True, method="L-BFGS-B",
                       options={"maxiter": self.max_iter, "gtol": self.tol})
        self.coef_, self.start_, self.transitions_ = (a.copy() for a in self._unpack(res.x, D, S))
        self.n_iter_ = int(res.nit)
        self.objective_ = float(res.fun)

    def _log_proba(self, F, lengths):
        return hcrf_core.predict_log_proba(F, self.coef_, self.start_, self.transitions_,
                                           lengths, len(self.classes_), int(self.n_hidden))
