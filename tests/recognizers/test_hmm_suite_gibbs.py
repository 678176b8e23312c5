"""Collapsed Gibbs sampling: eq 6.19/6.20 against brute force, recovery, diagnostics."""
import itertools
import warnings

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.special import logsumexp

from recognizers.modelling.hmm import (
    CategoricalEmissions,
    CollapsedGibbsHMM,
    ConvergenceWarning,
    MultiCategoricalHMM,
)
from recognizers.modelling.hmm import gibbs_core as gibbs


def polya_log_joint(X, offsets, z, n_values, K, a0, A, b):
    """log p(y, e) by the chain rule with Polya-urn predictives (independent oracle)."""
    S = X.shape[1]
    M = int(max(n_values))
    n0 = np.zeros(K)
    nA = np.zeros((K, K))
    nB = np.zeros((S, K, M))
    out = 0.0
    for a, e_ in zip(offsets[:-1], offsets[1:]):
        for t in range(a, e_):
            k = z[t]
            if t == a:
                out += np.log((n0[k] + a0) / (n0.sum() + K * a0))
                n0[k] += 1
            else:
                j = z[t - 1]
                out += np.log((nA[j, k] + A[j, k]) / (nA[j].sum() + A[j].sum()))
                nA[j, k] += 1
            for s in range(S):
                x = X[t, s]
                if x == n_values[s]:
                    continue
                out += np.log((nB[s, k, x] + b) / (nB[s, k].sum() + n_values[s] * b))
                nB[s, k, x] += 1
    return out


def small_problem(seed, T=7, S=2, K=3):
    rng = np.random.default_rng(seed)
    n_values = np.array([3, 2][:S])
    X = np.stack([rng.integers(0, n + 1, T) for n in n_values], axis=1)  # includes missing
    offsets = np.array([0, 3, T])
    A = rng.uniform(0.5, 2.0, size=(K, K))
    return rng, X, offsets, n_values, K, A


