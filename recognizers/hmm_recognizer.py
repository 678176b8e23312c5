"""The walker's supervised HMM recognizer ``"hmm"`` (Omar 2016, 6.2-6.6).

:class:`HMMRecognizer` discretises float features into equal-frequency bins,
counts a :class:`~recognizers.modelling.hmm.categorical.MultiCategoricalHMM`
from labelled recordings and streams it frame by frame (the kernels below fuse
binning, emission lookup and the scaled forward step).
"""
from __future__ import annotations

import numbers

import numba
import numpy as np

from recognizers.base import (
    Interval,
    Recognizer,
    RecognizerTags,
    StrOptions,
    _check_sequence,
    check_is_fitted,
    register_recognizer,
)
from recognizers.discretize import EqualFrequencyDiscretizer, _bin_row_into
from recognizers.modelling import chain
from recognizers.modelling.chain import (
    forward_init_into,
    forward_step_into,
    transition_exp_into,
)
from recognizers.modelling.hmm.categorical import MultiCategoricalHMM
from recognizers.modelling.hmm.categorical_emissions import (
    CategoricalEmissions,
    SupervisedCounts,
    _emission_row_into,
    _emission_rows_into,
    count_supervised,
)

__all__ = ["HMMRecognizer"]


# --------------------------------------------------------------------------- kernels


_TINY_PROB = 1e-280  # below this the scaled step could have lost its dominant term


@numba.njit(cache=True)
def _hmm_frame(x, started, prev, out, edges, offsets, missing, log_table, log_pi, log_A,
               exp_A, colmax, sym, ll, scratch, post):
    """One frame of the live filter: bin, look up, filter; ``prev``/``out`` and
    ``post`` hold the filtered posterior as probabilities.

    The step runs in scaled probability space: ``out_j ∝ (sum_i prev_i exp_A[i, j])
    exp(colmax_j + ll_j - max)``, K exps and no log per frame (the log-space step
    took 3K exps and K logs: most of the filter's time in a replay, issue 22).  The
    first frame, a normaliser below ``_TINY`` and evidence impossible in every state
    go through the exact log-space step instead.
    """
    _bin_row_into(x, edges, offsets, missing, sym)
    _emission_row_into(sym, log_table, ll)
    k = out.shape[0]
    if started:
        m = -np.inf
        for j in range(k):
            v = colmax[j] + ll[j]
            if v > m:
                m = v
        s = 0.0
        if m > -np.inf:
            for j in range(k):
                out[j] = 0.0
            for i in range(k):
                p = prev[i]
                if p == 0.0:
                    continue
                for j in range(k):
                    out[j] += p * exp_A[i, j]
            for j in range(k):
                v = out[j] * np.exp(colmax[j] + ll[j] - m)
                out[j] = v
                s += v
        if s > _TINY_PROB:
            inv = 1.0 / s
            for j in range(k):
                out[j] *= inv
                post[j] = out[j]
            return 0.0
        log_prev = np.empty(k)
        for i in range(k):
            log_prev[i] = np.log(prev[i]) if prev[i] > 0.0 else -np.inf
        c = forward_step_into(log_prev, log_A, exp_A, colmax, ll, out, scratch)
    else:
        c = forward_init_into(log_pi, ll, out)
    for j in range(k):
        out[j] = np.exp(out[j])
        post[j] = out[j]
    return c


@numba.njit(cache=True)
def _hmm_run(X, started, alpha, cur, edges, offsets, missing, log_table, log_pi, log_A,
             exp_A, colmax, sym, ll, scratch, posts):
    """Filter frames X from state ``alpha[cur]`` (``started``); returns the new ``cur``.

    ``alpha`` (2, K) is a ping-pong buffer: each frame reads ``alpha[cur]`` and
    writes ``alpha[1 - cur]``.
    """
    for t in range(X.shape[0]):
        nxt = 1 - cur
        _hmm_frame(X[t], started, alpha[cur], alpha[nxt], edges, offsets, missing,
                   log_table, log_pi, log_A, exp_A, colmax, sym, ll, scratch, posts[t])
        started = True
        cur = nxt
    return cur


@numba.njit(cache=True)
def _hmm_step(x, started, alpha, cur, edges, offsets, missing, log_table, log_pi, log_A,
              exp_A, colmax, sym, ll, scratch, post):
    nxt = 1 - cur
    _hmm_frame(x, started, alpha[cur], alpha[nxt], edges, offsets, missing, log_table,
               log_pi, log_A, exp_A, colmax, sym, ll, scratch, post)
    return nxt


