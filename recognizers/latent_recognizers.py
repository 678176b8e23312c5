"""Walker recognizers learned without labels: EM and collapsed Gibbs (thesis 6.4.2-6.4.4).

Both discretise the features like the supervised :class:`~recognizers.hmm_recognizer.HMMRecognizer`
(equal-frequency bins, M = 20, NaN -> "missing" symbol), learn a multi-sensor
discrete HMM over latent states *without* the labels, and then use the training
labels only to name the states (thesis 6.6.4: "each latent state is associated
with the activity that it is matched with most frequently"):

* ``"hmm-em"`` (:class:`EMHMMRecognizer`): Baum-Welch with ``n_init`` random
  restarts (the thesis: 20), best MAP objective kept;
* ``"hmm-gibbs"`` (:class:`GibbsHMMRecognizer`): collapsed Gibbs sampling
  (Alg 7, 500 sweeps), posterior-mean parameters;
* ``"bmm"`` (:class:`BMMRecognizer`): online Bayesian moment matching (thesis
  chapter 7, :class:`~recognizers.modelling.hmm.BMMHMM`), one sweep over the data; it
  keeps its Dirichlet posterior, so :meth:`BMMRecognizer.partial_fit` goes on
  learning from unlabelled recordings without retraining.

Latent states are mapped by their soft co-occurrence with the training labels
(smoothed posteriors), either to the majority activity (``state_mapping=
"majority"``, the thesis; several states may share an activity) or one-to-one
by the Hungarian method (``"hungarian"``).  Posteriors over activities are sums
of the posteriors of their states; ``predict`` is the Viterbi path over latent
states, mapped.  Streaming (``reset``/``step``/``step_block``) runs the same
compiled filter as the supervised HMM.

Select them with ``walkerlab evaluate --recognizer hmm-em`` (or ``hmm-gibbs``)
and ``--param n_init=5`` etc.
"""
from __future__ import annotations

import copy
import numbers

import numba
import numpy as np

from recognizers.base import (
    Interval,
    RecognizerTags,
    StrOptions,
    check_is_fitted,
    register_recognizer,
)
from recognizers.discretize import EqualFrequencyDiscretizer
from recognizers.hmm_recognizer import DiscretisedHMMRecognizer
from recognizers.modelling.hmm import CategoricalEmissions, CollapsedGibbsHMM, MultiCategoricalHMM
from recognizers.modelling.hmm.bmm import BMMHMM
from recognizers.modelling.matching import cooccurrence, map_states

__all__ = ["EMHMMRecognizer", "GibbsHMMRecognizer", "BMMRecognizer"]


@numba.njit(cache=True)
def _aggregate_into(posts, mapping, out):
    """out[t, c] = sum of posts[t, k] over states k mapped to class c (in state order)."""
    for t in range(posts.shape[0]):
        for c in range(out.shape[1]):
            out[t, c] = 0.0
        for k in range(posts.shape[1]):
            out[t, mapping[k]] += posts[t, k]


