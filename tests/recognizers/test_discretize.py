"""Equal-frequency discretisation (thesis 6.6)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from recognizers import EqualFrequencyDiscretizer, NotFittedError


def test_hand_worked_edges_and_symbols():
    X = np.arange(1.0, 11.0)[:, None]  # 1..10, 5 bins of 2
    d = EqualFrequencyDiscretizer(n_bins=5).fit(X)
    np.testing.assert_array_equal(d.edges_[0], [3.0, 5.0, 7.0, 9.0])
    np.testing.assert_array_equal(d.transform(X)[:, 0], [0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    # Unseen values fall into the bin whose interval holds them.
    np.testing.assert_array_equal(
        d.transform(np.array([[-100.0], [2.99], [3.0], [9.0], [1e9]]))[:, 0], [0, 0, 1, 4, 4])


def test_continuous_column_gets_exactly_equal_counts():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3)) * [1, 10, 1000]
    d = EqualFrequencyDiscretizer().fit(X)
    sym = d.transform(X)
    for j in range(3):
        assert d.n_bins_[j] == 20
        np.testing.assert_array_equal(np.bincount(sym[:, j], minlength=20), [100] * 20)


def test_ties_reduce_bins_without_empty_ones():
    rng = np.random.default_rng(1)
    speed = np.where(rng.random(1000) < 0.4, 0.0, rng.random(1000))  # 40 % exactly 0
    d = EqualFrequencyDiscretizer(n_bins=20).fit(speed[:, None])
    sym = d.transform(speed[:, None])[:, 0]
    counts = np.bincount(sym, minlength=d.n_bins_[0])
    # The cuts at ranks 50, 100, ..., 400 all land inside the block of zeros
    # and collapse; the first cut above it is at rank 450.
    assert d.n_bins_[0] == 12
    assert counts.min() > 0
    assert np.unique(sym[speed == 0.0]).size == 1  # the tied block is never split
    assert counts[0] == 450 and np.all(counts[1:] == 50)


def test_constant_and_all_nan_columns_have_one_bin():
    X = np.column_stack([np.full(50, 3.0), np.full(50, np.nan)])
    d = EqualFrequencyDiscretizer().fit(X)
    np.testing.assert_array_equal(d.n_bins_, [1, 1])
    sym = d.transform(np.array([[3.0, 1.0], [-5.0, np.nan], [7.0, 2.0]]))
    np.testing.assert_array_equal(sym, [[0, 0], [0, 1], [0, 0]])


def test_nan_maps_to_missing_symbol_and_infinities_to_extreme_bins():
    X = np.arange(100.0)[:, None]
    d = EqualFrequencyDiscretizer(n_bins=4).fit(X)
    assert d.missing_symbols_[0] == d.n_bins_[0] == 4
    assert d.n_symbols_[0] == 5
    np.testing.assert_array_equal(
        d.transform(np.array([[np.nan], [np.inf], [-np.inf]]))[:, 0], [4, 3, 0])


def test_infinite_training_values_do_not_break_the_cuts():
    X = np.concatenate([np.arange(96.0), [np.inf, np.inf, -np.inf, np.nan]])[:, None]
    d = EqualFrequencyDiscretizer(n_bins=4).fit(X)
    assert np.all(np.isfinite(d.edges_[0]))
    np.testing.assert_array_equal(d.edges_[0], [24.0, 48.0, 72.0])


def test_array_round_trip_gives_identical_symbols():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(500, 4))
    X[::7, 1] = np.round(X[::7, 1])
    d = EqualFrequencyDiscretizer(n_bins=7).fit(X)
    arrays = d.to_arrays()
    assert all(a.dtype != object for a in arrays.values())
    d2 = EqualFrequencyDiscretizer.from_arrays(arrays, n_bins=7)
    Y = rng.normal(size=(300, 4))
    Y[5, 2] = np.nan
    np.testing.assert_array_equal(d2.transform(Y), d.transform(Y))


def test_errors():
    with pytest.raises(NotFittedError):
        EqualFrequencyDiscretizer().transform(np.zeros((2, 2)))
    d = EqualFrequencyDiscretizer().fit(np.random.default_rng(0).normal(size=(30, 2)))
    with pytest.raises(ValueError, match="3 features"):
        d.transform(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="n_bins"):
        EqualFrequencyDiscretizer(n_bins=0).fit(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="inconsistent"):
        EqualFrequencyDiscretizer.from_arrays({"edges": np.zeros(3), "offsets": np.array([0, 2])})


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 200), st.integers(1, 3)),
                  elements=st.one_of(st.sampled_from([0.0, 1.0, -2.5]),
                                     st.floats(-1e6, 1e6), st.just(np.nan))),
       st.integers(1, 25))
def test_every_training_bin_is_used_and_symbols_are_in_range(X, n_bins):
    d = EqualFrequencyDiscretizer(n_bins=n_bins).fit(X)
    sym = d.transform(X)
    for j in range(X.shape[1]):
        assert 1 <= d.n_bins_[j] <= n_bins
        finite = ~np.isnan(X[:, j])
        assert np.all(sym[~finite, j] == d.missing_symbols_[j])
        counts = np.bincount(sym[finite, j], minlength=d.n_bins_[j])
        assert counts.size == d.n_bins_[j]
        if finite.any():
            assert counts.min() > 0  # no empty bin in the training data
        # Order is kept: a larger value never gets a smaller symbol.
        order = np.argsort(X[finite, j], kind="stable")
        assert np.all(np.diff(sym[finite, j][order]) >= 0)
