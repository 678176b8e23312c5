"""Exact inference in a linear chain, in log space, compiled with Numba.

Every chain model in WalkerLab (the supervised HMM, the CRF, the BMM-HMM) calls
these functions; no model class contains a recursion of its own.  They are pure:
they take arrays, never model objects, and never modify their inputs.

Notation and axes (``T`` time steps, ``K`` states):

``log_pi``   ``(K,)``     log initial weights, ``log p(y_1 = k)``.
``log_A``    ``(K, K)``   log transition weights, ``log_A[i, j] = log p(y_t = j | y_{t-1} = i)``;
             or ``(T, K, K)`` time-varying: ``log_A[t]`` links step ``t - 1`` to
             step ``t`` and ``log_A[0]`` (and, with ``lengths``, the slice at the
             first step of every sequence) is ignored.
``log_lik``  ``(T, K)``   ``log_lik[t, k] = log p(x_t | y_t = k)`` (an HMM) or any
             state log-potential (a CRF).

Nothing requires the weights to be normalised, so a linear-chain CRF passes
log-potentials and gets ``log Z`` where an HMM gets ``log p(x_1..T)``.  Entries
may be ``-inf`` (impossible starts, transitions or observations); they never
produce NaN.  Inputs must not contain NaN or ``+inf``.

Several sequences are passed as one concatenated ``log_lik`` (and, if
time-varying, ``log_A``) plus ``lengths`` (hmmlearn's convention); each sequence
restarts from ``log_pi`` and the results are concatenated along time, with
scalar results (log-likelihood, Viterbi score, transition counts) summed over
the sequences.

Degenerate evidence (documented, not an error):

* an observation impossible in every state given the past (``-inf``
  normaliser) leaves the filtered posterior at the predictive distribution and
  makes the log-likelihood ``-inf``;
* where the smoothed posterior is undefined because the whole sequence has
  probability zero, the filtered posterior is returned instead, and such steps
  add nothing to the transition counts.

Two numerics are used.  :func:`forward`, :func:`backward`, :func:`viterbi` and
:func:`filter_step` work in log space (``forward`` and ``filter_step`` run the
same compiled step, so streaming reproduces batch filtering bit for bit).
:func:`smooth` and :func:`log_likelihood` with time-invariant transitions use a
*scaled* recursion in linear space (Rabiner scaling with per-step shifts:
``exp(log_lik[t] - max_k log_lik[t])`` and ``exp(log_A - max log_A)``, every
message renormalised), which needs K exponentials per step instead of ~3K and
is several times faster.  Every term it adds is at most 1, so whatever
underflows is below 1e-307 in absolute value; whenever a per-step normaliser
drops below 1e-280 (where such a loss could matter, or the step is impossible)
that sequence is recomputed exactly by the log-space kernels.  The two agree to
rounding (about 1e-13 relative) and both are checked against brute force.

The ``*_into`` kernels (:func:`forward_init_into`, :func:`forward_step_into`,
:func:`transition_exp_into`) are plain ``@numba.njit`` functions that write into
caller-owned buffers, for use from other compiled code (streaming recognizers);
they do no validation.
"""
from __future__ import annotations

import threading
from typing import NamedTuple

import numba
import numpy as np

__all__ = [
    "ForwardResult",
    "BackwardResult",
    "SmoothResult",
    "ViterbiResult",
    "FilterStepResult",
    "forward",
    "backward",
    "smooth",
    "viterbi",
    "filter_step",
    "log_likelihood",
    "sample_path",
    "forward_init_into",
    "forward_step_into",
    "transition_exp_into",
    "lengths_to_offsets",
]



# --------------------------------------------------------------------------- results


class ForwardResult(NamedTuple):
    """Filtering result.

    log_alpha : (T, K) float
        ``log p(y_t = k | x_1..t)`` (normalised: ``exp(log_alpha[t])`` sums to 1).
    loglik : float
        ``log p(x_1..T)`` (``log Z`` for unnormalised potentials), summed over
        sequences when ``lengths`` is given.
    """

    log_alpha: np.ndarray
    loglik: float


