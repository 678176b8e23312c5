"""Equal-frequency discretisation of sensor features (thesis 6.2 and 6.6, M = 20).

Each feature column is cut at empirical quantiles of its training data so the
bins hold about the same number of training readings.  Symbols of column ``j``:

* ``0 .. n_bins_[j] - 1``: ordered value bins; bin ``b`` holds
  ``edges[b - 1] <= x < edges[b]`` (bin 0 everything below the first edge, the
  last bin everything from the last edge up, ``+inf`` included, ``-inf`` in bin 0);
* ``n_bins_[j]`` (``missing_symbols_[j]``): the dedicated *missing* symbol for
  NaN.  The HMM treats it as "sensor not observed" (it carries no evidence).

Ties and constant columns: a cut never splits equal values, so a column with
heavy ties (a speed of exactly 0 for 40 % of the time) or a constant column
gets fewer bins; never an empty training bin and never an error.  Every edge is
a training value, and every bin contains at least one training reading.
Infinite training values are ignored when placing the cuts (they still fall in
the extreme bins).
"""
from __future__ import annotations

import numba
import numpy as np

from recognizers.base import NotFittedError

__all__ = ["EqualFrequencyDiscretizer"]


@numba.njit(cache=True)
def _bin_row_into(x, edges, offsets, missing, out):
    """Symbols for one frame ``x`` (n_features,) into ``out`` (int64)."""
    for j in range(x.shape[0]):
        v = x[j]
        if v != v:  # NaN
            out[j] = missing[j]
            continue
        lo = offsets[j]
        hi = offsets[j + 1]
        # Number of edges <= v (searchsorted side='right'), by bisection.
        a = lo
        b = hi
        while a < b:
            mid = (a + b) >> 1
            if edges[mid] <= v:
                a = mid + 1
            else:
                b = mid
        out[j] = a - lo


@numba.njit(cache=True)
def _bin_rows_into(X, edges, offsets, missing, out):
    for t in range(X.shape[0]):
        _bin_row_into(X[t], edges, offsets, missing, out[t])


def _column_edges(col: np.ndarray, n_bins: int) -> np.ndarray:
    """Cut points of one column: training values at ranks ``round(i n / M)``."""
    v = np.sort(col[np.isfinite(col)])
    n = v.size
    if n == 0:
        return np.empty(0)
    ranks = np.clip(np.round(np.arange(1, n_bins) * n / n_bins).astype(np.int64), 1, n - 1)
    # Edge = the first value of the upper bin, so tied values are never split
    # and each kept edge starts a non-empty bin; edges at the minimum would
    # leave bin 0 empty, so they are dropped.
    edges = np.unique(v[ranks])
    return edges[edges > v[0]]


class EqualFrequencyDiscretizer:
    """Per-column equal-frequency bins.

    Parameters
    ----------
    n_bins : int, default 20
        Target number of value bins per column (the thesis's ``M``); columns
        with ties get fewer.

    Attributes (after :meth:`fit`)
    ------------------------------
    edges_ : list of (n_bins_[j] - 1,) float arrays
    n_bins_ : (n_features,) int64, value bins per column
    missing_symbols_ : (n_features,) int64, the symbol used for NaN (= ``n_bins_``)
    n_symbols_ : (n_features,) int64, ``n_bins_ + 1`` (value bins plus missing)
    n_features_in_ : int
    """

    def __init__(self, n_bins: int = 20):
        self.n_bins = n_bins

    def fit(self, X) -> "EqualFrequencyDiscretizer":
        """Place the cuts from training data ``X`` (n_samples, n_features)."""
        n_bins = self.n_bins
        if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
            raise ValueError("n_bins must be an integer >= 1, got %r" % (n_bins,))
        X = self._check_X(X)
        return self.fit_columns(lambda j: X[:, j], X.shape[1])

    def fit_columns(self, column, n_features: int) -> "EqualFrequencyDiscretizer":
        """Place the cuts one column at a time: ``column(j)`` gives feature ``j``'s
        training values (n_samples,).  Same cuts as :meth:`fit` on the matrix of
        those columns, with only one column in memory (streamed training)."""
        n_bins = self.n_bins
        if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
            raise ValueError("n_bins must be an integer >= 1, got %r" % (n_bins,))
        edges = [_column_edges(np.asarray(column(j), dtype=np.float64), int(n_bins))
                 for j in range(int(n_features))]
        self._set_edges(edges)
        return self

    def transform(self, X) -> np.ndarray:
        """Symbols ``(n_samples, n_features)`` int64 for ``X``."""
        self._check_fitted()
        X = self._check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError("X has %d features, the discretizer was fitted with %d"
                             % (X.shape[1], self.n_features_in_))
        out = np.empty(X.shape, dtype=np.int64)
        _bin_rows_into(X, self._edges_flat, self._offsets, self.missing_symbols_, out)
        return out

    def fit_transform(self, X) -> np.ndarray:
        return self.fit(X).transform(X)

    # -- serialisation: plain arrays only, for the npz model file
    def to_arrays(self) -> dict[str, np.ndarray]:
        """The fitted state as plain numeric arrays (``edges``, ``offsets``)."""
        self._check_fitted()
        return {"edges": self._edges_flat.copy(), "offsets": self._offsets.copy()}

    @classmethod
    def from_arrays(cls, arrays: dict, n_bins: int = 20) -> "EqualFrequencyDiscretizer":
        """Rebuild a fitted discretiser from :meth:`to_arrays` output."""
        flat = np.asarray(arrays["edges"], dtype=np.float64)
        offsets = np.asarray(arrays["offsets"], dtype=np.int64)
        if (offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0
                or offsets[-1] != flat.size or np.any(np.diff(offsets) < 0)):
            raise ValueError("inconsistent discretizer arrays (offsets %s, %d edges)"
                             % (offsets, flat.size))
        self = cls(n_bins=n_bins)
        self._set_edges([flat[offsets[j]:offsets[j + 1]] for j in range(offsets.size - 1)])
        return self

    # -- internals
    def _set_edges(self, edges):
        self.edges_ = [np.asarray(e, dtype=np.float64) for e in edges]
        counts = np.array([e.size for e in self.edges_], dtype=np.int64)
        self._offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        self._edges_flat = (np.concatenate(self.edges_) if self.edges_ else np.empty(0)
                            ).astype(np.float64)
        self.n_bins_ = counts + 1
        self.missing_symbols_ = self.n_bins_.copy()
        self.n_symbols_ = self.n_bins_ + 1
        self.n_features_in_ = len(self.edges_)

    def transform_row_into(self, x: np.ndarray, out: np.ndarray) -> None:
        """Symbols of one frame into a preallocated int64 ``out`` (no checks)."""
        _bin_row_into(x, self._edges_flat, self._offsets, self.missing_symbols_, out)

    @property
    def kernel_args(self):
        """``(edges, offsets, missing)`` for the compiled ``_bin_row_into``."""
        return self._edges_flat, self._offsets, self.missing_symbols_

    @staticmethod
    def _check_X(X) -> np.ndarray:
        X = np.asarray(X)
        if X.dtype.kind not in "biuf":
            raise ValueError("X must be numeric, got dtype %s" % X.dtype)
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError("X must be 2-D (n_samples, n_features), got shape %s" % (X.shape,))
        return X

    def _check_fitted(self):
        if not hasattr(self, "edges_"):
            raise NotFittedError("EqualFrequencyDiscretizer is not fitted yet; call fit(X) first")

    def __repr__(self) -> str:
        return "EqualFrequencyDiscretizer(n_bins=%r)" % (self.n_bins,)
