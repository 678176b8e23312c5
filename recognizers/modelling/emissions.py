"""Continuous emission components for chain models: Gaussian (diagonal, spherical,
full, tied) and Gaussian mixtures per state.

Every component has the shape of
:class:`recognizers.modelling.hmm.categorical_emissions.CategoricalEmissions`
so the EM and sampling code never branches on the emission family:

``log_likelihood(X, out=None)``  ``(T, K)`` array of ``log p(x_t | y_t = k)``;
``init_stats()``                 zeroed, typed sufficient statistics;
``accumulate(stats, X, posterior)``  add ``posterior``-weighted statistics (EM's
                                 E-step; a one-hot posterior gives hard counts);
``m_step(stats, prior, learn)``  a *new* component (``self`` is unchanged);
``log_prior(prior)``             log density of the parameters under ``prior``
                                 (up to a constant), so EM can monitor the MAP
                                 objective it never decreases;
``sample(states, rng)``          one emission per entry of ``states``.

M-step (MAP, hmmlearn's formulas, Huang, Acero & Hon 2001 pp. 443-445), with
``N_k = sum_t gamma_tk`` and the priors of :class:`GaussianPrior`::

    mu_k    = (means_weight * means_prior + sum_t gamma_tk x_t) / (means_weight + N_k)
    Sigma_k = (covars_prior + S_k) / (c + N_k)
    S_k     = sum_t gamma_tk (x_t - mu_k)(x_t - mu_k)^T + means_weight (mu_k - means_prior)(..)^T

with ``c = max(covars_weight - 1, 0)`` (diagonal) or ``max(covars_weight - D, 0)``
(full).  This is the exact maximiser of ``Q + log_prior`` where::

    log_prior = sum_k [ -1/2 means_weight (mu_k - m0)^T Sigma_k^-1 (mu_k - m0)
                        -1/2 tr(B Sigma_k^-1) - c/2 log |Sigma_k| ]

(``B`` = ``covars_prior`` on the diagonal for "diag"; for "full" hmmlearn adds the
scalar to every entry, ``B = covars_prior * ones``; a matrix may be given).

Degenerate cases, handled so that no NaN can appear and EM stays monotone:

* **Covariance floor** ``min_covar``: variances (eigenvalues for "full") below it
  are raised to it.  For this likelihood the floored matrix is the exact
  maximiser under the constraint ``Sigma >= min_covar I``, so the floor never
  makes EM decrease its objective.
* **Empty states / mixture components** (expected occupancy below
  :data:`EMPTY_WEIGHT`): their parameters are kept unchanged.  Any value
  maximises their (zero-weight) share of ``Q``, so this is still an EM step;
  hmmlearn divides 0 by 0 there (its issues #53, #169, #365).
"""
from __future__ import annotations

import dataclasses

import numba
import numpy as np

__all__ = [
    "EMPTY_WEIGHT",
    "GaussianPrior",
    "GaussianStats",
    "DiagGaussianEmissions",
    "FullGaussianEmissions",
    "SphericalGaussianEmissions",
    "TiedGaussianEmissions",
    "COVARIANCE_TYPES",
    "GMMPrior",
    "GMMStats",
    "GMMEmissions",
    "make_gaussian_emissions",
]

#: States (or mixture components) with less expected occupancy keep their parameters.
EMPTY_WEIGHT = 1e-10
_LOG_2PI = float(np.log(2.0 * np.pi))


# --------------------------------------------------------------------------- kernels


@numba.njit(cache=True)
def _diag_loglik_into(X, means, prec, logc, out):
    """out[t, k] = logc[k] - 1/2 sum_d (x_td - means_kd)^2 prec_kd."""
    T, D = X.shape
    K = means.shape[0]
    for t in range(T):
        for k in range(K):
            acc = 0.0
            for d in range(D):
                z = X[t, d] - means[k, d]
                acc += z * z * prec[k, d]
            out[t, k] = logc[k] - 0.5 * acc


