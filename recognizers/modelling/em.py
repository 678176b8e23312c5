"""Baum-Welch (EM) for chain models with any emission component (thesis 6.15-6.18).

The E-step is :func:`recognizers.modelling.chain.smooth` (one-slice posteriors
``gamma``, two-slice sums ``xi`` and ``log p(X)``); the M-step re-estimates the
start and transition distributions from their expected counts and delegates the
emissions to the component's ``m_step``.  Nothing here knows the emission family.

Objective.  With Dirichlet priors (``startprob_prior``, ``transmat_prior``,
hmmlearn's names: concentration 1 means no prior) and the emission component's
own prior, EM maximises ``log p(X | theta) + log p(theta)`` (MAP); with flat
priors that is the log-likelihood.  Each iteration records this objective for
the parameters *entering* the iteration; EM never decreases it (a decrease
larger than ``sqrt(eps)`` relative is a bug, and the monitor warns about it).
Counts are turned into probabilities as hmmlearn does,
``max(count + prior - 1, 0)`` normalised; a row whose total is 0 (a state never
left, or no prior mass) keeps its previous value instead of becoming NaN.
Priors below 1 make the MAP objective unbounded at the simplex boundary: EM
then still runs, but monotonicity is only guaranteed for priors >= 1.

Convergence (hmmlearn's rule): stop when the objective improved by less than
``tol`` (absolute), or after ``n_iter`` iterations; in the latter case a
:class:`ConvergenceWarning` is issued.
"""
from __future__ import annotations

import dataclasses
import numbers
import sys
import warnings
from typing import Any, Callable

import numpy as np

from recognizers.modelling import chain

__all__ = [
    "ConvergenceWarning",
    "ConvergenceMonitor",
    "EMResult",
    "check_random_state",
    "dirichlet_map",
    "dirichlet_log_prior",
    "sequence_starts",
    "baum_welch",
]

_SQRT_EPS = float(np.sqrt(np.finfo(float).eps))


class ConvergenceWarning(UserWarning):
    """An iterative learner stopped before meeting its convergence criterion."""


def check_random_state(seed) -> np.random.Generator:
    """A ``numpy.random.Generator`` from None, an int, a Generator or a RandomState."""
    if seed is None or isinstance(seed, (numbers.Integral, np.integer)) and not isinstance(
            seed, bool):
        return np.random.default_rng(seed)
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.RandomState):
        return np.random.default_rng(seed.randint(0, 2 ** 31 - 1))
    raise ValueError("random_state must be None, an int, a numpy Generator or RandomState; "
                     "got %r" % (seed,))


class ConvergenceMonitor:
    """Tracks the EM objective (hmmlearn's ``ConvergenceMonitor`` with a decrease check).

    Attributes
    ----------
    tol, n_iter : the stopping rule
    history : list of float, the objective reported at every iteration
    iter : number of reports
    decreases : list of (iteration, drop) where the objective fell by more
        than ``sqrt(eps) * max(1, |objective|)``
    """

    def __init__(self, tol: float, n_iter: int, verbose: bool = False):
        self.tol = float(tol)
        self.n_iter = int(n_iter)
        self.verbose = verbose
        self.history: list[float] = []
        self.decreases: list[tuple[int, float]] = []

    @property
    def iter(self) -> int:
        return len(self.history)

    def _reset(self) -> None:
        """Forget the history (hmmlearn's name; ``fit`` calls it before EM)."""
        self.history = []
        self.decreases = []

    def report(self, objective: float) -> None:
        if self.history:
            prev = self.history[-1]
            drop = prev - objective
            if drop > _SQRT_EPS * max(1.0, abs(prev)):
                self.decreases.append((len(self.history), drop))
                warnings.warn("EM objective decreased by %.3g at iteration %d (from %.10g to "
                              "%.10g): this indicates a numerical problem"
                              % (drop, len(self.history), prev, objective), RuntimeWarning,
                              stacklevel=3)
        if self.verbose:
            delta = objective - self.history[-1] if self.history else float("nan")
            print("%10d %16.8f %+16.8f" % (len(self.history) + 1, objective, delta),
                  file=sys.stderr)
        self.history.append(float(objective))

    @property
    def converged(self) -> bool:
        """True once the last improvement is below ``tol``."""
        return len(self.history) >= 2 and self.history[-1] - self.history[-2] < self.tol


def dirichlet_map(counts, prior, previous) -> np.ndarray:
    """Row-wise ``max(counts + prior - 1, 0)`` normalised; zero rows keep ``previous``."""
    num = np.maximum(np.asarray(counts, dtype=np.float64) + np.asarray(prior) - 1.0, 0.0)
    tot = num.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        new = num / tot
    return np.where(tot > 0, new, previous)


def dirichlet_log_prior(theta, prior) -> float:
    """``sum (prior - 1) log theta`` over the entries with ``theta > 0``."""
    theta = np.asarray(theta, dtype=np.float64)
    a = np.broadcast_to(np.asarray(prior, dtype=np.float64) - 1.0, theta.shape)
    pos = theta > 0
    return float(np.sum(a[pos] * np.log(theta[pos])))


