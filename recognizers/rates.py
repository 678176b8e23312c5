"""Sample rates of models and streams: time constants in seconds, and conversions.

A recognizer learns per-frame quantities: a transition matrix is the chance of
moving on between two frames, a window counts frames.  A model trained at 50 Hz
run on a 100 Hz stream would expect activities to last half as long.  A model
file therefore records the rate it was trained at (``sample_rate_hz``) and its
time constants in seconds, and :meth:`recognizers.base.Recognizer.at_rate`
converts a model to another rate, or refuses, saying why.

Converting a Markov chain: if ``A`` is the transition matrix between frames
``1/f`` seconds apart, the chain between frames ``1/(r f)`` apart is the
``r``-th root ``A^(1/r)`` (exact for the persistence matrix of thesis eq 6.13,
whose fractional powers are again persistence matrices; for other matrices the
principal root, clipped to valid probabilities): two steps of the converted
chain at 100 Hz are one step of the original at 50 Hz, so the activity dynamics
in seconds are kept.
"""
from __future__ import annotations

import numpy as np

#: Rate assumed for model files written before they recorded one: 50 Hz was the
#: only rate WalkerLab trained at (the thesis's rate and every default) until then.
LEGACY_RATE_HZ = 50.0


class RateWarning(UserWarning):
    """A model file does not say its sample rate, so one is assumed."""


def transmat_at_rate(transmat, factor: float) -> np.ndarray:
    """The transition matrix between frames ``factor`` times as frequent: ``A^(1/factor)``.

    ``factor`` > 1: a faster stream (50 -> 100 Hz is 2).  Rows stay stochastic;
    ``transmat_at_rate(A, 2) @ transmat_at_rate(A, 2) == A`` where that root is a
    valid transition matrix.
    """
    from scipy.linalg import fractional_matrix_power

    A = np.asarray(transmat, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError("a transition matrix must be square, got shape %s" % (A.shape,))
    if not factor > 0:
        raise ValueError("the rate factor must be positive, got %r" % (factor,))
    if factor == 1:
        return A.copy()
    B = np.real(fractional_matrix_power(A, 1.0 / factor))
    B = np.clip(B, 0.0, None)
    B /= B.sum(axis=1, keepdims=True)
    return B


def persistence_tau_at_rate(tau: float, n_states: int, factor: float) -> float:
    """The eq-6.13 ``tau`` whose persistence matrix is the ``factor``-th root of ``tau``'s.

    The persistence matrix has eigenvalues 1 and ``lam = (tau - 1) / (N + tau - 1)``;
    its root has ``lam ** (1 / factor)``, i.e. ``tau' = 1 + N lam' / (1 - lam')``.
    """
    n = int(n_states)
    lam = (tau - 1.0) / (n + tau - 1.0)
    if n < 2 or lam <= 0:
        return float(tau)  # one state, or no persistence: nothing depends on the rate
    lam2 = lam ** (1.0 / factor)
    return float(1.0 + n * lam2 / (1.0 - lam2))


def mean_stay_s(transmat, rate_hz: float) -> np.ndarray:
    """Expected time in each state before leaving it, seconds: ``1 / ((1 - A_kk) f)``."""
    d = np.clip(np.diag(np.asarray(transmat, dtype=np.float64)), 0.0, 1.0 - 1e-15)
    return 1.0 / ((1.0 - d) * float(rate_hz))
