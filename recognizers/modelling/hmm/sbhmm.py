"""Truncated stick-breaking HMM fitted by variational Bayes (paper 001's SB-HMM).

The initial distribution and every row of the transition matrix get a
truncated GEM(alpha) prior (Beta(1, alpha) sticks, ``max_states`` pieces);
each state emits a full-covariance Gaussian with a Normal-Wishart prior
(Bishop, PRML 10.2).  Mean-field VB alternates

* ``q(z)``: forward-backward (recognizers.modelling.chain.smooth) with the
  expected log parameters, ``E[log pi]``, ``E[log A]``, ``E[log N(x | mu, Lambda)]``;
* ``q(sticks)``: Beta updates (recognizers.modelling.sticks.stick_posterior);
* ``q(mu, Lambda)``: Normal-Wishart updates (Bishop 10.60-10.63).

The ELBO is ``log Z_q(z) - KL(q(theta) || p(theta))``: each step is an exact
coordinate ascent, so it never decreases (tested).  Unused states keep the
prior and vanish from ``n_states_used_``.

The cores (:func:`normal_wishart_posterior`, :func:`expected_gaussian_loglik`,
:func:`kl_normal_wishart`) are functions of arrays so LM2GP can reuse them.
"""
from __future__ import annotations

import numpy as np
from scipy.special import digamma, multigammaln
from sklearn.base import BaseEstimator, ClusterMixin

from recognizers.modelling.chain import smooth, viterbi
from recognizers.modelling.sticks import (
    expected_log_weights,
    expected_weights,
    kl_beta,
    n_used,
    stick_posterior,
)

__all__ = [
    "StickBreakingHMM",
    "expected_gaussian_loglik",
    "expected_log_det_wishart",
    "kl_normal_wishart",
    "normal_wishart_posterior",
    "stack_sequences",
]


# --------------------------------------------------------------------------- cores


def stack_sequences(X, lengths=None):
    """``(X (T, D), lengths)`` from one array or a list of (T_i, D) arrays."""
    if isinstance(X, (list, tuple)):
        if lengths is not None:
            raise ValueError("give either a list of sequences or lengths, not both")
        seqs = [np.atleast_2d(np.asarray(s, dtype=np.float64)) for s in X]
        if not seqs:
            raise ValueError("no sequences given")
        dims = {s.shape[1] for s in seqs}
        if len(dims) != 1:
            raise ValueError(f"sequences differ in dimension: {sorted(dims)}")
        X = np.concatenate(seqs, axis=0)
        lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    else:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[:, None]
        if X.ndim != 2:
            raise ValueError(f"X must be (T, D) or a list of such arrays, got shape {X.shape}")
        lengths = (np.array([len(X)], dtype=np.int64) if lengths is None
                   else np.asarray(lengths, dtype=np.int64))
    if lengths.sum() != len(X) or np.any(lengths < 1):
        raise ValueError("lengths must be positive and sum to the number of frames")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    return np.ascontiguousarray(X), lengths


def normal_wishart_posterior(X, resp, m0, beta0, W0, nu0):
    """Normal-Wishart posterior per state (Bishop 10.51-10.53, 10.60-10.63).

    ``X`` (T, D), ``resp`` (T, K) responsibilities.  Returns ``(m, beta, W, nu)``
    with shapes (K, D), (K,), (K, D, D), (K,).
    """
    Nk = resp.sum(axis=0)
    # empty states: xbar is irrelevant (weight 0), avoid 0/0
    xbar = (resp.T @ X) / np.maximum(Nk, 1e-300)[:, None]
    K, D = resp.shape[1], X.shape[1]
    beta = beta0 + Nk
    nu = nu0 + Nk
    m = (beta0 * m0[None, :] + Nk[:, None] * xbar) / beta[:, None]
    W0inv = np.linalg.inv(W0)
    W = np.empty((K, D, D))
    for k in range(K):
        d = X - xbar[k]
        S = (resp[:, k, None] * d).T @ d  # N_k S_k
        e = (xbar[k] - m0)[:, None]
        Winv = W0inv + S + (beta0 * Nk[k] / (beta0 + Nk[k])) * (e @ e.T)
        Winv = 0.5 * (Winv + Winv.T)
        W[k] = np.linalg.inv(Winv)
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
    diff = X[:, None, :] - m[None, :, :]                       # (T, K, D)
    maha = np.einsum("tkd,kde,tke->tk", diff, W, diff)         # (x-m)^T W (x-m)
    quad = D / beta[None, :] + nu[None, :] * maha
    return 0.5 * (expected_log_det_wishart(W, nu)[None, :] - D * np.log(2 * np.pi) - quad)