class BackwardResult(NamedTuple):
    """Backward messages, rescaled per step for precision.

    log_beta : (T, K) float
        ``log p(x_{t+1..T} | y_t = k)`` minus ``log_scale[t]``; each row has
        ``logsumexp == 0`` (or is all ``-inf`` when the future is impossible).
    log_scale : (T,) float
        Per-step constant: the unscaled message is
        ``log_beta + log_scale[:, None]``; ``log_scale[T - 1] == 0``.
    """

    log_beta: np.ndarray
    log_scale: np.ndarray


class SmoothResult(NamedTuple):
    """Forward-backward result.

    posterior : (T, K) float
        ``p(y_t = k | x_1..T)``; every row sums to 1.
    trans_counts : (K, K) float
        ``sum_t p(y_{t-1} = i, y_t = j | x_1..T)`` over ``t >= 1`` of every
        sequence: the expected transition counts of an EM M-step.
    loglik : float
        ``log p(x_1..T)``, as in :class:`ForwardResult`.
    """

    posterior: np.ndarray
    trans_counts: np.ndarray
    loglik: float


class ViterbiResult(NamedTuple):
    """Most probable state path.

    path : (T,) int64
        ``argmax_y p(y_1..T, x_1..T)``; ties go to the lowest state index.
    score : float
        ``max_y log p(y_1..T, x_1..T)``, summed over sequences.
    """

    path: np.ndarray
    score: float


class FilterStepResult(NamedTuple):
    """One filtering step.

    log_alpha : (K,) float
        ``log p(y_t = k | x_1..t)``, normalised.
    log_norm : float
        ``log p(x_t | x_1..t-1)``; the sum over steps is the log-likelihood.
    """

    log_alpha: np.ndarray
    log_norm: float



# --------------------------------------------------------------------------- kernels

# The kernels live in three modules by transition structure; the wrappers below
# pick one per call.  Private kernels are imported by name because the models'
# own drivers (BMM, the HMM recognizer) call them directly.
from recognizers.modelling.chain.log_kernels import (  # noqa: F401 (re-exported)
    _NEG_INF,
    _TINY,
    _backward_kernel,
    _forward_kernel,
    _normalise_inplace,
    _sample_path_kernel,
    _smooth_kernel,
    _softmax_row,
    _viterbi_kernel,
    forward_init_into,
    forward_step_into,
    transition_exp_into,
)
from recognizers.modelling.chain.persistence_kernels import (  # noqa: F401 (re-exported)
    _loglik_persist_kernel,
    _smooth_persist_kernel,
    _smooth_persist_seq,
    _viterbi_persist_kernel,
    forward_step_persist_into,
    persistence_params,
    persistence_structure,
)
from recognizers.modelling.chain.scaled_kernels import (  # noqa: F401 (re-exported)
    _loglik_scaled_kernel,
    _loglik_scaled_seq,
    _smooth_scaled_kernel,
    _smooth_scaled_seq,
    _transition_scaled,
)

# Below this many states the dense Viterbi step (K^2 branch-free max-adds that
# vectorise) beats the O(K) one (a data-dependent argmax per step): measured on
# 100k frames, K=6 4.0 vs 5.7 ms, K=12 8.6 vs 8.3 ms, K=16 13.1 vs 9.1 ms.  Both
# give the same path and score, so only the speed depends on this.
_VITERBI_PERSIST_MIN_K = 12

# --------------------------------------------------------------------------- wrappers


def lengths_to_offsets(n_samples: int, lengths=None) -> np.ndarray:
    """Sequence boundaries ``(n_seq + 1,)`` int64 from ``lengths``.

    ``lengths=None`` means one sequence.  Raises ``ValueError`` when a length is
    negative or they do not sum to ``n_samples``.
    """
    if lengths is None:
        return np.array([0, n_samples], dtype=np.int64)
    lens = np.asarray(lengths)
    if lens.ndim != 1 or (lens.size and lens.dtype.kind not in "iu"):
        raise ValueError("lengths must be a 1-D array of integers, got %r" % (lengths,))
    lens = lens.astype(np.int64)
    if np.any(lens < 0):
        raise ValueError("lengths must be non-negative, got %s" % lens)
    if int(lens.sum()) != n_samples:
        raise ValueError("lengths sum to %d but there are %d samples"
                         % (int(lens.sum()), n_samples))
    return np.concatenate(([0], np.cumsum(lens))).astype(np.int64)


