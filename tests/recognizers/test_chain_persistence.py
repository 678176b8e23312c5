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


@pytest.fixture(autouse=True)
def _persistence_viterbi_for_every_k(monkeypatch):
    # chain.viterbi keeps the dense kernel below 12 states (faster there); test the
    # O(K) kernel at every size.
    monkeypatch.setattr(chain, "_VITERBI_PERSIST_MIN_K", 2)


def test_structure_detected_only_when_exact():
    assert chain.persistence_structure(_persist(4, 0.9)) is not None
    A = np.exp(_persist(4, 0.9))
    A[0, 1] += 1e-9
    assert chain.persistence_structure(np.log(A)) is None
    assert chain.persistence_structure(np.zeros((1, 1))) is None


@pytest.mark.parametrize("k,p", [(2, 0.7), (5, 0.95), (9, 0.2), (6, 1.0), (14, 0.9)])
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


def _dense_smooth(log_pi, log_A, log_lik, lengths=None):
    # The dense scaled kernel: the same matrix with one entry nudged out of structure
    # would change the answer, so force the dense path through the module's own
    # kernel instead.
    T, k = log_lik.shape
    offsets = chain.lengths_to_offsets(T, lengths)
    post = np.empty_like(log_lik)
    xi = np.zeros((k, k))
    ll = chain._smooth_scaled_kernel(log_pi, np.ascontiguousarray(log_A), log_lik, offsets,
                                     post, xi, np.empty_like(log_lik))
    return post, xi, ll


@pytest.mark.parametrize("k,p", [(2, 0.7), (5, 0.95), (9, 0.2), (6, 1.0), (4, 0.0)])
def test_smooth_matches_dense(k, p):
    rng = np.random.default_rng(10 + k)
    T = 400
    log_lik = rng.normal(scale=3.0, size=(T, k))
    log_lik[rng.random((T, k)) < 0.05] = -np.inf
    log_lik[:, 0] = np.maximum(log_lik[:, 0], -50.0)
    log_pi = np.log(rng.dirichlet(np.ones(k)))
    log_A = _persist(k, p)
    lengths = [150, 1, 0, 249]
    assert chain.persistence_structure(log_A) is not None
    got = chain.smooth(log_pi, log_A, log_lik, lengths)
    post, xi, ll = _dense_smooth(log_pi, log_A, log_lik, lengths)
    np.testing.assert_allclose(got.posterior, post, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.trans_counts, xi, rtol=1e-12, atol=1e-12)
    assert abs(got.loglik - ll) <= 1e-12 * max(1.0, abs(ll))
    # expected counts: one transition per step after each sequence's first
    assert abs(got.trans_counts.sum() - (149 + 248)) < 1e-9


def test_smooth_sequence_needing_exact_redo_matches_dense():
    """A move weight of exp(-800) underflows the scaled pass where the evidence
    forces a move: that sequence is redone by the exact log-space kernels, the
    other stays scaled, and posteriors and counts still equal the dense ones."""
    k = 3
    rng = np.random.default_rng(2)
    log_lik = rng.normal(size=(60, k))
    log_lik[:10, 1:] = -np.inf  # state 0 first ...
    log_lik[10:20, [0, 2]] = -np.inf  # ... then only state 1: one forced move
    log_A = np.full((k, k), -800.0)
    np.fill_diagonal(log_A, 0.0)
    log_pi = np.log(np.full(k, 1 / 3))
    lengths = [30, 30]
    T = log_lik.shape[0]
    scratch = [np.empty((T, k)) for _ in range(3)]
    seq = chain._smooth_persist_seq(log_pi, 1.0, 0.0, 0.0, log_lik, 0, 30, scratch[0],
                                    scratch[1], scratch[2], np.empty(k), np.empty(k))
    assert np.isnan(seq)  # the first sequence does take the exact path
    got = chain.smooth(log_pi, log_A, log_lik, lengths)
    post, xi, ll = _dense_smooth(log_pi, log_A, log_lik, lengths)
    np.testing.assert_allclose(got.posterior, post, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.trans_counts, xi, rtol=1e-12, atol=1e-12)
    assert abs(got.loglik - ll) <= 1e-12 * abs(ll)
    assert got.trans_counts[0, 1] > 0.99


@pytest.mark.parametrize("k,p", [(5, 0.95), (3, 0.0), (6, 1.0)])
def test_filter_step_matches_forward(k, p):
    rng = np.random.default_rng(20 + k)
    T = 300
    log_lik = rng.normal(scale=3.0, size=(T, k))
    log_lik[rng.random((T, k)) < 0.05] = -np.inf
    log_lik[:, 0] = np.maximum(log_lik[:, 0], -50.0)
    log_pi = np.log(rng.dirichlet(np.ones(k)))
    log_A = _persist(k, p)
    ok, stay, move = chain.persistence_params(log_A)
    assert ok and stay == log_A[0, 0] and move == log_A[0, 1]
    T3 = np.broadcast_to(log_A, (T, k, k)).copy()  # time-varying: the dense forward
    f = chain.forward(log_pi, T3, log_lik)
    prev, total = None, 0.0
    for t in range(T):
        r = chain.filter_step(prev, log_pi, log_A, log_lik[t])
        with np.errstate(invalid="ignore"):
            np.testing.assert_allclose(np.exp(r.log_alpha), np.exp(f.log_alpha[t]),
                                       rtol=0, atol=1e-12)
        prev, total = r.log_alpha, total + r.log_norm
    assert abs(total - f.loglik) <= 1e-12 * abs(f.loglik)
    nudged = log_A.copy()
    nudged[0, 1] = np.nextafter(nudged[0, 1], 0.0)
    assert not chain.persistence_params(nudged)[0]
