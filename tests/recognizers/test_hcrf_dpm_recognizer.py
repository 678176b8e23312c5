"""The hcrf-dpm walker recognizer: windows, accuracy on separable sessions, NaN frames."""
import numpy as np
import pytest

from recognizers import Recognizer
from recognizers.hcrf_dpm_recognizer import HCRFDPMRecognizer, window_starts


@pytest.mark.parametrize("T,W,H", [(100, 40, 10), (95, 40, 20), (30, 40, 10), (40, 40, 7)])
def test_windows_cover_every_frame_and_end_at_T(T, W, H):
    s = window_starts(T, W, H)
    cover = np.zeros(T)
    for a in s:
        cover[a:a + W] += 1
    assert cover.min() >= 1 and s[-1] + min(W, T) == T and np.all(np.diff(s) > 0)


def test_learns_sessions_and_handles_missing_readings(make_sessions, tmp_path):
    s = make_sessions(n_subjects=3, seed=1)
    X, y = [x["X"] for x in s], [x["y"] for x in s]
    rec = HCRFDPMRecognizer(window=20, hop=5, n_states=6, max_var_iter=20,
                            max_grad_iter=60).fit(X[:2], y[:2])
    # Windows straddle activity changes, so frames near a change may go wrong.
    assert np.mean(rec.predict(X[2]) == y[2]) >= 0.5   # chance 0.2; see docs/benchmarks.md
    m = rec.model_
    assert m.state_usage_.shape == (len(rec.window_classes_), 6)
    assert 1 <= m.n_states_used_ <= 6
    Xn = X[2].copy()
    Xn[10:15, 2] = np.nan
    P = rec.filter(Xn)
    assert np.all(np.isfinite(P)) and np.allclose(P.sum(axis=1), 1.0)
    loaded = Recognizer.load(rec.save(tmp_path / "m.npz"))
    np.testing.assert_array_equal(loaded.filter(Xn), P)


def test_needs_two_window_labels():
    X = [np.random.default_rng(0).normal(size=(50, 3))]
    with pytest.raises(ValueError, match="at least two activities"):
        HCRFDPMRecognizer(window=20).fit(X, [np.array(["WF"] * 45 + ["ST"] * 5)])


def test_block_stats_are_the_means_and_deviations_of_the_latest_blocks():
    from recognizers.hcrf_dpm_recognizer import block_stats

    Z = np.random.default_rng(0).normal(size=(2, 23, 3))
    S = block_stats(Z, 5)                      # 4 blocks of 5 from the end; 3 oldest left out
    assert S.shape == (2, 4, 6)
    for k in range(4):
        B = Z[:, 3 + 5 * k:8 + 5 * k]
        np.testing.assert_allclose(S[:, k, :3], B.mean(axis=1))
        np.testing.assert_allclose(S[:, k, 3:], B.std(axis=1))
    short = block_stats(Z[:, :3], 5)           # shorter than a block: one block of all
    np.testing.assert_allclose(short[:, 0, :3], Z[:, :3].mean(axis=1))


def test_hat_encoding_interpolates_linearly_between_knots():
    from recognizers.hcrf_dpm_recognizer import fit_knots, hat_encode

    rng = np.random.default_rng(1)
    V = rng.normal(size=(500, 2))
    knots = fit_knots(V, 5)
    assert knots.shape == (2, 5) and np.all(np.diff(knots, axis=1) > 0)
    H = hat_encode(V, knots).reshape(500, 2, 5)
    assert H.min() >= 0 and np.allclose(H.sum(axis=2), 1.0)
    assert np.all((H > 0).sum(axis=2) <= 2)
    # A linear potential over the hats is the piecewise-linear interpolant of its
    # weights at the knots (clamped beyond the end knots).
    g = rng.normal(size=(2, 5))
    for i in range(2):
        np.testing.assert_allclose(H[:, i] @ g[i], np.interp(V[:, i], knots[i], g[i]))


def test_fit_keeps_the_last_round_whose_objective_is_the_lowest():
    from recognizers.modelling.crf.hcrfdpm import HCRFDPM, encode_signed
    from recognizers.modelling.datasets import make_two_hmm_task

    X, y = make_two_hmm_task(np.random.default_rng(0), 20, 10)
    m = HCRFDPM(n_states=4, n_restarts=1, n_outer=2, max_grad_iter=30, warm_grad_iter=15,
                prune=False, random_state=0).fit(encode_signed(X), y)
    assert len(m.checkpoint_scores_) == 3 and m.taus_ is not None
    assert m.restart_scores_[0] == m.checkpoint_scores_[-1] == max(m.checkpoint_scores_)
    assert -m.objective_ == pytest.approx(m.checkpoint_scores_[-1])
