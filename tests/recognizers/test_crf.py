"""Linear-chain CRF (issue 8): exact inference against enumeration, the gradient against
finite differences, recovery of a known CRF, streaming, files and bad input."""
import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from recognizers import load_recognizer
from recognizers.base import ModelFormatError, NotFittedError
from recognizers.crf_recognizer import CRFRecognizer
from recognizers.modelling.crf import LinearChainCRF
from recognizers.modelling.crf.features import pair_thresholds
from recognizers.modelling import chain
from recognizers.modelling.crf.linear_chain_core import featurize

LABELS = np.array(["A", "B", "C"])


def toy_data(seed=0, lengths=(5, 1, 4, 6), F=3, nan=True):
    rng = np.random.default_rng(seed)
    Xs, ys = [], []
    for n in lengths:
        y = rng.integers(0, 3, n)
        X = rng.normal(size=(n, F)) + y[:, None] * np.array([1.0, -0.5, 0.3])[:F]
        Xs.append(X)
        ys.append(LABELS[y])
    if nan:
        Xs[0][1, 0] = np.nan
        Xs[2][0, 2] = np.nan
    return Xs, ys


def random_fitted(seed=0, **params):
    """A CRF with its feature functions learned on toy data and random weights."""
    Xs, ys = toy_data(seed)
    crf = LinearChainCRF(**params)
    problem = crf._problem(Xs, ys)
    theta = np.random.default_rng(seed + 100).normal(size=problem.n_params)
    crf._set_fitted(problem.classes, problem.n_features, problem.spec, theta)
    return crf, Xs, ys


def path_score(U, log_A, path):
    return U[np.arange(len(path)), path].sum() + sum(
        log_A[a, b] for a, b in zip(path[:-1], path[1:]))


# --------------------------------------------------------------------------- features


def test_state_scores_follow_the_threshold_feature_definition():
    """Score = bias + raw weights + per threshold: above weight if x >= tau, else below."""
    crf, Xs, _ = random_fitted(1, thresholds="median", raw=True, window=0)
    spec = crf.spec_
    X = np.vstack(Xs)
    X[3, 1] = spec.cuts[spec.cut_offsets[1]]  # a reading exactly on a threshold
    U = crf.state_scores(X)
    W, Wt = crf.state_weights_, crf.threshold_weights_
    for t in range(X.shape[0]):
        z = np.nan_to_num((X[t] - spec.mean) / spec.scale)
        want = W[0] + z @ W[1:]
        for s in range(X.shape[1]):
            for p in range(spec.cut_offsets[s], spec.cut_offsets[s + 1]):
                if np.isnan(X[t, s]):
                    continue  # a missing reading fires neither side
                want = want + (Wt[p, 0] if X[t, s] >= spec.cuts[p] else Wt[p, 1])
        np.testing.assert_allclose(U[t], want, rtol=1e-12, atol=1e-12)


def test_window_statistics_are_causal_mean_and_std_skipping_nan():
    crf, Xs, _ = random_fitted(2, thresholds=None, raw=True, window=3)
    spec = crf.spec_
    X = Xs[0]
    dense, codes = featurize(spec, X)
    Z = (X - spec.mean) / spec.scale
    F = X.shape[1]
    assert codes.shape == (len(X), 0) and dense.shape == (len(X), 1 + 3 * F)
    for t in range(len(X)):
        win = Z[max(0, t - 2):t + 1]
        for f in range(F):
            v = win[:, f][~np.isnan(win[:, f])]
            assert dense[t, 1 + F + f] == pytest.approx(v.mean(), abs=1e-12)
            assert dense[t, 1 + 2 * F + f] == pytest.approx(v.std(), abs=1e-12)


