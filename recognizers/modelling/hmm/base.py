"""Common machinery of the hmmlearn-compatible HMM classes.

:class:`BaseHMM` follows hmmlearn's conventions so that a user can switch by
changing an import: ``n_components``, ``startprob_``, ``transmat_``,
``fit(X, lengths)``, ``score``, ``score_samples``, ``decode``, ``predict``,
``predict_proba``, ``sample(n_samples, random_state, currstate)``, ``n_iter``,
``tol``, ``random_state``, ``params`` / ``init_params``, ``monitor_``, ``aic`` /
``bic``.  Additions: ``n_init`` random restarts (best MAP objective wins; the
thesis uses 20), ``filter`` (causal posteriors), ``converged_``, ``n_iter_``,
``history_``, ``lower_bound_`` and :class:`~recognizers.modelling.em.ConvergenceWarning`.

``params`` / ``init_params`` accept hmmlearn letter strings (``"stmc"``) or sets
of names (``{"startprob", "transmat", "means", "covars"}``); letters are
``s`` startprob, ``t`` transmat, ``e`` emissionprob, ``m`` means, ``c`` covars,
``w`` weights.

Differences from hmmlearn (deliberate):

* every recursion is :mod:`recognizers.modelling.chain` (log-space Viterbi,
  scaled forward-backward with an exact log-space fallback); ``implementation``
  is accepted for compatibility and has no effect;
* empty states keep their parameters instead of turning into NaN, and a
  covariance floor ``min_covar`` is applied in every M-step (hmmlearn uses it
  only at initialisation);
* the monitored objective includes the log prior of the parameters (it is the
  log-likelihood with the default flat priors), so it never decreases;
* Gaussian means start from scikit-learn's k-means (best of 10 k-means++
  starts), as hmmlearn's do.
"""
from __future__ import annotations

import logging
import numbers
import warnings
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_array
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_non_negative, check_scalar, validate_data

from recognizers.base import NotFittedError
from recognizers.modelling import chain, em
from recognizers.modelling.em import ConvergenceMonitor, ConvergenceWarning, check_random_state

__all__ = ["BaseHMM", "check_observations", "fitted_array", "stored_array",
           "shared_docstring", "parse_param_names", "kmeans"]

#: hmmlearn reports initialisation notices through logging, not warnings; so do we.
_logger = logging.getLogger("recognizers.hmm")

_LETTERS = {"s": "startprob", "t": "transmat", "e": "emissionprob", "m": "means",
            "c": "covars", "w": "weights"}
_CODES = {name: letter for letter, name in _LETTERS.items()}


def parse_param_names(value, allowed, name: str) -> frozenset:
    """hmmlearn letters (``"stmc"``) or an iterable of names -> frozenset of names."""
    allowed = frozenset(allowed)
    letters = "".join(k for k, v in _LETTERS.items() if v in allowed)
    if isinstance(value, str):
        out = set()
        for ch in value:
            if ch not in _LETTERS or _LETTERS[ch] not in allowed:
                raise ValueError("%s: unknown letter %r in %r; use letters from %r or a set of "
                                 "names from %s" % (name, ch, value, letters, sorted(allowed)))
            out.add(_LETTERS[ch])
        return frozenset(out)
    try:
        items = set(value)
    except TypeError:
        raise ValueError("%s must be a string of letters %r or a set of names from %s; got %r"
                         % (name, letters, sorted(allowed), value)) from None
    bad = items - allowed
    if bad:
        raise ValueError("%s: unknown parameter names %s; choose from %s"
                         % (name, sorted(map(str, bad)), sorted(allowed)))
    return frozenset(items)


