"""Collapsed Gibbs sampling for the multi-sensor discrete HMM (thesis 6.4.4, Alg 7).

Model: ``pi ~ Dir(a)``, each transition row ``A[i] ~ Dir(alpha[i])``, each
(state, sensor) emission row ``B[s, k] ~ Dir(beta[s])``; ``y_1 ~ pi``,
``y_t | y_{t-1} ~ A[y_{t-1}]`` and the sensors are independent given the state,
``e_t^s | y_t ~ B[s, y_t]``.  The parameters are integrated out, so the state
path is sampled from ``p(y | e)`` (eq 6.19, the joint, a product of
Dirichlet-multinomial terms).

The full conditional of one state (eq 6.20 as printed omits the product over
sensors and the pseudo-counts, and its counts must not include position ``t``).
With every count ``n^{-t}`` taken *without* the transitions into and out of
``t`` and without its emissions::

    p(y_t = k | y_{-t}, e)  ∝  (n^{-t}_{y_{t-1}, k} + alpha_{y_{t-1}, k})          [t first: n^{-t}_start,k + a_k]
                            *  (n^{-t}_{k, y_{t+1}} + alpha_{k, y_{t+1}} + [y_{t-1} = k = y_{t+1}])
                               / (n^{-t}_{k, .} + sum_j alpha_{k, j} + [y_{t-1} = k])  [absent at a sequence end]
                            *  prod_s (n^{-t}_{s, k, e_t^s} + beta_s) / (n^{-t}_{s, k, .} + M_s beta_s)

(the indicator terms count the transition ``y_{t-1} -> k`` itself when the next
factor reuses row ``k``).  A missing reading (symbol ``n_values[s]``) leaves its
sensor out.  The sweep is compiled with Numba and draws its uniforms from a
NumPy ``Generator`` passed in, so runs are reproducible.

Convergence diagnostics are computed on the trace of ``log p(y, e)`` after every
sweep: the split-R-hat (Gelman et al., BDA3 11.4; chains split in halves) and
Geweke's z-score (first 10 % vs last 50 % of the kept draws, batch-means
standard errors).
"""
from __future__ import annotations

import dataclasses
import math
import sys

import numba
import numpy as np

__all__ = [
    "GibbsResult",
    "collapsed_gibbs",
    "log_joint",
    "conditional",
    "split_rhat",
    "geweke_z",
]


# --------------------------------------------------------------------------- kernels


@numba.njit(cache=True, inline="always")
def _add(X, t, k, prev, nxt, w, n_start, n_trans, n_from, n_emit, n_emit_tot, missing,
         inv_from, a_from, inv_emit, b_tot):
    """Add (w = +1) or remove (w = -1) position t in state k, with the reciprocals.

    ``n_emit`` is laid out (S, M, K) so the sweep reads the K states of one
    (sensor, symbol) contiguously.
    """
    if prev < 0:
        n_start[k] += w
    else:
        n_trans[prev, k] += w
        n_from[prev] += w
        inv_from[prev] = 1.0 / (n_from[prev] + a_from[prev])
    if nxt >= 0:
        n_trans[k, nxt] += w
        n_from[k] += w
        inv_from[k] = 1.0 / (n_from[k] + a_from[k])
    for s in range(X.shape[1]):
        e = X[t, s]
        if e != missing[s]:
            n_emit[s, e, k] += w
            n_emit_tot[s, k] += w
            inv_emit[s, k] = 1.0 / (n_emit_tot[s, k] + b_tot[s])


@numba.njit(cache=True, inline="always")
def _conditional_into(X, t, prev, nxt, n_start, n_trans, n_from, n_emit, missing, a_start,
                      a_trans, a_from, inv_from, b_emit, inv_emit, p):
    """Unnormalised p(y_t = k | rest) into p (K,), counts already without t; returns the sum."""
    K = p.shape[0]
    for k in range(K):
        if prev < 0:
            w = n_start[k] + a_start[k]
        else:
            w = n_trans[prev, k] + a_trans[prev, k]
        if nxt >= 0:
            if prev == k:
                extra = 1.0 if k == nxt else 0.0
                w *= (n_trans[k, nxt] + a_trans[k, nxt] + extra) / (n_from[k] + a_from[k] + 1.0)
            else:
                w *= (n_trans[k, nxt] + a_trans[k, nxt]) * inv_from[k]
        p[k] = w
    for s in range(X.shape[1]):
        e = X[t, s]
        if e != missing[s]:
            b = b_emit[s, e]
            row = n_emit[s, e]
            inv = inv_emit[s]
            for k in range(K):
                p[k] *= (row[k] + b) * inv[k]
    tot = 0.0
    for k in range(K):
        tot += p[k]
    return tot