class _LatentHMMRecognizer(DiscretisedHMMRecognizer):
    """Shared fit / inference / streaming / persistence of the unsupervised recognizers."""

    format_version = 1
    _common_constraints = {
        "n_bins": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_states": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "state_mapping": [StrOptions({"majority", "hungarian"})],
        "random_state": [Interval(numbers.Integral, 0, None, closed="left"), None],
    }

    # -- to be provided ---------------------------------------------------------
    def _learn(self, symbols, lengths, n_states, n_values) -> MultiCategoricalHMM:
        raise NotImplementedError

    # -- fitting ----------------------------------------------------------------
    def fit(self, sequences, labels=None, *, feature_set=None):
        """Learn the latent HMM without labels, then map states to activities.

        ``labels`` are required for the mapping only.  Returns ``self``.
        """
        self._validate_params()
        Xs, ys = self._validate_fit_data(sequences, labels)
        disc = EqualFrequencyDiscretizer(n_bins=int(self.n_bins)).fit(np.concatenate(Xs))
        symbols = np.concatenate([disc.transform(X) for X in Xs])
        lengths = np.array([len(X) for X in Xs], dtype=np.int64)
        K = len(self.classes_) if self.n_states is None else int(self.n_states)
        model = self._learn(symbols, lengths, K, disc.n_bins_)
        post = model.predict_proba(symbols, lengths)
        y_idx = np.searchsorted(self.classes_, np.concatenate(ys))
        C = cooccurrence(post, y_idx, K, len(self.classes_))
        self.cooccurrence_ = C
        self.state_to_class_ = map_states(C, self.state_mapping)
        self.discretizer_ = disc
        self.model_ = model
        self.feature_set_ = feature_set
        self._build_runtime()
        return self

    def with_state_mapping(self, method: str) -> "_LatentHMMRecognizer":
        """A copy of this fitted recognizer whose states map to activities by
        ``method`` ("majority" or "hungarian"); the latent model is shared."""
        check_is_fitted(self, "model_")
        other = copy.copy(self)
        other.state_mapping = method
        other.state_to_class_ = map_states(self.cooccurrence_, method)
        other._build_runtime()
        return other

    def evaluation_variants(self) -> dict:
        """The other state mapping: majority (the thesis' rule, several states may
        claim one activity) and one-to-one Hungarian are both reported."""
        other = "hungarian" if self.state_mapping == "majority" else "majority"
        return {("state_mapping", other): self.with_state_mapping(other)}

    def _build_runtime(self) -> None:
        self._mapping = np.ascontiguousarray(self.state_to_class_, dtype=np.int64)
        super()._build_runtime()

    def _to_classes(self, posts) -> np.ndarray:
        """Sum the posteriors of the states mapped to each activity."""
        out = np.empty((posts.shape[0], len(self.classes_)))
        _aggregate_into(np.ascontiguousarray(posts), self._mapping, out)
        return out

    def predict(self, X) -> np.ndarray:
        """Viterbi path over latent states, mapped to activities (T,) str."""
        path = self.predict_states(X)
        return self.classes_[self._mapping[path]]

    # -- sample rate ----------------------------------------------------------------
    def _rate_dependent_seconds(self, rate_hz: float) -> dict:
        from recognizers.rates import mean_stay_s

        return {"mean_stay_per_state": mean_stay_s(self.model_.transmat_, rate_hz).tolist()}

    # -- persistence ----------------------------------------------------------------
    def _get_state(self) -> dict[str, np.ndarray]:
        return {**super()._get_state(),
                "state_to_class": np.asarray(self.state_to_class_, dtype=np.int64),
                "cooccurrence": np.asarray(self.cooccurrence_, dtype=np.float64)}

    def _set_extra_state(self, model, arrays) -> None:
        mapping = np.asarray(arrays["state_to_class"], dtype=np.int64)
        if mapping.shape != (model.n_components,) or (
                mapping.size and (mapping.min() < 0 or mapping.max() >= len(self.classes_))):
            raise ValueError("state_to_class does not map %d states to %d classes"
                             % (model.n_components, len(self.classes_)))
        self.state_to_class_ = mapping
        self.cooccurrence_ = np.asarray(arrays["cooccurrence"], dtype=np.float64)


