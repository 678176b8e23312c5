"""HMMRecognizer.fit_streamed: the model fit gives, from a source read one sequence
at a time (recognizers/sources.py, issue 22)."""
import numpy as np
import pytest

from recognizers import get_recognizer_class
from recognizers.sources import ListSource, fit_source


def _data(seed):
    rng = np.random.default_rng(seed)
    Xs, ys = [], []
    for T in (50, 1, 300, 77):
        X = rng.normal(size=(T, 3))
        X[:, 1] = np.round(X[:, 1])  # heavy ties
        X[rng.random(T) < 0.1, 2] = np.nan  # missing readings
        X[0, 0] = -0.0
        Xs.append(X)
        ys.append(rng.choice(np.array(["A", "B", "C"]), size=T))
    return Xs, ys


@pytest.mark.parametrize("params", [{}, {"transitions": "counts", "n_bins": 7},
                                    {"n_bins": 1, "pseudocount": 0.3}])
@pytest.mark.parametrize("seed", [0, 1])
def test_streamed_fit_is_the_in_memory_fit_exactly(params, seed):
    Xs, ys = _data(seed)
    R = get_recognizer_class("hmm")
    a = R(**params).fit(Xs, ys, feature_set="cop")
    b = R(**params).fit_streamed(ListSource(Xs, ys), feature_set="cop")
    sa, sb = a._get_state(), b._get_state()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert np.array_equal(sa[k], sb[k]), k
    assert np.array_equal(a.classes_, b.classes_)
    assert (a.n_features_in_, a.feature_set_) == (b.n_features_in_, b.feature_set_)
    assert np.array_equal(a.predict(Xs[2]), b.predict(Xs[2]))


def test_fit_source_falls_back_to_fit_for_recognizers_without_streaming():
    Xs, ys = _data(3)
    R = get_recognizer_class("crf")
    assert not hasattr(R, "fit_streamed")
    a = R(max_iterations=3).fit(Xs, ys)
    b = fit_source(R(max_iterations=3), ListSource(Xs, ys))
    assert np.array_equal(a.predict(Xs[0]), b.predict(Xs[0]))


def test_streamed_fit_refuses_what_fit_refuses():
    Xs, ys = _data(0)
    R = get_recognizer_class("hmm")
    with pytest.raises(ValueError, match="feature"):
        R().fit_streamed(ListSource([Xs[0], Xs[2][:, :2]], [ys[0], ys[2]]))
    with pytest.raises(ValueError, match="frames"):
        R().fit_streamed(ListSource([Xs[0]], [ys[0][:-1]]))
    with pytest.raises(ValueError, match="at least one"):
        R().fit_streamed(ListSource([], []))
