"""hmmlearn-style HMMs: EM monotonicity, recovery, API conventions, hmmlearn agreement."""
import warnings

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from recognizers.modelling.hmm import (
    GMMHMM,
    CategoricalEmissions,
    CategoricalHMM,
    ConvergenceWarning,
    GaussianHMM,
    MultiCategoricalHMM,
)
from recognizers.base import NotFittedError
from recognizers.modelling.em import ConvergenceMonitor, check_random_state

SQRT_EPS = np.sqrt(np.finfo(float).eps)


def assert_monotone(history):
    h = np.asarray(history)
    drops = h[:-1] - h[1:]
    tol = SQRT_EPS * np.maximum(1.0, np.abs(h[:-1]))
    assert np.all(drops <= tol), "EM objective decreased: %s" % drops[drops > tol]


def sticky(K, stay=0.9):
    A = np.full((K, K), (1 - stay) / (K - 1))
    np.fill_diagonal(A, stay)
    return A


def gaussian_truth(K=3, D=2, cov="diag"):
    m = GaussianHMM(K, covariance_type=cov, random_state=0)
    m.startprob_ = np.full(K, 1.0 / K)
    m.transmat_ = sticky(K)
    m.means_ = 4.0 * np.arange(K)[:, None] * np.ones(D) + np.arange(D)
    if cov == "diag":
        m.covars_ = np.full((K, D), 0.5)
    else:
        m.covars_ = np.tile(np.array([[0.6, 0.2], [0.2, 0.4]]), (K, 1, 1))
    return m


