"""LM2GP: a GP latent variable model with a stick-breaking HMM prior on the latent points.

Reduced form of paper 001 (digest section 001) that runs here:

* emissions ``Y | X ~ prod_d N(y_d | 0, K(X) + sigma^2 I)``, one RBF kernel shared
  across outputs (P7);
* latent prior: the truncated stick-breaking HMM of
  :class:`recognizers.modelling.sbhmm.StickBreakingHMM` on the rows of ``X``
  (Normal-Wishart regimes, Beta sticks) updated by VB;
* ``X`` and the kernel hyper-parameters by L-BFGS on
  ``log p(Y | X) + E_q[log p(X | z, theta)]`` (MAP for X); optionally followed by
  HMC over all latent points jointly (paper P8), ``latent_inference="hmc"``.

Exact GP (O(N^3)); sequences longer than ``max_points`` are subsampled evenly
for fitting and the rest are placed by :meth:`LM2GP.transform`.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin

from recognizers.modelling.hmm.sbhmm import StickBreakingHMM, stack_sequences

__all__ = ["LM2GP", "gp_loglik_and_grad", "latent_prior_and_grad"]


def _rbf(X, log_s2, log_ell):
    D2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.exp(log_s2 - 0.5 * D2 * np.exp(-2 * log_ell)), D2


def gp_loglik_and_grad(X, Y, log_s2, log_ell, log_noise):
    """``log N(Y | 0, K + sigma^2 I)`` (columns independent, shared kernel) and its
    gradients w.r.t. ``X`` and ``(log_s2, log_ell, log_noise)``."""
    N, Dy = Y.shape
    Kf, D2 = _rbf(X, log_s2, log_ell)
    K = Kf + np.exp(log_noise) * np.eye(N)
    L = np.linalg.cholesky(K)
    Kinv = np.linalg.solve(L.T, np.linalg.solve(L, np.eye(N)))
    KiY = Kinv @ Y
    ll = (-Dy * np.log(np.diag(L)).sum() - 0.5 * np.sum(Y * KiY)
          - 0.5 * N * Dy * np.log(2 * np.pi))
    G = 0.5 * (KiY @ KiY.T - Dy * Kinv)  # dL/dK
    M = G * Kf
    inv_ell2 = np.exp(-2 * log_ell)
    gX = -2 * inv_ell2 * (M.sum(1)[:, None] * X - M @ X)
    g_hyp = np.array([M.sum(), (M * D2).sum() * inv_ell2, np.exp(log_noise) * np.trace(G)])
    return ll, gX, g_hyp


def latent_prior_and_grad(X, resp, m, beta, W, nu):
    """``sum_tk r_tk E[log N(x_t | mu_k, Lambda_k^-1)]`` up to X-free terms, and d/dX."""
    diff = X[:, None, :] - m[None]                            # (N, K, Q)
    Wd = np.einsum("kqr,nkr->nkq", W, diff) * nu[None, :, None]
    val = -0.5 * np.sum(resp[:, :, None] * diff * Wd)
    grad = -np.einsum("nk,nkq->nq", resp, Wd)
    return val, grad


class LM2GP(ClusterMixin, TransformerMixin, BaseEstimator):
    """Latent-manifold GP with a stick-breaking HMM on the latent points.

    Parameters
    ----------
    n_latent : latent dimension Q.
    max_states : truncation C of the stick-breaking HMM.
    alpha, sticky : stick concentration and self-transition pseudo-count.
    n_outer : alternations of (VB on the HMM, L-BFGS on X and hyper-parameters).
    lbfgs_iter : L-BFGS iterations per alternation.
    max_points : fit on at most this many evenly spaced frames (exact GP).
    latent_inference : "map" (L-BFGS) or "hmc": after the L-BFGS alternations, the
        latent points are sampled jointly by HMC (paper P8) given the kernel and q(z),
        and ``latent_`` is the sample mean.
    hmc_samples : HMC draws (after as many burn-in draws) when ``latent_inference="hmc"``.
    random_state : seed.

    Attributes
    ----------
    latent_ (N, Q), hmm_ (the fitted StickBreakingHMM on ``latent_``),
    kernel_params_ ``(log_s2, log_ell, log_noise)``, n_states_used_, objective_.
    """

    def __init__(self, n_latent=2, max_states=10, alpha=1.0, sticky=0.0, n_outer=10,
                 lbfgs_iter=30, max_points=600, latent_inference="map", hmc_samples=20,
                 random_state=None):
        self.n_latent = n_latent
        self.max_states = max_states
        self.alpha = alpha
        self.sticky = sticky
        self.n_outer = n_outer
        self.lbfgs_iter = lbfgs_iter
        self.max_points = max_points
        self.latent_inference = latent_inference
        self.hmc_samples = hmc_samples
        self.random_state = random_state

    def fit(self, X, y=None, lengths=None):
        """Fit to one sequence (T, D) (a list of sequences is stacked; the HMM sees the
        boundaries)."""
        Y, lengths = stack_sequences(X, lengths)
        if self.latent_inference not in ("map", "hmc"):
            raise ValueError("latent_inference must be 'map' or 'hmc'")
        if int(self.n_latent) < 1 or int(self.n_latent) > Y.shape[1]:
            raise ValueError("n_latent must be between 1 and the number of features")
        step = max(1, int(np.ceil(len(Y) / int(self.max_points))))
        idx = np.arange(0, len(Y), step)
        if step > 1:  # subsampled: sequence boundaries are kept approximately
            lengths = np.diff(np.r_[np.searchsorted(idx, np.r_[0, np.cumsum(lengths)])])
            lengths = lengths[lengths > 0]
        self.y_mean_ = Y.mean(0)
        self.y_scale_ = Y.std(0) + 1e-12
        Yf = (Y[idx] - self.y_mean_) / self.y_scale_
        N, Q = len(Yf), int(self.n_latent)
        # PCA initialisation, unit variance latents
        U, S, Vt = np.linalg.svd(Yf - Yf.mean(0), full_matrices=False)
        Xl = U[:, :Q] * np.sqrt(N)
        hyp = np.array([0.0, 0.0, np.log(0.1)])
        hmm = StickBreakingHMM(max_states=self.max_states, alpha=self.alpha,
                               sticky=self.sticky, max_iter=20, random_state=self.random_state)
        hmm.fit(Xl, lengths=lengths)
        self.objective_ = []
        for _ in range(int(self.n_outer)):
            res, _ = hmm._e_step(Xl, lengths)
            r = res.posterior
            m, beta, W, nu = hmm.m_, hmm.beta_, hmm.W_, hmm.nu_

            def f(theta):
                Xc = theta[:N * Q].reshape(N, Q)
                h = theta[N * Q:]
                ll, gX, gh = gp_loglik_and_grad(Xc, Yf, *h)
                lp, gp = latent_prior_and_grad(Xc, r, m, beta, W, nu)
                return -(ll + lp), -np.r_[(gX + gp).ravel(), gh]

            theta = np.r_[Xl.ravel(), hyp]
            out = minimize(f, theta, jac=True, method="L-BFGS-B",
                           options={"maxiter": int(self.lbfgs_iter)})
            Xl, hyp = out.x[:N * Q].reshape(N, Q), out.x[N * Q:]
            self.objective_.append(-out.fun)
            # VB on the HMM given the new latent points (a few sweeps from the current q)
            for _ in range(5):
                res, _ = hmm._e_step(Xl, lengths)
                hmm._update_params(Xl, lengths, res.posterior, res.trans_counts, hmm.prior_)
        if self.latent_inference == "hmc":
            from recognizers.modelling.hmc import hmc_sample

            r = hmm._e_step(Xl, lengths)[0].posterior

            def logp(flat):
                Xc = flat.reshape(N, Q)
                ll, gX, _ = gp_loglik_and_grad(Xc, Yf, *hyp)
                lp, gp = latent_prior_and_grad(Xc, r, hmm.m_, hmm.beta_, hmm.W_, hmm.nu_)
                return ll + lp, (gX + gp).ravel()

            draws, self.hmc_acceptance_ = hmc_sample(
                logp, Xl, int(self.hmc_samples), step_size=0.01, n_leapfrog=10,
                rng=self.random_state, burn_in=int(self.hmc_samples))
            Xl = draws.mean(axis=0).reshape(N, Q)
        # final VB on the learnt manifold, with restarts (one k-means start can merge regimes)
        hmm.set_params(n_init=3, max_iter=200).fit(Xl, lengths=lengths)
        self.hmm_ = hmm
        self.latent_ = Xl
        self.kernel_params_ = hyp
        self._Yf = Yf
        self._fit_index = idx
        self.n_features_in_ = Y.shape[1]
        self.n_states_used_ = hmm.n_states_used_
        self.labels_ = self.hmm_.labels_
        return self

    def transform(self, X):
        """Latent points of new frames: the latent point of the nearest (standardised)
        training frame.  (The paper's predictive-mean back-projection is not done yet.)"""
        if not hasattr(self, "latent_"):
            raise ValueError("this LM2GP is not fitted yet; call fit first")
        Y, _ = stack_sequences(X)
        if Y.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {Y.shape[1]} features, the model was fitted on "
                             f"{self.n_features_in_}")
        Yn = (Y - self.y_mean_) / self.y_scale_
        d2 = ((Yn ** 2).sum(1)[:, None] - 2 * Yn @ self._Yf.T + (self._Yf ** 2).sum(1)[None])
        return self.latent_[np.argmin(d2, axis=1)].copy()

    def predict(self, X, lengths=None):
        """Regime per frame: Viterbi of the stick-breaking HMM on the latent points."""
        Y, lengths = stack_sequences(X, lengths)
        return self.hmm_.predict(self.transform(Y), lengths=lengths)
