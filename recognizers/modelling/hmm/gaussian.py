"""hmmlearn-compatible HMMs with Gaussian and Gaussian-mixture emissions.

Import them from :mod:`recognizers.hmm`::

    from recognizers.hmm import GaussianHMM, GMMHMM

Same constructor arguments, attributes and methods as ``hmmlearn.hmm`` (see
:mod:`recognizers.modelling.hmm.base` for the shared API and the documented
differences).  ``covariance_type`` is "diag", "full", "spherical" or "tied", with
hmmlearn's shapes.
"""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils._param_validation import (
    Interval,
    StrOptions,
    validate_parameter_constraints,
)

from recognizers.modelling.hmm.base import (
    BaseHMM,
    check_observations,
    fitted_array,
    kmeans,
    parse_param_names,
    shared_docstring,
    stored_array,
)
from recognizers.base import NotFittedError
from recognizers.modelling.hmm.utils import fill_covars
from recognizers.modelling.emissions import (
    COVARIANCE_TYPES,
    GaussianPrior,
    GMMEmissions,
    GMMPrior,
    _check_X,
    make_gaussian_emissions,
)

__all__ = ["GaussianHMM", "GMMHMM"]

# The emission hyperparameters both Gaussian HMMs share (added to BaseHMM's).
_GAUSSIAN_CONSTRAINTS = {
    **BaseHMM._parameter_constraints,
    "covariance_type": [StrOptions(set(COVARIANCE_TYPES))],
    "min_covar": [Interval(numbers.Real, 0, None, closed="neither")],
    "means_weight": [Interval(numbers.Real, 0, None, closed="left")],
}


def _data_covariance(X, min_covar) -> np.ndarray:
    D = X.shape[1]
    if X.shape[0] < 2:
        return np.eye(D)
    cv = np.atleast_2d(np.cov(X.T))
    return cv + min_covar * np.eye(D)


def _nearest(X, centres) -> np.ndarray:
    """Index of the nearest centre for every row of ``X``."""
    return ((X * X).sum(1)[:, None] - 2.0 * X @ centres.T
            + (centres * centres).sum(1)).argmin(1)


class _GaussianBase(BaseHMM):
    def _check_covariance_type(self) -> None:
        # The layout of the emission arrays depends on it, also for parameters set
        # by hand without fit (which checks every hyperparameter).
        validate_parameter_constraints(
            {"covariance_type": _GAUSSIAN_CONSTRAINTS["covariance_type"]},
            {"covariance_type": self.covariance_type}, caller_name=type(self).__name__)

    def _validate_X(self, X, *, fit: bool) -> np.ndarray:
        D = None
        if not fit or ("means" not in parse_param_names(self.init_params, self._param_names(),
                                                        "init_params")):
            try:
                D = self.means_.shape[-1]
            except AttributeError:
                D = None
        X = check_observations(X, self, reset=fit, ensure_min_samples=1 if fit else 0)
        return _check_X(X, D)

    @property
    def n_features(self) -> int:
        """Dimension of the observations (from ``means_``; settable as in hmmlearn)."""
        try:
            return int(self.means_.shape[-1])
        except AttributeError:
            try:
                return self._n_features
            except AttributeError:
                raise NotFittedError("%s has no n_features: call fit or set means_"
                                     % type(self).__name__) from None

    @n_features.setter
    def n_features(self, value) -> None:
        self._n_features = int(value)

    means_ = fitted_array("means_", "_means", "Means of the states' Gaussians.")

    def _param_values(self):
        out = super()._param_values()
        out.pop("covars", None)
        if hasattr(self, "_covars_"):
            out["covars"] = np.array(self._covars_, copy=True)
        return out

    def _set_param_values(self, values) -> None:
        values = dict(values)
        cov = values.pop("covars", None)
        super()._set_param_values(values)
        if cov is not None:
            self._covars_ = cov


