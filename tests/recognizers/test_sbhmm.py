"""StickBreakingHMM: VB updates against brute force and textbook formulas."""
import itertools

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import wishart
from sklearn.base import clone

from sklearn.exceptions import NotFittedError

from recognizers.modelling.matching import hungarian_error
from recognizers.modelling.hmm.sbhmm import (
    StickBreakingHMM,
    expected_gaussian_loglik,
    expected_log_det_wishart,
    kl_normal_wishart,
    normal_wishart_posterior,
)
from recognizers.modelling.hmm.sbhmm_core import (
    best_kappa,
    coordinate_ascent,
    data_prior,
    delete_state,
    elbo,
    infer_states,
    merge_states,
    sticky_prior,
    try_moves,
    update_posterior,
)
from recognizers.modelling.sticks import expected_log_weights

def _sticky_data(rng, T=300, K=3, D=2, stay=0.95):
    A = np.full((K, K), (1 - stay) / (K - 1)) + np.eye(K) * (stay - (1 - stay) / (K - 1))
    means = np.array([[0, 0], [5, 0], [0, 5]], float)[:K, :D]
    z = np.zeros(T, int)
    for t in range(1, T):
        z[t] = rng.choice(K, p=A[z[t - 1]])
    return means[z] + 0.5 * rng.standard_normal((T, D)), z


def test_normal_wishart_update_matches_bishop_one_state():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 2)) + [1, -2]
    resp = np.ones((40, 1))
    m0, beta0, W0, nu0 = np.zeros(2), 2.0, np.eye(2) * 0.5, 4.0
    m, beta, W, nu = normal_wishart_posterior(X, resp, m0, beta0, W0, nu0)
    N, xbar = 40, X.mean(0)
    S = (X - xbar).T @ (X - xbar)
    Winv = np.linalg.inv(W0) + S + beta0 * N / (beta0 + N) * np.outer(xbar - m0, xbar - m0)
    np.testing.assert_allclose(m[0], (beta0 * m0 + N * xbar) / (beta0 + N))
    np.testing.assert_allclose(W[0], np.linalg.inv(Winv))
    assert beta[0] == beta0 + N and nu[0] == nu0 + N


def test_expected_log_det_against_monte_carlo():
    W = np.array([[0.7, 0.2], [0.2, 0.4]])
    nu = 5.5
    draws = wishart(df=nu, scale=W).rvs(200000, random_state=1)
    mc = np.linalg.slogdet(draws)[1].mean()
    assert expected_log_det_wishart(W[None], np.array([nu]))[0] == pytest.approx(mc, abs=0.01)


def test_expected_loglik_against_monte_carlo():
    rng = np.random.default_rng(2)
    m, beta, W, nu = np.array([[0.5, -1.0]]), np.array([3.0]), np.array([[[0.6, 0.1], [0.1, 0.3]]]), np.array([6.0])
    x = np.array([[1.0, 0.0]])
    lam = wishart(df=nu[0], scale=W[0]).rvs(20000, random_state=3)
    vals = []
    for L in lam:
        mu = rng.multivariate_normal(m[0], np.linalg.inv(beta[0] * L))
        d = x[0] - mu
        vals.append(0.5 * (np.linalg.slogdet(L)[1] - 2 * np.log(2 * np.pi) - d @ L @ d))
    assert expected_gaussian_loglik(x, m, beta, W, nu)[0, 0] == pytest.approx(np.mean(vals), abs=0.03)


def test_kl_normal_wishart_zero_at_prior_and_positive():
    m0, W0 = np.array([0.0, 1.0]), np.eye(2)
    kl0 = kl_normal_wishart(m0[None], np.array([2.0]), W0[None], np.array([5.0]), m0, 2.0, W0, 5.0)
    assert kl0[0] == pytest.approx(0.0, abs=1e-10)
    kl1 = kl_normal_wishart(m0[None] + 1, np.array([4.0]), 0.5 * W0[None], np.array([9.0]), m0, 2.0, W0, 5.0)
    assert kl1[0] > 0


def test_e_step_matches_enumeration():
    """q(z), expected transition counts and log Z against all C^T paths."""
    rng = np.random.default_rng(4)
    X, _ = _sticky_data(rng, T=5)
    model = StickBreakingHMM(max_states=3, max_iter=2, random_state=0).fit(X)
    post = model.posterior_
    res = infer_states(X, np.array([5]), post)
    log_pi = expected_log_weights(post.start_a, post.start_b)
    log_A = expected_log_weights(post.trans_a, post.trans_b)
    log_lik = expected_gaussian_loglik(X, post.m, post.beta, post.W, post.nu)
    C, T = 3, 5
    scores, paths = [], list(itertools.product(range(C), repeat=T))
    for p in paths:
        s = log_pi[p[0]] + log_lik[0, p[0]]
        for t in range(1, T):
            s += log_A[p[t - 1], p[t]] + log_lik[t, p[t]]
        scores.append(s)
    scores = np.array(scores)
    logZ = logsumexp(scores)
    w = np.exp(scores - logZ)
    post = np.zeros((T, C))
    xi = np.zeros((C, C))
    for wi, p in zip(w, paths):
        post[np.arange(T), p] += wi
        for t in range(1, T):
            xi[p[t - 1], p[t]] += wi
    assert res.loglik == pytest.approx(logZ)
    np.testing.assert_allclose(res.posterior, post, atol=1e-10)
    np.testing.assert_allclose(res.trans_counts, xi, atol=1e-10)