# --------------------------------------------------------------------------- shared base


class DiscretisedHMMRecognizer(Recognizer):
    """What every walker recognizer over a discretised multi-sensor HMM shares.

    The supervised :class:`HMMRecognizer` and the unsupervised ones of
    :mod:`recognizers.latent_recognizers` hold a fitted ``discretizer_`` and a
    :class:`~recognizers.modelling.hmm.categorical.MultiCategoricalHMM` ``model_``
    over its symbols; this base gives them the compiled live filter, inference,
    streaming, rate conversion of the transitions and the arrays of the model file.
    Subclasses turn posteriors over the model's states into posteriors over
    ``classes_`` with :meth:`_to_classes` (the identity when states are the
    activities) and add their own arrays to the file through ``_get_state`` /
    ``_set_state``.
    """

    _tags = RecognizerTags(supports_streaming=True, supports_partial_fit=False,
                           requires_labels=True)

    def __sklearn_is_fitted__(self) -> bool:
        return "model_" in self.__dict__

    def _to_classes(self, posts) -> np.ndarray:
        """Posteriors over states (T, n_states) -> over ``classes_``; identity here."""
        return posts

    @property
    def startprob_(self) -> np.ndarray:
        check_is_fitted(self, "model_")
        return self.model_.startprob_

    @property
    def transmat_(self) -> np.ndarray:
        check_is_fitted(self, "model_")
        return self.model_.transmat_

    @property
    def emissionprob_(self) -> np.ndarray:
        check_is_fitted(self, "model_")
        return self.model_.emissionprob_

    def _build_runtime(self) -> None:
        """Arrays the compiled filter reads, and the streaming buffers."""
        m = self.model_
        K = m.n_components
        self._log_pi = m.log_startprob_
        self._log_A = m.log_transmat_
        self._exp_A = np.empty((K, K))
        self._colmax = np.empty(K)
        transition_exp_into(self._log_A, self._exp_A, self._colmax)
        self._log_table = m.emissions_.log_table
        self._edges, self._offsets, self._missing = self.discretizer_.kernel_args
        self._alpha = np.zeros((2, K))
        self._sym = np.zeros(self.n_features_in_, dtype=np.int64)
        self._ll = np.zeros(K)
        self._scratch = np.zeros(K)
        self.reset()

    # -- inference ----------------------------------------------------------------
    def _log_lik(self, X) -> np.ndarray:
        X = self._validate_X(X, reset=False)
        sym = self.discretizer_.transform(X)
        out = np.empty((X.shape[0], self.model_.n_components))
        _emission_rows_into(sym, self._log_table, out)
        return out

    def predict_states(self, X) -> np.ndarray:
        """Viterbi path over the model's states (T,) int."""
        ll = self._log_lik(X)  # first: it says NotFittedError before a fit
        return chain.viterbi(self._log_pi, self._log_A, ll).path

    def predict_proba(self, X) -> np.ndarray:
        """Forward-backward posteriors ``p(y_t | x_1..T)`` (T, n_classes)."""
        ll = self._log_lik(X)
        return self._to_classes(chain.smooth(self._log_pi, self._log_A, ll).posterior)

    def score(self, X) -> float:
        """``log p(symbols of X)`` under the model."""
        ll = self._log_lik(X)
        return chain.log_likelihood(self._log_pi, self._log_A, ll)

    def filter(self, X) -> np.ndarray:
        """Filtered posteriors ``p(y_t | x_1..t)`` (T, n_classes) from a fresh start.

        Does not touch the streaming state.
        """
        X = self._validate_X(X, reset=False)
        K = self.model_.n_components
        posts = np.empty((X.shape[0], K))
        _hmm_run(X, False, np.zeros((2, K)), 0, self._edges, self._offsets, self._missing,
                 self._log_table, self._log_pi, self._log_A, self._exp_A, self._colmax,
                 np.zeros(X.shape[1], dtype=np.int64), np.zeros(K), np.zeros(K), posts)
        return self._to_classes(posts)

    # -- streaming ----------------------------------------------------------------
    def reset(self) -> None:
        """Forget the stream; the next frame is treated as the first."""
        check_is_fitted(self, "model_")
        self._started = False
        self._cur = 0

    def step(self, x) -> np.ndarray:
        """Filtered posterior (n_classes,) after frame ``x`` (n_features,).

        Equals ``filter(X)[t]`` exactly for the t-th frame since ``reset``.
        """
        if "model_" not in self.__dict__:
            check_is_fitted(self, "model_")
        x = np.asarray(x, dtype=np.float64)
        if x.shape != self._sym.shape:
            self._validate_frame(x)
        post = np.empty((1, self._ll.shape[0]))
        self._cur = _hmm_step(x, self._started, self._alpha, self._cur, self._edges,
                              self._offsets, self._missing, self._log_table, self._log_pi,
                              self._log_A, self._exp_A, self._colmax, self._sym, self._ll,
                              self._scratch, post[0])
        self._started = True
        return self._to_classes(post)[0]

    def step_block(self, X) -> np.ndarray:
        """Continue the stream over a block (n, n_features); posteriors (n, n_classes)."""
        X = self._validate_X(X, reset=False)
        posts = np.empty((X.shape[0], self.model_.n_components))
        if X.shape[0]:
            self._cur = _hmm_run(X, self._started, self._alpha, self._cur, self._edges,
                                 self._offsets, self._missing, self._log_table, self._log_pi,
                                 self._log_A, self._exp_A, self._colmax, self._sym,
                                 self._ll, self._scratch, posts)
            self._started = True
        return self._to_classes(posts)

    # -- sample rate ----------------------------------------------------------------
    def _convert_rate(self, factor: float) -> None:
        """Transitions become the ``factor``-th root (the dynamics in seconds kept);
        emissions are per frame of physical values and stay."""
        from recognizers.rates import transmat_at_rate

        m = self.model_
        self.model_ = MultiCategoricalHMM.from_params(
            m.startprob_, transmat_at_rate(m.transmat_, factor), m.emissions_,
            missing="sentinel")
        self._build_runtime()

    # -- persistence ----------------------------------------------------------------
    def _get_state(self) -> dict[str, np.ndarray]:
        d = self.discretizer_.to_arrays()
        return {
            "discretizer_edges": d["edges"],
            "discretizer_offsets": d["offsets"],
            "startprob": self.model_.startprob_,
            "transmat": self.model_.transmat_,
            "emissionprob": self.model_.emissionprob_,
            "n_values": self.model_.n_values_,
        }

    def _set_state(self, arrays) -> None:
        disc = EqualFrequencyDiscretizer.from_arrays(
            {"edges": arrays["discretizer_edges"], "offsets": arrays["discretizer_offsets"]},
            n_bins=self.n_bins)
        n_values = np.asarray(arrays["n_values"])
        if not np.array_equal(n_values, disc.n_bins_):
            raise ValueError("emission symbols %s do not match the discretiser's bins %s"
                             % (n_values.tolist(), disc.n_bins_.tolist()))
        if disc.n_features_in_ != self.n_features_in_:
            raise ValueError("discretiser has %d features, header says %d"
                             % (disc.n_features_in_, self.n_features_in_))
        model = MultiCategoricalHMM.from_params(
            arrays["startprob"], arrays["transmat"],
            CategoricalEmissions(arrays["emissionprob"], n_values), missing="sentinel")
        self._set_extra_state(model, arrays)
        self.discretizer_ = disc
        self.model_ = model
        self._build_runtime()

    def _set_extra_state(self, model, arrays) -> None:
        """Check a loaded ``model`` against this recognizer (ValueError if it does not
        fit) and take a subclass's own arrays; runs before the runtime is built."""