@numba.njit(cache=True)
def _mixture_reduce_into(comp, log_w, out):
    """out[t, k] = logsumexp_m(log_w[k, m] + comp[t, k * M + m])."""
    T = comp.shape[0]
    K, M = log_w.shape
    for t in range(T):
        for k in range(K):
            m_ = -np.inf
            for m in range(M):
                v = log_w[k, m] + comp[t, k * M + m]
                if v > m_:
                    m_ = v
            if m_ == -np.inf:
                out[t, k] = -np.inf
                continue
            s = 0.0
            for m in range(M):
                s += np.exp(log_w[k, m] + comp[t, k * M + m] - m_)
            out[t, k] = m_ + np.log(s)


@numba.njit(cache=True)
def _mixture_resp_into(comp, log_w, posterior, resp):
    """resp[t, k * M + m] = posterior[t, k] * p(m | x_t, y_t = k) (in place of comp)."""
    T = comp.shape[0]
    K, M = log_w.shape
    for t in range(T):
        for k in range(K):
            g = posterior[t, k]
            m_ = -np.inf
            for m in range(M):
                v = log_w[k, m] + comp[t, k * M + m]
                if v > m_:
                    m_ = v
            if g == 0.0 or m_ == -np.inf:
                for m in range(M):
                    resp[t, k * M + m] = 0.0
                continue
            s = 0.0
            for m in range(M):
                e = np.exp(log_w[k, m] + comp[t, k * M + m] - m_)
                resp[t, k * M + m] = e
                s += e
            f = g / s
            for m in range(M):
                resp[t, k * M + m] *= f


# --------------------------------------------------------------------------- helpers


def _check_X(X, n_features: int | None = None) -> np.ndarray:
    """``X`` as C-contiguous float64 (T, D), finite, else ``ValueError``."""
    arr = np.asarray(X)
    if arr.dtype.kind not in "iuf":
        raise ValueError("X must be a numeric array, got dtype %s" % arr.dtype)
    if arr.ndim != 2:
        raise ValueError("X must be 2-D (n_samples, n_features), got shape %s" % (arr.shape,))
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError("X has %d features, the emissions have %d"
                         % (arr.shape[1], n_features))
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if not np.isfinite(arr).all():
        raise ValueError("X contains NaN or infinity")
    return arr


def _check_posterior(posterior, T: int, K: int) -> np.ndarray:
    post = np.ascontiguousarray(posterior, dtype=np.float64)
    if post.shape != (T, K):
        raise ValueError("posterior has shape %s, expected (%d, %d)" % (post.shape, T, K))
    return post


def _as_means_covars(means, covars) -> tuple[np.ndarray, np.ndarray]:
    """float64 C arrays, means checked to be (n_components, n_features), non-empty."""
    means = np.ascontiguousarray(means, dtype=np.float64)
    covars = np.ascontiguousarray(covars, dtype=np.float64)
    if means.ndim != 2 or means.shape[0] < 1 or means.shape[1] < 1:
        raise ValueError("means must have shape (n_components, n_features), got %s"
                         % (means.shape,))
    return means, covars


def _out(out, T: int, K: int) -> np.ndarray:
    if out is None:
        return np.empty((T, K))
    if out.shape != (T, K) or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous float64 array of shape (%d, %d)" % (T, K))
    return out


def _floor_diag(var, min_covar):
    return np.maximum(var, min_covar)


def _floor_full(cov, min_covar):
    """Raise the eigenvalues of the symmetric ``cov`` (D, D) to ``min_covar``."""
    cov = 0.5 * (cov + cov.T)
    w, V = np.linalg.eigh(cov)
    if w.min() >= min_covar:
        return cov
    return (V * np.maximum(w, min_covar)) @ V.T


