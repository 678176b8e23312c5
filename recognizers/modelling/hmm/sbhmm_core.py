"""Variational Bayes for the truncated stick-breaking HMM, as functions of arrays.

:class:`recognizers.modelling.hmm.sbhmm.StickBreakingHMM` and
:class:`recognizers.modelling.gp.lm2gp.LM2GP` both call these; neither reaches into
the other's internals.

Model (``C`` states, truncation on ``q`` only)::

    pi   ~ GEM(alpha)                       initial distribution, Beta(1, alpha) sticks
    A_j  ~ GEM(alpha) + kappa on state j    transition row j, "sticky" sticks
    (mu_k, Lambda_k) ~ NormalWishart(m0, beta0, W0, nu0)
    z_1 ~ pi,  z_t | z_{t-1} = j ~ A_j,  x_t | z_t = k ~ N(mu_k, Lambda_k^-1)

The sticky bias is the stick-breaking analogue of Fox et al.'s sticky HDP-HMM
prior ``A_j ~ DP(alpha + kappa, (alpha beta + kappa delta_j) / (alpha + kappa))``: in
the weak-limit form that prior is the base measure plus ``kappa`` pseudo-counts of
the self-transition, and here the ``kappa`` pseudo-counts enter row ``j``'s
Beta sticks exactly as observed ``j -> j`` transitions would
(``a_jj += kappa``, ``b_jk += kappa`` for ``k < j``).  ``kappa`` can be learnt by
maximising the ELBO (empirical Bayes, :func:`best_kappa`).

Mean-field ``q(z) q(sticks) q(mu, Lambda)``.  The ELBO at the optimal ``q(z)`` is
``log Z_q(z) - KL(q(theta) || p(theta))`` (:func:`elbo`); every update below is an
exact coordinate ascent step, so :func:`coordinate_ascent` never lowers it.
:func:`merge_states` and :func:`delete_state` propose a new ``q(z)`` statistic;
:func:`try_moves` keeps a proposal only if the ELBO after a few sweeps is higher.

References
----------
Bishop, C. M., "Pattern Recognition and Machine Learning", Springer, 2006 (sec. 10.2).
Fox, E. B., Sudderth, E. B., Jordan, M. I. and Willsky, A. S., "A sticky HDP-HMM with
application to speaker diarization", Annals of Applied Statistics 5(2A), 2011.
Paisley, J. and Carin, L., "Hidden Markov models with stick-breaking priors", IEEE
Transactions on Signal Processing 57(10), 2009.
Bryant, M. and Sudderth, E. B., "Truly nonparametric online variational inference for
hierarchical Dirichlet processes", NeurIPS 2012 (merge moves accepted by the bound).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import digamma, gammaln

from recognizers.modelling.chain import smooth, viterbi
from recognizers.modelling.sticks import (
    beta_expected_logs,
    expected_log_weights,
    kl_beta,
    stick_posterior,
)

__all__ = [
    "HMMPosterior",
    "MoveResult",
    "NormalWishartPrior",
    "best_kappa",
    "coordinate_ascent",
    "data_prior",
    "decode",
    "delete_state",
    "elbo",
    "expected_gaussian_loglik",
    "expected_log_det_wishart",
    "infer_states",
    "kl_normal_wishart",
    "kl_posterior",
    "merge_states",
    "move_proposals",
    "normal_wishart_posterior",
    "sequence_starts",
    "sticky_prior",
    "try_moves",
    "update_posterior",
]


class NormalWishartPrior(NamedTuple):
    """Normal-Wishart prior shared by every state: ``m0`` (D,), ``beta0``, ``W0`` (D, D), ``nu0``."""

    m0: np.ndarray
    beta0: float
    W0: np.ndarray
    nu0: float


class HMMPosterior(NamedTuple):
    """``q(theta)``: Normal-Wishart ``(m, beta, W, nu)`` per state and Beta sticks.

    Shapes ``m`` (C, D), ``beta`` (C,), ``W`` (C, D, D), ``nu`` (C,), ``start_a``,
    ``start_b`` (C-1,), ``trans_a``, ``trans_b`` (C, C-1).
    """

    m: np.ndarray
    beta: np.ndarray
    W: np.ndarray
    nu: np.ndarray
    start_a: np.ndarray
    start_b: np.ndarray
    trans_a: np.ndarray
    trans_b: np.ndarray


class MoveResult(NamedTuple):
    """An accepted move: ``kind`` ("merge" or "delete"), the ``states`` it acted on,
    the new posterior, ``kappa``, the E-step at the new posterior and the ELBO values
    of its sweeps (the last is the ELBO of the new state)."""

    kind: str
    states: tuple
    posterior: HMMPosterior
    kappa: float
    estep: object
    elbos: list


# --------------------------------------------------------------------------- Normal-Wishart


def normal_wishart_posterior(X, resp, m0, beta0, W0, nu0):
    """Normal-Wishart posterior per state (Bishop 10.51-10.53, 10.60-10.63).

    Parameters
    ----------
    X : ndarray (T, D)
    resp : ndarray (T, K)
        Responsibilities.
    m0, beta0, W0, nu0 : the prior.

    Returns
    -------
    m, beta, W, nu : ndarrays (K, D), (K,), (K, D, D), (K,)
    """
    Nk = resp.sum(axis=0)
    # empty states: xbar is irrelevant (weight 0), avoid 0/0
    xbar = (resp.T @ X) / np.maximum(Nk, 1e-300)[:, None]
    K, D = resp.shape[1], X.shape[1]
    beta = beta0 + Nk
    nu = nu0 + Nk
    m = (beta0 * m0[None, :] + Nk[:, None] * xbar) / beta[:, None]
    W0inv = np.linalg.inv(W0)
    # N_k S_k = sum_t r_tk x_t x_t^T - N_k xbar xbar^T (one einsum for all states)
    second = np.matmul(resp.T[:, None, :] * X.T[None], X)   # (K, D, D), one BLAS call each
    S = second - Nk[:, None, None] * np.einsum("kd,ke->kde", xbar, xbar)
    e = xbar - m0[None, :]
    shrink = beta0 * Nk / (beta0 + Nk)
    Winv = W0inv[None] + S + shrink[:, None, None] * np.einsum("kd,ke->kde", e, e)
    Winv = 0.5 * (Winv + np.swapaxes(Winv, 1, 2))
    W = np.linalg.inv(Winv)
    return m, beta, W, nu


def expected_log_det_wishart(W, nu):
    """``E[log |Lambda|]`` under ``Wishart(W, nu)`` (Bishop 10.65); W (K, D, D)."""
    D = W.shape[-1]
    i = np.arange(1, D + 1)
    return (digamma((nu[:, None] + 1 - i[None, :]) / 2).sum(axis=1)
            + D * np.log(2.0) + np.linalg.slogdet(W)[1])


def expected_gaussian_loglik(X, m, beta, W, nu):
    """``E[log N(x_t | mu_k, Lambda_k^-1)]`` (T, K) under Normal-Wishart q (Bishop 10.64)."""
    D = X.shape[1]
    # (x-m)^T W (x-m) = x^T W x - 2 x^T W m + m^T W m, without a (T, K, D) temporary
    Wm = np.einsum("kde,ke->kd", W, m)
    xWx = (np.matmul(X[None], W) * X[None]).sum(-1).T                  # (T, K)
    maha = xWx - 2.0 * X @ Wm.T + np.einsum("kd,kd->k", m, Wm)[None, :]
    maha = np.maximum(maha, 0.0)
    quad = D / beta[None, :] + nu[None, :] * maha
    return 0.5 * (expected_log_det_wishart(W, nu)[None, :] - D * np.log(2 * np.pi) - quad)


def _log_wishart_norm(W, nu):
    """``log B(W, nu)`` of the Wishart density (Bishop B.79), per state."""
    D = W.shape[-1]
    nu = np.atleast_1d(nu)
    # log Gamma_D(nu / 2) = D (D - 1) / 4 log(pi) + sum_j log Gamma((nu + 1 - j) / 2)
    log_gamma_d = (0.25 * D * (D - 1) * np.log(np.pi)
                   + gammaln(0.5 * (nu[:, None] + 1 - np.arange(1, D + 1)[None, :])).sum(1))
    return -0.5 * nu * np.linalg.slogdet(W)[1] - 0.5 * nu * D * np.log(2.0) - log_gamma_d


def kl_normal_wishart(m, beta, W, nu, m0, beta0, W0, nu0):
    """``KL(NW(m, beta, W, nu) || NW(m0, beta0, W0, nu0))`` per state (K,)."""
    K, D = m.shape
    e_logdet = expected_log_det_wishart(W, nu)
    W0inv = np.linalg.inv(W0)
    W0b = np.broadcast_to(W0, W.shape)
    kl_wish = (_log_wishart_norm(W, nu) - _log_wishart_norm(W0b, np.full(K, float(nu0)))
               + 0.5 * (nu - nu0) * e_logdet - 0.5 * nu * D
               + 0.5 * nu * np.einsum("de,ked->k", W0inv, W))
    dm = m - m0[None, :]
    kl_mean = 0.5 * (D * beta0 / beta - D + D * np.log(beta / beta0)
                     + beta0 * nu * np.einsum("kd,kde,ke->k", dm, W, dm))
    return kl_wish + kl_mean


def data_prior(X, beta0=1.0, nu0=None, w0_scale=0.5) -> NormalWishartPrior:
    """Weak prior centred on the data: ``m0`` = data mean, ``E[Lambda] = (w0_scale Cov)^-1``.

    ``nu0`` defaults to ``D + 2``; it must exceed ``D - 1``.
    """
    D = X.shape[1]
    nu0 = float(D + 2 if nu0 is None else nu0)
    if nu0 <= D - 1:
        raise ValueError(f"nu0 must exceed D - 1 = {D - 1}")
    cov = np.atleast_2d(np.cov(X.T)) if len(X) > 1 else np.eye(D)
    cov = cov + 1e-6 * np.trace(cov) / D * np.eye(D) + 1e-9 * np.eye(D)
    W0 = np.linalg.inv(w0_scale * cov) / nu0
    return NormalWishartPrior(X.mean(axis=0), float(beta0), W0, nu0)


# --------------------------------------------------------------------------- sticks and q(theta)


def sequence_starts(lengths) -> np.ndarray:
    """Index of the first frame of every sequence."""
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)


def sticky_prior(n_states, alpha, kappa):
    """Prior Beta parameters ``(a0, b0)`` (C, C-1) of the transition rows' sticks:
    ``Beta(1, alpha)`` plus ``kappa`` pseudo-counts of each row's self-transition."""
    return stick_posterior(kappa * np.eye(n_states), alpha)