@pytest.mark.parametrize("sticky", [0.0, 5.0, "auto"])
def test_elbo_never_decreases_and_is_the_final_models(sticky):
    rng = np.random.default_rng(5)
    X, _ = _sticky_data(rng, T=200)
    m = StickBreakingHMM(max_states=6, sticky=sticky, max_iter=60, tol=0, random_state=1).fit(X)
    d = np.diff(m.elbo_)
    assert np.all(d >= -1e-8 * np.abs(m.elbo_[1:])), d.min()
    # the last value is the ELBO of the returned model, recomputed from scratch
    fresh, _ = elbo(X, np.array([200]), m.posterior_, m.prior_, m.alpha, m.kappa_)
    assert m.elbo_[-1] == pytest.approx(fresh, rel=1e-12)


def test_kappa_update_maximises_the_elbo():
    """The learnt kappa beats its neighbours on the full ELBO (the other terms do not
    depend on kappa), and the sticky prior is kappa pseudo-counts of self-transitions."""
    rng = np.random.default_rng(8)
    X, _ = _sticky_data(rng, T=300)
    m = StickBreakingHMM(max_states=5, random_state=0).fit(X)
    lengths = np.array([300])
    k = best_kappa(m.posterior_, m.alpha, 300.0)
    assert k > 0  # sticky data: a positive bias
    at = lambda kk: elbo(X, lengths, m.posterior_, m.prior_, m.alpha, kk)[0]
    assert at(k) >= max(at(0.9 * k), at(1.1 * k), at(0.0))
    a0, b0 = sticky_prior(3, 1.0, 2.0)
    np.testing.assert_allclose(a0, [[3, 1], [1, 3], [1, 1]])
    np.testing.assert_allclose(b0, [[1, 1], [3, 1], [3, 3]])


def test_every_accepted_move_raises_the_elbo_recomputed_from_scratch():
    rng = np.random.default_rng(9)
    X, _ = _sticky_data(rng, T=300)
    lengths = np.array([300])
    prior = data_prior(X)
    # start from 8 states on 3-state data: the moves have work to do
    resp = np.random.default_rng(0).dirichlet(np.ones(8), 300)
    xi = resp[:-1].T @ resp[1:]
    post = update_posterior(X, lengths, resp, xi, prior, 1.0, 2.0)
    post, kappa, res, elbos = coordinate_ascent(X, lengths, post, prior, 1.0, 2.0,
                                                learn_kappa=True, max_iter=300)
    n_moves = 0
    while True:
        move = try_moves(X, lengths, post, res, elbos[-1], prior, 1.0, kappa, learn_kappa=True)
        if move is None:
            break
        fresh, _ = elbo(X, lengths, move.posterior, prior, 1.0, move.kappa)
        assert fresh == pytest.approx(move.elbos[-1], rel=1e-12)
        assert fresh > elbos[-1]
        n_moves += 1
        post, kappa, res, elbos = coordinate_ascent(X, lengths, move.posterior, prior, 1.0,
                                                    move.kappa, learn_kappa=True, max_iter=300)
    assert n_moves >= 1
    assert (res.posterior.sum(0) > 3).sum() == 3


def test_merge_of_duplicated_states_is_accepted():
    """Split a fitted state into two identical halves: the merge move finds the pair
    first and the ELBO rises when it is folded back."""
    rng = np.random.default_rng(10)
    X, _ = _sticky_data(rng, T=300)
    lengths = np.array([300])
    m = StickBreakingHMM(max_states=4, sticky=2.0, random_state=0).fit(X)
    res = infer_states(X, lengths, m.posterior_)
    counts = res.posterior.sum(0)
    k, l = int(np.argmax(counts)), int(np.argmin(counts))
    split = np.ones(4)
    split[k] = 0.5
    resp = res.posterior * split
    resp[:, l] = resp[:, k]  # l becomes an exact copy of half of k
    w = np.eye(4)[:, :] * split
    w[k, l] = 0.5  # frames of k go half to k, half to l
    xi = w.T @ res.trans_counts @ w
    assert xi.sum() == pytest.approx(res.trans_counts.sum())
    dup = update_posterior(X, lengths, resp, xi, m.prior_, 1.0, 2.0)
    np.testing.assert_allclose(dup.m[k], dup.m[l])
    before, est = elbo(X, lengths, dup, m.prior_, 1.0, 2.0)
    move = try_moves(X, lengths, dup, est, before, m.prior_, 1.0, 2.0, n_tries=1)
    assert move is not None and move.kind == "merge" and set(move.states) == {k, l}
    assert move.elbos[-1] > before
    # folding the copy back restores the statistics of the undivided state
    r2, x2 = merge_states(resp, xi, k, l)
    np.testing.assert_allclose(r2, res.posterior * (np.arange(4) != l), atol=1e-12)
    np.testing.assert_allclose(r2[:, k], res.posterior[:, k], atol=1e-12)