def _chol_full(covars) -> tuple[np.ndarray, np.ndarray]:
    """Inverse Cholesky factors (K, D, D) and log-determinants (K,) of covariances."""
    K, D, _ = covars.shape
    inv_chol = np.empty_like(covars)
    logdet = np.empty(K)
    for k in range(K):
        try:
            L = np.linalg.cholesky(covars[k])
        except np.linalg.LinAlgError:
            raise ValueError("covars[%d] is not symmetric positive definite" % k) from None
        inv_chol[k] = np.linalg.solve(L, np.eye(D))
        logdet[k] = 2.0 * np.log(np.diag(L)).sum()
    return inv_chol, logdet


def _full_loglik_into(X, means, inv_chol, logdet, out):
    """out[:, k] = log N(x | means[k], covars[k]) via whitening with BLAS."""
    D = X.shape[1]
    for k in range(means.shape[0]):
        Z = (X - means[k]) @ inv_chol[k].T
        out[:, k] = -0.5 * (D * _LOG_2PI + logdet[k] + np.einsum("ij,ij->i", Z, Z))


# --------------------------------------------------------------------------- priors and stats


@dataclasses.dataclass(frozen=True, slots=True)
class GaussianPrior:
    """Hyperparameters of the Gaussian M-step (hmmlearn's names and defaults).

    min_covar : floor on variances / eigenvalues (> 0).
    means_prior : scalar or array broadcastable to the means.
    means_weight : scalar >= 0, weight of the Normal prior on the means (0: none).
    covars_prior : scalar or array broadcastable to the covariances.
    covars_weight : scalar; see the module docstring for the exact density.
    """

    min_covar: float = 1e-3
    means_prior: float | np.ndarray = 0.0
    means_weight: float | np.ndarray = 0.0
    covars_prior: float | np.ndarray = 1e-2
    covars_weight: float | np.ndarray = 1.0


@dataclasses.dataclass(slots=True)
class GaussianStats:
    """Posterior-weighted sums of a Gaussian emission component.

    post : (K,)            ``sum_t gamma_tk``
    obs : (K, D)           ``sum_t gamma_tk x_t``
    obs2 : (K, D) / (K, D, D)  ``sum_t gamma_tk x_t^2`` (diag) or ``x_t x_t^T`` (full)
    """

    post: np.ndarray
    obs: np.ndarray
    obs2: np.ndarray


def _tied_sum(x, n_lead: int):
    """Sum over the last leading ("component") axis: the components sharing one matrix."""
    return x.sum(axis=n_lead - 1)


