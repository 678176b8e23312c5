"""Exponential-family harmonium kernels (Guo & Xing, "Bayesian Exponential
Family Harmoniums", CMU-ML-06-103, 2006): pure functions of
arrays that the estimators in :mod:`recognizers.modelling.harmonium` call.

Model (rows of ``V`` are visible vectors, sklearn layout ``N x D``)
---------------------------------------------------------------------
Visible units ``v = [x ; z]``: Bernoulli units ``x`` (mask ``gaussian`` False)
and unit-variance Gaussian units ``z`` (mask True, the dual-wing harmonium's
second wing).  Hidden units ``h`` (J of them) are Gaussian with unit variance,
lambda = 0 (a hidden bias is redundant with ``theta``)::

    p(v, h) ∝ exp{ theta^T v - ½ z^T z - ½ h^T h + v^T W h }          (eq. 6)
    p(x_i | h) = Bernoulli(sigm(theta_i + (W h)_i))                  (eq. 4; the paper's "logit" is the sigmoid)
    p(z_k | h) = N(theta_k + (W h)_k, 1)
    p(h | v)   = N(W^T v, I)                                           (eq. 5)
    p~(v | W)  = exp{ theta^T v - ½ z^T z + ½ ||W^T v||^2 }             (eq. 28/33)

so ``d log p~(v)/dW = v v^T W`` for both wings and
``grad log Z = E_p(v)[v v^T W]`` (eqs. 16-17).  Data terms are computed as
``V^T (V W)`` -- O(N D J) -- never as a D x D matrix.

The Gaussian wing is normalisable only while ``I - W_z W_z^T`` is positive
definite; :func:`clip_gaussian_gain` keeps the singular values of ``W_z``
below one.

References
----------
Y. Guo and E. P. Xing, "Bayesian Exponential Family Harmoniums", Carnegie Mellon
University technical report CMU-ML-06-103, 2006.
M. Welling, M. Rosen-Zvi and G. E. Hinton, "Exponential Family Harmoniums with an
Application to Information Retrieval", NIPS 17, 2004.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import expit, logsumexp

__all__ = [
    "cd_negative_phase",
    "clip_gaussian_gain",
    "coupling_gradient",
    "enumerate_binary",
    "exact_grad_log_partition",
    "exact_log_partition",
    "exact_log_prob",
    "exact_visible_moments",
    "gibbs_chain",
    "langevin_step",
    "log_partition_mc_identity",
    "mae",
    "mcem_m_step",
    "mre",
    "mle_prior_init",
    "recovery_problem",
    "sample_hidden",
    "sample_visible",
    "unnormalized_log_prob",
]

#: largest number of Bernoulli units that exact enumeration accepts (2^M states)
MAX_EXACT_BERNOULLI = 20


def _mask(gaussian, n_visible):
    if gaussian is None:
        return np.zeros(n_visible, dtype=bool)
    return np.asarray(gaussian, dtype=bool)


# --------------------------------------------------------------------------- sampling
def sample_hidden(V, W, rng):
    """Draw ``h ~ N(W^T v, I)`` for every row ``v`` of ``V`` (eq. 5)."""
    mean = V @ W
    return mean + rng.standard_normal(mean.shape)


def sample_visible(H, W, theta, gaussian, rng):
    """Draw ``v ~ p(v | h)`` for every row of ``H``: Bernoulli units by eq. 4,
    Gaussian units ``N(theta + W h, 1)``."""
    act = H @ W.T + theta
    gaussian = _mask(gaussian, W.shape[0])
    out = (rng.random(act.shape) < expit(act)).astype(float)
    if gaussian.any():
        out[:, gaussian] = act[:, gaussian] + rng.standard_normal((act.shape[0], int(gaussian.sum())))
    return out


def gibbs_chain(V0, W, theta, gaussian, n_steps, rng):
    """Run ``n_steps`` block-Gibbs sweeps (h | v, then v | h) from ``V0``;
    returns the visible states after the last sweep (brief sampling, CD-l)."""
    V = np.asarray(V0, dtype=float)
    for _ in range(int(n_steps)):
        V = sample_visible(sample_hidden(V, W, rng), W, theta, gaussian, rng)
    return V


def coupling_gradient(V, W):
    """``sum_n v_n v_n^T W`` computed as ``V^T (V W)`` (eq. 16): D x J."""
    return V.T @ (V @ W)


def cd_negative_phase(V0, W, theta, gaussian, n_steps, rng):
    """Brief-sampling estimate of ``N grad_W log Z(W)`` and ``N grad_theta log Z``
    (section 3.2): one chain per data row started at the data, ``n_steps``
    Gibbs sweeps, then ``X_l^T X_l W`` (and the column sums for theta).

    Returns ``(grad_W, grad_theta, V_l)``."""
    Vl = gibbs_chain(V0, W, theta, gaussian, n_steps, rng)
    # d log Z / d theta is E[v] for both unit types, estimated by the same chains
    g_theta = Vl.sum(axis=0)
    return coupling_gradient(Vl, W), g_theta, Vl


def clip_gaussian_gain(W, gaussian, max_gain=0.95):
    """Project the Gaussian wing's rows ``W_z`` so that its largest singular
    value is at most ``max_gain`` (< 1 keeps ``I - W_z W_z^T`` positive definite,
    i.e. the model normalisable).  Returns a new array."""
    gaussian = _mask(gaussian, W.shape[0])
    if not gaussian.any():
        return W
    Wz = W[gaussian]
    U, s, Vt = np.linalg.svd(Wz, full_matrices=False)
    if s.size and s[0] > max_gain:
        W = W.copy()
        W[gaussian] = (U * np.minimum(s, max_gain)) @ Vt
    return W


# --------------------------------------------------------------------------- Langevin
def _per_entry(a, shape):
    """A scalar, a (D,) per-row vector or a (D, J) array broadcast to ``shape`` (D, J)."""
    a = np.asarray(a, dtype=float)
    return np.broadcast_to(a[:, None] if a.ndim == 1 else a, shape)


def langevin_step(W, X, theta, gaussian, mu, sigma, eps2, n_gibbs, rng, *, use_data=True):
    """One brief-Langevin transition (eqs. 13-17, section 3.2 step 4)::

        G = -(W - mu 1^T) / sigma^2 + X^T X W - X_l^T X_l W
        W' = W + (eps^2 / 2) G + eps * N(0, I)

    ``eps2`` is ``eps^2``, a scalar, one value per row or one per entry (a
    constant diagonal preconditioner, still a valid Langevin diffusion); ``mu`` and
    ``sigma`` (standard deviations) likewise: per row (the paper's prior) or per
    entry (a prior per hidden unit broadcast over rows).  ``use_data=False`` drops both likelihood terms (the
    chain then samples the prior, a test of the sampler).

    Returns ``(W', g_theta)`` with ``g_theta = sum_n x_n - sum_n x_l,n`` the
    brief-sampling gradient of the log-likelihood in ``theta`` (zeros without data).
    """
    mu, sigma, eps2 = (_per_entry(a, W.shape) for a in (mu, sigma, eps2))
    G = -(W - mu) / sigma ** 2
    g_theta = np.zeros(W.shape[0])
    if use_data:
        neg_W, neg_t, _ = cd_negative_phase(X, W, theta, gaussian, n_gibbs, rng)
        G = G + coupling_gradient(X, W) - neg_W
        g_theta = X.sum(axis=0) - neg_t
    return W + 0.5 * eps2 * G + np.sqrt(eps2) * rng.standard_normal(W.shape), g_theta


def mcem_m_step(samples, sharing="row"):
    """Monte Carlo EM M-step from ``K`` coupling samples (``K x D x J``).

    ``sharing="row"``: the paper's prior ``W_ij ~ N(mu_i, sigma_i^2)``, eqs. 24-25, one
    ``mu_i, sigma_i`` per visible unit from its ``J K`` sampled entries (the ``JK - 1``
    denominator of eq. 25). ``sharing="column"``: one ``mu_j, sigma_j`` per hidden
    unit from its ``D K`` entries (the same equations with the roles of the indices
    swapped). ``sharing="all"``: one ``mu, sigma`` for every entry, from all ``D J K``
    of them. Returns ``mu`` and ``sigma``, (D,) for "row" and "all", (D, J) for
    "column" (the column's value in every row).
    """
    S = np.asarray(samples, dtype=float)
    if S.ndim == 2:
        S = S[None]
    K, D, J = S.shape
    if sharing == "column":
        flat = np.moveaxis(S, 2, 0).reshape(J, K * D)
        mu = flat.mean(axis=1)
        sigma = flat.std(axis=1, ddof=1 if flat.shape[1] > 1 else 0)
        return np.broadcast_to(mu, (D, J)).copy(), np.broadcast_to(sigma, (D, J)).copy()
    flat = np.moveaxis(S, 1, 0).reshape(D, K * J)
    if sharing == "all":
        flat = flat.reshape(1, -1)
    mu = flat.mean(axis=1)
    sigma = flat.std(axis=1, ddof=1 if flat.shape[1] > 1 else 0)
    return np.broadcast_to(mu, (D,)).copy(), np.broadcast_to(sigma, (D,)).copy()


def mle_prior_init(W_mle, sharing="row"):
    """Initial hyper-parameters from a maximum-likelihood coupling (eqs. 26-27)."""
    return mcem_m_step(np.asarray(W_mle, dtype=float)[None], sharing)


# --------------------------------------------------------------------------- exact (small M)
def enumerate_binary(M):
    """All ``2^M`` binary vectors as a ``2^M x M`` float array (first unit slowest)."""
    if M > MAX_EXACT_BERNOULLI:
        raise ValueError(f"exact enumeration needs at most {MAX_EXACT_BERNOULLI} Bernoulli units, got {M}")
    return np.array(list(itertools.product((0.0, 1.0), repeat=M))).reshape(2 ** M, M)


def unnormalized_log_prob(V, W, theta, gaussian=None):
    """``log p~(v) = theta^T v - ½ z^T z + ½ ||W^T v||^2`` for each row (eq. 33)."""
    V = np.atleast_2d(V)
    gaussian = _mask(gaussian, W.shape[0])
    P = V @ W
    out = V @ theta + 0.5 * np.einsum("nj,nj->n", P, P)
    if gaussian.any():
        out -= 0.5 * np.einsum("nk,nk->n", V[:, gaussian], V[:, gaussian])
    return out


def _gaussian_wing_terms(W, theta, gaussian):
    """For the Gaussian wing: A = I - W_z W_z^T (K x K), its Cholesky factor and
    log|A|; raises ValueError if the wing is not normalisable."""
    Wz = W[gaussian]
    K = Wz.shape[0]
    A = np.eye(K) - Wz @ Wz.T
    try:
        L = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        raise ValueError("the Gaussian wing is not normalisable (I - W_z W_z^T is not positive definite)") from None
    return A, L, 2.0 * np.log(np.diag(L)).sum()


def _binary_log_weights(W, theta, gaussian):
    """log of ``sum_z int_h`` of the joint for every binary configuration x
    (the z integral in closed form); returns (states X, log weights, (2 pi)^{J/2} omitted)."""
    gaussian = _mask(gaussian, W.shape[0])
    b = ~gaussian
    Wx, tx = W[b], theta[b]
    X = enumerate_binary(int(b.sum()))
    P = X @ Wx
    logw = X @ tx + 0.5 * np.einsum("nj,nj->n", P, P)
    if gaussian.any():
        Wz, tz = W[gaussian], theta[gaussian]
        K = Wz.shape[0]
        A, L, logdet = _gaussian_wing_terms(W, theta, gaussian)
        Bx = tz + P @ Wz.T                      # b_x = theta_z + W_z W_x^T x  (rows)
        sol = np.linalg.solve(L, Bx.T)          # L^{-1} b
        logw = logw + 0.5 * np.einsum("kn,kn->n", sol, sol) + 0.5 * K * np.log(2 * np.pi) - 0.5 * logdet
    return X, logw


def exact_log_partition(W, theta, gaussian=None):
    """Exact ``log Z_v`` of the visible marginal ``p(v) = p~(v) / Z_v`` by
    enumerating the Bernoulli units and integrating the Gaussian wing in
    closed form (needs at most ``MAX_EXACT_BERNOULLI`` Bernoulli units)."""
    W = np.asarray(W, dtype=float)
    theta = np.asarray(theta, dtype=float)
    _, logw = _binary_log_weights(W, theta, gaussian)
    return float(logsumexp(logw))


def exact_log_prob(V, W, theta, gaussian=None):
    """Exact ``log p(v)`` of each row of ``V`` (a density in the Gaussian units)."""
    W = np.asarray(W, dtype=float)
    theta = np.asarray(theta, dtype=float)
    return unnormalized_log_prob(np.asarray(V, dtype=float), W, theta, gaussian) - exact_log_partition(W, theta, gaussian)


def exact_visible_moments(W, theta):
    """For a purely Bernoulli harmonium: exact ``E[x]`` and ``E[x x^T]`` by
    enumeration (M <= MAX_EXACT_BERNOULLI)."""
    W = np.asarray(W, dtype=float)
    theta = np.asarray(theta, dtype=float)
    X, logw = _binary_log_weights(W, theta, None)
    p = np.exp(logw - logsumexp(logw))
    return p @ X, (X * p[:, None]).T @ X


def exact_grad_log_partition(W, theta):
    """Exact ``grad_W log Z = E_p(x)[x x^T] W`` (eq. 17) and
    ``grad_theta log Z = E[x]`` for a purely Bernoulli harmonium."""
    m1, m2 = exact_visible_moments(W, theta)
    return m2 @ np.asarray(W, dtype=float), m1


def log_partition_mc_identity(W, theta, n_samples, rng):
    """Monte Carlo estimate of the appendix identity (35) for a Bernoulli harmonium:
    ``Z_x = E_{h ~ N(0, I)}[ prod_i (1 + exp(theta_i + (W h)_i)) ]``;
    returns ``log`` of the sample mean (computed in log space)."""
    W = np.asarray(W, dtype=float)
    H = rng.standard_normal((int(n_samples), W.shape[1]))
    a = H @ W.T + theta
    logs = np.logaddexp(0.0, a).sum(axis=1)
    return float(logsumexp(logs) - np.log(len(logs)))


# --------------------------------------------------------------------------- recovery experiment
def recovery_problem(M=100, J=10, scale=0.1, rng=None):
    """The paper's synthetic coupling (section 5.1): an M x M
    matrix of U[0, scale] entries, symmetrised, its top-J eigenpairs give
    ``W = U_J Lambda_J^{1/2}`` so that ``V = W W^T`` is the best rank-J
    approximation; redrawn until ``V >= 0`` elementwise."""
    rng = np.random.default_rng(rng)
    for _ in range(100):
        A = rng.uniform(0.0, scale, size=(M, M))
        A = 0.5 * (A + A.T)
        vals, vecs = np.linalg.eigh(A)
        top = np.argsort(vals)[::-1][:J]
        if np.any(vals[top] <= 0):
            continue
        W = vecs[:, top] * np.sqrt(vals[top])
        if np.all(W @ W.T >= 0):
            return W
    raise RuntimeError("could not draw a coupling with a non-negative Gram matrix")


def mae(V, V_hat):
    """Mean absolute error of a Gram-matrix estimate (eq. 29)."""
    return float(np.mean(np.abs(np.asarray(V) - np.asarray(V_hat))))


def mre(V, V_hat, tiny=1e-12):
    """Mean relative error (eq. 30); pairs where both entries are 0 count as 0 (eq. 30 is 0/0 there)."""
    V = np.asarray(V, dtype=float)
    V_hat = np.asarray(V_hat, dtype=float)
    den = np.maximum(np.abs(V), np.abs(V_hat))
    err = np.where(den > tiny, np.abs(V - V_hat) / np.maximum(den, tiny), 0.0)
    return float(err.mean())
