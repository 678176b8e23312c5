"""Supervised HDP (paper 002): reduction to HDP at mu = 0, the label term against its
literal formula and finite differences, the kernel's fixed point, sklearn conventions,
npz round trip of the learned state, bad input, planted topics."""
import io
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from recognizers.modelling import SupervisedHDP
from recognizers.modelling.topics.hdp import HDP
from recognizers.modelling.topics.hdp_core import doc_bound, doc_estep, doc_estep_labelled
from recognizers.modelling.topics.hdp_moves import best_topic_start
from recognizers.modelling.topics.perplexity import check_counts
from recognizers.modelling.topics.shdp import (label_grad_varphi,
                                               label_statistics, label_term)
from recognizers.modelling.datasets import make_labelled_bars


def tiny(seed=0, D=3, W=5, K=3, T=2, C=2, N=4):
    """A tiny corpus with random normalised factors and weights (digest 002-6 item 3)."""
    rng = np.random.default_rng(seed)
    X = np.zeros((D, W), dtype=np.int64)
    for d in range(D):
        np.add.at(X[d], rng.integers(0, W, N), 1)
    M = check_counts(X)
    varphi = rng.dirichlet(np.ones(K), size=(D, T))
    zeta = rng.dirichlet(np.ones(T), size=M.nnz)
    mu = rng.normal(0, 2, (C, K))
    labels = rng.integers(0, C, D)
    return M, varphi, zeta, mu, labels


def literal_eq9(M, varphi, zeta, mu, labels):
    """Eq. (9) as printed: products over the tokens, no logs until the end."""
    total = 0.0
    for d in range(M.shape[0]):
        lo, hi = M.indptr[d], M.indptr[d + 1]
        tokens = np.repeat(np.arange(lo, hi), M.data[lo:hi])
        N = tokens.size
        P = np.array([zeta[e] @ varphi[d] for e in tokens])  # (N, K)
        thetabar = P.mean(0)
        F = sum(np.prod([P[n] @ np.exp(mu[l] / N) for n in range(N)])
                for l in range(mu.shape[0]))
        total += mu[labels[d]] @ thetabar - np.log(F)
    return total


def test_label_term_is_eq9_and_mu_gradient_matches_finite_differences():
    M, varphi, zeta, mu, labels = tiny()
    rows, P, N, thetabar = label_statistics(M, varphi, zeta)
    value, grad = label_term(mu, M, rows, P, N, thetabar, labels, with_grad=True)
    np.testing.assert_allclose(value, literal_eq9(M, varphi, zeta, mu, labels), rtol=1e-12)
    fd = np.zeros_like(mu)
    h = 1e-6
    for idx in np.ndindex(*mu.shape):
        up, dn = mu.copy(), mu.copy()
        up[idx] += h
        dn[idx] -= h
        fd[idx] = (label_term(up, M, rows, P, N, thetabar, labels)
                   - label_term(dn, M, rows, P, N, thetabar, labels)) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)


def test_label_gradient_in_varphi_matches_finite_differences():
    M, varphi, zeta, mu, labels = tiny(seed=1)
    grad = label_grad_varphi(mu, M, varphi, zeta, labels)

    def value(v):
        rows, P, N, thetabar = label_statistics(M, v, zeta)
        return label_term(mu, M, rows, P, N, thetabar, labels)

    h = 1e-6
    for idx in np.ndindex(*varphi.shape):
        up, dn = varphi.copy(), varphi.copy()
        up[idx] += h
        dn[idx] -= h
        np.testing.assert_allclose(grad[idx], (value(up) - value(dn)) / (2 * h),
                                   rtol=1e-6, atol=1e-8)