def test_deleting_an_empty_state_changes_nothing():
    """A state no frame can reach (its Gaussian is far away): deleting it gives the same
    q(z), the same q(theta), the same ELBO and the same labels."""
    rng = np.random.default_rng(11)
    X, _ = _sticky_data(rng, T=200)
    lengths = np.array([200])
    m = StickBreakingHMM(max_states=5, sticky=1.0, moves=False, random_state=0).fit(X)
    post = m.posterior_
    l = 4
    far = post.m.copy()
    far[l] = X.mean(0) + 1e4 * X.std(0)
    post = post._replace(m=far)
    res = infer_states(X, lengths, post)
    assert res.posterior[:, l].max() == 0.0
    resp, xi = delete_state(X, lengths, post, l)
    np.testing.assert_allclose(resp, res.posterior, atol=1e-12)
    np.testing.assert_allclose(xi, res.trans_counts, atol=1e-9)
    a = update_posterior(X, lengths, res.posterior, res.trans_counts, m.prior_, 1.0, 1.0)
    b = update_posterior(X, lengths, resp, xi, m.prior_, 1.0, 1.0)
    ea, ra = elbo(X, lengths, a, m.prior_, 1.0, 1.0)
    eb, rb = elbo(X, lengths, b, m.prior_, 1.0, 1.0)
    assert ea == pytest.approx(eb, rel=1e-12)
    np.testing.assert_allclose(ra.posterior, rb.posterior, atol=1e-12)


def test_recovers_three_states_and_segmentation():
    rng = np.random.default_rng(6)
    X, z = _sticky_data(rng, T=400)
    m = StickBreakingHMM(max_states=20, random_state=0).fit(X)
    assert m.n_states_used_ == 3
    pred = m.predict(X)
    np.testing.assert_array_equal(pred, m.labels_)
    assert set(pred) == {0, 1, 2}  # labels are numbered 0..k-1
    assert hungarian_error(pred, z) < 0.02
    # public parameters are in label order
    for k in range(3):
        np.testing.assert_allclose(m.means_[k], X[pred == k].mean(0), atol=0.1)


def test_hungarian_error_exact():
    assert hungarian_error(np.array([2, 2, 0, 0, 1]), np.array([0, 0, 1, 1, 1])) == pytest.approx(0.2)


def test_ragged_sequences_and_clone_and_errors():
    rng = np.random.default_rng(7)
    X1, _ = _sticky_data(rng, T=60)
    X2, _ = _sticky_data(rng, T=35)
    m = StickBreakingHMM(max_states=4, random_state=0).fit([X1, X2])
    assert m.predict([X1, X2]).shape == (95,)
    np.testing.assert_allclose(m.predict_proba(X1).sum(1), 1.0)
    assert np.all(np.isfinite(m.predict_proba(X1)))
    c = clone(m)
    assert not hasattr(c, "posterior_") and c.get_params() == m.get_params()
    # stacked with lengths = list of sequences; a list of rows is one sequence
    np.testing.assert_array_equal(m.predict(np.vstack([X1, X2]), lengths=[60, 35]),
                                  m.predict([X1, X2]))
    np.testing.assert_array_equal(m.predict(X1.tolist()), m.predict(X1))
    with pytest.raises(ValueError, match="features"):
        m.predict(np.zeros((5, 3)))
    with pytest.raises(ValueError, match="lengths"):
        m.predict(X1, lengths=[10, 10])
    with pytest.raises(NotFittedError):
        StickBreakingHMM().predict(X1)
    with pytest.raises(ValueError, match="max_states"):
        StickBreakingHMM(max_states=1).fit(X1)


def test_fit_from_posterior_continues_a_model_and_never_lowers_its_elbo():
    rng = np.random.default_rng(5)
    X, z = _sticky_data(rng, T=200)
    lengths = np.array([200])
    rough = StickBreakingHMM(max_states=6, max_iter=3, moves=False, random_state=1).fit(X)
    start, _ = elbo(X, lengths, rough.posterior_, rough.prior_, 1.0, rough.kappa_)
    m = StickBreakingHMM(max_states=6).fit_from_posterior(X, rough.posterior_, rough.prior_,
                                                          rough.kappa_)
    # the first recorded ELBO is the starting model's, the last the returned model's,
    # both recomputed from scratch, and no sweep or move lowers it
    assert m.elbo_[0] == pytest.approx(start, rel=1e-12)
    fresh, _ = elbo(X, lengths, m.posterior_, m.prior_, 1.0, m.kappa_)
    assert m.elbo_[-1] == pytest.approx(fresh, rel=1e-12)
    assert np.all(np.diff(m.elbo_) >= -1e-8 * np.abs(m.elbo_[1:]))
    assert m.prior_ is rough.prior_
    assert m.n_states_used_ == 3 and hungarian_error(m.labels_, z) < 0.02