@register_recognizer
class EMHMMRecognizer(_LatentHMMRecognizer):
    """Unsupervised multi-sensor HMM learned by EM (Baum-Welch), thesis 6.4.2.

    Parameters
    ----------
    n_bins : int, default 20
        Equal-frequency bins per feature.
    n_states : int or None
        Latent states; None: one per activity in the training labels.
    n_init : int, default 20
        Random restarts (thesis: 20); the best MAP objective is kept.
    n_iter : int, default 100
        Maximum EM iterations per restart.
    tol : float, default 1.0
        Stop when the objective (a log-likelihood over all training frames)
        improves by less than this.
    pseudocount : float, default 1.0
        Dirichlet pseudo-count added to the expected start, transition and
        emission counts (concentration ``1 + pseudocount``), so unseen bins and
        unvisited states keep valid, non-zero probabilities.
    state_mapping : {"majority", "hungarian"}
    random_state : int or None, default 0
        Seed of the restarts (fixed by default so that fits are reproducible).

    Attributes
    ----------
    classes_, n_features_in_, feature_set_, discretizer_
    model_ : the fitted :class:`~recognizers.modelling.hmm.MultiCategoricalHMM` (its
        ``history_``, ``converged_``, ``lower_bound_`` describe the EM run)
    state_to_class_ : (n_states,) index into ``classes_`` of each latent state
    cooccurrence_ : (n_states, n_classes) soft co-occurrence on the training data
    """

    kind = "hmm-em"
    _parameter_constraints = {
        **_LatentHMMRecognizer._common_constraints,
        "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "pseudocount": [Interval(numbers.Real, 0, None, closed="left")],
    }

    def __init__(self, *, n_bins=20, n_states=None, n_init=20, n_iter=100, tol=1.0,
                 pseudocount=1.0, state_mapping="majority", random_state=0):
        self.n_bins = n_bins
        self.n_states = n_states
        self.n_init = n_init
        self.n_iter = n_iter
        self.tol = tol
        self.pseudocount = pseudocount
        self.state_mapping = state_mapping
        self.random_state = random_state

    def _learn(self, symbols, lengths, n_states, n_values) -> MultiCategoricalHMM:
        prior = 1.0 + float(self.pseudocount)
        model = MultiCategoricalHMM(
            n_components=n_states, n_values=n_values, missing="sentinel", startprob_prior=prior,
            transmat_prior=prior, emissionprob_prior=prior, n_iter=int(self.n_iter),
            tol=float(self.tol), n_init=int(self.n_init), random_state=self.random_state)
        return model.fit(symbols, lengths)


@register_recognizer
class GibbsHMMRecognizer(_LatentHMMRecognizer):
    """Unsupervised multi-sensor HMM learned by collapsed Gibbs sampling, thesis 6.4.4.

    Parameters
    ----------
    n_bins : int, default 20
    n_states : int or None
        Latent states; None: one per activity (the thesis found 11 states
        better than 7 on experiment 1).
    n_sweeps : int, default 500
        Sweeps over the data (thesis: 500).
    burn_in : int or None
        Sweeps discarded before averaging (default ``n_sweeps // 2``).
    transition_prior : float, default 1.0
        Dirichlet concentration of every transition (and start) entry.
    self_transition_prior : float, default 0.0
        Extra concentration on the diagonal of the transition prior (sticky).
    emission_prior : float, default 1.0
        Dirichlet concentration of every emission symbol (> 0: unseen bins keep
        non-zero probability).
    state_mapping : {"majority", "hungarian"}
    random_state : int or None, default 0

    Attributes
    ----------
    as :class:`EMHMMRecognizer`; ``model_`` is a
    :class:`~recognizers.modelling.hmm.CollapsedGibbsHMM` with ``log_joint_``, ``rhat_``,
    ``geweke_z_`` and ``converged_`` (after ``load``: a plain
    :class:`~recognizers.modelling.hmm.MultiCategoricalHMM` with the same parameters).
    """

    kind = "hmm-gibbs"
    _parameter_constraints = {
        **_LatentHMMRecognizer._common_constraints,
        "n_sweeps": [Interval(numbers.Integral, 2, None, closed="left")],
        "burn_in": [Interval(numbers.Integral, 0, None, closed="left"), None],
        "transition_prior": [Interval(numbers.Real, 0, None, closed="neither")],
        "self_transition_prior": [Interval(numbers.Real, 0, None, closed="left")],
        "emission_prior": [Interval(numbers.Real, 0, None, closed="neither")],
    }

    def __init__(self, *, n_bins=20, n_states=None, n_sweeps=500, burn_in=None,
                 transition_prior=1.0, self_transition_prior=0.0, emission_prior=1.0,
                 state_mapping="majority", random_state=0):
        self.n_bins = n_bins
        self.n_states = n_states
        self.n_sweeps = n_sweeps
        self.burn_in = burn_in
        self.transition_prior = transition_prior
        self.self_transition_prior = self_transition_prior
        self.emission_prior = emission_prior
        self.state_mapping = state_mapping
        self.random_state = random_state

    def _validate_params(self) -> None:
        super()._validate_params()
        if self.burn_in is not None and self.burn_in >= self.n_sweeps:
            raise ValueError("the 'burn_in' parameter of %s must be smaller than n_sweeps "
                             "(%r); got %r" % (type(self).__name__, self.n_sweeps, self.burn_in))

    def _learn(self, symbols, lengths, n_states, n_values) -> CollapsedGibbsHMM:
        model = CollapsedGibbsHMM(
            n_states, n_values=n_values, missing="sentinel",
            startprob_prior=float(self.transition_prior),
            transmat_prior=float(self.transition_prior),
            emissionprob_prior=float(self.emission_prior),
            self_transition_prior=float(self.self_transition_prior),
            n_sweeps=int(self.n_sweeps), burn_in=self.burn_in, random_state=self.random_state)
        return model.fit(symbols, lengths)