def kmeans(X, k: int, rng, n_iter: int = 20, max_points: int = 20000,
           n_init: int = 10) -> np.ndarray:
    """(k, D) centres by scikit-learn's k-means (k-means++, best of ``n_init``)
    on (a subsample of) ``X``; best-of-several makes the initial means, and so
    the EM optimum reached, independent of the order of the sequences."""
    from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_limits

    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] > max_points:
        X = X[rng.choice(X.shape[0], max_points, replace=False)]
    n = X.shape[0]
    if n == 0:
        raise ValueError("cannot initialise means from an empty X")
    if n < k:  # fewer points than clusters: repeat points, as k-means++ would
        return X[rng.integers(n, size=k)].copy()
    # One thread: k-means on at most max_points is quick, and OpenMP threads
    # spinning against a busy machine made it 20x slower.
    with warnings.catch_warnings(), threadpool_limits(1):
        # Duplicate points (fewer distinct points than k) only mean repeated centres.
        warnings.simplefilter("ignore")
        km = KMeans(n_clusters=k, n_init=n_init, max_iter=max(n_iter, 1),
                    random_state=int(rng.integers(2 ** 31 - 1))).fit(X)
    return np.ascontiguousarray(km.cluster_centers_)


def check_observations(X, estimator=None, *, reset: bool = False, symbols: bool = False,
                       ensure_min_samples: int = 1) -> np.ndarray:
    """An HMM's observations ``(n_samples, n_features)`` through scikit-learn's checks.

    One gate for every HMM of the library, so refusals read as scikit-learn's own:
    sparse, complex, non-numeric, 1-D, NaN/inf and featureless input are refused
    by :func:`~sklearn.utils.validation.validate_data` (object arrays of numbers
    become numbers).  With an ``estimator`` the number of columns is recorded as
    ``n_features_in_`` (``reset=True``, in ``fit``) or checked against it.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Observations; several sequences concatenated.
    estimator : BaseEstimator or None, default None
        The model whose ``n_features_in_`` is set or checked.
    reset : bool, default False
        Record the number of columns (``fit``) instead of checking it.
    symbols : bool, default False
        The model takes integer symbols ``0, 1, ...`` (booleans become 0/1):
        a float dtype or a negative symbol is refused.
    ensure_min_samples : int, default 1
        Fewest rows accepted (0 lets ``predict`` take an empty sequence).

    Returns
    -------
    ndarray of shape (n_samples, n_features)
        Integer (``symbols``) or numeric values, as given.
    """
    kwargs = dict(accept_sparse=False, dtype="numeric", ensure_2d=True,
                  ensure_min_samples=ensure_min_samples, ensure_min_features=1)
    if estimator is None:
        X = check_array(X, **kwargs)
    else:
        X = validate_data(estimator, X, reset=reset, **kwargs)
    if not symbols:
        return X
    if X.dtype.kind == "b":
        return X.astype(np.int64)
    if X.size and X.dtype.kind not in "iu":
        raise ValueError("X must hold integer symbols, got dtype %s; discretise the readings "
                         "first (recognizers.discretize or np.digitize)" % X.dtype)
    if X.size and X.min() < 0:
        whom = "X" if estimator is None else type(estimator).__name__
        try:
            check_non_negative(X, whom)
        except ValueError as exc:  # scikit-learn's words, then what symbols are
            raise ValueError("%s Symbols are 0, 1, ... (smallest here %d)."
                             % (exc, X.min())) from None
    return X


def _log(p) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(p)


def _check_prior(value, name, shape) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    try:
        arr = np.broadcast_to(arr, shape)
    except ValueError:
        raise ValueError("%s must be a scalar or broadcast to %s, got shape %s"
                         % (name, shape, np.shape(value))) from None
    if not np.isfinite(arr).all() or np.any(arr < 0):
        raise ValueError("%s must be finite and >= 0" % name)
    return arr


def stored_array(model, storage: str, attribute: str) -> np.ndarray:
    """``model``'s learned array kept in ``storage``; NotFittedError naming
    ``attribute`` when it is not set yet (no fit and not set by hand)."""
    try:
        return model.__dict__[storage]
    except KeyError:
        raise NotFittedError("%s has no %s: call fit or set the parameters"
                             % (type(model).__name__, attribute)) from None


