"""HCRF-DPM (paper 000): partitions, marginals, gradients and stick counts against
brute-force enumeration; the theta = 1 special case (IHCRF eq. 17); the estimator."""
import itertools

import numpy as np
import pytest
from sklearn.base import clone

from recognizers.modelling.crf import hcrfdpm_core as core
from recognizers.modelling import sticks
from recognizers.modelling.crf.hcrfdpm import (HCRFDPM, _delete_states, _embed, _restrict,
                                               encode_signed)
from recognizers.modelling.datasets import make_two_hmm_task

L, C, D = 3, 2, 2


@pytest.fixture
def problem():
    rng = np.random.default_rng(3)
    lengths = np.array([4, 5, 2])
    F = rng.uniform(0, 2, size=(lengths.sum(), D))
    params = (rng.uniform(0, 1, (L, D)), rng.uniform(0, 1, (L, C)), rng.uniform(0, 1, (C, L, L)))
    taus = tuple((rng.uniform(0.5, 3, a.shape), rng.uniform(0.5, 3, b.shape))
                 for a, b in core.prior_taus(D, C, L, (2.0, 2.0, 2.0)))
    El = core.expected_logs(taus, C)
    return F, lengths, np.array([0, 1, 1]), params, El, taus


def path_score(Fn, params, El, y, path):
    """Eq. 5 written out term by term, with the edge stick read in state-major order."""
    (tx, ty, te), (ex, ey, ee) = params, El
    s = sum(tx[k, i] * Fn[t, i] * ex[k, i] for t, k in enumerate(path) for i in range(D))
    s += sum(ty[k, y] * ey[k, y] for k in path)
    s += sum(te[y, path[t - 1], path[t]] * ee[y, path[t - 1], path[t]] for t in range(1, len(path)))
    return s


def enumerate_seq(Fn, params, El, y):
    paths = list(itertools.product(range(L), repeat=len(Fn)))
    sc = np.array([path_score(Fn, params, El, y, p) for p in paths])
    return paths, sc, np.logaddexp.reduce(sc)


def seqs(F, lengths):
    o = np.r_[0, np.cumsum(lengths)]
    return [F[o[n]:o[n + 1]] for n in range(len(lengths))]


def test_partitions_and_marginals_match_enumeration(problem):
    F, lengths, y, params, El, _ = problem
    W = np.random.default_rng(0).uniform(size=(len(lengths), C))
    G, XI, logZ = core.label_statistics(F, lengths, params, El, W)
    np.testing.assert_allclose(core.label_log_partitions(F, lengths, params, El), logZ)
    o = np.r_[0, np.cumsum(lengths)]
    XI_want = np.zeros((C, L, L))
    for n, Fn in enumerate(seqs(F, lengths)):
        for c in range(C):
            paths, sc, lz = enumerate_seq(Fn, params, El, c)
            assert logZ[n, c] == pytest.approx(lz, rel=1e-10)
            p = np.exp(sc - lz)
            g = np.zeros((len(Fn), L))
            for pr, path in zip(p, paths):
                g[np.arange(len(Fn)), path] += pr
                for t in range(1, len(Fn)):
                    XI_want[c, path[t - 1], path[t]] += W[n, c] * pr
            np.testing.assert_allclose(G[c, o[n]:o[n + 1]], W[n, c] * g, atol=1e-12)
    np.testing.assert_allclose(XI, XI_want, atol=1e-12)
    lp = core.predict_log_proba(F, lengths, params, El)
    np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0)


def test_nll_gradient_finite_differences(problem):
    F, lengths, y, params, El, _ = problem
    nll, grads = core.nll_and_grad(F, lengths, y, params, El)
    want = -sum(enumerate_seq(Fn, params, El, y[n])[2]
                - np.logaddexp.reduce([enumerate_seq(Fn, params, El, c)[2] for c in range(C)])
                for n, Fn in enumerate(seqs(F, lengths)))
    assert nll == pytest.approx(want, rel=1e-10)
    eps = 1e-6
    for arr, grad in zip(params, grads):
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            up = core.nll_and_grad(F, lengths, y, params, El)[0]
            arr[idx] = old - eps
            dn = core.nll_and_grad(F, lengths, y, params, El)[0]
            arr[idx] = old
            num[idx] = (up - dn) / (2 * eps)
        np.testing.assert_allclose(grad, num, atol=1e-6)


