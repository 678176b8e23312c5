"""Chain inference against brute-force enumeration of every state path."""
import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from recognizers.modelling import chain

NEG = -np.inf


def random_chain(rng, T, K, *, scale=1.0, sparse=False, time_varying=False):
    log_pi = np.log(rng.dirichlet(np.ones(K)))
    shape = (T, K, K) if time_varying else (K, K)
    log_A = np.log(rng.dirichlet(np.ones(K), size=shape[:-1]))
    log_lik = scale * rng.normal(size=(T, K))
    if sparse and K > 1:
        # Forbid some transitions, but keep the diagonal so paths exist.
        mask = rng.random(shape) < 0.3
        eye = np.broadcast_to(np.eye(K, dtype=bool), shape)
        log_A = np.where(mask & ~eye, NEG, log_A)
        log_pi[rng.integers(K)] = NEG if K > 1 else log_pi[0]
    return log_pi, log_A, log_lik


def A_at(log_A, t):
    return log_A[t] if log_A.ndim == 3 else log_A


def path_scores(log_pi, log_A, log_lik, T=None):
    """Joint log score of every path over the first T steps."""
    T = log_lik.shape[0] if T is None else T
    K = log_lik.shape[1]
    paths = list(itertools.product(range(K), repeat=T))
    scores = np.empty(len(paths))
    for n, p in enumerate(paths):
        s = log_pi[p[0]] + log_lik[0, p[0]]
        for t in range(1, T):
            s += A_at(log_A, t)[p[t - 1], p[t]] + log_lik[t, p[t]]
        scores[n] = s
    return paths, scores


def brute_force(log_pi, log_A, log_lik):
    T, K = log_lik.shape
    paths, scores = path_scores(log_pi, log_A, log_lik)
    logZ = logsumexp(scores)
    w = np.exp(scores - logZ)
    gamma = np.zeros((T, K))
    xi = np.zeros((K, K))
    for p, wi in zip(paths, w):
        for t in range(T):
            gamma[t, p[t]] += wi
        for t in range(1, T):
            xi[p[t - 1], p[t]] += wi
    filt = np.zeros((T, K))
    for t in range(T):
        pp, ss = path_scores(log_pi, log_A, log_lik, t + 1)
        for k in range(K):
            filt[t, k] = logsumexp([s for q, s in zip(pp, ss) if q[t] == k])
        filt[t] -= logsumexp(filt[t])
    beta = np.zeros((T, K))
    for t in range(T - 1):
        for i in range(K):
            vals = []
            for rest in itertools.product(range(K), repeat=T - 1 - t):
                q = (i,) + rest
                s = 0.0
                for u in range(1, len(q)):
                    s += A_at(log_A, t + u)[q[u - 1], q[u]] + log_lik[t + u, q[u]]
                vals.append(s)
            beta[t, i] = logsumexp(vals)
    best = int(np.argmax(scores))
    return dict(logZ=logZ, filt=filt, gamma=gamma, xi=xi, beta=beta,
                path=np.array(paths[best]), vscore=scores[best])


