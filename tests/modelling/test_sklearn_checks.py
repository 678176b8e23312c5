"""scikit-learn's own estimator checks over every estimator of the library (issue 33).

Each family declares its estimators (small settings, so a check's fit takes well
under a second) and, per estimator, the checks expected to fail with the reason.
A reason is one of:

* ``DOMAIN``: the check feeds data outside the model's input domain (e.g. real
  numbers to a model of integer symbols or counts); inapplicable, not a defect;
* ``DEFECT``: a known defect still to fix (issue 33), listed so the rest of the
  checks keep running; remove the entry with the fix.

The reasons are one table at the top; each family's block declares its estimators
and, per estimator, ``{check: reason}`` (estimators with the same domain share one
dict), so the branch that changes a family edits only its own block.  Estimators whose input is not one 2-D array (lists of
sequences) say so in ``__sklearn_tags__`` (``input_tags.two_d_array=False``) and
scikit-learn then runs none of its checks on them; the generic probes of
test_generic_probes.py cover those.
"""
from __future__ import annotations

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from estimator_catalogue import exported_estimators, library

DOMAIN = "input domain: "
DEFECT = "defect (issue 33): "

# --------------------------------------------------------------------------- reasons
# The one table of reasons; the families below refer to these names.

FIT_LENGTHS = DOMAIN + "hmmlearn's fit(X, lengths): the check's y is read as sequence lengths"
ONE_SENSOR = DOMAIN + "one sensor: X is (n_samples, 1) symbols; the check passes several columns"
REAL_COUNTS = DOMAIN + "word counts: X must hold integer counts; the check passes real numbers"
SPARSE_FRACTIONS = DOMAIN + ("word counts: sparse count matrices of every scipy format are "
                             "accepted (test_lda.py); the check's sparse data are fractions")
NEGATIVE_BLOBS = DOMAIN + ("word counts: the check feeds negative features (blobs around "
                           "(2, 2), sd 1) to an estimator tagged positive_only")
REAL_SYMBOLS = DOMAIN + "integer symbols: the check passes real numbers"
ORDERED = DOMAIN + "a sequence model: a frame's posterior depends on its neighbours"
SCORE_SAMPLES = DOMAIN + "hmmlearn's score_samples returns (log-likelihood, posteriors)"


def failing(reason: str, *checks: str) -> dict[str, str]:
    """``{check: reason}`` for checks that fail for one reason."""
    return dict.fromkeys(checks, reason)


#: Checks that run the model's whole API on the check's (X, y): they stop wherever the
#: model's input domain says no, so several domains share the list.
WHOLE_API_CHECKS = (
    "check_dict_unchanged", "check_dont_overwrite_parameters", "check_estimators_dtypes",
    "check_estimators_pickle", "check_f_contiguous_array_estimator", "check_fit2d_1feature",
    "check_fit2d_predict1d", "check_fit_check_is_fitted", "check_fit_idempotent",
    "check_fit_score_takes_y", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_n_features_in", "check_pipeline_consistency",
)

# --------------------------------------------------------------------------- hmm

HMM_FAMILY = [
    library.GaussianHMM(n_components=2, n_iter=5, random_state=0),
    library.GMMHMM(n_components=2, n_mix=2, n_iter=5, random_state=0),
    library.CategoricalHMM(n_components=2, n_iter=5, random_state=0),
    library.MultiCategoricalHMM(n_components=2, n_iter=5, random_state=0),
    library.CollapsedGibbsHMM(n_components=2, n_sweeps=20, random_state=0),
    library.BMMHMM(n_components=2, random_state=0),
    library.OnlineEMHMM(n_components=2, random_state=0),
    library.StickBreakingHMM(max_states=5, random_state=0),
]

#: GaussianHMM and GMMHMM: real observations, hmmlearn's API.
GAUSSIAN_HMM = {
    **failing(FIT_LENGTHS, "check_dtype_object", "check_estimators_dtypes",
              "check_estimators_nan_inf", "check_estimators_pickle", "check_fit2d_1feature",
              "check_fit_check_is_fitted", "check_fit_idempotent", "check_fit_score_takes_y",
              "check_n_features_in", "check_pipeline_consistency"),
    **failing(SCORE_SAMPLES, "check_methods_sample_order_invariance"),
    **failing(ORDERED, "check_methods_subset_invariance"),
}

