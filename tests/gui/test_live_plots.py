"""The plots and ribbon on synthetic data (no walker)."""
import time

import numpy as np

from host.gui.display_state import DisplayState
from host.gui.live_plots import LivePlots
from host.gui.posterior_ribbon import rasterise_labels, rasterise_stack
from host.gui.processing import N_VALUES, V, DisplayChunk
from host.gui.trace_raster import rgb32


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
    chunk.values[20000, V["accel_x"]] = -40.0
    state.append(chunk)
    plots.refresh(state)
    cols, lo, hi = plots.live_columns(0, 0)
    width = plots.plots[0].vb.width()
    assert len(cols) <= width + 2 and hi.max() == 50.0 and lo.min() == -40.0
    peak = np.flatnonzero(hi == 50.0)
    assert len(peak) == 1 and cols[peak[0]] <= t[12345] < cols[peak[0]] + 120 / width
    ring = plots.rings[0]
    image = ring.image  # the peak is on screen: its column reaches the peak's row
    y0, y1 = plots._yranges[0]
    slot = (ring.oldest + peak[0]) % ring.R
    row = int(np.floor((y1 - 50.0) * ring.height / (y1 - y0)))
    assert image[row, slot] == rgb32(plots.rows[0].channels[0].colour(plots.theme))
    plots.pause(state)  # history: all samples, pyqtgraph clips and decimates them
    h = plots.history_curves[0][0]
    assert h.isVisible() and not plots.traces[0].isVisible()
    assert len(h.getData()[0]) == len(t)
    plots.resume()
    x_history = h.getData()[0]
    assert not h.isVisible() and (x_history is None or len(x_history) == 0)
    assert plots.traces[0].isVisible()
    plots.legends[0].items[1][0].mouseClickEvent(_LeftClick())  # hide channel y
    assert not plots.curves[0][1].isVisible()
    plots.pause(state)
    assert plots.history_curves[0][0].isVisible()
    assert not plots.history_curves[0][1].isVisible()
    assert image is plots.rings[0].image


class _LeftClick:
    def button(self):
        from PySide6 import QtCore
        return QtCore.Qt.MouseButton.LeftButton

    def accept(self):
        pass


def test_the_live_image_shows_each_channel_where_its_columns_say(qtbot):
    """The pixels of the trace image: every column's [min, max] run in the channel's
    colour (the last channel on top), a hidden channel nowhere."""
    plots = LivePlots()
    qtbot.addWidget(plots)
    plots.resize(900, 600)
    plots.show()
    state = DisplayState()
    t = np.arange(0, 40, 1 / 100)
    state.append(_chunk(t))
    plots.curves[1][2].setVisible(False)  # leg RL hidden
    plots.refresh(state)
    ring, theme = plots.rings[1], plots.theme
    _, lo, hi = ring.columns()
    y0, y1 = plots._yranges[1]
    scale = ring.height / (y1 - y0)
    colours = [rgb32(ch.colour(theme)) for ch in plots.rows[1].channels]
    slots = np.arange(ring.oldest, ring.newest + 1) % ring.R
    top = {}
    for k in (0, 1, 3):  # drawn in order: the last one covering a pixel shows
        for j, s in enumerate(slots):
            if lo[k, j] <= hi[k, j]:
                r0 = max(0, int(np.floor((y1 - hi[k, j]) * scale)))
                r1 = min(ring.height - 1, int(np.floor((y1 - lo[k, j]) * scale)))
                for r in range(r0, r1 + 1):
                    top[(r, s)] = colours[k]
    image = ring.image
    for (r, s), colour in top.items():
        assert image[r, s] == colour
    assert not (image == colours[2]).any() or colours[2] in (colours[0], colours[1],
                                                             colours[3])
    drawn = np.zeros(image.shape, bool)
    for (r, s) in top:
        drawn[r, s] = True
    assert not np.isin(image[~drawn], colours).any()  # nothing else in channel colours