def fitted_array(attribute: str, storage: str, doc: str) -> property:
    """A learned array attribute of an HMM (hmmlearn's ``startprob_``, ``means_``, ...).

    Reading it before ``fit`` (or setting it by hand) raises scikit-learn's
    NotFittedError; setting it stores a C-contiguous float64 copy in ``storage``.
    """
    def get(model):
        return stored_array(model, storage, attribute)

    def set_(model, value):
        model.__dict__[storage] = np.ascontiguousarray(value, dtype=np.float64)

    return property(get, set_, doc=doc)


#: numpydoc entries every hmmlearn-style HMM shares; a class docstring names them as
#: ``%(name)s`` lines and :func:`shared_docstring` fills them in.
HMM_DOCSTRING_PARTS = {
    "chain_priors": """\
    startprob_prior : float or array-like of shape (n_components,), default 1.0
        Dirichlet concentration of the start distribution (1: maximum likelihood).
    transmat_prior : float or array-like of shape (n_components, n_components), default 1.0
        Dirichlet concentration of each transition row.""",
    "em_settings": """\
    algorithm : {"viterbi", "map"}, default "viterbi"
        Decoder of ``predict`` / ``decode``.
    random_state : None, int, RandomState or Generator, default None
        Seed of the initialisation and the restarts.
    n_iter : int, default 10
        Most EM iterations per restart.
    tol : float, default 1e-2
        EM stops when the objective improves by less than this.
    verbose : bool, default False
        Print the objective per iteration to stderr.
    implementation : {"log", "scaling"}, default "log"
        Accepted for hmmlearn compatibility; no effect.
    n_init : int, default 1
        Random restarts; the best objective is kept.""",
    "em_attributes": """\
    n_features_in_ : int
        Number of columns of ``X`` seen in ``fit``.
    monitor_ : ConvergenceMonitor
        hmmlearn's EM monitor (``history``, ``iter``, ``converged``).
    converged_ : bool
    n_iter_ : int
        EM iterations of the kept restart.
    history_ : ndarray
        The objective after each iteration.
    lower_bound_ : float
        The final objective (log-likelihood plus the log prior).""",
    "chain_attributes": """\
    startprob_ : ndarray of shape (n_components,)
    transmat_ : ndarray of shape (n_components, n_components)""",
    "rabiner_1989": """\
    Rabiner, L. R. "A Tutorial on Hidden Markov Models and Selected Applications in
    Speech Recognition", Proceedings of the IEEE 77(2), 1989.""",
}


def shared_docstring(cls):
    """Class decorator: fill the ``%(name)s`` lines of ``cls``'s docstring from
    :data:`HMM_DOCSTRING_PARTS`."""
    if cls.__doc__:  # None under python -OO
        cls.__doc__ = cls.__doc__ % HMM_DOCSTRING_PARTS
    return cls


