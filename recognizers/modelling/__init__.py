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

from .hcrf import HCRFClassifier
from .hcrf_core import block_transitions, class_log_partitions, hcrf_nll

__all__ = [
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
    "HCRFClassifier",
    "block_transitions",
    "class_log_partitions",
    "hcrf_nll",
]