@numba.njit(cache=True)
def _sweep(X, offsets, z, u, n_start, n_trans, n_from, n_emit, n_emit_tot, missing, a_start,
           a_trans, a_from, b_emit, b_tot, inv_from, inv_emit, p):
    """One systematic-scan sweep over every position of every sequence."""
    K = n_start.shape[0]
    for n in range(offsets.shape[0] - 1):
        a, b = offsets[n], offsets[n + 1]
        for t in range(a, b):
            prev = z[t - 1] if t > a else -1
            nxt = z[t + 1] if t < b - 1 else -1
            _add(X, t, z[t], prev, nxt, -1, n_start, n_trans, n_from, n_emit, n_emit_tot,
                 missing, inv_from, a_from, inv_emit, b_tot)
            tot = _conditional_into(X, t, prev, nxt, n_start, n_trans, n_from, n_emit, missing,
                                    a_start, a_trans, a_from, inv_from, b_emit, inv_emit, p)
            r = u[t] * tot
            k = 0
            acc = p[0]
            while k < K - 1 and r >= acc:
                k += 1
                acc += p[k]
            z[t] = k
            _add(X, t, k, prev, nxt, 1, n_start, n_trans, n_from, n_emit, n_emit_tot, missing,
                 inv_from, a_from, inv_emit, b_tot)


@numba.njit(cache=True)
def _count(X, offsets, z, missing, n_start, n_trans, n_emit):
    for n in range(offsets.shape[0] - 1):
        a, b = offsets[n], offsets[n + 1]
        if b <= a:
            continue
        n_start[z[a]] += 1.0
        for t in range(a, b):
            if t > a:
                n_trans[z[t - 1], z[t]] += 1.0
            for s in range(X.shape[1]):
                e = X[t, s]
                if e != missing[s]:
                    n_emit[s, e, z[t]] += 1.0


@numba.njit(cache=True)
def _dm_row(n, a, m):
    """log Dirichlet-multinomial normaliser ratio of one row over its first m entries."""
    sa = 0.0
    sn = 0.0
    out = 0.0
    for j in range(m):
        sa += a[j]
        sn += n[j]
        out += math.lgamma(a[j] + n[j]) - math.lgamma(a[j])
    return out + math.lgamma(sa) - math.lgamma(sa + sn)


@numba.njit(cache=True)
def _log_joint(n_start, n_trans, n_emit, a_start, a_trans, b_emit, n_values):
    K = n_start.shape[0]
    out = _dm_row(n_start, a_start, K)
    for i in range(K):
        out += _dm_row(n_trans[i], a_trans[i], K)
    row = np.empty(n_emit.shape[1])
    for s in range(n_emit.shape[0]):
        for k in range(K):
            for e in range(n_emit.shape[1]):
                row[e] = n_emit[s, e, k]
            out += _dm_row(row, b_emit[s], n_values[s])
    return out


# --------------------------------------------------------------------------- state


class _Counts:
    """Count arrays (float64, exact for integers below 2^53) and their priors."""

    def __init__(self, X, offsets, z, n_values, K, start_prior, transmat_prior, emission_prior):
        S = X.shape[1]
        M = int(n_values.max()) + 1
        self.missing = np.ascontiguousarray(n_values, dtype=np.int64)
        self.n_values = self.missing
        self.a_start = np.ascontiguousarray(np.broadcast_to(
            np.asarray(start_prior, dtype=np.float64), (K,)))
        self.a_trans = np.ascontiguousarray(np.broadcast_to(
            np.asarray(transmat_prior, dtype=np.float64), (K, K)))
        b = np.asarray(emission_prior, dtype=np.float64)
        b_emit = np.zeros((S, M))
        bb = np.broadcast_to(b, (S, M)) if b.ndim else np.full((S, M), float(b))
        valid = np.arange(M)[None, :] < n_values[:, None]
        b_emit[valid] = bb[valid]
        self.b_emit = b_emit
        self.b_tot = b_emit.sum(axis=1)
        self.a_from = self.a_trans.sum(axis=1)
        self.n_start = np.zeros(K)
        self.n_trans = np.zeros((K, K))
        self.n_emit = np.zeros((S, M, K))  # (sensor, symbol, state)
        _count(X, offsets, z, self.missing, self.n_start, self.n_trans, self.n_emit)
        self.n_from = self.n_trans.sum(axis=1)
        self.n_emit_tot = self.n_emit.sum(axis=1)
        self.inv_from = 1.0 / (self.n_from + self.a_from)
        self.inv_emit = 1.0 / (self.n_emit_tot + self.b_tot[:, None])

    def log_joint(self) -> float:
        return float(_log_joint(self.n_start, self.n_trans, self.n_emit, self.a_start,
                                self.a_trans, self.b_emit, self.n_values))

    def posterior_means(self):
        pi = self.n_start + self.a_start
        A = self.n_trans + self.a_trans
        B = np.swapaxes(self.n_emit, 1, 2) + self.b_emit[:, None, :]
        return (pi / pi.sum(), A / A.sum(axis=1, keepdims=True),
                B / B.sum(axis=2, keepdims=True))


