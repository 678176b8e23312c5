"""The generic probes of issue 33 on every estimator of the library, on valid data.

scikit-learn's checks feed generic 2-D real arrays; these probes feed each model data
of its own domain (symbols, counts, binary data, lists of sequences), so they also
reach the estimators the checks cannot (sequence models) or only partly can:

* predict before fit raises scikit-learn's ``NotFittedError``;
* ``random_state=np.random.RandomState(0)`` is accepted;
* a binary classifier's ``decision_function`` has shape ``(n,)``;
* ``fit(X, None)`` on a classifier is a clear ``ValueError``;
* complex input is refused;
* ``__init__`` stores its arguments unchanged.

``KNOWN_FAILURES`` lists what still fails, per family, with the reason.
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError

from estimator_catalogue import exported_estimators, library


def _reals(rng):
    return rng.normal(size=(60, 2)), None


def _symbols(n_sensors):
    def make(rng):
        return rng.integers(0, 3, size=(60, n_sensors)), None
    return make


def _counts(labelled):
    def make(rng):
        X = rng.poisson(2.0, size=(24, 12))
        return X, (np.arange(24) % 2 if labelled else None)
    return make


def _binary(rng):
    return (rng.random((40, 6)) < 0.4).astype(float), None


def _sequences(labels_per_frame, nonnegative=False):
    def make(rng):
        X = [rng.normal(size=(12, 2)) + (i % 2) for i in range(8)]
        if nonnegative:  # HCRF-DPM's features are nonnegative (signed ones are encoded)
            X = [np.abs(x) for x in X]
        if labels_per_frame:
            return X, [np.where(x[:, 0] > 0.5, "b", "a") for x in X]
        return X, np.arange(8) % 2
    return make


#: (estimator, data maker) for every estimator, small settings.
CASES = [
    (library.GaussianHMM(n_components=2, n_iter=3), _reals),
    (library.GMMHMM(n_components=2, n_mix=2, n_iter=3), _reals),
    (library.CategoricalHMM(n_components=2, n_iter=3), _symbols(1)),
    (library.MultiCategoricalHMM(n_components=2, n_iter=3), _symbols(2)),
    (library.CollapsedGibbsHMM(n_components=2, n_sweeps=10), _symbols(2)),
    (library.BMMHMM(n_components=2), _symbols(2)),
    (library.OnlineEMHMM(n_components=2), _symbols(2)),
    (library.StickBreakingHMM(max_states=3, max_iter=10), _reals),
    (library.LinearChainCRF(max_iterations=5), _sequences(labels_per_frame=True)),
    (library.HCRFClassifier(n_hidden=2, max_iter=10), _sequences(labels_per_frame=False)),
    (library.HCRFDPM(n_states=3, n_outer=1, max_grad_iter=10, warm_grad_iter=5),
     _sequences(labels_per_frame=False, nonnegative=True)),
    (library.LDA(n_components=2), _counts(labelled=False)),
    (library.SupervisedLDA(n_components=2, max_iter=5), _counts(labelled=True)),
    (library.HDP(5, doc_truncation=3, max_iter=5, max_doc_iter=10), _counts(labelled=False)),
    (library.SupervisedHDP(5, doc_truncation=3, max_iter=5, max_doc_iter=10),
     _counts(labelled=True)),
    (library.Harmonium(n_components=2, n_iter=3), _binary),
    (library.BayesianHarmonium(n_components=2, n_burn_in=3, n_samples=3, n_em_iter=1,
                               em_samples=2, ml_n_iter=3), _binary),
    (library.LM2GP(n_latent=2, max_states=3, n_inducing=10, n_outer=1, lbfgs_iter=3), _reals),
]

#: (estimator class, probe) -> why it fails today, one dict per family.  Remove an
#: entry with its fix.
HMM_KNOWN_FAILURES: dict = {}
CRF_KNOWN_FAILURES: dict = {}
TOPICS_KNOWN_FAILURES: dict = {}
GP_KNOWN_FAILURES: dict = {}
KNOWN_FAILURES: dict[tuple[type, str], str] = {
    **HMM_KNOWN_FAILURES, **CRF_KNOWN_FAILURES, **TOPICS_KNOWN_FAILURES, **GP_KNOWN_FAILURES}


def _ids(case):
    return type(case[0]).__name__


def _known(request, estimator, probe):
    # Strict: a probe that starts passing fails the test until its entry is removed.
    reason = KNOWN_FAILURES.get((type(estimator), probe))
    if reason is not None:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))


def _fit(estimator, X, y, **params):
    est = clone(estimator).set_params(**params)
    return est.fit(X) if y is None else est.fit(X, y)


def _predictor(estimator):
    for name in ("predict", "transform", "predict_proba", "score_samples", "score"):
        if hasattr(estimator, name):
            return name
    raise AssertionError("%s predicts nothing" % type(estimator).__name__)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_predict_before_fit_raises_sklearns_not_fitted_error(case, request):
    estimator, make = case
    _known(request, estimator, "not_fitted")
    X, _ = make(np.random.default_rng(0))
    with pytest.raises(NotFittedError):
        getattr(clone(estimator), _predictor(estimator))(X)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_a_random_state_instance_is_accepted(case, request):
    estimator, make = case
    if "random_state" not in estimator.get_params():
        pytest.skip("no random_state")
    _known(request, estimator, "random_state_instance")
    X, y = make(np.random.default_rng(0))
    fitted = _fit(estimator, X, y, random_state=np.random.RandomState(0))
    getattr(fitted, _predictor(fitted))(X)


@pytest.mark.parametrize("case", [c for c in CASES if is_classifier(c[0])], ids=_ids)
def test_binary_decision_function_is_one_column(case, request):
    estimator, make = case
    if not hasattr(estimator, "decision_function"):
        pytest.skip("no decision_function")
    _known(request, estimator, "binary_decision_function")
    X, y = make(np.random.default_rng(0))
    scores = _fit(estimator, X, y).decision_function(X)
    assert np.shape(scores) == (len(X),)


@pytest.mark.parametrize("case", [c for c in CASES if is_classifier(c[0])], ids=_ids)
def test_a_classifier_without_labels_is_a_clear_value_error(case, request):
    estimator, make = case
    _known(request, estimator, "fit_without_labels")
    X, _ = make(np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"(?i)\by\b|label|target|class"):
        clone(estimator).fit(X, None)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_complex_input_is_refused(case, request):
    estimator, make = case
    _known(request, estimator, "complex_input")
    X, y = make(np.random.default_rng(0))
    Xc = [x + 1j for x in X] if isinstance(X, list) else np.asarray(X) + 1j
    with pytest.raises((ValueError, TypeError)):
        _fit(estimator, Xc, y)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_init_stores_its_arguments_unchanged(case, request):
    estimator, _ = case
    _known(request, estimator, "init_stores_arguments")
    cls = type(estimator)
    defaults = {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()
                if p.default is not p.empty and name in cls().get_params()}
    params = cls().get_params()
    for name, default in defaults.items():
        assert params[name] is default or params[name] == default, name
    given = estimator.get_params()
    assert clone(estimator).get_params() == given


def test_the_probes_cover_every_estimator():
    assert exported_estimators() <= {type(est) for est, _ in CASES}