def _gaussian_update(post, obs, obs2, old_means, old_covars, prior: GaussianPrior, learn,
                     covariance_type: str):
    """Means and covariances from weighted sums; shared by the HMM and GMM components.

    Leading axes of ``post`` are "components" (states, or states x mixtures);
    ``obs`` adds the feature axis and ``obs2`` holds squares ("diag",
    "spherical") or outer products ("full", "tied").  "spherical" is the mean
    of the diagonal update over the features and "tied" pools the scatter of the
    components along the last leading axis; both are the exact maximisers of
    ``Q + log_prior`` for their constraint (the denominators do not depend on
    the feature, resp. the prior enters once per shared matrix).
    """
    D = obs.shape[-1]
    n_lead = post.ndim
    denom = post[..., None]
    mw = np.asarray(prior.means_weight, dtype=np.float64)
    mp = np.asarray(prior.means_prior, dtype=np.float64)
    occupied = post > EMPTY_WEIGHT
    means = old_means.copy()
    if "means" in learn:
        with np.errstate(invalid="ignore", divide="ignore"):
            new = (mw * mp + obs) / (mw + denom)
        means = np.where(occupied[..., None], new, old_means)
    covars = old_covars.copy()
    if "covars" not in learn:
        return means, covars
    meandiff = means - mp
    cp = np.asarray(prior.covars_prior, dtype=np.float64)
    cw = np.asarray(prior.covars_weight, dtype=np.float64)
    if covariance_type in ("diag", "spherical"):
        c_n = mw * meandiff ** 2 + obs2 - 2.0 * means * obs + means ** 2 * denom
        c_d = np.maximum(cw - 1.0, 0.0) + denom
        with np.errstate(invalid="ignore", divide="ignore"):
            new = (cp + c_n) / c_d
        ok = occupied[..., None] & (c_d > 0)
        if covariance_type == "diag":
            return means, np.where(ok, _floor_diag(new, prior.min_covar), old_covars)
        new = np.where(ok, new, 0.0).mean(axis=-1)
        return means, np.where(ok[..., 0], _floor_diag(new, prior.min_covar), old_covars)
    outer_mo = np.einsum("...i,...j->...ij", obs, means)
    c_n = mw * np.einsum("...i,...j->...ij", meandiff, meandiff)
    c_n = (c_n + obs2 - outer_mo - np.swapaxes(outer_mo, -1, -2)
           + np.einsum("...i,...j->...ij", means, means) * post[..., None, None])
    if covariance_type == "tied":
        # Empty components contribute zero scatter (their weighted sums are 0).
        c_n = _tied_sum(np.where(occupied[..., None, None], c_n, 0.0), n_lead)
        post = _tied_sum(post, n_lead)
        occupied = post > EMPTY_WEIGHT
    c_d = np.maximum(cw - D, 0.0) + post
    flat_new = (cp + c_n).reshape(-1, D, D)
    flat_old = old_covars.reshape(-1, D, D)
    flat_cd = np.broadcast_to(c_d, post.shape).reshape(-1)
    flat_occ = occupied.reshape(-1)
    out = flat_old.copy()
    for i in range(flat_new.shape[0]):
        if flat_occ[i] and flat_cd[i] > 0:
            out[i] = _floor_full(flat_new[i] / flat_cd[i], prior.min_covar)
    return means, out.reshape(old_covars.shape)


def _gaussian_log_prior(means, covars, prior: GaussianPrior, covariance_type: str) -> float:
    """Sum over components of the log prior density (up to a constant).

    For "tied" the covariance terms enter once per shared matrix and the
    means' Normal terms once per component.
    """
    D = means.shape[-1]
    mw = np.asarray(prior.means_weight, dtype=np.float64)
    mp = np.asarray(prior.means_prior, dtype=np.float64)
    cp = np.asarray(prior.covars_prior, dtype=np.float64)
    cw = np.asarray(prior.covars_weight, dtype=np.float64)
    d = means - mp
    if covariance_type in ("diag", "spherical"):
        var = covars if covariance_type == "diag" else covars[..., None]
        c = np.maximum(cw - 1.0, 0.0)
        return float(np.sum(-0.5 * mw * d ** 2 / var - 0.5 * cp / var
                            - 0.5 * c * np.log(np.broadcast_to(var, d.shape))))
    flat = covars.reshape(-1, D, D)
    inv = np.linalg.inv(flat)
    B = cp if cp.ndim else cp * np.ones((D, D))
    tr = np.einsum("ij,nji->n", B, inv) if B.ndim == 2 else np.einsum(
        "nij,nji->n", np.broadcast_to(B, covars.shape).reshape(-1, D, D), inv)
    _, logdet = np.linalg.slogdet(flat)
    c = max(float(cw) - D, 0.0)
    if covariance_type == "tied":
        # One matrix per group of components along the last leading axis.
        inv_per = inv.reshape(covars.shape)
        inv_c = inv_per[..., None, :, :]
        quad = np.einsum("...i,...ij,...j->...", d, np.broadcast_to(
            inv_c, d.shape[:-1] + (D, D)), d)
    else:
        dd = np.broadcast_to(d, means.shape).reshape(-1, D)
        quad = np.einsum("ni,nij,nj->n", dd, inv, dd)
    return float(-0.5 * float(mw) * np.sum(quad) + np.sum(-0.5 * tr - 0.5 * c * logdet))


# --------------------------------------------------------------------------- Gaussian


