"""HCRF-DPM cores: functions of arrays, with these corrections of the paper's equations:
E[log pi_k] sums E[log(1 - v_j)] over the earlier pieces j < k (eq. 31 writes the
later ones); the Beta updates weight each later state j by its own theta (eqs. 26, 28,
30 use state k's); the free term of the gradient in a label-owned weight runs over
that label only (eqs. 33-34 sum over every label).

Hidden states h_1..h_L are shared by every label (truncation L). With nonnegative
features f and weights theta >= 0, the log-potential of label y and path s is (eq. 5)

    sum_t [ sum_i theta_x[k,i] f_t(i) El_x[k,i] + theta_y[k,y] El_y[k,y] ]_{k=s_t}
    + sum_{t>=2} theta_e[y, s_{t-1}, s_t] El_e[y, s_{t-1}, s_t]

with El = E_q[log pi] of the stick weights (phase 1). Shapes:
theta_x, El_x (L, d); theta_y, El_y (L, C); theta_e, El_e (C, L, L) indexed
[y, previous, next]. The edge stick of previous state k' runs over the pieces
mu = k * C + y (state-major: the paper leaves the order open); :func:`edge_el` maps it to (C, L, L).
Chain inference is :mod:`recognizers.modelling.chain` (log space, numba).

References
----------
K. Bousmalis, S. Zafeiriou, L.-P. Morency, M. Pantic and Z. Ghahramani, "Variational
Hidden Conditional Random Fields with Coupled Dirichlet Process Mixtures", ECML PKDD
2013, LNAI 8189, pp. 531-547.
"""
from __future__ import annotations

import numba
import numpy as np

from .. import chain, sticks


def edge_el(el_pieces, n_classes):
    """(L, L*C) E[log pi_e] along each previous state's stick -> (C, L, L) [y, k', k]."""
    L = el_pieces.shape[0]
    return el_pieces.reshape(L, L, n_classes).transpose(2, 0, 1).copy()


def label_scores(Ux, theta_y, theta_e, El_y, El_e, y):
    """Node (T, L) and edge (L, L) log-potentials of label y (eq. 5 / 31), given the
    label-free feature term Ux = F @ (theta_x * El_x).T (T, L) shared by every label."""
    U = Ux + (theta_y[:, y] * El_y[:, y])[None, :]
    A = theta_e[y] * El_e[y]
    return U, np.ascontiguousarray(A)


@numba.njit(cache=True)
def _label_pass(U, A, offsets, post, xis, logZ, stats):
    """Every sequence under one label's chain (node scores U, edge scores A).

    Writes logZ[n]; with ``stats`` also the posteriors post[a:b] and each
    sequence's expected transition counts xis[n]. The recursions are
    :mod:`~recognizers.modelling.chain`'s scaled kernels, run per sequence so that
    log Z and the counts stay per sequence; the label's transition matrix is
    exponentiated once for all of them (per sequence it cost as much as the
    recursions on short sequences). A sequence whose scaled recursion underflows is
    redone by the chain's kernel, which falls back to exact log space.
    """
    L = U.shape[1]
    z = np.zeros(L)
    lik = np.empty((U.shape[0], L))
    offs = np.empty(2, dtype=np.int64)
    expA, expAT, gmax = chain._transition_scaled(A)
    beta = np.empty(L)
    bu = np.empty(L)
    q = np.empty(L)
    xi_seq = np.empty((L, L))
    for n in range(offsets.shape[0] - 1):
        a, b = offsets[n], offsets[n + 1]
        offs[0] = a
        offs[1] = b
        v = np.nan
        scaled = gmax != -np.inf or b - a == 1
        if not stats:
            if scaled:
                v = chain._loglik_scaled_seq(z, expAT, gmax, U, a, b, beta, bu, q)
            if v != v:
                v = chain._loglik_scaled_kernel(z, A, U, offs)
            logZ[n] = v
            continue
        xi_seq[:, :] = 0.0
        if scaled:
            v = chain._smooth_scaled_seq(z, expA, expAT, gmax, U, a, b, lik, post, xi_seq,
                                         beta, bu, q)
        if v == v:
            for i in range(L):
                for j in range(L):
                    xis[n, i, j] = expA[i, j] * xi_seq[i, j]
        else:
            xis[n, :, :] = 0.0
            v = chain._smooth_scaled_kernel(z, A, U, offs, post, xis[n], lik)
        logZ[n] = v


def _passes(F, lengths, params, El, stats):
    """Per label y: log Z_y(x_n) (N, C); with ``stats`` also the unweighted posteriors
    P (C, T, L) = p(s_t | y, x_n) and per-sequence transition counts X (N, C, L, L)."""
    theta_x, theta_y, theta_e = params
    C, L = theta_y.shape[1], theta_y.shape[0]
    offsets = chain.lengths_to_offsets(F.shape[0], lengths)
    N = len(offsets) - 1
    logZ = np.empty((C, N))
    # _label_pass writes every frame's posterior and every sequence's counts.
    P = np.empty((C, F.shape[0], L)) if stats else np.empty((C, 1, L))
    X = np.empty((N, C, L, L)) if stats else np.empty((1, C, L, L))
    Ux = F @ (theta_x * El[0]).T
    for y in range(C):
        U, A = label_scores(Ux, theta_y, theta_e, El[1], El[2], y)
        _label_pass(U, A, offsets, P[y], X[:, y], logZ[y], stats)
    return logZ.T.copy(), P, X, offsets


