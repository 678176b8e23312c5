"""Workbench "Hidden states" tab: the Hinton diagram of an hcrf-dpm model's state usage."""
import numpy as np
import pytest

from host.workbench.hidden_states_view import HiddenStatesView, hinton_squares


def test_hinton_squares_area_is_proportional_to_usage():
    usage = np.array([[0.5, 0.5, 0.0], [0.02, 0.0, 0.98]])
    x, y, size, used = hinton_squares(usage, 0.05)
    np.testing.assert_array_equal(x, [0, 1, 0, 2])
    np.testing.assert_array_equal(y, [0, 0, 1, 1])
    np.testing.assert_allclose(size ** 2 / size[-1] ** 2, [0.5 / 0.98, 0.5 / 0.98, 0.02 / 0.98, 1])
    assert size.max() == pytest.approx(0.9)
    np.testing.assert_array_equal(used, [True, True, False, True])


def test_view_draws_the_model_state_usage(qtbot, tmp_path):
    from recognizers.hcrf_dpm_recognizer import HCRFDPMRecognizer

    rng = np.random.default_rng(0)
    acts = np.array(["ST", "WF", "TL"])
    y = np.repeat(acts[rng.integers(0, 3, 12)], 30)
    X = rng.normal(size=(3, 4))[np.searchsorted(np.sort(acts), y)] + rng.normal(
        scale=0.5, size=(len(y), 4))
    rec = HCRFDPMRecognizer(window=20, hop=5, n_states=4, n_outer=1, max_var_iter=5,
                            max_grad_iter=20).fit([X], [y])
    path = rec.save(tmp_path / "h.npz")
    view = HiddenStatesView()
    qtbot.addWidget(view)
    assert view.showing_hint and "\n" not in view.hint.text()
    assert view.show_model(str(path))
    qtbot.waitUntil(lambda: not view.busy, timeout=600_000)
    assert view.errors == [] and not view.showing_hint
    usage = rec.model_.state_usage_
    x, y, size = (view.squares.data[k] for k in ("x", "y", "size"))
    assert len(x) == np.count_nonzero(usage)
    np.testing.assert_allclose(size, 0.9 * np.sqrt(usage[y.astype(int), x.astype(int)]
                                                    / usage.max()))
    ticks = view.plot.getAxis("left")._tickLevels[0]
    assert [t[1] for t in ticks] == [str(rec.classes_[c]) for c in rec.window_classes_]
    assert "%d of 4 hidden states used" % rec.model_.n_states_used_ in view.status.text()
    assert view.show_model(str(tmp_path / "missing.npz"))
    qtbot.waitUntil(lambda: not view.busy, timeout=600_000)
    assert len(view.errors) == 1 and "missing.npz" in view.status.text()


def test_workbench_tab_trains_on_the_ticked_recordings_and_lists_the_model(
        qtbot, tmp_path, open_bench, exp2_paths):
    """Train in the tab (Evaluate's recordings and hcrf-dpm settings), in the background:
    the model lands in the registry, the Models tab lists it, the diagram is its own."""
    import os

    from recognizers import load_recognizer

    bench = open_bench(exp2_paths[:2], size=(1100, 650))
    view = bench.hidden_states_view
    bench.tabs.setCurrentWidget(view)
    assert view.showing_hint and "train one" in view.hint.text()
    ev = bench.evaluate
    ev.kind_combo.setCurrentText("hcrf-dpm")
    for name, v in (("hop", "50"), ("n_outer", "1"), ("max_var_iter", "10"),
                    ("max_grad_iter", "40")):
        ev.param_form.editors[name].setText(v)
    assert view.run()
    assert view.task_bar.progress.isVisible() and not view.action_button.isEnabled()
    qtbot.waitUntil(lambda: not view.busy, timeout=600_000)
    assert view.errors == [], view.errors
    saved = view.model_path
    assert os.path.dirname(saved) == str(tmp_path / "registry")
    rec = load_recognizer(saved)
    assert rec.metadata_["training_recordings"] == exp2_paths[:2]
    assert rec.get_params()["max_grad_iter"] == 40
    assert [e.path for e in bench.models.model_entries] == [saved]
    assert view.model_choice.currentData() == saved
    assert len(view.squares.data) == np.count_nonzero(rec.model_.state_usage_)
    assert "hidden states used" in view.status.text() and not view.showing_hint
    out = os.environ.get("WALKERLAB_SCREENSHOT_DIR")
    if out:
        view.grab().save(os.path.join(out, "workbench-hidden-states-small.png"))
