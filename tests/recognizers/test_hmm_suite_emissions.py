"""Gaussian, full-covariance and mixture emissions: brute force, M-step, degenerate states."""
import itertools

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from recognizers.modelling.hmm import GMMHMM, GaussianHMM
from recognizers.modelling.emissions import (
    DiagGaussianEmissions,
    FullGaussianEmissions,
    GaussianPrior,
    GMMEmissions,
    GMMPrior,
)


def spd(rng, K, D):
    L = rng.normal(size=(K, D, D))
    return L @ np.swapaxes(L, 1, 2) + 0.5 * np.eye(D)


def oracle_loglik(kind, params, X):
    """log p(x_t | k) from scipy.stats, independent of our kernels."""
    K = params["means"].shape[0]
    out = np.empty((len(X), K))
    for k in range(K):
        if kind == "diag":
            out[:, k] = multivariate_normal(params["means"][k],
                                            np.diag(params["covars"][k])).logpdf(X)
        elif kind == "full":
            out[:, k] = multivariate_normal(params["means"][k], params["covars"][k]).logpdf(X)
        else:
            comps = [np.log(params["weights"][k, m]) + multivariate_normal(
                params["means"][k, m], np.diag(params["covars"][k, m])).logpdf(X)
                for m in range(params["weights"].shape[1])]
            out[:, k] = logsumexp(np.array(comps), axis=0)
    return out.reshape(len(X), K)


def brute(pi, A, ll):
    T, K = ll.shape
    paths = list(itertools.product(range(K), repeat=T))
    lp, lA = np.log(pi), np.log(A)
    scores = np.array([lp[p[0]] + ll[0, p[0]] + sum(lA[p[t - 1], p[t]] + ll[t, p[t]]
                                                   for t in range(1, T)) for p in paths])
    logZ = logsumexp(scores)
    w = np.exp(scores - logZ)
    gamma = np.zeros((T, K))
    for p, wi in zip(paths, w):
        gamma[np.arange(T), p] += wi
    return logZ, gamma, np.array(paths[int(np.argmax(scores))]), scores.max()


def make_model(kind, K, D, rng):
    pi = rng.dirichlet(np.ones(K))
    A = rng.dirichlet(np.ones(K), size=K)
    if kind == "gmm":
        params = dict(weights=rng.dirichlet(np.ones(2), size=K),
                      means=rng.normal(size=(K, 2, D)),
                      covars=rng.uniform(0.3, 2.0, size=(K, 2, D)))
        m = GMMHMM(K, n_mix=2)
        m.weights_, m.means_, m.covars_ = params["weights"], params["means"], params["covars"]
    else:
        params = dict(means=rng.normal(size=(K, D)),
                      covars=rng.uniform(0.3, 2.0, size=(K, D)) if kind == "diag"
                      else spd(rng, K, D))
        m = GaussianHMM(K, covariance_type=kind)
        m.means_, m.covars_ = params["means"], params["covars"]
    m.startprob_, m.transmat_ = pi, A
    return m, pi, A, params