@numba.njit(cache=True)
def _count_nan_or_posinf(flat):
    """How many entries are NaN or +inf: one compiled, vectorisable pass (numpy's
    isnan + isposinf were 2 ms of a 9 ms Viterbi over 100k x 6)."""
    n = 0
    for i in range(flat.shape[0]):
        n += not (flat[i] < np.inf)
    return n


def _as_f8(a, name, ndim):
    arr = np.ascontiguousarray(a, dtype=np.float64)
    if arr.ndim not in ndim:
        raise ValueError("%s must have %s dimensions, got shape %s"
                         % (name, " or ".join(map(str, ndim)), arr.shape))
    if arr.size and _count_nan_or_posinf(arr.reshape(-1)):
        raise ValueError("%s contains NaN or +inf" % name)
    return arr


def _prepare(log_pi, log_A, log_lik, lengths, need_pi=True):
    log_lik = _as_f8(log_lik, "log_lik", (2,))
    T, K = log_lik.shape
    if K == 0:
        raise ValueError("log_lik has no states (shape %s)" % (log_lik.shape,))
    if need_pi:
        log_pi = _as_f8(log_pi, "log_pi", (1,))
        if log_pi.shape != (K,):
            raise ValueError("log_pi has shape %s, expected (%d,)" % (log_pi.shape, K))
    log_A = _as_f8(log_A, "log_A", (2, 3))
    if log_A.ndim == 2:
        if log_A.shape != (K, K):
            raise ValueError("log_A has shape %s, expected (%d, %d)" % (log_A.shape, K, K))
        log_A3 = log_A.reshape(1, K, K)
    else:
        if log_A.shape != (T, K, K):
            raise ValueError("time-varying log_A has shape %s, expected (%d, %d, %d)"
                             % (log_A.shape, T, K, K))
        # A (1, K, K) array would be read as time-invariant; for T == 1 the
        # only slice is ignored anyway, so this is the same thing.
        log_A3 = log_A
    offsets = lengths_to_offsets(T, lengths)
    return log_pi, log_A3, log_lik, offsets


def forward(log_pi, log_A, log_lik, lengths=None) -> ForwardResult:
    """Filtered log posteriors and the log-likelihood.

    Parameters
    ----------
    log_pi : (K,)
    log_A : (K, K) or (T, K, K)
    log_lik : (T, K)
    lengths : sequence of int, optional
        Lengths of the concatenated sequences (sum ``T``).

    Returns
    -------
    ForwardResult
        ``log_alpha`` (T, K) with ``exp(log_alpha[t]) = p(y_t | x_1..t)`` and
        ``loglik = log p(x_1..T)`` (summed over sequences).
    """
    log_pi, log_A3, log_lik, offsets = _prepare(log_pi, log_A, log_lik, lengths)
    log_alpha = np.empty_like(log_lik)
    loglik = _forward_kernel(log_pi, log_A3, log_lik, offsets, log_alpha)
    return ForwardResult(log_alpha, float(loglik))


def backward(log_A, log_lik, lengths=None) -> BackwardResult:
    """Backward messages ``log p(x_{t+1..T} | y_t)``, stored rescaled.

    See :class:`BackwardResult`: ``log_beta + log_scale[:, None]`` is the
    unscaled message; the last step of every sequence is 0.
    """
    _, log_A3, log_lik, offsets = _prepare(None, log_A, log_lik, lengths, need_pi=False)
    log_beta = np.empty_like(log_lik)
    log_scale = np.empty(log_lik.shape[0])
    _backward_kernel(log_A3, log_lik, offsets, log_beta, log_scale)
    return BackwardResult(log_beta, log_scale)


_WORKSPACE = threading.local()
_WORKSPACE_MAX = 1 << 22  # floats kept per thread between calls (32 MB)