def _prepare(X, offsets, n_values):
    X = np.ascontiguousarray(X, dtype=np.int64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    n_values = np.ascontiguousarray(n_values, dtype=np.int64)
    if X.ndim != 2 or n_values.shape != (X.shape[1],):
        raise ValueError("X %s and n_values %s do not match" % (X.shape, n_values.shape))
    if X.size and (X.min() < 0 or np.any(X > n_values)):
        raise ValueError("symbols out of range 0..n_values (the last is 'missing')")
    return X, offsets, n_values


def log_joint(X, offsets, z, n_values, n_states, *, start_prior=1.0, transmat_prior=1.0,
              emission_prior=1.0) -> float:
    """``log p(y = z, e = X)`` with the parameters integrated out (eq 6.19 with priors)."""
    X, offsets, n_values = _prepare(X, offsets, n_values)
    c = _Counts(X, offsets, np.asarray(z, dtype=np.int64), n_values, int(n_states),
                start_prior, transmat_prior, emission_prior)
    return c.log_joint()


def conditional(X, offsets, z, t, n_values, n_states, *, start_prior=1.0, transmat_prior=1.0,
                emission_prior=1.0) -> np.ndarray:
    """Normalised ``p(y_t = k | y_{-t}, e)`` (n_states,), as used by the sweep."""
    X, offsets, n_values = _prepare(X, offsets, n_values)
    z = np.array(z, dtype=np.int64)
    K = int(n_states)
    c = _Counts(X, offsets, z, n_values, K, start_prior, transmat_prior, emission_prior)
    seq = int(np.searchsorted(offsets, t, side="right")) - 1
    a, b = offsets[seq], offsets[seq + 1]
    prev = int(z[t - 1]) if t > a else -1
    nxt = int(z[t + 1]) if t < b - 1 else -1
    _add(X, t, z[t], prev, nxt, -1, c.n_start, c.n_trans, c.n_from, c.n_emit, c.n_emit_tot,
         c.missing, c.inv_from, c.a_from, c.inv_emit, c.b_tot)
    p = np.empty(K)
    tot = _conditional_into(X, t, prev, nxt, c.n_start, c.n_trans, c.n_from, c.n_emit,
                            c.missing, c.a_start, c.a_trans, c.a_from, c.inv_from, c.b_emit,
                            c.inv_emit, p)
    return p / tot


# --------------------------------------------------------------------------- driver


@dataclasses.dataclass(slots=True)
class GibbsResult:
    """One chain of :func:`collapsed_gibbs`.

    states : (T,) the last sampled path
    startprob (K,), transmat (K, K), emissionprob (S, K, M + 1) : posterior means
        averaged over the kept sweeps (missing-symbol column 0)
    log_joint : (n_sweeps,) ``log p(y, e)`` after each sweep
    n_kept : number of sweeps averaged
    """

    states: np.ndarray
    startprob: np.ndarray
    transmat: np.ndarray
    emissionprob: np.ndarray
    log_joint: np.ndarray
    n_kept: int


def collapsed_gibbs(X, offsets, n_values, n_states, *, n_sweeps=500, burn_in=250, thin=1,
                    start_prior=1.0, transmat_prior=1.0, emission_prior=1.0, rng=None,
                    init_states=None, verbose=False) -> GibbsResult:
    """Run one collapsed Gibbs chain.

    Parameters
    ----------
    X : (T, S) int symbols (``n_values[s]`` = missing)
    offsets : (n_seq + 1,) sequence boundaries
    n_values : (S,) symbols per sensor
    n_states : K
    n_sweeps, burn_in, thin : schedule (``burn_in < n_sweeps``)
    start_prior (K,), transmat_prior (K, K), emission_prior (scalar or (S, M)) :
        Dirichlet concentrations, all > 0
    rng : numpy Generator
    init_states : (T,) starting path; default iid uniform states (Alg 7: any
        path of non-zero probability; with Dirichlet priors every path has one)
    """
    X, offsets, n_values = _prepare(X, offsets, n_values)
    K = int(n_states)
    T = X.shape[0]
    if not 0 <= burn_in < n_sweeps:
        raise ValueError("need 0 <= burn_in < n_sweeps, got %r and %r" % (burn_in, n_sweeps))
    rng = np.random.default_rng() if rng is None else rng
    z = (rng.integers(0, K, size=T) if init_states is None
         else np.array(init_states, dtype=np.int64))
    if z.shape != (T,) or (T and (z.min() < 0 or z.max() >= K)):
        raise ValueError("init_states must be (%d,) ints in 0..%d" % (T, K - 1))
    c = _Counts(X, offsets, z, n_values, K, start_prior, transmat_prior, emission_prior)
    for name in ("a_start", "a_trans", "b_emit"):
        arr = getattr(c, name)
        if name == "b_emit":
            arr = arr[np.arange(arr.shape[1])[None, :] < n_values[:, None]]
        if not np.all(arr > 0):
            raise ValueError("Dirichlet concentrations must be > 0")
    trace = np.empty(n_sweeps)
    p = np.empty(K)
    sums = [np.zeros(K), np.zeros((K, K)), np.zeros(np.swapaxes(c.n_emit, 1, 2).shape)]
    n_kept = 0
    for it in range(n_sweeps):
        u = rng.random(T)
        _sweep(X, offsets, z, u, c.n_start, c.n_trans, c.n_from, c.n_emit, c.n_emit_tot,
               c.missing, c.a_start, c.a_trans, c.a_from, c.b_emit, c.b_tot, c.inv_from,
               c.inv_emit, p)
        trace[it] = c.log_joint()
        if it >= burn_in and (it - burn_in) % thin == 0:
            for acc, m in zip(sums, c.posterior_means()):
                acc += m
            n_kept += 1
        if verbose and (it + 1) % 50 == 0:
            print("gibbs sweep %5d  log joint %.6f" % (it + 1, trace[it]), file=sys.stderr)
    pi, A, B = (s_ / n_kept for s_ in sums)
    valid = np.arange(B.shape[2])[None, None, :] < n_values[:, None, None]
    B = np.where(valid, B, 0.0)
    return GibbsResult(z, pi, A, B, trace, n_kept)


# --------------------------------------------------------------------------- diagnostics


def split_rhat(chains) -> float:
    """Split-R-hat of draws ``(n_chains, n_draws)`` (1-D: one chain).

    Each chain is split in two halves; returns ``sqrt(var_plus / W)``.  Values
    near 1 indicate that the halves (and chains) agree; 1.0 when there is no
    within-chain variation at all, NaN with fewer than 4 draws.
    """
    x = np.atleast_2d(np.asarray(chains, dtype=np.float64))
    n = x.shape[1] // 2
    if n < 2:
        return float("nan")
    halves = np.concatenate([x[:, :n], x[:, -n:]], axis=0)
    means = halves.mean(axis=1)
    W = halves.var(axis=1, ddof=1).mean()
    B = n * means.var(ddof=1)
    if W == 0:
        return 1.0 if B == 0 else float("inf")
    var_plus = (n - 1) / n * W + B / n
    return float(np.sqrt(var_plus / W))


def _batch_mean_var(x) -> float:
    """Variance of the mean of ``x`` by non-overlapping batch means."""
    n = x.size
    b = max(1, int(np.sqrt(n)))
    nb = n // b
    if nb < 2:
        return float(x.var(ddof=1) / n) if n > 1 else float("inf")
    means = x[: nb * b].reshape(nb, b).mean(axis=1)
    return float(means.var(ddof=1) / nb)


def geweke_z(trace, first: float = 0.1, last: float = 0.5) -> float:
    """Geweke's z: mean of the first ``first`` fraction vs the last ``last`` fraction.

    ``|z|`` above about 2 suggests the trace had not settled.  NaN for fewer
    than 20 draws; 0 for a constant trace.
    """
    x = np.asarray(trace, dtype=np.float64).ravel()
    n = x.size
    if n < 20:
        return float("nan")
    a = x[: max(2, int(first * n))]
    b = x[n - max(2, int(last * n)):]
    va, vb = _batch_mean_var(a), _batch_mean_var(b)
    diff = a.mean() - b.mean()
    if va + vb == 0:
        return 0.0 if diff == 0 else float("inf")
    return float(diff / np.sqrt(va + vb))