def test_eq9_is_a_bound_for_one_word_but_only_an_approximation_beyond():  # P1
    """Brute force E_q[log softmax_y(mu thetabar)] over every (c, z): for a one-word
    document eq. (9) is Jensen's bound; for more words it can exceed the truth."""
    rng = np.random.default_rng(5)
    K, T, C = 3, 2, 2

    def exact(d, M, varphi, zeta, mu, y):
        lo, hi = M.indptr[d], M.indptr[d + 1]
        tokens = np.repeat(np.arange(lo, hi), M.data[lo:hi])
        total = 0.0
        for c in itertools.product(range(K), repeat=T):
            pc = np.prod([varphi[d, t, c[t]] for t in range(T)])
            for z in itertools.product(range(T), repeat=tokens.size):
                pz = np.prod([zeta[e, z[n]] for n, e in enumerate(tokens)])
                tb = np.bincount([c[zn] for zn in z], minlength=K) / tokens.size
                s = mu @ tb
                total += pc * pz * (s[y] - np.log(np.exp(s).sum()))
        return total

    above = 0
    for trial in range(20):
        X = np.zeros((2, 4), dtype=np.int64)
        X[0, rng.integers(4)] = 1
        np.add.at(X[1], rng.integers(0, 4, 3), 1)
        M = check_counts(X)
        varphi = rng.dirichlet(np.ones(K), size=(2, T))
        zeta = rng.dirichlet(np.ones(T), size=M.nnz)
        mu = rng.normal(0, 3, (C, K))
        y = np.array([0, 1])
        rows, P, N, thetabar = label_statistics(M, varphi, zeta)
        for d in range(2):
            Md = check_counts(X[d:d + 1])
            sl = slice(M.indptr[d], M.indptr[d + 1])
            r, Pd, Nd, tb = label_statistics(Md, varphi[d:d + 1], zeta[sl])
            approx = label_term(mu, Md, r, Pd, Nd, tb, y[d:d + 1])
            truth = exact(d, M, varphi, zeta, mu, y[d])
            if d == 0:
                assert approx <= truth + 1e-12
            else:
                above += approx > truth + 1e-9
    assert above > 0  # P1: not a bound when words share c_j


def _run_kernel(kernel, M, varphi, zeta, K, W, fresh, *extra):
    rng = np.random.default_rng(9)
    elog_phi = np.log(rng.dirichlet(np.ones(W), size=K))
    elog_beta = np.log(rng.dirichlet(np.ones(K)))
    sstats, counts, bounds = np.zeros((K, W)), np.zeros(K), np.zeros(M.shape[0])
    kernel(M.indptr, M.indices, M.data.astype(float), elog_phi, elog_beta, 1.0, varphi,
           zeta, fresh, 2, 30, 1e-9, sstats, counts, bounds, *extra)
    return varphi, zeta, sstats, counts, bounds, elog_phi, elog_beta


@pytest.mark.parametrize("fresh", [True, False])
def test_kernel_with_mu_zero_makes_exactly_hdps_updates(fresh):
    X, y, _, _, _ = make_labelled_bars(40, 30, random_state=2)
    M = check_counts(X)
    K, T = 6, 3
    rng = np.random.default_rng(3)
    varphi0 = np.zeros((M.shape[0], T, K)) if fresh else rng.dirichlet(np.ones(K), (M.shape[0], T))
    zeta0 = rng.dirichlet(np.ones(T), size=M.nnz)
    plain = _run_kernel(doc_estep, M, varphi0.copy(), zeta0.copy(), K, M.shape[1], fresh)
    labelled = _run_kernel(doc_estep_labelled, M, varphi0.copy(), zeta0.copy(), K,
                           M.shape[1], fresh, np.zeros((3, K)), y.astype(np.int64), 1.0)
    for a, b in zip(plain[:5], labelled[:5]):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
    # and the label terms do move the factors when mu != 0
    moved = _run_kernel(doc_estep_labelled, M, varphi0.copy(), zeta0.copy(), K,
                        M.shape[1], fresh, np.full((3, K), 5.0) * np.eye(3, K),
                        y.astype(np.int64), 1.0)
    assert np.abs(moved[0] - plain[0]).max() > 1e-3


