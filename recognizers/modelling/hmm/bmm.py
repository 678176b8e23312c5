"""Online Bayesian Moment Matching for HMMs with several discrete sensors.

``BMMHMM`` learns an HMM whose hidden state emits one discrete symbol per
sensor (sensors independent given the state) in a single pass over the data,
following Omar (2016), chapter 7.  The posterior over the parameters is kept as
one product of Dirichlets:

* ``startprob_concentration_``  ``(N,)``       Dirichlet over the start distribution
* ``transmat_concentration_``   ``(N, N)``     one Dirichlet per transition row
* ``emissionprob_concentration_`` ``(S, N, M)`` one Dirichlet per sensor and state
  (``M = max(n_symbols_)``; entries ``>= n_symbols_[s]`` are 0 and not part of it)

After each frame the exact posterior (a mixture over previous/current state of
products of Dirichlets) is projected back onto one product by matching the
first moments and one second moment of every Dirichlet (see
:mod:`recognizers.modelling.hmm.bmm_core` for the update and its derivation).

Methods (``method=``):

``"fast"`` (default)
    Thesis Algs 11-12: ``O(N^2 + N S)`` per frame.
``"lag1"``
    The same cost, with emission (and start) counts assigned one frame late
    using the one-step smoothed state posterior: a richer approximating family
    whose first step is exact as well; slightly more accurate.
``"per_state"``
    Thesis Alg 10 (Alg 9 when ``emissionprob`` is given): one product of
    Dirichlets per current state, ``O(N^4 + N^3 S M)`` per frame; a reference
    for small models.

Label switching (thesis 7.2.2): the posterior is symmetric under the ``N!``
relabellings of the hidden states.  Following the thesis, the approximating
family is a slightly asymmetric mixture over permutations whose components
share one (permuted) set of hyper-parameters; matching its moments reduces to
matching the identity component alone (eq 7.18), so only one product of
Dirichlets is stored.  What breaks the symmetry in practice is the prior: a
perfectly symmetric prior keeps every state identical forever, so the
emission prior is made non-symmetric (``init="data"``: each state's prior
mean is tilted towards a different profile of a quick time-less mixture fit
on windows of the data; ``init="random"``: towards a random point of the
simplex), with weight ``prior_asymmetry``; :meth:`BMMHMM.fit` lets
``n_init`` such priors compete on a prefix of the stream.
"""

from __future__ import annotations

import json
import numbers
from pathlib import Path

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from recognizers.base import NotFittedError
from recognizers.modelling import chain as _chain
from recognizers.modelling.dirichlet import SECOND_MOMENTS
from recognizers.modelling.em import check_random_state
from recognizers.modelling.hmm import bmm_core as _core
from recognizers.modelling.hmm.multisensor import (  # re-exported: their historical home
    PILOT_RESTARTS,
    MultiSensorHMMInferenceMixin,
    OnlineMultiSensorHMM,
    best_permutation_accuracy,
    mixture_profiles,
    split_lengths,
    starts_mask,
    validate_symbols,
)

__all__ = [
    "BMMHMM",
    "NotFittedError",
    "validate_symbols",
    "split_lengths",
    "best_permutation_accuracy",
    "MultiSensorHMMInferenceMixin",
]

_FORMAT = "walkerlab.bmmhmm"
_FORMAT_VERSION = 1


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------