@pytest.mark.parametrize("kind", ["diag", "full", "gmm"])
@pytest.mark.parametrize("T,K", [(1, 1), (2, 3), (4, 2), (5, 3), (6, 2), (6, 3)])
def test_new_emission_models_match_brute_force(kind, T, K):
    rng = np.random.default_rng(100 * ["diag", "full", "gmm"].index(kind) + 10 * T + K)
    m, pi, A, params = make_model(kind, K, 2, rng)
    X = rng.normal(scale=1.5, size=(T, 2))
    ll = oracle_loglik(kind, params, X)
    np.testing.assert_allclose(m._compute_log_likelihood(X), ll, rtol=1e-12, atol=1e-12)
    logZ, gamma, path, vscore = brute(pi, A, ll)
    assert m.score(X) == pytest.approx(logZ, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(m.predict_proba(X), gamma, atol=1e-12)
    score, vpath = m.decode(X)
    np.testing.assert_array_equal(vpath, path)
    assert score == pytest.approx(vscore, rel=1e-12, abs=1e-12)
    logprob, post = m.score_samples(X)
    assert logprob == pytest.approx(logZ, rel=1e-12, abs=1e-12)
    map_lp, map_path = m.decode(X, algorithm="map")
    np.testing.assert_array_equal(map_path, gamma.argmax(axis=1))


@pytest.mark.parametrize("full", [False, True])
def test_gaussian_m_step_is_the_weighted_estimate(full):
    rng = np.random.default_rng(3)
    K, D, T = 3, 2, 400
    X = rng.normal(size=(T, D)) * [1.0, 3.0] + [1.0, -2.0]
    post = rng.dirichlet(np.ones(K), size=T)
    em = (FullGaussianEmissions(np.zeros((K, D)), np.tile(np.eye(D), (K, 1, 1))) if full
          else DiagGaussianEmissions(np.zeros((K, D)), np.ones((K, D))))
    stats = em.init_stats()
    em.accumulate(stats, X[:150], post[:150])
    em.accumulate(stats, X[150:], post[150:])  # accumulation is additive
    new = em.m_step(stats, GaussianPrior(min_covar=1e-6, covars_prior=0.0))
    for k in range(K):
        w = post[:, k]
        mu = (w[:, None] * X).sum(0) / w.sum()
        cov = ((X - mu).T * w) @ (X - mu) / w.sum()
        np.testing.assert_allclose(new.means[k], mu, rtol=1e-12)
        np.testing.assert_allclose(new.covars[k], cov if full else np.diag(cov), rtol=1e-10)


@pytest.mark.parametrize("full", [False, True])
def test_map_m_step_maximises_q_plus_log_prior(full):
    # Perturbing the M-step's answer never increases Q(theta) + log prior(theta).
    rng = np.random.default_rng(4)
    K, D, T = 2, 2, 60
    X = rng.normal(size=(T, D))
    post = rng.dirichlet(np.ones(K), size=T)
    prior = GaussianPrior(min_covar=1e-3, means_prior=0.5, means_weight=2.0,
                          covars_prior=0.3, covars_weight=4.0)
    cls = FullGaussianEmissions if full else DiagGaussianEmissions
    start = cls(np.zeros((K, D)), np.tile(np.eye(D), (K, 1, 1)) if full else np.ones((K, D)))
    stats = start.init_stats()
    start.accumulate(stats, X, post)
    best = start.m_step(stats, prior)

    def objective(em):
        return float((post * em.log_likelihood(X)).sum()) + em.log_prior(prior)

    base = objective(best)
    for _ in range(30):
        dm = 0.05 * rng.normal(size=best.means.shape)
        if full:
            E = 0.05 * rng.normal(size=(K, D, D))
            cov = best.covars + E @ np.swapaxes(E, 1, 2) * rng.choice([-0.5, 1.0])
            cov = 0.5 * (cov + np.swapaxes(cov, 1, 2))
            if np.any(np.linalg.eigvalsh(cov) <= 0):
                continue
        else:
            cov = best.covars * np.exp(0.1 * rng.normal(size=best.covars.shape))
        assert objective(cls(best.means + dm, cov)) <= base + 1e-9


def test_empty_state_keeps_its_parameters_and_floors_hold():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(50, 2))
    post = np.zeros((50, 3))
    post[:, 0] = 1.0
    post[:25, 0], post[:25, 1] = 0.0, 1.0
    X[:25] = 7.0  # state 1 sees one repeated point: zero variance
    for em in (DiagGaussianEmissions(np.full((3, 2), 9.0), np.full((3, 2), 4.0)),
               FullGaussianEmissions(np.full((3, 2), 9.0), np.tile(4.0 * np.eye(2), (3, 1, 1)))):
        stats = em.init_stats()
        em.accumulate(stats, X, post)
        new = em.m_step(stats, GaussianPrior(min_covar=1e-3, covars_prior=0.0))
        assert np.isfinite(new.means).all() and np.isfinite(new.covars).all()
        np.testing.assert_array_equal(new.means[2], em.means[2])  # empty: unchanged
        np.testing.assert_array_equal(new.covars[2], em.covars[2])
        np.testing.assert_allclose(new.means[1], [7.0, 7.0])
        var1 = new.covars[1] if new.covars.ndim == 2 else np.linalg.eigvalsh(new.covars[1])
        np.testing.assert_allclose(var1, 1e-3, rtol=1e-9)  # floored, not 0
        assert np.isfinite(new.log_likelihood(X)).all()


