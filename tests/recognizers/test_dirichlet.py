"""Dirichlet moments, eq 4.15 projections and the numba kernels that use them."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from recognizers.modelling.hmm import bmm_core as core
from recognizers.modelling import dirichlet as D

MODES = {"sum": core.MODE_SUM, "first": core.MODE_FIRST}


def _second(alpha_or_moments, mode):
    """The matched second moment of a Dirichlet block: E[sum theta^2] or E[theta_1^2]."""
    m2 = alpha_or_moments
    return m2.sum(-1) if mode == "sum" else m2[..., 0]


# --------------------------------------------------------------------------- moments


def test_raw_moment_reproduces_closed_forms():
    a = np.array([0.7, 2.0, 5.5])
    A = a.sum()
    assert np.allclose(D.raw_moment(a, [1, 0, 0]), a[0] / A, rtol=1e-13)
    assert np.allclose(D.raw_moment(a, [0, 2, 0]), a[1] * (a[1] + 1) / (A * (A + 1)), rtol=1e-13)
    assert np.allclose(D.raw_moment(a, [1, 0, 1]), a[0] * a[2] / (A * (A + 1)), rtol=1e-13)
    assert np.allclose(D.mean(a), a / A)
    assert np.allclose(D.second_moment(a), a * (a + 1) / (A * (A + 1)))
    assert np.allclose(D.variance(a), D.second_moment(a) - D.mean(a) ** 2)


def test_raw_moment_agrees_with_numerical_integration_on_a_beta():
    # E[theta^3 (1 - theta)] for Beta(2.5, 1.5) by quadrature
    from scipy.integrate import quad

    a = np.array([2.5, 1.5])
    val, _ = quad(lambda x: x**3 * (1 - x) * stats.beta(*a).pdf(x), 0, 1)
    assert D.raw_moment(a, [3, 1]) == pytest.approx(val, rel=1e-10)


def test_log_normaliser_matches_scipy_density():
    a = np.array([0.5, 1.5, 3.0])
    theta = np.array([0.2, 0.3, 0.5])
    logpdf = D.log_normaliser(a) + ((a - 1) * np.log(theta)).sum()
    assert logpdf == pytest.approx(stats.dirichlet(a).logpdf(theta), rel=1e-12)
    blocks = (a, np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert D.product_log_normaliser(blocks) == pytest.approx(
        D.log_normaliser(a) + D.log_normaliser(blocks[1]).sum()
    )


def test_expected_log_matches_digamma_formula():
    from scipy.special import digamma

    a = np.array([1.0, 2.0, 3.0])

    assert np.allclose(D.expected_log(a), digamma(a) - digamma(a.sum()))
    # some columns only (the HDP's E-step: the words its documents use), per row
    rows = np.random.default_rng(0).gamma(0.5, size=(4, 9))
    np.testing.assert_array_equal(D.expected_log(rows, columns=[1, 5, 8]),
                                  D.expected_log(rows)[:, [1, 5, 8]])


def test_product_raw_moment_multiplies_blocks():
    b1 = np.array([1.0, 2.0])
    b2 = np.array([[2.0, 1.0, 1.0], [0.5, 0.5, 3.0]])
    n1 = np.array([1, 0])
    n2 = np.array([[0, 1, 0], [0, 0, 2]])
    expected = D.raw_moment(b1, n1) * np.prod(D.raw_moment(b2, n2))
    assert D.product_raw_moment((b1, b2), (n1, n2)) == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize("bad", [[1.0, 0.0], [1.0, -2.0], [1.0, np.nan], [np.inf, 1.0]])
def test_invalid_concentrations_are_rejected(bad):
    with pytest.raises(ValueError):
        D.mean(np.array(bad))


def test_invalid_weights_are_rejected():
    a = np.ones((2, 3))
    with pytest.raises(ValueError):
        D.project_mixture([0.5, -0.5], a)
    with pytest.raises(ValueError):
        D.project_mixture([0.0, 0.0], a)
    with pytest.raises(ValueError):
        D.project_mixture([1.0], a)
    with pytest.raises(ValueError):
        D.project_mixture([0.5, 0.5], a, second_moment="log")


# --------------------------------------------------------------------------- projection


@pytest.mark.parametrize("mode", ["sum", "first"])
def test_projection_of_a_single_product_returns_it_unchanged(mode):
    rng = np.random.default_rng(0)
    blocks = (rng.gamma(2.0, size=(1, 4)), rng.gamma(2.0, size=(1, 3, 5)))
    out = D.project_product_mixture([1.0], blocks, second_moment=mode)
    for b, o in zip(blocks, out):
        assert np.array_equal(o, b[0])
    # identical components: the projection is the component (up to round-off)
    same = np.repeat(blocks[1], 3, axis=0)
    got = D.project_mixture([0.2, 0.3, 0.5], same, second_moment=mode)
    assert np.allclose(got, blocks[1][0], rtol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "first"])
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), C=st.integers(2, 5), K=st.integers(2, 6))
def test_projection_matches_first_and_the_chosen_second_moment(mode, seed, C, K):
    rng = np.random.default_rng(seed)
    alphas = rng.gamma(1.5, 3.0, size=(C, 3, K)) + 0.05
    w = rng.dirichlet(np.ones(C))
    out = D.project_mixture(w, alphas, second_moment=mode)
    m1, m2 = D.mixture_moments(w, alphas)
    assert np.all(out > 0) and np.all(np.isfinite(out))
    assert np.allclose(D.mean(out), m1, rtol=1e-12, atol=1e-14)
    got = _second(D.second_moment(out), mode)
    assert np.allclose(got, _second(m2, mode), rtol=1e-10)


def test_match_moments_inverts_eq_4_15_for_a_dirichlet():
    a = np.array([[0.3, 1.2, 4.0], [2.0, 2.0, 9.0]])
    for mode in ("sum", "first"):
        second = _second(D.second_moment(a), mode)
        back = D.match_moments(D.mean(a), second, second_moment=mode)
        assert np.allclose(back, a, rtol=1e-9)


def test_match_moments_guards_a_degenerate_second_moment():
    m = np.array([0.25, 0.75])
    # zero variance (second = first^2): not a Dirichlet; use the fallback precision
    with pytest.raises(ValueError, match="degenerate"):
        D.match_moments(m, m[0] ** 2)
    out = D.match_moments(m, m[0] ** 2, fallback_precision=7.0)
    assert np.allclose(out, m * 7.0)
    # negative variance from round-off
    out = D.match_moments(m, m[0] ** 2 - 1e-18, fallback_precision=3.0)
    assert np.allclose(out, m * 3.0)
    # over-dispersed beyond any Dirichlet: clipped to min_precision, stays positive
    out = D.match_moments(m, m[0] - 1e-30, min_precision=1e-6, fallback_precision=1.0)
    assert np.all(out > 0) and np.all(np.isfinite(out))


def test_projection_of_extreme_mixtures_stays_positive_and_finite():
    # two nearly-degenerate Dirichlets at opposite vertices: s is ~0, clipped to min_precision
    alphas = np.array([[1e12, 1e-3], [1e-3, 1e12]])
    out = D.project_mixture([0.5, 0.5], alphas, min_precision=1e-8)
    assert np.all(out > 0) and np.all(np.isfinite(out))
    # huge identical-ish precisions: variance ~1e-13, no cancellation trouble
    alphas = np.array([[3e12, 1e12], [3e12 + 1, 1e12]])
    out = D.project_mixture([0.5, 0.5], alphas)
    assert np.allclose(out.sum(), 4e12, rtol=1e-6)
    assert np.all(np.isfinite(out))


# --------------------------------------------------------------------------- kernels


def _base_plus_bumps(row, r, w):
    """Weights and components of (1 - r) Dir(row) + sum_j w_j Dir(row + 1_j)."""
    K = row.size
    comps = [row] + [row + np.eye(K)[j] for j in range(K)]
    weights = np.concatenate([[1.0 - r], w])
    keep = weights > 0
    return weights[keep], np.array(comps)[keep]


@pytest.mark.parametrize("mode", ["sum", "first"])
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), K=st.integers(2, 7), r=st.floats(0.01, 1.0))
def test_update_row_kernel_equals_the_explicit_projection(mode, seed, K, r):
    rng = np.random.default_rng(seed)
    row = rng.gamma(1.0, 5.0, size=K) + 0.01
    w = rng.dirichlet(np.ones(K)) * r
    weights, comps = _base_plus_bumps(row, w.sum(), w)
    expected = D.project_mixture(weights, comps, second_moment=mode)
    got = row.copy()
    core.update_row(got, w.sum(), w, MODES[mode], 1e-8, np.empty(K))
    assert np.allclose(got, expected, rtol=1e-10)


@pytest.mark.parametrize("mode", ["sum", "first"])
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), M=st.integers(2, 8), c=st.floats(0.0, 1.0))
def test_lazy_emission_kernel_equals_the_explicit_projection(mode, seed, M, c):
    rng = np.random.default_rng(seed)
    beta = rng.gamma(1.0, 4.0, size=M) + 0.01
    e = int(rng.integers(M))
    B = beta.sum()
    mbar = (beta / B)[None, None, :] * 2.0  # stored scaled: mean = mbar * xs
    xs = np.full((1, 1), 0.5)
    bprec = np.full((1, 1), B)
    bg = np.full((1, 1), 1.0 - ((beta / B) ** 2).sum())
    core.update_emission(mbar, xs, bprec, bg, 0, 0, e, c, M, MODES[mode], 1e-8)
    got = mbar[0, 0] * xs[0, 0] * bprec[0, 0]
    if c <= core.SKIP_WEIGHT:
        expected = beta
    else:
        comps = np.array([beta, beta + np.eye(M)[e]])
        weights = np.array([1.0 - c, c])
        keep = weights > 0
        expected = D.project_mixture(weights[keep], comps[keep], second_moment=mode)
    assert np.allclose(got, expected, rtol=1e-10)
    m = got / got.sum()
    assert bg[0, 0] == pytest.approx(1.0 - (m**2).sum(), rel=1e-10, abs=1e-14)


@pytest.mark.parametrize("mode", ["sum", "first"])
def test_vectorised_sensor_update_equals_the_scalar_one(mode):
    rng = np.random.default_rng(1)
    N, M = 5, 6
    beta = rng.gamma(1.0, 4.0, size=(1, N, M)) + 0.01
    beta[0, 0, :] = 1e-7  # tiny precision: exercises the rescaling of the lazy mean
    B = beta.sum(2)
    # lazily stored mean m = mbar * xs with xs near the renormalisation threshold
    state = [beta / B[:, :, None] / 1e-99, np.full((1, N), 1e-99), B.copy(),
             1 - ((beta / B[:, :, None]) ** 2).sum(2)]
    other = [a.copy() for a in state]
    for t in range(200):
        e = int(rng.integers(M))
        c = rng.dirichlet(np.ones(N) * 0.3)
        c[1] = 0.0 if t % 3 == 0 else c[1]  # skipped rows
        core.update_emissions_sensor(*state, 0, e, c, M, MODES[mode], 1e-8, np.empty((2, N)))
        for y in range(N):
            core.update_emission(*other, 0, y, e, c[y], M, MODES[mode], 1e-8)
    got = state[0] * (state[1] * state[2])[:, :, None]
    ref = other[0] * (other[1] * other[2])[:, :, None]
    assert np.allclose(got, ref, rtol=1e-9)
    assert state[1][0, 0] > 1e-99  # row 0 (tiny precision) folded its scale back into mbar
    assert np.all(got > 0) and np.all(np.isfinite(got))


@pytest.mark.parametrize("mode", ["sum", "first"])
def test_general_projection_kernel_equals_numpy(mode):
    rng = np.random.default_rng(3)
    for _ in range(20):
        C, K = rng.integers(1, 5), rng.integers(2, 6)
        comps = rng.gamma(1.0, 3.0, size=(C, K)) + 0.01
        bump = rng.integers(-1, K, size=C)
        u = rng.dirichlet(np.ones(C))
        explicit = comps + np.array([np.eye(K)[b] if b >= 0 else np.zeros(K) for b in bump])
        expected = D.project_mixture(u, explicit, second_moment=mode)
        out = np.empty(K)
        core.project_general(u, comps, K, bump.astype(np.int64), out, MODES[mode], 1e-8)
        assert np.allclose(out, expected, rtol=1e-10)


def test_best_symmetric_prior_maximises_the_dirichlet_terms_of_the_bound():
    # Rows of counts under a shared Dir(eta): the bound's terms with q = Dir(eta + n_k)
    # written out (n_k . E[log phi_k] - KL(q || Dir(eta))) on a grid of eta; the
    # empirical-Bayes value beats every grid point and recovers the eta that drew them.
    rng = np.random.default_rng(1)
    phi = rng.dirichlet(np.full(40, 0.05), size=6)
    counts = np.array([rng.multinomial(300, p) for p in phi], dtype=float)
    counts = np.vstack([counts, np.zeros(40)])  # an empty row adds nothing

    def terms(eta):
        q = eta + counts
        elog = D.expected_log(q)
        kl = (np.sum((q - eta) * elog) + np.sum(D.log_normaliser(q))
              - q.shape[0] * float(D.log_normaliser(np.full(40, eta))))
        return float(np.sum(counts * elog) - kl)

    best = D.best_symmetric_prior(counts, current=1.0)
    grid = np.exp(np.linspace(np.log(1e-3), np.log(5), 400))
    assert terms(best) >= max(terms(g) for g in grid) - 1e-6
    assert 0.03 < best < 0.08


@pytest.mark.parametrize("scale", [1e-13, 1e-9])
def test_best_symmetric_prior_with_tiny_expected_counts_is_the_exact_search(scale):
    # Soft counts of a fitted topic model: most entries tiny, which the search sums
    # by their series; its objective and argmax equal the exact gammaln ones.
    from scipy.special import gammaln
    from recognizers.modelling.sticks import _best_in_log_space
    rng = np.random.default_rng(4)
    counts = np.array([rng.multinomial(200, p) for p in
                       rng.dirichlet(np.full(50, 0.05), size=5)], dtype=float)
    counts += scale * rng.random(counts.shape)  # (every zero becomes tiny)
    W, totals = counts.shape[1], counts.sum(1)

    def neg(log_eta):
        eta = np.exp(log_eta)
        return -float(np.sum(gammaln(eta + counts)) - counts.size * gammaln(eta)
                      + counts.shape[0] * gammaln(W * eta)
                      - np.sum(gammaln(W * eta + totals)))

    best = D.best_symmetric_prior(counts, current=1.0)
    exact = _best_in_log_space(neg, 1.0, 1e-4, 10.0)
    assert best == pytest.approx(exact, rel=1e-9)
    assert 0.02 < best < 0.1


def test_the_priors_search_splits_its_counts_as_the_masks_do():
    # best_symmetric_prior's one-pass split (used rows; tiny values to the series)
    # must give numpy's masked copies, in the same order, so that the sums are too.
    from recognizers.modelling.dirichlet import _split_at
    rng = np.random.default_rng(0)
    n = rng.random((5, 7)) * np.where(rng.random((5, 7)) < 0.5, 1e-12, 1.0)
    n[2] = 0.0
    n[3, 4] = np.nan
    rows = n.sum(1) != 0  # (a NaN row is kept, as a row with counts)
    rows[2] = False
    rest, small = _split_at(n, rows, 1e-8)
    np.testing.assert_array_equal(rest, n[rows][~(n[rows] <= 1e-8)])
    np.testing.assert_array_equal(small, n[rows][n[rows] <= 1e-8])
    assert np.isnan(rest).sum() == 1 and small.size > 0 and rest.size > 0


@pytest.mark.parametrize("eta", [1e-3, 0.07, 2.0])
def test_log_gamma_row_sums_are_gammaln_sums(eta):
    # Topics Dir(eta + expected counts): most counts tiny (the series' side), some
    # zero, some large, one under eta (gammaln's side); every row and a column subset
    # against scipy's gammaln summed.
    from scipy.special import gammaln
    rng = np.random.default_rng(2)
    counts = rng.random((4, 300)) * np.where(rng.random((4, 300)) < 0.8, 1e-4 * eta, 50.0)
    counts[:, :20] = 0.0
    lam = eta + counts
    lam[1, 7] = 0.5 * eta
    columns = np.sort(rng.choice(300, 40, replace=False))
    # (the series' last term, s^3 psi''/6, is up to 3e-13 an entry here)
    np.testing.assert_allclose(D.log_gamma_row_sums(lam, eta), gammaln(lam).sum(1),
                               rtol=0, atol=3e-12)
    np.testing.assert_allclose(D.log_gamma_row_sums(lam, eta, columns),
                               gammaln(lam[:, columns]).sum(1), rtol=0, atol=3e-12)


def test_the_series_polygammas_are_scipys():
    from scipy.special import polygamma
    from recognizers.modelling.dirichlet import _polygammas
    for x in (1e-4, 0.0664, 0.5, 3.0, 10.0):
        assert _polygammas(x) == tuple(float(polygamma(j, x)) for j in range(3))
