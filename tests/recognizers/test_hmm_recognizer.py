"""The supervised multi-sensor HMM: parameters, inference, streaming, model files."""
import json

import numpy as np
import pytest

from recognizers import (
    HMMRecognizer,
    ModelFormatError,
    MultiCategoricalHMM,
    NotFittedError,
    count_supervised,
    load_recognizer,
    persistence_transmat,
)
from recognizers.modelling.hmm import CategoricalEmissions, CategoricalStats
from recognizers.modelling import chain


def fit_hmm(sessions, **params):
    return HMMRecognizer(**params).fit([s["X"] for s in sessions], [s["y"] for s in sessions])


# --------------------------------------------------------------------------- parameters


def test_persistence_matrix_has_the_exact_values_of_eq_6_13():
    A = persistence_transmat(13, 4000.0)
    assert A[0, 0] == 4000.0 / 4012.0 and A[7, 7] == 4000.0 / 4012.0
    assert A[0, 1] == 1.0 / 4012.0 and A[12, 3] == 1.0 / 4012.0
    np.testing.assert_allclose(A.sum(axis=1), 1.0, rtol=1e-15)
    np.testing.assert_array_equal(persistence_transmat(1, 4000.0), [[1.0]])


def test_supervised_counts_with_pseudocounts_hand_worked():
    # One sensor with 3 values; sequences (symbol, state):
    #   seq 1: (0,0) (1,0) (1,1) (2,1)    seq 2: (2,1) (2,1)
    symbols = [np.array([[0], [1], [1], [2]]), np.array([[2], [2]])]
    states = [np.array([0, 0, 1, 1]), np.array([1, 1])]
    counts = count_supervised(symbols, states, 2, [3])
    np.testing.assert_array_equal(counts.start, [1, 1])
    np.testing.assert_array_equal(counts.trans, [[1, 1], [0, 2]])
    np.testing.assert_array_equal(counts.emission.counts[0, :, :3], [[1, 1, 0], [0, 1, 3]])

    m = MultiCategoricalHMM.from_counts(counts, pseudocount=1.0, transitions="counts")
    np.testing.assert_allclose(m.startprob_, [2 / 4, 2 / 4], rtol=1e-15)
    np.testing.assert_allclose(m.transmat_, [[2 / 4, 2 / 4], [1 / 4, 3 / 4]], rtol=1e-15)
    # (count + 1) / (n_k + 3): the unseen value 2 of state 0 keeps 1/5.
    np.testing.assert_allclose(m.emissionprob_[0, :, :3], [[2 / 5, 2 / 5, 1 / 5],
                                                           [1 / 7, 2 / 7, 4 / 7]], rtol=1e-15)
    assert np.all(m.emissionprob_[0, :, 3] == 0)  # the missing symbol is not a value

    p = MultiCategoricalHMM.from_counts(counts, pseudocount=1.0, transitions="persistence",
                                        tau=10.0)
    np.testing.assert_array_equal(p.transmat_, persistence_transmat(2, 10.0))


def test_emission_component_soft_counts_and_missing_symbol():
    em = CategoricalEmissions(np.array([[[0.5, 0.5], [0.1, 0.9]]]), [2])
    ll = em.log_likelihood(np.array([[0], [1], [2]]))  # 2 = missing
    np.testing.assert_allclose(ll, np.log([[0.5, 0.1], [0.5, 0.9], [1.0, 1.0]]), rtol=1e-15)
    stats = em.init_stats()
    em.accumulate(stats, np.array([[0], [1], [2]]),
                  np.array([[0.25, 0.75], [1.0, 0.0], [0.5, 0.5]]))
    np.testing.assert_allclose(stats.counts[0], [[0.25, 1.0, 0], [0.75, 0.0, 0]])
    new = em.m_step(stats, pseudocount=1.0)
    np.testing.assert_allclose(new.emissionprob[0, :, :2],
                               [[1.25 / 3.25, 2.0 / 3.25], [1.75 / 2.75, 1.0 / 2.75]])
    with pytest.raises(ValueError, match="out of range"):
        em.log_likelihood(np.array([[3]]))
    assert isinstance(stats, CategoricalStats)


