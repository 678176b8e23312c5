"""Harmoniums (paper 003) against exact enumeration, quadrature and closed forms."""
import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit, logsumexp
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from recognizers.modelling import BayesianHarmonium, Harmonium
from recognizers.modelling.harmonium import harmonium_core as core


def _problem(M=5, J=2, scale=0.6, seed=0):
    rng = np.random.default_rng(seed)
    return scale * rng.standard_normal((M, J)), 0.5 * rng.standard_normal(M)


def _exact_samples(W, theta, n, rng):
    S = core.enumerate_binary(W.shape[0])
    p = np.exp(core.exact_log_prob(S, W, theta))
    return S[rng.choice(len(S), size=n, p=p / p.sum())]


# ----------------------------------------------------------------- partition function
def test_log_partition_matches_quadrature_over_hidden_unit():
    # J = 1: Z_x = int N(h; 0, 1) prod_i (1 + exp(theta_i + W_i h)) dh  (appendix eq. 35)
    W, theta = _problem(M=6, J=1)
    f = lambda h: np.exp(-0.5 * h * h) / np.sqrt(2 * np.pi) * np.prod(1 + np.exp(theta + W[:, 0] * h))
    val, _ = integrate.quad(f, -12, 12, epsabs=0, epsrel=1e-11)
    assert core.exact_log_partition(W, theta) == pytest.approx(np.log(val), abs=1e-9)


def test_exact_probabilities_sum_to_one_and_match_brute_force_ratio():
    W, theta = _problem(M=7, J=3)
    S = core.enumerate_binary(7)
    lp = core.exact_log_prob(S, W, theta)
    assert np.exp(logsumexp(lp)) == pytest.approx(1.0, abs=1e-12)
    # ratio of two states straight from eq. 33
    a, b = S[5], S[100]
    expect = theta @ (a - b) + 0.5 * (a @ W @ W.T @ a - b @ W @ W.T @ b)
    assert lp[5] - lp[100] == pytest.approx(expect, abs=1e-12)


def test_grad_log_partition_matches_finite_differences():
    W, theta = _problem(M=6, J=2)
    gW, gt = core.exact_grad_log_partition(W, theta)
    h = 1e-6
    for i, j in [(0, 0), (3, 1), (5, 0)]:
        Wp, Wm = W.copy(), W.copy()
        Wp[i, j] += h
        Wm[i, j] -= h
        fd = (core.exact_log_partition(Wp, theta) - core.exact_log_partition(Wm, theta)) / (2 * h)
        assert gW[i, j] == pytest.approx(fd, abs=1e-6)
    tp = theta.copy()
    tp[2] += h
    tm = theta.copy()
    tm[2] -= h
    fd = (core.exact_log_partition(W, tp) - core.exact_log_partition(W, tm)) / (2 * h)
    assert gt[2] == pytest.approx(fd, abs=1e-6)


def test_dual_wing_density_integrates_to_one():
    rng = np.random.default_rng(1)
    W = 0.4 * rng.standard_normal((3, 2))       # 2 Bernoulli units, 1 Gaussian unit
    theta = np.array([0.3, -0.2, 0.5])
    gauss = np.array([False, False, True])
    total = 0.0
    for x in core.enumerate_binary(2):
        f = lambda z: np.exp(core.exact_log_prob(np.array([[x[0], x[1], z]]), W, theta, gauss)[0])
        total += integrate.quad(f, -15, 15, epsabs=0, epsrel=1e-11)[0]
    assert total == pytest.approx(1.0, abs=1e-9)


def test_dual_wing_rejects_unnormalisable_gaussian_wing():
    W = np.array([[0.1], [1.5]])
    with pytest.raises(ValueError, match="normalisable"):
        core.exact_log_partition(W, np.zeros(2), np.array([False, True]))


def test_appendix_identity_35_by_monte_carlo():
    W, theta = _problem(M=8, J=2, scale=0.4)
    rng = np.random.default_rng(2)
    n = 200_000
    H = rng.standard_normal((n, 2))
    vals = np.exp(np.logaddexp(0, H @ W.T + theta).sum(axis=1))
    Z = np.exp(core.exact_log_partition(W, theta))
    se = vals.std() / np.sqrt(n)
    assert abs(vals.mean() - Z) < 5 * se
    assert core.log_partition_mc_identity(W, theta, n, rng) == pytest.approx(np.log(Z), abs=5 * se / Z + 1e-3)


# ----------------------------------------------------------------- brief sampling (Fig. 4)
def _cd_estimates(X, W, theta, l, rng, n_batches):
    """n_batches independent CD-l estimates of grad_W log Z, each over the rows of X."""
    return np.stack([core.cd_negative_phase(X, W, theta, None, l, rng)[0] / len(X) for _ in range(n_batches)])


