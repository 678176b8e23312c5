"""Finite HCRF: partitions and gradient against brute force; estimator behaviour."""
import itertools

import numpy as np
import pytest
from sklearn.base import clone

from recognizers.modelling.crf import hcrf_core
from recognizers.modelling.crf.hcrf import HCRFClassifier

C, H, D = 2, 2, 3
S = C * H


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, D))
    return (X, rng.normal(size=(D, S)), rng.normal(size=S), rng.normal(size=(S, S)),
            np.array([1, 0]), np.array([3, 4]))


def brute_logz(Xn, W, s, A, c=None):
    vals = []
    for p in itertools.product(range(S), repeat=len(Xn)):
        if c is not None and any(q // H != c for q in p):
            continue
        vals.append(s[p[0]] + sum(Xn[t] @ W[:, p[t]] for t in range(len(Xn)))
                    + sum(A[p[t - 1], p[t]] for t in range(1, len(Xn))))
    return np.logaddexp.reduce(vals)


def test_class_partitions_match_enumeration(problem):
    X, W, s, A, y, lengths = problem
    got = hcrf_core.class_log_partitions(X, W, s, A, lengths, C, H)
    seqs = [X[:3], X[3:]]
    want = [[brute_logz(q, W, s, A, c) for c in range(C)] for q in seqs]
    np.testing.assert_allclose(got, want, rtol=1e-10)
    # Paths that switch class are not in the model: with them forbidden the free
    # partition is the sum of the class partitions.
    Ab = hcrf_core.block_transitions(A, H)
    for n, q in enumerate(seqs):
        assert brute_logz(q, W, s, Ab) == pytest.approx(np.logaddexp.reduce(got[n]))


def test_nll_and_gradient(problem):
    X, W, s, A, y, lengths = problem
    nll, dW, ds, dA = hcrf_core.hcrf_nll(X, W, s, A, y, lengths, H)
    want = sum(np.logaddexp.reduce([brute_logz(q, W, s, A, k) for k in range(C)])
               - brute_logz(q, W, s, A, c) for q, c in [(X[:3], 1), (X[3:], 0)])
    assert nll == pytest.approx(want, rel=1e-10)
    eps = 1e-6
    for arr, grad in [(W, dW), (s, ds), (A, dA)]:
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            up = hcrf_core.hcrf_nll(X, W, s, A, y, lengths, H)[0]
            arr[idx] = old - eps
            dn = hcrf_core.hcrf_nll(X, W, s, A, y, lengths, H)[0]
            arr[idx] = old
            num[idx] = (up - dn) / (2 * eps)
        np.testing.assert_allclose(grad, num, atol=1e-6)


def _two_class_data(rng, n=20):
    # Class 0: feature rises then falls; class 1: constant. Needs hidden phases.
    X, y, lengths = [], [], []
    for i in range(n):
        c = i % 2
        T = rng.integers(6, 10)
        t = np.linspace(-1, 1, T)
        f = (1 - 2 * np.abs(t)) if c == 0 else np.zeros(T)
        X.append(np.c_[f + 0.3 * rng.standard_normal(T), np.ones(T)])
        y.append(c)
        lengths.append(T)
    return np.vstack(X), np.array(y), np.array(lengths)


def test_estimator_learns_and_clones():
    rng = np.random.default_rng(1)
    X, y, lengths = _two_class_data(rng)
    Xt, yt, lt = _two_class_data(rng)
    est = HCRFClassifier(n_hidden=2, alpha=0.1, random_state=0).fit(X, y, lengths)
    assert est.score(Xt, yt, lt) >= 0.9
    P = est.predict_proba(Xt, lt)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    c = clone(est)
    assert c.get_params() == est.get_params() and not hasattr(c, "coef_")


def test_bad_input_messages():
    with pytest.raises(ValueError, match="one label per sequence"):
        HCRFClassifier().fit(np.zeros((5, 2)), [0, 1, 0], [5])
    with pytest.raises(ValueError, match="sum to len"):
        HCRFClassifier().fit(np.zeros((5, 2)), [0], [4])
