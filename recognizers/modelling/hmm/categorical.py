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

* :class:`CategoricalEmissions`: the emission component
  (``log_likelihood``, ``init_stats``, ``accumulate``, ``m_step``) over typed
  :class:`CategoricalStats`, so EM and Gibbs can reuse it with soft or sampled
  state assignments;
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

import dataclasses
import numbers

import numba
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


# --------------------------------------------------------------------------- kernels


@numba.njit(cache=True)
def _emission_row_into(sym_row, log_table, out):
    """out[k] = sum_s log_table[s, sym_row[s], k] (sensors in order)."""
    k = out.shape[0]
    for j in range(k):
        out[j] = 0.0
    for s in range(sym_row.shape[0]):
        row = log_table[s, sym_row[s]]
        for j in range(k):
            out[j] += row[j]


@numba.njit(cache=True)
def _emission_rows_into(sym, log_table, out):
    """``_emission_row_into`` for every frame (same summation order, so equal results):
    whole contiguous table rows added per sensor, which the compiler vectorises."""
    k = out.shape[1]
    n_s = sym.shape[1]
    if n_s == 0:
        out[:] = 0.0
        return
    for t in range(sym.shape[0]):
        o = out[t]
        row = log_table[0, sym[t, 0]]
        for j in range(k):
            o[j] = 0.0 + row[j]
        for s in range(1, n_s):
            row = log_table[s, sym[t, s]]
            for j in range(k):
                o[j] += row[j]


def _out_of_range(n_values, allow_missing: bool) -> str:
    if allow_missing:
        return ("symbols out of range: sensor s takes 0..%s (the last is 'missing')"
                % np.asarray(n_values).tolist())
    return ("symbols out of range: sensor s takes 0..%s; to mark missing readings with "
            "the symbol n_values[s], pass missing='sentinel'"
            % (np.asarray(n_values) - 1).tolist())


@numba.njit(cache=True)
def _symbols_in_range(sym, n_values):
    """Every ``0 <= sym[t, s] <= n_values[s]`` (one pass, no temporaries)."""
    for t in range(sym.shape[0]):
        for s in range(sym.shape[1]):
            v = sym[t, s]
            if v < 0 or v > n_values[s]:
                return False
    return True


@numba.njit(cache=True)
def _accumulate_soft(sym, post, missing, counts):
    for t in range(sym.shape[0]):
        for s in range(sym.shape[1]):
            e = sym[t, s]
            if e == missing[s]:
                continue
            for k in range(post.shape[1]):
                counts[s, k, e] += post[t, k]


@numba.njit(cache=True)
def _accumulate_hard(sym, states, missing, counts):
    for t in range(sym.shape[0]):
        k = states[t]
        for s in range(sym.shape[1]):
            e = sym[t, s]
            if e != missing[s]:
                counts[s, k, e] += 1.0


# --------------------------------------------------------------------------- parameters


def normalize_counts(counts, pseudocount: float, valid=None) -> np.ndarray:
    """``(counts + pseudocount) / row total`` along the last axis.

    ``valid`` (same shape, bool) restricts both the pseudo-counts and the
    normalisation to valid entries; invalid entries become 0.
    """
    c = np.asarray(counts, dtype=np.float64)
    if valid is None:
        num = c + pseudocount
    else:
        num = np.where(valid, c + pseudocount, 0.0)
    tot = num.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / tot
    return np.where(tot > 0, out, 0.0)


def persistence_transmat(n_states: int, tau: float) -> np.ndarray:
    """Thesis eq 6.13: ``tau / (N + tau - 1)`` on the diagonal, ``1 / (N + tau - 1)`` off it."""
    if n_states < 1:
        raise ValueError("n_states must be >= 1, got %r" % (n_states,))
    if not tau > 0:
        raise ValueError("tau must be > 0, got %r" % (tau,))
    denom = n_states + tau - 1.0
    A = np.full((n_states, n_states), 1.0 / denom)
    np.fill_diagonal(A, tau / denom)
    return A


def _log(p) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(p)


# --------------------------------------------------------------------------- emissions


def _check_n_values(n_values) -> np.ndarray:
    nv = np.asarray(n_values)
    if nv.ndim != 1 or nv.size == 0 or nv.dtype.kind not in "iu" or np.any(nv < 1):
        raise ValueError("n_values must be a non-empty 1-D array of ints >= 1, got %r"
                         % (n_values,))
    return np.ascontiguousarray(nv, dtype=np.int64)


