"""Online Bayesian moment matching for HMMs, under its historical path.

:class:`BMMHMM` and its helpers live in :mod:`recognizers.modelling.hmm.bmm`, the
synthetic HMMs in :mod:`recognizers.modelling.datasets`.  This module only
re-exports them.
"""
from recognizers.base import NotFittedError
from recognizers.modelling.datasets import make_separable_hmm, sample_hmm
from recognizers.modelling.hmm.bmm import (
    BMMHMM,
    MultiSensorHMMInferenceMixin,
    best_permutation_accuracy,
    check_random_state,
    split_lengths,
    validate_symbols,
)

__all__ = [
    "BMMHMM",
    "NotFittedError",
    "check_random_state",
    "validate_symbols",
    "split_lengths",
    "sample_hmm",
    "make_separable_hmm",
    "best_permutation_accuracy",
    "MultiSensorHMMInferenceMixin",
]
