"""Training data read on demand: sequence sources (issue 22, evaluation at fleet scale).

A *source* stands for a list of labelled sequences that need not be in memory at once
(``host.feature_cache.CachedSessions`` reads each from a feature cache on disk):

* ``len(source)``: the number of sequences;
* ``source[i]``: the ``i``-th sequence, an object with ``X`` (T_i, n_features) and
  ``y`` (T_i,) labels, read now (drop it after use);
* ``source.labels(i)``: only the labels of sequence ``i`` (cheap);
* ``source.column(j)``: feature ``j`` of every sequence, concatenated in order
  (one column of the data, not all of it).

A recognizer that can learn from a source one sequence at a time has
``fit_streamed(source, *, feature_set=None)`` giving exactly the model ``fit`` gives on
the same data (``HMMRecognizer``: counts are sums over sequences, and the bin edges
are order statistics of one column at a time).  :func:`fit_source` uses it when it is
there and otherwise reads the whole source into lists and calls ``fit``.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

__all__ = ["ListSource", "fit_source"]


class ListSource:
    """A source over sequences already in memory (tests, and ``fit`` callers)."""

    def __init__(self, sequences, labels):
        self._X = list(sequences)
        self._y = list(labels)
        if len(self._X) != len(self._y):
            raise ValueError("got %d sequences but %d label sequences"
                             % (len(self._X), len(self._y)))

    def __len__(self) -> int:
        return len(self._X)

    def __getitem__(self, i):
        return SimpleNamespace(X=self._X[i], y=self._y[i])

    def labels(self, i):
        return self._y[i]

    def column(self, j) -> np.ndarray:
        parts = []
        for i, X in enumerate(self._X):
            X = np.asarray(X, dtype=np.float64)
            if X.ndim != 2 or X.shape[1] <= j:
                raise ValueError("sequences[%d] has shape %s: it has no feature %d"
                                 % (i, X.shape, j))
            parts.append(X[:, j])
        return np.concatenate(parts)


def fit_source(recognizer, source, *, feature_set=None):
    """Fit ``recognizer`` on a source: streamed if it can, else from lists in memory."""
    if hasattr(recognizer, "fit_streamed"):
        return recognizer.fit_streamed(source, feature_set=feature_set)
    items = [source[i] for i in range(len(source))]
    return recognizer.fit([s.X for s in items], [s.y for s in items], feature_set=feature_set)
