"""Dirichlet moments and moment-matching projections.

Conventions
-----------
A *Dirichlet block* is an array ``alpha`` whose **last axis** is the simplex
dimension; leading axes index independent Dirichlets (a product of Dirichlets
is therefore one array of shape ``(..., K)``, or a tuple of such arrays when the
blocks have different simplex sizes).  A *mixture* of products of Dirichlets
is a weight vector ``(C,)`` plus blocks stacked on a new leading axis
``(C, ..., K)``.

Moments (thesis eq 4.7 with its typo fixed; see also eq 7.7)::

    E[prod_i theta_i^{n_i}] = Gamma(a0) / Gamma(a0 + sum n) * prod_i Gamma(a_i + n_i) / Gamma(a_i)

(the thesis prints ``Gamma(a_i + n_i - 1)``, which gives a wrong mean).

Projection (thesis eq 4.15, Bayesian moment matching): a mixture is replaced by
the single Dirichlet with the same first moments ``E[theta_i]`` and one second
moment.  Writing ``m = E[theta]`` and ``s = sum_i alpha_i``::

    alpha_i = m_i * s,   s = (M[theta_1] - M[theta_1^2]) / (M[theta_1^2] - M[theta_1]^2)

(the thesis's eqs 7.9 / 7.25 print ``M[theta_ij]`` where ``M[theta_i1]``
belongs).  Two choices of the matched second moment are offered:

``"first"``
    ``E[theta_1^2]``, exactly as printed in the thesis (coordinate 0 here).
``"sum"`` (default)
    ``E[sum_i theta_i^2]``, i.e. the trace of the second-moment matrix; this is
    also "one second-order moment" (footnote to 4.15: any second-order moment
    can be used).  It gives ``s + 1 = sum_i m_i (1 - m_i) / sum_i Var[theta_i]``,
    does not depend on the arbitrary order of the symbols and never divides by
    the variance of a single near-zero coordinate.

Both are evaluated in the numerically stable form
``s + 1 = m (1 - m) / Var`` where the mixture variance is accumulated from
non-negative terms (law of total variance: within-component plus
between-component), so no difference of nearly equal raw moments is formed.
For any mixture ``0 <= s <= max_c s_c`` holds exactly (``s_c`` the component
precisions); the result is clipped to ``[min_precision, max_c s_c]`` against
round-off, and when the variance is zero, negative or not finite the
precision falls back to the weighted mean of the component precisions.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from numba import njit
from scipy.special import digamma, gammaln, zeta

__all__ = [
    "SECOND_MOMENTS",
    "best_symmetric_prior",
    "check_concentration",
    "log_gamma_row_sums",
    "log_normaliser",
    "mean",
    "second_moment",
    "variance",
    "raw_moment",
    "expected_log",
    "product_log_normaliser",
    "product_raw_moment",
    "mixture_moments",
    "match_moments",
    "project_mixture",
    "project_product_mixture",
    "MODE_SUM",
    "MODE_FIRST",
    "update_row",
]

#: Names accepted for the matched second moment.
SECOND_MOMENTS = ("sum", "first")

_DEFAULT_MIN_PRECISION = 1e-8


def _polygammas(x: float) -> tuple[float, float, float]:
    """``psi(x), psi'(x), psi''(x)``, as scipy's polygamma computes them (digamma and
    Hurwitz zeta) without its Python-level broadcasting, a third of a series' cost."""
    return float(digamma(x)), float(zeta(2.0, x)), float(-2.0 * zeta(3.0, x))


@njit(cache=True)
def _split_at(n, rows, threshold):
    """The values of ``n``'s rows ``rows`` (a mask) not at most ``threshold`` and the
    others, each in row-major order (``n[rows][~(n[rows] <= threshold)]`` and
    ``n[rows][n[rows] <= threshold]``, in one pass: the masks and copies were a third
    of a prior's search)."""
    rest = np.empty(n.size)
    small = np.empty(n.size)
    above = 0
    below = 0
    for i in range(n.shape[0]):
        if rows[i]:
            for j in range(n.shape[1]):
                if n[i, j] <= threshold:
                    small[below] = n[i, j]
                    below += 1
                else:
                    rest[above] = n[i, j]
                    above += 1
    return rest[:above], small[:below]