def fit_quiet(model, X, lengths=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("error", RuntimeWarning)  # a decrease would be an error
        return model.fit(X, lengths)


# --------------------------------------------------------------------------- monotonicity


@pytest.mark.parametrize("make", [
    lambda: GaussianHMM(4, n_iter=40, tol=0, random_state=1),
    lambda: GaussianHMM(4, "full", n_iter=40, tol=0, random_state=1, covars_prior=0.5,
                        covars_weight=5, means_weight=0.3, startprob_prior=2.0,
                        transmat_prior=3.0),
    lambda: GMMHMM(3, n_mix=2, n_iter=40, tol=0, random_state=1, weights_prior=1.5),
    lambda: GMMHMM(2, n_mix=2, covariance_type="full", n_iter=30, tol=0, random_state=2),
    lambda: MultiCategoricalHMM(n_components=4, n_iter=40, tol=0, random_state=1,
                                emissionprob_prior=1.3, transmat_prior=2.0),
    lambda: CategoricalHMM(5, n_iter=40, tol=0, random_state=1),
], ids=["diag", "full+priors", "gmm", "gmm-full", "multicat+priors", "categorical"])
def test_em_never_decreases_its_objective(make):
    model = make()
    rng = np.random.default_rng(0)
    if isinstance(model, MultiCategoricalHMM):
        truth = MultiCategoricalHMM.from_params(np.full(3, 1 / 3), sticky(3), CategoricalEmissions(
            rng.dirichlet(np.ones(6), size=(3, 3)) if not isinstance(model, CategoricalHMM)
            else rng.dirichlet(np.ones(6), size=(1, 3)), [6] * (1 if isinstance(
                model, CategoricalHMM) else 3)))
        X, _ = truth.sample(600, random_state=3)
    else:
        X, _ = gaussian_truth().sample(600, random_state=3)
    fit_quiet(model, X, [250, 350])
    assert len(model.history_) == model.n_iter_ == model.n_iter
    assert_monotone(list(model.history_) + [model.lower_bound_])
    assert model.monitor_.history == list(model.history_)


def test_em_stays_monotone_and_nan_free_with_more_states_than_data_supports():
    # 8 states for 2 clusters: some states empty out; nothing becomes NaN.
    rng = np.random.default_rng(1)
    X = np.concatenate([rng.normal(0, 1, (40, 2)), rng.normal(50, 1, (40, 2))])
    m = fit_quiet(GaussianHMM(8, n_iter=30, tol=0, random_state=0, covars_prior=0.0), X)
    assert_monotone(m.history_)
    for a in (m.startprob_, m.transmat_, m.means_, m.covars_):
        assert np.isfinite(a).all()
    np.testing.assert_allclose(m.transmat_.sum(1), 1.0)
    assert np.all(m.covars_.diagonal(axis1=1, axis2=2) >= m.min_covar - 1e-15)
    c = fit_quiet(MultiCategoricalHMM(n_components=6, n_iter=20, tol=0, random_state=0),
                  rng.integers(0, 2, size=(30, 2)))
    assert np.isfinite(c.emissionprob_).all() and np.isfinite(c.transmat_).all()


# --------------------------------------------------------------------------- recovery


def match(true_means, est_means):
    cost = ((true_means[:, None] - est_means[None]) ** 2).sum(-1)
    return linear_sum_assignment(cost)[1]


@pytest.mark.parametrize("cov", ["diag", "full"])
def test_sampling_then_fitting_recovers_gaussian_parameters(cov):
    truth = gaussian_truth(cov=cov)
    X, Z = truth.sample(4000, random_state=7)
    m = fit_quiet(GaussianHMM(3, cov, n_iter=100, random_state=0, n_init=2), X,
                  [1000, 1500, 1500])
    assert m.converged_
    perm = match(truth.means_, m.means_)
    np.testing.assert_allclose(m.means_[perm], truth.means_, atol=0.1)
    np.testing.assert_allclose(m.covars_[perm], truth.covars_, atol=0.1)
    np.testing.assert_allclose(m.transmat_[np.ix_(perm, perm)], truth.transmat_, atol=0.04)
    # perm[true state] = learned state, so argsort(perm) maps learned -> true.
    assert np.mean(np.argsort(perm)[m.predict(X, [1000, 1500, 1500])] == Z) > 0.98


def test_sampling_then_fitting_recovers_multi_sensor_emissions():
    rng = np.random.default_rng(2)
    K, S, M = 3, 3, 5
    B = rng.dirichlet(0.5 * np.ones(M), size=(S, K))
    truth = MultiCategoricalHMM.from_params(np.full(K, 1 / K), sticky(K, 0.95),
                                            CategoricalEmissions(B, [M] * S))
    X, Z = truth.sample(6000, random_state=1)
    m = fit_quiet(MultiCategoricalHMM(n_components=K, n_iter=200, n_init=5, random_state=0,
                                      tol=1e-4), X)
    post = m.predict_proba(X)
    C = np.zeros((K, K))
    np.add.at(C, (Z, m.predict(X)), 1)
    perm = linear_sum_assignment(C, maximize=True)[1]  # true k -> learned perm[k]
    np.testing.assert_allclose(m.emissionprob_[:, perm, :M], B, atol=0.05)
    np.testing.assert_allclose(m.transmat_[np.ix_(perm, perm)], truth.transmat_, atol=0.03)
    assert post.shape == (6000, K)


def test_gmm_fit_separates_bimodal_states():
    rng = np.random.default_rng(3)
    Z = np.repeat(rng.integers(0, 2, 40), 50)
    modes = rng.integers(0, 2, Z.size)
    centre = np.array([[[-6.0], [-3.0]], [[3.0], [6.0]]])[Z, modes]
    X = centre + 0.3 * rng.normal(size=(Z.size, 1))
    m = fit_quiet(GMMHMM(2, n_mix=2, n_iter=100, random_state=0, n_init=2), X)
    pred = m.predict(X)
    assert max(np.mean(pred == Z), np.mean(pred != Z)) > 0.99
    np.testing.assert_allclose(np.sort(m.means_.ravel()), [-6, -3, 3, 6], atol=0.1)


# --------------------------------------------------------------------------- API


def test_restarts_keep_the_best_objective_and_are_reproducible():
    X, _ = gaussian_truth(K=3).sample(500, random_state=2)
    # The first restart draws what a single fit with the same seed draws.
    single = fit_quiet(GaussianHMM(3, n_iter=30, random_state=0), X).lower_bound_
    multi = fit_quiet(GaussianHMM(3, n_iter=30, n_init=5, random_state=0), X)
    assert multi.lower_bound_ >= single - 1e-9
    again = fit_quiet(GaussianHMM(3, n_iter=30, n_init=5, random_state=0), X)
    np.testing.assert_array_equal(again.means_, multi.means_)
    assert multi.lower_bound_ == pytest.approx(multi.score(X) + multi._log_prior_emissions(
        multi._emissions()), rel=1e-12)


def test_convergence_warning_and_attributes():
    X, _ = gaussian_truth().sample(300, random_state=1)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        m = GaussianHMM(3, n_iter=2, tol=0.0, random_state=0).fit(X)
    assert m.converged_ is False and m.n_iter_ == 2 and len(m.history_) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = GaussianHMM(3, n_iter=500, tol=1e-3, random_state=0).fit(X)
    assert m.converged_ and m.n_iter_ < 500
    assert m.history_[-1] - m.history_[-2] < 1e-3


def test_monitor_flags_decreases():
    mon = ConvergenceMonitor(tol=1e-2, n_iter=10)
    mon.report(-10.0)
    with pytest.warns(RuntimeWarning, match="decreased"):
        mon.report(-10.5)
    assert mon.decreases == [(1, 0.5)]


def test_params_letters_and_sets_are_equivalent_and_respected():
    truth = gaussian_truth()
    X, _ = truth.sample(400, random_state=5)
    a = GaussianHMM(3, n_iter=5, random_state=0, params="tm", init_params="stmc")
    b = GaussianHMM(3, n_iter=5, random_state=0, params={"transmat", "means"},
                    init_params={"startprob", "transmat", "means", "covars"})
    fit_quiet(a, X)
    fit_quiet(b, X)
    np.testing.assert_array_equal(a.means_, b.means_)
    np.testing.assert_allclose(a.startprob_, 1 / 3)  # initialised, never learned
    # Parameters outside init_params start from the values that were set.
    c = GaussianHMM(3, n_iter=3, init_params="", params="m")
    c.startprob_, c.transmat_ = truth.startprob_, truth.transmat_
    c.means_, c.covars_ = truth.means_ + 0.5, np.full((3, 2), 0.5)
    fit_quiet(c, X)
    np.testing.assert_array_equal(c.transmat_, truth.transmat_)
    assert np.abs(c.means_ - truth.means_).max() < 0.3
    # hmmlearn's rule: parameters neither set nor named in init_params are initialised.
    d = fit_quiet(GaussianHMM(3, init_params="mc", n_iter=2), X)
    assert d.startprob_.shape == (3,) and d.transmat_.shape == (3, 3)
    with pytest.raises(ValueError, match="unknown letter 'x'"):
        GaussianHMM(3, params="stx").fit(X)
    with pytest.raises(ValueError, match="unknown parameter names"):
        GaussianHMM(3, params={"emissionprob"}).fit(X)


def test_validation_errors_are_clear():
    X, _ = gaussian_truth().sample(50, random_state=1)
    with pytest.raises(NotFittedError):
        GaussianHMM(2).predict(X)
    assert not hasattr(GaussianHMM(2), "means_")
    with pytest.raises(ValueError, match="lengths sum to"):
        GaussianHMM(2, n_iter=1).fit(X, [10, 10])
    with pytest.raises(ValueError, match="NaN"):
        GaussianHMM(2).fit(np.full((5, 2), np.nan))
    with pytest.raises(ValueError, match="'covariance_type' parameter of .* must be a str among"):
        GaussianHMM(2, covariance_type="sphere").fit(X)
    with pytest.raises(ValueError, match="n_components"):
        GaussianHMM(0).fit(X)
    m = fit_quiet(GaussianHMM(2, n_iter=3, random_state=0), X)
    with pytest.raises(ValueError, match="features"):
        m.score(X[:, :1])
    m.transmat_ = [[0.5, 0.4], [0.5, 0.5]]
    with pytest.raises(ValueError, match="rows must sum to 1"):
        m.score(X)
    with pytest.raises(ValueError, match="integer symbols"):
        MultiCategoricalHMM(n_components=2).fit(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="out of range"):
        MultiCategoricalHMM(n_components=2, n_values=[2, 2]).fit(np.array([[0, 3], [1, 1]]))
    with pytest.raises(ValueError, match=r"shape \(n_samples, 1\)"):
        CategoricalHMM(2).fit(np.zeros((4, 2), dtype=int))
    with pytest.raises(TypeError, match="emissions must be a CategoricalEmissions"):
        MultiCategoricalHMM.from_params(np.ones(2) / 2, None, None)
    with pytest.raises(ValueError, match="random_state"):
        check_random_state("seed")


def test_multicategorical_builds_from_parameters_and_fits_hmmlearn_style():
    em = CategoricalEmissions(np.array([[[0.9, 0.1], [0.2, 0.8]]]), [2])
    m = MultiCategoricalHMM.from_params(np.array([0.5, 0.5]),
                                        np.array([[0.9, 0.1], [0.1, 0.9]]), em)
    assert m.n_components == 2 and m.emissions_ is em
    np.testing.assert_array_equal(m.log_transmat_, np.log(m.transmat_))
    X = np.array([[0], [0], [1], [1]])
    assert m.predict(X).tolist() == [0, 0, 1, 1]
    assert "startprob" not in m.get_params()
    h = MultiCategoricalHMM(2, random_state=0, n_iter=5)  # hmmlearn-style positional
    assert h.n_components == 2 and not hasattr(h, "startprob_")
    fit_quiet(h, np.tile(X, (5, 1)))
    assert h.emissionprob_.shape == (1, 2, 3) and h.n_values_.tolist() == [2]
    assert "n_components=2" in repr(h)
    # A missing reading (symbol n_values) is an error unless asked for; then it
    # carries no evidence.
    with pytest.raises(ValueError, match="missing='sentinel'"):
        h._compute_log_likelihood(np.array([[2]]))
    h.set_params(missing="sentinel")
    np.testing.assert_allclose(h._compute_log_likelihood(np.array([[2]])), 0.0)


def test_sample_shapes_and_reproducibility():
    for m in (gaussian_truth(), gaussian_truth(cov="full")):
        X, Z = m.sample(50, random_state=3)
        X2, Z2 = m.sample(50, random_state=3)
        assert X.shape == (50, 2) and Z.shape == (50,)
        np.testing.assert_array_equal(X, X2)
        _, Z3 = m.sample(5, currstate=2)
        assert Z3[0] == 2
    c = CategoricalHMM(2)
    c.startprob_, c.transmat_, c.emissionprob_ = [1, 0], sticky(2), [[0.7, 0.3], [0.1, 0.9]]
    X, Z = c.sample(20000, random_state=0)
    assert X.shape == (20000, 1) and X.dtype.kind == "i"
    assert np.mean(X[Z == 0, 0] == 0) == pytest.approx(0.7, abs=0.02)


def test_information_criteria_count_free_parameters():
    m = gaussian_truth()  # K=3, D=2, diag
    X, _ = m.sample(100, random_state=0)
    n = 2 + 6 + 6 + 6
    assert m.aic(X) == pytest.approx(-2 * m.score(X) + 2 * n)
    assert m.bic(X) == pytest.approx(-2 * m.score(X) + n * np.log(100))


# --------------------------------------------------------------------------- hmmlearn


def _ref_models(hmm, rng):
    K, D, M = 3, 2, 4
    pi, A = rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(K), size=K)
    out = []
    for cov in ("diag", "full"):
        c = rng.uniform(0.5, 2, (K, D)) if cov == "diag" else \
            (lambda L: L @ np.swapaxes(L, 1, 2) + np.eye(D))(rng.normal(size=(K, D, D)))
        mu = 2 * rng.normal(size=(K, D))
        pair = (GaussianHMM(K, cov), hmm.GaussianHMM(K, cov))
        for p in pair:
            p.startprob_, p.transmat_, p.means_, p.covars_ = pi, A, mu, c
        out.append((cov, pair))
    B = rng.dirichlet(np.ones(M), size=K)
    pair = (CategoricalHMM(K), hmm.CategoricalHMM(K, n_features=M))
    for p in pair:
        p.startprob_, p.transmat_, p.emissionprob_ = pi, A, B
    out.append(("categorical", pair))
    w, gm, gc = rng.dirichlet(np.ones(2), size=K), 2 * rng.normal(size=(K, 2, D)), \
        rng.uniform(0.5, 2, (K, 2, D))
    pair = (GMMHMM(K, 2), hmm.GMMHMM(K, 2))
    for p in pair:
        p.startprob_, p.transmat_, p.weights_, p.means_, p.covars_ = pi, A, w, gm, gc
    out.append(("gmm", pair))
    return out


