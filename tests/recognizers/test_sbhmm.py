"""StickBreakingHMM: VB updates against brute force and textbook formulas."""
import itertools

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import wishart
from sklearn.base import clone

from recognizers.modelling.matching import hungarian_error
from recognizers.modelling.hmm.sbhmm import (
    StickBreakingHMM,
    expected_gaussian_loglik,
    expected_log_det_wishart,
    kl_normal_wishart,
    normal_wishart_posterior,
)


def _sticky_data(rng, T=300, K=3, D=2, stay=0.95):
    A = np.full((K, K), (1 - stay) / (K - 1)) + np.eye(K) * (stay - (1 - stay) / (K - 1))
    means = np.array([[0, 0], [5, 0], [0, 5]], float)[:K, :D]
    z = np.zeros(T, int)
    for t in range(1, T):
        z[t] = rng.choice(K, p=A[z[t - 1]])
    return means[z] + 0.5 * rng.standard_normal((T, D)), z


def test_normal_wishart_update_matches_bishop_one_state():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 2)) + [1, -2]
    resp = np.ones((40, 1))
    m0, beta0, W0, nu0 = np.zeros(2), 2.0, np.eye(2) * 0.5, 4.0
    m, beta, W, nu = normal_wishart_posterior(X, resp, m0, beta0, W0, nu0)
    N, xbar = 40, X.mean(0)
    S = (X - xbar).T @ (X - xbar)
    Winv = np.linalg.inv(W0) + S + beta0 * N / (beta0 + N) * np.outer(xbar - m0, xbar - m0)
    np.testing.assert_allclose(m[0], (beta0 * m0 + N * xbar) / (beta0 + N))
    np.testing.assert_allclose(W[0], np.linalg.inv(Winv))
    assert beta[0] == beta0 + N and nu[0] == nu0 + N


def test_expected_log_det_against_monte_carlo():
    W = np.array([[0.7, 0.2], [0.2, 0.4]])
    nu = 5.5
    draws = wishart(df=nu, scale=W).rvs(200000, random_state=1)
    mc = np.linalg.slogdet(draws)[1].mean()
    assert expected_log_det_wishart(W[None], np.array([nu]))[0] == pytest.approx(mc, abs=0.01)


def test_expected_loglik_against_monte_carlo():
    rng = np.random.default_rng(2)
    m, beta, W, nu = np.array([[0.5, -1.0]]), np.array([3.0]), np.array([[[0.6, 0.1], [0.1, 0.3]]]), np.array([6.0])
    x = np.array([[1.0, 0.0]])
    lam = wishart(df=nu[0], scale=W[0]).rvs(20000, random_state=3)
    vals = []
    for L in lam:
        mu = rng.multivariate_normal(m[0], np.linalg.inv(beta[0] * L))
        d = x[0] - mu
        vals.append(0.5 * (np.linalg.slogdet(L)[1] - 2 * np.log(2 * np.pi) - d @ L @ d))
    assert expected_gaussian_loglik(x, m, beta, W, nu)[0, 0] == pytest.approx(np.mean(vals), abs=0.03)


def test_kl_normal_wishart_zero_at_prior_and_positive():
    m0, W0 = np.array([0.0, 1.0]), np.eye(2)
    kl0 = kl_normal_wishart(m0[None], np.array([2.0]), W0[None], np.array([5.0]), m0, 2.0, W0, 5.0)
    assert kl0[0] == pytest.approx(0.0, abs=1e-10)
    kl1 = kl_normal_wishart(m0[None] + 1, np.array([4.0]), 0.5 * W0[None], np.array([9.0]), m0, 2.0, W0, 5.0)
    assert kl1[0] > 0


def test_e_step_matches_enumeration():
    """q(z), expected transition counts and log Z against all C^T paths."""
    rng = np.random.default_rng(4)
    X, _ = _sticky_data(rng, T=5)
    model = StickBreakingHMM(max_states=3, max_iter=2, random_state=0).fit(X)
    res, (log_pi, log_A, log_lik) = model._e_step(X, np.array([5]))
    C, T = 3, 5
    scores, paths = [], list(itertools.product(range(C), repeat=T))
    for p in paths:
        s = log_pi[p[0]] + log_lik[0, p[0]]
        for t in range(1, T):
            s += log_A[p[t - 1], p[t]] + log_lik[t, p[t]]
        scores.append(s)
    scores = np.array(scores)
    logZ = logsumexp(scores)
    w = np.exp(scores - logZ)
    post = np.zeros((T, C))
    xi = np.zeros((C, C))
    for wi, p in zip(w, paths):
        post[np.arange(T), p] += wi
        for t in range(1, T):
            xi[p[t - 1], p[t]] += wi
    assert res.loglik == pytest.approx(logZ)
    np.testing.assert_allclose(res.posterior, post, atol=1e-10)
    np.testing.assert_allclose(res.trans_counts, xi, atol=1e-10)


@pytest.mark.parametrize("sticky", [0.0, 5.0])
def test_elbo_never_decreases(sticky):
    rng = np.random.default_rng(5)
    X, _ = _sticky_data(rng, T=200)
    m = StickBreakingHMM(max_states=6, sticky=sticky, max_iter=60, tol=0, random_state=1).fit(X)
    d = np.diff(m.elbo_)
    assert np.all(d >= -1e-8 * np.abs(m.elbo_[1:])), d.min()


def test_recovers_three_states_and_segmentation():
    rng = np.random.default_rng(6)
    X, z = _sticky_data(rng, T=400)
    m = StickBreakingHMM(max_states=8, random_state=0).fit(X)
    assert m.n_states_used_ == 3
    pred = m.predict(X)
    assert hungarian_error(pred, z) < 0.02


def test_hungarian_error_exact():
    assert hungarian_error(np.array([2, 2, 0, 0, 1]), np.array([0, 0, 1, 1, 1])) == pytest.approx(0.2)


def test_ragged_sequences_and_clone_and_errors():
    rng = np.random.default_rng(7)
    X1, _ = _sticky_data(rng, T=60)
    X2, _ = _sticky_data(rng, T=35)
    m = StickBreakingHMM(max_states=4, random_state=0).fit([X1, X2])
    assert m.predict([X1, X2]).shape == (95,)
    np.testing.assert_allclose(m.predict_proba(X1).sum(1), 1.0)
    assert np.all(np.isfinite(m.predict_proba(X1)))
    c = clone(m)
    assert not hasattr(c, "m_") and c.get_params() == m.get_params()
    with pytest.raises(ValueError, match="features"):
        m.predict(np.zeros((5, 3)))
    with pytest.raises(ValueError, match="not fitted"):
        StickBreakingHMM().predict(X1)
    with pytest.raises(ValueError, match="max_states"):
        StickBreakingHMM(max_states=1).fit(X1)
