"""Finite hidden-state CRF sequence classifier (sklearn estimator over hcrf_core)."""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, ClassifierMixin

from . import hcrf_core


def as_sequences(X, lengths=None):
    """(F, lengths) from a list of (T_i, d) arrays, or from concatenated X plus lengths."""
    if isinstance(X, (list, tuple)):
        if lengths is not None:
            raise ValueError("give either a list of sequences or X with lengths, not both")
        if len(X) == 0:
            raise ValueError("no sequences given")
        seqs = [np.asarray(x, dtype=np.float64) for x in X]
        if any(s.ndim != 2 or s.shape[0] < 1 for s in seqs):
            raise ValueError("each sequence must be a non-empty 2-D array (T_i, n_features)")
        if len({s.shape[1] for s in seqs}) != 1:
            raise ValueError("all sequences must have the same number of features")
        return np.ascontiguousarray(np.vstack(seqs)), np.array([len(s) for s in seqs])
    F = np.ascontiguousarray(X, dtype=np.float64)
    if F.ndim != 2:
        raise ValueError("X must be a list of (T_i, d) sequences or a 2-D array with lengths")
    lengths = np.asarray([F.shape[0]] if lengths is None else lengths, dtype=np.int64)
    if lengths.min() < 1 or lengths.sum() != F.shape[0]:
        raise ValueError("lengths must be positive and sum to len(X)")
    return F, lengths


class HCRFClassifier(ClassifierMixin, BaseEstimator):
    """Hidden-state CRF: one label per sequence, ``n_hidden`` hidden states per class.

    ``fit(X, y)`` with X a list of (T_i, D) sequences (so ``clone`` and
    ``Pipeline`` work), or ``fit(X, y, lengths)`` with X (T, D) concatenated frames;
    y (N,) one label per sequence. Trained by L-BFGS on the L2-penalised conditional
    log-likelihood (penalty ``alpha / 2 * ||theta||^2``).
    """

    def __init__(self, n_hidden=3, alpha=1.0, max_iter=200, tol=1e-6, random_state=None):
        self.n_hidden = n_hidden
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _check(self, X, lengths):
        return as_sequences(X, lengths)

    def _unpack(self, theta, D, S):
        W = theta[:D * S].reshape(D, S)
        s = theta[D * S:D * S + S]
        A = theta[D * S + S:].reshape(S, S)
        return W, s, A

    def fit(self, X, y, lengths=None):
        X, lengths = self._check(X, lengths)
        if int(self.n_hidden) < 1:
            raise ValueError("n_hidden must be >= 1")
        self.classes_, yi = np.unique(np.asarray(y), return_inverse=True)
        if yi.shape[0] != lengths.shape[0]:
            raise ValueError("y needs one label per sequence (len(y) == len(lengths))")
        C, H, D = len(self.classes_), int(self.n_hidden), X.shape[1]
        S = C * H
        rng = np.random.default_rng(self.random_state)
        # Small random start breaks the symmetry between a class's hidden states.
        theta0 = 0.1 * rng.standard_normal(D * S + S + S * S)

        def f(theta):
            W, s, A = self._unpack(theta, D, S)
            nll, dW, ds, dA = hcrf_core.hcrf_nll(X, W, s, A, yi, lengths, H)
            g = np.concatenate([dW.ravel(), ds, dA.ravel()])
            return nll + 0.5 * self.alpha * theta @ theta, g + self.alpha * theta

        res = minimize(f, theta0, jac=True, method="L-BFGS-B",
                       options={"maxiter": self.max_iter, "gtol": self.tol})
        self.coef_, self.start_, self.transitions_ = (a.copy() for a in self._unpack(res.x, D, S))
        self.n_iter_ = int(res.nit)
        self.objective_ = float(res.fun)
        return self

    def predict_log_proba(self, X, lengths=None):
        X, lengths = self._check(X, lengths)
        return hcrf_core.predict_log_proba(X, self.coef_, self.start_, self.transitions_,
                                           lengths, len(self.classes_), int(self.n_hidden))

    def predict_proba(self, X, lengths=None):
        return np.exp(self.predict_log_proba(X, lengths))

    def predict(self, X, lengths=None):
        return self.classes_[self.predict_log_proba(X, lengths).argmax(axis=1)]

    def score(self, X, y, lengths=None):
        return float(np.mean(self.predict(X, lengths) == np.asarray(y)))