def test_unseen_bins_keep_finite_likelihood(sessions):
    rec = fit_hmm(sessions)
    B = rec.emissionprob_
    for s, n in enumerate(rec.model_.n_values_):
        assert np.all(B[s, :, :n] > 0)
    # Values far outside anything seen for any activity.
    X = np.full((5, 7), 1e6)
    X[2] = -1e6
    assert np.isfinite(rec.score(X))
    for P in (rec.filter(X), rec.predict_proba(X)):
        assert np.all(np.isfinite(P))
        np.testing.assert_allclose(P.sum(axis=1), 1.0)


def test_fit_uses_thesis_defaults(sessions):
    rec = fit_hmm(sessions)
    K = len(rec.classes_)
    np.testing.assert_array_equal(rec.classes_, np.unique(np.concatenate(
        [s["y"] for s in sessions])))
    np.testing.assert_array_equal(rec.transmat_, persistence_transmat(K, 4000.0))
    assert rec.discretizer_.n_bins == 20
    starts = np.array([np.searchsorted(rec.classes_, s["y"][0]) for s in sessions])
    expected = (np.bincount(starts, minlength=K) + 1.0) / (len(sessions) + K)
    np.testing.assert_allclose(rec.startprob_, expected, rtol=1e-15)


def test_one_sensor_model_agrees_with_hmmlearn():
    hmm = pytest.importorskip("hmmlearn.hmm")
    rng = np.random.default_rng(0)
    K, M = 3, 4
    B = rng.dirichlet(np.ones(M), size=K)
    pi, A = rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(K), size=K)
    ours = MultiCategoricalHMM.from_params(pi, A, CategoricalEmissions(B[None], [M]))
    ref = hmm.CategoricalHMM(n_components=K, n_features=M, implementation="log")
    ref.startprob_, ref.transmat_, ref.emissionprob_ = pi, A, B
    X = rng.integers(0, M, size=(60, 1))
    lengths = [25, 35]
    assert ours.score(X, lengths) == pytest.approx(ref.score(X, lengths), rel=1e-10)
    np.testing.assert_allclose(ours.predict_proba(X, lengths), ref.predict_proba(X, lengths),
                               atol=1e-10)
    np.testing.assert_array_equal(ours.predict(X, lengths), ref.predict(X, lengths))


# --------------------------------------------------------------------------- inference


def test_inference_equals_the_chain_functions_on_the_model(sessions):
    rec = fit_hmm(sessions, transitions="counts")
    X = sessions[0]["X"]
    m = rec.model_
    ll = m.emissions_.log_likelihood(rec.discretizer_.transform(X))
    f = chain.forward(m.log_startprob_, m.log_transmat_, ll)
    np.testing.assert_allclose(rec.filter(X), np.exp(f.log_alpha), rtol=1e-13, atol=1e-300)
    assert rec.score(X) == f.loglik
    np.testing.assert_array_equal(rec.predict_proba(X),
                                  chain.smooth(m.log_startprob_, m.log_transmat_, ll).posterior)
    np.testing.assert_array_equal(
        rec.predict(X),
        rec.classes_[chain.viterbi(m.log_startprob_, m.log_transmat_, ll).path])


def test_well_separated_activities_are_recognised(make_sessions):
    train = make_sessions(n_subjects=3, seed=1)
    test = make_sessions(n_subjects=1, seed=1)  # same means, fresh draw of subject 0
    rec = fit_hmm(train)
    for s in test:
        assert np.mean(rec.predict(s["X"]) == s["y"]) > 0.95
        assert np.mean(rec.classes_[rec.filter(s["X"]).argmax(1)] == s["y"]) > 0.9


