"""What the online multi-sensor HMMs share: input checks, the pilot mixture that
breaks their label symmetry, and inference with point estimates.

:class:`~recognizers.modelling.hmm.bmm.BMMHMM` (Bayesian moment matching) and
:class:`~recognizers.modelling.hmm.online_em.OnlineEMHMM` (Cappé's online EM) learn
the same model, an HMM whose state emits one discrete symbol per sensor, in one pass
over a stream.  :class:`OnlineMultiSensorHMM` holds what does not depend on the
learner: the hyperparameters both take, the checks of a batch of symbols (the first
batch fixes the sensors and alphabets), the stream bookkeeping of ``partial_fit``
and the hmmlearn-style prediction (:class:`MultiSensorHMMInferenceMixin`).
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from recognizers.base import NotFittedError
from recognizers.modelling import chain as _chain
from recognizers.modelling.hmm import bmm_core as _core
from recognizers.modelling.hmm.base import check_observations

__all__ = [
    "OnlineMultiSensorHMM",
    "MultiSensorHMMInferenceMixin",
    "validate_symbols",
    "split_lengths",
    "starts_mask",
    "mixture_profiles",
    "best_permutation_accuracy",
    "PILOT_RESTARTS",
]


def validate_symbols(X, estimator=None, *, reset: bool = False, n_symbols=None) -> np.ndarray:
    """A batch of symbols ``(n_samples, n_sensors)`` as C-contiguous int64.

    scikit-learn's checks through
    :func:`~recognizers.modelling.hmm.base.check_observations` (2-D, finite,
    non-negative integers, at least one sample and one sensor; the number of
    sensors recorded or checked against ``estimator.n_features_in_``), then each
    sensor's symbols against its alphabet size ``n_symbols[s]`` when given.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_sensors)
        Integer symbols; several sequences are concatenated (pass ``lengths``).
    estimator : BaseEstimator or None, default None
        The model whose ``n_features_in_`` is set (``reset``) or checked.
    reset : bool, default False
        Record the number of sensors instead of checking it.
    n_symbols : array-like of int of shape (n_sensors,) or None, default None
        Alphabet size per sensor.

    Returns
    -------
    ndarray of int64, shape (n_samples, n_sensors)
    """
    if isinstance(X, (list, tuple)) and len(X) > 0 and isinstance(X[0], np.ndarray) \
            and X[0].ndim == 2:
        raise TypeError("X must be one (n_samples, n_sensors) array; concatenate the "
                        "sequences and pass lengths=")
    arr = np.ascontiguousarray(check_observations(X, estimator, reset=reset, symbols=True),
                               dtype=np.int64)
    if n_symbols is not None:
        top = arr.max(0)
        bad = np.nonzero(top >= np.asarray(n_symbols))[0]
        if bad.size:
            s = int(bad[0])
            raise ValueError(f"X: sensor {s} has symbol {int(top[s])} but n_symbols[{s}] = "
                             f"{int(np.asarray(n_symbols)[s])}")
    return arr


def split_lengths(n_samples: int, lengths) -> np.ndarray:
    """Validate ``lengths`` (hmmlearn convention) and return start offsets."""
    if lengths is None:
        return np.array([0], dtype=np.int64)
    lens = np.asarray(lengths)
    if lens.ndim != 1 or lens.size == 0:
        raise ValueError("lengths must be a non-empty 1-D sequence of sequence lengths")
    if lens.dtype.kind not in "iu":
        if lens.dtype.kind == "f" and np.all(lens == np.round(lens)):
            lens = lens.astype(np.int64)
        else:
            raise TypeError("lengths must be integers")
    if np.any(lens <= 0):
        raise ValueError("every length must be positive")
    if int(lens.sum()) != n_samples:
        raise ValueError(
            f"lengths sum to {int(lens.sum())} but X has {n_samples} samples"
        )
    return np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)


def starts_mask(n_samples: int, offsets: np.ndarray) -> np.ndarray:
    starts = np.zeros(n_samples, dtype=np.bool_)
    starts[offsets] = True
    return starts


def best_permutation_accuracy(y_true, y_pred, n_states=None):
    """Accuracy after the best one-to-one matching of predicted to true states
    (Hungarian algorithm on the confusion matrix)."""
    from scipy.optimize import linear_sum_assignment

    y_true = np.asarray(y_true, dtype=np.int64)
    y_pred = np.asarray(y_pred, dtype=np.int64)
    K = int(max(y_true.max(), y_pred.max()) + 1) if n_states is None else n_states
    conf = np.zeros((K, K), dtype=np.int64)
    np.add.at(conf, (y_true, y_pred), 1)
    rows, cols = linear_sum_assignment(-conf)
    return conf[rows, cols].sum() / y_true.size, dict(zip(cols.tolist(), rows.tolist()))


PILOT_RESTARTS = 8


def mixture_profiles(X, ns, n_components, rng, *, window=1, n_sub=5000, n_iter=30,
                      n_init=PILOT_RESTARTS, smoothing=0.5):
    """Emission profiles of a mixture model fitted by EM on a random subsample of
    windows of ``window`` consecutive frames of ``X``, each window taken to come
    from one state (used only to tilt the BMM prior).

    Returns a list of ``n_init`` arrays ``(S, N, M)``, one per EM restart
    (k-means++ seeding), best pilot log-likelihood first."""
    T, S = X.shape
    N = n_components
    M = int(ns.max())
    window = max(1, min(int(window), T))
    n_win = T - window + 1
    starts = rng.choice(n_win, size=min(n_win, n_sub), replace=False) if n_win > n_sub else np.arange(n_win)
    n = starts.size
    idx = starts[:, None] + np.arange(window)[None, :]  # (n, window)
    counts = []
    for s in range(S):
        c = np.zeros((n, int(ns[s])))
        np.add.at(c, (np.repeat(np.arange(n), window), X[idx, s].ravel()), 1.0)
        counts.append(c)
    flat = np.concatenate(counts, 1)  # (n, sum M_s) for seeding distances
    results = []
    for _ in range(n_init):
        # k-means++ seeding on the count vectors
        seeds = [int(rng.integers(n))]
        dist = ((flat - flat[seeds[0]]) ** 2).sum(1)
        for _k in range(1, N):
            nxt = int(rng.choice(n, p=dist / dist.sum())) if dist.sum() > 0 else int(rng.integers(n))
            seeds.append(nxt)
            dist = np.minimum(dist, ((flat - flat[nxt]) ** 2).sum(1))
        d = np.stack([((flat - flat[i]) ** 2).sum(1) for i in seeds], 1)
        resp = np.full((n, N), 1e-3)
        resp[np.arange(n), d.argmin(1)] += 1.0
        resp /= resp.sum(1, keepdims=True)
        ll = prev = -np.inf
        for _it in range(n_iter):
            w = resp.sum(0) + 1e-9
            logp = np.log(w / w.sum())[None, :].repeat(n, 0)
            profs = []
            for s in range(S):
                cnt = resp.T @ counts[s] + smoothing  # (N, M_s)
                prof = cnt / cnt.sum(1, keepdims=True)
                profs.append(prof)
                logp = logp + counts[s] @ np.log(prof).T
            mx = logp.max(1, keepdims=True)
            lse = mx[:, 0] + np.log(np.exp(logp - mx).sum(1))
            ll = lse.sum()
            resp = np.exp(logp - lse[:, None])
            if ll - prev < 1e-6 * abs(ll):
                break
            prev = ll
        out = np.zeros((S, N, M))
        for s in range(S):
            out[s, :, : ns[s]] = profs[s]
        results.append((ll, len(results), out))
    results.sort(key=lambda r: -r[0])
    return [r[2] for r in results]


# ---------------------------------------------------------------------------
# shared inference (plug-in point estimates)
# ---------------------------------------------------------------------------


class MultiSensorHMMInferenceMixin:
    """Prediction with point estimates for multi-sensor discrete HMMs.

    Needs ``_log_params() -> (log_pi (N,), log_A (N, N), log_B (S, N, M))``,
    ``_check_fitted()``, ``n_features_in_``, ``n_symbols_`` and ``algorithm``.
    The recursions are :mod:`recognizers.modelling.chain`'s.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True  # integer symbols, one column per sensor
        tags.input_tags.positive_only = True
        tags.target_tags.required = False  # unsupervised: fit(X, lengths)
        return tags

    def _loglik(self, X, lengths):
        self._check_fitted()
        X = validate_symbols(X, self, n_symbols=self.n_symbols_)
        split_lengths(X.shape[0], lengths)  # uniform error messages
        log_pi, log_A, log_B = self._log_params()
        return log_pi, log_A, _core.emission_loglik(X, log_B)

    def score_samples(self, X, lengths=None):
        """``(log-likelihood, smoothed posteriors (T, N))`` as in hmmlearn."""
        log_pi, log_A, ll = self._loglik(X, lengths)
        res = _chain.smooth(log_pi, log_A, ll, lengths)
        return res.loglik, res.posterior

    def score(self, X, lengths=None):
        """Log-likelihood of ``X`` under the point-estimate parameters."""
        log_pi, log_A, ll = self._loglik(X, lengths)
        return _chain.forward(log_pi, log_A, ll, lengths).loglik

    def predict_proba(self, X, lengths=None):
        """Smoothed posteriors ``P(Y_t | e_{1:T})`` (forward-backward)."""
        return self.score_samples(X, lengths)[1]

    def filter(self, X, lengths=None):
        """Filtered posteriors ``P(Y_t | e_{1:t})`` without learning."""
        log_pi, log_A, ll = self._loglik(X, lengths)
        p = np.exp(_chain.forward(log_pi, log_A, ll, lengths).log_alpha)
        return p / p.sum(1, keepdims=True)

    def decode(self, X, lengths=None, algorithm=None):
        """``(log-probability, states)``: Viterbi, or ``"map"`` (smoothed argmax)."""
        algorithm = self.algorithm if algorithm is None else algorithm
        if algorithm not in ("viterbi", "map"):
            raise ValueError(f"algorithm must be 'viterbi' or 'map', got {algorithm!r}")
        if algorithm == "map":
            ll, post = self.score_samples(X, lengths)
            return ll, post.argmax(1)
        log_pi, log_A, ll = self._loglik(X, lengths)
        res = _chain.viterbi(log_pi, log_A, ll, lengths)
        return res.score, res.path

    def predict(self, X, lengths=None):
        """Most likely hidden states (``algorithm``: Viterbi or smoothed MAP)."""
        return self.decode(X, lengths)[1]


