"""Supervised ``fit(X, lengths, y=states)`` on the HMMs against counting by hand."""
import numpy as np
import pytest

from recognizers.modelling.hmm import GaussianHMM, MultiCategoricalHMM
from recognizers.modelling.hmm.categorical_emissions import CategoricalEmissions, count_supervised

# Two sequences (lengths 5 and 4) over 3 states; the boundary pair (state 2 -> state 1)
# must not be counted as a transition.
LENGTHS = [5, 4]
Y = np.array([0, 0, 1, 2, 2, 1, 1, 0, 2])


def _brute_chain(y, lengths, K, start_prior=1.0, trans_prior=1.0):
    """Start and transition estimates by loops: (count + prior - 1) normalised."""
    start = np.zeros(K)
    trans = np.zeros((K, K))
    i = 0
    for n in lengths:
        seq = y[i:i + n]
        start[seq[0]] += 1
        for a, b in zip(seq[:-1], seq[1:]):
            trans[a, b] += 1
        i += n
    start += start_prior - 1
    trans += trans_prior - 1
    return start / start.sum(), trans / trans.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("prior", [1.0, 2.5])
def test_multicategorical_supervised_fit_is_the_counted_estimate(prior):
    rng = np.random.default_rng(0)
    n_values = [3, 2]
    X = np.column_stack([rng.integers(0, 3, Y.size), rng.integers(0, 2, Y.size)])
    K = 3
    m = MultiCategoricalHMM(n_components=K, n_values=n_values, startprob_prior=prior,
                            transmat_prior=prior, emissionprob_prior=prior)
    m.fit(X, LENGTHS, y=Y)
    start, trans = _brute_chain(Y, LENGTHS, K, prior, prior)
    np.testing.assert_allclose(m.startprob_, start, rtol=1e-12)
    np.testing.assert_allclose(m.transmat_, trans, rtol=1e-12)
    for s, nv in enumerate(n_values):
        for k in range(K):
            counts = np.array([np.sum((Y == k) & (X[:, s] == v)) for v in range(nv)]) + prior - 1
            np.testing.assert_allclose(m.emissionprob_[s, k, :nv], counts / counts.sum(),
                                       rtol=1e-12)
    # The same model as the walker's counting route with counted transitions.
    seqs = np.split(X, np.cumsum(LENGTHS)[:-1])
    states = np.split(Y, np.cumsum(LENGTHS)[:-1])
    ref = MultiCategoricalHMM.from_counts(count_supervised(seqs, states, K, n_values),
                                          pseudocount=prior - 1, transitions="counts")
    if prior > 1:  # from_counts needs a positive pseudo-count
        np.testing.assert_allclose(m.transmat_, ref.transmat_, rtol=1e-12)
        np.testing.assert_allclose(m.emissionprob_, ref.emissionprob_, rtol=1e-12)


def test_gaussian_supervised_fit_is_per_state_means_and_covariances():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(Y.size, 2)) + Y[:, None] * 3.0
    K = 3
    m = GaussianHMM(n_components=K, covariance_type="full", min_covar=1e-3,
                    covars_prior=1e-2, covars_weight=1).fit(X, LENGTHS, y=Y)
    start, trans = _brute_chain(Y, LENGTHS, K)
    np.testing.assert_allclose(m.startprob_, start, rtol=1e-12)
    np.testing.assert_allclose(m.transmat_, trans, rtol=1e-12)
    for k in range(K):
        Xk = X[Y == k]
        mu = Xk.mean(axis=0)
        np.testing.assert_allclose(m.means_[k], mu, rtol=1e-10)
        # hmmlearn's MAP covariance with covars_weight=1 (the M-step EM uses too): the
        # scalar covars_prior broadcast onto every entry, (prior + scatter) / n_k.
        scatter = (Xk - mu).T @ (Xk - mu)
        expected = (1e-2 + scatter) / len(Xk)
        np.testing.assert_allclose(m.covars_[k], expected, rtol=1e-10)


@pytest.mark.filterwarnings("ignore::recognizers.modelling.em.ConvergenceWarning")
def test_positional_lengths_still_mean_unsupervised_em():
    X = np.random.default_rng(2).normal(size=(40, 1))
    m = GaussianHMM(n_components=2, n_iter=3, random_state=0).fit(X, [20, 20])
    assert m.n_iter_ >= 1 and len(m.history_) >= 1  # EM ran, no labels needed


def test_bad_states_are_clear_value_errors():
    X = np.zeros((9, 1), dtype=int)
    m = MultiCategoricalHMM(n_components=3, n_values=[2])
    with pytest.raises(ValueError, match="one state per frame"):
        m.fit(X, LENGTHS, y=Y[:-1])
    with pytest.raises(ValueError, match=r"integer states in 0\.\.2"):
        m.fit(X, LENGTHS, y=np.where(Y == 2, 3, Y))
    with pytest.raises(ValueError, match=r"integer states"):
        m.fit(X, LENGTHS, y=Y.astype(float))


# --------------------------------------------------------------------------- missing readings


def _two_state_model(**params):
    em = CategoricalEmissions(np.array([[[0.9, 0.1], [0.2, 0.8]]]), [2])
    return MultiCategoricalHMM.from_params(np.array([0.6, 0.4]),
                                           np.array([[0.7, 0.3], [0.4, 0.6]]), em, **params)


def test_the_missing_symbol_is_an_error_unless_asked_for():
    X = np.array([[0], [2], [1]])  # 2 == n_values: the sentinel
    with pytest.raises(ValueError, match="missing='sentinel'"):
        _two_state_model().score(X)
    with pytest.raises(ValueError, match="missing='sentinel'"):
        MultiCategoricalHMM(n_components=2, n_values=[2], n_iter=1).fit(X)
    with pytest.raises(ValueError, match="out of range"):  # beyond the sentinel: always
        _two_state_model(missing="sentinel").score(np.array([[3]]))


def test_a_sentinel_reading_carries_no_evidence():
    """Exact: the sentinel frame's likelihood is 1 in every state, by enumeration."""
    m = _two_state_model(missing="sentinel")
    pi, A = m.startprob_, m.transmat_
    B = m.emissionprob_[0, :, :2]
    X = [0, 2, 1]
    total = 0.0
    for path in np.ndindex(2, 2, 2):
        p = pi[path[0]]
        for t in range(1, 3):
            p *= A[path[t - 1], path[t]]
        for t, x in enumerate(X):
            p *= 1.0 if x == 2 else B[path[t], x]
        total += p
    np.testing.assert_allclose(m.score(np.array(X)[:, None]), np.log(total), rtol=1e-12)