def label_log_partitions(F, lengths, params, El):
    """(N, C) log Z_y(x_n) for every sequence and label."""
    return _passes(F, lengths, params, El, False)[0]


def _lse_rows(M):
    m = M.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(M - m).sum(axis=1, keepdims=True)))[:, 0]


def predict_log_proba(F, lengths, params, El):
    """(N, C) log p(y | x_n) ."""
    Z = label_log_partitions(F, lengths, params, El)
    return Z - _lse_rows(Z)[:, None]


def _weighted(P, X, offsets, weights):
    """G (C, T, L) = weights[n, y] * P[y, frames of n]; XI (C, L, L) = sum_n weights X[n]."""
    frame_w = np.repeat(weights, np.diff(offsets), axis=0).T          # (C, T)
    return P * frame_w[:, :, None], np.einsum("nc,ncij->cij", weights, X)


def label_statistics(F, lengths, params, El, weights):
    """Weighted chain statistics per label.

    weights : (N, C) weight of (sequence n, label y). Returns
    (G, XI, logZ) with G (C, T, L) = weights * p(s_t | y, x_n) per frame,
    XI (C, L, L) = sum_n weights[n, y] sum_t xi_t(k', k | y, x_n), and logZ (N, C).
    """
    logZ, P, X, offsets = _passes(F, lengths, params, El, True)
    G, XI = _weighted(P, X, offsets, np.asarray(weights, dtype=np.float64))
    return G, XI, logZ


def nll_and_grad(F, lengths, y, params, El):
    """Negative conditional log-likelihood sum_n log Z(x_n) - log Z_{y_n}(x_n) and its
    gradient in (theta_x, theta_y, theta_e), with the label-owned terms of eqs. 33-34
    restricted to their own label. One forward-backward per (sequence, label)."""
    theta_x, theta_y, theta_e = params
    El_x, El_y, El_e = El
    N = len(lengths)
    Z, P, X, offsets = _passes(F, lengths, params, El, True)
    logp = Z - _lse_rows(Z)[:, None]
    nll = -float(logp[np.arange(N), y].sum())
    # d nll / d score = E_free - E_clamped: weight p(y'|x) - [y_n = y'].
    W = np.exp(logp)
    W[np.arange(N), y] -= 1.0
    # The weighted statistics without materialising W * P (C, T, L).
    frame_w = np.repeat(W, np.diff(offsets), axis=0)    # (T, C)
    Gs = np.einsum("ytl,ty->tl", P, frame_w)            # (T, L)
    per_seq = np.add.reduceat(P, offsets[:-1], axis=1)  # (C, N, L)
    d_x = (Gs.T @ F) * El_x                             # (L, d)
    d_y = np.einsum("ynl,ny->ly", per_seq, W) * El_y    # (L, C)
    d_e = np.einsum("nc,ncij->cij", W, X) * El_e        # (C, L, L)
    return nll, (d_x, d_y, d_e)


def stick_counts(F, lengths, params, G, XI):
    """theta-weighted expected counts for the three stick families (the exact conjugate form).

    G (C, T, L), XI (C, L, L) weighted chain statistics (clamped: weights = one-hot y_n).
    Returns counts_x (d, L), counts_y (C, L), counts_e (L, L*C) (pieces mu = k*C + y).
    """
    theta_x, theta_y, theta_e = params
    C, L = theta_y.shape[1], theta_y.shape[0]
    Gs = G.sum(axis=0)
    cx = (Gs.T @ F) * theta_x                           # (L, d)
    cy = G.sum(axis=1).T * theta_y                      # (L, C)
    ce = XI * theta_e                                   # (C, L, L) [y, k', k]
    return cx.T.copy(), cy.T.copy(), ce.transpose(1, 2, 0).reshape(L, L * C).copy()


def rescale_to_sticks(params, El_old, El_new):
    """theta * El_old / El_new: the parameters whose potentials theta * El_new equal
    theta * El_old, so the model is unchanged when the sticks move (E[log pi] < 0
    always under the truncation, so the ratio is finite and positive)."""
    return tuple(p * (eo / en) for p, eo, en in zip(params, El_old, El_new))


def expected_logs(taus, n_classes):
    """El_x (L, d), El_y (L, C), El_e (C, L, L) from Beta parameters ((a, b) per family)."""
    (ax, bx), (ay, by), (ae, be) = taus
    El_x = sticks.expected_log_weights(ax, bx).T.copy()
    El_y = sticks.expected_log_weights(ay, by).T.copy()
    El_e = edge_el(sticks.expected_log_weights(ae, be), n_classes)
    return El_x, El_y, El_e


def prior_taus(n_features, n_classes, L, alphas):
    """Beta parameters of the prior (a = 1, b = alpha) for every stick, truncated at L."""
    ax, ay, ae = alphas
    return ((np.ones((n_features, L - 1)), np.full((n_features, L - 1), float(ax))),
            (np.ones((n_classes, L - 1)), np.full((n_classes, L - 1), float(ay))),
            (np.ones((L, L * n_classes - 1)), np.full((L, L * n_classes - 1), float(ae))))


def uniform_logs(n_features, n_classes, L):
    """El of equal stick weights (1/L per state, 1/(L C) per edge piece): a neutral start."""
    return (np.full((L, n_features), -np.log(L)), np.full((L, n_classes), -np.log(L)),
            np.full((n_classes, L, L), -np.log(L * n_classes)))