class OnlineMultiSensorHMM(MultiSensorHMMInferenceMixin, BaseEstimator):
    """Base of the online multi-sensor HMM learners: hyperparameter table, input
    handling and stream bookkeeping.

    A subclass declares its own hyperparameters with
    ``{**OnlineMultiSensorHMM._parameter_constraints, ...}`` and implements
    ``_init_state(X)`` (the prior or initial parameters from the first batch),
    ``_run(X, starts)`` (learn from frames, ``starts`` marking sequence starts;
    returns the filtered posteriors and predictive log-likelihoods) and
    ``_fit_pass(X, starts)`` (what ``fit`` does with the checked batch).
    """

    #: The hyperparameters every online learner takes; ``random_state`` (also a numpy
    #: Generator) is checked where it is used.
    _parameter_constraints: dict = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_symbols": [None, Interval(numbers.Integral, 1, None, closed="left"), "array-like"],
        "init": [StrOptions({"data", "random"})],
        "init_window": [Interval(numbers.Integral, 1, None, closed="left")],
        "algorithm": [StrOptions({"viterbi", "map"})],
    }

    def _is_initialised(self) -> bool:
        return hasattr(self, "n_symbols_")

    def _check_fitted(self) -> None:
        if not self._is_initialised():
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; "
                                 "call fit or partial_fit")

    def _resolve_n_symbols(self, X) -> np.ndarray:
        """Alphabet size per sensor: ``n_symbols`` (an int for every sensor) or, when
        None, ``max + 1`` of the first batch."""
        S = X.shape[1]
        if self.n_symbols is None:
            return (X.max(0) + 1).astype(np.int64)
        ns = np.asarray(self.n_symbols, dtype=np.int64)
        if ns.ndim == 0:
            ns = np.full(S, int(ns), dtype=np.int64)
        if ns.shape != (S,) or np.any(ns < 1):
            raise ValueError(f"n_symbols must be a positive int or one per sensor ({S})")
        return ns

    def _first_batch(self, X) -> np.ndarray:
        """The batch a (re)start learns from, checked against ``n_symbols``."""
        X = validate_symbols(X, self, reset=True)
        return validate_symbols(X, n_symbols=self._resolve_n_symbols(X))

    def _stream_batch(self, X, lengths) -> tuple[np.ndarray, np.ndarray]:
        """``(X, starts)`` for frames that continue the stream (``lengths`` None: the
        first frame starts a sequence only if none is open) or complete sequences."""
        if not self._is_initialised():
            self._init_state(self._first_batch(X))
        X = validate_symbols(X, self, n_symbols=self.n_symbols_)
        if lengths is None:
            starts = np.zeros(X.shape[0], dtype=np.bool_)
            starts[0] = not self._open
        else:
            starts = starts_mask(X.shape[0], split_lengths(X.shape[0], lengths))
        return X, starts

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, lengths=None):
        """Start from the prior (the initial parameters) and learn from ``X`` in one
        pass, each sequence in turn.

        Parameters
        ----------
        X : array-like of int of shape (n_samples, n_sensors)
            Symbols; several sequences concatenated.
        lengths : array-like of int or None, default None
            Length of each sequence (None: one sequence).

        Returns
        -------
        self
        """
        X = self._first_batch(X)
        self._fit_pass(X, starts_mask(X.shape[0], split_lengths(X.shape[0], lengths)))
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, lengths=None):
        """Continue learning online.

        Without ``lengths`` the frames continue the current stream (a new stream
        starts after :meth:`reset` or on first use); with ``lengths`` ``X`` holds
        complete sequences, each starting fresh.  The first call fixes the sensors
        and alphabets.  Returns ``self``.
        """
        self._run(*self._stream_batch(X, lengths))
        return self

    def reset(self):
        """End the current stream; the next frame starts a new sequence."""
        self._open = False
        return self