def test_theta_one_gives_ihcrf_eq17():
    # With theta = 1 and fixed pi's the potential is eq. 17:
    # sum_t sum_i f log pi_x(s_t|i) + log pi_y(s_t|y) + sum_{t>=2} log pi_e(s_t, y | s_{t-1}).
    rng = np.random.default_rng(5)
    Fn = rng.uniform(0, 2, (4, D))
    pi_x = sticks.sample_sticks(2.0, L, rng, size=D)          # (D, L)
    pi_y = sticks.sample_sticks(2.0, L, rng, size=C)          # (C, L)
    pi_e = sticks.sample_sticks(2.0, L * C, rng, size=L)      # (L, L*C), piece k*C + y
    El = (np.log(pi_x).T, np.log(pi_y).T, core.edge_el(np.log(pi_e), C))
    ones = (np.ones((L, D)), np.ones((L, C)), np.ones((C, L, L)))
    got = core.label_log_partitions(Fn, [4], ones, El)[0]
    for y in range(C):
        vals = []
        for p in itertools.product(range(L), repeat=4):
            v = sum(Fn[t, i] * np.log(pi_x[i, p[t]]) for t in range(4) for i in range(D))
            v += sum(np.log(pi_y[y, k]) for k in p)
            v += sum(np.log(pi_e[p[t - 1], p[t] * C + y]) for t in range(1, 4))
            vals.append(v)
        assert got[y] == pytest.approx(np.logaddexp.reduce(vals), rel=1e-10)


def test_stick_counts_are_theta_weighted_expected_piece_counts(problem):
    # Clamped phase 1: count of piece k of each stick = E[theta-weighted uses of h_k].
    F, lengths, y, params, El, _ = problem
    tx, ty, te = params
    Wt = np.eye(C)[y]
    G, XI, _ = core.label_statistics(F, lengths, params, El, Wt)
    cx, cy, ce = core.stick_counts(F, lengths, params, G, XI)
    wx, wy, we = np.zeros((D, L)), np.zeros((C, L)), np.zeros((L, L * C))
    for n, Fn in enumerate(seqs(F, lengths)):
        paths, sc, lz = enumerate_seq(Fn, params, El, y[n])
        for pr, path in zip(np.exp(sc - lz), paths):
            for t, k in enumerate(path):
                wx[:, k] += pr * Fn[t] * tx[k]
                wy[y[n], k] += pr * ty[k, y[n]]
                if t:
                    we[path[t - 1], k * C + y[n]] += pr * te[y[n], path[t - 1], k]
    np.testing.assert_allclose(cx, wx, atol=1e-12)
    np.testing.assert_allclose(cy, wy, atol=1e-12)
    np.testing.assert_allclose(ce, we, atol=1e-12)


def test_rescaled_theta_leaves_every_potential_and_the_likelihood_unchanged(problem):
    # Between the stick phase and the theta phase theta is rescaled by El_old / El_new:
    # the model (partitions, hence p(y | x) and the objective) must not move.
    F, lengths, y, params, El, _ = problem
    rng = np.random.default_rng(9)
    taus2 = tuple((rng.uniform(0.5, 5, a.shape), rng.uniform(0.5, 5, b.shape))
                  for a, b in core.prior_taus(D, C, L, (1.0, 1.0, 1.0)))
    El2 = core.expected_logs(taus2, C)
    params2 = core.rescale_to_sticks(params, El, El2)
    assert all(np.all(p >= 0) for p in params2)
    for p, e, p2, e2 in zip(params, El, params2, El2):
        np.testing.assert_allclose(p * e, p2 * e2, rtol=1e-12)
    np.testing.assert_allclose(core.label_log_partitions(F, lengths, params2, El2),
                               core.label_log_partitions(F, lengths, params, El), rtol=1e-12)
    assert core.nll_and_grad(F, lengths, y, params2, El2)[0] == pytest.approx(
        core.nll_and_grad(F, lengths, y, params, El)[0], rel=1e-12)


def test_fit_keeps_learnt_sticks_and_the_objective_never_rises():
    X, y = _hmm_pair(np.random.default_rng(4), 30)
    m = HCRFDPM(n_states=8, n_outer=2, prune=False, random_state=0).fit(X, y)
    # the kept model is the last round's: its El are the learnt sticks' E[log pi]
    assert m.taus_ is not None
    for got, want in zip(m.El_, core.expected_logs(m.taus_, 2)):
        np.testing.assert_allclose(got, want)
    scores = np.asarray(m.checkpoint_scores_)          # minus the training objective
    assert len(scores) == 3 and np.all(np.diff(scores) >= -1e-9 * np.abs(scores[:-1]).max())
    assert -m.objective_ == pytest.approx(scores[-1])
    # states below the truncation, and the unused ones carry negligible label-stick mass
    assert 1 <= m.n_states_used_ < 8
    assert m.stick_weights_y_[:, ~m.states_used_].max() < 0.02
    np.testing.assert_allclose(m.stick_weights_y_.sum(axis=1), 1.0)


