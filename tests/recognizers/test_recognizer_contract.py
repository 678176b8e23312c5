"""One set of checks run over every registered recognizer, plus base-class helpers."""
import numbers

import numpy as np
import pytest

from recognizers import (
    RECOGNIZERS,
    ModelFormatError,
    NotFittedError,
    Recognizer,
    RecognizerTags,
    check_is_fitted,
    clone,
    get_recognizer_class,
    register_recognizer,
)
from recognizers.base import Interval, StrOptions, validate_params

KINDS = sorted(RECOGNIZERS)


def data(make_sessions):
    s = make_sessions(n_subjects=2, seed=5)
    return [x["X"] for x in s], [x["y"] for x in s]


def test_hmm_is_registered():
    assert "hmm" in KINDS
    assert get_recognizer_class("hmm").kind == "hmm"
    with pytest.raises(ValueError, match="unknown recognizer 'nope'; choose one of: .*hmm"):
        get_recognizer_class("nope")


@pytest.mark.parametrize("kind", KINDS)
def test_init_only_stores_parameters(kind):
    rec = RECOGNIZERS[kind]()
    public = {k for k in vars(rec) if not k.startswith("_")}
    assert public == set(rec.get_params(deep=False))
    assert isinstance(rec.get_tags(), RecognizerTags)
    with pytest.raises(NotFittedError):
        check_is_fitted(rec)


@pytest.mark.parametrize("kind", KINDS)
def test_clone_and_params(kind):
    rec = RECOGNIZERS[kind]()
    other = clone(rec)
    assert other is not rec and other.get_params() == rec.get_params()
    name = sorted(rec.get_params())[0]
    with pytest.raises(ValueError, match="valid parameters are"):
        rec.set_params(not_a_parameter=1)
    assert rec.set_params(**{name: getattr(rec, name)}) is rec


@pytest.mark.parametrize("kind", KINDS)
def test_fit_returns_self_is_idempotent_and_keeps_params(kind, make_sessions):
    X, y = data(make_sessions)
    rec = RECOGNIZERS[kind]()
    before = rec.get_params()
    assert rec.fit(X, y) is rec
    assert rec.get_params() == before
    first = rec.predict_proba(X[0])
    rec.fit(X, y)
    np.testing.assert_array_equal(rec.predict_proba(X[0]), first)
    pred = rec.predict(X[0])
    assert pred.shape == (len(X[0]),) and set(pred) <= set(rec.classes_)
    assert first.shape == (len(X[0]), len(rec.classes_))
    np.testing.assert_allclose(first.sum(axis=1), 1.0)


@pytest.mark.parametrize("kind", KINDS)
def test_stream_equals_batch(kind, make_sessions):
    X, y = data(make_sessions)
    rec = RECOGNIZERS[kind]().fit(X, y)
    if not rec.get_tags().supports_streaming:
        pytest.skip("%s does not stream" % kind)
    batch = rec.filter(X[1])
    rec.reset()
    np.testing.assert_array_equal(np.array([rec.step(x) for x in X[1]]), batch)
    rec.reset()
    np.testing.assert_array_equal(np.concatenate([rec.step_block(X[1][:30]),
                                                  rec.step_block(X[1][30:])]), batch)


@pytest.mark.parametrize("kind", KINDS)
def test_save_load_round_trip(kind, make_sessions, tmp_path):
    X, y = data(make_sessions)
    rec = RECOGNIZERS[kind]().fit(X, y)
    loaded = Recognizer.load(rec.save(tmp_path / "m.npz"))
    assert type(loaded) is type(rec)
    np.testing.assert_array_equal(loaded.predict_proba(X[0]), rec.predict_proba(X[0]))
    np.testing.assert_array_equal(loaded.filter(X[0]), rec.filter(X[0]))


@pytest.mark.parametrize("kind", KINDS)
def test_ragged_sequences_and_feature_count(kind, make_sessions):
    X, y = data(make_sessions)
    rec = RECOGNIZERS[kind]().fit([X[0][:5], X[1]], [y[0][:5], y[1]])
    assert rec.n_features_in_ == X[0].shape[1]
    with pytest.raises(ValueError):
        rec.predict(X[0][:, :3])
    with pytest.raises(ValueError):
        RECOGNIZERS[kind]().fit([X[0], X[1][:, :3]], y)


# --------------------------------------------------------------------------- base helpers


class _Bad(Recognizer):
    def __init__(self, *, a=1):
        self.a = a + 1  # modifies its parameter: clone must refuse

    fit = predict_proba = filter = reset = step = _get_state = _set_state = None


class _Args(Recognizer):
    def __init__(self, *args):
        pass

    fit = predict_proba = filter = reset = step = _get_state = _set_state = None


def test_clone_refuses_constructors_that_change_parameters():
    with pytest.raises(RuntimeError, match="modifies parameter a"):
        clone(_Bad())


def test_star_args_constructors_are_rejected():
    with pytest.raises(RuntimeError, match="must not take \\*args"):
        _Args().get_params()


def test_registry_refuses_a_taken_kind():
    class Other(_Bad):
        kind = "hmm"
    with pytest.raises(ValueError, match="already taken"):
        register_recognizer(Other)


def test_parameter_constraints():
    # scikit-learn's constraint classes, re-exported by recognizers.base
    assert Interval(numbers.Integral, 1, None, closed="left").is_satisfied_by(1)
    assert not Interval(numbers.Real, 0, None, closed="neither").is_satisfied_by(0.0)
    assert not Interval(numbers.Real, 0, 1, closed="both").is_satisfied_by(float("nan"))
    assert StrOptions({"a"}).is_satisfied_by("a") and not StrOptions({"a"}).is_satisfied_by("b")

    class P(_Bad):
        _parameter_constraints = {"a": [Interval(numbers.Integral, 0, 5, closed="both"), None]}

        def __init__(self, *, a=1):
            self.a = a
    validate_params(P(a=None))
    with pytest.raises(ValueError, match=r"'a' parameter of P must be an int in the range "
                                         r"\[0, 5\] or None. Got 7 instead"):
        validate_params(P(a=7))


def test_errors_are_value_errors():
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)
    assert issubclass(ModelFormatError, ValueError)
