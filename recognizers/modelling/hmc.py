"""Hamiltonian Monte Carlo (leapfrog, identity mass) as a function of arrays."""
from __future__ import annotations

import numpy as np


def hmc_sample(logp_and_grad, x0, n_samples, step_size=0.05, n_leapfrog=20, rng=None,
               burn_in=0, adapt=True):
    """Draw ``n_samples`` states of a Markov chain leaving ``exp(logp)`` invariant.

    ``logp_and_grad(x) -> (logp, grad)`` on flat float arrays. Returns
    ``(samples (n_samples, x0.size), acceptance_rate)``.  With ``adapt``, the step
    size shrinks after each rejection and grows after each acceptance during burn-in
    only (the kept draws use a fixed step, so the chain stays valid).
    """
    rng = np.random.default_rng(rng)
    x = np.asarray(x0, dtype=np.float64).ravel().copy()
    lp, g = logp_and_grad(x)
    out = np.empty((int(n_samples), x.size))
    accepted = 0
    for i in range(int(burn_in) + int(n_samples)):
        p0 = rng.standard_normal(x.size)
        xn, gn = x.copy(), g.copy()
        p = p0 + 0.5 * step_size * gn
        for j in range(int(n_leapfrog)):
            xn += step_size * p
            lpn, gn = logp_and_grad(xn)
            if j < n_leapfrog - 1:
                p += step_size * gn
        p += 0.5 * step_size * gn
        log_accept = lpn - lp - 0.5 * (p @ p - p0 @ p0)
        ok = np.isfinite(log_accept) and np.log(rng.uniform()) < log_accept
        if ok:
            x, lp, g = xn, lpn, gn
            accepted += i >= burn_in
        if adapt and i < burn_in:
            step_size *= 1.2 if ok else 0.5
        if i >= burn_in:
            out[i - burn_in] = x
    return out, accepted / max(1, int(n_samples))