class BMMHMM(OnlineMultiSensorHMM):
    """Multi-sensor discrete HMM learnt online by Bayesian moment matching.

    Parameters
    ----------
    n_components : int
        Number of hidden states ``N``.
    n_symbols : int, sequence of int or None
        Alphabet size per sensor; inferred as ``max + 1`` from the first data
        seen when None.
    method : {"fast", "lag1", "per_state"}
        ``"fast"``: thesis Algs 11-12, ``O(N^2 + N S)`` per frame.
        ``"lag1"``: same cost; the latest frame's counts stay conditional on
        the current state and are merged one frame later with the smoothed
        ``P(Y_t | e_{1:t+1})`` (see :func:`bmm_core.lag1_sweep`).
        ``"per_state"``: thesis Alg 10 / Alg 9, one posterior per current state.
    second_moment : {"sum", "first"}
        Second moment matched per Dirichlet: ``E[sum_k theta_k^2]`` (default)
        or ``E[theta_1^2]`` (literally thesis eq 4.15).
    startprob_prior, transmat_prior, emissionprob_prior : float or array
        Dirichlet pseudo-counts per entry (arrays of shape ``(N,)``,
        ``(N, N)`` and ``(S, N, M)`` are used as given).
    self_transition_prior : float
        Extra pseudo-count on the diagonal of ``transmat_prior`` (persistence).
    prior_asymmetry : float in [0, 1)
        How far each state's emission prior mean is tilted away from uniform
        (breaks the label symmetry; see module doc).  Ignored for array
        ``emissionprob_prior``.
    init : {"data", "random"}
        Where each state's emission prior mean is tilted to.  ``"data"``: the
        component profiles of a short EM fit of a time-less mixture model to
        windows of ``init_window`` frames of the first training batch
        (k-means++ seeded, ``PILOT_RESTARTS`` restarts; the candidates of
        ``n_init`` are its best restarts); ``"random"``: random points of the
        simplex.  The data only choose the direction of the tilt; its weight
        is ``prior_asymmetry`` of ``emissionprob_prior`` pseudo-counts.
    init_window : int
        Frames per window of that pilot (assumes states persist that long;
        1 makes it a plain frame-level mixture).
    emissionprob : array (S, N, M) or None
        Known observation model (thesis 7.2.1, Alg 9): only the start and
        transition Dirichlets are learnt.
    n_init : int
        :meth:`fit` only: number of candidate non-symmetric priors.  Each
        candidate learns from the first ``init_frames`` frames; the one with the
        highest predictive log-likelihood ``sum_t log P(e_t | e_{1:t-1})`` on
        that prefix (a model-evidence estimate) continues over the rest.  Every
        frame is still learnt from once by the returned model; the extra cost
        is ``(n_init - 1) * init_frames`` steps.  (A single online pass can
        lock two true states into one learnt state early on; the prefix
        evidence reliably tells those runs apart.)
    init_frames : int
        Length of that prefix.
    algorithm : {"viterbi", "map"}
        Decoder used by :meth:`predict` (as in hmmlearn).
    min_precision : float
        Floor on every Dirichlet precision.
    random_state : None, int or numpy Generator

    Attributes
    ----------
    startprob_concentration_ : ndarray of shape (n_components,)
    transmat_concentration_ : ndarray of shape (n_components, n_components)
    emissionprob_concentration_ : ndarray of shape (n_sensors, n_components, M)
        The Dirichlet posterior (for a known observation model, the given
        probabilities).
    startprob_, transmat_, emissionprob_ : ndarray
        Its means, the point estimates ``predict`` and ``score`` use.
    belief_ : ndarray of shape (n_components,)
        The current filtered belief over the hidden state.
    n_features_in_ : int
        Number of sensors.
    n_symbols_ : ndarray of shape (n_sensors,)
        Alphabet size per sensor.
    n_steps_, n_sequences_ : int
        Frames and sequences learnt from.
    predictive_loglik_ : float
        ``sum_t log P(e_t | e_{1:t-1})`` over the frames learnt from.
    init_scores_ : ndarray of shape (n_init,)
        ``fit``: each candidate prior's predictive log-likelihood on the prefix.

    References
    ----------
    Omar, F. "Online Bayesian Learning in Probabilistic Graphical Models using Moment
    Matching with Applications", PhD thesis, University of Waterloo, 2016.
    """

    _parameter_constraints = {
        **OnlineMultiSensorHMM._parameter_constraints,
        "method": [StrOptions({"fast", "lag1", "per_state"})],
        "second_moment": [StrOptions(set(SECOND_MOMENTS))],
        "startprob_prior": [Interval(numbers.Real, 0, None, closed="neither"), "array-like"],
        "transmat_prior": [Interval(numbers.Real, 0, None, closed="neither"), "array-like"],
        "self_transition_prior": [Interval(numbers.Real, 0, None, closed="left")],
        "emissionprob_prior": [Interval(numbers.Real, 0, None, closed="neither"),
                               "array-like"],
        "prior_asymmetry": [Interval(numbers.Real, 0, 1, closed="left")],
        "emissionprob": [None, "array-like"],
        "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "init_frames": [Interval(numbers.Integral, 1, None, closed="left")],
        "min_precision": [Interval(numbers.Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        n_components=2,
        *,
        n_symbols=None,
        method="fast",
        second_moment="sum",
        startprob_prior=1.0,
        transmat_prior=1.0,
        self_transition_prior=10.0,
        emissionprob_prior=1.0,
        prior_asymmetry=0.5,
        init="data",
        emissionprob=None,
        init_window=8,
        n_init=4,
        init_frames=20000,
        algorithm="viterbi",
        min_precision=1e-8,
        random_state=None,
    ):
        self.n_components = n_components
        self.n_symbols = n_symbols
        self.method = method
        self.second_moment = second_moment
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.self_transition_prior = self_transition_prior
        self.emissionprob_prior = emissionprob_prior
        self.prior_asymmetry = prior_asymmetry
        self.init = init
        self.emissionprob = emissionprob
        self.init_window = init_window
        self.n_init = n_init
        self.init_frames = init_frames
        self.algorithm = algorithm
        self.min_precision = min_precision
        self.random_state = random_state

    # -- parameters ---------------------------------------------------------

    def _resolve_n_symbols(self, X):
        if self.n_symbols is None and self.emissionprob is not None:
            return np.full(X.shape[1], np.asarray(self.emissionprob).shape[2], dtype=np.int64)
        return super()._resolve_n_symbols(X)

    def _positive(self, value, shape, name):
        a = np.asarray(value, dtype=np.float64)
        if a.ndim == 0:
            a = np.full(shape, float(a))
        if a.shape != shape:
            raise ValueError(f"{name} must be a scalar or have shape {shape}, got {a.shape}")
        if not np.all(np.isfinite(a)) or not np.all(a > 0):
            raise ValueError(f"{name} must be positive and finite")
        return a.copy()

    def _init_state(self, X, targets=None):
        """Build the (non-symmetric) prior product of Dirichlets.

        ``targets`` ``(S, N, M)``: what each state's emission prior leans to
        (computed from ``X`` per ``init`` when None)."""
        N = int(self.n_components)
        S = X.shape[1]
        ns = self._resolve_n_symbols(X)
        M = int(ns.max())
        rng = check_random_state(self.random_state)
        gamma = self._positive(self.startprob_prior, (N,), "startprob_prior")
        alpha = self._positive(self.transmat_prior, (N, N), "transmat_prior")
        alpha[np.diag_indices(N)] += float(self.self_transition_prior)
        known = self.emissionprob is not None
        if known:
            B = np.asarray(self.emissionprob, dtype=np.float64)
            if B.shape != (S, N, M):
                raise ValueError(f"emissionprob must have shape {(S, N, M)}, got {B.shape}")
            for s in range(S):
                if np.any(B[s, :, ns[s]:] != 0):
                    raise ValueError(f"emissionprob[{s}] has mass beyond n_symbols[{s}]")
            if not np.all(np.isfinite(B)) or np.any(B < 0):
                raise ValueError("emissionprob must be finite and non-negative")
            if not np.allclose(B.sum(2), 1.0, atol=1e-8):
                raise ValueError("emissionprob rows must sum to 1")
            if np.any(B[np.broadcast_to(np.arange(M) < ns[:, None, None], B.shape)] <= 0):
                raise ValueError(
                    "emissionprob must be strictly positive on every valid symbol "
                    "(a zero makes the likelihood of that symbol zero)"
                )
            beta = B.copy()
        else:
            beta = np.zeros((S, N, M))
            prior = np.asarray(self.emissionprob_prior, dtype=np.float64)
            if prior.ndim == 0:
                if not (np.isfinite(prior) and prior > 0):
                    raise ValueError("emissionprob_prior must be positive and finite")
                eps = float(self.prior_asymmetry)
                if targets is None:
                    targets = self._tilt_targets(X, ns, rng)[0]
                for s in range(S):
                    m = ns[s]
                    base = np.full((N, m), 1.0 / m)
                    mean = (1.0 - eps) * base + eps * targets[s][:, :m]
                    beta[s, :, :m] = mean * float(prior) * m
            else:
                if prior.shape != (S, N, M):
                    raise ValueError(
                        f"emissionprob_prior array must have shape {(S, N, M)}, got {prior.shape}"
                    )
                for s in range(S):
                    if np.any(~(prior[s, :, : ns[s]] > 0)) or np.any(prior[s, :, ns[s]:] != 0):
                        raise ValueError(
                            "emissionprob_prior must be positive on valid symbols and 0 beyond"
                        )
                beta = prior.copy()
        self.n_features_in_ = S
        self.n_symbols_ = ns
        self._known = known
        self._mode = _core.MODE_SUM if self.second_moment == "sum" else _core.MODE_FIRST
        self._belief = np.full(N, 1.0 / N)
        self._open = False  # is a sequence in progress?
        self.n_steps_ = 0
        self.n_sequences_ = 0
        self.predictive_loglik_ = 0.0
        if self.method in ("fast", "lag1"):
            self._pend = np.zeros(S, dtype=np.int64)
            self._has_pend = np.zeros(1, dtype=np.int64)
            self._gamma = gamma
            self._alpha = alpha
            if known:
                self._mbar = beta.copy()
                self._xs = np.ones((S, N))
                self._bprec = np.ones((S, N))
                self._bg = np.ones((S, N))
            else:
                B = beta.sum(2)
                self._mbar = beta / B[:, :, None]
                self._xs = np.ones((S, N))
                self._bprec = B
                self._bg = 1.0 - (self._mbar**2).sum(2)
        else:
            self._G = np.repeat(gamma[None], N, axis=0)
            self._Al = np.repeat(alpha[None], N, axis=0)
            self._Be = np.repeat(beta[None], N, axis=0)
            self._fixed = beta.copy() if known else np.ones((S, N, M))
            self._collapsed = np.ones(1, dtype=np.int64)
        self._prior_gamma = gamma.copy()
        self._prior_alpha = alpha.copy()
        self._prior_beta = beta.copy()

    def _tilt_targets(self, X, ns, rng):
        """Candidate tilts: a list of ``(S, N, M)`` arrays, most promising first."""
        N = int(self.n_components)
        S = X.shape[1]
        M = int(ns.max())
        targets = np.zeros((S, N, M))
        if self.init == "random" or X.shape[0] < 4 * N * max(1, int(self.init_window)):
            # (too little data for a pilot fit, e.g. a stream started with
            # step(): random tilts, which still break the symmetry)
            out = []
            for _ in range(max(1, int(self.n_init))):
                targets = np.zeros((S, N, M))
                for s in range(S):
                    targets[s, :, : ns[s]] = rng.dirichlet(np.ones(ns[s]), size=N)
                out.append(targets)
            return out
        # "data": a short EM fit of a mixture of products of categoricals (the
        # HMM's emission model without the dynamics) on a subsample, seeded
        # k-means++-style; its component profiles are what the states lean to.
        return mixture_profiles(
            X, ns, N, rng, window=self.init_window, n_init=max(PILOT_RESTARTS, int(self.n_init))
        )

    # -- learning -----------------------------------------------------------

    def _run(self, X, starts, learn=True):
        T = X.shape[0]
        N = int(self.n_components)
        post = np.empty((T, N))
        logk = np.empty(T)
        learn_emis = not self._known
        if self.method == "fast":
            _core.fast_sweep(
                X, starts, self._belief, self._gamma, self._alpha, self._mbar, self._xs,
                self._bprec, self._bg, self.n_symbols_, learn, learn, learn and learn_emis,
                self._mode, float(self.min_precision), post, logk,
            )
        elif self.method == "lag1":
            _core.lag1_sweep(
                X, starts, self._belief, self._pend, self._has_pend, self._gamma, self._alpha,
                self._mbar, self._xs, self._bprec, self._bg, self.n_symbols_, learn, learn,
                learn and learn_emis, self._mode, float(self.min_precision), post, logk,
            )
        else:
            if not learn:
                raise RuntimeError("internal: per_state runs only when learning")
            _core.perstate_sweep(
                X, starts, self._belief, self._G, self._Al, self._Be, self._fixed,
                self.n_symbols_, True, True, learn_emis, self._mode,
                float(self.min_precision), self._collapsed, post, logk,
            )
        self.n_steps_ += T
        self.n_sequences_ += int(starts.sum())
        self.predictive_loglik_ += float(logk.sum())
        self._open = True
        return post, logk

    def _fit_pass(self, X, starts):
        """``n_init`` candidate priors compete on the first ``init_frames`` frames (see
        the class docstring); the best learns from the rest."""
        n_init = 1 if self.emissionprob is not None else int(self.n_init)
        tilts = [None] * n_init
        if self.emissionprob is None and np.ndim(self.emissionprob_prior) == 0:
            tilts = self._tilt_targets(X, self._resolve_n_symbols(X),
                                       check_random_state(self.random_state))
        P = min(int(self.init_frames), X.shape[0]) if n_init > 1 else 0
        best, best_score, scores = None, -np.inf, []
        for k in range(n_init):
            cand = type(self)(**{**self.get_params(), "n_init": 1})
            cand._init_state(X, tilts[k])
            if P:
                cand._run(X[:P], starts[:P])
            scores.append(cand.predictive_loglik_)
            if best is None or cand.predictive_loglik_ > best_score:
                best, best_score = cand, cand.predictive_loglik_
        if P < X.shape[0]:
            best._run(X[P:], starts[P:])
        state = {k: v for k, v in vars(best).items() if k not in self._get_param_names()}
        for k in list(vars(self)):
            if k not in self._get_param_names():
                delattr(self, k)
        vars(self).update(state)
        self.init_scores_ = np.asarray(scores)
        self.history_ = {"predictive_loglik": self.predictive_loglik_,
                         "init_scores": self.init_scores_}

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit_filter(self, X):
        """Learn from frames that continue the current stream; return their filtered posteriors.

        The same update as :meth:`partial_fit` without ``lengths``; returns
        ``P(Y_t | e_{1:t})`` ``(T, n_components)`` under the posterior as it was
        learnt up to each frame (what a live display shows while learning).
        """
        post, _ = self._run(*self._stream_batch(X, None))
        return post

    def step(self, x, *, learn=True):
        """Process one frame ``x`` (``(n_sensors,)`` symbols) of the current stream.

        Returns the filtered posterior ``P(Y_t | e_{1:t})`` (sums to 1).  With
        ``learn=False`` the parameters are left unchanged and the frame is
        filtered with the posterior-mean parameters.
        """
        x = np.asarray(x)
        if x.ndim != 1:
            raise ValueError(f"step expects one frame of shape (n_sensors,), got {x.shape}")
        X = x.reshape(1, -1)
        if learn:
            self.partial_fit(X)
            return self._belief.copy()
        self._check_fitted()
        X = validate_symbols(X, self, n_symbols=self.n_symbols_)
        if self.method == "lag1":
            self._flush()  # the pending frame is learnt from with the learning filter
        log_pi, log_A, log_B = self._log_params()
        ll = _core.emission_loglik(X, log_B)[0]
        prev = None
        if self._open:
            with np.errstate(divide="ignore"):
                prev = np.log(self._belief)
        res = _chain.filter_step(prev, log_pi, log_A, ll)
        p = np.exp(res.log_alpha)
        self._belief = p / p.sum()
        self._open = True
        return self._belief.copy()

    def reset(self):
        """End the current stream; the next frame starts a new sequence."""
        super().reset()
        if self._is_initialised() and self.method == "lag1":
            self._flush()
        if self._is_initialised():
            self._belief = np.full(int(self.n_components), 1.0 / int(self.n_components))
        return self

    # -- posterior access ---------------------------------------------------

    def _flush(self, state=None):
        """lag1: merge the pending frame into ``state`` (default: the live one)."""
        g, mbar, xs, bprec, bg, hp = state or (
            self._gamma, self._mbar, self._xs, self._bprec, self._bg, self._has_pend)
        _core.lag1_flush(self._belief, self._pend, hp, g, mbar, xs, bprec, bg, self.n_symbols_,
                         True, not self._known, self._mode, float(self.min_precision))

    def _collapsed_concentrations(self):
        if self.method in ("fast", "lag1"):
            g, mbar, xs, bprec = self._gamma.copy(), self._mbar, self._xs, self._bprec
            if self.method == "lag1" and self._has_pend[0] > 0:
                mbar, xs, bprec = mbar.copy(), xs.copy(), bprec.copy()
                self._flush((g, mbar, xs, bprec, self._bg.copy(), self._has_pend.copy()))
            beta = mbar * (xs * bprec)[:, :, None] if not self._known else mbar.copy()
            return g, self._alpha.copy(), beta
        G = self._G.copy()
        Al = self._Al.copy()
        Be = self._Be.copy()
        if self._collapsed[0] == 0:
            _core.perstate_collapse(
                self._belief.copy(), G, Al, Be, self.n_symbols_, not self._known,
                self._mode, float(self.min_precision),
            )
        return G[0].copy(), Al[0].copy(), Be[0].copy()

    @property
    def startprob_concentration_(self):
        self._check_fitted()
        return self._collapsed_concentrations()[0]

    @property
    def transmat_concentration_(self):
        self._check_fitted()
        return self._collapsed_concentrations()[1]

    @property
    def emissionprob_concentration_(self):
        """``(S, N, M)``; for a known observation model, the given probabilities."""
        self._check_fitted()
        return self._collapsed_concentrations()[2]

    @property
    def startprob_(self):
        g = self.startprob_concentration_
        return g / g.sum()

    @property
    def transmat_(self):
        a = self.transmat_concentration_
        return a / a.sum(1, keepdims=True)

    @property
    def emissionprob_(self):
        """Posterior mean emission probabilities ``(S, N, M)`` (0 beyond ``n_symbols_[s]``)."""
        b = self.emissionprob_concentration_
        return b / b.sum(2, keepdims=True)

    @property
    def belief_(self):
        """Current filtered belief over the hidden state."""
        self._check_fitted()
        return self._belief.copy()

    def _log_params(self):
        g, a, b = self._collapsed_concentrations()
        with np.errstate(divide="ignore"):
            log_pi = np.log(g / g.sum())
            log_A = np.log(a / a.sum(1, keepdims=True))
            log_B = np.log(b / b.sum(2, keepdims=True))
        return log_pi, log_A, log_B

    # -- persistence (npz + JSON, no pickle) ---------------------------------

    def save(self, path):
        """Write the learnt posterior to ``path`` (``.npz`` with a JSON header)."""
        self._check_fitted()
        g, a, b = self._collapsed_concentrations()
        params = {}
        for k, v in self.get_params().items():
            if isinstance(v, np.ndarray):
                continue
            if isinstance(v, np.random.Generator):
                v = None
            params[k] = v
        meta = {
            "format": _FORMAT,
            "format_version": _FORMAT_VERSION,
            "params": params,
            "n_steps": int(self.n_steps_),
            "n_sequences": int(self.n_sequences_),
            "known_emissions": bool(self._known),
        }
        arrays = {
            "startprob_concentration": g,
            "transmat_concentration": a,
            "emissionprob_concentration": b,
            "n_symbols": self.n_symbols_,
            "belief": self._belief,
        }
        for k, v in self.get_params().items():
            if isinstance(v, np.ndarray):
                arrays["param_" + k] = v
        np.savez(path, meta=np.array(json.dumps(meta)), **arrays)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save` (continues learning from its posterior)."""
        with np.load(Path(path), allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            if meta.get("format") != _FORMAT or int(meta.get("format_version", 0)) > _FORMAT_VERSION:
                raise ValueError(f"{path} is not a supported {_FORMAT} file")
            params = dict(meta["params"])
            for k in z.files:
                if k.startswith("param_"):
                    params[k[6:]] = z[k]
            g = z["startprob_concentration"]
            a = z["transmat_concentration"]
            b = z["emissionprob_concentration"]
            ns = z["n_symbols"]
            belief = z["belief"]
        model = cls.from_concentrations(
            params, g, a, b, ns, known_emissions=bool(meta["known_emissions"]),
            belief=belief, n_steps=int(meta["n_steps"]), n_sequences=int(meta["n_sequences"]))
        return model

    @classmethod
    def from_concentrations(cls, params, startprob_concentration, transmat_concentration,
                            emissionprob_concentration, n_symbols, *, known_emissions=False,
                            belief=None, n_steps=0, n_sequences=0):
        """A model whose posterior is the given product of Dirichlets, ready to go on learning.

        ``params`` are constructor parameters; the concentrations are those of
        ``*_concentration_`` (for a known observation model the third is the
        emission probabilities).  :meth:`load` and the walker recognizer use this.
        """
        model = cls(**params)
        g = np.array(startprob_concentration, dtype=np.float64)
        a = np.array(transmat_concentration, dtype=np.float64)
        b = np.array(emissionprob_concentration, dtype=np.float64)
        S, N, M = b.shape
        if g.shape != (N,) or a.shape != (N, N) or N != int(model.n_components):
            raise ValueError("concentrations of shapes %s, %s, %s do not describe %d states"
                             % (g.shape, a.shape, b.shape, int(model.n_components)))
        if not (np.all(g > 0) and np.all(a > 0)):
            raise ValueError("start and transition concentrations must be positive")
        model._validate_params()
        model.n_features_in_ = S
        model.n_symbols_ = np.asarray(n_symbols).astype(np.int64)
        model._known = bool(known_emissions)
        model._mode = _core.MODE_SUM if model.second_moment == "sum" else _core.MODE_FIRST
        model._belief = (np.full(N, 1.0 / N) if belief is None
                         else np.array(belief, dtype=np.float64))
        model._open = False
        model.n_steps_ = int(n_steps)
        model.n_sequences_ = int(n_sequences)
        model.predictive_loglik_ = 0.0
        if model.method in ("fast", "lag1"):
            model._pend = np.zeros(S, dtype=np.int64)
            model._has_pend = np.zeros(1, dtype=np.int64)
            model._gamma, model._alpha = g.copy(), a.copy()
            if model._known:
                model._mbar, model._bprec, model._bg = b.copy(), np.ones((S, N)), np.ones((S, N))
            else:
                B = b.sum(2)
                model._mbar = b / B[:, :, None]
                model._bprec = B
                model._bg = 1.0 - (model._mbar**2).sum(2)
            model._xs = np.ones((S, N))
        else:
            model._G = np.repeat(g[None], N, 0)
            model._Al = np.repeat(a[None], N, 0)
            model._Be = np.repeat(b[None], N, 0)
            model._fixed = b.copy() if model._known else np.ones((S, N, M))
            model._collapsed = np.ones(1, dtype=np.int64)
        model._prior_gamma, model._prior_alpha, model._prior_beta = g.copy(), a.copy(), b.copy()
        return model