def path_score(model, X, lengths, path):
    ll = model._compute_log_likelihood(X)
    lp, lA = np.log(model.startprob_), np.log(model.transmat_)
    total, a = 0.0, 0
    for n in lengths:
        p = path[a:a + n]
        total += lp[p[0]] + ll[a + np.arange(n), p].sum() + lA[p[:-1], p[1:]].sum()
        a += n
    return total


def test_agreement_with_hmmlearn_on_identical_parameters():
    hmm = pytest.importorskip("hmmlearn.hmm")
    rng = np.random.default_rng(11)
    for name, (ours, ref) in _ref_models(hmm, rng):
        X, _ = ref.sample(300, random_state=4)
        lengths = [100, 1, 199]
        assert ours.score(X, lengths) == pytest.approx(ref.score(X, lengths), rel=1e-9), name
        np.testing.assert_allclose(ours.predict_proba(X, lengths), ref.predict_proba(X, lengths),
                                   atol=1e-9, err_msg=name)
        lp_o, path_o = ours.decode(X, lengths)
        lp_r, path_r = ref.decode(X, lengths)
        assert lp_o == pytest.approx(lp_r, rel=1e-9)
        if name == "categorical":
            # Discrete symbols can tie exactly (a shifted alternation uses the same
            # transitions and emissions); both paths must then score the same.
            assert path_score(ours, X, lengths, path_o) == pytest.approx(
                path_score(ours, X, lengths, path_r), rel=1e-12)
        else:
            np.testing.assert_array_equal(path_o, path_r, name)
            np.testing.assert_array_equal(ours.predict(X, lengths), path_r, name)
        np.testing.assert_allclose(ours.covars_ if name != "categorical" else ours.emissionprob_,
                                   ref.covars_ if name != "categorical" else ref.emissionprob_)


