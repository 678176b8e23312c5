"""The estimator library: every model as a scikit-learn-style estimator, by family.

Families (each a subpackage holding its estimators and their numba cores side
by side):

* :mod:`recognizers.modelling.hmm`: hidden Markov models (Gaussian, GMM,
  categorical, multi-sensor, collapsed Gibbs, online moment matching, online
  EM, stick-breaking);
* :mod:`recognizers.modelling.crf`: conditional random fields (linear-chain,
  hidden CRF, HCRF with a Dirichlet-process mixture);
* :mod:`recognizers.modelling.topics`: topic models (LDA, HDP, supervised LDA
  and HDP) and held-out perplexity;
* :mod:`recognizers.modelling.harmonium`: harmoniums;
* :mod:`recognizers.modelling.gp`: Gaussian-process latent models (LM2GP).

Shared inference, used by the families (never the reverse):
:mod:`~recognizers.modelling.chain` (forward-backward, Viterbi, filtering),
:mod:`~recognizers.modelling.emissions`, :mod:`~recognizers.modelling.em`,
:mod:`~recognizers.modelling.dirichlet`, :mod:`~recognizers.modelling.sticks`,
:mod:`~recognizers.modelling.hmc`, :mod:`~recognizers.modelling.matching`.
Synthetic data for tests and benchmarks: :mod:`~recognizers.modelling.datasets`.

The walker recognizers that wrap these estimators live in :mod:`recognizers`.
"""
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
from recognizers.modelling.crf import HCRFDPM, HCRFClassifier, LinearChainCRF, encode_signed
from recognizers.modelling.crf.hcrf_core import block_transitions, class_log_partitions, hcrf_nll
from recognizers.modelling.gp import LM2GP
from recognizers.modelling.harmonium import BayesianHarmonium, Harmonium
from recognizers.modelling.hmm import (
    BMMHMM,
    GMMHMM,
    CategoricalHMM,
    CollapsedGibbsHMM,
    GaussianHMM,
    MultiCategoricalHMM,
    OnlineEMHMM,
    StickBreakingHMM,
)
from recognizers.modelling.matching import hungarian_error
from recognizers.modelling.topics import HDP, LDA, SupervisedHDP, SupervisedLDA, heldout_perplexity

__all__ = [
    # hmm
    "BMMHMM",
    "CategoricalHMM",
    "CollapsedGibbsHMM",
    "GMMHMM",
    "GaussianHMM",
    "MultiCategoricalHMM",
    "OnlineEMHMM",
    "StickBreakingHMM",
    # crf
    "HCRFClassifier",
    "HCRFDPM",
    "LinearChainCRF",
    "encode_signed",
    "block_transitions",
    "class_log_partitions",
    "hcrf_nll",
    # topics
    "HDP",
    "LDA",
    "SupervisedHDP",
    "SupervisedLDA",
    "heldout_perplexity",
    # harmonium, gp
    "BayesianHarmonium",
    "Harmonium",
    "LM2GP",
    # shared inference
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