def test_cd_estimate_is_unbiased_when_the_data_come_from_the_model():
    # a Gibbs kernel leaves p(x | W) invariant: started at exact samples, every l is unbiased
    W, theta = _problem(M=8, J=2, scale=0.5, seed=3)
    rng = np.random.default_rng(4)
    exact, _ = core.exact_grad_log_partition(W, theta)
    X = _exact_samples(W, theta, 4000, rng)
    for l in (1, 3):
        est = _cd_estimates(X, W, theta, l, rng, 20)
        # data-sample noise of X itself is part of the spread: compare with the exact
        # expectation over X of the same estimator, which is E_p[x x^T W]
        err = np.abs(est.mean(axis=0) - exact)
        se = est.std(axis=0, ddof=1) / np.sqrt(len(est)) + np.abs(X.T @ (X @ W) / len(X) - exact)
        assert np.all(err < 5 * se + 0.02)


def test_cd_bias_shrinks_with_the_number_of_gibbs_steps():
    # data from another distribution (independent units): CD-l is biased towards the
    # data and the bias decays as l grows (the paper's Fig. 4 setting, l = 1..5)
    W, theta = _problem(M=10, J=2, scale=0.7, seed=5)
    rng = np.random.default_rng(6)
    exact, _ = core.exact_grad_log_partition(W, theta)
    X = (rng.random((3000, 10)) < 0.5).astype(float)
    bias, var = [], []
    for l in range(1, 6):
        est = _cd_estimates(X, W, theta, l, rng, 16)
        bias.append(np.linalg.norm(est.mean(axis=0) - exact))
        var.append(est.var(axis=0, ddof=1).sum())
    # standard error of each bias norm: sqrt(total variance / batches)
    se = np.sqrt(np.array(var) / 16)
    assert bias[0] - bias[4] > 5 * (se[0] + se[4])
    assert bias[0] > bias[2] > bias[4]


# ----------------------------------------------------------------- Langevin and MCEM
def test_langevin_without_data_samples_the_prior():
    rng = np.random.default_rng(7)
    D, J = 4, 500
    mu = np.array([0.0, 0.5, -1.0, 2.0])
    sigma = np.array([0.1, 0.3, 1.0, 0.5])
    eps2 = 0.01 * sigma ** 2
    W = np.zeros((D, J))
    draws = []
    for t in range(3000):
        W, g = core.langevin_step(W, None, None, None, mu, sigma, eps2, 1, rng, use_data=False)
        if t >= 1000 and t % 20 == 0:
            draws.append(W.copy())
    S = np.stack(draws)                                    # (100, D, J)
    assert np.all(g == 0)
    m = S.mean(axis=(0, 2))
    s = S.std(axis=(0, 2))
    # discretised OU: stationary variance sigma^2 / (1 - eps^2 / (4 sigma^2)), 0.25% above sigma^2
    assert np.allclose(m, mu, atol=0.05 * sigma)
    assert np.allclose(s, sigma, rtol=0.03)


def test_mcem_m_step_is_eqs_24_25():
    rng = np.random.default_rng(8)
    S = rng.standard_normal((7, 3, 4))
    mu, sigma = core.mcem_m_step(S)
    for i in range(3):
        vals = S[:, i, :].ravel()
        assert mu[i] == pytest.approx(vals.mean())
        assert sigma[i] == pytest.approx(np.sqrt(((vals - vals.mean()) ** 2).sum() / (vals.size - 1)))
    mu0, sigma0 = core.mle_prior_init(S[0])
    assert np.allclose(mu0, S[0].mean(axis=1)) and np.allclose(sigma0, S[0].std(axis=1, ddof=1))


def test_pooled_mcem_m_step_shares_one_mean_and_scale():
    rng = np.random.default_rng(8)
    S = rng.standard_normal((7, 3, 4)) + np.array([0.0, 1.0, 2.0])[:, None]
    mu, sigma = core.mcem_m_step(S, "all")
    assert mu.shape == sigma.shape == (3,)
    np.testing.assert_allclose(mu, S.mean())
    np.testing.assert_allclose(sigma, S.std(ddof=1))


def test_mcem_per_hidden_unit_is_each_columns_sample_mean_and_sd():
    # brute force: loop over the hidden units, pool the column's entries of every sample
    rng = np.random.default_rng(4)
    S = rng.standard_normal((5, 3, 4)) * np.array([0.1, 0.5, 1.0, 2.0]) + np.arange(4)
    mu, sigma = core.mcem_m_step(S, "column")
    assert mu.shape == sigma.shape == (3, 4)
    for j in range(4):
        entries = [S[k, i, j] for k in range(5) for i in range(3)]
        np.testing.assert_allclose(mu[:, j], np.mean(entries))
        np.testing.assert_allclose(sigma[:, j], np.std(entries, ddof=1))