def sequence_starts(offsets) -> np.ndarray:
    """Index of the first frame of every non-empty sequence."""
    offsets = np.asarray(offsets)
    starts = offsets[:-1]
    return starts[offsets[1:] > starts]


@dataclasses.dataclass(slots=True)
class EMResult:
    """Outcome of :func:`baum_welch`.

    startprob, transmat, emissions : the final parameters (after the last M-step)
    history : objective at each iteration (before its M-step)
    lower_bound : objective of the final parameters
    converged : the stopping rule was met
    n_iter : iterations run
    """

    startprob: np.ndarray
    transmat: np.ndarray
    emissions: Any
    history: list
    lower_bound: float
    converged: bool
    n_iter: int


def _log(p):
    with np.errstate(divide="ignore"):
        return np.log(p)


def baum_welch(X, lengths, startprob, transmat, emissions, *,
               m_step_emissions: Callable[[Any, Any], Any],
               log_prior_emissions: Callable[[Any], float],
               learn_startprob: bool = True, learn_transmat: bool = True,
               startprob_prior=1.0, transmat_prior=1.0,
               n_iter: int = 10, tol: float = 1e-2, verbose: bool = False,
               warn: bool = True, monitor=None) -> EMResult:
    """Run EM from the given parameters.

    Parameters
    ----------
    X : observations in the form the emission component accepts (validated)
    lengths : sequence lengths (sum = len(X)) or None
    startprob (K,), transmat (K, K), emissions : the starting point
    m_step_emissions : ``f(emissions, stats) -> emissions``; return the argument
        unchanged to keep the emissions fixed
    log_prior_emissions : ``f(emissions) -> float`` (0 for a flat prior)
    learn_startprob, learn_transmat : which chain parameters to update
    startprob_prior, transmat_prior : Dirichlet concentrations (scalar or array)
    n_iter, tol, verbose : stopping rule and progress on stderr
    warn : issue :class:`ConvergenceWarning` when ``n_iter`` is reached first
    monitor : a :class:`ConvergenceMonitor` (or an hmmlearn-style subclass with
        ``_reset``, ``report`` and ``converged``) that decides when to stop;
        by default a new one with ``tol``, ``n_iter`` and ``verbose``

    Returns
    -------
    EMResult
    """
    startprob = np.asarray(startprob, dtype=np.float64)
    transmat = np.asarray(transmat, dtype=np.float64)
    n = len(X)
    K = startprob.shape[0]
    offsets = chain.lengths_to_offsets(n, lengths)
    starts = sequence_starts(offsets)
    ll_buf = np.empty((n, K))
    post_buf = np.empty((n, K))
    if monitor is None:
        monitor = ConvergenceMonitor(tol, n_iter, verbose)
    else:
        monitor._reset()

    def objective_prior(pi, A, em):
        return (dirichlet_log_prior(pi, startprob_prior) + dirichlet_log_prior(A, transmat_prior)
                + log_prior_emissions(em))

    for _ in range(n_iter):
        ll = emissions.log_likelihood(X, out=ll_buf)
        sm = chain.smooth(_log(startprob), _log(transmat), ll, lengths, out=post_buf)
        if not np.isfinite(sm.loglik):
            raise ValueError("the data has probability zero under the current parameters "
                             "(log-likelihood %r); check the initial parameters" % sm.loglik)
        monitor.report(sm.loglik + objective_prior(startprob, transmat, emissions))
        stats = emissions.init_stats()
        emissions.accumulate(stats, X, sm.posterior)
        new_em = m_step_emissions(emissions, stats)
        if learn_startprob:
            startprob = dirichlet_map(sm.posterior[starts].sum(axis=0), startprob_prior,
                                      startprob)
        if learn_transmat:
            transmat = dirichlet_map(sm.trans_counts, transmat_prior, transmat)
        emissions = new_em
        if monitor.converged:
            break
    final = chain.log_likelihood(_log(startprob), _log(transmat),
                                 emissions.log_likelihood(X, out=ll_buf), lengths)
    lower_bound = final + objective_prior(startprob, transmat, emissions)
    if isinstance(monitor, ConvergenceMonitor):
        monitor_final_check(monitor, lower_bound)
    converged = monitor.converged
    if not converged and warn:
        last = (monitor.history[-1] - monitor.history[-2]) if len(monitor.history) > 1 else None
        warnings.warn("EM did not converge in %d iterations (last improvement %s, tol %g); "
                      "raise n_iter or tol" % (n_iter, "n/a" if last is None else "%.4g" % last,
                                               tol), ConvergenceWarning, stacklevel=3)
    return EMResult(startprob, transmat, emissions, list(monitor.history), float(lower_bound),
                    bool(converged), len(monitor.history))


def monitor_final_check(monitor: ConvergenceMonitor, lower_bound: float) -> None:
    """Warn if the final parameters scored below the last iteration (a bug)."""
    if monitor.history:
        prev = monitor.history[-1]
        drop = prev - lower_bound
        if drop > _SQRT_EPS * max(1.0, abs(prev)):
            monitor.decreases.append((len(monitor.history), drop))
            warnings.warn("EM objective decreased by %.3g in the last M-step" % drop,
                          RuntimeWarning, stacklevel=3)