def test_missing_feature_leaves_that_sensor_out(sessions):
    both = fit_hmm(sessions)
    first = HMMRecognizer().fit([s["X"][:, :1] for s in sessions], [s["y"] for s in sessions])
    X = sessions[1]["X"].copy()
    X[:, 1:] = np.nan  # every sensor but the first missing
    np.testing.assert_allclose(both.filter(X), first.filter(X[:, :1]), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(both.predict_proba(X), first.predict_proba(X[:, :1]),
                               rtol=1e-12, atol=1e-300)


# --------------------------------------------------------------------------- streaming


def test_step_equals_filter_exactly(sessions):
    rec = fit_hmm(sessions)
    X = sessions[2]["X"]
    batch = rec.filter(X)
    rec.reset()
    stream = np.array([rec.step(x) for x in X])
    np.testing.assert_array_equal(stream, batch)
    rec.reset()  # a reset stream starts over
    np.testing.assert_array_equal(rec.step(X[0]), batch[0])


def test_step_block_in_chunks_equals_filter(sessions):
    rec = fit_hmm(sessions)
    X = sessions[0]["X"]
    batch = rec.filter(X)
    rec.reset()
    cuts = [0, 1, 7, 7, 50, len(X)]
    parts = [rec.step_block(X[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    np.testing.assert_array_equal(np.concatenate(parts), batch)
    # filter() does not disturb a running stream.
    rec.reset()
    rec.step_block(X[:10])
    rec.filter(X)
    np.testing.assert_array_equal(rec.step(X[10]), batch[10])


# --------------------------------------------------------------------------- model files


def test_save_load_round_trip_gives_identical_posteriors(sessions, tmp_path):
    rec = fit_hmm(sessions, n_bins=12, tau=500.0)
    rec.fit([s["X"] for s in sessions], [s["y"] for s in sessions], feature_set="cop")
    path = rec.save(tmp_path / "model.walkermodel")  # any suffix; no ".npz" appended
    assert path.exists() and not (tmp_path / "model.walkermodel.npz").exists()
    for loaded in (HMMRecognizer.load(path), load_recognizer(path)):
        assert type(loaded) is HMMRecognizer
        assert loaded.get_params() == rec.get_params()
        assert loaded.feature_set_ == "cop"
        np.testing.assert_array_equal(loaded.classes_, rec.classes_)
        X = sessions[1]["X"]
        np.testing.assert_array_equal(loaded.filter(X), rec.filter(X))
        np.testing.assert_array_equal(loaded.predict_proba(X), rec.predict_proba(X))
        np.testing.assert_array_equal(loaded.predict(X), rec.predict(X))
        loaded.reset()
        np.testing.assert_array_equal(loaded.step(X[0]), rec.filter(X)[0])
    with np.load(path, allow_pickle=False) as npz:  # readable without pickle
        assert all(npz[k].dtype != object for k in npz.files)


def _rewrite_header(src, dst, **changes):
    with np.load(src, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    header = json.loads(arrays["__header__"].tobytes().decode())
    header.update(changes)
    arrays["__header__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(dst, "wb") as fh:
        np.savez(fh, **arrays)
    return dst


@pytest.fixture
def saved(sessions, tmp_path):
    return fit_hmm(sessions).save(tmp_path / "hmm.npz")


@pytest.mark.parametrize("changes,loader,match", [
    (dict(kind="crf"), HMMRecognizer.load, r"holds a 'crf' model, not 'hmm'"),
    (dict(kind="nonsense"), load_recognizer, r"unknown kind 'nonsense'"),
    (dict(format_version=99), load_recognizer, r"format version 99.*reads versions 1 to 1"),
    (dict(format_version="1"), load_recognizer, r"integer format_version"),
    (dict(format="something-else"), HMMRecognizer.load, r"not a WalkerLab model file"),
    (dict(params={"n_bins": 20, "bogus": 1}), load_recognizer, r"parameters do not fit"),
])
def test_wrong_model_files_raise_one_line_model_format_error(saved, tmp_path, changes,
                                                             loader, match):
    bad = _rewrite_header(saved, tmp_path / "bad.npz", **changes)
    with pytest.raises(ModelFormatError, match=match) as info:
        loader(bad)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_files_that_are_not_models_raise_model_format_error(saved, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    plain = tmp_path / "plain.npz"
    np.savez(plain, a=np.zeros(3))
    damaged = tmp_path / "damaged.npz"
    with np.load(saved, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files if k != "transmat"}
    with open(damaged, "wb") as fh:
        np.savez(fh, **arrays)
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, __header__=np.array([{"kind": "hmm"}], dtype=object))
    for path, match in [(text, "not a WalkerLab model file"), (plain, "no header"),
                        (damaged, "damaged 'hmm' model"), (pickled, "not a WalkerLab")]:
        with pytest.raises(ModelFormatError, match=match) as info:
            load_recognizer(path)
        assert "\n" not in str(info.value)
    with pytest.raises(FileNotFoundError):
        load_recognizer(tmp_path / "missing.npz")


# --------------------------------------------------------------------------- validation


def test_unfitted_use_raises_not_fitted_error(tmp_path):
    rec = HMMRecognizer()
    X = np.zeros((3, 7))
    for call in (lambda: rec.predict(X), lambda: rec.filter(X), lambda: rec.predict_proba(X),
                 lambda: rec.step(X[0]), rec.reset, lambda: rec.save(tmp_path / "m.npz"),
                 lambda: rec.transmat_):
        with pytest.raises(NotFittedError, match="not fitted yet"):
            call()
    assert not hasattr(rec, "transmat_")  # NotFittedError is an AttributeError


@pytest.mark.parametrize("params,match", [
    (dict(tau=0.0), "'tau'"), (dict(tau=float("nan")), "'tau'"),
    (dict(pseudocount=0), "'pseudocount'"), (dict(n_bins=0), "'n_bins'"),
    (dict(n_bins=2.5), "'n_bins'"), (dict(n_bins=True), "'n_bins'"),
    (dict(transitions="learned"), "'transitions'"),
])
def test_bad_parameters_are_rejected_in_fit_not_init(sessions, params, match):
    rec = HMMRecognizer(**params)  # never raises
    with pytest.raises(ValueError, match=match):
        rec.fit([sessions[0]["X"]], [sessions[0]["y"]])


def test_input_shape_errors(sessions):
    rec = fit_hmm(sessions)
    with pytest.raises(ValueError, match="6 features"):
        rec.filter(np.zeros((4, 6)))
    with pytest.raises(ValueError, match="shape"):
        rec.step(np.zeros(6))
    with pytest.raises(ValueError, match="labels"):
        HMMRecognizer().fit([np.zeros((4, 7))], [np.array(["A", "B"])])
    with pytest.raises(ValueError, match="needs labels"):
        HMMRecognizer().fit([np.zeros((4, 7))])
    with pytest.raises(ValueError, match="2-D"):
        rec.predict(np.zeros(7))


def test_a_failed_fit_changes_nothing(sessions):
    fresh = HMMRecognizer()
    with pytest.raises(ValueError):
        fresh.fit([np.zeros((4, 7))], [np.array(["A", "B"])])
    assert not hasattr(fresh, "classes_")
    with pytest.raises(NotFittedError):
        fresh.predict(np.zeros((2, 7)))
    rec = fit_hmm(sessions)
    before = rec.filter(sessions[0]["X"])
    with pytest.raises(ValueError):
        rec.fit([np.zeros((4, 3))], [np.array(["A", "B"])])
    assert rec.n_features_in_ == 7
    np.testing.assert_array_equal(rec.filter(sessions[0]["X"]), before)