def test_the_default_prior_is_learnt_per_hidden_unit():
    # prior_sharing="column" (the default): one mu_j, sigma_j per hidden unit, the same in
    # every row, re-estimated by every MCEM round; a chain started from them (the
    # Langevin step takes per-entry hyper-parameters) runs without diverging
    rng = np.random.default_rng(12)
    X = (rng.random((60, 6)) < 0.5).astype(float)
    b = BayesianHarmonium(2, n_burn_in=10, n_em_iter=3, em_samples=4, n_samples=4,
                          ml_n_iter=10, random_state=0).fit(X)
    assert b.prior_sharing == "column" and len(b.prior_history_) == 3
    for mu, sigma in b.prior_history_:
        assert mu.shape == sigma.shape == (6, 2)
        assert np.ptp(mu, axis=0).max() == 0 and np.ptp(sigma, axis=0).max() == 0
        assert sigma.min() > 0
    assert np.all(np.isfinite(b.components_))


def test_pooled_prior_is_learnt_and_shared_by_every_entry():
    # prior_sharing="all": one mu, sigma for the whole coupling, re-estimated by every
    # MCEM round from the chain's samples.
    rng = np.random.default_rng(12)
    X = (rng.random((60, 6)) < 0.5).astype(float)
    b = BayesianHarmonium(2, n_burn_in=10, n_em_iter=3, em_samples=4, n_samples=4,
                          ml_n_iter=10, prior_sharing="all", random_state=0).fit(X)
    assert len(b.prior_history_) == 3
    for mu, sigma in b.prior_history_:
        assert np.ptp(mu) == 0 and np.ptp(sigma) == 0 and sigma[0] > 0
    assert not np.allclose(b.prior_std_, 0.1)             # moved from the starting value


def test_mcem_recovers_the_prior_scale_from_data():
    # W_ij ~ N(0, sigma_i^2) with small and large sigma rows; exact data, theta = 0 known.
    # The likelihood sees only V = W W^T (rotation invariance), so what MCEM can recover
    # is mu ~ 0 and the per-row scale (||W_i||^2 / J = mu_i^2 + sigma_i^2).
    rng = np.random.default_rng(3)
    M, J = 6, 8
    sg = np.array([0.1, 0.1, 0.1, 0.4, 0.4, 0.4])
    W = sg[:, None] * rng.standard_normal((M, J))
    X = _exact_samples(W, np.zeros(M), 3000, rng)
    b = BayesianHarmonium(J, fit_visible_bias=False, init="ml", ml_learning_rate=0.1, ml_n_iter=400,
                          n_burn_in=400, n_em_iter=30, em_samples=10, n_samples=20, step_size=1.0,
                          prior_sharing="row", random_state=0).fit(X)
    assert len(b.prior_history_) == 30
    # rotation-invariant per-row scale sqrt(mu_i^2 + sigma_i^2), averaged over each group
    # (checked over 4 data seeds x 2 chain seeds: small 0.065-0.13, large 0.28-0.39)
    rms = np.sqrt(b.prior_mean_ ** 2 + b.prior_std_ ** 2)
    small, large = rms[:3].mean(), rms[3:].mean()
    assert 0.05 < small < 0.16
    assert 0.25 < large < 0.5
    assert large > 2.5 * small


# ----------------------------------------------------------------- estimators
def test_ml_fit_improves_exact_likelihood_over_independent_units():
    rng = np.random.default_rng(9)
    W = np.zeros((8, 2))
    W[:4, 0] = 0.9
    W[4:, 1] = 0.9
    theta = -0.8 * np.ones(8)
    X = _exact_samples(W, theta, 2000, rng)
    Xtest = _exact_samples(W, theta, 2000, rng)
    h = Harmonium(2, learning_rate=0.05, n_iter=100, batch_size=50, random_state=0).fit(X)
    p = np.clip(X.mean(axis=0), 1e-3, 1 - 1e-3)
    indep = (Xtest * np.log(p) + (1 - Xtest) * np.log(1 - p)).sum(axis=1).mean()
    truth = core.exact_log_prob(Xtest, W, theta).mean()
    assert h.score(Xtest) > indep + 0.5 * (truth - indep)
    assert np.exp(logsumexp(h.score_samples(core.enumerate_binary(8)))) == pytest.approx(1.0)


