"""OnlineEMHMM (Cappé-style online EM, thesis 7.4.1 baseline)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recognizers.base import NotFittedError
from recognizers.modelling.datasets import make_separable_hmm, sample_hmm
from recognizers.modelling.hmm.bmm import best_permutation_accuracy
from recognizers.modelling.hmm import bmm_core as core
from recognizers.modelling import chain
from recognizers.modelling.hmm.online_em import OnlineEMHMM


@pytest.fixture(scope="module")
def problem():
    pi, A, B = make_separable_hmm(3, 2, 6, peak=0.5, noise_concentration=5.0,
                                  self_transition=0.9, random_state=1)
    X, Z = sample_hmm(pi, A, B, [5000] * 4, random_state=2)
    Xt, Zt = sample_hmm(pi, A, B, [3000], random_state=3)
    ll = core.emission_loglik(Xt, np.log(B))
    true_score = chain.forward(np.log(pi), np.log(A), ll).loglik
    true_acc = (chain.viterbi(np.log(pi), np.log(A), ll).path == Zt).mean()
    return X, Z, Xt, Zt, true_score, true_acc


def test_held_out_log_likelihood_improves_over_the_stream(problem):
    X, _, Xt, _, true_score, _ = problem
    model = OnlineEMHMM(3, n_symbols=6, random_state=0)
    scores = []
    for k, chunk in enumerate(np.array_split(X, 20)):
        model.partial_fit(chunk) if k else model.partial_fit(chunk, [len(chunk)])
        scores.append(model.score(Xt) / len(Xt))
    assert scores[-1] > scores[0] + 0.05
    assert np.mean(scores[-5:]) > np.mean(scores[:5])
    # and ends close to the log-likelihood of the generating parameters
    assert scores[-1] > true_score / len(Xt) - 0.04  # step noise of t^-0.6 is ~0.02/frame


def test_predictive_log_likelihood_rises_along_the_stream(problem):
    X = problem[0]
    model = OnlineEMHMM(3, random_state=0)
    model.fit(X[:1000])
    early = model.predictive_loglik_ / 1000
    model.partial_fit(X[1000:])
    late_total = model.predictive_loglik_ - early * 1000
    assert late_total / (len(X) - 1000) > early


def test_recovers_the_states_of_a_separable_hmm(problem):
    X, _, Xt, Zt, _, true_acc = problem
    model = OnlineEMHMM(3, random_state=0).fit(X, [5000] * 4)
    acc, _ = best_permutation_accuracy(Zt, model.predict(Xt), 3)
    assert acc > true_acc - 0.05


def test_chunked_partial_fit_equals_fit():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, (400, 2))
    a = OnlineEMHMM(2, n_symbols=4, init="random", random_state=3, burn_in=10).fit(X)
    b = OnlineEMHMM(2, n_symbols=4, init="random", random_state=3, burn_in=10)
    for part in np.array_split(X, 5):
        b.partial_fit(part)
    assert np.allclose(a.transmat_, b.transmat_, rtol=1e-12)
    assert np.allclose(a.emissionprob_, b.emissionprob_, rtol=1e-12)
    c = OnlineEMHMM(2, n_symbols=4, init="random", random_state=3, burn_in=10)
    posts = [c.step(x) for x in X]
    assert np.allclose(c.emissionprob_, a.emissionprob_, rtol=1e-12)
    assert np.allclose(posts[-1].sum(), 1.0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), run=st.integers(0, 2000), extra=st.integers(0, 3),
       n_states=st.integers(1, 4))
def test_parameters_stay_valid_on_odd_streams(seed, run, extra, n_states):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, (int(rng.integers(1, 50)), 2))
    X = np.concatenate([X, np.repeat(X[-1:], run, 0)])
    model = OnlineEMHMM(n_states, n_symbols=3 + extra, burn_in=5, random_state=seed).fit(X)
    for p in (model.startprob_, model.transmat_, model.emissionprob_):
        assert np.all(np.isfinite(p)) and np.all(p >= 0)
        assert np.allclose(p.sum(-1), 1.0)
    assert np.all(model.emissionprob_ > 0)  # smoothing keeps unseen symbols possible
    assert np.isfinite(model.score(X))


def test_api_and_errors():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (100, 2))
    with pytest.raises(NotFittedError):
        OnlineEMHMM(2).predict(X)
    with pytest.raises(ValueError, match="step_exponent"):
        OnlineEMHMM(2, step_exponent=0.4).fit(X)
    with pytest.raises(ValueError, match="Negative values in data"):
        OnlineEMHMM(2).fit(-X - 1)
    with pytest.raises(ValueError, match="integer symbols"):
        OnlineEMHMM(2).fit(X.astype(float))
    model = OnlineEMHMM(2, random_state=0).fit(X, [40, 60])
    assert model.transmat_.shape == (2, 2)
    assert model.emissionprob_.shape == (2, 2, 3)
    assert model.predict(X, [40, 60]).shape == (100,)
    assert np.allclose(model.predict_proba(X).sum(1), 1.0)
    with pytest.raises(ValueError, match="X has 1 features, but OnlineEMHMM is expecting 2"):
        model.partial_fit(X[:, :1])
