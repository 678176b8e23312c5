"""The live pipeline: SampleBlock -> features -> recognizer posterior.

Live monitoring, replay and offline evaluation all push blocks through this one
class, so a replayed recording gives exactly the features and posteriors seen live.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibration import WalkerCalibration
from host.features import FeatureBlock, FeatureExtractor
from host.samples import SampleBlock


@dataclass
class PipelineOutput:
    features: FeatureBlock
    posterior: np.ndarray | None  # (n, n_classes) causal (filtered) posteriors
    classes: tuple[str, ...]

    def current_activity(self) -> tuple[str, float] | None:
        """The most probable activity at the last sample, and its probability."""
        if self.posterior is None or not len(self.posterior):
            return None
        last = self.posterior[-1]
        k = int(np.argmax(last))
        return self.classes[k], float(last[k])


class RecognitionPipeline:
    """Features from calibrated counts, then a recognizer's streaming filter.

    The recognizer (optional) brings its own feature set: a model trained on COP
    features gets COP features whatever the caller asked for.  Given the stream's
    ``rate_hz``, a model trained at another rate is converted to it
    (``Recognizer.at_rate``), or ValueError says why it cannot be.
    """

    def __init__(self, calibration: WalkerCalibration, recognizer=None,
                 feature_set: str = "cop", rate_hz: float | None = None) -> None:
        if recognizer is not None:
            feature_set = getattr(recognizer, "feature_set_", None) or feature_set
            if rate_hz and hasattr(recognizer, "at_rate"):
                recognizer = recognizer.at_rate(rate_hz)
        self.features = FeatureExtractor(calibration, feature_set)
        self.recognizer = recognizer
        self.classes: tuple[str, ...] = (
            tuple(str(c) for c in recognizer.classes_) if recognizer is not None else ())
        self.learning = False
        self.reset()

    @property
    def can_learn(self) -> bool:
        """The recognizer learns online (a BMM), so ``set_learning(True)`` is possible."""
        r = self.recognizer
        return r is not None and r.get_tags().supports_partial_fit

    def set_learning(self, on: bool) -> None:
        """Keep learning from the stream (``learn_block``) or only recognise (``step_block``)."""
        on = bool(on) and self.can_learn
        if self.learning and not on:
            self.recognizer.sync_model()  # recognise with what was learnt
        self.learning = on

    def reset(self) -> None:
        self.features.reset()
        if self.recognizer is not None:
            self.recognizer.reset()

    def process(self, block: SampleBlock) -> PipelineOutput:
        feats = self.features.process(block)
        posterior = None
        if self.recognizer is not None:
            step = self.recognizer.learn_block if self.learning else self.recognizer.step_block
            posterior = step(feats.X)
        return PipelineOutput(feats, posterior, self.classes)
