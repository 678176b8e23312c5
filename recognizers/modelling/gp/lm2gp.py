"""LM2GP: a GP latent variable model whose latent points follow a stick-breaking HMM.

Reduced form of Chatzis & Kosmopoulos' LM2GP that runs on whole recordings:

* emissions ``Y | X``: independent outputs sharing one RBF kernel, through a sparse
  variational GP with ``M`` inducing inputs ``Z`` (Titsias' collapsed bound,
  :func:`sparse_gp_bound_and_grad`), so every frame is fitted at ``O(N M^2)``
  instead of an exact GP on a subsample;
* latent prior: the truncated stick-breaking HMM of
  :mod:`recognizers.modelling.hmm.sbhmm_core` on the rows of ``X`` (Normal-Wishart
  regimes, Beta sticks, learnt sticky bias), updated by VB;
* ``X``, ``Z`` and the kernel hyper-parameters by L-BFGS on
  ``bound(Y | X, Z) + E_q[log p(X | z, theta)]`` (MAP for X), alternating with VB
  sweeps of the HMM; merge/delete moves of the regimes are kept when they raise the
  joint bound (:func:`joint_bound`) after the latent points have followed them
  (Bryant and Sudderth's moves, judged by the whole model's bound); optionally
  followed by HMC over all latent points jointly (``latent_inference="hmc"``, as the
  paper samples them).

References
----------
The LM2GP and sparse-GP papers are cited in :class:`LM2GP`'s docstring.
Bryant, M. and Sudderth, E. B., "Truly nonparametric online variational inference for
hierarchical Dirichlet processes", NeurIPS 2012 (merge moves accepted by the bound).
Lawrence, N. D., "Probabilistic non-linear principal component analysis with Gaussian
process latent variable models", Journal of Machine Learning Research 6, 2005.
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy.linalg import cho_solve, solve_triangular
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from recognizers.modelling.hmm.sbhmm import StickBreakingHMM, stack_sequences
from recognizers.modelling.hmm.sbhmm_core import (
    coordinate_ascent,
    elbo,
    infer_states,
    move_proposals,
    update_posterior,
)

__all__ = ["LM2GP", "gp_loglik_and_grad", "joint_bound", "latent_prior_and_grad",
           "sparse_gp_bound_and_grad"]


# (log_s2, log_ell, log_noise) on standardised outputs: keeps the Cholesky factors of
# K_mm and I + A A^T well conditioned when a line search tries an extreme step.
_KERNEL_BOUNDS = [(-7.0, 7.0), (-7.0, 7.0), (np.log(1e-4), np.log(10.0))]


def _sqdist(A, B):
    return np.maximum((A ** 2).sum(1)[:, None] - 2 * A @ B.T + (B ** 2).sum(1)[None, :], 0.0)


def _rbf(X, log_s2, log_ell):
    D2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.exp(log_s2 - 0.5 * D2 * np.exp(-2 * log_ell)), D2


def gp_loglik_and_grad(X, Y, log_s2, log_ell, log_noise):
    """Exact ``log N(Y | 0, K + sigma^2 I)`` (columns independent, shared RBF kernel)
    and its gradients w.r.t. ``X`` and ``(log_s2, log_ell, log_noise)``: O(N^3), the
    reference for :func:`sparse_gp_bound_and_grad` on small problems."""
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


def sparse_gp_bound_and_grad(X, Y, Z, log_s2, log_ell, log_noise, jitter=1e-6):
    """Titsias' collapsed bound on ``log p(Y | X)`` and its gradients.

    ``F = sum_d log N(y_d | 0, Q + sigma^2 I) - D / (2 sigma^2) tr(K_nn - Q)`` with
    ``Q = K_nm K_mm^-1 K_mn``; one RBF kernel ``s2 exp(-|x - x'|^2 / (2 ell^2))`` shared
    by the D outputs.  With ``Z = X`` (and no jitter) it is the exact log marginal
    likelihood.  Cost O(N M^2 + N M D); no N x N matrix is formed.

    Parameters
    ----------
    X : ndarray (N, Q)
        Latent inputs.
    Y : ndarray (N, D)
        Outputs.
    Z : ndarray (M, Q)
        Inducing inputs.
    log_s2, log_ell, log_noise : float
        Log signal variance, log length-scale, log noise variance.
    jitter : float
        Added to ``K_mm``'s diagonal, relative to ``s2``.

    Returns
    -------
    F : float
    gX : ndarray (N, Q)
    gZ : ndarray (M, Q)
    g_hyp : ndarray (3,)
        Derivatives w.r.t. ``(log_s2, log_ell, log_noise)``.
    """
    N, D = Y.shape
    M = len(Z)
    s2, sn2, inv_ell2 = np.exp(log_s2), np.exp(log_noise), np.exp(-2 * log_ell)
    D2nm, D2mm = _sqdist(X, Z), _sqdist(Z, Z)
    Knm = s2 * np.exp(-0.5 * inv_ell2 * D2nm)
    Kmm = s2 * (np.exp(-0.5 * inv_ell2 * D2mm) + jitter * np.eye(M))
    Lm = np.linalg.cholesky(Kmm)
    A = solve_triangular(Lm, Knm.T, lower=True) / np.sqrt(sn2)        # (M, N)
    AAt = A @ A.T
    B = np.eye(M) + AAt
    LB = np.linalg.cholesky(B)
    AY = A @ Y                                                          # (M, D)
    c = solve_triangular(LB, AY, lower=True) / np.sqrt(sn2)
    trQ = sn2 * np.trace(AAt)
    F = (-0.5 * N * D * np.log(2 * np.pi) - D * np.log(np.diag(LB)).sum()
         - 0.5 * N * D * np.log(sn2) - 0.5 * np.sum(Y * Y) / sn2 + 0.5 * np.sum(c * c)
         - 0.5 * D * (N * s2 - trQ) / sn2)

    # Sigma^-1 V = (V - A^T B^-1 A V) / sn2, Sigma = Q + sn2 I (Woodbury)
    def sigma_inv(V, AV):
        return (V - A.T @ cho_solve((LB, True), AV)) / sn2

    alpha = sigma_inv(Y, AY)                                            # Sigma^-1 Y
    AKnm = A @ Knm
    GKnm = (0.5 * alpha @ (alpha.T @ Knm) - 0.5 * D * sigma_inv(Knm, AKnm)
            + 0.5 * D / sn2 * Knm)                                      # G K_nm, G = dF/dQ
    Kmm_inv = cho_solve((Lm, True), np.eye(M))
    P = 2.0 * GKnm @ Kmm_inv                                            # dF/dK_nm
    R = -Kmm_inv @ (Knm.T @ GKnm) @ Kmm_inv                             # dF/dK_mm
    R = 0.5 * (R + R.T)
    PK, RK = P * Knm, R * Kmm
    RKoff = R * (Kmm - s2 * jitter * np.eye(M))  # the jitter does not move with Z or ell
    gX = -inv_ell2 * (PK.sum(1)[:, None] * X - PK @ Z)
    gZ = (inv_ell2 * (PK.T @ X - PK.sum(0)[:, None] * Z)
          - 2 * inv_ell2 * (RKoff.sum(1)[:, None] * Z - RKoff @ Z))
    tr_sigma_inv = (N - np.trace(cho_solve((LB, True), AAt))) / sn2
    dF_dsn2 = (0.5 * (np.sum(alpha * alpha) - D * tr_sigma_inv)
               + 0.5 * D * (N * s2 - trQ) / sn2 ** 2)
    g_hyp = np.array([PK.sum() + RK.sum() - 0.5 * D * N * s2 / sn2,
                      inv_ell2 * ((PK * D2nm).sum() + (RKoff * D2mm).sum()),
                      sn2 * dF_dsn2])
    return float(F), gX, gZ, g_hyp


def latent_prior_and_grad(X, resp, m, beta, W, nu):
    """``sum_tk r_tk E[log N(x_t | mu_k, Lambda_k^-1)]`` up to X-free terms, and d/dX."""
    diff = X[:, None, :] - m[None]                            # (N, K, Q)
    Wd = np.einsum("kqr,nkr->nkq", W, diff) * nu[None, :, None]
    val = -0.5 * np.sum(resp[:, :, None] * diff * Wd)
    grad = -np.einsum("nk,nkq->nq", resp, Wd)
    return val, grad


def joint_bound(X, Y, Z, hyp, lengths, post, prior, alpha, kappa):
    """The model's objective: Titsias' bound on ``log p(Y | X)`` plus the regimes' HMM
    ELBO on the latent points (:func:`~recognizers.modelling.hmm.sbhmm_core.elbo`, at
    the optimal ``q(z)``), i.e. a lower bound on ``log p(Y, X)`` with ``X`` a MAP point.

    Returns
    -------
    bound : float
    estep : the HMM's E-step at ``post``
    """
    F = sparse_gp_bound_and_grad(X, Y, Z, *hyp)[0]
    e, res = elbo(X, lengths, post, prior, alpha, kappa)
    return F + e, res


class BackMap:
    """Kernel ridge regression from standardised observations to latent points.

    The GP maps latent points to observations; new frames need the reverse. This is
    the back-constraint of Lawrence and Quinonero-Candela (ICML 2006) fitted after
    training: an RBF kernel regression on ``n_centres`` training frames (Nystrom form,
    every training frame in the loss), bandwidth the median squared distance between
    centres, ridge ``ridge * N``. One map for every frame, so a training frame gets
    (nearly) its fitted latent point and a new frame the point its neighbours in
    observation space suggest.

    Parameters
    ----------
    Y : ndarray (N, D)
        Standardised training observations.
    latent : ndarray (N, Q)
        Their fitted latent points.
    rng : numpy RandomState
        Chooses the centres.
    n_centres : int
    ridge : float

    Attributes
    ----------
    centres : ndarray (M, D)
    gamma : float
        Inverse squared bandwidth.
    weights : ndarray (M, Q)
    """

    def __init__(self, Y, latent, rng, n_centres=300, ridge=1e-6):
        N = len(Y)
        M = min(int(n_centres), N)
        self.centres = Y[np.sort(rng.choice(N, M, replace=False))]
        d2 = _sqdist(self.centres, self.centres)
        positive = d2[d2 > 0]
        self.gamma = 1.0 / (np.median(positive) if positive.size else 1.0)
        Kcc = np.exp(-self.gamma * d2)
        Knc = self._features(Y)
        A = Knc.T @ Knc + ridge * N * Kcc
        A[np.diag_indices(M)] += 1e-10 * np.trace(A) / M     # keeps A positive definite
        self.weights = np.linalg.solve(A, Knc.T @ latent)

    def _features(self, Y):
        return np.exp(-self.gamma * _sqdist(Y, self.centres))

    def __call__(self, Y):
        """Latent points (T, Q) of standardised observations Y (T, D)."""
        out = np.empty((len(Y), self.weights.shape[1]))
        for s in range(0, len(Y), 4096):  # bounded memory for long recordings
            out[s:s + 4096] = self._features(Y[s:s + 4096]) @ self.weights
        return out


class LM2GP(ClusterMixin, TransformerMixin, BaseEstimator):
    """Latent-manifold GP with a stick-breaking HMM on the latent points.

    Parameters
    ----------
    n_latent : int, default=2
        Latent dimension Q (capped at the number of features and of frames).
    max_states : int, default=10
        Truncation C of the stick-breaking HMM.
    alpha : float, default=1.0
        Stick concentration.
    sticky : "auto" or float, default="auto"
        Self-transition pseudo-count of the HMM ("auto": learnt, see
        :class:`~recognizers.modelling.hmm.sbhmm.StickBreakingHMM`).
    w0_scale : float, default=0.5
        The regimes' prior: a regime is expected ``w0_scale`` times as spread as all
        the latent points (as in ``StickBreakingHMM``).
    n_inducing : int, default=40
        Inducing inputs M of the sparse GP (capped at the number of frames).
    n_outer : int, default=5
        Alternations of (VB on the HMM, L-BFGS on X, Z and the kernel).
    lbfgs_iter : int, default=30
        L-BFGS iterations per alternation.
    moves : bool, default=True
        From the second alternation on, merge and delete moves of the regimes compete
        with the plain alternation: each proposal's ``q(z)`` is followed by an
        alternation (the latent points move to it, then VB sweeps), and the candidate
        with the highest :func:`joint_bound` is kept. A move on the HMM alone, with the
        points fixed, cannot see that the GP could place a regime's frames inside
        another one.
    n_move_tries : int, default=1
        Merges (closest pair first) and deletes (smallest regime first) proposed per
        alternation; each costs one more alternation.
    latent_inference : {"map", "hmc"}, default="map"
        "hmc": after the alternations, the latent points are sampled jointly by HMC
        given the kernel and q(z), and ``latent_`` is the sample mean.
    hmc_samples : int, default=20
        HMC draws (after as many burn-in draws) when ``latent_inference="hmc"``.
    random_state : int, RandomState instance or None, default=None

    Attributes
    ----------
    latent_ : ndarray (N, Q)
        Latent point of every training frame.
    inducing_ : ndarray (M, Q)
        Inducing inputs.
    kernel_params_ : ndarray (3,)
        ``(log_s2, log_ell, log_noise)``.
    back_map_ : BackMap
        Observations -> latent points, used by ``transform`` and ``predict``.
    hmm_ : StickBreakingHMM
        The regimes' HMM fitted with the latent points, run to convergence on
        ``latent_`` (:meth:`StickBreakingHMM.fit_from_posterior`); its labels are the
        regimes.
    labels_ : ndarray (N,)
        Regime of every training frame.
    n_states_used_ : int
    objective_ : list of float
        ``bound + latent prior`` after each L-BFGS run.
    joint_bound_ : list of float
        :func:`joint_bound` after each alternation (never decreases).
    moves_ : list of tuple
        Moves kept in the alternations, ``(kind, internal states)``; the final
        regimes' own moves are in ``hmm_.moves_``.
    hmc_acceptance_ : float
        Only with ``latent_inference="hmc"``.
    n_features_in_ : int

    References
    ----------
    Chatzis, S. P. and Kosmopoulos, D. I., "A latent manifold Markovian dynamics Gaussian
    process", IEEE Transactions on Neural Networks and Learning Systems 26(1), 2015.
    Titsias, M. K., "Variational learning of inducing variables in sparse Gaussian
    processes", AISTATS 2009.
    """

    _parameter_constraints = {
        "n_latent": [Interval(Integral, 1, None, closed="left")],
        "max_states": [Interval(Integral, 2, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "sticky": [StrOptions({"auto"}), Interval(Real, 0, None, closed="left")],
        "w0_scale": [Interval(Real, 0, None, closed="neither")],
        "n_inducing": [Interval(Integral, 1, None, closed="left")],
        "n_outer": [Interval(Integral, 1, None, closed="left")],
        "lbfgs_iter": [Interval(Integral, 1, None, closed="left")],
        "moves": ["boolean"],
        "n_move_tries": [Interval(Integral, 0, None, closed="left")],
        "latent_inference": [StrOptions({"map", "hmc"})],
        "hmc_samples": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, n_latent=2, *, max_states=10, alpha=1.0, sticky="auto", w0_scale=0.5,
                 n_inducing=40,
                 n_outer=5, lbfgs_iter=30, moves=True, n_move_tries=1, latent_inference="map",
                 hmc_samples=20, random_state=None):
        self.n_latent = n_latent
        self.max_states = max_states
        self.alpha = alpha
        self.sticky = sticky
        self.w0_scale = w0_scale
        self.n_inducing = n_inducing
        self.n_outer = n_outer
        self.lbfgs_iter = lbfgs_iter
        self.moves = moves
        self.n_move_tries = n_move_tries
        self.latent_inference = latent_inference
        self.hmc_samples = hmc_samples
        self.random_state = random_state

    def _hmm(self, seed, **kw):
        return StickBreakingHMM(max_states=self.max_states, alpha=self.alpha,
                                sticky=self.sticky, w0_scale=self.w0_scale,
                                random_state=seed, **kw)

    def _alternation(self, Yf, lengths, Xl, Zl, hyp, resp, post, prior, kappa):
        """L-BFGS on the latent points, inducing inputs and kernel given ``q(z) = resp``
        and ``q(theta) = post``, then VB sweeps of the HMM on the new points.

        Returns ``(X, Z, hyp, L-BFGS objective, post, kappa, E-step, joint bound)``; the
        joint bound is :func:`joint_bound` at the returned state."""
        N, Q = Xl.shape
        M = len(Zl)

        def f(theta):
            Xc = theta[:N * Q].reshape(N, Q)
            Zc = theta[N * Q:(N + M) * Q].reshape(M, Q)
            F, gX, gZ, gh = sparse_gp_bound_and_grad(Xc, Yf, Zc, *theta[(N + M) * Q:])
            lp, gp = latent_prior_and_grad(Xc, resp, post.m, post.beta, post.W, post.nu)
            return -(F + lp), -np.r_[(gX + gp).ravel(), gZ.ravel(), gh]

        out = minimize(f, np.r_[Xl.ravel(), Zl.ravel(), hyp], jac=True, method="L-BFGS-B",
                       bounds=[(None, None)] * ((N + M) * Q) + _KERNEL_BOUNDS,
                       options={"maxiter": int(self.lbfgs_iter)})
        Xl = out.x[:N * Q].reshape(N, Q)
        Zl = out.x[N * Q:(N + M) * Q].reshape(M, Q)
        hyp = out.x[(N + M) * Q:]
        post, kappa, res, elbos = coordinate_ascent(
            Xl, lengths, post, prior, float(self.alpha), kappa,
            learn_kappa=self.sticky == "auto", max_iter=5, tol=0.0)
        F = sparse_gp_bound_and_grad(Xl, Yf, Zl, *hyp)[0]
        return Xl, Zl, hyp, -float(out.fun), post, kappa, res, F + elbos[-1]

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, lengths=None):
        """Fit latent points, inducing inputs, kernel and regimes to every frame.

        Parameters
        ----------
        X : array-like (T, D) or list of (T_i, D) arrays
            The sequences are stacked; the HMM sees their boundaries.
        y : ignored
        lengths : array-like of int, optional

        Returns
        -------
        self
        """
        Y, lengths = stack_sequences(X, lengths, estimator=self, reset=True)
        if len(Y) < 2:
            raise ValueError("LM2GP needs at least 2 frames, got n_samples=1")
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(2 ** 31 - 1))
        self.y_mean_ = Y.mean(0)
        self.y_scale_ = Y.std(0)
        self.y_scale_[self.y_scale_ <= 1e-12] = 1.0
        Yf = (Y - self.y_mean_) / self.y_scale_
        N, Q = len(Yf), min(int(self.n_latent), Y.shape[1], len(Yf))
        M = min(int(self.n_inducing), N)
        # PCA initialisation, unit-variance latents
        U, S, Vt = np.linalg.svd(Yf - Yf.mean(0), full_matrices=False)
        Xl = U[:, :Q] * np.sqrt(N)
        Zl = Xl[np.sort(rng.choice(N, M, replace=False))].copy()
        hyp = np.array([0.0, 0.0, np.log(0.1)])
        hmm = self._hmm(seed, max_iter=20, moves=False).fit(Xl, lengths=lengths)
        post, prior, kappa = hmm.posterior_, hmm.prior_, hmm.kappa_
        alpha = float(self.alpha)
        self.objective_, self.joint_bound_, self.moves_ = [], [], []
        res = infer_states(Xl, lengths, post)
        for _ in range(int(self.n_outer)):
            # the alternation from the current q(z), and, competing with it, from each
            # merge/delete proposal of the regimes: the latent points follow the new
            # q(z) before the joint bound judges it, so a regime whose frames the GP
            # can place inside another one is merged (a move on the HMM alone, with the
            # points fixed, never sees that)
            candidates = [("stay", (), res.posterior, post)]
            if self.moves and len(self.joint_bound_):
                for kind, states, resp, xi in move_proposals(
                        Xl, lengths, post, res, n_tries=int(self.n_move_tries)):
                    candidates.append((kind, states, resp, update_posterior(
                        Xl, lengths, resp, xi, prior, alpha, kappa)))
            best = None
            for kind, states, resp, start in candidates:
                run = self._alternation(Yf, lengths, Xl, Zl, hyp, resp, start, prior, kappa)
                if best is None or run[-1] > best[0][-1]:
                    best = run, kind, states
            (Xl, Zl, hyp, lbfgs_value, post, kappa, res, joint), kind, states = best
            self.objective_.append(lbfgs_value)
            self.joint_bound_.append(joint)
            if kind != "stay":
                self.moves_.append((kind, states))
        if self.latent_inference == "hmc":
            from recognizers.modelling.hmc import hmc_sample

            r = infer_states(Xl, lengths, post).posterior

            def logp(flat):
                Xc = flat.reshape(N, Q)
                F, gX, _, _ = sparse_gp_bound_and_grad(Xc, Yf, Zl, *hyp)
                lp, gp = latent_prior_and_grad(Xc, r, post.m, post.beta, post.W, post.nu)
                return F + lp, (gX + gp).ravel()

            draws, self.hmc_acceptance_ = hmc_sample(
                logp, Xl, int(self.hmc_samples), step_size=0.01, n_leapfrog=10,
                rng=seed, burn_in=int(self.hmc_samples))
            Xl = draws.mean(axis=0).reshape(N, Q)
        # the regimes: the HMM fitted with the latent points, its sweeps run to
        # convergence and its own moves tried (a fresh fit would start over under a
        # prior of its own, and on seed 2 of the recovery task split a regime that the
        # joint fit holds as one)
        self.hmm_ = self._hmm(seed).fit_from_posterior(Xl, post, prior, kappa, lengths=lengths)
        self.latent_ = Xl
        self.inducing_ = Zl
        self.kernel_params_ = hyp
        self.back_map_ = BackMap(Yf, Xl, rng)
        self.n_states_used_ = self.hmm_.n_states_used_
        self.labels_ = self.hmm_.labels_
        return self

    def transform(self, X):
        """Latent points of frames by the back map fitted at training (:class:`BackMap`):
        a training frame gets close to its fitted point, a new frame a point from its
        neighbours in observation space.

        Parameters
        ----------
        X : array-like (T, D) or list of (T_i, D) arrays

        Returns
        -------
        latent : ndarray (T, Q)
        """
        check_is_fitted(self, "latent_")
        Y, _ = stack_sequences(X, estimator=self, reset=False)
        return self.back_map_((Y - self.y_mean_) / self.y_scale_)

    def predict(self, X, lengths=None):
        """Regime per frame: Viterbi of the stick-breaking HMM on the latent points.

        Parameters
        ----------
        X : array-like (T, D) or list of (T_i, D) arrays
        lengths : array-like of int, optional

        Returns
        -------
        labels : ndarray (T,)
        """
        check_is_fitted(self, "latent_")
        Y, lengths = stack_sequences(X, lengths, estimator=self, reset=False)
        return self.hmm_.predict(self.transform(Y), lengths=lengths)

    def score(self, X, y=None, lengths=None):
        """``log Z_q(z)`` of the regimes' HMM on the frames' latent points.

        Returns
        -------
        score : float
        """
        check_is_fitted(self, "latent_")
        Y, lengths = stack_sequences(X, lengths, estimator=self, reset=False)
        return self.hmm_.score(self.transform(Y), lengths=lengths)
