"""Online EM for multi-sensor discrete HMMs (Cappé 2011), the thesis's 7.4.1 baseline.

Cappé's online EM keeps, for every sufficient statistic ``s(x_{t-1}, x_t, y_t)``
of the complete-data model, an auxiliary function ``rho_t(k)`` ≈
``E[(step-size weighted average of s over the past) | y_{1:t}, X_t = k]``:

    rho_{t+1}(k') = sum_k [(1 - g_{t+1}) rho_t(k) + g_{t+1} s(k, k', y_{t+1})] r_{t+1}(k | k')
    r_{t+1}(k | k') = phi_t(k) A[k, k'] / sum_l phi_t(l) A[l, k']     (backward kernel)

with ``phi_t`` the filter and step sizes ``g_t = t^(-step_exponent)``.  After a
burn-in the M-step sets the parameters from ``S = sum_k rho(k) phi(k)``:
``A[i, j] ∝ S_q[i, j]``, ``B[s, j, m] ∝ S_g[s, j, m]``.  Statistics:
transitions ``1{x_{t-1} = i, x_t = j}`` (``N^3`` numbers) and, per sensor,
emissions ``1{x_t = j, y_t^s = m}`` (``S M N^2`` numbers); cost per frame
``O(N^4 + S M N^3)`` (the thesis derived the single-sensor version).

Several sequences: at a sequence start the auxiliary functions are
marginalised over the last state of the previous sequence (its statistics are
final), no transition statistic is added for the first frame, and the start
distribution is the running mean of the first-frame filters.
"""

from __future__ import annotations

import numbers

import numpy as np
from numba import njit
from sklearn.utils._param_validation import Interval

from recognizers.modelling.em import check_random_state
from recognizers.modelling.hmm.multisensor import OnlineMultiSensorHMM, mixture_profiles

__all__ = ["OnlineEMHMM"]


@njit(cache=True)
def _online_em_sweep(
    X, starts, t0, n_starts0, phi, rq, rg, pi_stat, pi, A, B, nsym,
    exponent, burn_in, smoothing, post_out, logk_out,
):
    """Online EM over ``X``; returns ``(frames seen, sequences seen)``."""
    T = X.shape[0]
    S = X.shape[1]
    N = A.shape[0]
    M = B.shape[2]
    lik = np.empty(N)
    pred = np.empty(N)
    newphi = np.empty(N)
    r = np.empty((N, N))
    t = t0
    n_starts = n_starts0
    rg2 = rg.reshape(S * N * M, N)
    rq2 = rq.reshape(N * N, N)
    for tt in range(T):
        t += 1
        g = t ** (-exponent)
        obs = X[tt]
        lmax = -np.inf
        for k in range(N):
            v = 0.0
            for s in range(S):
                v += np.log(B[s, k, obs[s]])
            lik[k] = v
            if v > lmax:
                lmax = v
        for k in range(N):
            lik[k] = np.exp(lik[k] - lmax)
        if starts[tt]:
            # marginalise the previous sequence's last state out of the statistics
            if t > 1:
                for a in range(N * N):
                    acc = 0.0
                    for k in range(N):
                        acc += rq2[a, k] * phi[k]
                    for k in range(N):
                        rq2[a, k] = acc
                for a in range(S * N * M):
                    acc = 0.0
                    for k in range(N):
                        acc += rg2[a, k] * phi[k]
                    for k in range(N):
                        rg2[a, k] = acc
            Z = 0.0
            for k in range(N):
                newphi[k] = pi[k] * lik[k]
                Z += newphi[k]
            for k in range(N):
                newphi[k] /= Z
            for a in range(N * N):
                for k in range(N):
                    rq2[a, k] *= 1.0 - g
            for a in range(S * N * M):
                for k in range(N):
                    rg2[a, k] *= 1.0 - g
            n_starts += 1
            for k in range(N):
                pi_stat[k] += (newphi[k] - pi_stat[k]) / n_starts
        else:
            Z = 0.0
            for kp in range(N):
                p = 0.0
                for k in range(N):
                    p += phi[k] * A[k, kp]
                pred[kp] = p
                newphi[kp] = p * lik[kp]
                Z += newphi[kp]
            for kp in range(N):
                newphi[kp] /= Z
            for k in range(N):
                for kp in range(N):
                    r[k, kp] = phi[k] * A[k, kp] / pred[kp] if pred[kp] > 0.0 else 0.0
            # rho <- (1 - g) rho r ; transition stats add g 1{j = k'} r(i | k')
            new_q = np.dot(rq2, r) * (1.0 - g)
            new_g = np.dot(rg2, r) * (1.0 - g)
            rq2[...] = new_q
            rg2[...] = new_g
            for i in range(N):
                for kp in range(N):
                    rq[i, kp, kp] += g * r[i, kp]
        # emission statistic 1{x_t = j, y_t^s = m}
        for s in range(S):
            m = obs[s]
            for j in range(N):
                rg[s, j, m, j] += g
        logk_out[tt] = np.log(Z) + lmax
        for k in range(N):
            phi[k] = newphi[k]
            post_out[tt, k] = newphi[k]
        # M-step
        if t >= burn_in:
            for i in range(N):
                tot = 0.0
                for j in range(N):
                    v = smoothing
                    for k in range(N):
                        v += rq[i, j, k] * phi[k]
                    A[i, j] = v
                    tot += v
                for j in range(N):
                    A[i, j] /= tot
            for s in range(S):
                for j in range(N):
                    tot = 0.0
                    for mm in range(nsym[s]):
                        v = smoothing
                        for k in range(N):
                            v += rg[s, j, mm, k] * phi[k]
                        B[s, j, mm] = v
                        tot += v
                    for mm in range(nsym[s]):
                        B[s, j, mm] /= tot
            tot = 0.0
            for k in range(N):
                pi[k] = pi_stat[k] + smoothing
                tot += pi[k]
            for k in range(N):
                pi[k] /= tot
    return t, n_starts