def test_bayesian_projection_is_one_averaged_matrix_and_posterior_predictive_is_exact():
    rng = np.random.default_rng(10)
    X = (rng.random((80, 6)) < 0.4).astype(float)
    b = BayesianHarmonium(3, n_burn_in=20, n_samples=6, n_em_iter=2, em_samples=3, ml_n_iter=20,
                          random_state=0).fit(X)
    assert b.coupling_samples_.shape == (6, 3, 6)
    proj = np.mean([X @ S.T for S in b.coupling_samples_], axis=0)   # eq. 22 sample by sample
    assert np.allclose(b.transform(X), proj)
    assert np.allclose(b.coupling_gram_, np.mean([S.T @ S for S in b.coupling_samples_], axis=0))
    S = core.enumerate_binary(6)
    assert np.exp(logsumexp(b.score_samples(S))) == pytest.approx(1.0)
    manual = logsumexp([core.exact_log_prob(X[:3], Wk.T, b.intercept_visible_) for Wk in b.coupling_samples_],
                       axis=0) - np.log(6)
    assert np.allclose(b.score_samples(X[:3]), manual)
    assert len(b.trace_) == 20 + 5 * (2 * 3 + 6)


def test_dual_wing_fit_standardises_and_scores_a_density():
    rng = np.random.default_rng(11)
    N = 300
    h = rng.standard_normal(N)
    x = (rng.random((N, 3)) < expit(1.5 * h[:, None])).astype(float)
    z = 5.0 + 2.0 * (0.8 * h[:, None] + 0.6 * rng.standard_normal((N, 2)))
    X = np.hstack([x, z])
    for est in (Harmonium(2, learning_rate=0.05, n_iter=200, gaussian_columns=[3, 4], random_state=0),
                BayesianHarmonium(2, gaussian_columns=[3, 4], n_burn_in=50, n_samples=10, n_em_iter=2,
                                  em_samples=3, ml_learning_rate=0.05, ml_n_iter=200, random_state=0)):
        est.fit(X)
        assert np.allclose(est.gaussian_mean_, z.mean(axis=0))
        Wz = est.components_.T[3:]
        assert np.linalg.svd(Wz, compute_uv=False).max() <= 0.95 + 1e-9
        # the density in the original units integrates to one: shift the grid with the data
        assert np.isfinite(est.score(X))
        T = est.transform(X)
        assert abs(np.corrcoef(T[:, np.argmax(np.abs(np.corrcoef(T.T, h)[-1, :2]))], h)[0, 1]) > 0.5


def test_clone_pipeline_and_params():
    rng = np.random.default_rng(12)
    X = (rng.random((60, 8)) < 0.5).astype(float)
    y = X[:, 0].astype(int)
    for est in (Harmonium(3, n_iter=5), BayesianHarmonium(3, n_burn_in=5, n_samples=3, n_em_iter=1,
                                                          em_samples=2, ml_n_iter=5)):
        c = clone(est)
        assert c.get_params() == est.get_params()
        pipe = make_pipeline(c, LogisticRegression()).fit(X, y)
        assert pipe.predict(X).shape == (60,)
        assert list(c.get_feature_names_out()) == [f"{type(c).__name__.lower()}{j}" for j in range(3)]


@pytest.mark.parametrize("est, X, msg", [
    (Harmonium(2), np.array([[0, 1], [2, 0], [1, 1]]), "only 0 and 1"),
    (Harmonium(2), np.array([[0, np.nan], [1, 0]]), "NaN"),
    (Harmonium(2), np.array([[0, 1]]), "at least 2 samples"),
    (Harmonium(0), np.eye(3), "n_components"),
    (Harmonium(2, gaussian_columns=[5]), np.eye(3), "gaussian_columns"),
    (BayesianHarmonium(2, prior_std=[0.1, 0.1]), np.eye(3), "prior_std"),
    (BayesianHarmonium(2, init="exact"), np.eye(3), "init"),
])
def test_bad_input_raises_value_error(est, X, msg):
    with pytest.raises(ValueError, match=msg):
        est.fit(X)


def test_transform_and_score_refuse_wrong_shapes_and_large_models():
    X = np.eye(4)
    h = Harmonium(2, n_iter=2).fit(X)
    with pytest.raises(ValueError, match="4"):
        h.transform(np.eye(5))
    big = Harmonium(2, n_iter=1).fit((np.random.default_rng(0).random((5, 25)) < 0.5).astype(float))
    with pytest.raises(ValueError, match="exact only up to"):
        big.score_samples(np.zeros((1, 25)))


def test_langevin_divergence_is_reported():
    X = (np.random.default_rng(0).random((20, 30)) < 0.5).astype(float)
    with pytest.raises(ValueError, match="diverged"):
        BayesianHarmonium(3, step_size=500.0, init="random", init_scale=0.5, fit_prior=False, prior_std=10.0,
                          n_burn_in=200, random_state=0).fit(X)