#: MultiCategoricalHMM and CollapsedGibbsHMM: symbols of several sensors.  The NaN/inf
#: check passes its NaN part (scikit-learn's "Input X contains NaN") and then stops at
#: fit(X, y) with y as lengths.
MULTI_SENSOR_HMM = {
    **failing(FIT_LENGTHS, *WHOLE_API_CHECKS, "check_estimators_nan_inf"),
    **failing(REAL_SYMBOLS, "check_dtype_object"),
}

#: BMMHMM and OnlineEMHMM, the online learners of the same model: as above, and a few
#: more checks reach their fit(X, lengths).
ONLINE_HMM = {
    **MULTI_SENSOR_HMM,
    **failing(FIT_LENGTHS, "check_estimators_fit_returns_self",
              "check_estimators_overwrite_params", "check_fit2d_1sample", "check_n_features_in_after_fitting",
              "check_readonly_memmap_input"),
}

HMM_EXPECTED_FAILURES = {
    library.GaussianHMM: GAUSSIAN_HMM,
    library.GMMHMM: GAUSSIAN_HMM,
    library.CategoricalHMM: {
        **failing(ONE_SENSOR, *WHOLE_API_CHECKS, "check_estimators_fit_returns_self",
                  "check_estimators_nan_inf", "check_estimators_overwrite_params",
                  "check_fit2d_1sample", "check_n_features_in_after_fitting",
                  "check_readonly_memmap_input"),
        **failing(FIT_LENGTHS, "check_fit2d_1feature"),
        **failing(REAL_SYMBOLS, "check_dtype_object"),
    },
    library.MultiCategoricalHMM: MULTI_SENSOR_HMM,
    library.CollapsedGibbsHMM: MULTI_SENSOR_HMM,
    library.BMMHMM: ONLINE_HMM,
    library.OnlineEMHMM: ONLINE_HMM,
    library.StickBreakingHMM: failing(ORDERED, "check_methods_sample_order_invariance",
                                      "check_methods_subset_invariance"),
}

# --------------------------------------------------------------------------- crf

CRF_FAMILY = [
    library.LinearChainCRF(max_iterations=5),
    library.HCRFClassifier(n_hidden=2, max_iter=50, random_state=0),
    library.HCRFDPM(n_states=3, max_grad_iter=40, warm_grad_iter=20, n_outer=1,
                    random_state=0),
]

CRF_EXPECTED_FAILURES = {
    library.HCRFDPM: {
        "check_decision_proba_consistency": DOMAIN + "nonnegative features: the check draws "
            "blobs around (2, 2) with sd 1 whatever the positive_only tag says, and the model "
            "refuses negative features with a clear ValueError",
    },
}

# --------------------------------------------------------------------------- topics

TOPICS_FAMILY = [
    library.LDA(n_components=2, random_state=0),
    library.SupervisedLDA(n_components=2, max_iter=10, random_state=0),
    library.HDP(5, doc_truncation=3, max_iter=5, max_doc_iter=10, random_state=0),
    library.SupervisedHDP(5, doc_truncation=3, max_iter=5, max_doc_iter=10, random_state=0),
]

#: LDA and SupervisedLDA take integer word counts (their learners draw whole tokens).
INTEGER_COUNTS = {
    **failing(REAL_COUNTS, *WHOLE_API_CHECKS, "check_dtype_object",
              "check_estimators_fit_returns_self", "check_estimators_nan_inf",
              "check_estimators_overwrite_params", "check_n_features_in_after_fitting",
              "check_readonly_memmap_input", "check_transformer_data_not_an_array",
              "check_transformer_general", "check_transformer_n_iter",
              "check_transformer_preserve_dtypes"),
    **failing(SPARSE_FRACTIONS, "check_estimator_sparse_array", "check_estimator_sparse_matrix",
              "check_estimator_sparse_tag"),
}

