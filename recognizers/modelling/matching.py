"""Mapping latent states of an unsupervised model to activities (thesis 6.6.4).

The thesis maps "each latent state ... with the activity that it is matched with
most frequently" (majority co-occurrence, many states may share an activity).
The alternative is a one-to-one assignment maximising the total co-occurrence
(Hungarian method, :func:`scipy.optimize.linear_sum_assignment`), which is also
how learned parameters are compared with true ones up to label permutation.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["cooccurrence", "majority_mapping", "hungarian_mapping", "map_states",
           "mapping_matrix"]


def cooccurrence(states, labels, n_states: int, n_classes: int) -> np.ndarray:
    """Co-occurrence counts ``C[k, c]`` (n_states, n_classes).

    ``states`` is either a path (T,) of ints (hard counts) or posteriors
    (T, n_states) (soft counts); ``labels`` (T,) ints in ``0 .. n_classes - 1``.
    """
    labels = np.asarray(labels, dtype=np.int64)
    states = np.asarray(states)
    if labels.ndim != 1 or (labels.size and (labels.min() < 0 or labels.max() >= n_classes)):
        raise ValueError("labels must be (T,) ints in 0..%d" % (n_classes - 1))
    C = np.zeros((n_states, n_classes))
    if states.ndim == 1:
        if states.shape != labels.shape:
            raise ValueError("states %s and labels %s differ in length"
                             % (states.shape, labels.shape))
        if states.size and (states.min() < 0 or states.max() >= n_states):
            raise ValueError("states must be ints in 0..%d" % (n_states - 1))
        np.add.at(C, (states.astype(np.int64), labels), 1.0)
    elif states.ndim == 2:
        if states.shape != (labels.size, n_states):
            raise ValueError("posteriors must have shape (%d, %d), got %s"
                             % (labels.size, n_states, states.shape))
        for c in range(n_classes):
            C[:, c] = states[labels == c].sum(axis=0)
    else:
        raise ValueError("states must be a path (T,) or posteriors (T, K)")
    return C


def majority_mapping(C) -> np.ndarray:
    """``state -> class``: the class each state co-occurs with most (ties: lowest index).

    A state that never occurs maps to the most frequent class overall.
    """
    C = np.asarray(C, dtype=np.float64)
    out = C.argmax(axis=1)
    empty = C.sum(axis=1) <= 0
    if empty.any():
        out[empty] = int(C.sum(axis=0).argmax())
    return out.astype(np.int64)


def hungarian_mapping(C) -> np.ndarray:
    """``state -> class`` one-to-one, maximising the matched co-occurrence.

    With more states than classes, every class gets one state and the
    remaining states fall back to :func:`majority_mapping`; with fewer, some
    classes are never predicted.
    """
    C = np.asarray(C, dtype=np.float64)
    rows, cols = linear_sum_assignment(C, maximize=True)
    out = majority_mapping(C)
    out[rows] = cols
    return out.astype(np.int64)


def map_states(C, method: str = "majority") -> np.ndarray:
    """``"majority"`` (thesis) or ``"hungarian"`` mapping of a co-occurrence matrix."""
    if method == "majority":
        return majority_mapping(C)
    if method == "hungarian":
        return hungarian_mapping(C)
    raise ValueError("state mapping must be 'majority' or 'hungarian', got %r" % (method,))


def mapping_matrix(mapping, n_classes: int) -> np.ndarray:
    """One-hot (n_states, n_classes): posteriors over states @ it = posteriors over classes."""
    mapping = np.asarray(mapping, dtype=np.int64)
    M = np.zeros((mapping.size, n_classes))
    M[np.arange(mapping.size), mapping] = 1.0
    return M


def hungarian_error(states, labels) -> float:
    """Segmentation error after one-to-one (Hungarian) matching of states to labels.

    Frames in states left unmatched (more states than labels) count as errors,
    as in the segmentation error of Chatzis and Kosmopoulos.

    References
    ----------
    Chatzis and Kosmopoulos, "A Latent Manifold Markovian Dynamics Gaussian Process",
    IEEE Transactions on Neural Networks and Learning Systems 26(1), 2015.
    """
    states = np.asarray(states, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    if states.shape != labels.shape or states.ndim != 1 or not states.size:
        raise ValueError("states and labels must be non-empty (T,) int arrays of equal length")
    C = cooccurrence(states, labels, int(states.max()) + 1, int(labels.max()) + 1)
    rows, cols = linear_sum_assignment(C, maximize=True)
    return float(1.0 - C[rows, cols].sum() / states.size)
