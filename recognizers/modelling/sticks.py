"""Truncated stick-breaking (GEM) utilities: the one implementation every
nonparametric model of the modelling module uses (HDP / supervised HDP,
HCRF-DPM, stick-breaking HMM, LM2GP).

Conventions
-----------
A truncated stick of ``L`` pieces is described by ``L - 1`` breaking
proportions ``v_1..v_{L-1}``; the last proportion is fixed at ``v_L = 1``
(Blei & Jordan 2006: the truncation acts on ``q`` only), so the weights

    pi_k = v_k * prod_{l<k} (1 - v_l),   k = 1..L

sum to one exactly.  Variational factors are ``q(v_k) = Beta(a_k, b_k)``;
``a`` and ``b`` have shape ``(..., L - 1)`` (leading axes index independent
sticks) and every function returns weights of shape ``(..., L)``.

Closed forms::

    E[log v]      = psi(a) - psi(a + b)
    E[log (1-v)]  = psi(b) - psi(a + b)
    E[log pi_k]   = E[log v_k] + sum_{l<k} E[log (1 - v_l)]   (E[log v_L] = 0)
    a_k = gamma_1 + n_k,   b_k = alpha + sum_{l>k} n_l        (conjugate update)
    q(alpha) = Gamma(s1 + L - 1, s2 - sum_{k<L} E[log (1 - v_k)])
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import digamma, gammaln

__all__ = [
    "best_concentration",
    "beta_expected_logs",
    "concentration_posterior",
    "expected_log_weights",
    "expected_weights",
    "kl_beta",
    "n_used",
    "sample_sticks",
    "stick_posterior",
    "sticks_from_weights",
    "weights_from_sticks",
]


def _ab(a, b) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"Beta parameters a {a.shape} and b {b.shape} differ in shape")
    if a.size and not (np.all(a > 0) and np.all(b > 0)):
        raise ValueError("Beta parameters must be positive")
    return a, b


def beta_expected_logs(a, b) -> tuple[np.ndarray, np.ndarray]:
    """``(E[log v], E[log(1 - v)])`` under ``Beta(a, b)``, elementwise."""
    a, b = _ab(a, b)
    total = digamma(a + b)
    return digamma(a) - total, digamma(b) - total


def _pad_last(x: np.ndarray, value: float) -> np.ndarray:
    pad = np.full(x.shape[:-1] + (1,), value, dtype=np.float64)
    return np.concatenate([x, pad], axis=-1)


def _cumulative_before(x: np.ndarray) -> np.ndarray:
    """``out[..., k] = sum_{l<k} x[..., l]`` for ``k = 0..L-1`` (length ``L-1`` input -> ``L``)."""
    out = np.zeros(x.shape[:-1] + (x.shape[-1] + 1,), dtype=np.float64)
    np.cumsum(x, axis=-1, out=out[..., 1:])
    return out


def expected_log_weights(a, b) -> np.ndarray:
    """``E[log pi_k]`` for ``k = 1..L`` under independent ``Beta(a_k, b_k)`` sticks."""
    e_log_v, e_log_1mv = beta_expected_logs(a, b)
    return _pad_last(e_log_v, 0.0) + _cumulative_before(e_log_1mv)


def expected_weights(a, b) -> np.ndarray:
    """``E[pi_k]``: by independence, ``E[v_k] prod_{l<k} E[1 - v_l]``."""
    a, b = _ab(a, b)
    mean_v = a / (a + b)
    return weights_from_sticks(mean_v)


def weights_from_sticks(v) -> np.ndarray:
    """Weights ``pi`` (..., L) from breaking proportions ``v`` (..., L-1), ``v_L = 1``."""
    v = np.asarray(v, dtype=np.float64)
    # Products of (1 - v) in log space would lose exact zeros; the direct
    # cumulative product is exact enough for L in the hundreds.
    remaining = np.ones(v.shape[:-1] + (v.shape[-1] + 1,), dtype=np.float64)
    np.cumprod(1.0 - v, axis=-1, out=remaining[..., 1:])
    return _pad_last(v, 1.0) * remaining


def sticks_from_weights(pi, eps: float = 1e-300) -> np.ndarray:
    """Inverse of :func:`weights_from_sticks`: ``v_k = pi_k / (1 - sum_{l<k} pi_l)``."""
    pi = np.asarray(pi, dtype=np.float64)
    if pi.shape[-1] < 1:
        raise ValueError("a stick needs at least one piece")
    before = np.cumsum(pi, axis=-1) - pi
    remaining = np.maximum(1.0 - before, eps)
    return np.clip(pi[..., :-1] / remaining[..., :-1], 0.0, 1.0)


def stick_posterior(counts, alpha, gamma_1: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Conjugate Beta update from (possibly fractional) counts per piece.

    ``counts`` has shape ``(..., L)``; returns ``a, b`` of shape ``(..., L-1)``
    with ``a_k = gamma_1 + n_k`` and ``b_k = alpha + sum_{l>k} n_l`` (the counts
    of the last piece enter every ``b`` through the tail sums).  ``alpha`` may
    be a scalar or broadcast against the leading axes.
    """
    n = np.asarray(counts, dtype=np.float64)
    if n.ndim < 1 or n.shape[-1] < 2:
        raise ValueError("a truncated stick needs at least two pieces")
    if np.any(n < 0) or not np.all(np.isfinite(n)):
        raise ValueError("stick counts must be finite and non-negative")
    alpha = np.asarray(alpha, dtype=np.float64)
    if np.any(alpha <= 0):
        raise ValueError("stick concentration alpha must be positive")
    tail = np.cumsum(n[..., ::-1], axis=-1)[..., ::-1]  # tail[k] = sum_{l>=k} n_l
    a = gamma_1 + n[..., :-1]
    b = alpha[..., None] + tail[..., 1:] if alpha.ndim else alpha + tail[..., 1:]
    return a, b