def best_symmetric_prior(counts, current: float, lower: float = 1e-4,
                         upper: float = 10.0) -> float:
    """Empirical Bayes for a symmetric ``Dir(eta)`` prior shared by the rows of ``counts``
    (shape ``(K, W)``, expected counts per row): the ``eta`` in ``[lower, upper]`` that
    maximises the rows' part of the evidence lower bound with each ``q`` at its
    conjugate optimum ``Dir(eta + counts_k)``, i.e. the collapsed

        sum_k log B(eta + counts_k) - log B(eta 1)

    (rows without counts add nothing).  A one-dimensional search in ``log eta``;
    ``current`` is returned when it is at least as good (never lowers the bound)."""
    from recognizers.modelling.sticks import _best_in_log_space

    n = np.ascontiguousarray(counts, dtype=np.float64)
    row_totals = n.sum(1)
    used = row_totals > 0
    W, totals, n_rows = n.shape[1], row_totals[used], int(used.sum())
    # Expected counts of a fitted topic model are mostly tiny (two thirds under 1e-8 for
    # an HDP on news text); those enter by the series log Gamma(eta + n) - log Gamma(eta)
    # = n psi(eta) + n^2 psi'(eta) / 2 + n^3 psi''(eta) / 6 + O((n / eta)^4), exact to
    # round-off for n <= 1e-4 lower, so each evaluation needs gammaln of the rest only.
    rest, small = _split_at(n, used, 1e-4 * lower)
    powers = [float(np.sum(small ** j)) / factorial for j, factorial in ((1, 1), (2, 2),
                                                                          (3, 6))]

    def neg(log_eta):
        eta = np.exp(log_eta)
        series = sum(p * d for p, d in zip(powers, _polygammas(eta)))
        return -float(np.sum(gammaln(eta + rest)) - rest.size * gammaln(eta) + series
                      + n_rows * gammaln(W * eta) - np.sum(gammaln(W * eta + totals)))

    return _best_in_log_space(neg, current, lower, upper)


@njit(cache=True)
def _log_gamma_row_sums(lam, eta, columns, psi, out):
    # (log_gamma_row_sums' kernel; psi holds psi(eta), psi'(eta), psi''(eta))
    tiny = 1e-4 * eta
    log_gamma_eta = math.lgamma(eta)
    for k in range(lam.shape[0]):
        direct, m, s1, s2, s3 = 0.0, 0, 0.0, 0.0, 0.0
        for c in range(columns.shape[0]):
            x = lam[k, columns[c]]
            s = x - eta
            if 0.0 <= s <= tiny:
                m += 1
                s1 += s
                s2 += s * s
                s3 += s * s * s
            else:
                direct += math.lgamma(x)
        out[k] = (direct + m * log_gamma_eta + psi[0] * s1 + psi[1] * s2 / 2.0
                  + psi[2] * s3 / 6.0)


def log_gamma_row_sums(lam, eta: float, columns=None) -> np.ndarray:
    """``sum_w log Gamma(lam[k, w])`` for each row k of ``lam`` (K, W), over ``columns``
    (all if None): the log-normalisers' sums of topics ``Dir(eta + counts)``.  Values
    within ``1e-4 eta`` above ``eta`` (most of a fitted topic model's, whose expected
    counts are mostly tiny) take the series ``log Gamma(eta) + s psi(eta) + s^2
    psi'(eta) / 2 + s^3 psi''(eta) / 6`` in ``s = lam - eta``, exact to round-off;
    four times faster than gammaln of every value."""
    lam = np.ascontiguousarray(lam, dtype=np.float64)
    columns = (np.arange(lam.shape[1]) if columns is None
               else np.asarray(columns, dtype=np.int64))
    psi = np.array(_polygammas(eta))
    out = np.empty(lam.shape[0])
    _log_gamma_row_sums(lam, float(eta), columns, psi, out)
    return out


def check_concentration(alpha, name: str = "alpha") -> np.ndarray:
    """Return ``alpha`` as a float array after checking it is positive and finite."""
    a = np.asarray(alpha, dtype=np.float64)
    if a.ndim == 0:
        raise ValueError(f"{name} must have at least one axis (the simplex axis)")
    if a.shape[-1] < 1:
        raise ValueError(f"{name} has an empty simplex axis")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite")
    if not np.all(a > 0):
        raise ValueError(f"{name} must be strictly positive")
    return a


def log_normaliser(alpha) -> np.ndarray:
    """``log Gamma(a0) - sum_i log Gamma(a_i)``: the log of the constant ``k`` in
    ``Dir(theta; a) = k prod_i theta_i^(a_i - 1)`` (eq 4.6), per Dirichlet block."""
    a = check_concentration(alpha)
    return gammaln(a.sum(-1)) - gammaln(a).sum(-1)