def update_posterior(X, lengths, resp, trans_counts, prior, alpha, kappa) -> HMMPosterior:
    """``q(theta)`` given the ``q(z)`` statistics (responsibilities, expected transitions)."""
    C = resp.shape[1]
    m, beta, W, nu = normal_wishart_posterior(X, resp, *prior)
    start_a, start_b = stick_posterior(resp[sequence_starts(lengths)].sum(axis=0), alpha)
    trans_a, trans_b = stick_posterior(trans_counts + kappa * np.eye(C), alpha)
    return HMMPosterior(m, beta, W, nu, start_a, start_b, trans_a, trans_b)


def kl_posterior(post, prior, alpha, kappa) -> float:
    """``KL(q(theta) || p(theta))``: Normal-Wishart states plus start and transition sticks."""
    kl = kl_normal_wishart(post.m, post.beta, post.W, post.nu, *prior).sum()
    kl += kl_beta(post.start_a, post.start_b, 1.0, alpha).sum()
    a0, b0 = sticky_prior(len(post.m), alpha, kappa)
    kl += kl_beta(post.trans_a, post.trans_b, a0, b0).sum()
    return float(kl)


def _expected_log_potentials(X, post):
    return (expected_log_weights(post.start_a, post.start_b),
            expected_log_weights(post.trans_a, post.trans_b),
            expected_gaussian_loglik(X, post.m, post.beta, post.W, post.nu))