def test_ks_threshold_separates_two_classes_best():
    rng = np.random.default_rng(0)
    v = np.concatenate([rng.normal(0, 1, 500), rng.normal(3, 1, 500)])
    lab = np.repeat([0, 1], 500)
    (tau,) = pair_thresholds(v, lab, 2, "ks")
    grid = np.quantile(v, np.linspace(0, 1, 129))
    ks = [abs(np.mean(v[lab == 0] < g) - np.mean(v[lab == 1] < g)) for g in grid]
    assert abs(np.mean(v[lab == 0] < tau) - np.mean(v[lab == 1] < tau)) == pytest.approx(max(ks))
    assert 1.0 < tau < 2.0
    (mid,) = pair_thresholds(v, lab, 2, "median")
    assert mid == pytest.approx(0.5 * (np.median(v[:500]) + np.median(v[500:])))
    # a class without readings gives no threshold for its pairs; 3 classes -> 1 pair left
    assert pair_thresholds(v, lab, 3, "ks").shape == (1,)


# --------------------------------------------------------------------------- inference


@pytest.mark.parametrize("transitions", ["full", "self"])
def test_log_partition_marginals_and_viterbi_equal_enumeration(transitions):
    crf, Xs, _ = random_fitted(3, transitions=transitions, window=2)
    K = len(crf.classes_)
    for X in Xs:
        U = crf.state_scores(X)
        T = len(X)
        paths = np.array(list(itertools.product(range(K), repeat=T)))
        scores = np.array([path_score(U, crf.transition_, p) for p in paths])
        logZ = logsumexp(scores)
        assert crf.log_partition(X) == pytest.approx(logZ, rel=1e-12, abs=1e-12)
        prob = np.exp(scores - logZ)
        marg = np.stack([np.bincount(paths[:, t], prob, minlength=K) for t in range(T)])
        np.testing.assert_allclose(crf.predict_proba_single(X), marg, atol=1e-12)
        assert crf.predict_single(X) == crf.classes_[paths[np.argmax(scores)]].tolist()
        md = crf.predict_marginals_single(X)
        assert [sorted(d) for d in md] == [crf.classes_.tolist()] * T
        assert md[-1][crf.classes_[1]] == pytest.approx(marg[-1, 1], abs=1e-12)


def test_self_transition_variant_has_one_weight_on_the_diagonal():
    crf, _, _ = random_fitted(4, transitions="self")
    nu = crf.self_transition_
    np.testing.assert_array_equal(crf.transition_, nu * np.eye(len(crf.classes_)))
    with pytest.raises(AttributeError):
        _ = random_fitted(4, transitions="full")[0].self_transition_


@pytest.mark.parametrize("params", [
    dict(transitions="full", thresholds="ks", raw=True, window=0, c2=0.3),
    dict(transitions="self", thresholds="median", raw=True, window=2, c2=0.0),
    dict(transitions="full", thresholds=None, raw=False, window=3, c2=1.0),
])
def test_objective_is_the_penalised_nll_and_gradient_matches_finite_differences(params):
    Xs, ys = toy_data(5)
    crf = LinearChainCRF(**params)
    problem = crf._problem(Xs, ys)
    rng = np.random.default_rng(6)
    theta = rng.normal(scale=0.5, size=problem.n_params)
    f, g = problem.objective(theta)
    # value: sum over sequences of log Z - score(y), by enumeration, plus c2 ||w||^2
    crf._set_fitted(problem.classes, problem.n_features, problem.spec, theta)
    want = params["c2"] * theta @ theta
    for X, y in zip(Xs, ys):
        U = crf.state_scores(X)
        yi = np.searchsorted(crf.classes_, y)
        paths = itertools.product(range(3), repeat=len(X))
        want += logsumexp([path_score(U, crf.transition_, p) for p in paths])
        want -= path_score(U, crf.transition_, yi)
    assert f == pytest.approx(want, rel=1e-11)
    eps = 1e-6
    for i in range(problem.n_params):
        e = np.zeros_like(theta)
        e[i] = eps
        fd = (problem.objective(theta + e)[0] - problem.objective(theta - e)[0]) / (2 * eps)
        assert g[i] == pytest.approx(fd, rel=1e-5, abs=1e-6), i