def mean(alpha) -> np.ndarray:
    """``E[theta_i] = a_i / a0``."""
    a = check_concentration(alpha)
    return a / a.sum(-1, keepdims=True)


def second_moment(alpha) -> np.ndarray:
    """``E[theta_i^2] = a_i (a_i + 1) / (a0 (a0 + 1))``."""
    a = check_concentration(alpha)
    a0 = a.sum(-1, keepdims=True)
    return a * (a + 1.0) / (a0 * (a0 + 1.0))


def variance(alpha) -> np.ndarray:
    """``Var[theta_i] = m_i (1 - m_i) / (a0 + 1)``."""
    a = check_concentration(alpha)
    a0 = a.sum(-1, keepdims=True)
    m = a / a0
    return m * (1.0 - m) / (a0 + 1.0)


def raw_moment(alpha, counts) -> np.ndarray:
    """``E[prod_i theta_i^{n_i}]`` for non-negative (integer or real) powers ``n``.

    ``Gamma(a0) / Gamma(a0 + sum n) * prod_i Gamma(a_i + n_i) / Gamma(a_i)``
    (eq 4.7 with the ``- 1`` typo removed).  ``counts`` broadcasts against
    ``alpha``.
    """
    a = check_concentration(alpha)
    n = np.asarray(counts, dtype=np.float64)
    if np.any(n < 0):
        raise ValueError("moment powers must be non-negative")
    a, n = np.broadcast_arrays(a, n)
    a0 = a.sum(-1)
    logm = gammaln(a0) - gammaln(a0 + n.sum(-1)) + (gammaln(a + n) - gammaln(a)).sum(-1)
    return np.exp(logm)


def expected_log(alpha, columns=None) -> np.ndarray:
    """``E[log theta_i] = psi(a_i) - psi(a0)`` (eq 4.8); with ``columns`` (indices on the
    simplex axis) for those ``i`` only, ``a0`` still the whole sum."""
    a = check_concentration(alpha)
    return (digamma(a if columns is None else a[..., columns])
            - digamma(a.sum(-1, keepdims=True)))


def _as_blocks(blocks) -> tuple[np.ndarray, ...]:
    if isinstance(blocks, np.ndarray):
        return (blocks,)
    return tuple(blocks)


def product_log_normaliser(blocks) -> float:
    """Sum of :func:`log_normaliser` over every Dirichlet of a product."""
    return float(sum(log_normaliser(b).sum() for b in _as_blocks(blocks)))


def product_raw_moment(blocks, counts) -> float:
    """``E[prod theta^n]`` under a product of independent Dirichlets: the product of
    the per-Dirichlet raw moments (``counts`` has one array per block)."""
    blocks = _as_blocks(blocks)
    counts = _as_blocks(counts)
    if len(blocks) != len(counts):
        raise ValueError("need one counts array per block")
    out = 1.0
    for b, n in zip(blocks, counts):
        out *= float(np.prod(raw_moment(b, n)))
    return out


def _check_weights(weights, n_components: int) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.shape[0] != n_components:
        raise ValueError(
            f"weights must have shape ({n_components},), got {w.shape}"
        )
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("mixture weights must be finite and non-negative")
    total = w.sum()
    if not total > 0:
        raise ValueError("mixture weights must not all be zero")
    return w / total


def mixture_moments(weights, alphas) -> tuple[np.ndarray, np.ndarray]:
    """First moments ``E[theta_i]`` and second moments ``E[theta_i^2]`` of a mixture.

    ``alphas`` has shape ``(C, ..., K)`` (component axis first), ``weights`` ``(C,)``.
    Computed by direct summation of the component moments (no shortcut), so
    this is the reference the fast kernels are tested against.
    """
    a = check_concentration(alphas, "alphas")
    if a.ndim < 2:
        raise ValueError("alphas must have shape (C, ..., K)")
    w = _check_weights(weights, a.shape[0])
    wb = w.reshape((-1,) + (1,) * (a.ndim - 1))
    return (wb * mean(a)).sum(0), (wb * second_moment(a)).sum(0)


def _second_moment_mode(second_moment) -> str:
    if second_moment not in SECOND_MOMENTS:
        raise ValueError(
            f"second_moment must be one of {SECOND_MOMENTS}, got {second_moment!r}"
        )
    return second_moment


