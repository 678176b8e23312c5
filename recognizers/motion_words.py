"""Motion words: a k-means codebook over short windows of walker features.

A *motion word* is the nearest centre of a k-means codebook to a standardised
description of a short stretch of a recording; a *document* is a run of
consecutive words counted as a bag of words, which a topic model (LDA, the
supervised HDP) reads.  Two users share the codebook:

* ``host/topics.py`` (``walkerlab topics``) describes half-second windows by the
  latent map's named window features (events and statistics in physical units)
  and learns LDA topics over 10-s documents;
* the ``"shdp"`` recognizer (``recognizers/shdp_recognizer.py``) describes sub-windows of
  the recognizer's frames (any feature set) by :func:`subwindow_stats` and
  classifies documents of a few seconds with a supervised HDP.

Arrays only: no recording, host or device code.
"""
from __future__ import annotations

import numpy as np

__all__ = ["MotionCodebook", "fit_codebook", "subwindow_stats", "bag_of_words",
           "STAT_NAMES"]

#: The statistics :func:`subwindow_stats` gives each feature, in column order.
STAT_NAMES = ("mean", "std")


def subwindow_stats(Z: np.ndarray, length: int) -> np.ndarray:
    """Per-feature mean and standard deviation of consecutive sub-windows.

    ``Z`` (T, d) standardised frames without NaN, cut into ``T // length``
    non-overlapping sub-windows of ``length`` frames (a trailing partial one is
    dropped).  Returns (T // length, 2 d): the d means, then the d standard
    deviations, of each sub-window.
    """
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2:
        raise ValueError("frames must be 2-D (n_frames, n_features), got shape %s"
                         % (Z.shape,))
    length = int(length)
    if length < 1:
        raise ValueError("a sub-window needs at least one frame, got %d" % length)
    n = Z.shape[0] // length
    blocks = Z[:n * length].reshape(n, length, Z.shape[1])
    return np.concatenate([blocks.mean(axis=1), blocks.std(axis=1)], axis=1)


def bag_of_words(words: np.ndarray, doc: np.ndarray, n_words: int) -> np.ndarray:
    """(n_docs, n_words) counts of each document's words; ``doc`` (n,) is each word's
    document index (documents 0 .. doc.max())."""
    words = np.asarray(words, dtype=np.int64)
    doc = np.asarray(doc, dtype=np.int64)
    counts = np.zeros((int(doc.max()) + 1 if len(doc) else 0, int(n_words)), dtype=np.int64)
    np.add.at(counts, (doc, words), 1)
    return counts


class MotionCodebook:
    """Standardisation and k-means centres: ``words(F)`` is the nearest centre of each
    standardised row of ``F``.

    ``centres`` (n_words, d) live in standardised units; ``mean`` and ``scale`` (d,)
    standardise a row (``(F - mean) / scale``).
    """

    def __init__(self, centres, mean, scale):
        self.centres = np.asarray(centres, dtype=np.float64)
        self.mean = np.asarray(mean, dtype=np.float64)
        self.scale = np.asarray(scale, dtype=np.float64)
        d = self.centres.shape[1] if self.centres.ndim == 2 else -1
        if (self.centres.ndim != 2 or len(self.centres) < 1 or self.mean.shape != (d,)
                or self.scale.shape != (d,)):
            raise ValueError("codebook arrays have inconsistent shapes: centres %s, mean %s, "
                             "scale %s" % (self.centres.shape, self.mean.shape,
                                           self.scale.shape))
        if not (np.all(np.isfinite(self.centres)) and np.all(np.isfinite(self.mean))
                and np.all(self.scale > 0) and np.all(np.isfinite(self.scale))):
            raise ValueError("codebook arrays must be finite, with positive scales")

    @property
    def n_words(self) -> int:
        return len(self.centres)

    def standardise(self, F) -> np.ndarray:
        return (np.asarray(F, dtype=np.float64) - self.mean) / self.scale

    def words(self, F) -> np.ndarray:
        """The word (index of the nearest centre) of each row of ``F`` (n, d)."""
        Z = self.standardise(F)
        if Z.ndim != 2 or Z.shape[1] != self.centres.shape[1]:
            raise ValueError("rows have %s columns, the codebook %d"
                             % (Z.shape[1:] or "?", self.centres.shape[1]))
        # |z - c|^2 = |z|^2 - 2 z.c + |c|^2; |z|^2 is the same for every centre.
        d2 = (self.centres ** 2).sum(axis=1)[None, :] - 2.0 * Z @ self.centres.T
        return np.argmin(d2, axis=1)

    def to_arrays(self, prefix: str = "") -> dict[str, np.ndarray]:
        return {prefix + "centres": self.centres, prefix + "mean": self.mean,
                prefix + "scale": self.scale}

    @classmethod
    def from_arrays(cls, arrays, prefix: str = "") -> "MotionCodebook":
        return cls(arrays[prefix + "centres"], arrays[prefix + "mean"],
                   arrays[prefix + "scale"])


def fit_codebook(F, n_words: int, *, random_state=0, n_init: int = 4) -> MotionCodebook:
    """Standardise the rows of ``F`` (n, d) and cluster them into ``n_words`` words with
    scikit-learn's ``KMeans`` (seeded, ``n_init`` restarts, one thread)."""
    from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_limits

    F = np.asarray(F, dtype=np.float64)
    if F.ndim != 2 or not np.all(np.isfinite(F)):
        raise ValueError("codebook rows must be a finite 2-D array, got shape %s"
                         % (F.shape,))
    if len(F) < n_words:
        raise ValueError("%d rows cannot make a codebook of %d words" % (len(F), n_words))
    mean, scale = F.mean(axis=0), F.std(axis=0)
    scale[~(scale > 0)] = 1.0
    with threadpool_limits(1):  # KMeans' OpenMP pool is ~20x slower on a busy machine
        km = KMeans(int(n_words), n_init=n_init, random_state=random_state).fit(
            (F - mean) / scale)
    return MotionCodebook(km.cluster_centers_, mean, scale)
