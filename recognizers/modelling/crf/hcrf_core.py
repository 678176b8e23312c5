"""Finite hidden-state CRF (HCRF) cores: functions of arrays (paper 000, finite model).

A sequence x_1..T with one class label y is explained by a hidden chain over
S = n_classes * n_hidden states; states ``c*H .. c*H+H-1`` belong to class c.
With frame scores U = X @ W, start scores s and transition scores A,

    p(y | x) = Z_y(x) / sum_c Z_c(x),

where Z_c sums exp(score) over the hidden paths whose states all belong to
class c (transitions across class blocks are forbidden). Both are chain partition functions, computed with
:func:`recognizers.modelling.chain.smooth` (log space, ragged via lengths).
"""
from __future__ import annotations

import numpy as np

from .. import chain


def class_mask(n_classes: int, n_hidden: int) -> np.ndarray:
    """(C, S) additive log-mask: 0 on class c's hidden states, -inf elsewhere."""
    S = n_classes * n_hidden
    m = np.full((n_classes, S), -np.inf)
    for c in range(n_classes):
        m[c, c * n_hidden:(c + 1) * n_hidden] = 0.0
    return m


def block_transitions(A, n_hidden):
    """A with cross-class entries set to -inf: hidden paths never switch class,
    so the free chain's partition equals sum_c Z_c (Quattoni et al.'s HCRF)."""
    n_classes = A.shape[0] // n_hidden
    blocks = np.kron(np.eye(n_classes), np.ones((n_hidden, n_hidden))) > 0
    return np.where(blocks, A, -np.inf)


def class_log_partitions(X, W, s, A, lengths, n_classes, n_hidden):
    """(N, C) array of log Z_c(x_n) per sequence n and class c."""
    A = block_transitions(A, n_hidden)
    U = np.ascontiguousarray(X @ W)
    mask = class_mask(n_classes, n_hidden)
    offsets = chain.lengths_to_offsets(U.shape[0], lengths)
    out = np.empty((len(offsets) - 1, n_classes))
    for n in range(len(offsets) - 1):
        Un = U[offsets[n]:offsets[n + 1]]
        for c in range(n_classes):
            out[n, c] = chain.log_likelihood(s + mask[c], A, Un + mask[c])
    return out


def predict_log_proba(X, W, s, A, lengths, n_classes, n_hidden):
    """(N, C) log p(y = c | x_n): class partitions normalised per sequence."""
    L = class_log_partitions(X, W, s, A, lengths, n_classes, n_hidden)
    m = L.max(axis=1, keepdims=True)
    return L - (m + np.log(np.exp(L - m).sum(axis=1, keepdims=True)))


def hcrf_nll(X, W, s, A, y, lengths, n_hidden):
    """Negative conditional log-likelihood sum_n log Z(x_n) - log Z_{y_n}(x_n) and its gradient.

    Parameters
    ----------
    X : (T, D) frame features of the concatenated sequences
    W : (D, S) feature weights, s : (S,) start scores, A : (S, S) transition scores
    y : (N,) int class of each sequence, lengths : (N,) sequence lengths

    Returns
    -------
    (nll, dW, ds, dA): the gradient is E_{p(h|x)}[features] - E_{p(h|x,y)}[features];
    dA is zero off the class blocks (those transitions are not in the model).
    """
    A = block_transitions(A, n_hidden)
    S = W.shape[1]
    n_classes = S // n_hidden
    y = np.asarray(y, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    U = np.ascontiguousarray(X @ W)
    offsets = chain.lengths_to_offsets(U.shape[0], lengths)
    first = offsets[:-1]
    # Free chain: Z over all hidden paths of every sequence at once.
    free = chain.smooth(s, A, U, lengths)
    # Clamped chain: frames of sequence n restricted to class y_n's block.
    mask = class_mask(n_classes, n_hidden)
    frame_class = np.repeat(y, lengths)
    Uy = U + mask[frame_class]
    # Start scores differ per sequence only through the mask, already on U_1;
    # s enters as log_pi for all sequences.
    clamp = chain.smooth(s, A, Uy, lengths)
    nll = free.loglik - clamp.loglik
    R = free.posterior - clamp.posterior
    dW = X.T @ R
    ds = R[first].sum(axis=0)
    dA = free.trans_counts - clamp.trans_counts
    return nll, dW, ds, dA
