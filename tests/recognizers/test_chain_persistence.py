"""Persistence-structured transitions: the O(K) kernels equal the dense ones."""
import numpy as np
import pytest

from recognizers.modelling import chain


def _persist(k, p):
    A = np.full((k, k), (1 - p) / (k - 1))
    np.fill_diagonal(A, p)
    with np.errstate(divide="ignore"):
        return np.log(A)


def _dense_viterbi(log_pi, log_A, log_lik, lengths=None):
    # A time-varying copy of the same matrix forces the dense kernel.
    T = log_lik.shape[0]
    return chain.viterbi(log_pi, np.broadcast_to(log_A, (T,) + log_A.shape).copy(), log_lik,
                         lengths)


def test_structure_detected_only_when_exact():
    assert chain.persistence_structure(_persist(4, 0.9)) is not None
    A = np.exp(_persist(4, 0.9))
    A[0, 1] += 1e-9
    assert chain.persistence_structure(np.log(A)) is None
    assert chain.persistence_structure(np.zeros((1, 1))) is None


@pytest.mark.parametrize("k,p", [(2, 0.7), (5, 0.95), (9, 0.2), (6, 1.0)])
def test_viterbi_and_loglik_match_dense(k, p):
    rng = np.random.default_rng(k)
    T = 400
    log_lik = rng.normal(scale=3.0, size=(T, k))
    log_lik[rng.random((T, k)) < 0.05] = -np.inf
    log_lik[:, 0] = np.maximum(log_lik[:, 0], -50.0)  # keep every step possible
    log_pi = np.log(rng.dirichlet(np.ones(k)))
    log_A = _persist(k, p)
    lengths = [150, 1, 249]
    got = chain.viterbi(log_pi, log_A, log_lik, lengths)
    ref = _dense_viterbi(log_pi, log_A, log_lik, lengths)
    np.testing.assert_array_equal(got.path, ref.path)
    assert got.score == ref.score
    ll = chain.log_likelihood(log_pi, log_A, log_lik, lengths)
    ll_ref = chain.forward(log_pi, log_A, log_lik, lengths).loglik
    assert abs(ll - ll_ref) <= 1e-12 * max(1.0, abs(ll_ref))


def test_viterbi_ties_go_to_lowest_index():
    k = 4
    log_lik = np.zeros((6, k))  # every path through uniform evidence ties
    log_A = np.log(np.full((k, k), 0.25))
    got = chain.viterbi(np.log(np.full(k, 0.25)), log_A, log_lik)
    ref = _dense_viterbi(np.log(np.full(k, 0.25)), log_A, log_lik)
    np.testing.assert_array_equal(got.path, ref.path)


def test_tiny_brute_force():
    import itertools
    rng = np.random.default_rng(0)
    k, T = 3, 5
    log_lik = rng.normal(size=(T, k))
    log_pi = np.log(np.array([0.5, 0.3, 0.2]))
    log_A = _persist(k, 0.8)
    scores = {}
    for path in itertools.product(range(k), repeat=T):
        s = log_pi[path[0]] + log_lik[0, path[0]]
        for t in range(1, T):
            s += log_A[path[t - 1], path[t]] + log_lik[t, path[t]]
        scores[path] = s
    best = max(scores, key=scores.get)
    got = chain.viterbi(log_pi, log_A, log_lik)
    assert tuple(got.path) == best
    assert np.isclose(got.score, scores[best], atol=1e-12)
    assert np.isclose(chain.log_likelihood(log_pi, log_A, log_lik),
                      np.logaddexp.reduce(list(scores.values())), atol=1e-12)
