"""Synthetic labelled sequence tasks for the hidden-state models (tests and benchmarks)."""
from __future__ import annotations

import numpy as np

__all__ = ["make_two_hmm_task"]


def make_two_hmm_task(rng, n: int, T: int = 30):
    """Paper 000's synthetic task (digest 000-6): ``n`` sequences of ``T`` frames, labels
    alternating 0/1, drawn from two 1-D Gaussian HMMs of four states each that share two
    of their states (means 0..10, sd 0.5, stay 0.7). Returns ``(X, y)``: a list of
    (T, 1) arrays scaled to about [-1, 1] (signed: encode with ``encode_signed``) and
    an int array of labels.
    """
    means = np.array([0, 2, 4, 6, 8, 10.0])
    A = np.full((4, 4), 0.1)
    np.fill_diagonal(A, 0.7)
    X, y = [], []
    for i in range(n):
        c = i % 2
        states = [0, 1, 2, 3] if c == 0 else [2, 3, 4, 5]
        s, xs = rng.integers(4), []
        for _ in range(T):
            xs.append(rng.normal(means[states[s]], 0.5))
            s = rng.choice(4, p=A[s])
        X.append((np.array(xs)[:, None] - 5.0) / 5.0)
        y.append(c)
    return X, np.array(y)