TOPICS_EXPECTED_FAILURES = {
    library.LDA: {**INTEGER_COUNTS, **failing(REAL_COUNTS, "check_fit2d_1sample")},
    library.SupervisedLDA: {
        **INTEGER_COUNTS,
        **failing(REAL_COUNTS, "check_classifiers_classes", "check_classifiers_train",
                  "check_estimators_partial_fit_n_features",
                  "check_non_transformer_estimators_n_iter", "check_supervised_y_2d"),
        **failing(NEGATIVE_BLOBS, "check_decision_proba_consistency"),
    },
    library.SupervisedHDP: {
        "check_classifiers_train": DOMAIN + "a bag of words sees only the rows' proportions; "
            "on the check's Gaussian blobs even logistic regression on the proportions "
            "scores 0.79, below the 0.83 the check asks for",
        **failing(NEGATIVE_BLOBS, "check_decision_proba_consistency"),
    },
}

# --------------------------------------------------------------------------- harmonium

HARMONIUM_FAMILY = [
    # every column in the Gaussian wing: the checks feed real-valued data
    library.Harmonium(n_components=2, n_iter=5, gaussian_columns="all", random_state=0),
    library.BayesianHarmonium(n_components=2, n_burn_in=5, n_samples=3, thinning=1,
                              n_em_iter=2, em_samples=2, ml_n_iter=3, gaussian_columns="all",
                              random_state=0),
]

HARMONIUM_EXPECTED_FAILURES: dict = {}

# --------------------------------------------------------------------------- gp

GP_FAMILY = [
    library.LM2GP(max_states=4, n_inducing=10, n_outer=2, lbfgs_iter=5, random_state=0),
]

GP_EXPECTED_FAILURES = {
    library.LM2GP: failing(ORDERED, "check_methods_sample_order_invariance",
                           "check_methods_subset_invariance"),
}

# Checks whose outcome on a model is not settled by its domain: run, but not counted
# either way. LM2GP's labels of the check's 30 shuffled rows agree with the unshuffled
# ones in some full runs and not in others (the sequence prior decides only a few rows);
# likewise its labels of subsets (they passed once the regimes came from the jointly
# fitted HMM, issue 32, failed before).
UNSETTLED = {
    (library.LM2GP, "check_methods_sample_order_invariance"):
        "LM2GP: order invariance holds or not by a few rows' sequence prior",
    (library.LM2GP, "check_methods_subset_invariance"):
        "LM2GP: subset invariance holds or not by a few rows' sequence prior",
}

# ---------------------------------------------------------------------------

ESTIMATORS = HMM_FAMILY + CRF_FAMILY + TOPICS_FAMILY + HARMONIUM_FAMILY + GP_FAMILY
EXPECTED_FAILURES = {**HMM_EXPECTED_FAILURES, **CRF_EXPECTED_FAILURES,
                     **TOPICS_EXPECTED_FAILURES, **HARMONIUM_EXPECTED_FAILURES,
                     **GP_EXPECTED_FAILURES}


def _expected_failed_checks(estimator) -> dict:
    return EXPECTED_FAILURES.get(type(estimator), {})


def test_every_estimator_of_the_library_is_checked():
    checked = {type(est) for est in ESTIMATORS}
    exported = exported_estimators()
    assert exported <= checked, sorted(c.__name__ for c in exported - checked)


def test_every_reason_says_why():
    for cls, failures in EXPECTED_FAILURES.items():
        assert cls in {type(est) for est in ESTIMATORS}, cls
        for check, reason in failures.items():
            assert check.startswith("check_"), (cls, check)
            assert reason.startswith((DOMAIN, DEFECT)) and len(reason) > 30, (cls, check)


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks,
                         xfail_strict=True)
def test_sklearn_compatible_estimator(estimator, check):
    name = getattr(check, "func", check).__name__
    unsettled = UNSETTLED.get((type(estimator), name))
    try:
        check(estimator)
    except Exception:
        if unsettled:
            pytest.skip("failed, " + unsettled)
        raise
    if unsettled:
        pytest.skip("passed, " + unsettled)