def sample_crf(rng, W, nu, n_seq, length):
    """Sequences from a CRF with raw-feature weights W (F + 1, K) and self weight nu:
    exact samples by forward filtering, backward sampling."""
    K = W.shape[1]
    A = nu * np.eye(K)
    Xs, ys = [], []
    for _ in range(n_seq):
        X = rng.normal(size=(length, W.shape[0] - 1))
        U = W[0] + X @ W[1:]
        la = chain.forward(np.zeros(K), A, U).log_alpha
        y = np.empty(length, dtype=int)
        p = np.exp(la[-1])
        y[-1] = rng.choice(K, p=p / p.sum())
        for t in range(length - 2, -1, -1):
            p = np.exp(la[t] + A[:, y[t + 1]])
            y[t] = rng.choice(K, p=p / p.sum())
        Xs.append(X)
        ys.append(LABELS[y])
    return Xs, ys


def test_training_on_samples_of_a_known_crf_recovers_its_sign_pattern():
    rng = np.random.default_rng(7)
    W = np.array([[0.0, 0.0, 0.0],     # bias
                  [2.0, -1.0, -1.0],
                  [-1.5, 1.5, 0.0],
                  [1.0, 1.0, -2.0]])   # rows sum to 0: the identifiable weights
    Xs, ys = sample_crf(rng, W, 1.5, 60, 80)
    crf = LinearChainCRF(thresholds=None, raw=True, transitions="self", c2=0.01,
                         max_iterations=200).fit(Xs, ys)
    est = crf.state_weights_[1:] * crf.spec_.scale[:, None]  # back to unstandardised x
    est = est - est.mean(axis=1, keepdims=True)
    big = np.abs(W[1:]) >= 1.0
    np.testing.assert_array_equal(np.sign(est[big]), np.sign(W[1:][big]))
    assert np.max(np.abs(est - W[1:])) < 0.5
    assert 0.8 < crf.self_transition_ < 2.2


def test_l1_gives_exact_zeros_and_a_large_penalty_zeroes_everything():
    Xs, ys = toy_data(8, lengths=(30, 40, 25))
    dense = LinearChainCRF(c1=0.0, c2=0.1).fit(Xs, ys)
    sparse = LinearChainCRF(c1=2.0, c2=0.1).fit(Xs, ys)
    assert np.count_nonzero(dense.theta_ == 0) == 0
    assert 0 < np.count_nonzero(sparse.theta_ == 0) < sparse.theta_.size
    none = LinearChainCRF(c1=1e4, c2=0.0).fit(Xs, ys)
    assert np.count_nonzero(none.theta_) == 0


def test_fit_predicts_separable_activities(make_sessions):
    sessions = make_sessions(n_subjects=3, noise=0.5)
    Xs, ys = [s["X"] for s in sessions], [s["y"] for s in sessions]
    crf = LinearChainCRF(max_iterations=50).fit(Xs[:2], ys[:2])
    assert crf.score(Xs[2:], ys[2:]) > 0.95
    pred = crf.predict(Xs[2:])
    assert isinstance(pred[0], list) and isinstance(pred[0][0], str)
    proba = crf.predict_proba(Xs[2:])[0]
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


# --------------------------------------------------------------------------- recognizer


@pytest.fixture(scope="module")
def fitted():
    Xs, ys = toy_data(9, lengths=(40, 35, 50))
    Xs[1][5:9, 2] = np.nan
    return CRFRecognizer(window=4, max_iterations=30).fit(Xs, ys, feature_set="cop"), Xs


def test_step_and_step_block_equal_filter_exactly(fitted):
    rec, Xs = fitted
    X = np.vstack(Xs)
    want = rec.filter(X)
    rec.reset()
    np.testing.assert_array_equal(np.stack([rec.step(x) for x in X]), want)
    rec.reset()
    parts = [rec.step_block(X[a:b]) for a, b in ((0, 7), (7, 7), (7, 60), (60, len(X)))]
    np.testing.assert_array_equal(np.vstack(parts), want)
    # the filter is the chain's forward recursion on the state scores
    ref = np.exp(chain.forward(np.zeros(3), rec.crf_.transition_,
                               rec.crf_.state_scores(X)).log_alpha)
    np.testing.assert_allclose(want, ref, atol=1e-12)
    assert rec.predict(X).tolist() == rec.crf_.predict_single(X)