class BaseHMM(BaseEstimator):
    """Start/transition handling, validation, inference, sampling and EM driving.

    Subclasses provide the emission part through a few hooks
    (``_emission_names``, ``_validate_X``, ``_emissions``, ``_set_emissions``,
    ``_init_emissions``, ``_m_step_emissions``, ``_log_prior_emissions``,
    ``_check_emission_hyperparams``).
    """

    #: Parameter names of the emission part (for params / init_params).
    _emission_names: ClassVar[tuple[str, ...]] = ()
    #: scikit-learn's declaration of the hyperparameters shared by every HMM; a
    #: subclass adds its emission part with ``{**BaseHMM._parameter_constraints, ...}``.
    #: The priors' shapes, the ``params`` letters and ``random_state`` (which also
    #: takes a numpy Generator) are checked where they are used.
    _parameter_constraints: ClassVar[dict] = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "algorithm": [StrOptions({"viterbi", "map"})],
        "implementation": [StrOptions({"log", "scaling"})],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False  # unsupervised: fit(X, lengths)
        return tags

    def _param_names(self) -> frozenset:
        return frozenset(("startprob", "transmat") + self._emission_names)

    def _validate_hyperparams(self) -> None:
        self._validate_params()
        K = int(self.n_components)
        _check_prior(self.startprob_prior, "startprob_prior", (K,))
        _check_prior(self.transmat_prior, "transmat_prior", (K, K))
        parse_param_names(self.params, self._param_names(), "params")
        parse_param_names(self.init_params, self._param_names(), "init_params")
        self._check_emission_hyperparams()

    def _check_emission_hyperparams(self) -> None:
        pass

    # -- chain parameters ---------------------------------------------------------
    startprob_ = fitted_array("startprob_", "_startprob", "Start distribution (n_components,).")
    transmat_ = fitted_array("transmat_", "_transmat",
                             "Transition matrix (n_components, n_components), rows sum to 1.")

    @property
    def log_startprob_(self) -> np.ndarray:
        return _log(self.startprob_)

    @property
    def log_transmat_(self) -> np.ndarray:
        return np.ascontiguousarray(_log(self.transmat_))

    def _check(self):
        """Validate the current parameters (shapes, ranges, rows summing to 1).

        Returns the emission component.
        """
        pi, A = self.startprob_, self.transmat_
        K = pi.shape[0] if pi.ndim == 1 else -1
        if pi.ndim != 1 or K < 1:
            raise ValueError("startprob_ must be 1-D with n_components entries, got shape %s"
                             % (pi.shape,))
        if A.shape != (K, K):
            raise ValueError("transmat_ must have shape (%d, %d), got %s" % (K, K, A.shape))
        for name, arr in (("startprob_", pi), ("transmat_", A)):
            if not np.isfinite(arr).all() or np.any(arr < 0):
                raise ValueError("%s must be finite and non-negative" % name)
        if not np.allclose(pi.sum(), 1.0, rtol=0, atol=1e-8):
            raise ValueError("startprob_ must sum to 1 (got %.10g)" % pi.sum())
        rows = A.sum(axis=1)
        if not np.allclose(rows, 1.0, rtol=0, atol=1e-8):
            raise ValueError("transmat_ rows must sum to 1 (got row sums %s)" % rows)
        emissions = self._emissions()
        if emissions.n_components != K:
            raise ValueError("the emissions have %d states but startprob_ has %d"
                             % (emissions.n_components, K))
        return emissions

    # -- convergence monitor ---------------------------------------------------------
    @property
    def monitor_(self) -> ConvergenceMonitor:
        """The EM convergence monitor (hmmlearn's ``monitor_``: ``history``,
        ``iter``, ``converged``).  Replace it before ``fit`` with a subclass to
        change the stopping rule; ``fit`` then reports every iteration to it."""
        try:
            return self._monitor
        except AttributeError:
            self._monitor = ConvergenceMonitor(self.tol, self.n_iter, bool(self.verbose))
            self._monitor_is_users = False
            return self._monitor

    @monitor_.setter
    def monitor_(self, monitor) -> None:
        self._monitor = monitor
        self._monitor_is_users = True

    # -- parameter snapshots (for random restarts) -------------------------------
    def _param_values(self) -> dict[str, Any]:
        out = {}
        for name in ("startprob", "transmat") + self._emission_names:
            try:
                out[name] = np.array(getattr(self, name + "_"), copy=True)
            except AttributeError:
                pass
        return out

    def _set_param_values(self, values: dict[str, Any]) -> None:
        for name, value in values.items():
            setattr(self, name + "_", value)

    def _restore_param_values(self, values: dict[str, Any]) -> None:
        """Back to a snapshot, unsetting parameters the snapshot did not have."""
        for name in ("startprob", "transmat") + self._emission_names:
            if name not in values:
                self._unset_param(name)
        self._set_param_values(values)

    def _unset_param(self, name: str) -> None:
        for attr in ("_" + name, "_" + name + "_"):
            self.__dict__.pop(attr, None)

    # -- inference ------------------------------------------------------------------
    def _log_lik(self, X) -> np.ndarray:
        emissions = self._check()
        return emissions.log_likelihood(self._validate_X(X, fit=False))

    def _compute_log_likelihood(self, X) -> np.ndarray:
        """``log p(x_t | y_t = k)`` (n_samples, n_components) (hmmlearn's name)."""
        return self._log_lik(X)

    def score(self, X, lengths=None, *, y=None) -> float:
        """``log p(X)`` summed over the sequences (``y`` is ignored, as in scikit-learn's
        unsupervised estimators)."""
        return chain.log_likelihood(self.log_startprob_, self.log_transmat_, self._log_lik(X),
                                    lengths)

    def score_samples(self, X, lengths=None):
        """``(log p(X), posteriors (n_samples, n_components))``."""
        sm = chain.smooth(self.log_startprob_, self.log_transmat_, self._log_lik(X), lengths)
        return sm.loglik, sm.posterior

    def predict_proba(self, X, lengths=None) -> np.ndarray:
        """Smoothed posteriors ``p(y_t | X)`` (n_samples, n_components)."""
        return chain.smooth(self.log_startprob_, self.log_transmat_, self._log_lik(X),
                            lengths).posterior

    def filter(self, X, lengths=None) -> np.ndarray:
        """Filtered (causal) posteriors ``p(y_t | x_1..t)`` (n_samples, n_components)."""
        return np.exp(chain.forward(self.log_startprob_, self.log_transmat_, self._log_lik(X),
                                    lengths).log_alpha)

    def decode(self, X, lengths=None, algorithm=None):
        """``(log probability, state sequence)`` by ``algorithm`` ("viterbi" or "map").

        Viterbi returns the joint log-probability of the best path; "map"
        returns ``log p(X)`` and the per-frame argmax of the posteriors.
        """
        algorithm = self.algorithm if algorithm is None else algorithm
        if algorithm == "viterbi":
            v = chain.viterbi(self.log_startprob_, self.log_transmat_, self._log_lik(X), lengths)
            return v.score, v.path
        if algorithm == "map":
            loglik, post = self.score_samples(X, lengths)
            return loglik, post.argmax(axis=1)
        raise ValueError("algorithm must be 'viterbi' or 'map', got %r" % (algorithm,))

    def predict(self, X, lengths=None) -> np.ndarray:
        """Most likely states (n_samples,) by ``self.algorithm`` (Viterbi by default)."""
        return self.decode(X, lengths)[1]

    def sample(self, n_samples: int = 1, random_state=None, currstate=None):
        """``(X, states)``: ``n_samples`` frames from the model (one sequence).

        ``random_state`` defaults to the model's; ``currstate`` fixes the first state.
        """
        n_samples = check_scalar(n_samples, "n_samples", numbers.Integral, min_val=0)
        emissions = self._check()
        rng = check_random_state(self.random_state if random_state is None else random_state)
        states = chain.sample_path(self.startprob_, self.transmat_, n_samples, rng,
                                   first=currstate)
        return emissions.sample(states, rng), states

    def _fit_supervised(self, X, offsets, y):
        """``fit`` with known states: the M-step of EM with one-hot posteriors."""
        K = int(self.n_components)
        y = np.asarray(y)
        if y.shape != (X.shape[0],):
            raise ValueError("y must have one state per frame: shape (%d,), got %s"
                             % (X.shape[0], y.shape))
        if y.size and (y.dtype.kind not in "iu" or y.min() < 0 or y.max() >= K):
            raise ValueError("y must hold integer states in 0..%d (n_components=%d)"
                             % (K - 1, K))
        learn = parse_param_names(self.params, self._param_names(), "params")
        posterior = np.zeros((X.shape[0], K))
        posterior[np.arange(X.shape[0]), y] = 1.0
        # Emission arrays need a shape (and a value for states y never visits).
        self._init_rng, self._quiet_init = check_random_state(self.random_state), False
        try:
            self._init(X, np.diff(offsets))
        finally:
            del self._init_rng, self._quiet_init
        self._check()
        emissions = self._emissions()
        stats = emissions.init_stats()
        emissions.accumulate(stats, X, posterior)
        self._set_emissions(self._m_step_emissions(emissions, stats, learn))
        if "startprob" in learn:
            sp = _check_prior(self.startprob_prior, "startprob_prior", (K,))
            starts = em.sequence_starts(offsets)
            self.startprob_ = em.dirichlet_map(posterior[starts].sum(axis=0), sp,
                                               self.startprob_)
        if "transmat" in learn:
            tp = _check_prior(self.transmat_prior, "transmat_prior", (K, K))
            within = np.ones(max(X.shape[0] - 1, 0), dtype=bool)
            bounds = offsets[1:-1]
            within[bounds[(bounds > 0) & (bounds < X.shape[0])] - 1] = False  # across sequences
            counts = np.zeros((K, K))
            np.add.at(counts, (y[:-1][within], y[1:][within]), 1.0)
            self.transmat_ = em.dirichlet_map(counts, tp, self.transmat_)
        self.history_ = np.empty(0)
        self.converged_, self.n_iter_ = True, 0
        return self

    # -- model selection -------------------------------------------------------------
    def _n_parameters(self) -> int:
        params = parse_param_names(self.params, self._param_names(), "params")
        K = self.startprob_.shape[0]
        n = 0
        if "startprob" in params:
            n += K - 1
        if "transmat" in params:
            n += K * (K - 1)
        return n + self._n_emission_parameters(params)

    def _n_emission_parameters(self, params) -> int:
        return self._emissions().n_parameters()

    def aic(self, X, lengths=None) -> float:
        """Akaike information criterion (lower is better)."""
        return -2.0 * self.score(X, lengths) + 2.0 * self._n_parameters()

    def bic(self, X, lengths=None) -> float:
        """Bayesian information criterion (lower is better)."""
        return -2.0 * self.score(X, lengths) + self._n_parameters() * np.log(len(X))

    # -- learning -----------------------------------------------------------------
    def _needs_init(self, name: str, init: frozenset) -> bool:
        """hmmlearn's rule: initialise what ``init_params`` names (saying so when
        that overwrites a value the user set) and whatever is not set yet."""
        is_set = hasattr(self, name + "_")
        if name in init:
            if is_set and not getattr(self, "_quiet_init", False):
                _logger.warning("Even though the %r attribute is set, it will be overwritten "
                             "during initialization because 'init_params' contains %r",
                             name + "_", _CODES.get(name, name))
            return True
        return not is_set

    def _init(self, X, lengths=None) -> None:
        """Initialise the parameters before EM (hmmlearn's extension hook).

        Parameters named in ``init_params`` and parameters not set yet are
        initialised; the others keep their values.  Subclasses may override it
        with hmmlearn's signature; ``fit`` calls it once per restart.
        """
        X = self._validate_X(X, fit=True)
        names = self._param_names()
        init_params = parse_param_names(self.init_params, names, "init_params")
        init = frozenset(n for n in ("startprob", "transmat") + self._emission_names
                         if self._needs_init(n, init_params))
        rng = getattr(self, "_init_rng", None)
        if rng is None:
            rng = check_random_state(self.random_state)
        K = int(self.n_components)
        if "startprob" in init:
            self.startprob_ = np.full(K, 1.0 / K)
        if "transmat" in init:
            self.transmat_ = np.full((K, K), 1.0 / K)
        self._init_emissions(X, lengths, rng, init)
        n_free = self._n_parameters()
        if X.size < n_free and not getattr(self, "_quiet_init", False):
            _logger.warning("Fitting a model with %d free scalar parameters with only %d data "
                         "points will result in a degenerate solution.", n_free, X.size)

    def _log_prior_emissions(self, emissions) -> float:
        return 0.0

    def fit(self, X, lengths=None, *, y=None):
        """Estimate the parameters by EM (Baum-Welch) with ``n_init`` restarts, or by
        counting when the states ``y`` are given.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Observations; several sequences are concatenated.
        lengths : array-like of int, default None
            Length of each sequence in ``X`` (None: one sequence).
        y : array-like of int, shape (n_samples,), default None
            The state (``0 .. n_components - 1``) of every frame.  Given, the fit is
            supervised: one M-step with these states as certain posteriors, so the
            parameters are the counted (maximum a posteriori under the model's
            priors; maximum likelihood with the default priors) estimates: start and
            transition frequencies, and per-state emission statistics.  (For
            ``GMMHMM`` the mixture inside each state gets one EM step from its
            initialisation.)

        Parameters named in ``init_params`` are (re)initialised for every restart;
        the others start from their current values.  Only parameters named in
        ``params`` are updated.  Returns ``self``.
        """
        self._validate_hyperparams()
        X = self._validate_X(X, fit=True)
        self.n_features_in_ = X.shape[1]
        offsets = chain.lengths_to_offsets(len(X), lengths)
        lens = np.diff(offsets)
        if y is not None:
            return self._fit_supervised(X, offsets, y)
        names = self._param_names()
        learn = parse_param_names(self.params, names, "params")
        K = int(self.n_components)
        sp = _check_prior(self.startprob_prior, "startprob_prior", (K,))
        tp = _check_prior(self.transmat_prior, "transmat_prior", (K, K))
        rng = check_random_state(self.random_state)
        # A monitor the user set decides when EM stops (hmmlearn's extension point).
        users_monitor = getattr(self, "_monitor_is_users", False)
        saved = self._param_values()
        best = None
        best_values = None
        for restart in range(int(self.n_init)):
            self._restore_param_values(saved)
            self._init_rng, self._quiet_init = rng, restart > 0
            try:
                self._init(X, lens)
            finally:
                del self._init_rng, self._quiet_init
            self._check()
            if int(self.n_iter) == 0:  # hmmlearn: initialise only
                best = em.EMResult(self.startprob_, self.transmat_, self._emissions(), [],
                                   -np.inf, False, 0) if best is None else best
                best_values = self._param_values()
                break
            res = em.baum_welch(
                X, lens, self.startprob_, self.transmat_, self._emissions(),
                m_step_emissions=lambda comp, stats: self._m_step_emissions(comp, stats, learn),
                log_prior_emissions=self._log_prior_emissions,
                learn_startprob="startprob" in learn, learn_transmat="transmat" in learn,
                startprob_prior=sp, transmat_prior=tp, n_iter=int(self.n_iter),
                tol=float(self.tol), verbose=bool(self.verbose), warn=False,
                monitor=self._monitor if users_monitor else None)
            if best is None or res.lower_bound > best.lower_bound:
                best = res
                self.startprob_ = res.startprob
                self.transmat_ = res.transmat
                self._set_emissions(res.emissions)
                best_values = self._param_values()
        self._set_param_values(best_values)
        if users_monitor:
            self._monitor.history = type(self._monitor.history)(best.history)
        else:
            self._monitor = ConvergenceMonitor(self.tol, self.n_iter, False)
            self._monitor.history = list(best.history)
            self._monitor_is_users = False
        self.history_ = np.asarray(best.history)
        self.lower_bound_ = best.lower_bound
        self.converged_ = best.converged
        self.n_iter_ = best.n_iter
        if not best.converged and int(self.n_iter) > 0:
            warnings.warn("%s: EM did not converge in n_iter=%d iterations (tol=%g); the "
                          "best of %d restart(s) is kept" % (type(self).__name__, self.n_iter,
                                                           self.tol, self.n_init),
                          ConvergenceWarning, stacklevel=2)
        return self