def test_a_live_frame_allocates_no_arrays_and_keeps_its_buffers(qtbot):
    """After the first frames, a redraw (new samples, new columns, ribbon, repaint)
    reuses the same rings and images, and allocates far less than one curve's window
    (what remains is Python's small objects)."""
    import tracemalloc

    plots = LivePlots()
    qtbot.addWidget(plots)
    plots.resize(900, 600)
    plots.show()
    state = DisplayState()
    rate = 200.0
    t = np.arange(0, 40, 1 / rate)
    chunk = _chunk(t)
    state.append(DisplayChunk(t[:6000], chunk.values[:6000], chunk.posterior[:6000],
                              chunk.classes, time.time(), n_samples=6000))
    state.truth.append(1.0, "ST")  # a truth strip under the ribbon too
    plots.set_classes(state.classes)
    for _ in range(3):
        plots.refresh(state)
        plots.viewport().repaint()
    rings = [*plots.rings, plots.ribbon.ring]
    buffers = [(r.lo, r.hi, r.image, r.qimage) for r in rings]
    assert plots.ribbon.strip_names() == ["truth"]
    tracemalloc.start()
    peaks = []
    for i in range(6000, 7000, 4):
        state.append(DisplayChunk(t[i:i + 4], chunk.values[i:i + 4], chunk.posterior[i:i + 4],
                                  chunk.classes, time.time(), n_samples=4))
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        plots.refresh(state)
        plots.viewport().repaint()
        peaks.append(tracemalloc.get_traced_memory()[1] - before)
    tracemalloc.stop()
    assert [(r.lo, r.hi, r.image, r.qimage) for r in rings] == buffers
    ribbon = plots.ribbon.ring.image
    assert np.isin(ribbon, plots.ribbon._class_luts(plots.theme.background,
                                                    plots.theme.grid_colour)[0]).any()
    window_bytes = 30 * rate * 8  # one curve's window of float64 samples
    assert max(peaks) < window_bytes / 4, peaks


def test_decimated_columns_stay_put_as_the_window_scrolls(qtbot):
    """Columns align to absolute time: one more sample leaves the min/max of the
    older columns unchanged (no shimmer while scrolling)."""
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
    c1, lo1, hi1 = plots.live_columns(0, 0)
    state.append(DisplayChunk(t[-1:], chunk.values[-1:], chunk.posterior[-1:],
                              chunk.classes, time.time(), n_samples=1))
    plots.refresh(state)
    c2, lo2, hi2 = plots.live_columns(0, 0)
    assert len(c1) < len(t) / 4 and c2[-1] <= t[-1] < c2[-1] + 30.0 / len(c2)
    common, i1, i2 = np.intersect1d(c1, c2, return_indices=True)
    assert len(common) > len(c1) - 3
    # all but the newest column (which the new sample joins) are unchanged
    np.testing.assert_array_equal(lo1[i1[:-1]], lo2[i2[:-1]])
    np.testing.assert_array_equal(hi1[i1[:-1]], hi2[i2[:-1]])


def test_the_live_time_axis_lays_out_what_pyqtgraph_would(qtbot):
    """TimeAxis.scrolling_specs (cached spacing, pens and label sizes) gives the same
    axis line, ticks, pens, label texts and rectangles as pyqtgraph's
    generateDrawSpecs, over windows and positions that move labels in and out."""
    from PySide6 import QtGui

    plots = LivePlots()
    qtbot.addWidget(plots)
    plots.resize(900, 600)
    plots.show()
    axis = plots.ribbon_plot.getAxis("bottom")

    def plain(specs):
        (pen, a, b), ticks, texts = specs
        return ((pen.color().rgba(), a.x(), a.y(), b.x(), b.y()),
                [(p.color().rgba(), p.widthF(), p1.x(), p1.y(), p2.x(), p2.y())
                 for p, p1, p2 in ticks],
                [(r.getRect(), int(f), s) for r, f, s in texts])

    compared = 0
    for window in (1.0, 10.0, 30.0, 120.0, 600.0, 7200.0):
        for k in range(40):
            x0 = 3.0 + k * window * 0.0731 + (3600.0 if window > 100 else 0.0)
            axis.setRange(x0, x0 + window)
            picture = QtGui.QPicture()
            painter = QtGui.QPainter(picture)
            ref, fast = axis.generateDrawSpecs(painter), axis.scrolling_specs(painter)
            painter.end()
            assert plain(fast) == plain(ref), (window, x0)
            compared += len(ref[2])
    assert compared > 500  # labels were compared, not just ticks
