"""Supervised LDA (Wang, Blei & Fei-Fei 2009): the label bound against brute force, the
phi step's fixed point, planted topics, sklearn conventions, npz round trip, bad input."""
import io
import itertools

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from recognizers.modelling import SupervisedLDA
from recognizers.modelling.topics.hdp_core import label_value_grad
from recognizers.modelling.topics.perplexity import check_counts
from recognizers.modelling.topics.slda import slda_estep
from recognizers.modelling.datasets import make_labelled_bars


def test_label_term_is_a_lower_bound_for_slda():
    """With independent z_n the Jensen step is exact: eq. (9) <= E_q[log softmax]."""
    rng = np.random.default_rng(0)
    K, C = 3, 3
    for trial in range(10):
        X = np.zeros((1, 4), dtype=np.int64)
        np.add.at(X[0], rng.integers(0, 4, 4), 1)
        M = check_counts(X)
        phi = rng.dirichlet(np.ones(K), size=M.nnz)
        mu = rng.normal(0, 3, (C, K))
        tokens = np.repeat(np.arange(M.nnz), M.data)
        zbar = (M.data[:, None] * phi).sum(0, keepdims=True) / tokens.size
        grad = np.zeros_like(mu)
        approx = label_value_grad(M.indptr, M.data.astype(float), phi, zbar,
                                  np.array([1]), mu, grad)
        exact = 0.0
        for z in itertools.product(range(K), repeat=tokens.size):
            p = np.prod([phi[e, z[n]] for n, e in enumerate(tokens)])
            s = mu @ (np.bincount(z, minlength=K) / tokens.size)
            exact += p * (s[1] - np.log(np.exp(s).sum()))
        assert approx <= exact + 1e-12


def test_phi_step_without_labels_is_the_lda_fixed_point():
    X, y, _, _, _ = make_labelled_bars(10, 20, random_state=1)
    M = check_counts(X)
    K = 4
    rng = np.random.default_rng(0)
    elog_beta = np.log(rng.dirichlet(np.ones(M.shape[1]), size=K))
    phi, gamma = np.zeros((M.nnz, K)), np.zeros((M.shape[0], K))
    sstats = np.zeros((K, M.shape[1]))
    alpha = np.full(K, 0.1)
    slda_estep(M.indptr, M.indices, M.data.astype(float), elog_beta, alpha, phi, gamma,
               True, 500, 1e-12, np.zeros((0, K)), np.full(10, -1), 0.0, sstats)
    from scipy.special import digamma
    rows = np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))
    elog_theta = digamma(gamma) - digamma(gamma.sum(1, keepdims=True))
    expect = np.exp(elog_theta[rows] + elog_beta[:, M.indices].T)
    np.testing.assert_allclose(phi, expect / expect.sum(1, keepdims=True), atol=1e-8)
    np.testing.assert_allclose(gamma, alpha + np.array(
        [(M.data[M.indptr[d]:M.indptr[d + 1], None] * phi[M.indptr[d]:M.indptr[d + 1]]).sum(0)
         for d in range(10)]), atol=1e-8)
    np.testing.assert_allclose(sstats.sum(), X.sum())


def test_planted_topics_and_round_trip():
    X, y, thetabar, _, mu = make_labelled_bars(400, 60, random_state=0)
    m = SupervisedLDA(6, max_iter=30, random_state=0).fit(X[:300], y[:300])
    oracle = np.mean(np.argmax(thetabar[300:] @ mu.T, 1) == y[300:])
    assert m.score(X[300:], y[300:]) > max(0.7, oracle - 0.15)
    assert m.n_topics_used_ == 6
    buf = io.BytesIO()
    np.savez(buf, **{n: getattr(m, n) for n in m._learned_attributes})
    buf.seek(0)
    saved = np.load(buf, allow_pickle=False)
    fresh = SupervisedLDA(**m.get_params())
    for n in fresh._learned_attributes:
        v = saved[n]
        setattr(fresh, n, v.item() if v.ndim == 0 else v)
    np.testing.assert_array_equal(fresh.predict_proba(X[300:]), m.predict_proba(X[300:]))


def test_sklearn_conventions_and_bad_input():
    X, y, _, _, _ = make_labelled_bars(60, 30, random_state=4)
    m = SupervisedLDA(4, max_iter=5, random_state=0)
    c = clone(m)
    assert c.get_params() == m.get_params()
    pipe = Pipeline([("id", FunctionTransformer()), ("slda", c)]).fit(X, y)
    assert pipe.score(X, y) > 0.5
    on = SupervisedLDA(4, total_samples=60, random_state=0)
    on.partial_fit(X[:30], y[:30], classes=[0, 1, 2]).partial_fit(X[30:], y[30:])
    assert on.n_batches_ == 2 and on.coef_.shape == (3, 4)
    with pytest.raises(ValueError, match="not in classes"):
        on.partial_fit(X, y + 1)
    with pytest.raises(ValueError, match="classes must be given"):
        SupervisedLDA(3).partial_fit(X, y)
    for bad, msg in [(X - 1, "Negative values in data"), (np.where(X > 0, np.nan, 0.0), "NaN")]:
        with pytest.raises(ValueError, match=msg):
            SupervisedLDA(3).fit(bad, y)
    with pytest.raises(ValueError, match="60 documents but y has 59"):
        SupervisedLDA(3).fit(X, y[:59])
    with pytest.raises(ValueError, match="same vocabulary"):
        on.predict(X[:, :5])
