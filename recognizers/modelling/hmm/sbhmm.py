"""Truncated stick-breaking HMM fitted by variational Bayes, with a sticky prior and
merge/delete moves, so that it chooses its number of states.

The initial distribution and every row of the transition matrix get a truncated
GEM(alpha) prior (Beta(1, alpha) sticks, ``max_states`` pieces); each row's sticks
carry ``kappa`` pseudo-counts of its self-transition (Fox et al.'s sticky bias,
learnt by default); each state emits a full-covariance Gaussian with a
Normal-Wishart prior.  Coordinate ascent alone keeps near-duplicate states that
split one regime, so at convergence the fit tries merging the closest pairs and
deleting the smallest states, and keeps a move only if the ELBO rises
(:func:`recognizers.modelling.hmm.sbhmm_core.try_moves`); ``elbo_`` never decreases.

The array functions live in :mod:`recognizers.modelling.hmm.sbhmm_core` (LM2GP uses them
too); this module holds the estimator.
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from recognizers.modelling.hmm.sbhmm_core import (
    coordinate_ascent,
    data_prior,
    decode,
    expected_gaussian_loglik,
    expected_log_det_wishart,
    infer_states,
    kl_normal_wishart,
    normal_wishart_posterior,
    sequence_starts,
    try_moves,
    update_posterior,
)
from recognizers.modelling.sticks import expected_weights, n_used

__all__ = [
    "StickBreakingHMM",
    "expected_gaussian_loglik",
    "expected_log_det_wishart",
    "kl_normal_wishart",
    "normal_wishart_posterior",
    "stack_sequences",
]


def _is_sequence_list(X) -> bool:
    """A list/tuple whose items are 2-D arrays is a list of sequences; a list of rows
    (``X.tolist()``) is one sequence."""
    return isinstance(X, (list, tuple)) and len(X) > 0 and np.ndim(X[0]) == 2


def stack_sequences(X, lengths=None, estimator=None, reset=True):
    """``(X (T, D), lengths)`` from one (T, D) array-like, a list of (T_i, D) arrays,
    or stacked X with ``lengths``.

    With ``estimator``, X goes through scikit-learn's ``validate_data`` (finite, real,
    2-D; sets or checks ``n_features_in_``); otherwise through ``check_array``.
    """
    if _is_sequence_list(X):
        if lengths is not None:
            raise ValueError("give either a list of sequences or lengths, not both")
        seqs = [check_array(s, dtype=np.float64) for s in X]
        dims = {s.shape[1] for s in seqs}
        if len(dims) != 1:
            raise ValueError(f"sequences differ in dimension: {sorted(dims)}")
        lengths = np.array([len(s) for s in seqs], dtype=np.int64)
        X = np.concatenate(seqs, axis=0)
    if estimator is not None:
        X = validate_data(estimator, X, reset=reset, dtype=np.float64)
    else:
        X = check_array(X, dtype=np.float64)
    lengths = (np.array([len(X)], dtype=np.int64) if lengths is None
               else np.asarray(lengths, dtype=np.int64))
    if lengths.ndim != 1 or lengths.sum() != len(X) or np.any(lengths < 1):
        raise ValueError("lengths must be positive and sum to the number of frames")
    return np.ascontiguousarray(X), lengths


def _init_resp(X, C, rng):
    """k-means++ seeds, then hard nearest-seed responsibilities (plus a little of every
    state, so no state starts exactly empty)."""
    idx = [int(rng.randint(len(X)))]
    d2 = ((X - X[idx[0]]) ** 2).sum(axis=1)
    for _ in range(1, min(C, len(X))):
        p = d2 / d2.sum() if d2.sum() > 0 else None
        idx.append(int(rng.choice(len(X), p=p)))
        d2 = np.minimum(d2, ((X - X[idx[-1]]) ** 2).sum(axis=1))
    centres = X[idx]
    lab = np.argmin(((X[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
    resp = np.full((len(X), C), 1e-3)
    resp[np.arange(len(X)), lab] += 1.0
    return resp / resp.sum(axis=1, keepdims=True)


def _transition_counts(resp, lengths):
    xi = np.zeros((resp.shape[1],) * 2)
    for s, L in zip(sequence_starts(lengths), lengths):
        xi += resp[s:s + L - 1].T @ resp[s + 1:s + L]
    return xi


class StickBreakingHMM(ClusterMixin, BaseEstimator):
    """HMM that chooses its number of states: truncated stick-breaking VB.

    Parameters
    ----------
    max_states : int, default=10
        Truncation level C (upper bound on the number of states).
    alpha : float, default=1.0
        Stick concentration of the initial distribution and the transition rows.
    sticky : "auto" or float, default="auto"
        ``kappa``, pseudo-counts of each row's self-transition (the sticky HDP-HMM's
        bias).  "auto" learns it by maximising the ELBO; 0 is the plain SB-HMM.
    beta0 : float, default=1.0
        Normal-Wishart prior: pseudo-observations of the mean.
    nu0 : float or None, default=None
        Normal-Wishart degrees of freedom (None: D + 2).
    w0_scale : float, default=0.5
        The prior precision has mean ``1 / w0_scale`` times the data precision: by
        default a state is expected to be half as spread as all the data together
        (with 1.0, on walker windows the ELBO merged distinct activities into three
        regimes; with 0.1, curved regimes split).
    max_iter : int, default=200
        VB sweeps between moves (and the cap on move rounds is ``2 * max_states``).
    tol : float, default=1e-6
        Stop a run of sweeps when the relative ELBO change is below it.
    n_init : int, default=1
        Restarts; the one with the largest ELBO is kept.
    moves : bool, default=True
        Try merge and delete moves at convergence, kept only if the ELBO rises.
    n_move_tries : int, default=3
        Merges and deletes proposed per round.
    usage_threshold : float, default=0.01
        Share of the frames below which a state counts as unused.
    random_state : int, RandomState instance or None, default=None

    Attributes
    ----------
    posterior_ : HMMPosterior
        ``q(theta)`` in stick order (internal states).
    prior_ : NormalWishartPrior
    kappa_ : float
        The sticky pseudo-count used (learnt when ``sticky="auto"``).
    order_ : ndarray (C,)
        ``order_[label]`` is the internal state a public label stands for: labels are
        numbered by frames on the training Viterbi path, then by weight, so the labels
        of ``labels_`` are ``0 .. k-1``.
    means_, covars_ : ndarrays (C, D), (C, D, D)
        Posterior-mean emission parameters, in label order.
    startprob_, transmat_ : ndarrays (C,), (C, C)
        Posterior-mean initial distribution and transitions, in label order.
    state_weights_ : ndarray (C,)
        Share of the training frames per label (smoothed posterior).
    n_states_used_ : int
        States holding at least ``usage_threshold`` of the frames.
    labels_ : ndarray (T,)
        Viterbi labels of the training frames.
    elbo_ : list of float
        ELBO per sweep of the kept restart (never decreases).
    moves_ : list of tuple
        Accepted moves ``(kind, internal states)``.
    n_iter_ : int
        Sweeps of the kept restart.
    n_features_in_ : int

    References
    ----------
    Paisley, J. and Carin, L., "Hidden Markov models with stick-breaking priors", IEEE
    Transactions on Signal Processing 57(10), 2009.
    Fox, E. B., Sudderth, E. B., Jordan, M. I. and Willsky, A. S., "A sticky HDP-HMM with
    application to speaker diarization", Annals of Applied Statistics 5(2A), 2011.
    Bryant, M. and Sudderth, E. B., "Truly nonparametric online variational inference for
    hierarchical Dirichlet processes", NeurIPS 2012.
    Bishop, C. M., "Pattern Recognition and Machine Learning", Springer, 2006.
    """

    _parameter_constraints = {
        "max_states": [Interval(Integral, 2, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "sticky": [StrOptions({"auto"}), Interval(Real, 0, None, closed="left")],
        "beta0": [Interval(Real, 0, None, closed="neither")],
        "nu0": [None, Interval(Real, 0, None, closed="neither")],
        "w0_scale": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "moves": ["boolean"],
        "n_move_tries": [Interval(Integral, 0, None, closed="left")],
        "usage_threshold": [Interval(Real, 0, 1, closed="both")],
        "random_state": ["random_state"],
    }

    def __init__(self, max_states=10, *, alpha=1.0, sticky="auto", beta0=1.0, nu0=None,
                 w0_scale=0.5, max_iter=200, tol=1e-6, n_init=1, moves=True, n_move_tries=3,
                 usage_threshold=0.01, random_state=None):
        self.max_states = max_states
        self.alpha = alpha
        self.sticky = sticky
        self.beta0 = beta0
        self.nu0 = nu0
        self.w0_scale = w0_scale
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.moves = moves
        self.n_move_tries = n_move_tries
        self.usage_threshold = usage_threshold
        self.random_state = random_state

    # -- fitting ------------------------------------------------------------
    def _fit_once(self, X, lengths, prior, rng):
        """One restart from random responsibilities (:meth:`_ascend`)."""
        kappa = 0.0 if self.sticky == "auto" else float(self.sticky)
        resp = _init_resp(X, int(self.max_states), rng)
        post = update_posterior(X, lengths, resp, _transition_counts(resp, lengths), prior,
                                float(self.alpha), kappa)
        return self._ascend(X, lengths, post, prior, kappa)

    def _ascend(self, X, lengths, post, prior, kappa):
        """Sweeps to convergence from ``q(theta) = post``, then move rounds while a move
        is kept.  Returns ``(post, kappa, E-step, elbos, moves)``."""
        C, alpha = len(post.m), float(self.alpha)
        learn = self.sticky == "auto"
        opts = dict(learn_kappa=learn, kappa_max=float(len(X)))
        post, kappa, res, elbos = coordinate_ascent(X, lengths, post, prior, alpha, kappa,
                                                    max_iter=self.max_iter, tol=self.tol, **opts)
        moves = []
        for _ in range(2 * C if self.moves and self.n_move_tries > 0 else 0):
            move = try_moves(X, lengths, post, res, elbos[-1], prior, alpha, kappa,
                             n_tries=int(self.n_move_tries), **opts)
            if move is None:
                break
            moves.append((move.kind, move.states))
            post, kappa, res, more = coordinate_ascent(
                X, lengths, move.posterior, prior, alpha, move.kappa,
                max_iter=self.max_iter, tol=self.tol, **opts)
            elbos.extend(more)
        return post, kappa, res, elbos, moves

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, lengths=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like (T, D) or list of (T_i, D) arrays
            One sequence, several sequences, or stacked sequences with ``lengths``.
        y : ignored
        lengths : array-like of int, optional
            Lengths of the stacked sequences (hmmlearn's convention).

        Returns
        -------
        self
        """
        X, lengths = stack_sequences(X, lengths, estimator=self, reset=True)
        if self.nu0 is not None and self.nu0 <= X.shape[1] - 1:
            raise ValueError(f"nu0 must exceed D - 1 = {X.shape[1] - 1}")
        prior = data_prior(X, self.beta0, self.nu0, self.w0_scale)
        rng = check_random_state(self.random_state)
        best = None
        for _ in range(int(self.n_init)):
            run = self._fit_once(X, lengths, prior, rng)
            if best is None or run[3][-1] > best[3][-1]:
                best = run
        return self._set_fitted(X, lengths, prior, *best)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_from_posterior(self, X, posterior, prior, kappa, lengths=None):
        """Fit from a given ``q(theta)`` instead of random restarts: sweeps to
        convergence and move rounds (as one restart of :meth:`fit`) under ``prior``.

        For a model that already holds a posterior of these states, e.g. the regimes
        :class:`~recognizers.modelling.gp.lm2gp.LM2GP` fits jointly with its latent
        points: a fresh fit would start from scratch under a prior of its own.

        Parameters
        ----------
        X : array-like (T, D) or list of (T_i, D) arrays
        posterior : HMMPosterior
            Starting ``q(theta)``; its number of states replaces ``max_states``.
        prior : NormalWishartPrior
        kappa : float
            Starting sticky pseudo-count (kept fixed unless ``sticky="auto"``).
        lengths : array-like of int, optional

        Returns
        -------
        self
        """
        X, lengths = stack_sequences(X, lengths, estimator=self, reset=True)
        run = self._ascend(X, lengths, posterior, prior, float(kappa))
        return self._set_fitted(X, lengths, prior, *run)

    def _set_fitted(self, X, lengths, prior, post, kappa, res, elbos, moves):
        self.kappa_, self.elbo_, self.moves_ = kappa, elbos, moves
        self.posterior_ = post
        self.prior_ = prior
        self.n_iter_ = len(self.elbo_)
        path = decode(X, lengths, post)
        weights = res.posterior.sum(axis=0) / len(X)
        on_path = np.bincount(path, minlength=len(weights))
        self.order_ = np.lexsort((-weights, -on_path))
        self._rank = np.argsort(self.order_)
        o = self.order_
        self.means_ = post.m[o].copy()
        self.covars_ = (np.linalg.inv(post.W) / post.nu[:, None, None])[o]
        self.startprob_ = expected_weights(post.start_a, post.start_b)[o]
        self.transmat_ = expected_weights(post.trans_a, post.trans_b)[np.ix_(o, o)]
        self.state_weights_ = weights[o]
        self.n_states_used_ = n_used(weights, self.usage_threshold)
        self.labels_ = self._rank[path]
        return self

    # -- using the model ----------------------------------------------------
    def _check_X(self, X, lengths):
        check_is_fitted(self, "posterior_")
        return stack_sequences(X, lengths, estimator=self, reset=False)

    def predict(self, X, lengths=None):
        """Most probable label per frame (Viterbi under the expected parameters).

        Parameters
        ----------
        X : array-like (T, D) or list of (T_i, D) arrays
        lengths : array-like of int, optional

        Returns
        -------
        labels : ndarray (T,) of int
        """
        X, lengths = self._check_X(X, lengths)
        return self._rank[decode(X, lengths, self.posterior_)]

    def predict_proba(self, X, lengths=None):
        """Smoothed label posteriors.

        Returns
        -------
        proba : ndarray (T, C), columns in label order, rows sum to 1.
        """
        X, lengths = self._check_X(X, lengths)
        return infer_states(X, lengths, self.posterior_).posterior[:, self.order_]

    def score(self, X, y=None, lengths=None):
        """``log Z_q(z)``: the log normaliser of ``q(z)`` under the expected parameters
        (the data term of the ELBO; higher is better).

        Returns
        -------
        score : float
        """
        X, lengths = self._check_X(X, lengths)
        return float(infer_states(X, lengths, self.posterior_).loglik)

