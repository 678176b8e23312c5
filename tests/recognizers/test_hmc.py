import numpy as np

from recognizers.modelling.hmc import hmc_sample


def test_hmc_recovers_gaussian_mean_and_covariance():
    mu = np.array([1.0, -2.0])
    S = np.array([[1.0, 0.6], [0.6, 0.5]])
    P = np.linalg.inv(S)

    def f(x):
        d = x - mu
        return -0.5 * d @ P @ d, -P @ d

    xs, acc = hmc_sample(f, np.zeros(2), 4000, step_size=0.2, n_leapfrog=10, rng=0, burn_in=100)
    assert acc > 0.6
    np.testing.assert_allclose(xs.mean(0), mu, atol=0.08)
    np.testing.assert_allclose(np.cov(xs.T), S, atol=0.08)
