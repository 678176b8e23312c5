"""Numba kernels for Bayesian Moment Matching (BMM) in HMMs with discrete sensors.

Notation (thesis chapter 7, with several sensors ``s``):

* ``gamma[j]``          Dirichlet over the start distribution ``pi``
* ``alpha[i, j]``       Dirichlet over transition row ``theta_i``
* ``beta[s, y, e]``     Dirichlet over the emission row ``phi_{s, y}``
* ``c[i]``              filtered belief ``P(Y_{t-1} = i | e_{1:t-1})``

Exact one-step posterior (eqs 7.26/7.40, using ``P(Theta, Phi | Y_{t-1}=i) ~
P(Theta, Phi)`` as in the thesis's efficient algorithm, 7.2.3)::

    P_t ∝ sum_{i, y} c[i] theta_{i y} prod_s phi_{s, y, e_s} P_{t-1}
        = sum_{i, y} w[i, y] Dir(alpha + 1_{i y}) prod_s Dir(beta_s + 1_{y, e_s})

with ``w[i, y] ∝ c[i] E[theta_iy] prod_s E[phi_{s,y,e_s}]`` (because
``theta_k Dir(theta; a) = E[theta_k] Dir(theta; a + 1_k)``).  Each Dirichlet
of the product has a *marginal* that is a small mixture:

* row ``i`` of ``alpha``: ``(1 - r_i) Dir(alpha_i) + sum_y w[i, y] Dir(alpha_i + 1_y)``
  with ``r_i = sum_y w[i, y]`` (the posterior of the previous state);
* emission row ``(s, y)``: ``(1 - c'_y) Dir(beta_sy) + c'_y Dir(beta_sy + 1_{e_s})``
  with ``c'_y = sum_i w[i, y]`` (the new filtered belief).

Projecting the joint mixture onto one product of Dirichlets by matching first
moments and one second moment per Dirichlet only needs these marginals, so one
step costs ``O(N^2)`` for the transition rows and ``O(1)`` per emission row,
``O(N^2 + N S)`` in total (thesis Algs 11-12).  Emission means are stored
lazily as ``m = mbar * xs`` (eqs 7.36-7.39): the update
``m' = (1 - kappa) m + kappa 1_e`` with ``kappa = c'_y / (B + 1)`` only scales
``xs`` and touches ``mbar[e]``.  ``g = 1 - sum_k m_k^2`` is carried along so the
matched second moment is available in ``O(1)``.

Every precision is computed as ``s + 1 = spread / Var`` with ``spread =
m (1 - m)`` and ``Var`` the mixture variance assembled from non-negative
terms (within + between components), clipped to the exact bounds
``[min_precision, s_old + 1]``; when ``Var`` is not positive (round-off) the
expected-count update ``s_old + r`` is used instead.

``MODE_SUM`` matches ``E[sum_k theta_k^2]``, ``MODE_FIRST`` matches
``E[theta_1^2]`` (thesis eq 4.15 / 7.9 with the ``M[theta_ij]`` typo fixed),
falling back to the sum moment when the first coordinate's spread vanishes.

Prediction (forward, smoothing, Viterbi) uses :mod:`recognizers.modelling.chain`;
:func:`emission_loglik` builds its ``log_lik`` for several sensors.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from recognizers.modelling.dirichlet import (  # the row update LDA shares
    MODE_FIRST,
    MODE_SUM,
    SKIP_WEIGHT,
    finish_precision as _finish_precision,
    update_row,
)

_RESCALE_BELOW = 1e-150
_XS_RENORM_BELOW = 1e-100


# ---------------------------------------------------------------------------
# emission rows
# ---------------------------------------------------------------------------


@njit(cache=True, inline="always")
def update_emission(mbar, xs, bprec, bg, s_i, y, e, c, nsym, mode, min_prec):
    """Project ``(1 - c) Dir(beta) + c Dir(beta + 1_e)`` for emission row ``(s_i, y)``.

    The row is stored lazily: mean ``m = mbar[s_i, y] * xs[s_i, y]``, precision
    ``bprec[s_i, y]``, ``bg[s_i, y] = 1 - sum m^2``.  ``O(1)`` (amortised).
    """
    if not (c > SKIP_WEIGHT):
        return
    if c > 1.0:
        c = 1.0
    B = bprec[s_i, y]
    X = xs[s_i, y]
    g0 = bg[s_i, y]
    m0e = mbar[s_i, y, e] * X
    d12 = 1.0 / ((B + 1.0) * (B + 2.0))
    inv1 = (B + 2.0) * d12
    inv2 = (B + 1.0) * d12
    kappa = c * inv1
    q = 1.0 - c
    # --- trace (sum) second moment --------------------------------------
    bi = B * inv1
    g1 = bi * bi * g0 + 2.0 * bi * inv1 * (1.0 - m0e)
    if g1 < 0.0:
        g1 = 0.0
    rest = (1.0 - g0) - m0e * m0e  # sum_{k != e} m_k^2
    if rest < 0.0:
        rest = 0.0
    dist2 = (1.0 - m0e) * (1.0 - m0e) + rest  # ||1_e - m||^2
    within = q * g0 * inv1 + c * g1 * inv2
    between = c * q * dist2 * inv1 * inv1
    qk = 1.0 - kappa
    g_new = qk * qk * g0 + 2.0 * kappa * qk * (1.0 - m0e)
    if g_new < 0.0:
        g_new = 0.0
    num_sum = g_new
    den_sum = within + between
    # --- first-coordinate second moment (thesis eq 4.15) ------------------
    num0 = 0.0
    den0 = 0.0
    if mode == MODE_FIRST:
        m00 = mbar[s_i, y, 0] * X
        d = 1.0 if e == 0 else 0.0
        b = (B * m00 + d) * inv1
        mn = q * m00 + c * b
        within0 = q * m00 * (1.0 - m00) * inv1 + c * b * (1.0 - b) * inv2
        between0 = q * (m00 - mn) ** 2 + c * (b - mn) ** 2
        num0 = mn * (1.0 - mn)
        den0 = within0 + between0
    s = _finish_precision(num_sum, den_sum, num0, den0, mode, B + c, B + 1.0, min_prec)
    # --- commit: m' = (1 - kappa) m + kappa 1_e ----------------------------
    Xn = X * qk
    mbar[s_i, y, e] += kappa / Xn
    bprec[s_i, y] = s
    bg[s_i, y] = g_new
    if Xn < _XS_RENORM_BELOW:
        tot = 0.0
        for k in range(nsym):
            mbar[s_i, y, k] *= Xn
            tot += mbar[s_i, y, k]
        gg = 0.0
        for k in range(nsym):
            mbar[s_i, y, k] /= tot
            gg += mbar[s_i, y, k] * (1.0 - mbar[s_i, y, k])
        bg[s_i, y] = gg
        Xn = 1.0
    xs[s_i, y] = Xn


@njit(cache=True)
def update_emissions_sensor(mbar, xs, bprec, bg, s_i, e, c, nsym, mode, min_prec, tmp):
    """All emission rows ``(s_i, y)`` of one sensor at once (``y = 0..N-1``).

    The same projection as :func:`update_emission`, written branch-free over
    ``y`` for the trace moment so the loop vectorises; ``tmp`` is ``(2, N)``.
    """
    N = c.shape[0]
    if mode != MODE_SUM:
        for y in range(N):
            update_emission(mbar, xs, bprec, bg, s_i, y, e, c[y], nsym, mode, min_prec)
        return
    m0 = tmp[0]
    inc = tmp[1]
    for y in range(N):
        m0[y] = mbar[s_i, y, e]
    for y in range(N):
        cy = min(max(c[y], 0.0), 1.0)
        B = bprec[s_i, y]
        X = xs[s_i, y]
        g0 = bg[s_i, y]
        m0e = m0[y] * X
        d12 = 1.0 / ((B + 1.0) * (B + 2.0))
        inv1 = (B + 2.0) * d12
        inv2 = (B + 1.0) * d12
        kappa = cy * inv1
        q = 1.0 - cy
        bi = B * inv1
        g1 = max(bi * bi * g0 + 2.0 * bi * inv1 * (1.0 - m0e), 0.0)
        rest = max((1.0 - g0) - m0e * m0e, 0.0)
        dist2 = (1.0 - m0e) * (1.0 - m0e) + rest
        den = q * g0 * inv1 + cy * g1 * inv2 + cy * q * dist2 * inv1 * inv1
        qk = 1.0 - kappa
        g_new = max(qk * qk * g0 + 2.0 * kappa * qk * (1.0 - m0e), 0.0)
        ok = (den > 0.0) and (g_new > 0.0)
        snew = g_new / den - 1.0 if ok else B + cy
        snew = min(max(snew, min_prec), B + 1.0)
        upd = cy > SKIP_WEIGHT
        Xn = X * qk
        inc[y] = kappa / Xn if upd else 0.0
        xs[s_i, y] = Xn if upd else X
        bprec[s_i, y] = snew if upd else B
        bg[s_i, y] = g_new if upd else g0
    for y in range(N):
        mbar[s_i, y, e] = m0[y] + inc[y]
        Xn = xs[s_i, y]
        if Xn < _XS_RENORM_BELOW:
            tot = 0.0
            for k in range(nsym):
                mbar[s_i, y, k] *= Xn
                tot += mbar[s_i, y, k]
            gg = 0.0
            for k in range(nsym):
                mbar[s_i, y, k] /= tot
                gg += mbar[s_i, y, k] * (1.0 - mbar[s_i, y, k])
            bg[s_i, y] = gg
            xs[s_i, y] = 1.0


# ---------------------------------------------------------------------------
# fast BMM (thesis Algs 11-12): O(N^2 + N S) per step
# ---------------------------------------------------------------------------


@njit(cache=True)
def _emission_predictive(obs, mbar, xs, lik):
    """``lik[y] ∝ prod_s E[phi_{s, y, obs_s}]``; returns the log of the scale removed."""
    S = obs.shape[0]
    N = lik.shape[0]
    logscale = 0.0
    for y in range(N):
        lik[y] = 1.0
    for s in range(S):
        e = obs[s]
        mx = 0.0
        for y in range(N):
            lik[y] *= mbar[s, y, e] * xs[s, y]
            if lik[y] > mx:
                mx = lik[y]
        if mx < _RESCALE_BELOW and mx > 0.0:
            for y in range(N):
                lik[y] /= mx
            logscale += np.log(mx)
    return logscale


@njit(cache=True)
def fast_sweep(
    X,
    starts,
    belief,
    gamma,
    alpha,
    mbar,
    xs,
    bprec,
    bg,
    nsym,
    learn_start,
    learn_trans,
    learn_emis,
    mode,
    min_prec,
    post_out,
    logk_out,
):
    """Run BMM over ``X`` (T, S) in place on the posterior state.

    ``starts[t]`` marks the first frame of a sequence.  Writes the filtered
    posterior ``P(Y_t | e_{1:t})`` into ``post_out[t]`` and the log posterior
    predictive ``log P(e_t | e_{1:t-1})`` into ``logk_out[t]``.
    """
    T = X.shape[0]
    S = X.shape[1]
    N = alpha.shape[0]
    lik = np.empty(N)
    w = np.empty((N, N))
    r = np.empty(N)
    cnew = np.empty(N)
    mwork = np.empty(N)
    tmp2 = np.empty((2, N))
    for t in range(T):
        obs = X[t]
        logscale = _emission_predictive(obs, mbar, xs, lik)
        Z = 0.0
        if starts[t]:
            G = 0.0
            for j in range(N):
                G += gamma[j]
            for y in range(N):
                cnew[y] = gamma[y] / G * lik[y]
                Z += cnew[y]
            if not (Z > 0.0) or not np.isfinite(Z):
                for y in range(N):
                    cnew[y] = 1.0 / N
                Z = 1e-300
            else:
                for y in range(N):
                    cnew[y] /= Z
            if learn_start:
                update_row(gamma, 1.0, cnew, mode, min_prec, mwork)
        else:
            for i in range(N):
                A = 0.0
                for j in range(N):
                    A += alpha[i, j]
                ci = belief[i] / A
                for y in range(N):
                    v = ci * alpha[i, y] * lik[y]
                    w[i, y] = v
                    Z += v
            if not (Z > 0.0) or not np.isfinite(Z):
                # cannot happen with positive parameters; keep the stream alive
                for i in range(N):
                    for y in range(N):
                        w[i, y] = 1.0 / (N * N)
                Z = 1e-300
            else:
                inv = 1.0 / Z
                for i in range(N):
                    for y in range(N):
                        w[i, y] *= inv
            for y in range(N):
                cnew[y] = 0.0
            for i in range(N):
                ri = 0.0
                for y in range(N):
                    ri += w[i, y]
                    cnew[y] += w[i, y]
                r[i] = ri
            if learn_trans:
                for i in range(N):
                    update_row(alpha[i], r[i], w[i], mode, min_prec, mwork)
        if learn_emis:
            for s in range(S):
                update_emissions_sensor(mbar, xs, bprec, bg, s, obs[s], cnew, nsym[s], mode, min_prec, tmp2)
        tot = 0.0
        for y in range(N):
            tot += cnew[y]
        for y in range(N):
            belief[y] = cnew[y] / tot
            post_out[t, y] = belief[y]
        logk_out[t] = np.log(Z) + logscale


# ---------------------------------------------------------------------------
# per-state BMM (thesis Alg 9 with known emissions, Alg 10 with both unknown)
# ---------------------------------------------------------------------------


@njit(cache=True)
def project_general(u, comps, kv, bump, out, mode, min_prec):
    """Project ``sum_c u[c] Dir(comps[c, :kv] + 1_{bump[c]})`` onto ``out[:kv]``.

    ``bump[c] < 0`` means no added count.  Direct ``O(C K)`` moment sums.
    """
    C = u.shape[0]
    A = np.empty(C)
    fallback = 0.0
    upper = 0.0
    usum = 0.0
    for c in range(C):
        usum += u[c]
    for c in range(C):
        a = 0.0
        for j in range(kv):
            a += comps[c, j]
        if bump[c] >= 0:
            a += 1.0
        A[c] = a
        fallback += u[c] / usum * a
        if u[c] > 0.0 and a > upper:
            upper = a
    num_sum = 0.0
    den_sum = 0.0
    num0 = 0.0
    den0 = 0.0
    for j in range(kv):
        mj = 0.0
        for c in range(C):
            a = comps[c, j] + (1.0 if bump[c] == j else 0.0)
            mj += u[c] / usum * a / A[c]
        within = 0.0
        between = 0.0
        for c in range(C):
            uc = u[c] / usum
            mc = (comps[c, j] + (1.0 if bump[c] == j else 0.0)) / A[c]
            within += uc * mc * (1.0 - mc) / (A[c] + 1.0)
            between += uc * (mc - mj) ** 2
        spread = mj * (1.0 - mj)
        out[j] = mj
        num_sum += spread
        den_sum += within + between
        if j == 0:
            num0 = spread
            den0 = within + between
    s = _finish_precision(num_sum, den_sum, num0, den0, mode, fallback, upper, min_prec)
    tot = 0.0
    for j in range(kv):
        tot += out[j]
    for j in range(kv):
        out[j] = out[j] / tot * s


@njit(cache=True)
def perstate_collapse(belief, G, Al, Be, nsym, learn_emis, mode, min_prec):
    """Replace the per-state posteriors ``Q^y`` by the projection of
    ``sum_y c_y Q^y`` (one product of Dirichlets), copied to every ``y``."""
    N = G.shape[0]
    S = Be.shape[1]
    nob = -np.ones(N, dtype=np.int64)
    out = np.empty(max(N, Be.shape[3]))
    project_general(belief, G, N, nob, out, mode, min_prec)
    for y in range(N):
        G[y, :] = out[:N]
    for i in range(N):
        project_general(belief, Al[:, i, :], N, nob, out, mode, min_prec)
        for y in range(N):
            Al[y, i, :] = out[:N]
    if learn_emis:
        for s in range(S):
            kv = nsym[s]
            for k in range(N):
                project_general(belief, Be[:, s, k, :], kv, nob, out, mode, min_prec)
                for y in range(N):
                    Be[y, s, k, :kv] = out[:kv]


@njit(cache=True)
def perstate_sweep(
    X,
    starts,
    belief,
    G,
    Al,
    Be,
    fixed_emis,
    nsym,
    learn_start,
    learn_trans,
    learn_emis,
    mode,
    min_prec,
    collapsed,
    post_out,
    logk_out,
):
    """Thesis Alg 10 (and Alg 9 when ``learn_emis`` is False and ``fixed_emis``
    holds the known observation model), generalised to several sensors.

    One product of Dirichlets ``Q^y`` approximates ``P(Theta, Phi | Y_t = y, e_{1:t})``
    for each state ``y``: ``G[y]`` (start), ``Al[y]`` (transitions),
    ``Be[y]`` (emissions).  ``O(N^4 + N^3 S M)`` per step.
    ``collapsed[0]`` is 1 when all ``Q^y`` are equal (fresh prior or after
    a sequence end).
    """
    T = X.shape[0]
    S = X.shape[1]
    N = G.shape[0]
    M = Be.shape[3]
    v = np.empty((N, N))
    cnew = np.empty(N)
    u = np.empty(N)
    bump = np.empty(N, dtype=np.int64)
    out = np.empty(max(N, M))
    G2 = np.empty_like(G)
    Al2 = np.empty_like(Al)
    Be2 = np.empty_like(Be)
    for t in range(T):
        obs = X[t]
        if starts[t]:
            if collapsed[0] == 0:
                perstate_collapse(belief, G, Al, Be, nsym, learn_emis, mode, min_prec)
                collapsed[0] = 1
            # all Q^a equal: the posterior given Y_1 = y is one product, exact.
            Gs = 0.0
            for j in range(N):
                Gs += G[0, j]
            lmax = -np.inf
            for y in range(N):
                ll = np.log(G[0, y] / Gs)
                for s in range(S):
                    e = obs[s]
                    if learn_emis:
                        Bs = 0.0
                        for k in range(nsym[s]):
                            Bs += Be[0, s, y, k]
                        ll += np.log(Be[0, s, y, e] / Bs)
                    else:
                        ll += np.log(fixed_emis[s, y, e])
                cnew[y] = ll
                if ll > lmax:
                    lmax = ll
            Z = 0.0
            for y in range(N):
                cnew[y] = np.exp(cnew[y] - lmax)
                Z += cnew[y]
            for y in range(N):
                cnew[y] /= Z
            logk = np.log(Z) + lmax
            for y in range(N):
                G2[y] = G[0]
                Al2[y] = Al[0]
                Be2[y] = Be[0]
                if learn_start:
                    G2[y, y] += 1.0
                if learn_emis:
                    for s in range(S):
                        Be2[y, s, y, obs[s]] += 1.0
            collapsed[0] = 0
        else:
            # v[a, y] = c_a E_a[theta_{a y}] prod_s E_a[phi_{s y e_s}]  (in logs)
            lmax = -np.inf
            for a in range(N):
                As = 0.0
                for j in range(N):
                    As += Al[a, a, j]
                for y in range(N):
                    if belief[a] > 0.0:
                        ll = np.log(belief[a]) + np.log(Al[a, a, y] / As)
                    else:
                        ll = -np.inf
                    for s in range(S):
                        e = obs[s]
                        if learn_emis:
                            Bs = 0.0
                            for k in range(nsym[s]):
                                Bs += Be[a, s, y, k]
                            ll += np.log(Be[a, s, y, e] / Bs)
                        else:
                            ll += np.log(fixed_emis[s, y, e])
                    v[a, y] = ll
                    if ll > lmax:
                        lmax = ll
            Z = 0.0
            for a in range(N):
                for y in range(N):
                    v[a, y] = np.exp(v[a, y] - lmax)
                    Z += v[a, y]
            logk = np.log(Z) + lmax
            for y in range(N):
                ky = 0.0
                for a in range(N):
                    ky += v[a, y]
                cnew[y] = ky / Z
                for a in range(N):
                    u[a] = v[a, y] / ky
                # start row: unchanged in every component
                for a in range(N):
                    bump[a] = -1
                project_general(u, G, N, bump, out, mode, min_prec)
                G2[y, :] = out[:N]
                # transition rows: component a adds a count to alpha^a[a, y]
                for i in range(N):
                    for a in range(N):
                        bump[a] = y if (learn_trans and a == i) else -1
                    project_general(u, Al[:, i, :], N, bump, out, mode, min_prec)
                    Al2[y, i, :] = out[:N]
                # emission rows: every component adds a count to beta^a[s, y, e_s]
                if learn_emis:
                    for s in range(S):
                        kv = nsym[s]
                        for k in range(N):
                            for a in range(N):
                                bump[a] = obs[s] if k == y else -1
                            project_general(u, Be[:, s, k, :], kv, bump, out, mode, min_prec)
                            Be2[y, s, k, :kv] = out[:kv]
                else:
                    Be2[y] = Be[y]
            collapsed[0] = 0
        G[...] = G2
        Al[...] = Al2
        Be[...] = Be2
        for y in range(N):
            belief[y] = cnew[y]
            post_out[t, y] = cnew[y]
        logk_out[t] = logk


# ---------------------------------------------------------------------------
# emission log-likelihoods for recognizers.modelling.chain
# ---------------------------------------------------------------------------


@njit(cache=True)
def emission_loglik(X, logB):
    """``out[t, y] = sum_s log B[s, y, X[t, s]]``."""
    T, S = X.shape
    N = logB.shape[1]
    out = np.zeros((T, N))
    for t in range(T):
        for s in range(S):
            e = X[t, s]
            for y in range(N):
                out[t, y] += logB[s, y, e]
    return out


# ---------------------------------------------------------------------------
# lag-1 variant: the latest frame's counts stay conditional on the state
# ---------------------------------------------------------------------------


@njit(cache=True)
def lag1_sweep(
    X,
    starts,
    belief,
    pend,
    has_pend,
    gamma,
    alpha,
    mbar,
    xs,
    bprec,
    bg,
    nsym,
    learn_start,
    learn_trans,
    learn_emis,
    mode,
    min_prec,
    post_out,
    logk_out,
):
    """BMM with a one-frame lag, ``O(N^2 + N S)`` per step.

    Family: ``Q(Theta, Phi, Y_t = y) = c_y Base(Theta, Phi) x [beta_{s, y, x_t^s} + 1 for all s]``
    (and ``gamma_y + 1`` when ``t`` started a sequence): the most recent frame's
    counts are kept *conditional on the current state* instead of being merged
    with the filtered weights.  At ``t + 1`` the exact mixture over
    ``(i = Y_t, y = Y_{t+1})`` has weights
    ``w[i, y] ∝ c_i E[theta_iy] prod_s E[phi_{s, y, x'_s} | pending_i]`` and the
    pending counts of frame ``t`` are merged into ``Base`` with the one-step
    *smoothed* weights ``r_i = sum_y w[i, y] = P(Y_t = i | e_{1:t+1})``.

    ``pend`` (S,) holds the pending frame, ``has_pend[0]`` is 0 (none), 1
    (pending emission counts) or 2 (pending emission and start counts).
    """
    T = X.shape[0]
    S = X.shape[1]
    N = alpha.shape[0]
    lik = np.empty(N)
    likd = np.empty(N)
    w = np.empty((N, N))
    r = np.empty(N)
    cnew = np.empty(N)
    mwork = np.empty(N)
    tmp2 = np.empty((2, N))
    for t in range(T):
        obs = X[t]
        if starts[t] and has_pend[0] > 0:
            # the previous sequence ended: merge its pending counts with the filter
            lag1_flush(belief, pend, has_pend, gamma, mbar, xs, bprec, bg, nsym, learn_start,
                       learn_emis, mode, min_prec)
        # predictive likelihoods, with the pending counts for y == i
        logscale = 0.0
        for y in range(N):
            lik[y] = 1.0
            likd[y] = 1.0
        for s in range(S):
            e = obs[s]
            mx = 0.0
            for y in range(N):
                m = mbar[s, y, e] * xs[s, y]
                lik[y] *= m
                if has_pend[0] > 0 and learn_emis:
                    B = bprec[s, y]
                    d = 1.0 if pend[s] == e else 0.0
                    likd[y] *= (B * m + d) / (B + 1.0)
                else:
                    likd[y] *= m
                if lik[y] > mx:
                    mx = lik[y]
                if likd[y] > mx:
                    mx = likd[y]
            if mx < _RESCALE_BELOW and mx > 0.0:
                for y in range(N):
                    lik[y] /= mx
                    likd[y] /= mx
                logscale += np.log(mx)
        Z = 0.0
        if starts[t]:
            G = 0.0
            for j in range(N):
                G += gamma[j]
            for y in range(N):
                cnew[y] = gamma[y] / G * lik[y]
                Z += cnew[y]
            if not (Z > 0.0) or not np.isfinite(Z):
                for y in range(N):
                    cnew[y] = 1.0 / N
                Z = 1e-300
            else:
                for y in range(N):
                    cnew[y] /= Z
            has_pend[0] = 2
        else:
            for i in range(N):
                A = 0.0
                for j in range(N):
                    A += alpha[i, j]
                ci = belief[i] / A
                for y in range(N):
                    v = ci * alpha[i, y] * (likd[y] if y == i else lik[y])
                    w[i, y] = v
                    Z += v
            if not (Z > 0.0) or not np.isfinite(Z):
                for i in range(N):
                    for y in range(N):
                        w[i, y] = 1.0 / (N * N)
                Z = 1e-300
            else:
                inv = 1.0 / Z
                for i in range(N):
                    for y in range(N):
                        w[i, y] *= inv
            for y in range(N):
                cnew[y] = 0.0
            for i in range(N):
                ri = 0.0
                for y in range(N):
                    ri += w[i, y]
                    cnew[y] += w[i, y]
                r[i] = ri
            if learn_trans:
                for i in range(N):
                    update_row(alpha[i], r[i], w[i], mode, min_prec, mwork)
            if learn_emis and has_pend[0] > 0:
                for s in range(S):
                    update_emissions_sensor(mbar, xs, bprec, bg, s, pend[s], r, nsym[s], mode, min_prec, tmp2)
            if has_pend[0] == 2 and learn_start:
                update_row(gamma, 1.0, r, mode, min_prec, mwork)
            has_pend[0] = 1
        for s in range(S):
            pend[s] = obs[s]
        tot = 0.0
        for y in range(N):
            tot += cnew[y]
        for y in range(N):
            belief[y] = cnew[y] / tot
            post_out[t, y] = belief[y]
        logk_out[t] = np.log(Z) + logscale


@njit(cache=True)
def lag1_flush(belief, pend, has_pend, gamma, mbar, xs, bprec, bg, nsym, learn_start, learn_emis,
               mode, min_prec):
    """Merge the pending frame of :func:`lag1_sweep` with the filtered belief."""
    S = pend.shape[0]
    N = gamma.shape[0]
    if has_pend[0] > 0 and learn_emis:
        tmp2 = np.empty((2, N))
        for s in range(S):
            update_emissions_sensor(mbar, xs, bprec, bg, s, pend[s], belief, nsym[s], mode, min_prec, tmp2)
    if has_pend[0] == 2 and learn_start:
        update_row(gamma, 1.0, belief, mode, min_prec, np.empty(N))
    has_pend[0] = 0