def infer_states(X, lengths, post, exclude=None):
    """Optimal ``q(z)`` given ``q(theta)``: forward-backward with the expected log
    parameters (``chain.smooth``).  ``exclude``: states made impossible (a delete move)."""
    log_pi, log_A, log_lik = _expected_log_potentials(X, post)
    if exclude is not None:
        log_lik[:, exclude] = -np.inf
    return smooth(log_pi, log_A, log_lik, lengths)


def decode(X, lengths, post) -> np.ndarray:
    """Viterbi path under the expected log parameters."""
    return viterbi(*_expected_log_potentials(X, post), lengths).path


def elbo(X, lengths, post, prior, alpha, kappa):
    """``(ELBO, E-step)`` at ``q(theta) = post`` and the optimal ``q(z)``, from scratch."""
    res = infer_states(X, lengths, post)
    return res.loglik - kl_posterior(post, prior, alpha, kappa), res


def best_kappa(post, alpha, upper, current=0.0) -> float:
    """The ``kappa`` in ``[0, upper]`` that maximises ``E_q[log p(sticks | kappa)]``,
    i.e. the ELBO (empirical Bayes; the other ELBO terms do not depend on kappa).

    The search is numerical, so ``current`` is returned when it is at least as good
    (the update never lowers the ELBO)."""
    C = len(post.m)
    elog_v, elog_1mv = beta_expected_logs(post.trans_a, post.trans_b)
    rows = np.arange(C - 1)  # row C-1's self-transition is the last piece: no stick
    before = np.tril(np.ones((C, C - 1)), -1)  # [k < j]: pieces before row j's own

    def neg(kappa):
        a0 = np.ones((C, C - 1))
        a0[rows, rows] += kappa
        b0 = alpha + kappa * before
        logp = (-(gammaln(a0) + gammaln(b0) - gammaln(a0 + b0))
                + (a0 - 1) * elog_v + (b0 - 1) * elog_1mv)
        return -float(logp.sum())

    out = minimize_scalar(neg, bounds=(0.0, float(upper)), method="bounded",
                          options={"xatol": 1e-3})
    # the bounded search never evaluates the ends; keep 0 or the current value if better
    return min((float(out.x), 0.0, float(current)), key=neg)


