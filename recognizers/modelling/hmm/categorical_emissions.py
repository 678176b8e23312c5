"""The categorical emission component of the discrete HMMs and its supervised counts.

* :class:`CategoricalEmissions`: one categorical per sensor given the state
  (``log_likelihood``, ``init_stats``, ``accumulate``, ``m_step``) over typed
  :class:`CategoricalStats`, so EM and Gibbs reuse it with soft or sampled state
  assignments;
* :class:`SupervisedCounts` / :func:`count_supervised`: start, transition and emission
  counts from labelled sequences (Omar 2016, eqs 6.12, 6.14), turned into
  probabilities by :func:`normalize_counts` with Dirichlet pseudo-counts;
* :func:`persistence_transmat`: the thesis's persistence transition model (eq 6.13).

Symbol ``n_values[s]`` of sensor ``s`` means "missing": log-likelihood 0 in every
state. The HMMs over these pieces are in :mod:`recognizers.modelling.hmm.categorical`.
"""
from __future__ import annotations

import dataclasses

import numba
import numpy as np

__all__ = [
    "CategoricalStats",
    "CategoricalEmissions",
    "SupervisedCounts",
    "count_supervised",
    "persistence_transmat",
    "normalize_counts",
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
