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
from recognizers.modelling.hcrf import HCRFClassifier
from recognizers.modelling.hcrf_core import block_transitions, class_log_partitions, hcrf_nll
from recognizers.modelling.hdp import HDP
from recognizers.modelling.hcrfdpm import HCRFDPM, encode_signed
from recognizers.modelling.lda import LDA
from recognizers.modelling.lm2gp import LM2GP
from recognizers.modelling.matching import hungarian_error
from recognizers.modelling.perplexity import heldout_perplexity
from recognizers.modelling.sbhmm import StickBreakingHMM
from recognizers.modelling.shdp import SupervisedHDP
from recognizers.modelling.slda import SupervisedLDA

__all__ = [
    "BayesianHarmonium",
    "Harmonium",
    "HDP",
    "LDA",
    "LM2GP",
    "StickBreakingHMM",
    "SupervisedHDP",
    "SupervisedLDA",
    "heldout_perplexity",
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
    "HCRFClassifier",
    "block_transitions",
    "class_log_partitions",
    "hcrf_nll",
    "HCRFDPM",
    "encode_signed",
]