def match_moments(
    first,
    second,
    *,
    second_moment: str = "first",
    fallback_precision=None,
    max_precision=None,
    min_precision: float = _DEFAULT_MIN_PRECISION,
) -> np.ndarray:
    """Dirichlet parameters from raw moments (eq 4.15, typo fixed).

    ``first`` is ``E[theta_i]`` with shape ``(..., K)``.  ``second`` is, per
    Dirichlet block (shape ``(...)``), ``E[theta_1^2]`` when
    ``second_moment="first"`` or ``E[sum_i theta_i^2]`` when
    ``second_moment="sum"``.  Returns ``alpha = first * s``.

    Guards: when the implied variance is not positive (round-off) or the result
    is not finite, ``fallback_precision`` is used (required in that case);
    ``s`` is clipped to ``[min_precision, max_precision]``.
    """
    mode = _second_moment_mode(second_moment)
    m = np.asarray(first, dtype=np.float64)
    if m.ndim == 0 or np.any(~np.isfinite(m)) or np.any(m < 0):
        raise ValueError("first moments must be finite, non-negative, with a simplex axis")
    tot = m.sum(-1, keepdims=True)
    if np.any(np.abs(tot - 1.0) > 1e-8):
        raise ValueError("first moments must sum to 1 over the last axis")
    m = m / tot
    m2 = np.asarray(second, dtype=np.float64)
    if mode == "first":
        mu = m[..., 0]
    else:
        mu = (m * m).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        # eq 4.15: s = (M1 - M2) / (M2 - M1^2); the "sum" variant uses
        # 1 - sum E[theta^2] and sum E[theta^2] - sum m^2.
        if mode == "first":
            num = mu - m2
        else:
            num = 1.0 - m2
        den = m2 - (mu * mu if mode == "first" else mu)
        s = num / den
    bad = ~np.isfinite(s) | ~(den > 0) | ~(num > 0)
    s = np.asarray(s, dtype=np.float64)
    if np.any(bad):
        if fallback_precision is None:
            raise ValueError(
                "degenerate second moment (variance <= 0); pass fallback_precision"
            )
        fb = np.broadcast_to(np.asarray(fallback_precision, dtype=np.float64), s.shape)
        s = np.where(bad, fb, s)
    if max_precision is not None:
        s = np.minimum(s, max_precision)
    s = np.maximum(s, min_precision)
    return m * s[..., None]


def _projected_precision(w, a, mode, min_precision):
    """Precision of the moment-matched Dirichlet, stable form (see module doc)."""
    wb = w.reshape((-1,) + (1,) * (a.ndim - 1))
    a0 = a.sum(-1, keepdims=True)  # (C, ..., 1)
    mc = a / a0  # component means
    m = (wb * mc).sum(0)  # mixture mean (..., K)
    within = (wb * (mc * (1.0 - mc) / (a0 + 1.0))).sum(0)
    between = (wb * (mc - m) ** 2).sum(0)
    var = within + between
    spread = m * (1.0 - m)
    if mode == "first":
        num, den = spread[..., 0], var[..., 0]
        # a coordinate whose mean is ~0 or ~1 carries no usable second moment:
        # fall back to the trace (sum) moment for that block.
        weak = ~(num > 1e-300) | ~(den > 0)
        num = np.where(weak, spread.sum(-1), num)
        den = np.where(weak, var.sum(-1), den)
    else:
        num, den = spread.sum(-1), var.sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = num / den - 1.0
    comp_prec = a0[..., 0]  # (C, ...)
    fallback = (w.reshape((-1,) + (1,) * (comp_prec.ndim - 1)) * comp_prec).sum(0)
    upper = comp_prec.max(0)
    bad = ~np.isfinite(s) | ~(den > 0) | ~(num > 0)
    s = np.where(bad, fallback, s)
    s = np.clip(s, min_precision, upper)
    return m, s


def project_mixture(
    weights,
    alphas,
    *,
    second_moment: str = "sum",
    min_precision: float = _DEFAULT_MIN_PRECISION,
) -> np.ndarray:
    """Project a mixture of Dirichlets onto one Dirichlet per block (eq 4.15).

    ``alphas``: ``(C, ..., K)``; ``weights``: ``(C,)``.  Returns ``(..., K)`` whose
    first moments equal the mixture's and whose chosen second moment
    (``"sum"``: ``E[sum_i theta_i^2]``; ``"first"``: ``E[theta_1^2]``) equals
    the mixture's, up to the guards described in the module docstring.
    A single component (or identical components) is returned unchanged.
    """
    mode = _second_moment_mode(second_moment)
    a = check_concentration(alphas, "alphas")
    if a.ndim < 2:
        raise ValueError("alphas must have shape (C, ..., K)")
    w = _check_weights(weights, a.shape[0])
    if a.shape[0] == 1:
        return a[0].copy()  # a single product of Dirichlets is its own projection
    m, s = _projected_precision(w, a, mode, min_precision)
    return m * s[..., None]