class DiagGaussianEmissions:
    """One Gaussian per state with diagonal covariance.

    Parameters
    ----------
    means : (K, D)
    covars : (K, D) variances, > 0
    """

    covariance_type = "diag"

    def __init__(self, means, covars):
        means, covars = _as_means_covars(means, covars)
        if covars.shape != means.shape:
            raise ValueError("diagonal covars must have shape %s, got %s"
                             % (means.shape, covars.shape))
        if not np.isfinite(means).all():
            raise ValueError("means must be finite")
        if not (np.isfinite(covars).all() and np.all(covars > 0)):
            raise ValueError("covars must be finite and positive")
        self.means = means
        self.covars = covars
        self._set_variances(covars)

    def _set_variances(self, variances) -> None:
        """(K, D) variances the kernel uses (the spherical subclass expands its own)."""
        D = self.means.shape[1]
        self._variances = variances
        self._prec = 1.0 / variances
        self._logc = -0.5 * (D * _LOG_2PI + np.log(variances).sum(axis=1))

    @property
    def n_components(self) -> int:
        return self.means.shape[0]

    @property
    def n_features(self) -> int:
        return self.means.shape[1]

    def n_parameters(self) -> int:
        return 2 * self.means.size

    def check_X(self, X) -> np.ndarray:
        return _check_X(X, self.n_features)

    def log_likelihood(self, X, out=None) -> np.ndarray:
        X = self.check_X(X)
        out = _out(out, X.shape[0], self.n_components)
        _diag_loglik_into(X, self.means, self._prec, self._logc, out)
        return out

    def init_stats(self) -> GaussianStats:
        K, D = self.means.shape
        return GaussianStats(np.zeros(K), np.zeros((K, D)), np.zeros((K, D)))

    def accumulate(self, stats: GaussianStats, X, posterior) -> None:
        X = self.check_X(X)
        post = _check_posterior(posterior, X.shape[0], self.n_components)
        stats.post += post.sum(axis=0)
        stats.obs += post.T @ X
        stats.obs2 += post.T @ (X * X)

    def m_step(self, stats: GaussianStats, prior: GaussianPrior = GaussianPrior(),
               learn=frozenset({"means", "covars"})) -> "DiagGaussianEmissions":
        means, covars = _gaussian_update(stats.post, stats.obs, stats.obs2, self.means,
                                         self.covars, prior, learn, self.covariance_type)
        return type(self)(means, covars)

    def log_prior(self, prior: GaussianPrior = GaussianPrior()) -> float:
        return _gaussian_log_prior(self.means, self.covars, prior, self.covariance_type)

    def sample(self, states, rng) -> np.ndarray:
        states = np.asarray(states, dtype=np.int64)
        z = rng.standard_normal((states.size, self.n_features))
        return self.means[states] + np.sqrt(self._variances[states]) * z


