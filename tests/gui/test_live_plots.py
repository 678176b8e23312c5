"""The plots and ribbon on synthetic data (no walker)."""
import time

import numpy as np

from host.gui.display_state import DisplayState
from host.gui.live_plots import LivePlots
from host.gui.posterior_ribbon import rasterise_labels, rasterise_stack
from host.gui.processing import N_VALUES, V, DisplayChunk


def _chunk(t, classes=("ST", "WF")):
    rng = np.random.default_rng(0)
    values = rng.normal(size=(len(t), N_VALUES))
    post = rng.dirichlet(np.ones(len(classes)), size=len(t))
    return DisplayChunk(t, values, post, classes, time.time(), n_samples=len(t))


def test_stacked_area_matches_a_brute_force_rasterisation():
    rng = np.random.default_rng(1)
    t = np.arange(200) * 0.05
    P = rng.dirichlet(np.ones(5), size=200)
    lut = np.array([[k, 0, 0, 255] for k in range(5)], np.uint8)
    img = rasterise_stack(t, P, lut, 0.0, 10.0, 80, rows=30)
    centres = (np.arange(80) + 0.5) * 10.0 / 80
    idx = np.searchsorted(t, centres, side="right") - 1
    cum = np.cumsum(P[idx], axis=1)
    y = (np.arange(30) + 0.5) / 30
    expected = (cum[:, None, :] < y[None, :, None]).sum(axis=2)
    assert (img[..., 0] == expected).mean() > 0.98  # same but for rounding at boundaries
    assert np.all(img[..., 3] == 255)


def test_ribbon_leaves_gaps_and_old_labels_transparent():
    t = np.array([0.0, 0.1, 0.2, 5.0, 5.1])
    P = np.array([[1.0, 0], [1, 0], [np.nan, np.nan], [0, 1], [0, 1]])
    lut = np.array([[255, 0, 0, 255], [0, 0, 255, 255]], np.uint8)
    img = rasterise_stack(t, P, lut, 0.0, 6.0, 60)
    assert img[1, :, 3].all() and not img[30, :, 3].any() and img[51, 0, 2] == 255
    strip = rasterise_labels(np.array([0.0]), np.array([1.0]), lut, 0.0, 6.0, 60)
    assert strip.shape == (60, 2, 4) and strip[5, 0, 2] == 255 and strip[40, 0, 3] == 0


def test_long_live_windows_are_peak_decimated_without_losing_extremes(qtbot):
    plots = LivePlots()
    qtbot.addWidget(plots)
    plots.resize(900, 600)
    plots.show()
    plots.set_window(120.0)
    state = DisplayState()
    t = np.arange(0, 120, 1 / 200)  # 24,000 samples in a 120 s window
    chunk = _chunk(t)
    chunk.values[12345, V["accel_x"]] = 50.0
    state.append(chunk)
    plots.refresh(state)
    x, y = plots.curves[0][0].getData()
    assert len(x) <= len(t) / 3 and y.max() == 50.0
    plots.pause(state)  # history: all samples, pyqtgraph clips and decimates them
    h = plots.history_curves[0][0]
    assert h.isVisible() and plots.curves[0][0].getData()[0].size == 0
    assert len(h.getData()[0]) == len(t)
    plots.resume()
    x_history = h.getData()[0]
    assert not h.isVisible() and (x_history is None or len(x_history) == 0)
    plots.legends[0].items[1][0].mouseClickEvent(_LeftClick())  # hide channel y
    assert not plots.curves[0][1].isVisible()
    plots.pause(state)
    assert plots.history_curves[0][0].isVisible()
    assert not plots.history_curves[0][1].isVisible()


class _LeftClick:
    def button(self):
        from PySide6 import QtCore
        return QtCore.Qt.MouseButton.LeftButton

    def accept(self):
        pass


def test_peak_decimation_matches_brute_force_and_keeps_the_newest_samples():
    rng = np.random.default_rng(3)
    for n, step, phase in [(3000, 3, 0), (3001, 3, 2), (1000, 7, 5), (50, 4, 3)]:
        x = np.arange(n) * 0.01
        y = rng.normal(size=n)
        y[n // 2] = np.nan  # a gap row stays a gap in its block
        out = (np.empty(2 * n), np.empty(2 * n))
        xs, ys = LivePlots._decimate(x, y, step, phase, out)
        want_x, want_y = list(x[:phase]), list(y[:phase])
        start = phase
        while start + step <= n - 1:
            block = y[start:start + step]
            lo, hi = (np.nan, np.nan) if np.isnan(block).any() else (block.min(), block.max())
            want_x += [x[start], x[start]]
            want_y += [lo, hi]
            start += step
        want_x += list(x[start:])
        want_y += list(y[start:])
        np.testing.assert_array_equal(xs, want_x)
        np.testing.assert_array_equal(ys, want_y)
        assert xs[-1] == x[-1] and np.shares_memory(xs, out[0])  # newest sample, no alloc


def test_decimated_columns_stay_put_as_the_window_scrolls(qtbot):
    """Blocks align to the absolute sample index: one more sample leaves the drawn
    min/max pairs of older blocks unchanged (no shimmer while scrolling)."""
    plots = LivePlots()
    qtbot.addWidget(plots)
    plots.resize(900, 600)
    plots.show()
    plots.set_window(30.0)
    state = DisplayState()
    t = np.arange(0, 60, 1 / 200)
    chunk = _chunk(t)
    state.append(DisplayChunk(t[:-1], chunk.values[:-1], chunk.posterior[:-1],
                              chunk.classes, time.time(), n_samples=len(t) - 1))
    plots.refresh(state)
    x1, y1 = (a.copy() for a in plots.curves[0][0].getData())
    state.append(DisplayChunk(t[-1:], chunk.values[-1:], chunk.posterior[-1:],
                              chunk.classes, time.time(), n_samples=1))
    plots.refresh(state)
    x2, y2 = plots.curves[0][0].getData()
    assert len(x1) < len(t) / 4 and x2[-1] == t[-1]
    common = np.intersect1d(x1[x1 > x1[0] + 1], x2[x2 > x1[0] + 1])[:-4]
    i1, i2 = np.searchsorted(x1, common), np.searchsorted(x2, common)
    np.testing.assert_array_equal(y1[i1], y2[i2])