@shared_docstring
class GaussianHMM(_GaussianBase):
    """HMM with Gaussian emissions (hmmlearn's ``GaussianHMM``).

    Parameters
    ----------
    n_components : int, default 1
        Number of states.
    covariance_type : {"diag", "full", "spherical", "tied"}, default "diag"
        One diagonal, full or single-variance covariance per state, or one full
        matrix shared by every state.
    min_covar : float, default 1e-3
        Floor on variances (eigenvalues) in every M-step.
%(chain_priors)s
    means_prior, means_weight : float or array-like, default 0
        Normal prior of the means (mean, weight) in the MAP M-step.
    covars_prior, covars_weight : float or array-like, default 1e-2 and 1
        Inverse-Wishart / inverse-gamma prior of the covariances.
%(em_settings)s
    params, init_params : str or set of str, default "stmc"
        Parameters to update / to initialise: hmmlearn letters (``s`` startprob,
        ``t`` transmat, ``m`` means, ``c`` covars) or a set of names.

    Attributes
    ----------
%(chain_attributes)s
    means_ : ndarray of shape (n_components, n_features)
    covars_ : ndarray of shape (n_components, n_features, n_features)
        Full matrices whatever the covariance_type (hmmlearn's convention); set it
        in the covariance_type's shape: (K, D) diag, (K,) spherical, (K, D, D)
        full, (D, D) tied.
    n_features : int
        Dimension of the observations.
%(em_attributes)s

    References
    ----------
%(rabiner_1989)s
    """

    _emission_names = ("means", "covars")

    _parameter_constraints = {
        **_GAUSSIAN_CONSTRAINTS,
        "covars_weight": [Interval(numbers.Real, 0, None, closed="left")],
    }

    def __init__(self, n_components=1, covariance_type="diag", min_covar=1e-3,
                 startprob_prior=1.0, transmat_prior=1.0, means_prior=0, means_weight=0,
                 covars_prior=1e-2, covars_weight=1, algorithm="viterbi", random_state=None,
                 n_iter=10, tol=1e-2, verbose=False, params="stmc", init_params="stmc",
                 implementation="log", n_init=1):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.min_covar = min_covar
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.means_prior = means_prior
        self.means_weight = means_weight
        self.covars_prior = covars_prior
        self.covars_weight = covars_weight
        self.algorithm = algorithm
        self.random_state = random_state
        self.n_iter = n_iter
        self.tol = tol
        self.verbose = verbose
        self.params = params
        self.init_params = init_params
        self.implementation = implementation
        self.n_init = n_init

    @property
    def covars_(self) -> np.ndarray:
        """Covariances, (K, D, D) full matrices whatever the covariance_type."""
        cov = stored_array(self, "_covars_", "covars_")
        return fill_covars(cov, self.covariance_type, int(self.n_components),
                           self.n_features)

    @covars_.setter
    def covars_(self, value) -> None:
        cov = np.ascontiguousarray(value, dtype=np.float64)
        if self.covariance_type == "spherical" and cov.ndim > 1 \
                and cov.size == int(self.n_components):
            cov = cov.reshape(-1)  # hmmlearn flattens spherical variances given as (K, 1, ...)
        self._covars_ = cov

    def _prior(self) -> GaussianPrior:
        return GaussianPrior(min_covar=float(self.min_covar), means_prior=self.means_prior,
                             means_weight=float(self.means_weight),
                             covars_prior=self.covars_prior,
                             covars_weight=float(self.covars_weight))

    def _emissions(self):
        self._check_covariance_type()
        return make_gaussian_emissions(self.means_, stored_array(self, "_covars_", "covars_"),
                                       self.covariance_type)

    def _set_emissions(self, emissions) -> None:
        self.means_ = emissions.means
        self._covars_ = emissions.covars

    def _init_emissions(self, X, lengths, rng, init) -> None:
        K = int(self.n_components)
        if "means" in init:
            self.means_ = kmeans(X, K, rng)
        if "covars" in init:
            cv = _data_covariance(X, float(self.min_covar))
            self._covars_ = {"diag": lambda: np.tile(np.diag(cv), (K, 1)),
                             "spherical": lambda: np.full(K, np.diag(cv).mean()),
                             "full": lambda: np.tile(cv, (K, 1, 1)),
                             "tied": lambda: cv}[self.covariance_type]()

    def _m_step_emissions(self, emissions, stats, learn):
        sub = learn & {"means", "covars"}
        if not sub:
            return emissions
        return emissions.m_step(stats, self._prior(), sub)

    def _log_prior_emissions(self, emissions) -> float:
        return emissions.log_prior(self._prior())

    def _n_emission_parameters(self, params) -> int:
        K, D = self.means_.shape
        n = K * D if "means" in params else 0
        if "covars" in params:
            n += {"diag": K * D, "spherical": K, "full": K * D * (D + 1) // 2,
                  "tied": D * (D + 1) // 2}[self.covariance_type]
        return n


@shared_docstring
class GMMHMM(_GaussianBase):
    """HMM with a Gaussian mixture per state (hmmlearn's ``GMMHMM``).

    Parameters
    ----------
    n_components : int, default 1
        Number of states.
    n_mix : int, default 1
        Gaussian components per state.
    min_covar : float, default 1e-3
        Floor on variances (eigenvalues) in every M-step.
%(chain_priors)s
    weights_prior : float or array-like of shape (n_components, n_mix), default 1.0
        Dirichlet concentration of each state's mixture weights.
    means_prior, means_weight : float or array-like, default 0.0
        Normal prior of the means in the MAP M-step.
    covars_prior, covars_weight : float, array-like or None, default None
        Prior of the covariances; None means 1e-2 and 1, the GaussianHMM defaults
        (hmmlearn's GMMHMM uses other internal defaults, so EM paths differ slightly).
    covariance_type : {"diag", "full", "spherical", "tied"}, default "diag"
        Per mixture component; "tied" shares one matrix among a state's components.
%(em_settings)s
    params, init_params : str or set of str, default "stmcw"
        Parameters to update / to initialise (letters as GaussianHMM's, ``w`` weights).

    Attributes
    ----------
%(chain_attributes)s
    weights_ : ndarray of shape (n_components, n_mix)
    means_ : ndarray of shape (n_components, n_mix, n_features)
    covars_ : ndarray
        (K, n_mix, D) diag, (K, n_mix) spherical, (K, n_mix, D, D) full, (K, D, D) tied.
%(em_attributes)s

    References
    ----------
%(rabiner_1989)s
    """

    _emission_names = ("weights", "means", "covars")

    _parameter_constraints = {
        **_GAUSSIAN_CONSTRAINTS,
        "n_mix": [Interval(numbers.Integral, 1, None, closed="left")],
        "covars_weight": [Interval(numbers.Real, 0, None, closed="left"), None],
    }

    def __init__(self, n_components=1, n_mix=1, min_covar=1e-3, startprob_prior=1.0,
                 transmat_prior=1.0, weights_prior=1.0, means_prior=0.0, means_weight=0.0,
                 covars_prior=None, covars_weight=None, algorithm="viterbi",
                 covariance_type="diag", random_state=None, n_iter=10, tol=1e-2,
                 verbose=False, params="stmcw", init_params="stmcw", implementation="log",
                 n_init=1):
        self.n_components = n_components
        self.n_mix = n_mix
        self.min_covar = min_covar
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.weights_prior = weights_prior
        self.means_prior = means_prior
        self.means_weight = means_weight
        self.covars_prior = covars_prior
        self.covars_weight = covars_weight
        self.algorithm = algorithm
        self.covariance_type = covariance_type
        self.random_state = random_state
        self.n_iter = n_iter
        self.tol = tol
        self.verbose = verbose
        self.params = params
        self.init_params = init_params
        self.implementation = implementation
        self.n_init = n_init

    def _check_emission_hyperparams(self) -> None:
        # An array-valued prior: beyond what the constraints say.
        w = np.asarray(self.weights_prior, dtype=np.float64)
        if not np.isfinite(w).all() or np.any(w < 0):
            raise ValueError("weights_prior must be finite and >= 0")

    weights_ = fitted_array("weights_", "_weights", "Mixture weights (K, n_mix).")
    covars_ = fitted_array("covars_", "_covars_", "Covariances of the mixture components, "
                           "in the covariance_type's shape.")

    def _prior(self) -> GMMPrior:
        g = GaussianPrior(min_covar=float(self.min_covar), means_prior=self.means_prior,
                          means_weight=float(self.means_weight),
                          covars_prior=1e-2 if self.covars_prior is None else self.covars_prior,
                          covars_weight=1.0 if self.covars_weight is None
                          else float(self.covars_weight))
        return GMMPrior(weights_prior=self.weights_prior, gaussian=g)

    def _emissions(self) -> GMMEmissions:
        self._check_covariance_type()
        return GMMEmissions(self.weights_, self.means_, self.covars_, self.covariance_type)

    def _set_emissions(self, emissions) -> None:
        self.weights_ = emissions.weights
        self.means_ = emissions.means
        self._covars_ = emissions.covars

    def _init_emissions(self, X, lengths, rng, init) -> None:
        """k-means into states, then into mixtures per state; covariances from the
        points of each mixture's cluster (the global covariance where too few),
        so that mixture components start apart (a global covariance lets the
        components of one state merge in the first E-steps)."""
        K, M, D = int(self.n_components), int(self.n_mix), X.shape[1]
        mc = float(self.min_covar)
        if "weights" in init:
            self.weights_ = np.full((K, M), 1.0 / M)
        cv = _data_covariance(X, mc)
        if not ({"means", "covars"} & init):
            return
        centres = kmeans(X, K, rng)
        Xs = X if len(X) <= 20000 else X[rng.choice(len(X), 20000, replace=False)]
        lab = _nearest(Xs, centres)
        means = np.empty((K, M, D))
        covs = np.tile(cv, (K, M, 1, 1))
        scale = np.sqrt(np.diag(cv))
        for k in range(K):
            pts = Xs[lab == k]
            if M > 1 and len(pts) >= 4 * M:
                means[k] = kmeans(pts, M, rng, n_iter=10)
            else:
                means[k] = centres[k] + 0.1 * scale * rng.standard_normal((M, D))
            if len(pts) > D:
                sub = _nearest(pts, means[k])
                for m in range(M):
                    q = pts[sub == m]
                    if len(q) > D:
                        covs[k, m] = np.atleast_2d(np.cov(q.T)) + mc * np.eye(D)
        if "means" in init:
            self.means_ = means
        if "covars" in init:
            diag = np.ascontiguousarray(np.diagonal(covs, axis1=2, axis2=3))
            self._covars_ = {"diag": lambda: diag,
                             "spherical": lambda: diag.mean(axis=2),
                             "full": lambda: covs,
                             "tied": lambda: covs.mean(axis=1)}[self.covariance_type]()

    def _m_step_emissions(self, emissions, stats, learn):
        sub = learn & {"weights", "means", "covars"}
        if not sub:
            return emissions
        return emissions.m_step(stats, self._prior(), sub)

    def _log_prior_emissions(self, emissions) -> float:
        return emissions.log_prior(self._prior())

    def _n_emission_parameters(self, params) -> int:
        K, M, D = self.means_.shape
        n = K * (M - 1) if "weights" in params else 0
        n += K * M * D if "means" in params else 0
        if "covars" in params:
            n += {"diag": K * M * D, "spherical": K * M, "full": K * M * D * (D + 1) // 2,
                  "tied": K * D * (D + 1) // 2}[self.covariance_type]
        return n
