"""Bad input reaches every estimator of the library as scikit-learn's own refusal.

scikit-learn's checks stop early on the HMMs (their ``fit(X, lengths)`` reads the
check's ``y`` as lengths) and on the topic models (the checks pass real numbers, the
models take integer counts), so the refusals they would test are tested here on each
model's own data: NaN/inf, featureless, one-dimensional, negative and mis-sized input
in scikit-learn's words, and sparse count matrices of every scipy format accepted
as the dense matrix is.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from estimator_catalogue import library

REAL_HMMS = [library.GaussianHMM(n_components=2, n_iter=3, random_state=0),
             library.GMMHMM(n_components=2, n_mix=2, n_iter=3, random_state=0)]
SYMBOL_HMMS = [library.CategoricalHMM(n_components=2, n_iter=3, random_state=0),
               library.MultiCategoricalHMM(n_components=2, n_iter=3, random_state=0),
               library.CollapsedGibbsHMM(n_components=2, n_sweeps=10, random_state=0),
               library.BMMHMM(n_components=2, random_state=0),
               library.OnlineEMHMM(n_components=2, random_state=0)]


def _ids(est):
    return type(est).__name__


def _valid(est, rng, n=60):
    if est in REAL_HMMS:
        return rng.normal(size=(n, 2))
    n_sensors = 1 if isinstance(est, library.CategoricalHMM) else 2
    return rng.integers(0, 3, size=(n, n_sensors))


@pytest.mark.parametrize("est", REAL_HMMS + SYMBOL_HMMS, ids=_ids)
@pytest.mark.parametrize("bad, message", [(np.nan, "Input X contains NaN"),
                                          (np.inf, "Input X contains infinity")])
def test_fit_refuses_nan_and_inf(est, bad, message):
    X = _valid(est, np.random.default_rng(0)).astype(float)
    X[3, 0] = bad
    with pytest.raises(ValueError, match=message):
        clone(est).fit(X)


@pytest.mark.parametrize("est", REAL_HMMS + SYMBOL_HMMS, ids=_ids)
def test_fit_refuses_empty_input_in_sklearns_words(est):
    with pytest.raises(ValueError, match=r"0 feature\(s\) \(shape=\(12, 0\)\) while a minimum"):
        clone(est).fit(np.empty((12, 0), dtype=np.int64))
    with pytest.raises(ValueError, match=r"0 sample\(s\)"):
        clone(est).fit(np.empty((0, 2), dtype=np.int64))


@pytest.mark.parametrize("est", REAL_HMMS + SYMBOL_HMMS, ids=_ids)
def test_predict_checks_shape_and_number_of_features(est):
    X = _valid(est, np.random.default_rng(0))
    fitted = clone(est).fit(X)
    assert fitted.n_features_in_ == X.shape[1]
    with pytest.raises(ValueError, match="(?s)Expected 2D array.*Reshape your data"):
        fitted.predict(X[:, 0])
    wider = np.hstack([X, X[:, :1]])
    with pytest.raises(ValueError, match="X has %d features, but %s is expecting %d features"
                       % (X.shape[1] + 1, type(est).__name__, X.shape[1])):
        fitted.predict(wider)
    with pytest.raises(ValueError, match="Input X contains NaN"):
        fitted.predict(np.where(np.arange(X.size).reshape(X.shape) == 0, np.nan, X))


@pytest.mark.parametrize("est", SYMBOL_HMMS, ids=_ids)
def test_negative_symbols_are_refused_in_sklearns_words_with_what_symbols_are(est):
    X = _valid(est, np.random.default_rng(0))
    X[5, 0] = -2
    with pytest.raises(ValueError, match=r"Negative values in data passed to %s\. Symbols are "
                       r"0, 1, \.\.\. \(smallest here -2\)" % type(est).__name__):
        clone(est).fit(X)


SPARSE_FORMATS = ["csr", "csc", "coo", "lil", "dok", "bsr", "dia"]


@pytest.mark.parametrize("est", [library.LDA(n_components=2, random_state=0),
                                 library.SupervisedLDA(n_components=2, max_iter=5,
                                                       random_state=0)], ids=_ids)
@pytest.mark.parametrize("fmt", SPARSE_FORMATS + ["csr_64"])
def test_topic_models_take_sparse_counts_of_every_format_as_the_dense_matrix(est, fmt):
    rng = np.random.default_rng(0)
    X = rng.poisson(0.7, size=(20, 9))
    y = np.arange(20) % 2 if isinstance(est, library.SupervisedLDA) else None
    if fmt == "csr_64":  # 64-bit indices, as large corpora have
        S = sp.csr_array(X)
        S.indices, S.indptr = S.indices.astype(np.int64), S.indptr.astype(np.int64)
    else:
        S = sp.csr_array(X).asformat(fmt)
    dense = clone(est).fit(X, y)
    sparse = clone(est).fit(S, y)
    np.testing.assert_array_equal(sparse.components_, dense.components_)
    np.testing.assert_array_equal(sparse.transform(S), dense.transform(X))
