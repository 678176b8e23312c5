"""Activity recognizers for the instrumented walker, behind one contract.

* :mod:`recognizers.base`: the contract (:class:`Recognizer`), errors, tags,
  the registry (``RECOGNIZERS``, :func:`load_recognizer`) and model files;
* :mod:`recognizers.hmm`: the thesis's supervised discrete multi-sensor HMM, and
  hmmlearn-compatible HMMs learned by EM (``GaussianHMM``, ``GMMHMM``,
  ``CategoricalHMM``, ``MultiCategoricalHMM``) or collapsed Gibbs
  (``CollapsedGibbsHMM``);
* :mod:`recognizers.crf`: the linear-chain CRF (``LinearChainCRF``) and its
  walker recognizer ``"crf"``;
* :mod:`recognizers.unsupervised`: the unsupervised walker recognizers
  ``"hmm-em"``, ``"hmm-gibbs"`` and ``"bmm"`` (latent states mapped to
  activities; BMM keeps learning with ``partial_fit``);
* :mod:`recognizers.bmm`: ``BMMHMM``, online Bayesian moment matching (hmmlearn
  conventions), and :mod:`recognizers.online_em`: the online EM baseline;
* :mod:`recognizers.shdp`: ``"shdp"``, a supervised HDP over documents of motion
  words (:mod:`recognizers.motion_words`), learning online with ``partial_fit``;
* :mod:`recognizers.discretize`: equal-frequency bins (thesis 6.6);
* :mod:`recognizers.evaluation`: window accuracy, transitions, confusion,
  leave-one-subject-out;
* :mod:`recognizers.modelling`: pure inference cores (chain recursions, ...).
"""
from recognizers.base import (
    RECOGNIZERS,
    ModelFormatError,
    NotFittedError,
    Recognizer,
    RecognizerTags,
    check_is_fitted,
    clone,
    get_recognizer_class,
    load_recognizer,
    register_recognizer,
)
from recognizers.crf import CRFRecognizer, LinearChainCRF
from recognizers.hcrf_dpm import HCRFDPMRecognizer
from recognizers.shdp import SHDPRecognizer
from recognizers.discretize import EqualFrequencyDiscretizer
from recognizers.evaluation import (
    TransitionCounts,
    accuracy_by_window,
    confusion_matrix,
    leave_one_subject_out,
    transition_counts,
    window_accuracy,
    window_correct,
)
from recognizers.hmm import (
    GMMHMM,
    CategoricalEmissions,
    CategoricalHMM,
    CategoricalStats,
    CollapsedGibbsHMM,
    ConvergenceWarning,
    GaussianHMM,
    HMMRecognizer,
    MultiCategoricalHMM,
    count_supervised,
    persistence_transmat,
)
from recognizers.unsupervised import BMMRecognizer, EMHMMRecognizer, GibbsHMMRecognizer

__all__ = [
    "RECOGNIZERS",
    "ModelFormatError",
    "NotFittedError",
    "Recognizer",
    "RecognizerTags",
    "HCRFDPMRecognizer",
    "SHDPRecognizer",
    "check_is_fitted",
    "clone",
    "get_recognizer_class",
    "load_recognizer",
    "register_recognizer",
    "EqualFrequencyDiscretizer",
    "CRFRecognizer",
    "LinearChainCRF",
    "TransitionCounts",
    "accuracy_by_window",
    "confusion_matrix",
    "leave_one_subject_out",
    "transition_counts",
    "window_accuracy",
    "window_correct",
    "CategoricalEmissions",
    "CategoricalStats",
    "HMMRecognizer",
    "MultiCategoricalHMM",
    "CategoricalHMM",
    "CollapsedGibbsHMM",
    "GaussianHMM",
    "GMMHMM",
    "ConvergenceWarning",
    "BMMRecognizer",
    "EMHMMRecognizer",
    "GibbsHMMRecognizer",
    "count_supervised",
    "persistence_transmat",
]