class FullGaussianEmissions:
    """One Gaussian per state with a full covariance matrix.

    Parameters
    ----------
    means : (K, D)
    covars : (K, D, D) symmetric positive definite
    """

    covariance_type = "full"

    def __init__(self, means, covars):
        means, covars = _as_means_covars(means, covars)
        K, D = means.shape
        if covars.shape != (K, D, D):
            raise ValueError("full covars must have shape (%d, %d, %d), got %s"
                             % (K, D, D, covars.shape))
        if not (np.isfinite(means).all() and np.isfinite(covars).all()):
            raise ValueError("means and covars must be finite")
        if not np.allclose(covars, np.swapaxes(covars, 1, 2), rtol=1e-10, atol=1e-12):
            raise ValueError("full covars must be symmetric")
        self.means = means
        self.covars = covars
        self._full_covars = covars
        self._inv_chol, self._logdet = _chol_full(covars)

    @property
    def n_components(self) -> int:
        return self.means.shape[0]

    @property
    def n_features(self) -> int:
        return self.means.shape[1]

    def n_parameters(self) -> int:
        K, D = self.means.shape
        return K * D + K * D * (D + 1) // 2

    def check_X(self, X) -> np.ndarray:
        return _check_X(X, self.n_features)

    def log_likelihood(self, X, out=None) -> np.ndarray:
        X = self.check_X(X)
        out = _out(out, X.shape[0], self.n_components)
        _full_loglik_into(X, self.means, self._inv_chol, self._logdet, out)
        return out

    def init_stats(self) -> GaussianStats:
        K, D = self.means.shape
        return GaussianStats(np.zeros(K), np.zeros((K, D)), np.zeros((K, D, D)))

    def accumulate(self, stats: GaussianStats, X, posterior) -> None:
        X = self.check_X(X)
        post = _check_posterior(posterior, X.shape[0], self.n_components)
        stats.post += post.sum(axis=0)
        stats.obs += post.T @ X
        for k in range(self.n_components):
            stats.obs2[k] += (X * post[:, k:k + 1]).T @ X

    def m_step(self, stats: GaussianStats, prior: GaussianPrior = GaussianPrior(),
               learn=frozenset({"means", "covars"})) -> "FullGaussianEmissions":
        means, covars = _gaussian_update(stats.post, stats.obs, stats.obs2, self.means,
                                         self.covars, prior, learn, self.covariance_type)
        return type(self)(means, covars)

    def log_prior(self, prior: GaussianPrior = GaussianPrior()) -> float:
        return _gaussian_log_prior(self.means, self.covars, prior, self.covariance_type)

    def sample(self, states, rng) -> np.ndarray:
        states = np.asarray(states, dtype=np.int64)
        L = np.linalg.cholesky(self._full_covars)
        z = rng.standard_normal((states.size, self.n_features))
        return self.means[states] + np.einsum("nij,nj->ni", L[states], z)


class SphericalGaussianEmissions(DiagGaussianEmissions):
    """One Gaussian per state with a single variance (``covars`` (K,)).

    The likelihood kernel is the diagonal one with the variance repeated over
    the features.
    """

    covariance_type = "spherical"

    def __init__(self, means, covars):
        means, covars = _as_means_covars(means, covars)
        if covars.shape != means.shape[:1]:
            raise ValueError("spherical covars must have shape (%d,), got %s"
                             % (means.shape[0], covars.shape))
        super().__init__(means, np.repeat(covars[:, None], means.shape[1], axis=1))
        self.covars = covars

    def n_parameters(self) -> int:
        return self.means.size + self.means.shape[0]


class TiedGaussianEmissions(FullGaussianEmissions):
    """One Gaussian per state, all states sharing one full covariance (``covars`` (D, D))."""

    covariance_type = "tied"

    def __init__(self, means, covars):
        means, covars = _as_means_covars(means, covars)
        K, D = means.shape
        if covars.shape != (D, D):
            raise ValueError("tied covars must have shape (%d, %d), got %s"
                             % (D, D, covars.shape))
        super().__init__(means, np.broadcast_to(covars, (K, D, D)))
        self.covars = covars

    def n_parameters(self) -> int:
        K, D = self.means.shape
        return K * D + D * (D + 1) // 2

    def log_likelihood(self, X, out=None) -> np.ndarray:
        # One shared whitening: |P(x - m_k)|^2 = |z|^2 - 2 z.w_k + |w_k|^2 with z = P(x - c),
        # w_k = P(m_k - c), one (T, D) x (D, K) product instead of K whitenings.
        # Centring on c (the mean of the means) keeps the cancellation small.
        X = self.check_X(X)
        out = _out(out, X.shape[0], self.n_components)
        P = self._inv_chol[0]
        c = self.means.mean(axis=0)
        Z = (X - c) @ P.T
        W = (self.means - c) @ P.T
        np.matmul(Z, -2.0 * W.T, out=out)
        out += np.einsum("ij,ij->i", Z, Z)[:, None]
        out += np.einsum("ij,ij->i", W, W)[None, :]
        np.maximum(out, 0.0, out=out)  # a squared distance, whatever the rounding
        out *= -0.5
        out -= 0.5 * (self.n_features * _LOG_2PI + self._logdet[0])
        return out