def test_save_load_round_trip_is_exact(fitted, tmp_path):
    rec, Xs = fitted
    X = np.vstack(Xs)
    path = rec.save(tmp_path / "crf.npz")
    back = load_recognizer(path)
    assert isinstance(back, CRFRecognizer) and back.feature_set_ == "cop"
    assert back.get_params() == rec.get_params()
    np.testing.assert_array_equal(back.crf_.theta_, rec.crf_.theta_)
    np.testing.assert_array_equal(back.filter(X), rec.filter(X))
    np.testing.assert_array_equal(back.predict_proba(X), rec.predict_proba(X))
    np.testing.assert_array_equal(back.predict(X), rec.predict(X))
    rec.crf_.save(tmp_path / "plain.npz")
    crf = LinearChainCRF.load(tmp_path / "plain.npz")
    assert crf.predict([X]) == rec.crf_.predict([X])
    with np.load(path, allow_pickle=False) as npz:  # nothing needs pickle
        assert all(npz[k].dtype != object for k in npz.files)


def test_loading_another_kind_or_a_damaged_file_is_a_model_format_error(fitted, tmp_path):
    rec, Xs = fitted
    from recognizers.hmm_recognizer import HMMRecognizer

    hmm = HMMRecognizer().fit(Xs, [np.asarray(y) for y in toy_data(9, (40, 35, 50))[1]])
    hmm.save(tmp_path / "hmm.npz")
    with pytest.raises(ModelFormatError, match="not 'crf'"):
        LinearChainCRF.load(tmp_path / "hmm.npz")
    arrays = dict(np.load(rec.save(tmp_path / "crf.npz"), allow_pickle=False))
    arrays["theta"] = arrays["theta"][:-1]
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ModelFormatError, match="damaged"):
        load_recognizer(tmp_path / "bad.npz")


def test_bad_input_gives_clear_errors(fitted):
    rec, Xs = fitted
    with pytest.raises(ValueError, match="has 2 features"):
        rec.predict(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="infinite"):
        rec.filter(np.full((2, 3), np.inf))
    with pytest.raises(ValueError, match="shape"):
        rec.step(np.zeros(4))
    with pytest.raises(ValueError, match="y\\[0\\] has shape \\(3,\\) but X\\[0\\] has 40"):
        LinearChainCRF().fit(Xs, [["A"] * 3] * 3)
    with pytest.raises(ValueError, match="2 label sequences"):
        LinearChainCRF().fit(Xs, [["A"] * 40] * 2)
    with pytest.raises(ValueError, match="X\\[1\\] has 2 features"):
        LinearChainCRF().fit([Xs[0], Xs[1][:, :2]], [["A"] * 40, ["A"] * 35])
    with pytest.raises(ValueError, match="infinite"):
        LinearChainCRF().fit([np.full((2, 3), -np.inf)], [["A", "B"]])
    for bad, match in [(dict(c2=-1.0), "c2"), (dict(transitions="diag"), "transitions"),
                       (dict(thresholds="eye"), "thresholds"), (dict(window=-1), "window"),
                       (dict(max_iterations=0), "max_iterations")]:
        with pytest.raises(ValueError, match=match):
            CRFRecognizer(**bad).fit(Xs, toy_data(9, (40, 35, 50))[1])
    with pytest.raises(NotFittedError):
        CRFRecognizer().step(np.zeros(3))
    with pytest.raises(NotFittedError):
        LinearChainCRF().predict([Xs[0]])
    assert rec.predict(np.zeros((0, 3))).shape == (0,)
    assert rec.filter(np.zeros((0, 3))).shape == (0, 3)



def test_a_failed_fit_leaves_a_fitted_recognizer_unchanged(fitted):
    rec, Xs = fitted
    X = np.vstack(Xs)
    before = rec.filter(X)
    bad = [np.vstack([Xs[0][:, :2]] * 2)]
    with pytest.raises(ValueError):
        rec.fit([Xs[0], np.full((3, 3), np.inf)], [["A"] * 40, ["A"] * 3])
    with pytest.raises(ValueError):
        rec.fit(bad, None)
    assert rec.n_features_in_ == 3
    np.testing.assert_array_equal(rec.filter(X), before)
