"""Exponential-family harmoniums as scikit-learn transformers.

* :class:`Harmonium` -- the Gaussian-Bernoulli EFH of eqs. 4-6 (binary visible
  units, unit-variance Gaussian hidden units) and, with ``gaussian_columns``,
  the dual-wing harmonium with a Bernoulli and a Gaussian visible wing; learnt by
  maximum likelihood with contrastive divergence (CD-k, "brief sampling").
* :class:`BayesianHarmonium` -- the Bayesian EFH: a column-iid Gaussian prior
  ``W_ij ~ N(mu_i, sigma_i^2)`` (eq. 7), posterior samples of the coupling by
  the brief Langevin sampler (eqs. 13-17, step ``eps^2`` shrinking with N), hyper-parameters ``mu, sigma`` by Monte Carlo EM (eqs. 24-27).

Both project with the posterior mean ``E[h | v] = Wbar^T v`` (eq. 22): one
averaged matrix at run time.  Kernels live in
:mod:`recognizers.modelling.harmonium.harmonium_core`.

References
----------
Y. Guo and E. P. Xing, "Bayesian Exponential Family Harmoniums", Carnegie Mellon
University technical report CMU-ML-06-103, 2006.
M. Welling, M. Rosen-Zvi and G. E. Hinton, "Exponential Family Harmoniums with an
Application to Information Retrieval", NIPS 17, 2004.
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.special import logit, logsumexp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data
from tqdm.auto import tqdm

from recognizers.modelling.harmonium import harmonium_core as core

__all__ = ["BayesianHarmonium", "Harmonium"]


class _HarmoniumBase(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Shared input handling, projection and exact likelihood."""

    _parameter_constraints: dict = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_gibbs_steps": [Interval(numbers.Integral, 1, None, closed="left")],
        "fit_visible_bias": ["boolean"],
        "gaussian_columns": ["array-like", StrOptions({"all"}), None],
        "max_gaussian_gain": [Interval(numbers.Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    # ------------------------------------------------------------- input handling
    def _gaussian_mask(self, n_features):
        cols = self.gaussian_columns
        mask = np.zeros(n_features, dtype=bool)
        if cols is None:
            return mask
        if isinstance(cols, str):                                   # "all"
            return ~mask
        cols = np.asarray(cols)
        if cols.dtype == bool:
            if cols.shape != (n_features,):
                raise ValueError(f"gaussian_columns as a mask needs {n_features} entries, got {cols.shape[0]}")
            return cols.copy()
        if cols.size and (not np.issubdtype(cols.dtype, np.integer) or cols.min() < -n_features
                          or cols.max() >= n_features):
            raise ValueError(f"gaussian_columns must be column indices in [0, {n_features}) or a boolean mask")
        mask[cols] = True
        return mask

    def _check_fit_input(self, X):
        X = self._validate_data_array(X, reset=True)
        if X.shape[0] < 2:
            raise ValueError(f"need at least 2 samples to fit a harmonium, got n_samples = {X.shape[0]}")
        mask = self._gaussian_mask(X.shape[1])
        binary = X[:, ~mask]
        if binary.size and not np.all((binary == 0) | (binary == 1)):
            raise ValueError("Bernoulli columns must hold only 0 and 1 (binarise the data, or list the "
                             "continuous columns in gaussian_columns)")
        self.gaussian_mask_ = mask
        if mask.any():
            self.gaussian_mean_ = X[:, mask].mean(axis=0)
            scale = X[:, mask].std(axis=0)
            self.gaussian_scale_ = np.where(scale > 0, scale, 1.0)
        else:
            self.gaussian_mean_ = np.zeros(0)
            self.gaussian_scale_ = np.ones(0)
        return self._standardize(X)

    def _validate_data_array(self, X, reset):
        return validate_data(self, X, reset=reset, dtype=np.float64)

    def _standardize(self, X):
        mask = self.gaussian_mask_
        if mask.any():
            X = X.copy()
            X[:, mask] = (X[:, mask] - self.gaussian_mean_) / self.gaussian_scale_
        return X

    def _init_theta(self, V):
        theta = np.zeros(V.shape[1])
        if self.fit_visible_bias:
            b = ~self.gaussian_mask_
            p = np.clip(V[:, b].mean(axis=0), 1e-3, 1 - 1e-3)
            theta[b] = logit(p)
            theta[self.gaussian_mask_] = V[:, self.gaussian_mask_].mean(axis=0)
        return theta

    # ------------------------------------------------------------- public API
    def transform(self, X):
        """Posterior-mean projection ``E[h | x] = Wbar^T x`` (eq. 22), N x J."""
        check_is_fitted(self, "components_")
        V = self._standardize(self._validate_data_array(X, reset=False))
        return V @ self.components_.T

    def _coupling_list(self):
        return [self.components_.T]

    def score_samples(self, X):
        """Exact log-likelihood of each row (a density in the Gaussian columns,
        in the units of ``X``).  Exact enumeration: at most
        ``harmonium_core.MAX_EXACT_BERNOULLI`` Bernoulli columns.  For the Bayesian
        model this is the posterior predictive ``log mean_k p(x | W_k)``."""
        check_is_fitted(self, "components_")
        V = self._standardize(self._validate_data_array(X, reset=False))
        n_bin = int((~self.gaussian_mask_).sum())
        if n_bin > core.MAX_EXACT_BERNOULLI:
            raise ValueError(f"score_samples is exact only up to {core.MAX_EXACT_BERNOULLI} Bernoulli "
                             f"columns; this model has {n_bin}")
        logs = np.stack([core.exact_log_prob(V, W, self.intercept_visible_, self.gaussian_mask_)
                         for W in self._coupling_list()])
        out = logsumexp(logs, axis=0) - np.log(len(logs))
        return out - np.log(self.gaussian_scale_).sum()

    def score(self, X, y=None):
        """Mean exact log-likelihood (see :meth:`score_samples`)."""
        return float(np.mean(self.score_samples(X)))

    @property
    def coupling_gram_(self):
        """Estimate of ``V = W W^T`` (D x D; computed on access, never during fit)."""
        check_is_fitted(self, "components_")
        Ws = self._coupling_list()
        return sum(W @ W.T for W in Ws) / len(Ws)

    @property
    def _n_features_out(self):
        return self.components_.shape[0]


class Harmonium(_HarmoniumBase):
    """Exponential-family harmonium learnt by maximum likelihood with CD-k.

    Gaussian-Bernoulli EFH (eqs. 4-6): ``p(x_i | h) = Bernoulli(sigm(theta_i +
    (W h)_i))``, ``p(h | x) = N(W^T x, I)``.  Columns listed in
    ``gaussian_columns`` form a second, Gaussian wing (dual-wing harmonium):
    they are standardised and modelled as ``N(theta_k + (W h)_k, 1)``.

    Parameters
    ----------
    n_components : int, default 10
        Number of hidden units J.
    learning_rate : float, default 0.01
        Step of the gradient ascent on the per-sample average log-likelihood.
    n_iter : int, default 100
        Passes over the data.
    batch_size : int or None, default 100
        Mini-batch size; None is full-batch gradient ascent (the paper's baseline).
    n_gibbs_steps : int, default 1
        Gibbs sweeps of brief sampling (the ``l`` of CD-l; the paper uses 1).
    fit_visible_bias : bool, default True
        Learn ``theta``; False keeps ``theta = 0`` (the synthetic experiment).
    gaussian_columns : array-like of int, bool mask, "all" or None, default None
        Continuous columns (the Gaussian wing); the rest must be 0/1.
    max_gaussian_gain : float in (0, 1), default 0.95
        Bound on the singular values of the Gaussian wing's coupling, which
        keeps the model normalisable.
    init_scale : float, default 0.1
        Standard deviation of the random initial coupling.
    random_state : int, RandomState or None
    verbose : bool, default False
        Show a progress bar.

    Attributes
    ----------
    components_ : (J, D) coupling ``W^T`` (as scikit-learn's ``BernoulliRBM``).
    intercept_visible_ : (D,) ``theta``.
    coupling_gram_ : (D, D) ``W W^T`` (property, computed on access).
    gaussian_mask_, gaussian_mean_, gaussian_scale_ : the Gaussian wing and its standardisation.
    n_features_in_ : int
    """

    _parameter_constraints = {
        **_HarmoniumBase._parameter_constraints,
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "n_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "init_scale": [Interval(numbers.Real, 0, None, closed="left")],
    }

    def __init__(self, n_components=10, *, learning_rate=0.01, n_iter=100, batch_size=100,
                 n_gibbs_steps=1, fit_visible_bias=True, gaussian_columns=None, max_gaussian_gain=0.95,
                 init_scale=0.1, random_state=None, verbose=False):
        self.n_components = n_components
        self.learning_rate = learning_rate
        self.n_iter = n_iter
        self.batch_size = batch_size
        self.n_gibbs_steps = n_gibbs_steps
        self.fit_visible_bias = fit_visible_bias
        self.gaussian_columns = gaussian_columns
        self.max_gaussian_gain = max_gaussian_gain
        self.init_scale = init_scale
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit by CD-k gradient ascent on the rows of ``X``.

        Parameters
        ----------
        X : (N, D) array-like
            0/1 in the Bernoulli columns, real in ``gaussian_columns``.
        y : ignored

        Returns
        -------
        self
        """
        V = self._check_fit_input(X)
        rng = np.random.default_rng(check_random_state(self.random_state).randint(2 ** 31 - 1))
        N, D = V.shape
        W = self.init_scale * rng.standard_normal((D, self.n_components))
        theta = self._init_theta(V)
        W, theta = ml_fit(V, W, theta, self.gaussian_mask_, learning_rate=self.learning_rate,
                          n_iter=self.n_iter, batch_size=self.batch_size, n_gibbs=self.n_gibbs_steps,
                          fit_bias=self.fit_visible_bias, max_gain=self.max_gaussian_gain, rng=rng,
                          progress=self.verbose)
        self.components_ = W.T.copy()
        self.intercept_visible_ = theta
        return self


def ml_fit(V, W, theta, gaussian, *, learning_rate, n_iter, batch_size, n_gibbs, fit_bias, max_gain,
           rng, progress=False, desc="harmonium ML"):
    """CD-k gradient ascent (the paper's ML baseline): ``W += lr (X^T X W - X_l^T X_l W) / b``
    and ``theta += lr (mean x - mean x_l)``; returns ``(W, theta)``."""
    N = V.shape[0]
    b = N if batch_size is None else min(int(batch_size), N)
    W = core.clip_gaussian_gain(W, gaussian, max_gain)
    for _ in tqdm(range(int(n_iter)), desc=desc, disable=not progress, leave=False):
        order = rng.permutation(N) if b < N else np.arange(N)
        for start in range(0, N, b):
            B = V[order[start:start + b]]
            neg_W, neg_t, _ = core.cd_negative_phase(B, W, theta, gaussian, n_gibbs, rng)
            W = W + learning_rate * (core.coupling_gradient(B, W) - neg_W) / len(B)
            if fit_bias:
                theta = theta + learning_rate * (B.sum(axis=0) - neg_t) / len(B)
            W = core.clip_gaussian_gain(W, gaussian, max_gain)
        if not np.all(np.isfinite(W)) or np.abs(W).max() > _DIVERGED:
            raise ValueError("maximum-likelihood training diverged; lower learning_rate")
    return W, theta


class BayesianHarmonium(_HarmoniumBase):
    """Bayesian exponential-family harmonium (Guo & Xing): posterior samples of
    the coupling ``W`` by the brief Langevin sampler, hyper-parameters by MCEM.

    The paper's prior is ``W_ij ~ N(mu_i, sigma_i^2)`` (eq. 7); by default here the
    hyper-parameters belong to the hidden units instead, ``W_ij ~ N(mu_j, sigma_j^2)``
    (``prior_sharing``).  One transition (eq. 13)::

        W <- W + (eps^2/2) [-(W - mu)/sigma^2 + X^T X W - X_1^T X_1 W] + eps * N(0, I)

    with ``X_1`` from ``n_gibbs_steps`` Gibbs sweeps started at the data and
    ``eps^2 = step_size / sum_n ||v_n||^2`` (the gradient grows with N).

    Schedule: ``n_burn_in`` transitions; then, if ``fit_prior``, ``n_em_iter``
    MCEM rounds, each collecting ``em_samples`` samples (every ``thinning``-th
    transition) and re-estimating ``mu, sigma`` (eqs. 24-25, initialised from
    the ML fit by eqs. 26-27 when ``init="ml"``); finally ``n_samples`` kept
    samples, every ``thinning``-th transition.  ``theta`` is the ML estimate:
    updated by stochastic-approximation steps during burn-in, fixed afterwards.

    Parameters
    ----------
    n_components : int, default 10
    step_size : float, default 4.0
        ``eps^2 * sum_n ||v_n||^2``: the Langevin step shrinks with N (the gradient
        grows with N) and with the rows' squared norm, which keeps one default usable
        across data sets; each row's step is further capped at half its prior variance.
        (2.0 left the chain too slow at N = 200 on the paper's Fig. 5 task; 8.0 made
        the chain diverge on a small dual-wing set.)
    n_burn_in, n_samples, thinning : int, defaults 500, 200, 5
        (With 200 and 100 the chain had not forgotten its ML start at N = 200 on the
        paper's Fig. 5 task: the estimate then no longer improved with N.)
    n_gibbs_steps : int, default 1
        ``l`` of brief sampling (the paper: 1).
    prior_mean, prior_std : float or (D,) array, defaults 0.0 and 0.1
        ``mu`` and ``sigma`` (a standard deviation); the EM's starting
        point when ``fit_prior`` and ``init="random"``.
    fit_prior : bool, default True
        Estimate ``mu, sigma`` by Monte Carlo EM.
    prior_sharing : {"column", "all", "row"}, default "column"
        What the MCEM estimates: one ``mu_j, sigma_j`` per hidden unit ("column", a
        hierarchical prior per hidden unit), one ``mu, sigma`` shared by every coupling
        entry ("all", pooled over the whole matrix), or the paper's ``mu_i, sigma_i``
        per visible unit ("row", eqs. 24-25), each from only the ``J K`` sampled
        entries of its row. Per row, the ``mu_i`` absorb the largest hidden unit's
        couplings and then pull every column towards them, which adds ``J mu_i mu_k``
        to ``V = W W^T``: on the paper's Fig. 5 task that per-row prior loses to ML.
        Pooled, one ``mu`` cannot follow the hidden units' signs (``h_j -> -h_j``
        flips column ``j``) nor their different scales, and on some runs the pooled
        ``sigma`` grew round after round while ``W`` fitted noise. Per hidden unit, a
        column's mean takes its sign and its ``sigma_j`` its own scale (as automatic
        relevance determination gives each hidden unit its own prior scale); on that
        task it beats ML on every run and improves with N (docs/benchmarks.md).
    n_em_iter, em_samples : int, defaults 10 and 10
    init : {"ml", "random"}, default "ml"
        Start the chain at a CD-k maximum-likelihood fit (``ml_n_iter`` passes at
        ``ml_learning_rate``) or at small random values.
    fit_visible_bias, gaussian_columns, max_gaussian_gain, init_scale, random_state, verbose
        As :class:`Harmonium`.

    Attributes
    ----------
    components_ : (J, D) posterior mean ``Wbar^T`` (the projection of eq. 22).
    coupling_samples_ : (m, J, D) kept Langevin samples (transposed like ``components_``).
    coupling_gram_ : (D, D) posterior mean of ``W W^T`` (property, computed on access).
    prior_mean_, prior_std_ : final hyper-parameters, (D, J) for ``prior_sharing="column"``
        (the column's value in every row), else (D,).
    prior_history_ : list of (mu, sigma) after each MCEM round.
    intercept_visible_ : (D,) ``theta``.
    trace_ : (n_transitions,) the chain's ``W_11``, for trace plots (paper Fig. 3).
    step_size_ : (D,) the ``eps_i^2`` of each row in the final sampling phase.
    """

    _parameter_constraints = {
        **_HarmoniumBase._parameter_constraints,
        "step_size": [Interval(numbers.Real, 0, None, closed="neither")],
        "n_burn_in": [Interval(numbers.Integral, 0, None, closed="left")],
        "n_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "thinning": [Interval(numbers.Integral, 1, None, closed="left")],
        "prior_mean": [numbers.Real, "array-like"],
        "prior_std": [Interval(numbers.Real, 0, None, closed="neither"), "array-like"],
        "fit_prior": ["boolean"],
        "prior_sharing": [StrOptions({"all", "row", "column"})],
        "n_em_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "em_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "init": [StrOptions({"ml", "random"})],
        "ml_learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "ml_n_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "init_scale": [Interval(numbers.Real, 0, None, closed="left")],
    }

    def __init__(self, n_components=10, *, step_size=4.0, n_burn_in=500, n_samples=200, thinning=5,
                 n_gibbs_steps=1, prior_mean=0.0, prior_std=0.1, fit_prior=True,
                 prior_sharing="column", n_em_iter=10,
                 em_samples=10, init="ml", ml_learning_rate=0.01, ml_n_iter=100, fit_visible_bias=True,
                 gaussian_columns=None, max_gaussian_gain=0.95, init_scale=0.1, random_state=None,
                 verbose=False):
        self.n_components = n_components
        self.step_size = step_size
        self.n_burn_in = n_burn_in
        self.n_samples = n_samples
        self.thinning = thinning
        self.n_gibbs_steps = n_gibbs_steps
        self.prior_mean = prior_mean
        self.prior_std = prior_std
        self.fit_prior = fit_prior
        self.prior_sharing = prior_sharing
        self.n_em_iter = n_em_iter
        self.em_samples = em_samples
        self.init = init
        self.ml_learning_rate = ml_learning_rate
        self.ml_n_iter = ml_n_iter
        self.fit_visible_bias = fit_visible_bias
        self.gaussian_columns = gaussian_columns
        self.max_gaussian_gain = max_gaussian_gain
        self.init_scale = init_scale
        self.random_state = random_state
        self.verbose = verbose

    def _coupling_list(self):
        return [S.T for S in self.coupling_samples_]

    def _prior_vector(self, value, D, name):
        arr = np.asarray(value, dtype=float)
        if arr.ndim == 0:
            return np.full(D, float(arr))
        if arr.shape != (D,):
            raise ValueError(f"{name} must be a scalar or have one entry per feature ({D}), got shape {arr.shape}")
        return arr.copy()

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Sample the posterior of the coupling given the rows of ``X``.

        Parameters
        ----------
        X : (N, D) array-like
            0/1 in the Bernoulli columns, real in ``gaussian_columns``.
        y : ignored

        Returns
        -------
        self
        """
        V = self._check_fit_input(X)
        rng = np.random.default_rng(check_random_state(self.random_state).randint(2 ** 31 - 1))
        N, D = V.shape
        J = self.n_components
        gauss = self.gaussian_mask_
        mu = self._prior_vector(self.prior_mean, D, "prior_mean")
        sigma = self._prior_vector(self.prior_std, D, "prior_std")
        if np.any(sigma <= 0):
            raise ValueError("prior_std must be positive")
        theta = self._init_theta(V)
        W = self.init_scale * rng.standard_normal((D, J))
        if self.init == "ml":
            W, theta = ml_fit(V, W, theta, gauss, learning_rate=self.ml_learning_rate, n_iter=self.ml_n_iter,
                              batch_size=None, n_gibbs=self.n_gibbs_steps, fit_bias=self.fit_visible_bias,
                              max_gain=self.max_gaussian_gain, rng=rng, progress=self.verbose,
                              desc="harmonium ML init")
            if self.fit_prior and J > 1:
                mu, sigma = core.mle_prior_init(W, self.prior_sharing)       # eqs. 26-27
                sigma = np.maximum(sigma, _SIGMA_FLOOR)
        # eps^2 shrinks with N and with the data's squared norm, so that
        # step_size is free of the data's scale: the likelihood's curvature in W
        # is of the order of sum_n ||v_n||^2.
        eps2 = float(self.step_size) / max(float(np.einsum("nd,nd->", V, V)), 1.0)

        def row_steps(sigma):
            # the prior's curvature is 1/sigma_i^2: cap each row's step there
            # (a diagonal preconditioner) so a narrow prior cannot blow up the chain
            return np.minimum(eps2, _PRIOR_STEP * sigma ** 2)

        steps = row_steps(sigma)
        thin = int(self.thinning)
        total = int(self.n_burn_in) + thin * ((int(self.n_em_iter) * int(self.em_samples) if self.fit_prior else 0)
                                             + int(self.n_samples))
        trace = np.empty(total)
        bar = tqdm(total=total, desc="harmonium Langevin", disable=not self.verbose, leave=False)
        t = 0

        def advance(W, theta, update_theta):
            nonlocal t
            W, g_theta = core.langevin_step(W, V, theta, gauss, mu, sigma, steps, self.n_gibbs_steps, rng)
            W = core.clip_gaussian_gain(W, gauss, self.max_gaussian_gain)
            if update_theta:
                theta = theta + 0.5 * eps2 * g_theta
            if not np.all(np.isfinite(W)) or np.abs(W).max() > _DIVERGED:
                raise ValueError("the Langevin chain diverged; lower step_size")
            trace[t] = W[0, 0]
            t += 1
            bar.update()
            return W, theta

        def collect(W, theta, count):
            out = np.empty((count, D, J))
            for k in range(count):
                for _ in range(thin):
                    W, theta = advance(W, theta, False)
                out[k] = W
            return W, out

        history = []
        try:
            for _ in range(int(self.n_burn_in)):
                W, theta = advance(W, theta, self.fit_visible_bias)
            if self.fit_prior:
                for _ in range(int(self.n_em_iter)):
                    W, S = collect(W, theta, int(self.em_samples))        # E-step
                    mu, sigma = core.mcem_m_step(S, self.prior_sharing)  # M-step, eqs. 24-25
                    sigma = np.maximum(sigma, _SIGMA_FLOOR)
                    steps = row_steps(sigma)
                    history.append((mu.copy(), sigma.copy()))
            W, S = collect(W, theta, int(self.n_samples))
        finally:
            bar.close()
        self.coupling_samples_ = np.ascontiguousarray(np.transpose(S, (0, 2, 1)))
        self.components_ = self.coupling_samples_.mean(axis=0)
        self.intercept_visible_ = theta
        self.prior_mean_ = mu
        self.prior_std_ = sigma
        self.prior_history_ = history
        self.trace_ = trace
        self.step_size_ = steps
        return self


# couplings this large overflow sigm(W h) and mean a step size far too large
_DIVERGED = 1e4
# largest eps_i^2 / sigma_i^2 (the prior's drift contracts W_i by at most half of this)
_PRIOR_STEP = 0.5
# a prior standard deviation may not collapse to zero in MCEM (it would freeze the row)
_SIGMA_FLOOR = 1e-3
