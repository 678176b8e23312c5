"""Pure inference cores shared by the recognizers (no model objects, no I/O)."""
from recognizers.modelling.chain import (
    BackwardResult,
    FilterStepResult,
    ForwardResult,
    SmoothResult,
    ViterbiResult,
    backward,
    filter_step,
    forward,
    log_likelihood,
    sample_path,
    smooth,
    viterbi,
)
from recognizers.modelling.harmonium import BayesianHarmonium, Harmonium

__all__ = [
    "BayesianHarmonium",
    "Harmonium",
    "BackwardResult",
    "FilterStepResult",
    "ForwardResult",
    "SmoothResult",
    "ViterbiResult",
    "backward",
    "filter_step",
    "forward",
    "log_likelihood",
    "sample_path",
    "smooth",
    "viterbi",
]