CASES = [(T, K, seed) for T in range(1, 7) for K in (1, 2, 3) for seed in (0, 1)
         if K ** T <= 729]


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("T,K,seed", CASES)
def test_all_quantities_match_brute_force(T, K, seed, sparse):
    rng = np.random.default_rng(100 * T + 10 * K + seed)
    log_pi, log_A, log_lik = random_chain(rng, T, K, scale=2.0, sparse=sparse)
    bf = brute_force(log_pi, log_A, log_lik)

    f = chain.forward(log_pi, log_A, log_lik)
    assert f.loglik == pytest.approx(bf["logZ"], rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(np.exp(f.log_alpha), np.exp(bf["filt"]), atol=1e-12)

    b = chain.backward(log_A, log_lik)
    np.testing.assert_allclose(b.log_beta + b.log_scale[:, None], bf["beta"], atol=1e-10)

    s = chain.smooth(log_pi, log_A, log_lik)
    assert s.loglik == pytest.approx(bf["logZ"], rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(s.posterior, bf["gamma"], atol=1e-12)
    np.testing.assert_allclose(s.trans_counts, bf["xi"], atol=1e-12)
    np.testing.assert_allclose(s.posterior.sum(axis=1), 1.0, atol=1e-12)

    v = chain.viterbi(log_pi, log_A, log_lik)
    np.testing.assert_array_equal(v.path, bf["path"])
    assert v.score == pytest.approx(bf["vscore"], rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("T,K", [(4, 2), (5, 3), (6, 2)])
def test_time_varying_transitions_match_brute_force(T, K):
    rng = np.random.default_rng(T * K)
    log_pi, log_A, log_lik = random_chain(rng, T, K, time_varying=True, sparse=True)
    bf = brute_force(log_pi, log_A, log_lik)
    s = chain.smooth(log_pi, log_A, log_lik)
    assert s.loglik == pytest.approx(bf["logZ"], rel=1e-12)
    np.testing.assert_allclose(s.posterior, bf["gamma"], atol=1e-12)
    np.testing.assert_allclose(s.trans_counts, bf["xi"], atol=1e-12)
    np.testing.assert_allclose(np.exp(chain.forward(log_pi, log_A, log_lik).log_alpha),
                               np.exp(bf["filt"]), atol=1e-12)
    v = chain.viterbi(log_pi, log_A, log_lik)
    np.testing.assert_array_equal(v.path, bf["path"])
    assert v.score == pytest.approx(bf["vscore"], rel=1e-12)


def test_unnormalised_crf_potentials_of_large_magnitude():
    # log-potentials far outside [-745, 0]: shifted exponentials would underflow
    # or overflow without the per-column shift and the exact fallback.
    rng = np.random.default_rng(7)
    T, K = 5, 3
    log_pi = 800.0 * rng.normal(size=K)
    log_A = 900.0 * rng.normal(size=(K, K))
    log_lik = 700.0 * rng.normal(size=(T, K))
    bf = brute_force(log_pi, log_A, log_lik)
    s = chain.smooth(log_pi, log_A, log_lik)
    assert s.loglik == pytest.approx(bf["logZ"], rel=1e-12)
    np.testing.assert_allclose(s.posterior, bf["gamma"], atol=1e-12)
    np.testing.assert_allclose(s.trans_counts, bf["xi"], atol=1e-12)
    assert chain.viterbi(log_pi, log_A, log_lik).score == pytest.approx(bf["vscore"], rel=1e-12)


def test_forced_switch_through_a_tiny_transition_is_exact():
    # The only path switches state through a transition of weight e^-1000;
    # its product with the filtered mass underflows in linear space.
    log_pi = np.array([0.0, NEG])
    log_A = np.array([[0.0, -1000.0], [-1000.0, 0.0]])
    log_lik = np.array([[0.0, NEG]] * 3 + [[NEG, 0.0]] * 3)
    f = chain.forward(log_pi, log_A, log_lik)
    assert f.loglik == pytest.approx(-1000.0, abs=1e-9)
    np.testing.assert_array_equal(np.exp(f.log_alpha).argmax(axis=1), [0, 0, 0, 1, 1, 1])
    s = chain.smooth(log_pi, log_A, log_lik)
    np.testing.assert_allclose(s.posterior, np.exp(f.log_alpha), atol=1e-15)
    np.testing.assert_allclose(s.trans_counts, [[2.0, 1.0], [0.0, 2.0]], atol=1e-12)
    v = chain.viterbi(log_pi, log_A, log_lik)
    np.testing.assert_array_equal(v.path, [0, 0, 0, 1, 1, 1])
    assert v.score == pytest.approx(-1000.0)


def test_impossible_observation_gives_no_nan():
    log_pi = np.log([0.5, 0.5])
    log_A = np.array([[0.0, NEG], [NEG, 0.0]])  # no switching at all
    log_lik = np.array([[0.0, NEG], [NEG, 0.0]])  # so this sequence is impossible
    f = chain.forward(log_pi, log_A, log_lik)
    assert f.loglik == NEG
    assert not np.isnan(f.log_alpha).any()
    # The impossible step keeps the prediction: still state 0.
    np.testing.assert_allclose(np.exp(f.log_alpha), [[1, 0], [1, 0]])
    s = chain.smooth(log_pi, log_A, log_lik)
    assert not np.isnan(s.posterior).any()
    np.testing.assert_allclose(s.posterior.sum(axis=1), 1.0)
    np.testing.assert_array_equal(s.trans_counts, np.zeros((2, 2)))
    assert chain.viterbi(log_pi, log_A, log_lik).score == NEG


def test_lengths_equal_separate_runs():
    rng = np.random.default_rng(3)
    K = 3
    log_pi, log_A, _ = random_chain(rng, 1, K)
    parts = [rng.normal(size=(n, K)) for n in (4, 1, 6)]
    cat = np.concatenate(parts)
    f = chain.forward(log_pi, log_A, cat, lengths=[4, 1, 6])
    s = chain.smooth(log_pi, log_A, cat, lengths=[4, 1, 6])
    v = chain.viterbi(log_pi, log_A, cat, lengths=[4, 1, 6])
    ones = [chain.forward(log_pi, log_A, p) for p in parts]
    smooths = [chain.smooth(log_pi, log_A, p) for p in parts]
    vits = [chain.viterbi(log_pi, log_A, p) for p in parts]
    np.testing.assert_array_equal(f.log_alpha, np.concatenate([o.log_alpha for o in ones]))
    assert f.loglik == pytest.approx(sum(o.loglik for o in ones), rel=1e-14)
    np.testing.assert_allclose(s.posterior, np.concatenate([o.posterior for o in smooths]),
                               atol=1e-14)
    np.testing.assert_allclose(s.trans_counts, sum(o.trans_counts for o in smooths), atol=1e-13)
    np.testing.assert_array_equal(v.path, np.concatenate([o.path for o in vits]))
    assert v.score == pytest.approx(sum(o.score for o in vits), rel=1e-14)
    # Two-slice counts never cross a sequence boundary: T - n_seq transitions.
    assert s.trans_counts.sum() == pytest.approx(11 - 3)


def test_time_varying_with_lengths_ignores_slices_at_sequence_starts():
    rng = np.random.default_rng(4)
    K = 2
    log_pi, log_A, log_lik = random_chain(rng, 5, K, time_varying=True)
    other = log_A.copy()
    other[0] = other[3] = 123.0  # first step of each sequence: must be ignored
    a = chain.smooth(log_pi, log_A, log_lik, lengths=[3, 2])
    b = chain.smooth(log_pi, other, log_lik, lengths=[3, 2])
    np.testing.assert_array_equal(a.posterior, b.posterior)
    assert a.loglik == b.loglik


def test_filter_step_loop_reproduces_forward_bit_for_bit():
    rng = np.random.default_rng(5)
    log_pi, log_A, log_lik = random_chain(rng, 200, 4, scale=3.0, sparse=True)
    f = chain.forward(log_pi, log_A, log_lik)
    prev, total = None, 0.0
    for t in range(log_lik.shape[0]):
        r = chain.filter_step(prev, log_pi, log_A, log_lik[t])
        np.testing.assert_array_equal(r.log_alpha, f.log_alpha[t])
        prev, total = r.log_alpha, total + r.log_norm
    assert total == f.loglik


def test_long_sequence_is_stable():
    rng = np.random.default_rng(6)
    T, K = 20000, 13
    log_pi, log_A, log_lik = random_chain(rng, T, K, scale=50.0, sparse=True)
    f = chain.forward(log_pi, log_A, log_lik)
    s = chain.smooth(log_pi, log_A, log_lik)
    v = chain.viterbi(log_pi, log_A, log_lik)
    assert np.isfinite(f.loglik) and np.isfinite(v.score)
    assert not np.isnan(f.log_alpha).any() and not np.isnan(s.posterior).any()
    np.testing.assert_allclose(np.exp(f.log_alpha).sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(s.posterior.sum(axis=1), 1.0, atol=1e-12)
    assert s.trans_counts.sum() == pytest.approx(T - 1, rel=1e-12)
    assert v.score <= f.loglik + 1e-6
    # The Viterbi path is one of the paths summed in the likelihood.
    A = log_A
    score = log_pi[v.path[0]] + log_lik[0, v.path[0]] + np.sum(
        A[v.path[:-1], v.path[1:]] + log_lik[np.arange(1, T), v.path[1:]])
    assert score == pytest.approx(v.score, rel=1e-12)


def test_scaled_and_log_space_agree_with_an_independent_scaled_recursion():
    # Classic Rabiner scaling in probability space as an independent oracle.
    rng = np.random.default_rng(8)
    T, K = 500, 5
    log_pi, log_A, log_lik = random_chain(rng, T, K)
    A, pi, L = np.exp(log_A), np.exp(log_pi), np.exp(log_lik)
    alpha = pi * L[0]
    c = [alpha.sum()]
    alpha /= c[0]
    alphas = [alpha]
    for t in range(1, T):
        alpha = (alpha @ A) * L[t]
        c.append(alpha.sum())
        alpha = alpha / c[-1]
        alphas.append(alpha)
    f = chain.forward(log_pi, log_A, log_lik)
    np.testing.assert_allclose(np.exp(f.log_alpha), np.array(alphas), rtol=1e-10, atol=1e-14)
    assert f.loglik == pytest.approx(np.log(c).sum(), rel=1e-12)


def test_uniform_transitions_reduce_to_an_independent_mixture():
    rng = np.random.default_rng(9)
    T, K = 30, 3
    log_pi = np.log(rng.dirichlet(np.ones(K)))
    log_A = np.tile(log_pi, (K, 1))  # every row equals the prior: frames independent
    log_lik = rng.normal(size=(T, K))
    post = log_pi + log_lik
    expected = np.exp(post - logsumexp(post, axis=1, keepdims=True))
    s = chain.smooth(log_pi, log_A, log_lik)
    np.testing.assert_allclose(s.posterior, expected, atol=1e-13)
    np.testing.assert_allclose(np.exp(chain.forward(log_pi, log_A, log_lik).log_alpha),
                               expected, atol=1e-13)
    assert s.loglik == pytest.approx(logsumexp(post, axis=1).sum(), rel=1e-13)


def test_inputs_are_not_modified():
    rng = np.random.default_rng(10)
    log_pi, log_A, log_lik = random_chain(rng, 8, 3, sparse=True)
    copies = [a.copy() for a in (log_pi, log_A, log_lik)]
    chain.forward(log_pi, log_A, log_lik)
    chain.smooth(log_pi, log_A, log_lik)
    chain.viterbi(log_pi, log_A, log_lik)
    chain.backward(log_A, log_lik)
    for a, b in zip((log_pi, log_A, log_lik), copies):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("bad", [
    dict(lengths=[3, 3]),
    dict(lengths=[-1, 6]),
    dict(log_A=np.zeros((3, 3))),
    dict(log_A=np.zeros((4, 2, 2))),
    dict(log_pi=np.zeros(3)),
    dict(log_lik=np.full((5, 2), np.nan)),
])
def test_invalid_inputs_raise_value_error(bad):
    args = dict(log_pi=np.zeros(2), log_A=np.zeros((2, 2)), log_lik=np.zeros((5, 2)),
                lengths=None)
    args.update(bad)
    with pytest.raises(ValueError):
        chain.forward(**args)


def test_empty_sequence_is_fine():
    f = chain.forward(np.zeros(2), np.zeros((2, 2)), np.zeros((0, 2)))
    assert f.log_alpha.shape == (0, 2) and f.loglik == 0.0
    assert chain.viterbi(np.zeros(2), np.zeros((2, 2)), np.zeros((0, 2))).path.shape == (0,)


def test_softmax_row_is_the_softmax_and_leaves_its_log():
    from scipy.special import log_softmax
    from recognizers.modelling.chain import _softmax_row
    rng = np.random.default_rng(0)
    for row in (rng.normal(scale=30.0, size=7), np.array([0.0, -1e30, 2.0]),
                np.array([-800.0, 0.0, -1.0]), np.full(4, -np.inf)):
        expected = log_softmax(row) if np.isfinite(row.max()) else np.full(row.size,
                                                                          -np.log(row.size))
        out, logs = np.empty(row.size), row.copy()
        _softmax_row(logs, out)
        np.testing.assert_allclose(out, np.exp(expected), rtol=1e-13, atol=1e-300)
        np.testing.assert_allclose(logs, expected, rtol=1e-13, atol=1e-12)
        assert out.sum() == pytest.approx(1.0, rel=1e-14)
