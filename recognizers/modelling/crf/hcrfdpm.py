"""HCRF-DPM sequence classifier: a hidden-state CRF whose hidden states, shared by
every label, are selected by Dirichlet-process sticks (estimator over hcrfdpm_core).

Training (Bousmalis et al. 2013, section 4, with the corrections listed in
:mod:`recognizers.modelling.crf.hcrfdpm_core`) alternates a theta phase, L-BFGS-B on the
conditional log-likelihood over theta >= 0 with the sticks' E[log pi] plugged in and
no regularisation, and a stick phase, the closed-form Beta posteriors of the stick
pieces given the chain posteriors of the fitted model. Between the two, theta is
rescaled so that the new sticks leave every potential theta * E[log pi], hence the
model, unchanged (see :meth:`HCRFDPM._fit_once`). A last pruning step deletes the
states whose removal costs the training objective (almost) nothing
(:meth:`HCRFDPM._prune`).

References
----------
K. Bousmalis, S. Zafeiriou, L.-P. Morency, M. Pantic and Z. Ghahramani, "Variational
Hidden Conditional Random Fields with Coupled Dirichlet Process Mixtures", ECML PKDD
2013, LNAI 8189, pp. 531-547.
"""
from __future__ import annotations

import numbers

import numpy as np
from scipy.optimize import minimize
from sklearn.base import _fit_context
from sklearn.metrics import f1_score
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from . import hcrfdpm_core as core
from .. import sticks
from .hcrf import SequenceClassifier


def encode_signed(X):
    """Nonnegative encoding ``[x+, x-, 1]`` of signed features, per frame.

    The HCRF-DPM's potentials are theta * f * E[log pi] with theta, f >= 0, so a state
    can only be penalised by a feature; the two halves of a signed value and a constant
    let a state prefer high, low or any values.

    Parameters
    ----------
    X : (T, d) array or list of them

    Returns
    -------
    The same kind, with 2d + 1 columns.
    """
    if isinstance(X, (list, tuple)):
        return [encode_signed(x) for x in X]
    X = np.asarray(X, dtype=np.float64)
    return np.hstack([np.maximum(X, 0.0), np.maximum(-X, 0.0), np.ones((X.shape[0], 1))])


# Log-potential per frame of a deleted state: exp(-1e4) underflows to exactly 0 in the
# chain's scaled recursions, so no path visits it and its statistics are exactly 0.
_DELETED_LOG_POTENTIAL = 1e4


class _TargetReached(Exception):
    def __init__(self, x, nll):
        super().__init__()
        self.x, self.nll = x, float(nll)


def _state_usage(F, lengths, yi, params, El):
    """(C, L) share of each label's expected frame occupancy per state, every training
    sequence under its own label."""
    C = params[1].shape[1]
    Wt = np.zeros((len(lengths), C))
    Wt[np.arange(len(lengths)), yi] = 1.0
    occ = core.label_statistics(F, lengths, params, El, Wt)[0].sum(axis=1)
    return occ / np.maximum(occ.sum(axis=1, keepdims=True), 1e-300)


def _restrict(arrays, keep):
    """(theta_x or El_x, theta_y or El_y, theta_e or El_e) of the states ``keep`` (L,) bool."""
    x, y, e = arrays
    return x[keep], y[keep], e[:, keep][:, :, keep]


def _embed(arrays, sub, keep):
    """Copies of the full ``arrays`` with the states ``keep`` (L,) bool set from ``sub``."""
    x, y, e = (a.copy() for a in arrays)
    x[keep], y[keep] = sub[0], sub[1]
    e[np.ix_(np.arange(e.shape[0]), keep, keep)] = sub[2]
    return x, y, e


def _delete_states(params, El, states):
    """params with the label weights of ``states`` (L,) bool set so that their label
    potential theta_y * El_y is -1e4 per frame under every label: the model of the
    other states, expressed in the same (theta, El) arrays."""
    theta_x, theta_y, theta_e = params
    theta_y = theta_y.copy()
    theta_y[states] = _DELETED_LOG_POTENTIAL / -El[1][states]
    return theta_x, theta_y, theta_e