def coordinate_ascent(X, lengths, post, prior, alpha, kappa, *, learn_kappa=False,
                      kappa_max=None, max_iter=100, tol=1e-6):
    """VB sweeps from ``q(theta) = post`` until the relative ELBO change is below ``tol``.

    Each sweep: E-step (record the ELBO), ``q(theta)`` update, then (``learn_kappa``)
    the ``kappa`` update.  Returns ``(post, kappa, estep, elbos)``; ``estep`` is the
    E-step at the returned ``post`` and ``elbos[-1]`` its ELBO.
    """
    kappa_max = float(len(X) if kappa_max is None else kappa_max)
    elbos = []
    for it in range(int(max_iter)):
        res = infer_states(X, lengths, post)
        elbos.append(res.loglik - kl_posterior(post, prior, alpha, kappa))
        if (len(elbos) > 1 and abs(elbos[-1] - elbos[-2]) <= tol * abs(elbos[-1])) \
                or it == int(max_iter) - 1:
            break
        post = update_posterior(X, lengths, res.posterior, res.trans_counts, prior, alpha, kappa)
        if learn_kappa:
            kappa = best_kappa(post, alpha, kappa_max, kappa)
    return post, kappa, res, elbos


# --------------------------------------------------------------------------- moves


def merge_states(resp, trans_counts, k, l):
    """``q(z)`` statistics with state ``l`` folded into state ``k`` (``l`` left empty)."""
    resp = resp.copy()
    resp[:, k] += resp[:, l]
    resp[:, l] = 0.0
    xi = trans_counts.copy()
    xi[k, :] += xi[l, :]
    xi[l, :] = 0.0
    xi[:, k] += xi[:, l]
    xi[:, l] = 0.0
    return resp, xi


def delete_state(X, lengths, post, l):
    """``q(z)`` statistics with state ``l`` impossible: its frames go to the states that
    explain them best given the rest of the chain (an exact E-step without ``l``)."""
    res = infer_states(X, lengths, post, exclude=[l])
    return res.posterior, res.trans_counts


def _gaussian_distance(post):
    """Symmetric KL between the states' expected Gaussians (C, C): merge candidates."""
    cov = np.linalg.inv(post.W) / post.nu[:, None, None]
    prec = post.W * post.nu[:, None, None]
    D = post.m.shape[1]
    tr = np.einsum("ide,jed->ij", prec, cov)
    dm = post.m[:, None, :] - post.m[None, :, :]
    maha = np.einsum("ijd,ide,ije->ij", dm, prec, dm)
    return 0.5 * (tr + tr.T) - D + 0.5 * (maha + maha.T)


def move_proposals(X, lengths, post, estep, *, n_tries=3, min_count=1.0):
    """Yield ``(kind, states, resp, trans_counts)``: the ``q(z)`` statistics of up to
    ``n_tries`` merges (closest pairs of occupied states first) and ``n_tries`` deletes
    (smallest occupied states first).  Merges keep the lower index (the stick-breaking
    prior favours early pieces)."""
    counts = estep.posterior.sum(axis=0)
    occupied = np.flatnonzero(counts > min_count)
    if len(occupied) < 2:
        return
    dist = _gaussian_distance(post)
    pairs = sorted((dist[i, j], i, j) for a, i in enumerate(occupied) for j in occupied[a + 1:])
    for _, i, j in pairs[:n_tries]:
        yield ("merge", (int(i), int(j)),
               *merge_states(estep.posterior, estep.trans_counts, int(i), int(j)))
    for l in occupied[np.argsort(counts[occupied])][:n_tries]:
        yield ("delete", (int(l),), *delete_state(X, lengths, post, int(l)))


def try_moves(X, lengths, post, estep, current, prior, alpha, kappa, *, learn_kappa=False,
              kappa_max=None, n_tries=3, n_sweeps=5, min_count=1.0) -> MoveResult | None:
    """Try the proposals of :func:`move_proposals` in turn; return the first whose ELBO
    after ``n_sweeps`` VB sweeps exceeds ``current``, or None."""
    for kind, states, resp, xi in move_proposals(X, lengths, post, estep, n_tries=n_tries,
                                                 min_count=min_count):
        new = update_posterior(X, lengths, resp, xi, prior, alpha, kappa)
        new, new_kappa, res, elbos = coordinate_ascent(
            X, lengths, new, prior, alpha, kappa, learn_kappa=learn_kappa,
            kappa_max=kappa_max, max_iter=n_sweeps, tol=0.0)
        if elbos[-1] > current + 1e-10 * abs(current):
            return MoveResult(kind, states, new, new_kappa, res, elbos)
    return None