@dataclasses.dataclass(slots=True)
class CategoricalStats:
    """Sufficient statistics of :class:`CategoricalEmissions`.

    counts : (n_sensors, n_components, max(n_values) + 1) float
        (Expected) number of frames in state k showing symbol e on sensor s.
        Missing readings (symbol ``n_values[s]``) are never counted.
    n_values : (n_sensors,) int64
    """

    counts: np.ndarray
    n_values: np.ndarray

    @classmethod
    def zeros(cls, n_components: int, n_values) -> "CategoricalStats":
        nv = _check_n_values(n_values)
        return cls(np.zeros((nv.size, int(n_components), int(nv.max()) + 1)), nv)

    def add(self, X, *, posterior=None, states=None) -> None:
        """Count the frames of symbols ``X`` (T, n_sensors) in place.

        Weighted either by ``posterior`` (T, K) (EM's soft counts) or by
        ``states`` (T,) ints (labels, Gibbs samples).  ``X`` must hold valid
        symbols (from the discretiser or ``check_symbols``).
        """
        X = np.ascontiguousarray(X, dtype=np.int64)
        if X.ndim != 2 or X.shape[1] != self.n_values.size:
            raise ValueError("symbols must have shape (T, %d), got %s"
                             % (self.n_values.size, X.shape))
        K = self.counts.shape[1]
        if posterior is not None:
            post = np.ascontiguousarray(posterior, dtype=np.float64)
            if post.shape != (X.shape[0], K):
                raise ValueError("posterior has shape %s, expected (%d, %d)"
                                 % (post.shape, X.shape[0], K))
            _accumulate_soft(X, post, self.n_values, self.counts)
        elif states is not None:
            st = np.ascontiguousarray(states, dtype=np.int64)
            if st.shape != (X.shape[0],) or (st.size and (st.min() < 0 or st.max() >= K)):
                raise ValueError("states must be (%d,) ints in 0..%d" % (X.shape[0], K - 1))
            _accumulate_hard(X, st, self.n_values, self.counts)
        else:
            raise ValueError("add() needs posterior or states")