def _posterior_mean_hmm(bmm: BMMHMM) -> MultiCategoricalHMM:
    """The HMM with the posterior-mean parameters of a BMM posterior."""
    return MultiCategoricalHMM.from_params(
        bmm.startprob_, bmm.transmat_, CategoricalEmissions(bmm.emissionprob_, bmm.n_symbols_),
        missing="sentinel")


@register_recognizer
class BMMRecognizer(_LatentHMMRecognizer):
    """Unsupervised multi-sensor HMM learned online by Bayesian moment matching (thesis ch. 7).

    ``fit`` makes one sweep over the training sequences (thesis Algs 11-12); the
    labels only name the latent states (majority or Hungarian, as for EM and
    Gibbs).  The Dirichlet posterior is kept, so :meth:`partial_fit` continues
    learning from unlabelled sequences in constant time per frame, and the
    model file stores it.  Inference uses the posterior-mean parameters.

    Parameters
    ----------
    n_bins : int, default 20
    n_states : int or None
        Latent states; None: one per activity in the training labels.
    n_init : int, default 4
        Candidate non-symmetric priors compared on the first ``init_frames``
        frames (see :class:`~recognizers.modelling.hmm.BMMHMM`).
    init_frames : int, default 20000
    self_transition_prior : float, default 100.0
        Extra Dirichlet pseudo-count on staying in a state: activities last
        seconds, i.e. hundreds of frames at 50 Hz.
    emissionprob_prior : float, default 1.0
    prior_asymmetry : float in [0, 1), default 0.5
        How far each state's emission prior leans away from uniform (breaks the
        label symmetry, thesis 7.2.2).
    init_window : int, default 25
        Frames per window of the pilot that chooses where the priors lean.
    state_mapping : {"majority", "hungarian"}
    random_state : int or None, default 0

    Attributes
    ----------
    as :class:`EMHMMRecognizer`; ``bmm_`` is the :class:`~recognizers.modelling.hmm.BMMHMM`
    holding the posterior (``n_steps_`` frames learnt from so far).
    """

    kind = "bmm"
    _tags = RecognizerTags(supports_streaming=True, supports_partial_fit=True,
                           requires_labels=True)
    _parameter_constraints = {
        **_LatentHMMRecognizer._common_constraints,
        "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "init_frames": [Interval(numbers.Integral, 1, None, closed="left")],
        "self_transition_prior": [Interval(numbers.Real, 0, None, closed="left")],
        "emissionprob_prior": [Interval(numbers.Real, 0, None, closed="neither")],
        "prior_asymmetry": [Interval(numbers.Real, 0, 1, closed="left")],
        "init_window": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(self, *, n_bins=20, n_states=None, n_init=4, init_frames=20000,
                 self_transition_prior=100.0, emissionprob_prior=1.0, prior_asymmetry=0.5,
                 init_window=25, state_mapping="majority", random_state=0):
        self.n_bins = n_bins
        self.n_states = n_states
        self.n_init = n_init
        self.init_frames = init_frames
        self.self_transition_prior = self_transition_prior
        self.emissionprob_prior = emissionprob_prior
        self.prior_asymmetry = prior_asymmetry
        self.init_window = init_window
        self.state_mapping = state_mapping
        self.random_state = random_state

    _frame_params = ("init_frames", "init_window")

    def _convert_rate(self, factor: float) -> None:
        # The Dirichlet posterior counts frames (and keeps learning from them).
        raise NotImplementedError("its posterior counts frames and goes on learning "
                                  "from them")

    def _bmm_params(self, n_states: int) -> dict:
        return dict(n_components=int(n_states), n_init=int(self.n_init),
                    init_frames=int(self.init_frames),
                    self_transition_prior=float(self.self_transition_prior),
                    emissionprob_prior=float(self.emissionprob_prior),
                    prior_asymmetry=float(self.prior_asymmetry),
                    init_window=int(self.init_window), random_state=self.random_state)

    def _learn(self, symbols, lengths, n_states, n_values) -> MultiCategoricalHMM:
        bmm = BMMHMM(n_symbols=n_values, **self._bmm_params(n_states))
        self.bmm_ = bmm.fit(symbols, lengths)
        return _posterior_mean_hmm(bmm)

    def partial_fit(self, sequences):
        """Go on learning from unlabelled sequences (each a (T, n_features) array).

        Each sequence is a new stream; the posterior is updated once per frame
        and the state-to-activity mapping is kept.  Returns ``self``.
        """
        check_is_fitted(self, "model_")
        if isinstance(sequences, np.ndarray) and sequences.ndim == 2:
            sequences = [sequences]
        Xs = [self._validate_X(X, reset=False) for X in sequences]
        Xs = [X for X in Xs if len(X)]
        if not Xs:
            return self
        symbols = np.concatenate([self.discretizer_.transform(X) for X in Xs])
        lengths = np.array([len(X) for X in Xs], dtype=np.int64)
        self.bmm_.partial_fit(symbols, lengths)
        self.model_ = _posterior_mean_hmm(self.bmm_)
        self._build_runtime()
        return self

    def learn_block(self, X) -> np.ndarray:
        """Filter frames of the live stream while learning from them; (n, n_classes).

        Continues one stream like :meth:`step_block`, but each frame also updates the
        posterior (:meth:`~recognizers.modelling.hmm.BMMHMM.partial_fit_filter`).  The
        inference tables of :meth:`step_block`, :meth:`predict` etc. catch up in
        :meth:`sync_model`; saving always stores the latest posterior.
        """
        X = self._validate_X(X, reset=False)
        if not len(X):
            return np.empty((0, len(self.classes_)))
        post = self.bmm_.partial_fit_filter(self.discretizer_.transform(X))
        self._stale = True
        return self._to_classes(post)

    def sync_model(self) -> None:
        """Make inference use the latest learnt posterior mean (restarts the stream)."""
        check_is_fitted(self, "model_")
        if self.__dict__.get("_stale"):
            self.model_ = _posterior_mean_hmm(self.bmm_)
            self._build_runtime()
            self._stale = False

    def reset(self) -> None:
        super().reset()
        if "bmm_" in self.__dict__:
            self.bmm_.reset()  # the next learnt frame starts a new stream too

    def _get_state(self) -> dict[str, np.ndarray]:
        state = super()._get_state()
        bmm = self.bmm_
        latest = _posterior_mean_hmm(bmm)  # after learn_block, model_ may lag behind
        state.update({
            "startprob": latest.startprob_,
            "transmat": latest.transmat_,
            "emissionprob": latest.emissionprob_,
            "bmm_startprob_concentration": bmm.startprob_concentration_,
            "bmm_transmat_concentration": bmm.transmat_concentration_,
            "bmm_emissionprob_concentration": bmm.emissionprob_concentration_,
            "bmm_counts": np.array([bmm.n_steps_, bmm.n_sequences_], dtype=np.int64),
        })
        return state

    def _set_state(self, arrays) -> None:
        super()._set_state(arrays)
        counts = np.asarray(arrays["bmm_counts"], dtype=np.int64)
        self.bmm_ = BMMHMM.from_concentrations(
            self._bmm_params(self.model_.n_components),
            arrays["bmm_startprob_concentration"], arrays["bmm_transmat_concentration"],
            arrays["bmm_emissionprob_concentration"], self.model_.n_values_,
            n_steps=int(counts[0]), n_sequences=int(counts[1]))
        # Inference must use exactly the stored posterior mean.
        if not np.allclose(self.bmm_.transmat_, self.model_.transmat_, rtol=1e-9, atol=1e-12):
            raise ValueError("the stored BMM posterior does not match the stored parameters")