@pytest.mark.parametrize("which", ["diag", "full", "categorical"])
def test_one_em_iteration_equals_hmmlearn(which):
    hmm = pytest.importorskip("hmmlearn.hmm")
    rng = np.random.default_rng(12)
    models = dict(_ref_models(hmm, rng))
    ours, ref = models[which]
    X, _ = ref.sample(400, random_state=5)
    for p in (ours, ref):
        p.init_params, p.n_iter = "", 1
    # Our monitor adds the log prior of the parameters (hmmlearn's covars_prior).
    prior0 = ours._log_prior_emissions(ours._emissions())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours.fit(X, [150, 250])
        ref.fit(X, [150, 250])
    np.testing.assert_allclose(ours.startprob_, ref.startprob_, atol=1e-12)
    np.testing.assert_allclose(ours.transmat_, ref.transmat_, atol=1e-12)
    if which == "categorical":
        np.testing.assert_allclose(ours.emissionprob_, ref.emissionprob_, atol=1e-12)
    else:
        np.testing.assert_allclose(ours.means_, ref.means_, atol=1e-12)
        np.testing.assert_allclose(ours.covars_, ref.covars_, atol=1e-12)
    assert ours.history_[0] - prior0 == pytest.approx(ref.monitor_.history[0], rel=1e-10)
