"""hmmlearn-compatible HMMs and the walker's HMM recognizer, under their historical path.

Switching from hmmlearn is a change of import (docs/hmmlearn-compat.md)::

    from recognizers.hmm import GaussianHMM, GMMHMM, CategoricalHMM, MultiCategoricalHMM

The estimators live in :mod:`recognizers.modelling.hmm`; the walker recognizer
``"hmm"`` in :mod:`recognizers.hmm_recognizer`.  This module only re-exports them.
"""
from recognizers.hmm_recognizer import HMMRecognizer
from recognizers.modelling.hmm import (
    GMMHMM,
    CategoricalEmissions,
    CategoricalHMM,
    CategoricalStats,
    CollapsedGibbsHMM,
    ConvergenceWarning,
    GaussianHMM,
    MultiCategoricalHMM,
    SupervisedCounts,
    count_supervised,
    normalize_counts,
    persistence_transmat,
)

__all__ = [
    "CategoricalStats",
    "CategoricalEmissions",
    "SupervisedCounts",
    "count_supervised",
    "persistence_transmat",
    "normalize_counts",
    "MultiCategoricalHMM",
    "CategoricalHMM",
    "CollapsedGibbsHMM",
    "GaussianHMM",
    "GMMHMM",
    "ConvergenceWarning",
    "HMMRecognizer",
]