@pytest.mark.parametrize("seed", range(4))
def test_log_joint_is_the_dirichlet_multinomial_joint(seed):
    rng, X, offsets, nv, K, A = small_problem(seed)
    for _ in range(5):
        z = rng.integers(0, K, len(X))
        ours = gibbs.log_joint(X, offsets, z, nv, K, start_prior=0.7, transmat_prior=A,
                               emission_prior=1.3)
        assert ours == pytest.approx(polya_log_joint(X, offsets, z, nv, K, 0.7, A, 1.3),
                                     rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_full_conditional_equals_normalised_joint(seed):
    # eq 6.20 corrected: p(y_t = k | rest) must be p(y with y_t = k, e) normalised over k.
    rng, X, offsets, nv, K, A = small_problem(seed)
    z = rng.integers(0, K, len(X))
    for t in range(len(X)):  # first, middle and last positions of both sequences
        joint = []
        for k in range(K):
            zz = z.copy()
            zz[t] = k
            joint.append(gibbs.log_joint(X, offsets, zz, nv, K, start_prior=0.7,
                                         transmat_prior=A, emission_prior=1.3))
        expected = np.exp(np.array(joint) - logsumexp(joint))
        got = gibbs.conditional(X, offsets, z, t, nv, K, start_prior=0.7, transmat_prior=A,
                                emission_prior=1.3)
        np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_sampler_targets_the_exact_posterior_over_paths():
    # Tiny problem: every path enumerated; the empirical path frequencies of a
    # long chain match p(y | e) from the collapsed joint.
    X = np.array([[0], [0], [1], [1], [0]])
    offsets = np.array([0, 5])
    K = 2
    paths = list(itertools.product(range(K), repeat=5))
    lj = np.array([gibbs.log_joint(X, offsets, np.array(p), [2], K) for p in paths])
    exact = np.exp(lj - logsumexp(lj))
    r = gibbs.collapsed_gibbs(X, offsets, [2], K, n_sweeps=2, burn_in=1,
                              rng=np.random.default_rng(0))
    counts = np.zeros(len(paths))
    rng = np.random.default_rng(1)
    z = r.states
    index = {p: i for i, p in enumerate(paths)}
    for _ in range(20000):
        r = gibbs.collapsed_gibbs(X, offsets, [2], K, n_sweeps=1, burn_in=0, rng=rng,
                                  init_states=z)
        z = r.states
        counts[index[tuple(z)]] += 1
    np.testing.assert_allclose(counts / counts.sum(), exact, atol=0.015)


def easy_data(seed=0, K=3, S=4, M=6, T=3000):
    rng = np.random.default_rng(seed)
    B = np.full((S, K, M), 0.02)
    for k in range(K):
        B[:, k, 2 * k:2 * k + 2] = 1.0  # each state owns two symbols of every sensor
    B /= B.sum(axis=2, keepdims=True)
    A = np.full((K, K), 0.02 / (K - 1))
    np.fill_diagonal(A, 0.98)
    truth = MultiCategoricalHMM.from_params(np.full(K, 1 / K), A, CategoricalEmissions(B, [M] * S))
    X, Z = truth.sample(T, random_state=seed)
    return truth, X, Z


def test_gibbs_finds_the_states_of_an_easy_synthetic_set():
    truth, X, Z = easy_data()
    m = CollapsedGibbsHMM(3, n_sweeps=60, burn_in=30, random_state=0).fit(X, [1000, 2000])
    C = np.zeros((3, 3))
    np.add.at(C, (Z, m.states_), 1)
    assert C[linear_sum_assignment(C, maximize=True)].sum() / len(Z) > 0.97
    C = np.zeros((3, 3))
    np.add.at(C, (Z, m.predict(X, [1000, 2000])), 1)
    assert C.max(axis=1).sum() / len(Z) > 0.97
    rows, perm = linear_sum_assignment(C, maximize=True)
    # ~1000 frames per state: sampling error of a probability near 0.5 is ~0.016.
    np.testing.assert_allclose(m.emissionprob_[:, perm, :6], truth.emissionprob_[:, :, :6],
                               atol=0.06)
    np.testing.assert_allclose(m.transmat_[np.ix_(perm, perm)], truth.transmat_, atol=0.02)
    assert m.converged_ and abs(m.rhat_ - 1) < 0.1
    assert m.log_joint_.shape == (1, 60) and m.n_iter_ == 60
    assert np.all(np.diff(m.log_joint_[0, :5]) > 0)  # climbs from the random start


def test_gibbs_is_reproducible_and_chains_are_diagnosed_together():
    _, X, _ = easy_data(seed=1, T=600)
    a = CollapsedGibbsHMM(3, n_sweeps=20, n_chains=2, random_state=3).fit(X)
    b = CollapsedGibbsHMM(3, n_sweeps=20, n_chains=2, random_state=3).fit(X)
    np.testing.assert_array_equal(a.log_joint_, b.log_joint_)
    np.testing.assert_array_equal(a.emissionprob_, b.emissionprob_)
    assert a.log_joint_.shape == (2, 20) and a.geweke_z_.shape == (2,)
    np.testing.assert_allclose(a.transmat_.sum(1), 1.0)
    for s, n in enumerate(a.n_values_):
        np.testing.assert_allclose(a.emissionprob_[s, :, :n].sum(1), 1.0)


def test_gibbs_warns_when_the_trace_has_not_settled():
    _, X, _ = easy_data(seed=2, T=900)
    with pytest.warns(ConvergenceWarning, match="R-hat"):
        m = CollapsedGibbsHMM(3, n_sweeps=6, burn_in=0, random_state=0).fit(X)
    assert not m.converged_


def test_sticky_prior_and_parameter_checks():
    _, X, _ = easy_data(seed=3, T=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = CollapsedGibbsHMM(3, n_sweeps=10, self_transition_prior=500.0,
                              random_state=0).fit(X)
    assert np.all(np.diag(m.transmat_) > 0.5)
    for bad, match in [(dict(burn_in=10), "burn_in"), (dict(transmat_prior=0.0), "> 0"),
                       (dict(n_sweeps=0), "n_sweeps"), (dict(self_transition_prior=-1.0),
                                                        "self_transition_prior")]:
        with pytest.raises(ValueError, match=match):
            CollapsedGibbsHMM(3, **{"n_sweeps": 10, **bad}).fit(X)


def test_split_rhat_and_geweke():
    rng = np.random.default_rng(0)
    iid = rng.normal(size=(4, 1000))
    assert abs(gibbs.split_rhat(iid) - 1.0) < 0.01
    assert gibbs.split_rhat(iid + np.arange(4)[:, None]) > 1.5  # chains disagree
    trend = np.linspace(0, 10, 1000) + rng.normal(size=1000)
    assert gibbs.split_rhat(trend) > 1.5  # halves of one chain disagree
    assert abs(gibbs.geweke_z(rng.normal(size=2000))) < 3
    assert abs(gibbs.geweke_z(trend)) > 5
    assert gibbs.split_rhat(np.ones(10)) == 1.0
    assert np.isnan(gibbs.geweke_z(np.ones(5)))