_GAUSSIAN_TYPES = {"diag": DiagGaussianEmissions, "full": FullGaussianEmissions,
                   "spherical": SphericalGaussianEmissions, "tied": TiedGaussianEmissions}
COVARIANCE_TYPES = tuple(_GAUSSIAN_TYPES)


def make_gaussian_emissions(means, covars, covariance_type: str):
    """The Gaussian component for ``covariance_type`` ("diag", "full", "spherical", "tied")."""
    try:
        cls = _GAUSSIAN_TYPES[covariance_type]
    except (KeyError, TypeError):
        raise ValueError("covariance_type must be one of %s, got %r"
                         % (", ".join(repr(t) for t in COVARIANCE_TYPES),
                            covariance_type)) from None
    return cls(means, covars)


# --------------------------------------------------------------------------- mixtures


@dataclasses.dataclass(frozen=True, slots=True)
class GMMPrior:
    """Hyperparameters of the Gaussian-mixture M-step.

    weights_prior : Dirichlet concentration on every state's mixture weights
        (1: flat, maximum likelihood).
    gaussian : :class:`GaussianPrior` of every mixture component.
    """

    weights_prior: float | np.ndarray = 1.0
    gaussian: GaussianPrior = GaussianPrior()


@dataclasses.dataclass(slots=True)
class GMMStats:
    """Posterior-weighted sums of a Gaussian-mixture component.

    post : (K,)           ``sum_t gamma_tk``
    mix : (K, M)          ``sum_t gamma_tkm`` (state-and-mixture responsibilities)
    obs : (K, M, D)       ``sum_t gamma_tkm x_t``
    obs2 : (K, M, D) or (K, M, D, D)
    """

    post: np.ndarray
    mix: np.ndarray
    obs: np.ndarray
    obs2: np.ndarray