class CategoricalEmissions:
    """Independent categorical emissions, one per sensor, given the state.

    Symbols of sensor ``s`` are ``0 .. n_values[s] - 1``; the symbol
    ``n_values[s]`` means *missing* and has likelihood 1 in every state.

    Parameters
    ----------
    emissionprob : (n_sensors, n_components, >= max(n_values)) array
        ``P(e^s = e | y = k)`` over ``e < n_values[s]``; entries from
        ``n_values[s]`` on are ignored.

    Attributes
    ----------
    emissionprob : (n_sensors, n_components, max(n_values) + 1)
        Zero from ``n_values[s]`` on (the missing symbol and padding).
    log_table : (n_sensors, max(n_values) + 1, n_components)
        ``log P(e | k)`` laid out for lookups: 0 at the missing symbol,
        ``-inf`` in the padding.
    """

    def __init__(self, emissionprob, n_values):
        nv = _check_n_values(n_values)
        B = np.asarray(emissionprob, dtype=np.float64)
        if B.ndim != 3 or B.shape[0] != nv.size or B.shape[1] < 1 or B.shape[2] < nv.max():
            raise ValueError("emissionprob has shape %s; expected (%d, K, >= %d)"
                             % (B.shape, nv.size, nv.max()))
        M = int(nv.max()) + 1  # one more for the missing symbol
        prob = np.zeros((nv.size, B.shape[1], M))
        for s, n in enumerate(nv):
            prob[s, :, :n] = B[s, :, :n]
        if np.any(prob < 0) or not np.all(np.isfinite(prob)):
            raise ValueError("emissionprob must be finite and non-negative")
        self.emissionprob = prob
        self.n_values = nv
        table = np.full((nv.size, M, B.shape[1]), -np.inf)
        for s, n in enumerate(nv):
            table[s, :n, :] = _log(prob[s, :, :n]).T
            table[s, n, :] = 0.0  # missing reading: no evidence
        self.log_table = np.ascontiguousarray(table)

    @property
    def n_sensors(self) -> int:
        return int(self.n_values.size)

    @property
    def n_components(self) -> int:
        return int(self.emissionprob.shape[1])

    @property
    def missing_symbols(self) -> np.ndarray:
        """The symbol of a missing reading, per sensor (= ``n_values``)."""
        return self.n_values

    def check_symbols(self, X, *, allow_missing: bool = True) -> np.ndarray:
        """``X`` as int64 (T, n_sensors), every symbol in range, else ``ValueError``.

        ``allow_missing``: the symbol ``n_values[s]`` (a missing reading) is in range.
        """
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_sensors:
            raise ValueError("symbols must have shape (T, %d), got %s"
                             % (self.n_sensors, X.shape))
        if X.size and X.dtype.kind not in "iu":
            raise ValueError("symbols must be integers, got dtype %s" % X.dtype)
        X = np.ascontiguousarray(X, dtype=np.int64)
        if X.size and not _symbols_in_range(X, self.n_values - (not allow_missing)):
            raise ValueError(_out_of_range(self.n_values, allow_missing))
        return X

    def log_likelihood(self, X, out=None) -> np.ndarray:
        """``log p(x_t | y_t = k)`` (T, n_components) for symbols ``X`` (T, n_sensors).

        ``out``: optional C-contiguous float64 (T, n_components) buffer to fill.
        """
        X = self.check_symbols(X)
        shape = (X.shape[0], self.n_components)
        if out is None:
            out = np.empty(shape)
        elif out.shape != shape or out.dtype != np.float64 or not out.flags.c_contiguous:
            raise ValueError("out must be a C-contiguous float64 array of shape %s" % (shape,))
        _emission_rows_into(X, self.log_table, out)
        return out

    def n_parameters(self) -> int:
        """Free parameters: ``sum_s K (n_values[s] - 1)``."""
        return int(self.n_components * (self.n_values - 1).sum())

    def valid_mask(self) -> np.ndarray:
        """(n_sensors, 1, max(n_values) + 1) bool: the value symbols of each sensor."""
        M = self.emissionprob.shape[2]
        return (np.arange(M)[None, :] < self.n_values[:, None])[:, None, :]

    def sample(self, states, rng) -> np.ndarray:
        """One symbol per sensor for each state in ``states``: (n, n_sensors) int64."""
        states = np.asarray(states, dtype=np.int64)
        out = np.empty((states.size, self.n_sensors), dtype=np.int64)
        for s, n in enumerate(self.n_values):
            cum = np.cumsum(self.emissionprob[s, :, :n], axis=1)
            u = rng.random(states.size) * cum[states, -1]
            out[:, s] = np.minimum((u[:, None] >= cum[states]).sum(axis=1), n - 1)
        return out

    def init_stats(self) -> CategoricalStats:
        """Zero statistics shaped for this component."""
        return CategoricalStats.zeros(self.n_components, self.n_values)

    def accumulate(self, stats: CategoricalStats, X, posterior) -> None:
        """E-step accumulation: add ``posterior``-weighted symbol counts of ``X``."""
        stats.add(self.check_symbols(X), posterior=posterior)

    def m_step(self, stats: CategoricalStats, pseudocount: float = 1.0) -> "CategoricalEmissions":
        """New emissions from ``stats`` (a new object; ``self`` is unchanged)."""
        return type(self).from_stats(stats, pseudocount)

    @classmethod
    def from_stats(cls, stats: CategoricalStats,
                   pseudocount: float = 1.0) -> "CategoricalEmissions":
        """``max(counts + pseudocount, 0) / total`` over each sensor's value symbols.

        With ``pseudocount > 0`` no symbol ever gets probability 0.  A negative
        pseudo-count (a Dirichlet concentration below 1) clips at 0 as in
        hmmlearn.
        """
        nv = stats.n_values
        S, K, M = stats.counts.shape
        valid = np.broadcast_to(np.arange(M)[None, None, :] < nv[:, None, None], (S, K, M))
        counts = stats.counts if pseudocount >= 0 else np.maximum(stats.counts + pseudocount,
                                                                  0.0) - pseudocount
        return cls(normalize_counts(counts, pseudocount, valid), nv)


# --------------------------------------------------------------------------- core HMM


@dataclasses.dataclass(slots=True)
class SupervisedCounts:
    """Counts of labelled sequences (thesis 6.12, 6.14).

    start : (K,) number of sequences starting in each state
    trans : (K, K) ``trans[i, j]`` = number of steps ``i -> j``
    emission : :class:`CategoricalStats`
    """

    start: np.ndarray
    trans: np.ndarray
    emission: CategoricalStats

    @classmethod
    def zeros(cls, n_components: int, n_values) -> "SupervisedCounts":
        K = int(n_components)
        return cls(np.zeros(K), np.zeros((K, K)), CategoricalStats.zeros(K, n_values))

    def add(self, symbols, states) -> None:
        """Count one labelled sequence (T, n_sensors) symbols, (T,) states in place."""
        y = np.asarray(states, dtype=np.int64)
        if y.size == 0:
            return
        self.start[y[0]] += 1
        np.add.at(self.trans, (y[:-1], y[1:]), 1.0)
        self.emission.add(symbols, states=y)


def count_supervised(symbols, states, n_components: int, n_values) -> SupervisedCounts:
    """Count starts, transitions and emissions of labelled symbol sequences.

    ``symbols``: list of (T_i, n_sensors) int arrays; ``states``: list of
    (T_i,) int arrays in ``0 .. n_components - 1``.
    """
    counts = SupervisedCounts.zeros(n_components, n_values)
    for X, y in zip(symbols, states):
        counts.add(X, y)
    return counts


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