def _scratch(shape) -> np.ndarray:
    """An uninitialised float64 buffer, reused between calls of this thread.

    Large fresh arrays cost page faults on first touch (a few ms per 10^6
    floats), a sizeable part of a forward-backward pass; the buffer never
    leaves this module.
    """
    n = int(np.prod(shape))
    buf = getattr(_WORKSPACE, "buf", None)
    if buf is None or buf.size < n:
        buf = np.empty(n)
        if n <= _WORKSPACE_MAX:
            _WORKSPACE.buf = buf
    return buf[:n].reshape(shape)


def smooth(log_pi, log_A, log_lik, lengths=None, *, out=None) -> SmoothResult:
    """Smoothed one-slice marginals and expected transition counts.

    ``out`` : optional C-contiguous float64 (T, K) array that receives the
    posterior (an EM loop reuses one buffer instead of allocating every
    iteration); it is returned as ``posterior``.

    Returns
    -------
    SmoothResult
        ``posterior`` (T, K) = ``p(y_t | x_1..T)``, ``trans_counts`` (K, K) =
        ``sum_t p(y_{t-1} = i, y_t = j | x)`` over every sequence, ``loglik``.
    """
    log_pi, log_A3, log_lik, offsets = _prepare(log_pi, log_A, log_lik, lengths)
    K = log_lik.shape[1]
    if out is None:
        posterior = np.empty_like(log_lik)
    else:
        posterior = out
        if (not isinstance(out, np.ndarray) or out.shape != log_lik.shape
                or out.dtype != np.float64 or not out.flags.c_contiguous
                or not out.flags.writeable):
            raise ValueError("out must be a writeable C-contiguous float64 array of shape %s"
                             % (log_lik.shape,))
        if np.may_share_memory(out, log_lik):
            raise ValueError("out must not share memory with log_lik")
    xi = np.zeros((K, K))
    ps = persistence_structure(log_A3[0]) if log_A3.shape[0] == 1 else None
    if ps is not None:  # O(K) per step; the counts by one matrix product
        work = _scratch((2,) + log_lik.shape)
        loglik, es, em = _smooth_persist_kernel(log_pi, log_A3[0], ps[0], ps[1], log_lik,
                                                offsets, posterior, xi, work[0], work[1])
        counts = work[1, :-1].T @ work[0, 1:]
        xi += em * counts
        xi[np.diag_indices(K)] += (es - em) * np.diagonal(counts)
        return SmoothResult(posterior, xi, float(loglik))
    if log_A3.shape[0] == 1:
        loglik = _smooth_scaled_kernel(log_pi, log_A3[0], log_lik, offsets, posterior, xi,
                                       _scratch(log_lik.shape))
        return SmoothResult(posterior, xi, float(loglik))
    log_alpha = np.empty_like(log_lik)
    loglik = _forward_kernel(log_pi, log_A3, log_lik, offsets, log_alpha)
    log_beta = np.empty_like(log_lik)
    log_scale = np.empty(log_lik.shape[0])
    _backward_kernel(log_A3, log_lik, offsets, log_beta, log_scale)
    _smooth_kernel(log_A3, log_lik, offsets, log_alpha, log_beta, posterior, xi)
    return SmoothResult(posterior, xi, float(loglik))


def log_likelihood(log_pi, log_A, log_lik, lengths=None) -> float:
    """``log p(x_1..T)`` (summed over sequences) without storing any message.

    The quantity of ``forward(...).loglik``, computed by the scaled recursion
    for time-invariant ``log_A`` (equal to it up to rounding) and by
    :func:`forward` for time-varying ones.
    """
    log_pi, log_A3, log_lik, offsets = _prepare(log_pi, log_A, log_lik, lengths)
    if log_A3.shape[0] == 1:
        ps = persistence_structure(log_A3[0])
        if ps is not None:
            return float(_loglik_persist_kernel(log_pi, log_A3[0], ps[0], ps[1], log_lik,
                                                offsets))
        return float(_loglik_scaled_kernel(log_pi, log_A3[0], log_lik, offsets))
    return float(_forward_kernel(log_pi, log_A3, log_lik, offsets, np.empty_like(log_lik)))