def test_kernel_fixed_point_is_stationary_for_eq18():
    """At the labelled kernel's converged factors, log varphi_tk minus the gradient
    (18) (HDP terms + label term) is constant over k: the varphi fixed point."""
    M, _, _, mu, labels = tiny(seed=4, D=2, W=6, K=3, T=2, C=2, N=6)
    K, T = 3, 2
    rng = np.random.default_rng(0)
    varphi = rng.dirichlet(np.ones(K), size=(M.shape[0], T))
    zeta = rng.dirichlet(np.ones(T), size=M.nnz)
    elog_phi = np.log(rng.dirichlet(np.ones(M.shape[1]), size=K))
    elog_beta = np.log(rng.dirichlet(np.ones(K)))
    sstats, counts, bounds = np.zeros((K, M.shape[1])), np.zeros(K), np.zeros(M.shape[0])
    doc_estep_labelled(M.indptr, M.indices, M.data.astype(float), elog_phi, elog_beta, 1.0,
                       varphi, zeta, False, 0, 2000, 0.0, sstats, counts, bounds, mu,
                       labels.astype(np.int64), 1.0)
    rows = np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))
    hdp = np.zeros_like(varphi)
    for e in range(M.nnz):
        hdp[rows[e]] += M.data[e] * zeta[e][:, None] * elog_phi[:, M.indices[e]][None, :]
    hdp += elog_beta
    resid = np.log(varphi) - hdp - label_grad_varphi(mu, M, varphi, zeta, labels)
    # (the kernel's step search stops at relative bound changes of 1e-12, which leaves
    # log varphi ~1e-6 from the fixed point; an undamped cycle is 1e-1 off)
    np.testing.assert_allclose(resid - resid.mean(2, keepdims=True), 0.0, atol=1e-5)


