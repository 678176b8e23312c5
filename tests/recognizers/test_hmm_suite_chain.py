"""The scaled forward-backward path of the chain core, against brute force and log space."""
import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from recognizers.modelling import chain


def brute(log_pi, log_A, log_lik):
    T, K = log_lik.shape
    paths = list(itertools.product(range(K), repeat=T))
    scores = np.array([log_pi[p[0]] + log_lik[0, p[0]]
                       + sum(log_A[p[t - 1], p[t]] + log_lik[t, p[t]] for t in range(1, T))
                       for p in paths])
    logZ = logsumexp(scores)
    w = np.exp(scores - logZ)
    gamma = np.zeros((T, K))
    xi = np.zeros((K, K))
    for p, wi in zip(paths, w):
        gamma[np.arange(T), p] += wi
        for t in range(1, T):
            xi[p[t - 1], p[t]] += wi
    return logZ, gamma, xi


CASES = [(T, K, seed) for T in range(1, 7) for K in (1, 2, 3) for seed in range(2)]


@pytest.mark.parametrize("T,K,seed", CASES)
def test_scaled_smoother_itself_matches_brute_force(T, K, seed):
    # Call the per-sequence scaled kernel directly: it must not have needed the
    # exact fallback (NaN) on ordinary inputs, and must be right on its own.
    rng = np.random.default_rng(1000 + 10 * T + K + seed)
    log_pi = np.log(rng.dirichlet(np.ones(K)))
    log_A = np.log(rng.dirichlet(np.ones(K), size=K))
    log_lik = 3.0 * rng.normal(size=(T, K))
    logZ, gamma, xi = brute(log_pi, log_A, log_lik)
    expA, expAT, gmax = chain._transition_scaled(log_A)
    post = np.empty((T, K))
    xi_seq = np.zeros((K, K))
    v = chain._smooth_scaled_seq(log_pi, expA, expAT, gmax, log_lik, 0, T, np.empty((T, K)),
                                 post, xi_seq, np.empty(K), np.empty(K), np.empty(K))
    assert v == pytest.approx(logZ, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(post, gamma, atol=1e-12)
    np.testing.assert_allclose(expA * xi_seq, xi, atol=1e-12)
    ll = chain._loglik_scaled_seq(log_pi, expAT, gmax, log_lik, 0, T, np.empty(K),
                                  np.empty(K), np.empty(K))
    assert ll == pytest.approx(logZ, rel=1e-12, abs=1e-12)
    assert chain.log_likelihood(log_pi, log_A, log_lik) == pytest.approx(logZ, rel=1e-12,
                                                                         abs=1e-12)


def test_scaled_and_log_space_agree_on_long_ragged_sequences():
    rng = np.random.default_rng(0)
    K = 6
    log_pi = np.log(rng.dirichlet(np.ones(K)))
    A = rng.dirichlet(np.ones(K), size=K) + 5 * np.eye(K)
    log_A = np.log(A / A.sum(1, keepdims=True))
    lengths = [1, 700, 2, 1500, 37]
    log_lik = 20.0 * rng.normal(size=(sum(lengths), K))
    f = chain.forward(log_pi, log_A, log_lik, lengths)
    s = chain.smooth(log_pi, log_A, log_lik, lengths)
    assert s.loglik == pytest.approx(f.loglik, rel=1e-12)
    assert chain.log_likelihood(log_pi, log_A, log_lik, lengths) == pytest.approx(f.loglik,
                                                                                 rel=1e-12)
    # The log-space smoother on the same input (time-varying path = exact kernels).
    exact = chain.smooth(log_pi, np.broadcast_to(log_A, (len(log_lik), K, K)), log_lik, lengths)
    np.testing.assert_allclose(s.posterior, exact.posterior, atol=1e-11)
    np.testing.assert_allclose(s.trans_counts, exact.trans_counts, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(s.posterior.sum(axis=1), 1.0, atol=1e-12)


def test_out_buffer_is_filled_and_checked():
    rng = np.random.default_rng(1)
    log_pi, log_A = np.log([0.5, 0.5]), np.log([[0.9, 0.1], [0.2, 0.8]])
    ll = rng.normal(size=(10, 2))
    buf = np.full((10, 2), np.nan)
    s = chain.smooth(log_pi, log_A, ll, out=buf)
    assert s.posterior is buf
    np.testing.assert_array_equal(buf, chain.smooth(log_pi, log_A, ll).posterior)
    for bad in (np.empty((9, 2)), np.empty((10, 2), dtype=np.float32), np.empty((2, 10)).T):
        with pytest.raises(ValueError, match="out must"):
            chain.smooth(log_pi, log_A, ll, out=bad)
    with pytest.raises(ValueError, match="share memory"):
        chain.smooth(log_pi, log_A, ll, out=ll)


def test_sample_path_follows_the_chain():
    rng = np.random.default_rng(2)
    pi = np.array([0.2, 0.8])
    A = np.array([[0.9, 0.1], [0.3, 0.7]])
    z = chain.sample_path(pi, A, 200000, rng)
    counts = np.zeros((2, 2))
    np.add.at(counts, (z[:-1], z[1:]), 1)
    np.testing.assert_allclose(counts / counts.sum(1, keepdims=True), A, atol=0.01)
    firsts = [chain.sample_path(pi, A, 1, rng)[0] for _ in range(4000)]
    assert np.mean(firsts) == pytest.approx(0.8, abs=0.03)
    assert chain.sample_path(pi, A, 5, rng, first=0)[0] == 0
    assert chain.sample_path(pi, A, 0, rng).shape == (0,)
    with pytest.raises(ValueError):
        chain.sample_path(pi, A, 3, rng, first=2)
