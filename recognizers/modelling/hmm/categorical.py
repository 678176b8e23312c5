"""The thesis's discrete multi-sensor HMM (Omar 2016, 6.2-6.4), supervised and
unsupervised, with hmmlearn's categorical API.

The hidden state is the activity; each feature column ("sensor") is
discretised into equal-frequency bins (6.6, M = 20) and emits one symbol per
frame; sensors are independent given the activity, so a frame's likelihood is a
product of per-sensor categoricals.  Supervised learning counts (eqs 6.12,
6.14) with Dirichlet pseudo-counts, so a bin never seen with an activity still
has non-zero probability (the thesis's 6.14 has no pseudo-counts; see the
reading guide).  Transitions come either from counts or from the persistence
model of eq 6.13, ``theta[y][y] = tau / (N + tau - 1)``, otherwise
``1 / (N + tau - 1)``, which the thesis prefers because the fixed course biases
the counted transitions.

Layers:

* :class:`~recognizers.modelling.hmm.categorical_emissions.CategoricalEmissions`
  (in :mod:`~recognizers.modelling.hmm.categorical_emissions`, with the supervised
  counts): the emission component, shared with Gibbs sampling;
* :class:`MultiCategoricalHMM`: start, transition and emission parameters over
  integer symbols, with hmmlearn-style attributes; inference via
  :mod:`recognizers.modelling.chain`.  Built from parameters
  (``MultiCategoricalHMM.from_params(startprob, transmat, emissions)``, the supervised
  path) or hmmlearn-style (``MultiCategoricalHMM(n_components=7).fit(X,
  lengths)``: Baum-Welch, thesis 6.15-6.18, with random restarts);
* :class:`CategoricalHMM`: hmmlearn's single-sensor model (same API).

The same model learned by collapsed Gibbs sampling is
:class:`recognizers.modelling.hmm.gibbs.CollapsedGibbsHMM`; the walker
recognizer over it is :class:`recognizers.hmm_recognizer.HMMRecognizer`.

Symbol ``n_values[s]`` of sensor ``s`` means "missing" (the discretiser's
symbol for a NaN reading): it has log-likelihood 0 in every state, so the
sensor is left out of that frame.
"""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from recognizers.base import NotFittedError
from recognizers.modelling.em import dirichlet_log_prior
from recognizers.modelling.hmm.base import (
    BaseHMM,
    check_observations,
    parse_param_names,
    shared_docstring,
)
from recognizers.modelling.hmm.categorical_emissions import (
    CategoricalEmissions,
    CategoricalStats,
    SupervisedCounts,
    _out_of_range,
    count_supervised,
    normalize_counts,
    persistence_transmat,
)

__all__ = [
    "CategoricalStats",
    "CategoricalEmissions",
    "SupervisedCounts",
    "count_supervised",
    "persistence_transmat",
    "normalize_counts",
    "MultiCategoricalHMM",
    "CategoricalHMM",
]


