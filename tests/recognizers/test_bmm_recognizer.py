"""The walker recognizer "bmm": BMMHMM behind the recognizer contract, learning on.

The contract checks every registered kind already (test_recognizer_contract.py);
these tests cover what only BMM does: continued unlabelled learning that survives
a save/load, and that learning actually tracks the data.
"""
import numpy as np
import pytest

from recognizers import BMMRecognizer, NotFittedError, load_recognizer
from recognizers.base import ModelFormatError
from recognizers.modelling.hmm.bmm import BMMHMM
from tests.recognizers.conftest import synthetic_sessions


def _data(seed, n_subjects=3, sessions_per_subject=2):
    s = synthetic_sessions(n_subjects=n_subjects, sessions_per_subject=sessions_per_subject,
                           seed=seed, segment=(60, 120), n_segments=10, noise=0.5)
    return [x["X"] for x in s], [x["y"] for x in s]


def _accuracy(rec, Xs, ys):
    pred = np.concatenate([rec.predict(X) for X in Xs])
    return float(np.mean(pred == np.concatenate(ys)))


@pytest.fixture(scope="module")
def fitted():
    X, y = _data(seed=3)
    return BMMRecognizer(n_init=2, init_frames=2000, random_state=0).fit(X, y), X, y


def test_is_registered_streaming_and_learns_online(fitted):
    rec, _, _ = fitted
    tags = rec.get_tags()
    assert rec.kind == "bmm" and tags.supports_partial_fit and tags.supports_streaming
    assert isinstance(rec.bmm_, BMMHMM)


def test_recognizes_separable_activities(fitted):
    rec, X, y = fitted
    # Five activities with distinct feature means: states map one-to-one.
    assert _accuracy(rec, X, y) > 0.9
    assert sorted(set(rec.classes_[rec.state_to_class_])) == sorted(set(np.concatenate(y)))


def test_inference_uses_the_posterior_mean_of_the_kept_posterior(fitted):
    rec, _, _ = fitted
    np.testing.assert_allclose(rec.transmat_, rec.bmm_.transmat_, rtol=0, atol=1e-15)
    np.testing.assert_allclose(rec.emissionprob_[:, :, :rec.bmm_.emissionprob_.shape[2]],
                               rec.bmm_.emissionprob_, rtol=0, atol=1e-15)
    assert rec.bmm_.n_steps_ == sum(len(X) for X in fitted[1])


def test_partial_fit_after_load_continues_exactly(fitted, tmp_path):
    rec, _, _ = fitted
    more, _ = _data(seed=11, n_subjects=1)
    path = rec.save(tmp_path / "bmm.npz")
    live = load_recognizer(path)  # the file's posterior, twice: one goes on in memory
    again = load_recognizer(path)
    live.partial_fit(more)
    again.save(tmp_path / "copy.npz")  # a second save/load cycle changes nothing
    resumed = load_recognizer(tmp_path / "copy.npz").partial_fit(more)
    for a, b in ((live.bmm_.transmat_concentration_, resumed.bmm_.transmat_concentration_),
                 (live.bmm_.emissionprob_concentration_,
                  resumed.bmm_.emissionprob_concentration_)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)  # to rounding
    assert live.bmm_.n_steps_ == rec.bmm_.n_steps_ + sum(len(X) for X in more)
    # The new data moved the posterior, and inference follows it.
    assert not np.array_equal(live.transmat_, rec.transmat_)
    np.testing.assert_allclose(live.transmat_, live.bmm_.transmat_, atol=1e-15)
    np.testing.assert_array_equal(live.state_to_class_, rec.state_to_class_)


def test_learning_on_unlabelled_data_keeps_or_improves_accuracy():
    X, y = _data(seed=5, n_subjects=1, sessions_per_subject=1)
    rec = BMMRecognizer(n_init=2, init_frames=500, random_state=1).fit(X, y)
    new_X, new_y = _data(seed=5, n_subjects=3, sessions_per_subject=3)
    before = _accuracy(rec, new_X, new_y)
    rec.partial_fit(new_X)
    after = _accuracy(rec, new_X, new_y)
    assert after >= before - 0.01
    assert np.all(np.isfinite(rec.predict_proba(new_X[0])))


def test_partial_fit_errors():
    with pytest.raises(NotFittedError):
        BMMRecognizer().partial_fit([np.zeros((5, 7))])
    X, y = _data(seed=2, n_subjects=2, sessions_per_subject=1)
    rec = BMMRecognizer(n_init=1, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        rec.partial_fit([np.zeros((5, 3))])
    n = rec.bmm_.n_steps_
    assert rec.partial_fit([]) is rec and rec.bmm_.n_steps_ == n


def test_a_tampered_posterior_is_a_damaged_model(fitted, tmp_path):
    rec, _, _ = fitted
    path = rec.save(tmp_path / "bmm.npz")
    with np.load(path, allow_pickle=False) as z:
        arrays = dict(z)
    arrays["bmm_transmat_concentration"] = arrays["bmm_transmat_concentration"][::-1].copy()
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ModelFormatError, match="damaged 'bmm' model"):
        load_recognizer(tmp_path / "bad.npz")


def test_learn_block_continues_one_stream_and_saves_the_latest_posterior(fitted, tmp_path):
    rec, _, _ = fitted
    path = rec.save(tmp_path / "bmm.npz")
    stream, _ = _data(seed=21, n_subjects=1, sessions_per_subject=1)
    X = stream[0]
    whole, parts = load_recognizer(path), load_recognizer(path)
    p_whole = whole.learn_block(X)
    p_parts = np.concatenate([parts.learn_block(X[:37]), parts.learn_block(X[37:200]),
                              parts.learn_block(X[200:])])
    np.testing.assert_allclose(p_parts, p_whole, rtol=0, atol=1e-12)
    np.testing.assert_allclose(p_whole.sum(1), 1.0, atol=1e-12)
    assert whole.bmm_.n_steps_ == rec.bmm_.n_steps_ + len(X)
    # Saved without sync_model: the file holds the learnt posterior, consistently.
    again = load_recognizer(whole.save(tmp_path / "learnt.npz"))
    np.testing.assert_allclose(again.transmat_, whole.bmm_.transmat_, atol=1e-12)
    assert not np.allclose(again.transmat_, rec.transmat_)
    # sync_model makes the plain filter use it too.
    whole.sync_model()
    np.testing.assert_allclose(whole.filter(X[:50]), again.filter(X[:50]), atol=1e-9)