def project_product_mixture(
    weights,
    blocks: Sequence[np.ndarray],
    *,
    second_moment: str = "sum",
    min_precision: float = _DEFAULT_MIN_PRECISION,
) -> tuple[np.ndarray, ...]:
    """Project a mixture of *products* of Dirichlets onto one product.

    ``blocks`` is a sequence of stacked blocks, each ``(C, ..., K_b)``; the
    projection factorises over the Dirichlets of the product (each marginal is
    a mixture of Dirichlets with the common weights), so each block is
    projected with :func:`project_mixture`.
    """
    blocks = _as_blocks(blocks)
    return tuple(
        project_mixture(
            weights, b, second_moment=second_moment, min_precision=min_precision
        )
        for b in blocks
    )


#: ``mode`` codes of the numba kernels: match ``E[sum_k theta_k^2]`` ("sum") or
#: ``E[theta_1^2]`` ("first", falling back to the sum where coordinate 0 has no spread).
MODE_SUM = 0
MODE_FIRST = 1
#: Rows whose mixture weight is below this are left unchanged: the moment
#: update changes their parameters by a relative amount below ``SKIP_WEIGHT``,
#: i.e. below double-precision round-off for weights < 1e-16.
SKIP_WEIGHT = 1e-15


# ---------------------------------------------------------------------------
# numba kernels: the projection of one Dirichlet row (BMM of the HMMs and of LDA)
# ---------------------------------------------------------------------------


@njit(cache=True, inline="always")
def finish_precision(num_sum, den_sum, num0, den0, mode, fallback, upper, min_prec):
    """The matched precision ``s = spread / Var - 1`` of the chosen second moment,
    ``fallback`` where it is undefined, clipped to ``[min_prec, upper]``."""
    if mode == MODE_FIRST and num0 > 1e-300 and den0 > 0.0:
        num = num0
        den = den0
    else:
        num = num_sum
        den = den_sum
    if den > 0.0 and num > 0.0:
        s = num / den - 1.0
        if not np.isfinite(s):
            s = fallback
    else:
        s = fallback
    if s > upper:
        s = upper
    if s < min_prec:
        s = min_prec
    return s


@njit(cache=True)
def update_row(row, r, w, mode, min_prec, mwork):
    """Project ``(1 - r) Dir(row) + sum_j w[j] Dir(row + 1_j)`` in place (``r = sum w``).

    The matched Dirichlet keeps the mixture's means and the second moment of
    ``mode`` (:data:`MODE_SUM` or :data:`MODE_FIRST`); its precision is clipped to
    ``[min_prec, sum(row) + 1]``.  Used by the BMM HMMs for every transition row
    (``w = w[i, :]``) and the start row at a sequence start (``r = 1``), and by
    LDA's BMM for a document's topic Dirichlet.  ``mwork`` is a scratch array of
    ``row``'s length.  ``O(K)``.
    """
    K = row.shape[0]
    if not (r > SKIP_WEIGHT):
        return
    if r > 1.0:
        r = 1.0
    A = 0.0
    for j in range(K):
        A += row[j]
    inv1 = 1.0 / (A + 1.0)
    inv2 = 1.0 / (A + 2.0)
    q = 1.0 - r
    num_sum = 0.0
    den_sum = 0.0
    num0 = 0.0
    den0 = 0.0
    for j in range(K):
        aj = row[j]
        m0 = aj / A
        wj = w[j]
        rw = r - wj
        if rw < 0.0:
            rw = 0.0
        a = aj * inv1
        b = (aj + 1.0) * inv1
        mj = q * m0 + rw * a + wj * b
        within = q * m0 * (1.0 - m0) * inv1 + (rw * a * (1.0 - a) + wj * b * (1.0 - b)) * inv2
        between = q * (m0 - mj) ** 2 + rw * (a - mj) ** 2 + wj * (b - mj) ** 2
        var = within + between
        spread = mj * (1.0 - mj)
        mwork[j] = mj
        num_sum += spread
        den_sum += var
        if j == 0:
            num0 = spread
            den0 = var
    s = finish_precision(num_sum, den_sum, num0, den0, mode, A + r, A + 1.0, min_prec)
    tot = 0.0
    for j in range(K):
        tot += mwork[j]
    for j in range(K):
        row[j] = mwork[j] / tot * s
