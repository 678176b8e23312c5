"""The walker's linear-chain CRF recognizer ``"crf"`` (thesis 6.5).

:class:`CRFRecognizer` wraps
:class:`~recognizers.modelling.crf.linear_chain.LinearChainCRF`:
``walkerlab train --recognizer crf``, streaming ``step`` for the live monitor,
model files.
"""
from __future__ import annotations

import numpy as np

from recognizers.base import (
    Recognizer,
    RecognizerTags,
    StreamRunMixin,
    check_is_fitted,
    register_recognizer,
)
from recognizers.modelling import chain
from recognizers.modelling.crf.linear_chain import _CONSTRAINTS, LinearChainCRF
from recognizers.modelling.crf.linear_chain_core import (
    FeatureSpec,
    crf_filter_run,
    new_feature_state,
)

__all__ = ["CRFRecognizer"]


@register_recognizer
class CRFRecognizer(StreamRunMixin, Recognizer):
    """The walker recognizer around :class:`LinearChainCRF` (parameters are the CRF's).

    Defaults differ from the CRF's in two places, chosen on simulated walker data
    (docs/results.md): the thesis's single self-transition weight
    (``transitions="self"``; the fixed course order biases a full matrix) and
    ``c2=1000`` (with ~10^5 training frames from a handful of subjects a weak
    penalty overfits to the training subjects).

    ``predict`` is Viterbi, ``predict_proba`` the forward-backward marginals,
    ``filter``/``step`` the causal forward filter over the same compiled
    per-frame features, so streaming reproduces ``filter`` bit for bit.  The
    float features are used directly (standardised inside the model).
    """

    _fitted_attribute = "crf_"
    kind = "crf"
    format_version = 1
    _parameter_constraints = _CONSTRAINTS
    # Window features and transition weights are per frame; the CRF is not converted.
    _frame_params = ("window",)

    def _convert_rate(self, factor: float) -> None:
        raise NotImplementedError("its transition weights and window features are per "
                                  "frame and cannot be rescaled")
    _tags = RecognizerTags(supports_streaming=True, supports_partial_fit=False,
                           requires_labels=True)

    def __init__(self, *, thresholds="ks", raw=True, window=0, transitions="self", c1=0.0,
                 c2=1000.0, max_iterations=100, tol=1e-7, verbose=False):
        self.thresholds = thresholds
        self.raw = raw
        self.window = window
        self.transitions = transitions
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.tol = tol
        self.verbose = verbose

    def __sklearn_is_fitted__(self) -> bool:
        return "crf_" in self.__dict__

    @classmethod
    def _wrap(cls, crf: LinearChainCRF) -> "CRFRecognizer":
        check_is_fitted(crf, "theta_")
        rec = cls(**crf.get_params())
        rec.crf_ = crf
        rec.classes_ = crf.classes_
        rec.n_features_in_ = crf.n_features_in_
        rec.feature_set_ = None
        rec._build_runtime()
        return rec

    def fit(self, sequences, labels=None, *, feature_set=None):
        """Train the CRF on labelled sequences; returns ``self``."""
        self._validate_params()
        if labels is None:
            raise ValueError("CRFRecognizer is supervised: fit(sequences, labels) needs labels")
        # The CRF checks the data; nothing here changes unless it succeeds.
        crf = LinearChainCRF(**self.get_params(deep=False)).fit(sequences, labels)
        self.crf_ = crf
        self.classes_ = crf.classes_
        self.n_features_in_ = crf.n_features_in_
        self.feature_set_ = feature_set
        self._build_runtime()
        return self

    def _build_runtime(self) -> None:
        crf = self.crf_
        K = len(crf.classes_)
        self._log_pi = np.zeros(K)
        self._exp_A = np.empty((K, K))
        self._colmax = np.empty(K)
        chain.transition_exp_into(crf.transition_, self._exp_A, self._colmax)
        self.reset()

    def _new_stream(self):
        spec = self.crf_.spec_
        K = len(self.crf_.classes_)
        ring, counters = new_feature_state(spec)
        return {"ring": ring, "counters": counters, "alpha": np.zeros((2, K)), "cur": 0,
                "started": False, "z": np.empty(spec.n_sensors),
                "dense": np.empty(spec.n_dense),
                "codes": np.empty(spec.code_sensors.shape[0], dtype=np.int64),
                "u": np.empty(K), "scratch": np.empty(K)}

    def _run(self, stream, X) -> np.ndarray:
        crf = self.crf_
        posts = np.empty((X.shape[0], len(crf.classes_)))
        if X.shape[0]:
            stream["cur"] = crf_filter_run(
                X, *crf.spec_.kernel_args(), stream["ring"], stream["counters"],
                crf.state_weights_, crf.table_, self._log_pi, crf.transition_, self._exp_A,
                self._colmax, stream["started"], stream["alpha"], stream["cur"], stream["z"],
                stream["dense"], stream["codes"], stream["u"], stream["scratch"], posts)
            stream["started"] = True
        return posts

    # -- inference ------------------------------------------------------------------
    def predict(self, X) -> np.ndarray:
        """Viterbi: the most probable activity sequence (T,) of str."""
        check_is_fitted(self, "crf_")
        return np.asarray(self.crf_.predict_single(self._X(X)), dtype=self.classes_.dtype)

    def predict_proba(self, X) -> np.ndarray:
        """Forward-backward marginals (T, n_classes)."""
        check_is_fitted(self, "crf_")
        return self.crf_.predict_proba_single(self._X(X))

    # -- streaming ------------------------------------------------------------------
    # -- persistence ----------------------------------------------------------------
    def _get_state(self) -> dict:
        crf = self.crf_
        spec = crf.spec_
        return {"mean": spec.mean, "scale": spec.scale, "cuts": spec.cuts,
                "cut_offsets": spec.cut_offsets, "theta": crf.theta_,
                "fit_info": np.array([crf.n_iter_, crf.n_evaluations_, crf.objective_])}

    def _set_state(self, arrays) -> None:
        spec = FeatureSpec(arrays["mean"], arrays["scale"], bool(self.raw), int(self.window),
                           arrays["cuts"], arrays["cut_offsets"])
        if spec.n_sensors != self.n_features_in_:
            raise ValueError("feature standardisation has %d sensors, header says %d"
                             % (spec.n_sensors, self.n_features_in_))
        offs = spec.cut_offsets
        if (offs.shape != (spec.n_sensors + 1,) or offs[0] != 0 or np.any(np.diff(offs) < 0)
                or offs[-1] != spec.cuts.shape[0]):
            raise ValueError("threshold offsets do not match the thresholds")
        crf = LinearChainCRF(**self.get_params(deep=False))
        crf._set_fitted(self.classes_, self.n_features_in_, spec, arrays["theta"])
        n_iter, n_evaluations, objective = np.asarray(arrays["fit_info"], dtype=np.float64)
        crf.n_iter_, crf.n_evaluations_ = int(n_iter), int(n_evaluations)
        crf.objective_ = float(objective)
        self.crf_ = crf
        self._build_runtime()