def test_gmm_accumulate_and_m_step_match_direct_responsibilities():
    rng = np.random.default_rng(6)
    K, M, D, T = 2, 3, 2, 200
    w = rng.dirichlet(np.ones(M), size=K)
    means = rng.normal(size=(K, M, D)) * 2
    cov = rng.uniform(0.5, 1.5, size=(K, M, D))
    em = GMMEmissions(w, means, cov, "diag")
    X = rng.normal(size=(T, D)) * 2
    post = rng.dirichlet(np.ones(K), size=T)
    stats = em.init_stats()
    em.accumulate(stats, X, post)
    comp = np.stack([[np.log(w[k, m]) + multivariate_normal(means[k, m], np.diag(cov[k, m]))
                      .logpdf(X) for m in range(M)] for k in range(K)])  # (K, M, T)
    resp = post.T[:, None, :] * np.exp(comp - logsumexp(comp, axis=1, keepdims=True))
    np.testing.assert_allclose(stats.mix, resp.sum(-1), rtol=1e-10)
    np.testing.assert_allclose(stats.obs, np.einsum("kmt,td->kmd", resp, X), rtol=1e-10)
    new = em.m_step(stats, GMMPrior(gaussian=GaussianPrior(min_covar=1e-9, covars_prior=0.0)))
    np.testing.assert_allclose(new.weights, resp.sum(-1) / resp.sum((1, 2))[:, None],
                               rtol=1e-10)
    mu = np.einsum("kmt,td->kmd", resp, X) / resp.sum(-1)[..., None]
    np.testing.assert_allclose(new.means, mu, rtol=1e-10)
    var = np.einsum("kmt,kmtd->kmd", resp, (X[None, None] - mu[:, :, None]) ** 2) \
        / resp.sum(-1)[..., None]
    np.testing.assert_allclose(new.covars, var, rtol=1e-9)


def test_gmm_empty_mixture_component_gives_no_nan():
    rng = np.random.default_rng(7)
    em = GMMEmissions([[0.5, 0.5]], [[[0.0], [1e6]]], [[[1.0], [1.0]]], "diag")
    X = rng.normal(size=(100, 1))
    stats = em.init_stats()
    em.accumulate(stats, X, np.ones((100, 1)))
    new = em.m_step(stats)
    assert new.weights[0, 1] == 0.0  # never responsible
    assert np.isfinite(new.means).all() and np.isfinite(new.covars).all()
    assert np.isfinite(new.log_likelihood(X)).all()


def test_sampling_moments():
    rng = np.random.default_rng(8)
    full = FullGaussianEmissions([[1.0, -1.0]], [[[2.0, 0.6], [0.6, 1.0]]])
    x = full.sample(np.zeros(100000, dtype=int), rng)
    np.testing.assert_allclose(x.mean(0), [1.0, -1.0], atol=0.02)
    np.testing.assert_allclose(np.cov(x.T), [[2.0, 0.6], [0.6, 1.0]], atol=0.03)
    gmm = GMMEmissions([[0.25, 0.75]], [[[-5.0], [5.0]]], [[[1.0], [1.0]]])
    y = gmm.sample(np.zeros(40000, dtype=int), rng)
    assert np.mean(y > 0) == pytest.approx(0.75, abs=0.01)


@pytest.mark.parametrize("bad,match", [
    (dict(means=np.zeros((2, 2)), covars=np.zeros((2, 2))), "positive"),
    (dict(means=np.zeros((2, 2)), covars=np.ones((2, 3))), "shape"),
    (dict(means=np.zeros(2), covars=np.ones(2)), "shape"),
])
def test_invalid_gaussian_parameters(bad, match):
    with pytest.raises(ValueError, match=match):
        DiagGaussianEmissions(**bad)
    with pytest.raises(ValueError, match="positive definite"):
        FullGaussianEmissions(np.zeros((1, 2)), [[[1.0, 2.0], [2.0, 1.0]]])
    with pytest.raises(ValueError, match="sum to 1"):
        GMMEmissions([[0.5, 0.6]], np.zeros((1, 2, 1)), np.ones((1, 2, 1)))
    em = DiagGaussianEmissions(np.zeros((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="NaN"):
        em.log_likelihood([[np.nan, 0.0]])
    with pytest.raises(ValueError, match="features"):
        em.log_likelihood(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="numeric"):
        em.log_likelihood(np.array([["a", "b"]]))
