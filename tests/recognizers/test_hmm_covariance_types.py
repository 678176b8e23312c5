"""Spherical and tied covariances, and hmmlearn's extension points (issue 25).

The M-steps are checked as what they claim to be: the exact maximisers of the
expected complete-data log-likelihood plus log prior under their constraint
(perturbing the result in any allowed direction never increases it), and the
likelihoods against scipy's multivariate normal.
"""
import logging
import warnings

import numpy as np
import pytest
from scipy import stats

from recognizers.modelling.hmm import GMMHMM, GaussianHMM
from recognizers.modelling.em import ConvergenceMonitor, ConvergenceWarning
from recognizers.modelling.emissions import (
    GaussianPrior,
    SphericalGaussianEmissions,
    TiedGaussianEmissions,
    make_gaussian_emissions,
)
from recognizers.modelling.hmm.utils import fill_covars


def _data(seed=0, T=300, D=3, K=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, D)) + rng.integers(0, 3, size=(T, 1)) * 2.0
    post = rng.dirichlet(np.ones(K), size=T)
    return X, post


def _objective(em, X, post, prior):
    """Q(theta) + log prior: the function the M-step maximises."""
    return float((post * em.log_likelihood(X)).sum() + em.log_prior(prior))


@pytest.mark.parametrize("cov_type", ["spherical", "tied"])
def test_log_likelihood_matches_scipy(cov_type):
    rng = np.random.default_rng(1)
    means = rng.normal(size=(3, 2))
    if cov_type == "spherical":
        covars = np.array([0.5, 1.0, 2.0])
        full = fill_covars(covars, "spherical", 3, 2)
    else:
        A = rng.normal(size=(2, 2))
        covars = A @ A.T + 0.5 * np.eye(2)
        full = fill_covars(covars, "tied", 3, 2)
    em = make_gaussian_emissions(means, covars, cov_type)
    X = rng.normal(size=(20, 2))
    want = np.column_stack([stats.multivariate_normal(means[k], full[k]).logpdf(X)
                            for k in range(3)])
    np.testing.assert_allclose(em.log_likelihood(X), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cov_type", ["spherical", "tied"])
@pytest.mark.parametrize("prior", [GaussianPrior(min_covar=1e-9),
                                   GaussianPrior(min_covar=1e-9, means_prior=0.5,
                                                 means_weight=2.0, covars_prior=0.3,
                                                 covars_weight=6.0)])
def test_m_step_is_the_constrained_maximiser(cov_type, prior):
    X, post = _data()
    K, D = post.shape[1], X.shape[1]
    start = make_gaussian_emissions(np.zeros((K, D)), np.ones(K) if cov_type == "spherical"
                                    else np.eye(D), cov_type)
    st = start.init_stats()
    start.accumulate(st, X, post)
    best = start.m_step(st, prior)
    f0 = _objective(best, X, post, prior)
    rng = np.random.default_rng(2)
    for _ in range(30):
        means = best.means + 1e-3 * rng.normal(size=best.means.shape)
        if cov_type == "spherical":
            cov = best.covars * np.exp(1e-3 * rng.normal(size=K))
        else:
            E = 1e-3 * rng.normal(size=(D, D))
            cov = best.covars + E @ E.T + 1e-3 * (E + E.T) / 2
            cov = 0.5 * (cov + cov.T)
        other = make_gaussian_emissions(means, cov, cov_type)
        assert _objective(other, X, post, prior) <= f0 + 1e-9
    # Maximum likelihood closed forms (no prior): pooled / averaged scatter.
    if prior.means_weight == 0 and prior.covars_weight <= 1:
        w = post.sum(0)
        mu = post.T @ X / w[:, None]
        np.testing.assert_allclose(best.means, mu, rtol=1e-10)
        scat = np.stack([(post[:, k:k + 1] * (X - mu[k])).T @ (X - mu[k]) for k in range(K)])
        if cov_type == "tied":
            want = (scat.sum(0) + prior.covars_prior) / w.sum()
        else:
            want = (np.einsum("kii->k", scat) + D * prior.covars_prior) / (D * w)
        np.testing.assert_allclose(best.covars, want, rtol=1e-10)


@pytest.mark.parametrize("cov_type", ["spherical", "tied", "diag", "full"])
def test_gaussian_hmm_em_is_monotone_and_shapes_follow_hmmlearn(cov_type):
    truth = GaussianHMM(2, covariance_type="full")
    truth.startprob_ = np.array([0.6, 0.4])
    truth.transmat_ = np.array([[0.9, 0.1], [0.2, 0.8]])
    truth.means_ = np.array([[0.0, 0.0], [3.0, 3.0]])
    truth.covars_ = np.array([np.eye(2), 0.5 * np.eye(2)])
    X, _ = truth.sample(400, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("error", RuntimeWarning)
        m = GaussianHMM(2, covariance_type=cov_type, n_iter=30, random_state=0).fit(X)
    assert np.all(np.diff(m.monitor_.history) > -1e-8)
    raw = {"spherical": (2,), "tied": (2, 2), "diag": (2, 2), "full": (2, 2, 2)}[cov_type]
    assert m._covars_.shape == raw
    assert m.covars_.shape == (2, 2, 2)  # hmmlearn's public form: full matrices
    assert sorted(np.round(m.means_.mean(1)).tolist()) == [0.0, 3.0]
    n_cov = {"spherical": 2, "tied": 3, "diag": 4, "full": 6}[cov_type]
    assert m._n_parameters() == 1 + 2 + 4 + n_cov


@pytest.mark.parametrize("cov_type", ["spherical", "tied"])
def test_gmm_hmm_spherical_and_tied(cov_type):
    rng = np.random.default_rng(3)
    X = np.concatenate([rng.normal(size=(200, 2)), rng.normal(size=(200, 2)) + 4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("error", RuntimeWarning)
        m = GMMHMM(2, n_mix=2, covariance_type=cov_type, n_iter=20, random_state=0).fit(X)
    assert m.covars_.shape == {"spherical": (2, 2), "tied": (2, 2, 2)}[cov_type]
    assert np.all(np.diff(m.monitor_.history) > -1e-8)
    Y, states = m.sample(50, random_state=1)
    assert Y.shape == (50, 2) and states.shape == (50,)


def test_bad_covariance_shapes_are_clear():
    with pytest.raises(ValueError, match=r"spherical covars must have shape \(2,\)"):
        SphericalGaussianEmissions(np.zeros((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"tied covars must have shape \(3, 3\)"):
        TiedGaussianEmissions(np.zeros((2, 3)), np.ones((2, 3, 3)))
    with pytest.raises(ValueError, match="'covariance_type' parameter of .* must be a str among"):
        GaussianHMM(2, covariance_type="banana").fit(np.zeros((10, 1)))


def test_n_iter_zero_initialises_only():
    X = np.random.default_rng(0).normal(size=(100, 2))
    m = GaussianHMM(3, n_iter=0, random_state=0).fit(X)
    assert m.means_.shape == (3, 2) and m.monitor_.history == []
    np.testing.assert_allclose(m.transmat_, 1 / 3)


def test_init_hook_and_logged_notices(caplog):
    X = np.random.default_rng(0).normal(size=(100, 2))
    m = GaussianHMM(2, random_state=0)
    m.startprob_ = np.array([0.5, 0.5])
    with caplog.at_level(logging.WARNING, logger="recognizers.hmm"):
        m._init(X, [100])  # hmmlearn's signature
    assert any("will be overwritten" in r.getMessage() for r in caplog.records)
    assert m.means_.shape == (2, 2)
    caplog.clear()
    tiny = GaussianHMM(2, covariance_type="full", init_params="")
    tiny.startprob_, tiny.transmat_ = m.startprob_, m.transmat_
    tiny.means_, tiny.covars_ = m.means_, np.stack([np.eye(2)] * 2)
    with caplog.at_level(logging.WARNING, logger="recognizers.hmm"):
        tiny._init(X[:3], 3)
    assert [r.getMessage() for r in caplog.records if "degenerate" in r.getMessage()]


def test_users_monitor_decides_when_to_stop():
    class StopAfterTwo(ConvergenceMonitor):
        @property
        def converged(self):
            return len(self.history) >= 2

    X = np.random.default_rng(0).normal(size=(200, 2))
    m = GaussianHMM(2, n_iter=50, random_state=0)
    m.monitor_ = StopAfterTwo(m.monitor_.tol, m.monitor_.n_iter, False)
    m.fit(X)
    assert isinstance(m.monitor_, StopAfterTwo) and len(m.monitor_.history) == 2