def test_deleted_state_is_the_model_of_the_other_states(problem):
    # A deleted state's paths drop out exactly: the partitions equal the enumeration
    # over the paths that avoid it, and its marginals are 0.
    F, lengths, y, params, El, _ = problem
    dead = np.array([False, True, False])
    p2 = _delete_states(params, El, dead)
    np.testing.assert_allclose(p2[0], params[0])
    np.testing.assert_allclose(p2[2], params[2])
    G, _, logZ = core.label_statistics(F, lengths, p2, El, np.ones((len(lengths), C)))
    assert np.all(G[:, :, 1] == 0.0)
    for n, Fn in enumerate(seqs(F, lengths)):
        for c in range(C):
            paths, sc, _ = enumerate_seq(Fn, params, El, c)
            alive = [s for p, s in zip(paths, sc) if 1 not in p]
            assert logZ[n, c] == pytest.approx(np.logaddexp.reduce(alive), rel=1e-10)


def test_theta_phase_with_deleted_states_runs_on_the_others_alone(problem):
    # The pruning's theta phases search over the remaining states only: that is exact
    # because the deleted state's weights get zero gradient and the objective is the
    # restricted model's.
    F, lengths, y, params, El, _ = problem
    dead = np.array([False, True, False])
    keep = ~dead
    full = _delete_states(params, El, dead)
    nll, grads = core.nll_and_grad(F, lengths, y, full, El)
    sub_nll, sub_grads = core.nll_and_grad(F, lengths, y, _restrict(full, keep),
                                           _restrict(El, keep))
    assert sub_nll == pytest.approx(nll, rel=1e-12)
    for g, sg in zip(_restrict(grads, keep), sub_grads):
        np.testing.assert_allclose(sg, g, rtol=1e-10, atol=1e-12)
    zero = tuple(np.zeros_like(g) for g in grads)
    outside = _embed(grads, _restrict(zero, keep), keep)     # the deleted state's entries
    assert all(np.all(g == 0.0) for g in outside)
    # a pruned theta phase returns the full arrays: the deleted state's theta_y at its
    # deletion value, its other weights untouched
    m = HCRFDPM(n_states=L)
    p, f, _ = m._phase2(F, lengths, y, params, El, 5, dead)
    np.testing.assert_array_equal(p[1][dead], full[1][dead])
    np.testing.assert_array_equal(p[0][dead], params[0][dead])
    np.testing.assert_array_equal(p[2][:, dead], params[2][:, dead])
    np.testing.assert_array_equal(p[2][:, :, dead], params[2][:, :, dead])
    assert f == pytest.approx(core.nll_and_grad(F, lengths, y, p, El)[0], rel=1e-10)
    assert f < nll


def test_pruning_deletes_states_within_the_slack_and_keeps_learnt_sticks():
    X, y = _hmm_pair(np.random.default_rng(4), 30)
    kw = dict(n_states=8, random_state=0)
    full = HCRFDPM(prune=False, **kw).fit(X, y)
    m = HCRFDPM(**kw).fit(X, y)                               # prune=True: the defaults
    # the same fit up to the pruning step, then one more checkpoint
    np.testing.assert_allclose(m.checkpoint_scores_[:-1], full.checkpoint_scores_)
    assert -m.objective_ == pytest.approx(m.checkpoint_scores_[-1])
    assert m.objective_ <= full.objective_ + m.prune_tol * len(X)
    # deleted states are never visited, every used state survived, and fewer are used
    assert m.pruned_.any() and not (m.pruned_ & m.states_used_).any()
    assert np.all(m.state_usage_[:, m.pruned_] == 0.0)
    assert 1 <= m.n_states_used_ <= full.n_states_used_
    # the kept sticks are those learnt from the pruned model
    for got, want in zip(m.El_, core.expected_logs(m.taus_, 2)):
        np.testing.assert_allclose(got, want)
    assert m.stick_weights_y_[:, m.pruned_].max() < 0.02
    # with no slack a deletion must not raise the objective at all
    strict = HCRFDPM(prune_tol=0.0, prune_iter=3, **kw).fit(X, y)
    assert strict.objective_ <= full.objective_