class GMMEmissions:
    """A mixture of ``M`` Gaussians per state.

    Parameters
    ----------
    weights : (K, M), rows sum to 1
    means : (K, M, D)
    covars : (K, M, D) for "diag", (K, M) for "spherical", (K, M, D, D) for "full",
        (K, D, D) for "tied" (one matrix per state, shared by its mixtures)
    covariance_type : "diag", "spherical", "full" or "tied"
    """

    def __init__(self, weights, means, covars, covariance_type: str = "diag"):
        weights = np.ascontiguousarray(weights, dtype=np.float64)
        means = np.ascontiguousarray(means, dtype=np.float64)
        covars = np.ascontiguousarray(covars, dtype=np.float64)
        if means.ndim != 3 or min(means.shape) < 1:
            raise ValueError("means must have shape (n_components, n_mix, n_features), got %s"
                             % (means.shape,))
        K, M, D = means.shape
        if weights.shape != (K, M):
            raise ValueError("weights must have shape (%d, %d), got %s" % (K, M, weights.shape))
        if not (np.isfinite(weights).all() and np.all(weights >= 0)):
            raise ValueError("weights must be finite and non-negative")
        if not np.allclose(weights.sum(axis=1), 1.0, rtol=0, atol=1e-8):
            raise ValueError("weights rows must sum to 1 (got %s)" % weights.sum(axis=1))
        self.covariance_type = covariance_type
        if covariance_type == "tied":
            # One matrix per state shared by its mixtures: the likelihood is the
            # full kernel with the matrix repeated for every mixture.
            if covars.shape != (K, D, D):
                raise ValueError("tied covars must have shape (%d, %d, %d), got %s"
                                 % (K, D, D, covars.shape))
            self._gauss = FullGaussianEmissions(means.reshape(K * M, D),
                                                np.repeat(covars, M, axis=0))
        else:
            flat_c = covars.reshape((K * M,) + covars.shape[2:])
            self._gauss = make_gaussian_emissions(means.reshape(K * M, D), flat_c,
                                                  covariance_type)
        self.weights = weights
        self.means = means
        self.covars = covars
        with np.errstate(divide="ignore"):
            self._log_w = np.log(weights)

    @property
    def n_components(self) -> int:
        return self.means.shape[0]

    @property
    def n_mix(self) -> int:
        return self.means.shape[1]

    @property
    def n_features(self) -> int:
        return self.means.shape[2]

    def n_parameters(self) -> int:
        K, M, D = self.means.shape
        n_cov = {"diag": K * M * D, "spherical": K * M, "full": K * M * D * (D + 1) // 2,
                 "tied": K * D * (D + 1) // 2}[self.covariance_type]
        return K * (M - 1) + K * M * D + n_cov

    def check_X(self, X) -> np.ndarray:
        return _check_X(X, self.n_features)

    def _component_loglik(self, X) -> np.ndarray:
        """(T, K * M) Gaussian log densities of every state-mixture pair."""
        return self._gauss.log_likelihood(X)

    def log_likelihood(self, X, out=None) -> np.ndarray:
        X = self.check_X(X)
        out = _out(out, X.shape[0], self.n_components)
        _mixture_reduce_into(self._component_loglik(X), self._log_w, out)
        return out

    def init_stats(self) -> GMMStats:
        K, M, D = self.means.shape
        obs2 = (np.zeros((K, M, D)) if self.covariance_type in ("diag", "spherical")
                else np.zeros((K, M, D, D)))
        return GMMStats(np.zeros(K), np.zeros((K, M)), np.zeros((K, M, D)), obs2)

    def accumulate(self, stats: GMMStats, X, posterior) -> None:
        X = self.check_X(X)
        K, M, D = self.means.shape
        post = _check_posterior(posterior, X.shape[0], K)
        resp = self._component_loglik(X)
        _mixture_resp_into(resp, self._log_w, post, resp)
        stats.post += post.sum(axis=0)
        stats.mix += resp.sum(axis=0).reshape(K, M)
        stats.obs += (resp.T @ X).reshape(K, M, D)
        if self.covariance_type in ("diag", "spherical"):
            stats.obs2 += (resp.T @ (X * X)).reshape(K, M, D)
        else:
            for c in range(K * M):
                stats.obs2[c // M, c % M] += (X * resp[:, c:c + 1]).T @ X

    def m_step(self, stats: GMMStats, prior: GMMPrior = GMMPrior(),
               learn=frozenset({"weights", "means", "covars"})) -> "GMMEmissions":
        K, M, D = self.means.shape
        weights = self.weights
        if "weights" in learn:
            alpha = np.broadcast_to(np.asarray(prior.weights_prior, dtype=np.float64), (K, M))
            num = np.maximum(stats.mix + alpha - 1.0, 0.0)
            tot = num.sum(axis=1, keepdims=True)
            with np.errstate(invalid="ignore", divide="ignore"):
                new = num / tot
            weights = np.where((stats.post[:, None] > EMPTY_WEIGHT) & (tot > 0), new,
                               self.weights)
        means, covars = _gaussian_update(stats.mix, stats.obs, stats.obs2, self.means,
                                         self.covars, prior.gaussian, learn,
                                         self.covariance_type)
        return type(self)(weights, means, covars, self.covariance_type)

    def log_prior(self, prior: GMMPrior = GMMPrior()) -> float:
        K, M, _ = self.means.shape
        alpha = np.broadcast_to(np.asarray(prior.weights_prior, dtype=np.float64), (K, M))
        pos = self.weights > 0
        lp = float(np.sum((alpha - 1.0)[pos] * np.log(self.weights[pos])))
        return lp + _gaussian_log_prior(self.means, self.covars, prior.gaussian,
                                        self.covariance_type)

    def sample(self, states, rng) -> np.ndarray:
        states = np.asarray(states, dtype=np.int64)
        K, M, _ = self.means.shape
        cw = np.cumsum(self.weights, axis=1)
        u = rng.random(states.size)
        mix = np.minimum((u[:, None] > cw[states]).sum(axis=1), M - 1)
        return self._gauss.sample(states * M + mix, rng)