# --------------------------------------------------------------------------- recognizer


@register_recognizer
class HMMRecognizer(DiscretisedHMMRecognizer):
    """Supervised discrete multi-sensor HMM over equal-frequency bins (thesis 6.2-6.6).

    Parameters
    ----------
    n_bins : int, default 20
        Bins per feature (the thesis's M).
    tau : float, default 4000.0
        Persistence of eq 6.13 (used with ``transitions="persistence"``).
    transitions : {"persistence", "counts"}
        Transition model: eq 6.13, or counted transitions with pseudo-counts.
    pseudocount : float, default 1.0
        Dirichlet pseudo-count added to every start, transition (``"counts"``)
        and emission count; must be > 0 so unseen bins keep non-zero probability.

    Attributes
    ----------
    classes_ : (K,) str, sorted activity codes
    n_features_in_ : int
    feature_set_ : str or None, as passed to ``fit``
    discretizer_ : :class:`EqualFrequencyDiscretizer`
    model_ : :class:`MultiCategoricalHMM`
    startprob_, transmat_, emissionprob_ : the model's parameters

    ``predict`` is Viterbi, ``predict_proba`` forward-backward, ``filter`` and
    ``step`` the online filter (eq 6.5/6.6).
    """

    kind = "hmm"
    format_version = 1
    _parameter_constraints = {
        "n_bins": [Interval(numbers.Integral, 1, None, closed="left")],
        "tau": [Interval(numbers.Real, 0, None, closed="neither")],
        "transitions": [StrOptions({"persistence", "counts"})],
        "pseudocount": [Interval(numbers.Real, 0, None, closed="neither")],
    }

    def __init__(self, *, n_bins=20, tau=4000.0, transitions="persistence", pseudocount=1.0):
        self.n_bins = n_bins
        self.tau = tau
        self.transitions = transitions
        self.pseudocount = pseudocount

    # -- fitting ----------------------------------------------------------------
    def fit(self, sequences, labels=None, *, feature_set=None):
        """Count-based supervised fit; returns ``self``."""
        self._validate_params()
        Xs, ys = self._validate_fit_data(sequences, labels)
        disc = EqualFrequencyDiscretizer(n_bins=int(self.n_bins)).fit(np.concatenate(Xs))
        symbols = [disc.transform(X) for X in Xs]
        states = [np.searchsorted(self.classes_, y) for y in ys]
        counts = count_supervised(symbols, states, len(self.classes_), disc.n_bins_)
        return self._set_fitted(disc, counts, feature_set)

    def fit_streamed(self, source, *, feature_set=None):
        """:meth:`fit` on a source read one sequence at a time (``recognizers.sources``).

        Gives exactly the model ``fit`` gives on the same sequences, holding one
        sequence and one feature column of the training data in memory, never all of
        it: the classes from the labels, the bin edges column by column
        (``source.column``), then the counts sequence by sequence.
        """
        self._validate_params()
        n = len(source)
        if n == 0:
            raise ValueError("fit needs at least one sequence")
        classes = np.unique(np.concatenate([np.asarray(source.labels(i)).astype(str)
                                            for i in range(n)]))
        if classes.size == 0:
            raise ValueError("fit needs at least one labelled frame")
        first = _check_sequence(source[0].X, "sequences[0]")
        n_features = first.shape[1]
        del first
        disc = EqualFrequencyDiscretizer(n_bins=int(self.n_bins)).fit_columns(
            source.column, n_features)
        counts = SupervisedCounts.zeros(classes.size, disc.n_bins_)
        for i in range(n):
            item = source[i]
            X = _check_sequence(item.X, "sequences[%d]" % i)
            if X.shape[1] != n_features:
                raise ValueError("sequences[%d] has %d features, sequences[0] has %d"
                                 % (i, X.shape[1], n_features))
            y = np.asarray(item.y)
            if y.ndim != 1 or y.shape[0] != X.shape[0]:
                raise ValueError("labels[%d] has shape %s but sequences[%d] has %d frames"
                                 % (i, y.shape, i, X.shape[0]))
            counts.add(disc.transform(X), np.searchsorted(classes, y.astype(str)))
        self.n_features_in_ = n_features
        self.classes_ = classes
        return self._set_fitted(disc, counts, feature_set)

    def _set_fitted(self, disc, counts, feature_set):
        self.discretizer_ = disc
        self.model_ = MultiCategoricalHMM.from_counts(
            counts, pseudocount=float(self.pseudocount), transitions=self.transitions,
            tau=float(self.tau), missing="sentinel")
        self.feature_set_ = feature_set
        self._build_runtime()
        return self

    # -- inference ----------------------------------------------------------------
    def predict(self, X) -> np.ndarray:
        """Viterbi: the most probable activity sequence (T,) of str."""
        path = self.predict_states(X)
        return self.classes_[path]

    # -- sample rate ----------------------------------------------------------------
    def _rate_dependent_seconds(self, rate_hz: float) -> dict:
        from recognizers.rates import mean_stay_s

        stays = mean_stay_s(self.model_.transmat_, rate_hz)
        return {"mean_stay": {str(c): float(s) for c, s in zip(self.classes_, stays)}}

    def _convert_rate(self, factor: float) -> None:
        """The transitions as the base converts them; ``tau`` follows."""
        from recognizers.rates import persistence_tau_at_rate

        super()._convert_rate(factor)
        if self.transitions == "persistence":
            self.tau = persistence_tau_at_rate(float(self.tau), self.model_.n_components,
                                               factor)

    def _set_extra_state(self, model, arrays) -> None:
        if model.n_components != len(self.classes_):
            raise ValueError("model has %d states but %d classes"
                             % (model.n_components, len(self.classes_)))