def viterbi(log_pi, log_A, log_lik, lengths=None) -> ViterbiResult:
    """Most probable state path and its log score (joint with the observations)."""
    log_pi, log_A3, log_lik, offsets = _prepare(log_pi, log_A, log_lik, lengths)
    path = np.zeros(log_lik.shape[0], dtype=np.int64)
    ps = persistence_structure(log_A3[0]) if log_A3.shape[0] == 1 else None
    if ps is not None and log_lik.shape[1] >= _VITERBI_PERSIST_MIN_K:
        # O(K) per step, same path and score as the dense kernel
        score = _viterbi_persist_kernel(log_pi, log_A3[0], ps[0], ps[1], log_lik, offsets,
                                        path, _scratch(log_lik.shape))
        return ViterbiResult(path, float(score))
    score = _viterbi_kernel(log_pi, log_A3, log_lik, offsets, path, _scratch(log_lik.shape))
    return ViterbiResult(path, float(score))


def filter_step(log_alpha_prev, log_pi, log_A, log_lik_t) -> FilterStepResult:
    """One step of the online filter.

    Parameters
    ----------
    log_alpha_prev : (K,) or None
        The previous step's ``log_alpha``; ``None`` at the first step of a
        sequence (then ``log_pi`` is used and ``log_A`` ignored).
    log_pi : (K,)
    log_A : (K, K)
        The transition into this step (for a time-varying model, its slice).
    log_lik_t : (K,)

    Looping it over a sequence reproduces :func:`forward` exactly (bit for bit:
    both run the same compiled step); for persistence-structured ``log_A`` (see
    :func:`persistence_structure`) the step is O(K) and equal to it to rounding.
    """
    ll = _as_f8(log_lik_t, "log_lik_t", (1,))
    K = ll.shape[0]
    out = np.empty(K)
    if log_alpha_prev is None:
        lp = _as_f8(log_pi, "log_pi", (1,))
        if lp.shape != (K,):
            raise ValueError("log_pi has shape %s, expected (%d,)" % (lp.shape, K))
        c = forward_init_into(lp, ll, out)
    else:
        prev = _as_f8(log_alpha_prev, "log_alpha_prev", (1,))
        lA = _as_f8(log_A, "log_A", (2,))
        if prev.shape != (K,) or lA.shape != (K, K):
            raise ValueError("log_alpha_prev %s / log_A %s do not match K=%d"
                             % (prev.shape, lA.shape, K))
        if not np.isfinite(prev).any():
            raise ValueError("log_alpha_prev must be a normalised log distribution, "
                             "got no finite entry")
        ok, stay, move = persistence_params(lA)
        if ok:  # O(K): the default walker model streams through this
            c = forward_step_persist_into(prev, lA, stay, move, ll, out, np.empty(K))
            return FilterStepResult(out, float(c))
        exp_A = np.empty((K, K))
        colmax = np.empty(K)
        transition_exp_into(lA, exp_A, colmax)
        c = forward_step_into(prev, lA, exp_A, colmax, ll, out, np.empty(K))
    return FilterStepResult(out, float(c))


def sample_path(startprob, transmat, n_samples: int, rng, first=None) -> np.ndarray:
    """A state path (n_samples,) int64 drawn from the Markov chain.

    ``startprob`` (K,) and ``transmat`` (K, K) are probabilities (rows summing
    to 1); ``first`` fixes the first state instead of drawing it.  ``rng`` is a
    ``numpy.random.Generator``; one uniform is used per step.
    """
    pi = np.asarray(startprob, dtype=np.float64)
    A = np.asarray(transmat, dtype=np.float64)
    K = pi.shape[0]
    if pi.ndim != 1 or A.shape != (K, K):
        raise ValueError("startprob %s / transmat %s do not match" % (pi.shape, A.shape))
    if first is not None and not 0 <= int(first) < K:
        raise ValueError("first state must be in 0..%d, got %r" % (K - 1, first))
    cum_pi = np.cumsum(pi)
    cum_A = np.ascontiguousarray(np.cumsum(A, axis=1))
    # Draw against the (rounded) total, so a row summing to 1 - 1e-16 cannot overflow.
    u = rng.random(int(n_samples))
    out = np.empty(int(n_samples), dtype=np.int64)
    _sample_path_kernel(cum_pi / cum_pi[-1], cum_A / cum_A[:, -1:], u,
                        -1 if first is None else int(first), out)
    return out