def _hmm_pair(rng, n, T=12):
    # Two 1-D Gaussian HMMs sharing two of their four states (digest 000-6, smaller).
    X, y = make_two_hmm_task(rng, n, T)
    return encode_signed(X), y


def test_estimator_learns_two_hmms_and_reports_state_usage():
    rng = np.random.default_rng(0)
    X, y = _hmm_pair(rng, 60)
    Xt, yt = _hmm_pair(rng, 60)
    m = HCRFDPM(n_states=5, random_state=0).fit(X, y)           # the defaults
    assert m.score(Xt, yt) >= 0.9
    np.testing.assert_allclose(m.state_usage_.sum(axis=1), 1.0)
    assert 1 <= m.n_states_used_ <= 5 and m.states_per_label_.shape == (2,)
    assert np.all(m.theta_x_ >= 0) and np.all(m.theta_e_ >= 0)
    P = m.predict_proba(Xt)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    c = clone(m)
    assert c.get_params() == m.get_params() and not hasattr(c, "theta_x_")


def test_encode_signed_and_refusals():
    X = np.array([[1.5, -2.0], [-0.5, 0.0]])
    np.testing.assert_array_equal(encode_signed(X), [[1.5, 0, 0, 2, 1], [0, 0, 0.5, 0, 1]])
    with pytest.raises(ValueError, match="nonnegative features.*encode_signed"):
        HCRFDPM().fit([X, X], [0, 1])
    with pytest.raises(ValueError, match="one label per sequence"):
        HCRFDPM().fit([np.ones((3, 2))], [0, 1])
    with pytest.raises(ValueError, match="n_states"):
        HCRFDPM(n_states=1).fit([np.ones((3, 2))] * 2, [0, 1])


def test_sequence_lists_work_in_pipelines():
    # fit(sequences, labels) as the API: a list of (T_i, d) arrays passes
    # through a Pipeline step that encodes signed features, for both classifiers.
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from recognizers.modelling.crf.hcrf import HCRFClassifier

    rng = np.random.default_rng(2)
    X, y = _hmm_pair(rng, 16, T=8)
    raw = [x[:, :1] - x[:, 1:2] for x in X]          # back to the signed value
    for est in (HCRFDPM(n_states=3, n_restarts=1, n_outer=1, max_var_iter=5,
                        max_grad_iter=20, random_state=0),
                HCRFClassifier(n_hidden=2, max_iter=30, random_state=0)):
        pipe = make_pipeline(FunctionTransformer(encode_signed), est)
        pipe.fit(raw, y)
        assert pipe.predict(raw).shape == (16,)
        assert clone(pipe).get_params()["steps"][1][1].get_params() == est.get_params()
    # list input and concatenated input with lengths give the same model
    a = HCRFClassifier(n_hidden=2, max_iter=20, random_state=0).fit(X, y)
    b = HCRFClassifier(n_hidden=2, max_iter=20, random_state=0).fit(
        np.vstack(X), y, [len(x) for x in X])
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_label_pass_redoes_an_underflowing_sequence_exactly():
    # Sequence 0's scaled recursion underflows (its only paths cost ~2000 nats), so the
    # kernel redoes it in log space; sequence 1 stays scaled. Both against enumeration,
    # the counts per sequence.
    A = np.array([[0.0, -2000.0], [-2000.0, -2000.0]])
    U = np.array([[-5000.0, 0.0], [0.0, 0.0], [1.0, 2.0], [0.5, 0.1]])
    offsets = np.array([0, 2, 4])
    for stats in (True, False):
        post, xis, logZ = np.empty((4, 2)), np.empty((2, 2, 2)), np.empty(2)
        core._label_pass(U, A, offsets, post, xis, logZ, stats)
        for n, (a, b) in enumerate([(0, 2), (2, 4)]):
            paths = list(itertools.product(range(2), repeat=b - a))
            sc = np.array([U[a, p[0]] + U[a + 1, p[1]] + A[p[0], p[1]] for p in paths])
            lz = np.logaddexp.reduce(sc)
            assert logZ[n] == pytest.approx(lz, rel=1e-12)
            if stats:
                w = np.exp(sc - lz)
                want_post = np.zeros((2, 2))
                want_xi = np.zeros((2, 2))
                for p, wp in zip(paths, w):
                    want_post[0, p[0]] += wp
                    want_post[1, p[1]] += wp
                    want_xi[p] += wp
                np.testing.assert_allclose(post[a:b], want_post, atol=1e-12)
                np.testing.assert_allclose(xis[n], want_xi, atol=1e-12)
