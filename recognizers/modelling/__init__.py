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
from recognizers.modelling.lda import LDA
from recognizers.modelling.perplexity import heldout_perplexity

__all__ = [
    "BayesianHarmonium",
    "Harmonium",
    "LDA",
    "heldout_perplexity",
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