@shared_docstring
class MultiCategoricalHMM(BaseHMM):
    """HMM over integer symbols, one categorical per sensor given the state.

    Two ways to build one:

    * from parameters (the supervised path, :meth:`from_counts`)::

          MultiCategoricalHMM.from_params(startprob, transmat, CategoricalEmissions(B, n_values))

    * hmmlearn-style, then learned by Baum-Welch (thesis 6.15-6.18)::

          MultiCategoricalHMM(n_components=7, n_init=20, random_state=0).fit(X, lengths)

      (``MultiCategoricalHMM(7)`` also works, as ``hmmlearn.hmm.CategoricalHMM(7)``).

    Inputs ``X`` are symbols (n_samples, n_sensors) of an integer dtype; sensor
    ``s`` takes ``0 .. n_values[s] - 1``; with ``missing="sentinel"`` the symbol
    ``n_values[s]`` means a missing reading (no evidence), otherwise it is an error
    like any symbol out of range.  Several sequences are concatenated and
    described by ``lengths``.

    Parameters
    ----------
    n_components : int, default 1
        Number of states (``from_params`` takes it from the parameters).
    n_values : array-like of int of shape (n_sensors,) or None, default None
        Symbols per sensor; None: ``X.max(axis=0) + 1`` at fit.
    missing : {None, "sentinel"}, default None
        "sentinel": the symbol ``n_values[s]`` marks a missing reading of sensor
        ``s`` (the walker's discretiser writes it); None: it is out of range.
%(chain_priors)s
    emissionprob_prior : float or array-like, default 1.0
        Dirichlet concentration of each emission row (``1 + c`` adds ``c``
        pseudo-counts).
%(em_settings)s
    params, init_params : str or set of str, default "ste"
        Parameters to update / to initialise (``s``, ``t``, ``e`` emissionprob).

    Attributes
    ----------
%(chain_attributes)s
    emissions_ : CategoricalEmissions
    emissionprob_ : ndarray of shape (n_sensors, n_components, max(n_values) + 1)
        See :class:`CategoricalEmissions`.
    n_values_ : ndarray of shape (n_sensors,)
%(em_attributes)s

    References
    ----------
    Omar, F. "Online Bayesian Learning in Probabilistic Graphical Models using Moment
    Matching with Applications", PhD thesis, University of Waterloo, 2016.
%(rabiner_1989)s
    """

    _emission_names = ("emissionprob",)

    _parameter_constraints = {
        **BaseHMM._parameter_constraints,
        "missing": [StrOptions({"sentinel"}), None],
    }

    def __init__(self, n_components=1, *, n_values=None, missing=None, startprob_prior=1.0,
                 transmat_prior=1.0, emissionprob_prior=1.0, algorithm="viterbi",
                 random_state=None, n_iter=10, tol=1e-2, verbose=False, params="ste",
                 init_params="ste", implementation="log", n_init=1):
        self.n_components = n_components
        self.n_values = n_values
        self.missing = missing
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.emissionprob_prior = emissionprob_prior
        self.algorithm = algorithm
        self.random_state = random_state
        self.n_iter = n_iter
        self.tol = tol
        self.verbose = verbose
        self.params = params
        self.init_params = init_params
        self.implementation = implementation
        self.n_init = n_init

    @classmethod
    def from_params(cls, startprob, transmat, emissions, **hyperparams):
        """A model with the given parameters (no fit needed).

        Parameters
        ----------
        startprob : array-like of shape (n_components,)
            Start distribution.
        transmat : array-like of shape (n_components, n_components)
            Transition matrix, rows summing to 1.
        emissions : CategoricalEmissions
            The emission tables; their state count sets ``n_components``.
        **hyperparams
            Other constructor parameters (``algorithm``, ``n_values``, ...).

        Returns
        -------
        MultiCategoricalHMM
        """
        if not isinstance(emissions, CategoricalEmissions):
            raise TypeError("emissions must be a CategoricalEmissions, got %s"
                            % type(emissions).__name__)
        pi = np.ascontiguousarray(startprob, dtype=np.float64)
        A = np.ascontiguousarray(transmat, dtype=np.float64)
        K = emissions.n_components
        if pi.shape != (K,) or A.shape != (K, K):
            raise ValueError("startprob %s / transmat %s do not match %d states"
                             % (pi.shape, A.shape, K))
        if hyperparams.setdefault("n_components", K) != K:
            raise ValueError("n_components=%r but the parameters have %d states"
                             % (hyperparams["n_components"], K))
        model = cls(**hyperparams)
        model.startprob_ = pi
        model.transmat_ = A
        model.emissions_ = emissions
        return model

    # -- parameters -----------------------------------------------------------------
    @property
    def emissions_(self) -> CategoricalEmissions:
        try:
            return self._emissions_obj
        except AttributeError:
            raise NotFittedError("%s has no emission parameters: call fit or set "
                                 "emissionprob_" % type(self).__name__) from None

    @emissions_.setter
    def emissions_(self, value: CategoricalEmissions) -> None:
        if not isinstance(value, CategoricalEmissions):
            raise TypeError("emissions_ must be a CategoricalEmissions, got %s"
                            % type(value).__name__)
        self._emissions_obj = value

    @property
    def emissionprob_(self) -> np.ndarray:
        return self.emissions_.emissionprob

    @emissionprob_.setter
    def emissionprob_(self, value) -> None:
        B = np.asarray(value, dtype=np.float64)
        self.emissions_ = CategoricalEmissions(B, self._n_values_for(B))

    def _n_values_for(self, B) -> np.ndarray:
        """The per-sensor symbol counts to use with an emission table ``B``."""
        if B.ndim != 3:
            raise ValueError("emissionprob_ must have shape (n_sensors, n_components, "
                             "n_symbols), got %s" % (B.shape,))
        current = getattr(self, "_emissions_obj", None)
        if current is not None and current.n_values.size == B.shape[0] \
                and B.shape[2] >= current.n_values.max():
            return current.n_values
        nv = getattr(self, "_fit_n_values", None)
        if nv is None and self.n_values is not None:
            nv = np.asarray(self.n_values)
        if nv is not None and nv.size == B.shape[0]:
            return nv
        return np.full(B.shape[0], B.shape[2], dtype=np.int64)

    @property
    def n_values_(self) -> np.ndarray:
        return self.emissions_.n_values

    @classmethod
    def from_counts(cls, counts: SupervisedCounts, *, pseudocount: float = 1.0,
                    transitions: str = "counts", tau: float = 4000.0, **hyperparams):
        """Supervised estimate with Dirichlet pseudo-counts.

        Parameters
        ----------
        counts : SupervisedCounts
            Start, transition and emission counts (:func:`count_supervised`).
        pseudocount : float, default 1.0
            Dirichlet pseudo-count added to every count.
        transitions : {"counts", "persistence"}, default "counts"
            ``"counts"``: ``(n_ij + pseudocount) / (n_i + K pseudocount)``, the
            maximum a posteriori estimate.  ``"persistence"``: thesis eq 6.13 with
            ``tau`` (the walker's choice: its fixed course biases counted
            transitions; the ``"hmm"`` recognizer passes it).
        tau : float, default 4000.0
            Persistence of eq 6.13 (``transitions="persistence"`` only).
        **hyperparams
            Constructor parameters of the model (``missing``, ``algorithm``, ...).

        The start distribution is ``(starts + pseudocount) / (n_seq + K pseudocount)``
        either way.
        """
        K = counts.start.shape[0]
        pi = normalize_counts(counts.start, pseudocount)
        if transitions == "persistence":
            A = persistence_transmat(K, tau)
        elif transitions == "counts":
            A = normalize_counts(counts.trans, pseudocount)
        else:
            raise ValueError("transitions must be 'persistence' or 'counts', got %r"
                             % (transitions,))
        return cls.from_params(pi, A, CategoricalEmissions.from_stats(counts.emission,
                                                                      pseudocount),
                               **hyperparams)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True  # integer symbols, one column per sensor
        tags.input_tags.positive_only = True
        return tags

    # -- hooks of BaseHMM -------------------------------------------------------------
    def _check_emission_hyperparams(self) -> None:
        a = np.asarray(self.emissionprob_prior, dtype=np.float64)
        if not np.isfinite(a).all() or np.any(a < 0):
            raise ValueError("emissionprob_prior must be finite and >= 0")
        if self.n_values is not None:
            nv = np.asarray(self.n_values)
            if nv.ndim != 1 or nv.size == 0 or nv.dtype.kind not in "iu" or np.any(nv < 1):
                raise ValueError("n_values must be None or a 1-D array of ints >= 1, got %r"
                                 % (self.n_values,))

    def _symbols(self, X, *, fit: bool) -> np.ndarray:
        X = check_observations(X, self, reset=fit, symbols=True,
                               ensure_min_samples=1 if fit else 0)
        return np.ascontiguousarray(X, dtype=np.int64)

    def _validate_X(self, X, *, fit: bool) -> np.ndarray:
        sentinel = self.missing == "sentinel"
        if not fit:
            return self.emissions_.check_symbols(self._symbols(X, fit=False),
                                                 allow_missing=sentinel)
        X = self._symbols(X, fit=True)
        init = parse_param_names(self.init_params, self._param_names(), "init_params")
        if self.n_values is not None:
            nv = np.ascontiguousarray(self.n_values, dtype=np.int64)
        elif "emissionprob" not in init and hasattr(self, "_emissions_obj"):
            nv = self.emissions_.n_values
        else:
            nv = (X.max(axis=0) + 1).astype(np.int64)
        if nv.shape != (X.shape[1],):
            raise ValueError("X has %d sensors but n_values has %d" % (X.shape[1], nv.size))
        if np.any(X > nv - (not sentinel)):
            raise ValueError(_out_of_range(nv, sentinel))
        self._fit_n_values = nv
        return X

    def _emissions(self) -> CategoricalEmissions:
        return self.emissions_

    def _set_emissions(self, emissions) -> None:
        self.emissions_ = emissions

    def _unset_param(self, name: str) -> None:
        if name == "emissionprob":
            self.__dict__.pop("_emissions_obj", None)
        else:
            super()._unset_param(name)

    def _init_emissions(self, X, lengths, rng, init) -> None:
        nv = self._fit_n_values
        K = int(self.n_components)
        if "emissionprob" in init:
            B = rng.random((nv.size, K, int(nv.max())))
            B *= np.arange(B.shape[2])[None, None, :] < nv[:, None, None]
            B /= B.sum(axis=2, keepdims=True)
            self.emissions_ = CategoricalEmissions(B, nv)
        elif hasattr(self, "_emissions_obj") and not np.array_equal(self.emissions_.n_values,
                                                                     nv):
            raise ValueError("the emissions' n_values %s do not match the data's %s"
                             % (self.emissions_.n_values.tolist(), nv.tolist()))

    def _m_step_emissions(self, emissions, stats, learn):
        if "emissionprob" not in learn:
            return emissions
        a = np.broadcast_to(np.asarray(self.emissionprob_prior, dtype=np.float64),
                            stats.counts.shape)
        valid = np.broadcast_to(emissions.valid_mask(), stats.counts.shape)
        num = np.where(valid, np.maximum(stats.counts + a - 1.0, 0.0), 0.0)
        tot = num.sum(axis=2, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            B = np.where(tot > 0, num / tot, emissions.emissionprob)
        return CategoricalEmissions(B, emissions.n_values)

    def _log_prior_emissions(self, emissions) -> float:
        B = emissions.emissionprob
        a = np.broadcast_to(np.asarray(self.emissionprob_prior, dtype=np.float64), B.shape)
        valid = np.broadcast_to(emissions.valid_mask(), B.shape)
        return dirichlet_log_prior(B[valid], a[valid])

    def _n_emission_parameters(self, params) -> int:
        return self.emissions_.n_parameters() if "emissionprob" in params else 0


@shared_docstring
class CategoricalHMM(MultiCategoricalHMM):
    """hmmlearn's ``CategoricalHMM``: one categorical symbol per frame.

    ``X`` is (n_samples, 1) integer symbols in ``0 .. n_features - 1``.

    Parameters
    ----------
    n_components : int, default 1
        Number of states.
%(chain_priors)s
    emissionprob_prior : float or array-like, default 1.0
        Dirichlet concentration of each emission row.
    n_features : int or None, default None
        Number of symbols; None: set from the data at ``fit`` (as hmmlearn does).
%(em_settings)s
    params, init_params : str or set of str, default "ste"
        Parameters to update / to initialise.

    Attributes
    ----------
%(chain_attributes)s
    emissionprob_ : ndarray of shape (n_components, n_features)
%(em_attributes)s

    References
    ----------
%(rabiner_1989)s
    """

    _parameter_constraints = {
        **BaseHMM._parameter_constraints,
        "n_features": [Interval(numbers.Integral, 1, None, closed="left"), None],
    }
    missing = None  # hmmlearn's model: every symbol is a reading

    def __init__(self, n_components=1, startprob_prior=1.0, transmat_prior=1.0, *,
                 emissionprob_prior=1.0, n_features=None, algorithm="viterbi",
                 random_state=None, n_iter=10, tol=1e-2, verbose=False, params="ste",
                 init_params="ste", implementation="log", n_init=1):
        self.n_components = n_components
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.emissionprob_prior = emissionprob_prior
        self.n_features = n_features
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
    def n_values(self):
        return None if self.n_features is None else np.array([int(self.n_features)])

    @property
    def emissionprob_(self) -> np.ndarray:
        em = self.emissions_
        return em.emissionprob[0, :, :em.n_values[0]]

    @emissionprob_.setter
    def emissionprob_(self, value) -> None:
        B = np.asarray(value, dtype=np.float64)
        if B.ndim != 2:
            raise ValueError("emissionprob_ must have shape (n_components, n_features), got %s"
                             % (B.shape,))
        if self.n_features is not None and B.shape[1] != self.n_features:
            raise ValueError("emissionprob_ has %d symbols but n_features=%r"
                             % (B.shape[1], self.n_features))
        self.emissions_ = CategoricalEmissions(B[None], [B.shape[1]])

    def _validate_X(self, X, *, fit: bool) -> np.ndarray:
        X = self._symbols(X, fit=fit)
        if X.shape[1] != 1:
            raise ValueError("CategoricalHMM takes X of shape (n_samples, 1), got %s"
                             % (X.shape,))
        if fit:
            X = super()._validate_X(X, fit=True)
            if self.n_features is None:
                self.n_features = int(self._fit_n_values[0])
            return X
        n = self.emissions_.n_values[0]
        if X.size and (X.min() < 0 or X.max() >= n):
            raise ValueError("symbols must be in 0..%d" % (n - 1))
        return X

    def _validate_hyperparams(self) -> None:
        super()._validate_hyperparams()

    def _check_and_set_n_features(self, X) -> None:
        """hmmlearn's check: non-negative integer symbols within ``n_features``
        (set from the data's largest symbol when ``n_features`` is None)."""
        X = np.asarray(X)
        if not np.issubdtype(X.dtype, np.integer):
            raise ValueError("Symbols should be integers")
        if X.size and X.min() < 0:
            raise ValueError("Symbols should be nonnegative")
        if self.n_features is not None:
            if X.size and self.n_features - 1 < X.max():
                raise ValueError("Largest symbol is %d but the model only emits symbols up "
                                 "to %d" % (X.max(), self.n_features - 1))
        elif X.size:
            self.n_features = int(X.max()) + 1

    def _check(self):
        em = super()._check()
        if self.n_features is not None and em.n_values[0] != self.n_features:
            raise ValueError("emissionprob_ has %d symbols but n_features=%r"
                             % (em.n_values[0], self.n_features))
        return em
