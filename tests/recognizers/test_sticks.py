"""Stick-breaking utilities against closed forms, Monte Carlo and quadrature."""

import numpy as np
import pytest
from scipy import integrate, stats

from recognizers.modelling import sticks


def test_beta_expected_logs_closed_forms():
    e_v, e_1mv = sticks.beta_expected_logs([1.0, 1.0], [1.0, 5.0])
    np.testing.assert_allclose(e_v, [-1.0, -(1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5)], rtol=1e-12)
    np.testing.assert_allclose(e_1mv, [-1.0, -0.2], rtol=1e-12)
    # Under Beta(1, alpha): E[log(1 - v)] = -1/alpha for any alpha > 0.
    for alpha in (0.3, 2.5, 17.0):
        assert sticks.beta_expected_logs(1.0, alpha)[1] == pytest.approx(-1 / alpha, rel=1e-12)


def test_weights_sum_to_one_and_invert():
    rng = np.random.default_rng(0)
    v = rng.uniform(size=(4, 3, 7))
    pi = sticks.weights_from_sticks(v)
    assert pi.shape == (4, 3, 8)
    np.testing.assert_allclose(pi.sum(-1), 1.0, atol=1e-14)
    np.testing.assert_allclose(sticks.sticks_from_weights(pi), v, rtol=1e-10)
    # Literal definition.
    k = 5
    assert pi[1, 2, k] == pytest.approx(v[1, 2, k] * np.prod(1 - v[1, 2, :k]), rel=1e-14)


def test_expected_log_weights_against_monte_carlo():
    rng = np.random.default_rng(1)
    a = np.array([2.0, 1.5, 3.0])
    b = np.array([4.0, 2.0, 0.7])
    draws = rng.beta(a, b, size=(400_000, 3))
    pi = sticks.weights_from_sticks(draws)
    mc_log = np.log(pi).mean(0)
    np.testing.assert_allclose(sticks.expected_log_weights(a, b), mc_log, atol=5e-3)
    np.testing.assert_allclose(sticks.expected_weights(a, b), pi.mean(0), atol=2e-3)


def test_stick_posterior_matches_literal_loop():
    counts = np.array([[3.0, 0.0, 2.5, 1.0], [0.0, 0.0, 0.0, 0.0]])
    a, b = sticks.stick_posterior(counts, alpha=np.array([2.0, 0.5]))
    for row, alpha in zip(range(2), (2.0, 0.5)):
        for k in range(3):
            assert a[row, k] == 1.0 + counts[row, k]
            assert b[row, k] == pytest.approx(alpha + counts[row, k + 1:].sum())
    # Zero counts leave the prior Beta(1, alpha).
    np.testing.assert_array_equal(a[1], 1.0)
    np.testing.assert_array_equal(b[1], 0.5)


def test_kl_beta_against_quadrature():
    for a, b, a0, b0 in [(2.0, 3.0, 1.0, 1.0), (0.7, 5.0, 1.0, 4.0), (10.0, 2.0, 3.0, 3.0)]:
        q, p = stats.beta(a, b), stats.beta(a0, b0)
        exact, _ = integrate.quad(lambda x: q.pdf(x) * (q.logpdf(x) - p.logpdf(x)), 0, 1, limit=200)
        assert float(sticks.kl_beta(a, b, a0, b0)) == pytest.approx(exact, rel=1e-6, abs=1e-9)
    assert float(sticks.kl_beta(2.0, 3.0, 2.0, 3.0)) == pytest.approx(0.0, abs=1e-14)


def test_concentration_posterior():
    a, b = np.ones(4), np.full(4, 2.0)
    shape, rate = sticks.concentration_posterior(1000.0, 10.0, a, b)
    assert shape == 1004.0
    assert rate == pytest.approx(10.0 + 4 * 0.5)


def test_sample_sticks_and_n_used():
    pi = sticks.sample_sticks(1.0, 20, rng=3, size=(1000,))
    assert pi.shape == (1000, 20)
    np.testing.assert_allclose(pi.sum(-1), 1.0, atol=1e-12)
    # E[pi_1] = 1 / (1 + alpha) under GEM(alpha).
    assert pi[:, 0].mean() == pytest.approx(0.5, abs=0.03)
    assert sticks.n_used([0.5, 0.3, 0.195, 0.005], threshold=0.01) == 3
    assert sticks.n_used(np.zeros(3)) == 0


def test_bad_input():
    with pytest.raises(ValueError, match="positive"):
        sticks.beta_expected_logs([0.0], [1.0])
    with pytest.raises(ValueError, match="non-negative"):
        sticks.stick_posterior([1.0, -1.0], alpha=1.0)
    with pytest.raises(ValueError, match="two pieces"):
        sticks.stick_posterior([1.0], alpha=1.0)


def test_best_concentration_maximises_the_stick_terms_of_the_bound():
    # The stick terms of an ELBO with q(v) at its conjugate optimum, written out
    # (counts . E[log pi] - KL(q || Beta(1, alpha))), on a grid of alpha: the empirical
    # Bayes value beats every grid point, and it recovers the alpha that drew the counts.
    rng = np.random.default_rng(0)
    counts = np.array([rng.multinomial(40, sticks.sample_sticks(3.0, 6, rng))
                       for _ in range(300)], dtype=float)

    def stick_terms(alpha):
        a, b = sticks.stick_posterior(counts, alpha)
        return float(np.sum(counts * sticks.expected_log_weights(a, b))
                     - sticks.kl_beta(a, b, 1.0, alpha).sum())

    best = sticks.best_concentration(counts, current=1.0)
    grid = np.exp(np.linspace(np.log(0.05), np.log(50), 400))
    assert stick_terms(best) >= max(stick_terms(g) for g in grid) - 1e-6
    assert 2.4 < best < 3.6
    # from its own answer it finds nothing worse; the answer stays in [lower, upper]
    assert stick_terms(sticks.best_concentration(counts, current=best)) >= stick_terms(best)
    assert sticks.best_concentration(counts, current=best, upper=0.5) == 0.5