def _log_wishart_norm(W, nu):
    """``log B(W, nu)`` of the Wishart density (Bishop B.79), per state."""
    D = W.shape[-1]
    return (-0.5 * nu * np.linalg.slogdet(W)[1] - 0.5 * nu * D * np.log(2.0)
            - np.array([multigammaln(0.5 * n, D) for n in np.atleast_1d(nu)]))


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


def _sequence_starts(lengths):
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)


# --------------------------------------------------------------------------- estimator


class StickBreakingHMM(ClusterMixin, BaseEstimator):
    """HMM that chooses its number of states: truncated stick-breaking VB.

    Parameters
    ----------
    max_states : int
        Truncation level C (upper bound on the number of states).
    alpha : float
        Stick concentration of the initial distribution and transition rows.
    sticky : float
        Extra pseudo-count on self-transitions (0 = the paper's SB-HMM); helps
        segmentation of slowly switching regimes.
    beta0, nu0, w0_scale :
        Normal-Wishart prior: mean ``m0`` = data mean, ``W0 = (w0_scale * Cov)^-1 / nu0``
        so that the prior precision has mean ``1/w0_scale`` times the data precision.
    max_iter, tol : stopping rule on the relative ELBO change.
    n_init : restarts; the one with the largest ELBO is kept.
    usage_threshold : weight below which a state counts as unused.
    random_state : seed.

    Attributes
    ----------
    means_, covars_ : posterior-mean emission parameters (C, D), (C, D, D).
    startprob_, transmat_ : posterior-mean initial distribution and transitions.
    n_states_used_ : states holding at least ``usage_threshold`` of the frames.
    elbo_ : list of ELBO values per iteration (the kept restart).
    """

    def __init__(self, max_states=10, alpha=1.0, sticky=0.0, beta0=1.0, nu0=None,
                 w0_scale=1.0, max_iter=200, tol=1e-6, n_init=1, usage_threshold=0.01,
                 random_state=None):
        self.max_states = max_states
        self.alpha = alpha
        self.sticky = sticky
        self.beta0 = beta0
        self.nu0 = nu0
        self.w0_scale = w0_scale
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.usage_threshold = usage_threshold
        self.random_state = random_state

    # -- helpers ------------------------------------------------------------
    def _check_params(self):
        if int(self.max_states) < 2:
            raise ValueError("max_states must be at least 2")
        if self.alpha <= 0 or self.beta0 <= 0 or self.w0_scale <= 0 or self.sticky < 0:
            raise ValueError("alpha, beta0 and w0_scale must be positive, sticky >= 0")
        if int(self.max_iter) < 1 or int(self.n_init) < 1:
            raise ValueError("max_iter and n_init must be at least 1")

    def _prior(self, X):
        D = X.shape[1]
        nu0 = float(D + 2 if self.nu0 is None else self.nu0)
        if nu0 <= D - 1:
            raise ValueError(f"nu0 must exceed D - 1 = {D - 1}")
        cov = np.atleast_2d(np.cov(X.T)) if len(X) > 1 else np.eye(D)
        cov = cov + 1e-6 * np.trace(cov) / D * np.eye(D) + 1e-9 * np.eye(D)
        W0 = np.linalg.inv(self.w0_scale * cov) / nu0
        return X.mean(axis=0), float(self.beta0), W0, nu0

    def _update_params(self, X, lengths, resp, trans_counts, prior):
        m0, beta0, W0, nu0 = prior
        C = resp.shape[1]
        self.m_, self.beta_, self.W_, self.nu_ = normal_wishart_posterior(X, resp, m0, beta0, W0, nu0)
        self.start_a_, self.start_b_ = stick_posterior(resp[_sequence_starts(lengths)].sum(axis=0),
                                                       self.alpha)
        counts = trans_counts + self.sticky * np.eye(C)
        self.trans_a_, self.trans_b_ = stick_posterior(counts, self.alpha)

    def _kl_params(self, prior):
        m0, beta0, W0, nu0 = prior
        kl = kl_normal_wishart(self.m_, self.beta_, self.W_, self.nu_, m0, beta0, W0, nu0).sum()
        kl += kl_beta(self.start_a_, self.start_b_, 1.0, self.alpha).sum()
        # sticky pseudo-counts act as a prior Beta(1 + s, alpha + ...) on the diagonal
        # pieces; the ELBO below is that of the sticky-augmented prior.
        a0, b0 = stick_posterior(self.sticky * np.eye(self.max_states), self.alpha)
        kl += kl_beta(self.trans_a_, self.trans_b_, a0, b0).sum()
        return float(kl)

    def _e_step(self, X, lengths):
        log_pi = expected_log_weights(self.start_a_, self.start_b_)
        log_A = expected_log_weights(self.trans_a_, self.trans_b_)
        log_lik = expected_gaussian_loglik(X, self.m_, self.beta_, self.W_, self.nu_)
        return smooth(log_pi, log_A, log_lik, lengths), (log_pi, log_A, log_lik)

    def _init_resp(self, X, rng):
        # k-means++-style seeds, then hard nearest-seed assignment
        C = int(self.max_states)
        idx = [int(rng.integers(len(X)))]
        d2 = ((X - X[idx[0]]) ** 2).sum(axis=1)
        for _ in range(1, min(C, len(X))):
            p = d2 / d2.sum() if d2.sum() > 0 else None
            idx.append(int(rng.choice(len(X), p=p)))
            d2 = np.minimum(d2, ((X - X[idx[-1]]) ** 2).sum(axis=1))
        centres = X[idx]
        lab = np.argmin(((X[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
        resp = np.full((len(X), C), 1e-3)
        resp[np.arange(len(X)), lab] += 1.0
        return resp / resp.sum(axis=1, keepdims=True)

    # -- API ----------------------------------------------------------------
    def fit(self, X, y=None, lengths=None):
        """Fit to one sequence (T, D), a list of sequences, or stacked X with ``lengths``."""
        self._check_params()
        X, lengths = stack_sequences(X, lengths)
        prior = self._prior(X)
        rng = np.random.default_rng(self.random_state)
        C = int(self.max_states)
        best = None
        for _ in range(int(self.n_init)):
            resp = self._init_resp(X, rng)
            starts = _sequence_starts(lengths)
            trans = np.zeros((C, C))
            for s, L in zip(starts, lengths):
                trans += resp[s:s + L - 1].T @ resp[s + 1:s + L]
            self._update_params(X, lengths, resp, trans, prior)
            elbo = []
            for _ in range(int(self.max_iter)):
                res, _ = self._e_step(X, lengths)
                elbo.append(res.loglik - self._kl_params(prior))
                self._update_params(X, lengths, res.posterior, res.trans_counts, prior)
                if len(elbo) > 1 and abs(elbo[-1] - elbo[-2]) <= self.tol * abs(elbo[-1]):
                    break
            res, _ = self._e_step(X, lengths)
            elbo.append(res.loglik - self._kl_params(prior))
            if best is None or elbo[-1] > best[0]:
                best = (elbo[-1], elbo, {k: getattr(self, k) for k in
                                         ("m_", "beta_", "W_", "nu_", "start_a_", "start_b_",
                                          "trans_a_", "trans_b_")}, res.posterior)
        _, self.elbo_, params, post = best
        for k, v in params.items():
            setattr(self, k, v)
        self.prior_ = prior
        self.n_features_in_ = X.shape[1]
        self.means_ = self.m_.copy()
        self.covars_ = np.linalg.inv(self.W_) / self.nu_[:, None, None]
        self.startprob_ = expected_weights(self.start_a_, self.start_b_)
        self.transmat_ = expected_weights(self.trans_a_, self.trans_b_)
        self.state_weights_ = post.sum(axis=0) / len(X)
        self.n_states_used_ = n_used(self.state_weights_, self.usage_threshold)
        self.labels_ = self._decode(X, lengths)
        return self

    def _check_fitted(self, X, lengths):
        if not hasattr(self, "m_"):
            raise ValueError("this StickBreakingHMM is not fitted yet; call fit first")
        X, lengths = stack_sequences(X, lengths)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, the model was fitted on "
                             f"{self.n_features_in_}")
        return X, lengths

    def _decode(self, X, lengths):
        log_pi = expected_log_weights(self.start_a_, self.start_b_)
        log_A = expected_log_weights(self.trans_a_, self.trans_b_)
        log_lik = expected_gaussian_loglik(X, self.m_, self.beta_, self.W_, self.nu_)
        return viterbi(log_pi, log_A, log_lik, lengths).path

    def predict(self, X, lengths=None):
        """Most probable state per frame (Viterbi under the expected parameters)."""
        X, lengths = self._check_fitted(X, lengths)
        return self._decode(X, lengths)

    def predict_proba(self, X, lengths=None):
        """Smoothed state posteriors (T, C)."""
        X, lengths = self._check_fitted(X, lengths)
        return self._e_step(X, lengths)[0].posterior

    def score(self, X, y=None, lengths=None):
        """ELBO-style score of new data: ``log Z_q(z)`` under the expected parameters."""
        X, lengths = self._check_fitted(X, lengths)
        return float(self._e_step(X, lengths)[0].loglik)