def test_label_weight_zero_fit_and_partial_fit_are_hdp():
    X, y, _, _, _ = make_labelled_bars(60, 30, random_state=1)
    # (the two classes' defaults differ: eta and moves are set the same here)
    kw = dict(doc_truncation=4, max_iter=8, tol=0, topic_word_prior=0.5, moves=True,
              random_state=0)
    h = HDP(8, **kw).fit(X)
    s = SupervisedHDP(8, label_weight=0, **kw).fit(X, y)
    # (equal up to round-off: the labelled kernel normalises in log space, then
    # exponentiates; the plain one takes one exponential per entry)
    for name in HDP._learned_attributes:
        np.testing.assert_allclose(getattr(s, name), getattr(h, name), rtol=1e-9, atol=1e-10)
    assert np.all(s.coef_ == 0)
    h = HDP(8, doc_truncation=4, total_samples=60, topic_word_prior=0.5, random_state=0)
    s = SupervisedHDP(8, doc_truncation=4, total_samples=60, topic_word_prior=0.5,
                      label_weight=0, random_state=0)
    for i in range(0, 60, 20):
        h.partial_fit(X[i:i + 20])
        s.partial_fit(X[i:i + 20], y[i:i + 20], classes=[0, 1, 2])
    np.testing.assert_allclose(s.components_, h.components_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(s.transform(X[:5]), h.transform(X[:5]), rtol=0, atol=1e-10)


def test_planted_topics_beat_chance():
    X, y, thetabar, _, mu = make_labelled_bars(400, 60, random_state=0)
    m = SupervisedHDP(12, doc_truncation=5, max_iter=30, topic_word_prior=0.5,
                      random_state=0).fit(X[:300], y[:300])
    acc = m.score(X[300:], y[300:])
    oracle = np.mean(np.argmax(thetabar[300:] @ mu.T, 1) == y[300:])
    assert acc > 0.7 and acc > oracle - 0.15  # chance is 1/3
    proba = m.predict_proba(X[300:])
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert np.all(m.classes_[proba.argmax(1)] == m.predict(X[300:]))
    assert 3 <= m.n_topics_used_ <= 12


def test_defaults_are_well_above_chance_on_planted_topics():
    # issue 31: SupervisedHDP() as a new user would call it (chance 1/3)
    X, y, thetabar, _, mu = make_labelled_bars(300, 40, random_state=1)
    m = SupervisedHDP(random_state=0).fit(X[:200], y[:200])
    acc = m.score(X[200:], y[200:])
    oracle = np.mean(np.argmax(thetabar[200:] @ mu.T, 1) == y[200:])
    assert acc > 0.7 and acc > oracle - 0.15, (acc, oracle)
    assert 3 <= m.n_topics_used_ < m.n_components


def test_learned_state_round_trips_through_npz():
    X, y, _, _, _ = make_labelled_bars(80, 30, random_state=3)
    labels = np.array(["sit", "stand", "walk"])[y]
    m = SupervisedHDP(8, doc_truncation=4, max_iter=5, random_state=0).fit(X, labels)
    buf = io.BytesIO()
    np.savez(buf, **{name: getattr(m, name) for name in m._learned_attributes})
    buf.seek(0)
    saved = np.load(buf, allow_pickle=False)
    fresh = SupervisedHDP(**m.get_params())
    for name in fresh._learned_attributes:
        value = saved[name]
        setattr(fresh, name, value.item() if value.ndim == 0 and value.dtype.kind in "if"
                else value)
    np.testing.assert_array_equal(fresh.predict_proba(X), m.predict_proba(X))
    np.testing.assert_array_equal(fresh.predict(X), m.predict(X))
    # and online learning continues from the restored state
    fresh.partial_fit(X[:20], labels[:20])
    assert fresh.n_batches_ == 1


def test_sklearn_conventions():
    X, y, _, _, _ = make_labelled_bars(60, 30, random_state=4)
    m = SupervisedHDP(6, doc_truncation=3, max_iter=4, random_state=0)
    c = clone(m)
    assert c.get_params() == m.get_params() and not hasattr(c, "coef_")
    pipe = Pipeline([("counts", FunctionTransformer(sp.csr_matrix, accept_sparse=True)),
                     ("shdp", c)]).fit(X, y)
    assert pipe.score(X, y) > 0.5
    assert pipe.predict_proba(X).shape == (60, 3)
    on = SupervisedHDP(6, doc_truncation=3, total_samples=60, random_state=0)
    on.partial_fit(X[:30], y[:30], classes=np.array([0, 1, 2]))
    on.partial_fit(X[30:], y[30:])
    assert on.n_batches_ == 2 and list(on.classes_) == [0, 1, 2]
    assert on.coef_.shape == (3, 6) and np.all(np.isfinite(on.coef_))
    # a class that no document of a mini-batch has is fine when declared up front
    on.partial_fit(X[y != 2][:10], y[y != 2][:10])
    assert on.n_batches_ == 3


def test_bad_input_raises_clear_errors():
    X, y, _, _, _ = make_labelled_bars(30, 20, random_state=5)
    new = lambda: SupervisedHDP(4, doc_truncation=2, max_iter=2, random_state=0)  # noqa: E731
    for bad, msg in [(X - 1, "Negative"), (X + 1j, "Complex"),
                     (np.where(X > 0, np.nan, 0.0), "NaN"), (X[0], "2D array"),
                     (np.zeros((0, 5)), "0 sample")]:
        with pytest.raises(ValueError, match=msg):
            new().fit(bad, y[:len(bad)] if np.ndim(bad) == 2 else y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples: \\[30, 29\\]"):
        new().fit(X, y[:29])
    with pytest.raises(ValueError, match="at least 2 classes"):
        new().fit(X, np.zeros(30, dtype=int))
    with pytest.raises(ValueError):
        new().fit(X, np.where(y == 0, np.nan, y.astype(float)))
    with pytest.raises(ValueError, match="classes must be given"):
        new().partial_fit(X, y)
    m = new().partial_fit(X, y, classes=[0, 1, 2])
    with pytest.raises(ValueError, match="not in classes"):
        m.partial_fit(X, np.where(y == 0, 7, y))
    with pytest.raises(ValueError, match="classes differ"):
        m.partial_fit(X, y, classes=[0, 1, 2, 3])
    with pytest.raises(ValueError, match="10 features, but SupervisedHDP is expecting 50"):
        m.predict(X[:, :10])
    with pytest.raises(ValueError):
        SupervisedHDP(label_penalty=0).fit(X, y)


def sharp_bars_model(T=4):
    """A SupervisedHDP whose corpus is set by hand: 3 sharp bars over 12 words (4 each),
    equal corpus sticks, class l loading on bar l."""
    K, W = 3, 12
    m = SupervisedHDP(K, doc_truncation=T, topic_word_prior=0.01, random_state=0)
    m.corpus_concentration_, m.doc_concentration_, m.topic_word_prior_ = 1.0, 1.0, 0.01
    m.components_ = np.full((K, W), 0.01)
    for k in range(K):
        m.components_[k, 4 * k:4 * k + 4] += 500.0
    m.stick_counts_ = np.full(K, 100.0)
    m.topic_counts_ = m.components_.sum(1) - 0.01 * W
    m._set_corpus_sticks()
    m.seed_, m.n_features_in_ = 0, W
    m.classes_, m.coef_ = np.arange(K), 5.0 * np.eye(K)
    return m


def doc_bounds(m, M, varphi, zeta):
    elog_phi, elog_beta = m._elogs()
    out = np.zeros(M.shape[0])
    doc_bound(M.indptr, M.indices, M.data, elog_phi, elog_beta, float(m.doc_concentration_),
              varphi, zeta, out)
    return out


def test_test_time_factors_find_a_minority_theme():
    # Disjoint sharp bars: a word's topic is known, so thetabar must equal the bars'
    # word shares; each document has a big and a small theme.
    m = sharp_bars_model()
    rng = np.random.default_rng(0)
    X = np.zeros((30, 12), dtype=np.int64)
    share = np.zeros((30, 3))
    for d in range(30):
        big, small = rng.choice(3, 2, replace=False)
        n_small = rng.integers(3, 15)
        np.add.at(X[d], 4 * big + rng.integers(0, 4, 60 - n_small), 1)
        np.add.at(X[d], 4 * small + rng.integers(0, 4, n_small), 1)
        share[d, big], share[d, small] = (60 - n_small) / 60, n_small / 60
    np.testing.assert_allclose(m.transform(X), share, atol=0.01)
    assert np.all(m.predict(X) == share.argmax(1))


def test_test_time_factors_take_the_better_start_by_the_bound():
    X, y, _, _, _ = make_labelled_bars(60, 40, random_state=2)
    m = SupervisedHDP(8, doc_truncation=4, max_iter=6, random_state=0).fit(X[:40], y[:40])
    M, varphi, zeta = m.local_factors(X[40:])
    varphi0, zeta0, _ = m._random_start_factors(M)       # the random start alone
    varphi2, zeta2 = best_topic_start(M, *m._elogs(), m.doc_truncation)
    m._estep(M, varphi2, zeta2, False)                   # the words' best topics
    best = np.maximum(doc_bounds(m, M, varphi0, zeta0), doc_bounds(m, M, varphi2, zeta2))
    # (the second start is taken only if it is better by more than 1e-9 of the bound)
    np.testing.assert_allclose(doc_bounds(m, M, varphi, zeta), best, rtol=1e-9)
    # rows stay distributions, and a document's factors do not depend on the others
    np.testing.assert_allclose(varphi.sum(2), 1.0)
    np.testing.assert_allclose(zeta.sum(1), 1.0)
    one = np.vstack([m.transform(X[40 + i:41 + i]) for i in range(20)])
    np.testing.assert_allclose(one, m.transform(X[40:]), rtol=0, atol=1e-12)


def test_best_topic_start_of_an_empty_document_and_more_document_than_corpus_topics():
    m = sharp_bars_model(T=5)                            # T = 5 > K = 3
    X = np.zeros((2, 12), dtype=np.int64)
    X[1, [0, 5, 9]] = [3, 2, 1]
    M = check_counts(X)
    varphi, zeta = best_topic_start(M, *m._elogs(), 5)
    np.testing.assert_allclose(varphi.sum(2), 1.0)
    np.testing.assert_allclose(zeta.sum(1), 1.0)
    # document 1: its three topics first, largest first (bar 0 has 3 words, bar 1 2)
    assert list(varphi[1, :3].argmax(1)) == [0, 1, 2]
    theta = m.transform(X)
    assert np.all(np.isfinite(theta)) and np.allclose(theta.sum(1), 1.0)
    np.testing.assert_allclose(theta[1], [0.5, 1 / 3, 1 / 6], atol=0.01)
