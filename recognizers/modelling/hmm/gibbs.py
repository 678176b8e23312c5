"""The thesis's multi-sensor discrete HMM learned by collapsed Gibbs sampling
(Omar 2016, 6.4.4, Alg 7); the sampler itself is in
:mod:`recognizers.modelling.hmm.gibbs_core`."""
from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from recognizers.modelling import chain
from recognizers.modelling.em import ConvergenceWarning, check_random_state
from recognizers.modelling.hmm import gibbs_core as gibbs
from recognizers.modelling.hmm.categorical import MultiCategoricalHMM
from recognizers.modelling.hmm.categorical_emissions import CategoricalEmissions

__all__ = ["CollapsedGibbsHMM"]


class CollapsedGibbsHMM(MultiCategoricalHMM):
    """Multi-sensor discrete HMM learned by collapsed Gibbs sampling (thesis 6.4.4, Alg 7).

    Dirichlet priors on the start distribution, the transition rows and every
    (state, sensor) emission row are integrated out; each sweep resamples
    every ``y_t`` from eq 6.20 corrected (product over sensors, Dirichlet
    pseudo-counts, counts without position ``t``, see
    :mod:`recognizers.modelling.hmm.gibbs_core`).  After ``burn_in`` sweeps, the
    posterior means of the parameters given every ``thin``-th sample are
    averaged (the Rao-Blackwellised version of Alg 7's steps 6-7).

    Parameters
    ----------
    n_components : int, default 1
        Number of states.
    n_values : array-like of int of shape (n_sensors,) or None, default None
        Symbols per sensor; None: from the data.
    missing : {None, "sentinel"}, default None
        "sentinel": the symbol ``n_values[s]`` marks a missing reading, as in
        :class:`MultiCategoricalHMM`.
    startprob_prior, transmat_prior, emissionprob_prior : float or array-like, default 1.0
        Dirichlet concentrations (> 0).
    self_transition_prior : float, default 0.0
        Extra concentration on the diagonal of the transition prior (a "sticky"
        prior for persistent activities).
    n_sweeps : int, default 500
        Sweeps per chain (the thesis: 500).
    burn_in : int or None, default None
        Sweeps discarded; None: ``n_sweeps // 2``.
    thin : int, default 1
        Keep every ``thin``-th sweep after burn-in.
    n_chains : int, default 1
        Independent chains; the one with the highest mean post-burn-in log joint is
        kept, and all enter the R-hat diagnostic.
    rhat_threshold : float, default 1.1
        ``converged_`` is ``rhat_ <= rhat_threshold``.
    algorithm : {"viterbi", "map"}, default "viterbi"
    random_state : None, int, RandomState or Generator, default None
    verbose : bool, default False

    Attributes
    ----------
    startprob_, transmat_, emissions_, emissionprob_ :
        Posterior means (shapes as :class:`MultiCategoricalHMM`'s).
    n_features_in_ : int
    states_ : ndarray of shape (n_samples,)
        The last sampled state path of the kept chain.
    log_joint_ : ndarray of shape (n_chains, n_sweeps)
        ``log p(y, x)`` after every sweep (thesis eq 6.19).
    rhat_ : float
        Split-R-hat of the post-burn-in log-joint traces.
    geweke_z_ : ndarray of shape (n_chains,)
        Geweke z-scores of the post-burn-in traces.
    converged_ : bool
    n_iter_ : int
        ``n_sweeps``.

    References
    ----------
    Omar, F. "Online Bayesian Learning in Probabilistic Graphical Models using Moment
    Matching with Applications", PhD thesis, University of Waterloo, 2016.
    Goldwater, S. and Griffiths, T. "A Fully Bayesian Approach to Unsupervised
    Part-of-Speech Tagging", ACL, 2007.
    """

    params = "ste"

    def __init__(self, n_components=1, *, n_values=None, missing=None, startprob_prior=1.0,
                 transmat_prior=1.0, emissionprob_prior=1.0, self_transition_prior=0.0,
                 n_sweeps=500, burn_in=None, thin=1, n_chains=1, rhat_threshold=1.1,
                 algorithm="viterbi", random_state=None, verbose=False):
        self.n_components = n_components
        self.n_values = n_values
        self.missing = missing
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.emissionprob_prior = emissionprob_prior
        self.self_transition_prior = self_transition_prior
        self.n_sweeps = n_sweeps
        self.burn_in = burn_in
        self.thin = thin
        self.n_chains = n_chains
        self.rhat_threshold = rhat_threshold
        self.algorithm = algorithm
        self.random_state = random_state
        self.verbose = verbose

    # Its own table: the Baum-Welch settings of BaseHMM (n_iter, tol, ...) do not apply.
    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_sweeps": [Interval(numbers.Integral, 1, None, closed="left")],
        "thin": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_chains": [Interval(numbers.Integral, 1, None, closed="left")],
        "burn_in": [Interval(numbers.Integral, 0, None, closed="left"), None],
        "algorithm": [StrOptions({"viterbi", "map"})],
        "self_transition_prior": [Interval(numbers.Real, 0, None, closed="left")],
        "rhat_threshold": [Interval(numbers.Real, 1, None, closed="left")],
        "missing": [StrOptions({"sentinel"}), None],
    }
    init_params = "ste"
    implementation = "log"

    def _validate_hyperparams(self) -> None:
        self._validate_params()
        if self.burn_in is not None and self.burn_in >= self.n_sweeps:
            raise ValueError("burn_in (%r) must be smaller than n_sweeps (%r)"
                             % (self.burn_in, self.n_sweeps))
        for name in ("startprob_prior", "transmat_prior", "emissionprob_prior"):
            a = np.asarray(getattr(self, name), dtype=np.float64)
            if not np.isfinite(a).all() or np.any(a <= 0):
                raise ValueError("%s must be finite and > 0 (a Dirichlet concentration)" % name)
        self._check_emission_hyperparams()

    def fit(self, X, lengths=None):
        """Run ``n_chains`` collapsed Gibbs chains; returns ``self``."""
        self._validate_hyperparams()
        X = self._validate_X(X, fit=True)
        self.n_features_in_ = X.shape[1]
        offsets = chain.lengths_to_offsets(len(X), lengths)
        nv = self._fit_n_values
        K = int(self.n_components)
        burn_in = self.n_sweeps // 2 if self.burn_in is None else int(self.burn_in)
        trans_prior = np.broadcast_to(np.asarray(self.transmat_prior, dtype=np.float64),
                                      (K, K)) + float(self.self_transition_prior) * np.eye(K)
        rng = check_random_state(self.random_state)
        results = []
        for c in range(int(self.n_chains)):
            results.append(gibbs.collapsed_gibbs(
                X, offsets, nv, K, n_sweeps=int(self.n_sweeps), burn_in=burn_in,
                thin=int(self.thin), start_prior=self.startprob_prior,
                transmat_prior=trans_prior, emission_prior=self.emissionprob_prior, rng=rng,
                verbose=bool(self.verbose)))
        traces = np.array([r.log_joint for r in results])
        kept = traces[:, burn_in:]
        best = int(np.argmax(kept.mean(axis=1)))
        r = results[best]
        self.startprob_ = r.startprob
        self.transmat_ = r.transmat
        self.emissions_ = CategoricalEmissions(r.emissionprob, nv)
        self.states_ = r.states
        self.log_joint_ = traces
        self.rhat_ = gibbs.split_rhat(kept)
        self.geweke_z_ = np.array([gibbs.geweke_z(t) for t in kept])
        self.converged_ = bool(self.rhat_ <= self.rhat_threshold)
        self.n_iter_ = int(self.n_sweeps)
        if not self.converged_:
            warnings.warn("CollapsedGibbsHMM: split-R-hat of the log joint is %.3f > %.3f; the "
                          "chain may not have converged (raise n_sweeps / burn_in)"
                          % (self.rhat_, self.rhat_threshold), ConvergenceWarning,
                          stacklevel=2)
        return self