class OnlineEMHMM(OnlineMultiSensorHMM):
    """Multi-sensor discrete HMM learnt by Cappé-style online EM (one pass).

    Parameters
    ----------
    n_components : int
    n_symbols : int, sequence of int or None
        Alphabet size per sensor (inferred from the first data when None).
    step_exponent : float in (0.5, 1]
        Step sizes ``g_t = t^(-step_exponent)`` (Cappé uses 0.6 or so).
    burn_in : int
        Frames processed before the first M-step.
    smoothing : float
        Pseudo-count added to the (frequency-scale) statistics in the M-step;
        keeps every probability positive.
    self_transition : float
        Initial probability of staying in the same state.
    init : {"data", "random"}
        Initial emission probabilities: a time-less mixture fit on a subsample
        (the same pilot as :class:`~recognizers.modelling.hmm.bmm.BMMHMM`) blended with
        uniform, or random (also used when the first batch is too short for
        the pilot).
    init_window : int
        Window length of that pilot (frames assumed to share a state).
    init_blend : float in [0, 1)
        Weight of the pilot/random profile in the initial emission rows.
    algorithm : {"viterbi", "map"}
    random_state : None, int or numpy Generator

    Attributes
    ----------
    startprob_ : ndarray of shape (n_components,)
    transmat_ : ndarray of shape (n_components, n_components)
    emissionprob_ : ndarray of shape (n_sensors, n_components, M)
        The current parameters (0 beyond ``n_symbols_[s]``).
    n_features_in_ : int
        Number of sensors.
    n_symbols_ : ndarray of shape (n_sensors,)
    n_steps_ : int
        Frames learnt from.
    predictive_loglik_ : float
        ``sum_t log P(e_t | e_{1:t-1})`` over the frames learnt from.

    References
    ----------
    Cappé, O. "Online EM Algorithm for Hidden Markov Models", Journal of
    Computational and Graphical Statistics 20(3), 2011.
    Omar, F. "Online Bayesian Learning in Probabilistic Graphical Models using Moment
    Matching with Applications", PhD thesis, University of Waterloo, 2016.
    """

    _parameter_constraints = {
        **OnlineMultiSensorHMM._parameter_constraints,
        "step_exponent": [Interval(numbers.Real, 0.5, 1, closed="right")],
        "burn_in": [Interval(numbers.Integral, 1, None, closed="left")],
        "smoothing": [Interval(numbers.Real, 0, None, closed="neither")],
        "self_transition": [Interval(numbers.Real, 0, 1, closed="left")],
        "init_blend": [Interval(numbers.Real, 0, 1, closed="left")],
    }

    def __init__(
        self,
        n_components=2,
        *,
        n_symbols=None,
        step_exponent=0.6,
        burn_in=100,
        smoothing=1e-4,
        self_transition=0.9,
        init="data",
        init_window=8,
        init_blend=0.5,
        algorithm="viterbi",
        random_state=None,
    ):
        self.n_components = n_components
        self.n_symbols = n_symbols
        self.step_exponent = step_exponent
        self.burn_in = burn_in
        self.smoothing = smoothing
        self.self_transition = self_transition
        self.init = init
        self.init_window = init_window
        self.init_blend = init_blend
        self.algorithm = algorithm
        self.random_state = random_state

    def _init_state(self, X):
        """Initial parameters and empty statistics from the first batch ``X``."""
        rng = check_random_state(self.random_state)
        N = int(self.n_components)
        S = X.shape[1]
        ns = self._resolve_n_symbols(X)
        M = int(ns.max())
        st = float(self.self_transition)
        A = np.full((N, N), (1 - st) / max(N - 1, 1))
        A[np.diag_indices(N)] = st if N > 1 else 1.0
        if self.init == "data" and X.shape[0] >= 4 * N * max(1, int(self.init_window)):
            prof = mixture_profiles(X, ns, N, rng, window=int(self.init_window))[0]
        else:
            prof = np.zeros((S, N, M))
            for s in range(S):
                prof[s, :, : ns[s]] = rng.dirichlet(np.ones(ns[s]), size=N)
        B = np.zeros((S, N, M))
        eps = float(self.init_blend)
        for s in range(S):
            B[s, :, : ns[s]] = (1 - eps) / ns[s] + eps * prof[s, :, : ns[s]]
        self.n_features_in_ = S
        self.n_symbols_ = ns
        self._pi = np.full(N, 1.0 / N)
        self._A = A
        self._B = B
        self._phi = np.full(N, 1.0 / N)
        self._rq = np.zeros((N, N, N))
        self._rg = np.zeros((S, N, M, N))
        self._pi_stat = np.zeros(N)
        self._t = 0
        self._n_starts = 0
        self._open = False
        self.n_steps_ = 0
        self.predictive_loglik_ = 0.0

    def _run(self, X, starts):
        T = X.shape[0]
        post = np.empty((T, int(self.n_components)))
        logk = np.empty(T)
        self._t, self._n_starts = _online_em_sweep(
            X, starts, self._t, self._n_starts, self._phi, self._rq, self._rg,
            self._pi_stat, self._pi, self._A, self._B, self.n_symbols_,
            float(self.step_exponent), int(self.burn_in), float(self.smoothing), post, logk,
        )
        self.n_steps_ += T
        self.predictive_loglik_ += float(logk.sum())
        self._open = True
        return post, logk

    def _fit_pass(self, X, starts):
        self._init_state(X)
        self._run(X, starts)

    def step(self, x):
        """Learn from one frame; return the filtered posterior."""
        x = np.asarray(x)
        if x.ndim != 1:
            raise ValueError(f"step expects one frame of shape (n_sensors,), got {x.shape}")
        self.partial_fit(x.reshape(1, -1))
        return self._phi.copy()

    @property
    def startprob_(self):
        self._check_fitted()
        return self._pi.copy()

    @property
    def transmat_(self):
        self._check_fitted()
        return self._A.copy()

    @property
    def emissionprob_(self):
        self._check_fitted()
        return self._B.copy()

    def _log_params(self):
        self._check_fitted()
        with np.errstate(divide="ignore"):
            return np.log(self._pi), np.log(self._A), np.log(self._B)
