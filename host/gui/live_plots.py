"""Live time plots: acceleration, leg loads, speed, and the posterior ribbon.

Follows the speed rules of docs (host-anchors 1.3, style-anchors 11): 1 px cosmetic
pens, no antialiasing, numpy arrays straight from the ring buffers, a fixed x window
with ``clipToView`` and ``autoDownsample`` ('peak'), and one ``setData`` per curve per
redraw. NaN rows (gaps) break the lines (``connect='finite'``).

Modes: *live* follows the newest sample with a fixed window; *paused* freezes a copy
of the history so the user can pan/zoom/scroll while data keeps arriving. Dragging or
zooming a plot while live pauses it (``sigPaused``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from host.gui.display_state import T, DisplayState
from host.gui.posterior_ribbon import STRIP_GAP, STRIP_HEIGHT, STRIP_TOP, PosteriorRibbon
from host.gui.processing import V
from host.gui.theme import LIGHT, Theme

pg.setConfigOptions(antialias=False, useOpenGL=False)
AXIS_WIDTH = 66
# Two curves per channel. Live: a bare PlotCurveItem fed only the window's samples
# (clipping would do nothing there but redo every curve each time the x range scrolls;
# measured 2.3 of 6 ms per frame, and PlotDataItem's bookkeeping another ~1 ms for 12
# curves). Paused: a PlotDataItem holding a copy of the whole history, with clipToView
# and 'peak' autoDownsample, for panning and zooming out over minutes of data.
# Live windows with more than this many samples per pixel column are peak-decimated
# (min/max per column: 3000 samples over ~1000 px paint 2000 points instead of 3000,
# measured 5.5 -> 3.7 ms per frame for 12 curves; issue 22).
DOWNSAMPLE_ABOVE_PER_PX = 1.5
RIBBON_INTERVAL_S = 0.06
DEVICE_CACHE = QtWidgets.QGraphicsItem.CacheMode.DeviceCoordinateCache


@dataclass(frozen=True)
class Channel:
    name: str
    column: int  # column in the sample ring (0 is time)
    colour: Callable[[Theme], str]


@dataclass(frozen=True)
class PlotRow:
    title: str
    unit: str
    channels: tuple[Channel, ...]
    min_span: float  # the y axis never shows less than this (no zoomed-in noise)
    include_zero: bool = False


def _col(name: str) -> int:
    return 1 + V[name]


DEFAULT_ROWS = (
    PlotRow("Acceleration", "m/s²", (
        Channel("x", _col("accel_x"), lambda th: th.accel[0]),
        Channel("y", _col("accel_y"), lambda th: th.accel[1]),
        Channel("z", _col("accel_z"), lambda th: th.accel[2])), min_span=4.0),
    PlotRow("Leg loads", "N", (
        Channel("FR", _col("load_FR"), lambda th: th.legs[0]),
        Channel("FL", _col("load_FL"), lambda th: th.legs[1]),
        Channel("RL", _col("load_RL"), lambda th: th.legs[2]),
        Channel("RR", _col("load_RR"), lambda th: th.legs[3])), min_span=40.0,
        include_zero=True),
    PlotRow("Speed", "m/s", (
        Channel("speed", _col("speed"), lambda th: th.speed),), min_span=0.5,
        include_zero=True),
)


class GridLines(pg.PlotCurveItem):
    """Major-tick grid lines as one path of segments.

    pyqtgraph's own axis grid is replayed from a QPicture per axis on every paint and
    costs ~3 ms per axis on a CPU raster (measured: 25 of 31 ms per frame); this draws
    the same lines as a single cheap path, rebuilt only when the ticks move.
    """

    def __init__(self) -> None:
        super().__init__(connect="pairs", skipFiniteCheck=True)
        self.setZValue(-100)
        self._key = None

    def set_lines(self, xs, ys, x_range, y_range) -> None:
        key = (tuple(xs), tuple(ys), x_range, y_range)
        if key == self._key:
            return
        self._key = key
        (x0, x1), (y0, y1) = x_range, y_range
        n = len(xs) + len(ys)
        px = np.empty(2 * n)
        py = np.empty(2 * n)
        k = 2 * len(xs)
        px[0:k:2] = xs
        px[1:k:2] = xs
        py[0:k:2] = y0
        py[1:k:2] = y1
        px[k::2] = x0
        px[k + 1::2] = x1
        py[k::2] = ys
        py[k + 1::2] = ys
        self.setData(px, py)


def major_ticks(axis: pg.AxisItem, lo: float, hi: float, pixels: float) -> list[float]:
    if not np.isfinite(lo) or not np.isfinite(hi) or hi <= lo or pixels <= 0:
        return []
    levels = axis.tickValues(lo, hi, pixels)
    return [v for v in levels[0][1] if lo <= v <= hi] if levels else []


class TimeAxis(pg.AxisItem):
    """Seconds since the start of the stream, as s, m:ss or h:mm:ss."""

    def tickStrings(self, values, scale, spacing):
        out = []
        for v in values:
            v = v * scale
            if abs(v) < 60 and spacing < 60:
                out.append("%g" % round(v, 3) if spacing < 1 else "%d" % round(v))
                continue
            sign = "-" if v < 0 else ""
            s = int(round(abs(v)))
            h, rem = divmod(s, 3600)
            m, sec = divmod(rem, 60)
            out.append("%s%d:%02d:%02d" % (sign, h, m, sec) if h
                       else "%s%d:%02d" % (sign, m, sec))
        return out


class LivePlots(pg.GraphicsLayoutWidget):
    """The stacked time plots; see the module docstring."""

    sigPaused = QtCore.Signal()  # the user panned/zoomed while live

    def __init__(self, rows=DEFAULT_ROWS, theme: Theme = LIGHT, parent=None) -> None:
        super().__init__(parent=parent)
        self.rows = tuple(rows)
        self.theme = theme
        self.window_s = 30.0
        self.live = True
        self.plots: list[pg.PlotItem] = []
        self.curves: list[list[pg.PlotCurveItem]] = []  # live
        self.history_curves: list[list[pg.PlotDataItem]] = []  # paused
        self.legends: list[pg.LegendItem] = []
        self._yranges: list[tuple[float, float] | None] = []
        self._snapshot: dict | None = None
        self._drawn_range: tuple | None = None
        self._drawn_generation = -1
        self._decimate_buffers: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.ci.layout.setSpacing(2)
        self.ci.setContentsMargins(4, 4, 8, 4)
        for i, row in enumerate(self.rows):
            plot = self.addPlot(row=i, col=0)
            plot.hideAxis("bottom")  # the time axis is under the ribbon only
            self._setup_plot(plot)
            plot.setLabel("left", row.title, units=row.unit)
            plot.getAxis("left").enableAutoSIPrefix(False)
            legend = pg.LegendItem(offset=(6, 2), colCount=len(row.channels),
                                   horSpacing=14, verSpacing=-6)
            legend.setParentItem(plot.vb)
            curves, history = [], []
            for ch in row.channels:
                c = pg.PlotCurveItem(name=ch.name, connect="finite")
                plot.addItem(c)
                legend.addItem(c, ch.name)
                curves.append(c)
                h = pg.PlotDataItem(name=ch.name, connect="finite", skipFiniteCheck=False)
                h.setClipToView(True)
                h.setDownsampling(auto=True, method="peak")
                h.setVisible(False)
                plot.addItem(h)
                history.append(h)
            for sample, _ in legend.items:  # clicking an entry hides/shows the channel
                sample.sigClicked.connect(self._sync_history_visibility)
            # Static between theme changes: paint from a cached pixmap (1.4 ms/frame).
            for item in (legend, *legend.childItems()):
                for sub in (item, *item.childItems()):
                    sub.setCacheMode(DEVICE_CACHE)
            self.plots.append(plot)
            self.curves.append(curves)
            self.history_curves.append(history)
            self.legends.append(legend)
            self._yranges.append(None)
        self._yticks = [(None, [])] * len(self.rows)
        axis = TimeAxis(orientation="bottom")
        axis.enableAutoSIPrefix(False)
        axis.setStyle(maxTickLevel=1)  # it scrolls: major and minor ticks only
        self.ribbon_plot = self.addPlot(row=len(self.rows), col=0, axisItems={"bottom": axis})
        self._setup_plot(self.ribbon_plot)
        self.ribbon_plot.setLabel("bottom", "time since start")
        self.ribbon = PosteriorRibbon(self.ribbon_plot)
        self.grids = []
        for plot in (*self.plots, self.ribbon_plot):
            grid = GridLines()
            plot.addItem(grid, ignoreBounds=True)
            self.grids.append(grid)
        for plot in self.plots:
            plot.setXLink(self.ribbon_plot)
        lay = self.ci.layout
        for i in range(len(self.rows)):
            lay.setRowStretchFactor(i, 3)
        lay.setRowStretchFactor(len(self.rows), 2)
        self._ribbon_drawn_at = 0.0
        self._ribbon_had_data = False
        self.ribbon_plot.vb.sigRangeChangedManually.connect(self._manual)
        for plot in self.plots:
            plot.vb.sigRangeChangedManually.connect(self._manual)
        self._set_ribbon_ticks([])
        self.set_theme(theme)

    def _setup_plot(self, plot: pg.PlotItem) -> None:
        plot.setMouseEnabled(x=True, y=False)
        plot.hideButtons()
        plot.setMenuEnabled(False)
        plot.getAxis("left").setWidth(AXIS_WIDTH)
        plot.vb.disableAutoRange()
        # Hidden axes still follow the range (re-typesetting their invisible label on
        # every scroll, with the SI prefix on): cut them loose.
        for name in ("top", "right", "bottom"):
            axis = plot.getAxis(name)
            axis.enableAutoSIPrefix(False)
            if not axis.isVisible():
                axis.unlinkFromView()
        # The y axis changes only with the y range: paint it from a cached pixmap.
        plot.getAxis("left").setCacheMode(DEVICE_CACHE)

    # ---- appearance -------------------------------------------------------------------
    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self.setBackground(theme.background)
        fg = QtGui.QColor(theme.foreground)
        for plot in (*self.plots, self.ribbon_plot):
            for name in ("left", "bottom"):
                ax = plot.getAxis(name)
                ax.setPen(pg.mkPen(theme.muted, width=1))
                ax.setTextPen(pg.mkPen(fg))
            lab = plot.getAxis("left").label
            lab.setDefaultTextColor(fg)
        self.ribbon_plot.getAxis("bottom").label.setDefaultTextColor(fg)
        for row, curves, history, legend in zip(self.rows, self.curves, self.history_curves,
                                                self.legends):
            for ch, c, h in zip(row.channels, curves, history):
                c.setPen(pg.mkPen(ch.colour(theme), width=1))
                h.setPen(pg.mkPen(ch.colour(theme), width=1))
            bg = QtGui.QColor(theme.background)
            bg.setAlpha(200)
            legend.setBrush(pg.mkBrush(bg))
            legend.setLabelTextColor(fg)
            for sample, label in legend.items:
                label.setText(label.text, color=theme.foreground)
        self.ribbon.placeholder.setColor(theme.muted)
        grid = QtGui.QColor(theme.grid_colour)
        for g in self.grids:
            g.setPen(pg.mkPen(grid, width=1))
            g._key = None
        self._drawn_generation = -1

    def set_classes(self, classes: tuple[str, ...]) -> None:
        self.ribbon.set_classes(classes)
        self._drawn_generation = -1
        self._ribbon_drawn_at = 0.0

    def _set_ribbon_ticks(self, strips: list[str]) -> None:
        ticks = [(0.5, "activity")]
        names = {"device": "device", "truth": "truth"}
        for i, name in enumerate(strips):
            y0 = STRIP_TOP - (i + 1) * STRIP_HEIGHT - i * STRIP_GAP
            ticks.append((y0 + STRIP_HEIGHT / 2, names[name]))
        self.ribbon_plot.getAxis("left").setTicks([ticks, []])
        self._ticks_for = list(strips)

    # ---- modes ----------------------------------------------------------------------
    @staticmethod
    def _decimate(x: np.ndarray, y: np.ndarray, step: int, phase: int = 0,
                  out: tuple[np.ndarray, np.ndarray] | None = None):
        """'peak' decimation: min and max of every `step` samples, as pyqtgraph does.

        Blocks start where (absolute sample index) % step == 0; `phase` is the number of
        samples before the first such boundary, which stay as they are, as do the newest
        samples after the last full block (so the newest sample is always drawn, and the
        columns do not shimmer as the window scrolls; the line reaches the newest
        sample's time). `out` (two arrays of at least
        2 * len(x) // step + 2 * step) is filled instead of allocating.
        """
        n = len(x)
        phase = min(phase, n)
        blocks = max(0, n - 1 - phase) // step  # the newest sample stays, at its own x
        if blocks < 2:
            return x, y
        end = phase + blocks * step
        size = phase + 2 * blocks + (n - end)
        if out is None or len(out[0]) < size:
            out = (np.empty(size), np.empty(size))
        xs, ys = out[0][:size], out[1][:size]
        xs[:phase] = x[:phase]
        ys[:phase] = y[:phase]
        k = phase + 2 * blocks
        xs[phase:k:2] = x[phase:end:step]
        xs[phase + 1:k:2] = x[phase:end:step]
        yb = y[phase:end].reshape(blocks, step)
        lo, hi = ys[phase:k:2], ys[phase + 1:k:2]
        lo[:] = yb[:, 0]
        hi[:] = yb[:, 0]
        for j in range(1, step):  # a few whole-column ufuncs beat min(axis=1) on short rows
            np.minimum(lo, yb[:, j], out=lo)
            np.maximum(hi, yb[:, j], out=hi)
        xs[k:] = x[end:]
        ys[k:] = y[end:]
        return xs, ys

    def _buffers(self, curve, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Per-curve output arrays for _decimate, reused from frame to frame (the curve
        holds a view of them until its next setData)."""
        buf = self._decimate_buffers.get(id(curve))
        if buf is None or len(buf[0]) < n + 8:
            buf = (np.empty(2 * n + 64), np.empty(2 * n + 64))
            self._decimate_buffers[id(curve)] = buf
        return buf

    def _sync_history_visibility(self, *_) -> None:
        """Paused, the history curves show what the legend (the live curves) says."""
        for curves, history in zip(self.curves, self.history_curves):
            for c, h in zip(curves, history):
                h.setVisible(not self.live and c.isVisible())

    def _manual(self, *_) -> None:
        if self.live:
            self.sigPaused.emit()

    def set_window(self, seconds: float) -> None:
        self.window_s = float(seconds)
        self._drawn_generation = -1
        if not self.live and self._snapshot is not None:
            x0, x1 = self.x_range()
            centre = (x0 + x1) / 2
            self.set_x_range(centre - seconds / 2, centre + seconds / 2)

    def pause(self, state: DisplayState) -> None:
        """Freeze a copy of the history; the views keep it until resume()."""
        if not self.live:
            return
        self.live = False
        samples = state.samples.view().copy()
        post = state.posterior.view().copy() if state.posterior is not None else None
        self._snapshot = {"samples": samples, "posterior": post,
                          "labels": {"truth": state.truth, "device": state.device}}
        for row, curves, history in zip(self.rows, self.curves, self.history_curves):
            for ch, c, h in zip(row.channels, curves, history):
                h.setData(samples[:, T], samples[:, ch.column])
                c.setData([], [])  # stays "visible": its legend entry toggles the channel
        self._sync_history_visibility()
        self._drawn_range = None

    def resume(self) -> None:
        self.live = True
        self._snapshot = None
        for history in self.history_curves:
            for h in history:
                h.setVisible(False)
                h.setData([], [])  # drop the copy of the history
        self._drawn_generation = -1
        self._ribbon_drawn_at = 0.0

    def x_range(self) -> tuple[float, float]:
        (x0, x1), _ = self.ribbon_plot.vb.viewRange()
        return float(x0), float(x1)

    def set_x_range(self, x0: float, x1: float) -> None:
        self.ribbon_plot.setXRange(x0, x1, padding=0)

    def history_span(self) -> tuple[float, float] | None:
        """(first, last) time of the frozen history (paused mode)."""
        if self._snapshot is None or not len(self._snapshot["samples"]):
            return None
        t = self._snapshot["samples"][:, T]
        return float(t[0]), float(t[-1])

    # ---- drawing (the GUI timer) ----------------------------------------------------
    def refresh(self, state: DisplayState, placeholder: str = "") -> bool:
        """Redraw if needed; True if anything was set (for the benchmarks)."""
        if self.live:
            return self._refresh_live(state, placeholder)
        return self._refresh_paused(placeholder)

    def _refresh_live(self, state: DisplayState, placeholder: str) -> bool:
        if state.generation == self._drawn_generation:
            return False
        self._drawn_generation = state.generation
        margin = self.window_s * 0.05 + 0.5
        tail = state.tail(state.samples, self.window_s + margin)
        if len(tail):
            t_end = float(tail[-1, T])
        else:
            t_end = self.window_s
        x0, x1 = t_end - self.window_s, t_end
        x = tail[:, T]
        pixels = max(1.0, self.ribbon_plot.vb.width())
        per_px = len(tail) / pixels  # above the limit: one min/max pair per pixel column
        step = int(np.ceil(per_px)) if per_px > DOWNSAMPLE_ABOVE_PER_PX else 1
        phase = (-(state.samples.total - len(tail))) % step
        # Gap rows are NaN in every channel: check once, and let the curves skip their
        # own per-curve finiteness checks when the window has no gap.
        gap = bool(len(tail)) and bool(np.isnan(tail[:, 1]).any())
        connect = "finite" if gap else "all"
        self.set_x_range(x0, x1)
        for i, (row, curves) in enumerate(zip(self.rows, self.curves)):
            for ch, c in zip(row.channels, curves):
                if not c.isVisible():
                    continue
                y = tail[:, ch.column]
                xs, ys = (self._decimate(x, y, step, phase, self._buffers(c, len(tail)))
                          if step > 1 else (x, y))
                c.setData(xs, ys, connect=connect, skipFiniteCheck=not gap)
            self._fit_y(i, tail, x0)
        self._update_grids(x0, x1)
        # The ribbon image sits in data coordinates, so it scrolls with the view by
        # itself; re-rasterising it at ~15 Hz only delays its newest pixel column.
        now = time.monotonic()
        if now - self._ribbon_drawn_at < RIBBON_INTERVAL_S and state.classes == \
                self.ribbon.classes and self._ribbon_had_data:
            return True
        self._ribbon_drawn_at = now
        self._ribbon_had_data = state.posterior is not None and len(state.posterior) > 0
        post = None
        pt = np.zeros(0)
        if state.posterior is not None:
            ptail = state.tail(state.posterior, self.window_s + margin, t_end)
            pt, post = ptail[:, T], ptail[:, 1:]
        self._draw_ribbon(pt, post, {"truth": state.truth, "device": state.device}, x0, x1,
                          placeholder)
        return True

    def _refresh_paused(self, placeholder: str) -> bool:
        x0, x1 = self.x_range()
        key = (round(x0, 6), round(x1, 6), self.ribbon.classes, placeholder)
        if key == self._drawn_range or self._snapshot is None:
            return False
        self._drawn_range = key
        snap = self._snapshot
        samples = snap["samples"]
        t = samples[:, T]
        lo = max(0, int(np.searchsorted(t, x0)) - 1)
        hi = int(np.searchsorted(t, x1)) + 1
        visible = samples[lo:hi]
        for i in range(len(self.rows)):
            self._fit_y(i, visible, x0)
        self._update_grids(x0, x1)
        post = snap["posterior"]
        if post is not None:
            self._draw_ribbon(post[:, T], post[:, 1:], snap["labels"], x0, x1, placeholder)
        else:
            self._draw_ribbon(np.zeros(0), None, snap["labels"], x0, x1, placeholder)
        return True

    def _update_grids(self, x0: float, x1: float) -> None:
        width = self.ribbon_plot.vb.width() or 800
        xs = major_ticks(self.ribbon_plot.getAxis("bottom"), x0, x1, width)
        for i, (plot, grid, yr) in enumerate(zip(self.plots, self.grids, self._yranges)):
            if yr is None:
                continue
            height = plot.vb.height() or 100
            key = (yr, height)
            if self._yticks[i][0] != key:  # y ticks only move with the y range
                self._yticks[i] = (key, major_ticks(plot.getAxis("left"), yr[0], yr[1],
                                                    height))
            grid.set_lines(xs, self._yticks[i][1], (x0, x1), yr)
        (_, _), (ry0, ry1) = self.ribbon_plot.vb.viewRange()
        self.grids[-1].set_lines(xs, [], (x0, x1), (ry0, ry1))

    def _draw_ribbon(self, t, P, labels, x0, x1, placeholder) -> None:
        width = int(self.ribbon_plot.vb.width()) or 800
        self.ribbon.update(t, P, labels, x0, x1, width)
        strips = self.ribbon.strip_names()
        if strips != getattr(self, "_ticks_for", None) or (
                bool(self.ribbon.classes) != getattr(self, "_ticks_classes", None)):
            self._ticks_classes = bool(self.ribbon.classes)
            self._set_ribbon_ticks(strips)
        self.ribbon.set_placeholder(placeholder, self.theme.muted)

    def _fit_y(self, i: int, rows: np.ndarray, x0: float) -> None:
        """Y range with hysteresis: grow at once, shrink only when much too big."""
        spec = self.rows[i]
        if len(rows):
            start = int(np.searchsorted(rows[:, T], x0))
            data = rows[start:, [ch.column for ch in spec.channels]]
        else:
            data = np.zeros((0, 1))
        finite = data[np.isfinite(data)]
        if finite.size:
            lo, hi = float(finite.min()), float(finite.max())
        else:
            lo, hi = 0.0, 0.0
        if spec.include_zero:
            lo, hi = min(lo, 0.0), max(hi, 0.0)
        span = spec.min_span
        if hi - lo < span:
            if spec.include_zero and lo >= -0.25 * span:
                hi = lo + span  # mostly positive (loads, forward speed): grow upwards
            elif spec.include_zero and hi <= 0.25 * span:
                lo = hi - span
            else:
                mid = (hi + lo) / 2
                lo, hi = mid - span / 2, mid + span / 2
        pad = 0.08 * (hi - lo)
        want = (lo - pad, hi + pad)
        cur = self._yranges[i]
        if (cur is None or want[0] < cur[0] or want[1] > cur[1]
                or (want[1] - want[0]) < 0.55 * (cur[1] - cur[0])):
            self._yranges[i] = want
            self.plots[i].setYRange(*want, padding=0)
