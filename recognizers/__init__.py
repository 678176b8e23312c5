"""Activity recognizers for the instrumented walker, behind one contract.

The walker side of the project; the estimators they wrap are the library
:mod:`recognizers.modelling` (one subpackage per model family).

* :mod:`recognizers.base`: the contract (:class:`Recognizer`), errors, tags,
  the registry (``RECOGNIZERS``, :func:`load_recognizer`) and model files;
* :mod:`recognizers.hmm_recognizer`: ``"hmm"``, the thesis's supervised discrete
  multi-sensor HMM over equal-frequency bins;
* :mod:`recognizers.crf_recognizer`: ``"crf"``, around the linear-chain CRF;
* :mod:`recognizers.latent_recognizers`: the unsupervised walker recognizers
  ``"hmm-em"``, ``"hmm-gibbs"`` and ``"bmm"`` (latent states mapped to
  activities; BMM keeps learning with ``partial_fit``);
* :mod:`recognizers.shdp_recognizer`: ``"shdp"``, a supervised HDP over documents
  of motion words (:mod:`recognizers.motion_words`), learning online with
  ``partial_fit``;
* :mod:`recognizers.hcrf_dpm_recognizer`: ``"hcrf-dpm"``, windows classified by
  the HCRF with a Dirichlet-process mixture;
* :mod:`recognizers.discretize`: equal-frequency bins (thesis 6.6);
* :mod:`recognizers.evaluation`: window accuracy, transitions, confusion,
  leave-one-subject-out.

:mod:`recognizers.hmm` (the hmmlearn drop-in: ``from recognizers.hmm import
GaussianHMM``), :mod:`recognizers.crf` and :mod:`recognizers.bmm` re-export the
estimators under their historical paths; other modules that moved stay
importable by their old names (:mod:`recognizers._moved_modules`).
"""
from recognizers import _moved_modules

_moved_modules.install()

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
from recognizers.crf_recognizer import CRFRecognizer
from recognizers.hcrf_dpm_recognizer import HCRFDPMRecognizer
from recognizers.shdp_recognizer import SHDPRecognizer
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
from recognizers.hmm_recognizer import HMMRecognizer
from recognizers.latent_recognizers import BMMRecognizer, EMHMMRecognizer, GibbsHMMRecognizer
from recognizers.modelling.crf import LinearChainCRF
from recognizers.modelling.hmm import (
    GMMHMM,
    CategoricalEmissions,
    CategoricalHMM,
    CategoricalStats,
    CollapsedGibbsHMM,
    ConvergenceWarning,
    GaussianHMM,
    MultiCategoricalHMM,
    count_supervised,
    persistence_transmat,
)

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
