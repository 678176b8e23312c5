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
from recognizers.modelling.matching import hungarian_error
from recognizers.modelling.sbhmm import StickBreakingHMM

__all__ = [
    "StickBreakingHMM",
    "hungarian_error",
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