def concentration_posterior(s1: float, s2: float, a, b) -> tuple[float | np.ndarray, float | np.ndarray]:
    """``q(alpha) = Gamma(shape, rate)`` for a ``Gamma(s1, s2)`` prior (shape, rate).

    Sums over the last axis of ``(a, b)`` (one stick per leading index);
    ``E[alpha] = shape / rate``.
    """
    _, e_log_1mv = beta_expected_logs(a, b)
    shape = s1 + e_log_1mv.shape[-1]
    rate = s2 - e_log_1mv.sum(axis=-1)
    return shape, rate


def best_concentration(counts, current: float, lower: float = 1e-3,
                       upper: float = 1e3) -> float:
    """Empirical Bayes for the ``Beta(1, alpha)`` sticks of ``counts`` (shape ``(..., L)``,
    one truncated stick per leading index): the ``alpha`` in ``[lower, upper]`` that
    maximises the sticks' part of the evidence lower bound with each ``q(v)`` at its
    conjugate optimum (:func:`stick_posterior`), which is the collapsed

        sum_k log B(1 + n_k, alpha + sum_{l>k} n_l) - log B(1, alpha),   k < L.

    A one-dimensional search in ``log alpha``; ``current`` is returned when it is at
    least as good, so the update never lowers the bound."""
    n = np.asarray(counts, dtype=np.float64)
    tail = (np.cumsum(n[..., ::-1], axis=-1)[..., ::-1])[..., 1:].ravel()
    head = n[..., :-1].ravel()

    def neg(log_alpha):
        alpha = np.exp(log_alpha)
        return -float(np.sum(gammaln(alpha + tail) - gammaln(1.0 + head + alpha + tail))
                      + head.size * np.log(alpha))

    return _best_in_log_space(neg, current, lower, upper)


def _best_in_log_space(neg, current, lower, upper) -> float:
    """The argmin of ``neg(log x)`` for x in ``[lower, upper]`` by a bounded scalar search,
    or ``current`` (clipped) when it is at least as good."""
    current = float(np.clip(current, lower, upper))
    out = minimize_scalar(neg, bounds=(np.log(lower), np.log(upper)), method="bounded",
                          options={"xatol": 1e-4})
    best = float(out.x) if out.fun < neg(np.log(current)) else np.log(current)
    return float(np.exp(best))


def kl_beta(a, b, a0, b0) -> np.ndarray:
    """``KL(Beta(a, b) || Beta(a0, b0))`` elementwise (the sticks' part of an ELBO)."""
    a, b = _ab(a, b)
    a0 = np.broadcast_to(np.asarray(a0, dtype=np.float64), a.shape)
    b0 = np.broadcast_to(np.asarray(b0, dtype=np.float64), b.shape)
    e_log_v, e_log_1mv = beta_expected_logs(a, b)
    log_b = gammaln(a) + gammaln(b) - gammaln(a + b)
    log_b0 = gammaln(a0) + gammaln(b0) - gammaln(a0 + b0)
    return log_b0 - log_b + (a - a0) * e_log_v + (b - b0) * e_log_1mv


def sample_sticks(alpha: float, n_pieces: int, rng, size=()) -> np.ndarray:
    """Weights of a truncated GEM(alpha) draw: ``v_k ~ Beta(1, alpha)``, ``v_L = 1``."""
    rng = np.random.default_rng(rng)
    if n_pieces < 1:
        raise ValueError("n_pieces must be at least 1")
    shape = tuple(np.atleast_1d(size)) if size != () else ()
    v = rng.beta(1.0, alpha, size=shape + (n_pieces - 1,))
    return weights_from_sticks(v)


def n_used(weights, threshold: float = 0.01) -> int:
    """Number of pieces whose (normalised) weight is at least ``threshold``."""
    w = np.asarray(weights, dtype=np.float64).ravel()
    total = w.sum()
    if total <= 0:
        return 0
    return int(np.count_nonzero(w / total >= threshold))