class HCRFDPM(SequenceClassifier):
    """Hidden-state CRF with Dirichlet-process selection of its shared hidden states.

    Parameters
    ----------
    n_states : int, default 10
        Truncation L of the hidden states shared by all labels.
    alpha : float, default 1.0
        Concentration of the three stick families. Under Beta(1, alpha) pieces the
        prior's E[log pi_k] falls by about ``1 + 1/alpha`` nats per piece at alpha = 1,
        so the first theta phase (see ``init``) fills the states in stick order and only
        as far as the data need. (The paper's s1 / s2 = 100 puts almost all prior mass on
        the truncation's last piece: every frame then starts in that one state.)
    update_alpha : bool, default False
        Update the concentrations under a Gamma(s1, s2) hyper-prior in the stick phase.
    s1, s2 : float, defaults 1000 and 10
        Shape and rate of that hyper-prior (the paper's values).
    clamped : bool, default True
        The stick phase counts each training sequence under its own label (True) or
        under every label weighted by p(y | x) (False).
    init : {"label-prior", "prior", "uniform"}, default "label-prior"
        E[log pi] of the first theta phase: the prior's for the label sticks and equal
        weights 1/L for the others ("label-prior"), the prior's for all three families
        ("prior": fewer states, but the emission terms then penalise every later state
        on every frame, and on tasks with many classes the fit stalls, see
        docs/benchmarks.md), or equal weights everywhere ("uniform": most states used).
    count_weights : {"occupancy", "theta"}, default "occupancy"
        What the stick phase counts: each frame's expected state occupancy (feature
        value for the feature sticks), as a Dirichlet-process mixture's conjugate update
        does, or those counts times theta (the paper's exact mean-field update, eqs.
        25-30). theta is rescaled to the new sticks either way, so the choice changes
        only what the sticks report: under "theta" a label's favourite state, whose
        label potential theta_y * E[log pi_y] is best near 0 (theta_y ~ 0), gets no
        count, and its stick weight stays at the prior's, whereas under "occupancy" the
        stick weights follow the states' use and the unused ones get negligible mass.
    n_restarts : int, default 1
        Random starts; the best by validation macro-F1 (with ``X_val``) or by training
        conditional log-likelihood is kept.
    n_outer : int, default 1
        Stick phase + theta phase rounds after the first theta phase.
    max_var_iter : int, default 100
        Alternations of sticks and concentrations in a stick phase (``update_alpha``).
    max_grad_iter : int, default 300
        L-BFGS-B iterations of the first theta phase.
    warm_grad_iter : int, default 100
        L-BFGS-B iterations of each later theta phase (warm started).
    tol : float, default 1e-7
        Relative decrease of the objective that ends a theta phase.
    var_tol : float, default 1e-4
        Relative change of the Beta parameters that ends a stick phase.
    usage_threshold : float, default 0.05
        A state is used by a label when it holds at least this share of the label's
        expected frame occupancy.
    prune : bool, default True
        After the rounds, delete the states the model does not need (:meth:`_prune`):
        theta is free, so the sticks alone cannot empty a state that the first theta
        phase filled; a deletion move accepted by the objective can.
    prune_tol : float, default 0.01
        Worsening of the training objective, in nats per training sequence, that a
        deletion may cost (in all, measured against the unpruned fit).
    prune_iter : int, default 10
        L-BFGS-B iterations of each deletion trial's warm theta phase; a short trial
        accepts only the states whose frames the others take over readily.
    random_state : int, RandomState instance or None

    Attributes
    ----------
    classes_ : (C,) labels.
    theta_x_ (L, d), theta_y_ (L, C), theta_e_ (C, L, L) : weights, all >= 0.
    El_ : tuple of E[log pi_x] (L, d), E[log pi_y] (L, C), E[log pi_e] (C, L, L).
    taus_ : Beta parameters ((a, b) per stick family) of the kept model.
    alphas_ : tuple of the three concentrations.
    stick_weights_y_ : (C, L) E[pi_y(h_k | y)], the label sticks' weights.
    state_usage_ : (C, L) share of each label's expected frame occupancy per state.
    states_used_ : (L,) bool, used by some label; ``n_states_used_`` their number;
        ``states_per_label_`` (C,) states used per label.
    checkpoint_scores_ : score after each theta phase of the kept restart (validation
        macro-F1, or minus the training objective), the pruned model's last (with
        ``prune``); ``restart_scores_`` per restart.
    pruned_ : (L,) bool, the states deleted by the pruning step (never visited).
    objective_ : float, training negative conditional log-likelihood.
    n_iter_ : int, L-BFGS-B iterations in all (objective evaluations for a deletion
        trial stopped at its slack).
    n_features_in_ : int

    References
    ----------
    K. Bousmalis, S. Zafeiriou, L.-P. Morency, M. Pantic and Z. Ghahramani, "Variational
    Hidden Conditional Random Fields with Coupled Dirichlet Process Mixtures", ECML PKDD
    2013, LNAI 8189, pp. 531-547.
    """

    _parameter_constraints: dict = {
        "n_states": [Interval(numbers.Integral, 2, None, closed="left")],
        "alpha": [Interval(numbers.Real, 0, None, closed="neither")],
        "update_alpha": ["boolean"],
        "s1": [Interval(numbers.Real, 0, None, closed="neither")],
        "s2": [Interval(numbers.Real, 0, None, closed="neither")],
        "clamped": ["boolean"],
        "init": [StrOptions({"prior", "label-prior", "uniform"})],
        "count_weights": [StrOptions({"occupancy", "theta"})],
        "n_restarts": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_outer": [Interval(numbers.Integral, 0, None, closed="left")],
        "max_var_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_grad_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "warm_grad_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "var_tol": [Interval(numbers.Real, 0, None, closed="left")],
        "usage_threshold": [Interval(numbers.Real, 0, 1, closed="both")],
        "prune": ["boolean"],
        "prune_tol": [Interval(numbers.Real, 0, None, closed="left")],
        "prune_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, n_states=10, alpha=1.0, update_alpha=False, s1=1000.0, s2=10.0,
                 clamped=True, init="label-prior", count_weights="occupancy",
                 n_restarts=1, n_outer=1, max_var_iter=100,
                 max_grad_iter=300, warm_grad_iter=100, tol=1e-7, var_tol=1e-4,
                 usage_threshold=0.05, prune=True, prune_tol=0.01, prune_iter=10,
                 random_state=None):
        self.n_states = n_states
        self.alpha = alpha
        self.update_alpha = update_alpha
        self.s1 = s1
        self.s2 = s2
        self.clamped = clamped
        self.init = init
        self.count_weights = count_weights
        self.n_restarts = n_restarts
        self.n_outer = n_outer
        self.max_var_iter = max_var_iter
        self.max_grad_iter = max_grad_iter
        self.warm_grad_iter = warm_grad_iter
        self.tol = tol
        self.var_tol = var_tol
        self.usage_threshold = usage_threshold
        self.prune = prune
        self.prune_tol = prune_tol
        self.prune_iter = prune_iter
        self.random_state = random_state

    # -- input -------------------------------------------------------------------
    def _frames(self, X, lengths, reset):
        F, lengths = super()._frames(X, lengths, reset)
        if not np.all(np.isfinite(F)):
            raise ValueError("features must be finite")
        if F.min() < 0:
            raise ValueError("Negative values in data passed to HCRF-DPM: it needs "
                             "nonnegative features; encode signed ones with encode_signed(X)")
        return F, lengths

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        return tags

    # -- training ----------------------------------------------------------------
    def _phase1(self, F, lengths, yi, params, El, alphas):
        """Beta posteriors of the three stick families given the fitted model.

        The chain posteriors q(s | y, x) of the model (theta, El) give the expected piece
        counts, weighted by theta (``count_weights="theta"``, the exact mean-field update
        of eqs. 25-30) or not; the Beta update from them is exact for fixed q(s). With
        ``update_alpha`` the concentrations and the sticks are updated in turn (Gamma(s1,
        s2) hyper-prior) until they agree to ``var_tol``."""
        C = params[1].shape[1]
        N = len(lengths)
        if self.clamped:
            Wt = np.zeros((N, C))
            Wt[np.arange(N), yi] = 1.0
        else:
            Wt = np.exp(core.predict_log_proba(F, lengths, params, El))
        G, XI, _ = core.label_statistics(F, lengths, params, El, Wt)
        weights = (params if self.count_weights == "theta"
                   else tuple(np.ones_like(p) for p in params))
        counts = core.stick_counts(F, lengths, weights, G, XI)
        taus = None
        for _ in range(int(self.max_var_iter) if self.update_alpha else 1):
            new = tuple(sticks.stick_posterior(c, a) for c, a in zip(counts, alphas))
            if self.update_alpha:
                alphas = tuple(float(np.divide(*sticks.concentration_posterior(
                    self.s1, self.s2, a.ravel(), b.ravel()))) for a, b in new)
            done = taus is not None and max(
                np.max(np.abs(n_[1] - o[1]) / o[1]) for n_, o in zip(new, taus)) < self.var_tol
            taus = new
            if done:
                break
        return taus, alphas

    def _phase2(self, F, lengths, yi, params, El, max_iter, pruned=None, target=None):
        """L-BFGS-B on theta >= 0 from ``params`` under fixed sticks ``El``; the label
        weights of ``pruned`` states are held at their deletion value (see :meth:`_prune`),
        and the search stops at the first point whose objective is <= ``target``.

        No path visits a deleted state, so its weights get zero gradient and the model is
        that of the other states: the search runs on those alone (the chain's cost grows
        with the square of the states, so a trial over 2 of 20 costs ~1 % of a full
        evaluation) and the deleted states keep their arrays, theta_y at its deletion
        value."""
        if pruned is not None and pruned.any():
            full = _delete_states(params, El, pruned)
            keep = ~pruned
            sub, nll, n_iter = self._phase2(F, lengths, yi, _restrict(full, keep),
                                            _restrict(El, keep), max_iter, target=target)
            return _embed(full, sub, keep), nll, n_iter
        shapes = [p.shape for p in params]
        sizes = [p.size for p in params]

        def unpack(v):
            out, i = [], 0
            for sh, sz in zip(shapes, sizes):
                out.append(v[i:i + sz].reshape(sh))
                i += sz
            return out

        n_eval = [0]

        def f(v):
            nll, grads = core.nll_and_grad(F, lengths, yi, unpack(v), El)
            n_eval[0] += 1
            if target is not None and nll <= target:
                raise _TargetReached(v.copy(), nll)
            return nll, np.concatenate([g.ravel() for g in grads])

        v0 = np.concatenate([p.ravel() for p in params])
        bounds = [(0.0, None)] * v0.size
        try:
            res = minimize(f, v0, jac=True, method="L-BFGS-B", bounds=bounds,
                           options={"maxiter": max_iter, "ftol": self.tol})
        except _TargetReached as hit:    # L-BFGS-B evaluates only points inside the bounds
            return tuple(unpack(hit.x)), hit.nll, n_eval[0]
        return tuple(unpack(res.x)), float(res.fun), int(res.nit)

    def _fit_once(self, F, lengths, yi, C, rng, score):
        """One random start: (theta, sticks) rounds, returning the last model.

        theta starts under the stick prior's expected log-weights (see ``init``): with
        alpha ~ 1 the earlier pieces are favoured, so the theta phase recruits states in
        stick order as far as the data ask. Each round then (1) updates the Beta
        posteriors of the sticks in closed form from the chain posteriors of the fitted
        model, (2) rescales theta by El_old / El_new so that every potential theta * El,
        hence the model, is unchanged by the new sticks, and (3) refits theta from there. theta is free and nonnegative, so any change of El
        that theta did not follow would only undo the theta phase's fit; with the
        rescaling the training objective never rises across rounds and the kept model is
        the one with the learnt sticks."""
        L, d = int(self.n_states), F.shape[1]
        params = (rng.uniform(0, 1, (L, d)), rng.uniform(0, 1, (L, C)),
                  rng.uniform(0, 1, (C, L, L)))
        alphas = (float(self.alpha),) * 3
        prior = core.prior_taus(d, C, L, alphas)
        El = core.uniform_logs(d, C, L)
        if self.init == "prior":
            El = core.expected_logs(prior, C)
        elif self.init == "label-prior":
            El = (El[0], core.expected_logs(prior, C)[1], El[2])
        params, nll, n_iter = self._phase2(F, lengths, yi, params, El, int(self.max_grad_iter))
        self.checkpoint_scores_ = [score(params, El, nll)]
        taus = None
        for _ in range(int(self.n_outer)):
            taus, alphas = self._phase1(F, lengths, yi, params, El, alphas)
            El_new = core.expected_logs(taus, C)
            params = core.rescale_to_sticks(params, El, El_new)
            El = El_new
            params, nll, nit = self._phase2(F, lengths, yi, params, El, int(self.warm_grad_iter))
            n_iter += nit
            self.checkpoint_scores_.append(score(params, El, nll))
        pruned = np.zeros(L, dtype=bool)
        if self.prune:
            params, nll, pruned, nit = self._prune(F, lengths, yi, params, El, nll)
            n_iter += nit
            if pruned.any():              # sticks of the pruned model; theta follows them
                taus, alphas = self._phase1(F, lengths, yi, params, El, alphas)
                El_new = core.expected_logs(taus, C)
                params = core.rescale_to_sticks(params, El, El_new)
                El = El_new
            self.checkpoint_scores_.append(score(params, El, nll))
        return self.checkpoint_scores_[-1], params, taus, alphas, nll, n_iter, El, pruned

    def _prune(self, F, lengths, yi, params, El, nll):
        """Delete states while the training objective does not worsen by more than
        ``prune_tol`` nats per sequence: first every state below ``usage_threshold``
        at once, then the used ones one by one, least used first, each trial a warm
        theta phase of ``prune_iter`` iterations that stops as soon as it is within the
        slack; the accepted deletions then get a warm theta phase of ``warm_grad_iter``.

        A deleted state keeps its arrays but its label potential is -1e4 per frame
        (:func:`_delete_states`), so no path visits it: its occupancy is 0, the next
        stick phase gives it the prior's share of what is left (negligible), and the
        model is that of the remaining states. This is the Dirichlet-process prior's
        preference for fewer components made explicit: the unregularised theta can
        always keep a state alive, so only a move that removes it and asks the
        objective can empty it. Returns (params, nll, pruned (L,) bool, L-BFGS-B
        iterations)."""
        L = params[1].shape[0]
        usage = _state_usage(F, lengths, yi, params, El).max(axis=0)
        pruned = np.zeros(L, dtype=bool)
        slack = float(self.prune_tol) * len(lengths)
        trials = [usage < self.usage_threshold]
        trials += [np.arange(L) == k for k in np.argsort(usage) if usage[k] >= self.usage_threshold]
        n_iter, kept_nll = 0, nll
        for drop in trials:
            cand = pruned | drop
            if cand.all() or (cand == pruned).all():
                continue
            p, f, nit = self._phase2(F, lengths, yi, params, El, int(self.prune_iter), cand,
                                     target=nll + slack)
            n_iter += nit
            if f <= nll + slack:          # against the unpruned fit: the slack is not a ratchet
                params, pruned, kept_nll = p, cand, f
        if pruned.any():                  # the trials stop at the slack: finish the fit
            params, kept_nll, nit = self._phase2(F, lengths, yi, params, El,
                                                 int(self.warm_grad_iter), pruned)
            n_iter += nit
        return params, kept_nll, pruned, n_iter

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, lengths=None, X_val=None, y_val=None, lengths_val=None):
        """Fit on nonnegative sequences with one label per sequence.

        Parameters
        ----------
        X : list of (T_i, d) arrays, (N, T, d) array or (n_frames, d) array
            Nonnegative features (see :func:`encode_signed`); forms as
            :func:`~recognizers.modelling.crf.hcrf.as_sequences`.
        y : (N,) array-like
            One label per sequence; at least two classes.
        lengths : (N,) int array, optional
            Lengths of the sequences concatenated in a 2-D ``X``.
        X_val, y_val, lengths_val : optional
            A validation set that chooses among the restarts by macro-F1.

        Returns
        -------
        self
        """
        F, lengths = self._frames(X, lengths, reset=True)
        yi = self._labels(y, len(lengths))
        if len(self.classes_) < 2:
            raise ValueError("HCRF-DPM needs at least two classes; got one class")
        C = len(self.classes_)
        rng = check_random_state(self.random_state)

        def score(params, El, nll):
            if X_val is None:
                return -nll
            self.theta_x_, self.theta_y_, self.theta_e_ = params
            self.El_ = El
            return float(f1_score(np.asarray(y_val), self.predict(X_val, lengths_val),
                                  average="macro"))

        best = None
        self.restart_scores_ = []
        for _ in range(int(self.n_restarts)):
            sc, params, taus, alphas, nll, n_iter, El, pruned = self._fit_once(
                F, lengths, yi, C, rng, score)
            self.restart_scores_.append(float(sc))
            if best is None or sc > best[0]:
                best = (sc, params, taus, alphas, nll, n_iter, El, pruned,
                        self.checkpoint_scores_)
        _, params, taus, alphas, nll, n_iter, El, self.pruned_, self.checkpoint_scores_ = best
        self._set_model(params, taus, alphas, El)
        self.objective_, self.n_iter_ = nll, n_iter
        self._usage(F, lengths, yi)
        return self

    def _set_model(self, params, taus, alphas, El):
        self.theta_x_, self.theta_y_, self.theta_e_ = (np.array(p) for p in params)
        self.taus_ = taus
        self.alphas_ = tuple(float(a) for a in alphas)
        self.El_ = El
        C, L = len(self.classes_), self.theta_y_.shape[0]
        if taus is None:                      # n_outer = 0: the first theta phase's sticks
            self.stick_weights_y_ = np.exp(El[1]).T / np.exp(El[1]).T.sum(axis=1, keepdims=True)
        else:
            a, b = taus[1]
            self.stick_weights_y_ = sticks.expected_weights(a, b)  # (C, L) E[pi_y(h_k | y)]

    def _usage(self, F, lengths, yi):
        self.state_usage_ = _state_usage(F, lengths, yi, self._params(), self.El_)
        self._count_used_states()

    def _count_used_states(self):
        """``states_used_``, ``states_per_label_`` and ``n_states_used_`` from
        ``state_usage_``."""
        used = self.state_usage_ >= self.usage_threshold
        self.states_used_ = used.any(axis=0)
        self.states_per_label_ = used.sum(axis=1)
        self.n_states_used_ = int(self.states_used_.sum())

    def _params(self):
        return (self.theta_x_, self.theta_y_, self.theta_e_)

    # -- prediction --------------------------------------------------------------
    def _log_proba(self, F, lengths):
        return core.predict_log_proba(F, lengths, self._params(), self.El_)
