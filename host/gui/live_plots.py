"""Live time plots: acceleration, leg loads, speed, and the posterior ribbon.

Live, each plot's curves are one scrolling image (``trace_raster``): the min and max
of every channel per pixel column (peaks preserved), kept in rings and rasterised
only for the columns new samples touch, painted as one or two blits; the grid is in
the same image. Paused, the curves are pyqtgraph ``PlotDataItem``s over a copy of the
history with ``clipToView`` and ``autoDownsample`` ('peak'). Both follow the speed
rules of docs (host-anchors 1.3, style-anchors 11): 1 px lines, no antialiasing,
numpy arrays straight from the ring buffers. NaN rows (gaps) break the lines.

Modes: *live* follows the newest sample with a fixed window; *paused* freezes a copy
of the history so the user can pan/zoom/scroll while data keeps arriving. Dragging or
zooming a plot while live pauses it (``sigPaused``).
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from host.gui.display_state import T, DisplayState
from host.gui.posterior_ribbon import STRIP_GAP, STRIP_HEIGHT, STRIP_TOP, PosteriorRibbon
from host.gui.processing import V
from host.gui.theme import LIGHT, Theme
from host.gui.trace_raster import ColumnRing, TraceImage, rgb32

pg.setConfigOptions(antialias=False, useOpenGL=False)
AXIS_WIDTH = 66
# Per channel: a PlotCurveItem that never holds data (its legend entry shows and
# toggles the channel; live, the plot's TraceImage draws every channel), and a
# PlotDataItem that holds a copy of the whole history while paused, with clipToView
# and 'peak' autoDownsample, for panning and zooming out over minutes of data.
# (Polylines live cost ~4 ms per frame for 12 curves even peak-decimated to two
# points per pixel column; the scrolling image ~0.3 ms. Issue 22.)
_NO_TIMES = np.zeros(0)
DEVICE_CACHE = QtWidgets.QGraphicsItem.CacheMode.DeviceCoordinateCache
NO_CONTENTS = QtWidgets.QGraphicsItem.GraphicsItemFlag.ItemHasNoContents


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
    """Seconds since the start of the stream, as s, m:ss or h:mm:ss.

    With ``scrolling`` on (the live view: the range moves every frame), it paints
    straight from ``scrolling_specs``, the same ticks, labels and pens that pyqtgraph's
    ``generateDrawSpecs`` gives (tested equal), with the tick spacing, pens and label
    sizes cached: pyqtgraph recomputes them and measures every label's text on each
    range change (2.1 ms per frame, a quarter of a live redraw; issue 22).
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.scrolling = False
        self._text_sizes: dict[str, tuple[float, float]] = {}
        self._text_font = None
        self._spacing_key = None
        self._levels: list = []
        self._pen_key = None
        self._tick_pens: list = []

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

    def _fast_case(self) -> bool:
        return (self.scrolling and self.orientation == "bottom" and self._tickLevels is None
                and not self.logMode and self.scale == 1 and self.autoSIPrefixScale == 1
                and self.grid is False and self.style["stopAxisAtTick"] == (False, False))

    def paint(self, p, opt, widget) -> None:
        if not self._fast_case():
            return super().paint(p, opt, widget)
        p.save()
        if self.style["tickFont"]:
            p.setFont(self.style["tickFont"])
        specs = self.scrolling_specs(p)
        if specs is not None:
            self.drawPicture(p, *specs)
        p.restore()

    def _text_size(self, p, text: str) -> tuple[float, float]:
        size = self._text_sizes.get(text)
        if size is None:
            br = p.boundingRect(QtCore.QRectF(0, 0, 100, 100),
                                QtCore.Qt.AlignmentFlag.AlignCenter, text)
            size = self._text_sizes[text] = (br.width(), br.height() * 0.8)
        return size

    def scrolling_specs(self, p):
        """``generateDrawSpecs`` of a bottom axis without grid, log mode, SI prefix or
        fixed ticks (see the class docstring); same result, cached where it can be."""
        Point = QtCore.QPointF
        bounds = self.mapRectFromParent(self.geometry())
        span = (bounds.topLeft() + Point(-1.0, 1.0), bounds.topRight() + Point(1.0, 1.0))
        tick_stop = tick_start = bounds.top()
        p0, p1 = self.mapToDevice(span[0]), self.mapToDevice(span[1])
        if p0 is None or p1 is None:
            return None
        length = pg.Point(p1 - p0).length()
        if length == 0:
            return None
        x0, x1 = self.range
        dif = x1 - x0
        key = (dif, length, self.style["maxTickLevel"], self._tickDensity)
        if key != self._spacing_key:
            self._spacing_key = key
            self._levels = self.tickSpacing(x0, x1, length)
        if dif == 0:
            scale, offset = 1.0, 0.0
        else:
            scale = bounds.width() / dif
            offset = x0 * scale
        xa, xb = x0 * scale - offset, x1 * scale - offset
        x_min, x_max = min(xa, xb), max(xa, xb)
        base = self.tickPen()
        pen_key = (base.color().rgba(), base.widthF(), base.style(), self.style["tickAlpha"],
                   len(self._levels))
        if pen_key != self._pen_key:
            self._pen_key = pen_key
            self._tick_pens = [self._level_pen(i) for i in range(len(self._levels))]
        tick_specs = []
        positions = []
        level_values = []
        seen: list[float] = []  # sorted: ticks of the levels before
        lo, hi = sorted((x0, x1))
        for i, (spacing, off) in enumerate(self._levels):
            start = (math.ceil((lo - off) / spacing) * spacing) + off
            num = int((hi - start) / spacing) + 1
            atol = spacing * 0.01
            values = []
            n_seen = len(seen)
            for k in range(num):
                v = k * spacing + start
                j = bisect.bisect_left(seen, v)  # the nearest seen tick is at j - 1 or j
                if (j < n_seen and seen[j] - v <= atol) or (j and v - seen[j - 1] <= atol):
                    continue
                values.append(v)
            seen = sorted(seen + values)
            level_values.append((spacing, values))
            tick_len = self.style["tickLength"] / ((i * 0.5) + 1.0)
            pen = self._tick_pens[i]
            pos = []
            for v in values:
                x = (v * scale) - offset
                if x < x_min or x > x_max:
                    pos.append(None)
                    continue
                pos.append(x)
                tick_specs.append((pen, Point(x, tick_start), Point(x, tick_stop + tick_len)))
            positions.append(pos)
        axis_spec = (self.pen(), span[0], span[1])
        text_specs = []
        if not self.style["showValues"]:
            return axis_spec, tick_specs, text_specs
        text_offset = self.style["tickTextOffset"][1]
        font = p.font().key()
        if font != self._text_font or len(self._text_sizes) > 4096:
            self._text_font = font
            self._text_sizes = {}
        text_size = 0.0
        text_size2 = last_size2 = 0.0
        n_rects = 0
        br = self.boundingRect()
        flags = (QtCore.Qt.AlignmentFlag.AlignHCenter | QtCore.Qt.AlignmentFlag.AlignTop
                 | QtCore.Qt.TextFlag.TextDontClip)
        for i in range(min(len(level_values), self.style["maxTextLevel"] + 1)):
            spacing, values = level_values[i]
            strings = self.tickStrings(values, 1.0, spacing)
            if not strings:
                continue
            sizes = []
            for j, text in enumerate(strings):
                if positions[i][j] is None:
                    sizes.append(None)
                    continue
                size = self._text_size(p, text)
                sizes.append(size)
                text_size += size[0]
                text_size2 = max(text_size2, size[1])
                n_rects += 1
            if not n_rects:
                text_size = text_size2 = 0.0
            if i > 0:
                ratio = float(text_size) / length
                if any(len(text_specs) >= n and ratio >= limit
                       for n, limit in self.style["textFillLimits"]):
                    break
            last_size2 = text_size2
            gap = max(0, self.style["tickLength"]) + text_offset
            for j, text in enumerate(strings):
                size = sizes[j]
                if size is None:
                    continue
                w, h = size
                rect = QtCore.QRectF(positions[i][j] - w / 2.0, tick_stop + gap, w, h)
                if br & rect != rect:
                    continue
                text_specs.append((rect, flags, text))
        self._updateMaxTextSize(last_size2)
        return axis_spec, tick_specs, text_specs

    def _level_pen(self, i: int) -> QtGui.QPen:
        alpha = self.style["tickAlpha"]
        if alpha is None:
            alpha = 255 / (i + 1)
        elif isinstance(alpha, float):
            alpha = min(255, max(0, int(round(alpha * 255))))
        pen = self.tickPen()
        if pen.brush().style() == QtCore.Qt.BrushStyle.SolidPattern:
            pen = QtGui.QPen(pen)
            colour = QtGui.QColor(pen.color())
            colour.setAlpha(int(alpha))
            pen.setColor(colour)
        return pen


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
        self._placeholder_shown: tuple | None = None
        self.rings: list[ColumnRing] = []  # live: one per plot (trace_raster)
        self.traces: list[TraceImage] = []
        self._channel_cols: list[np.ndarray] = []
        self._raster_keys: list[tuple | None] = []
        self._x_tick: tuple | None = None  # (window, width) -> major tick spacing
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
                c.setFlag(NO_CONTENTS, True)  # never holds data: Qt need not paint it
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
            ring = ColumnRing(len(row.channels))
            trace = TraceImage(ring, plot.vb)
            trace.setZValue(-1)  # under the legend
            self.rings.append(ring)
            self.traces.append(trace)
            self._channel_cols.append(np.array([ch.column for ch in row.channels],
                                               np.int64))
            self._raster_keys.append(None)
            # Static between theme changes: paint from cached pixmaps (1.4 ms/frame);
            # the LabelItems paint nothing themselves (their text child does).
            for item in (legend, *legend.childItems()):
                for sub in (item, *item.childItems()):
                    if isinstance(sub, pg.LabelItem):
                        sub.setFlag(NO_CONTENTS, True)
                    else:
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
        self.ribbon_plot.vb.sigRangeChangedManually.connect(self._manual)
        for plot in self.plots:
            plot.vb.sigRangeChangedManually.connect(self._manual)
        self._set_ribbon_ticks([])
        self._show_live(True)
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
        # The y axis and the axis titles change only with the y range / theme: paint
        # them from cached pixmaps. ViewBoxes without a border paint nothing.
        plot.getAxis("left").setCacheMode(DEVICE_CACHE)
        for name in ("left", "bottom"):
            plot.getAxis(name).label.setCacheMode(DEVICE_CACHE)
        plot.vb.setFlag(NO_CONTENTS, True)

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
        self._bg_rgb = rgb32(theme.background)
        self._grid_rgb = rgb32(grid)
        self._raster_keys = [None] * len(self.rows)
        self._placeholder_shown = None
        self.ribbon.set_live(self.live)  # redraw it in the new colours
        self._drawn_generation = -1

    def set_classes(self, classes: tuple[str, ...]) -> None:
        self.ribbon.set_classes(classes)
        self._drawn_generation = -1

    def _set_ribbon_ticks(self, strips: list[str]) -> None:
        ticks = [(0.5, "activity")]
        names = {"device": "device", "truth": "truth"}
        for i, name in enumerate(strips):
            y0 = STRIP_TOP - (i + 1) * STRIP_HEIGHT - i * STRIP_GAP
            ticks.append((y0 + STRIP_HEIGHT / 2, names[name]))
        self.ribbon_plot.getAxis("left").setTicks([ticks, []])
        self._ticks_for = list(strips)

    # ---- modes ----------------------------------------------------------------------
    def _sync_history_visibility(self, *_) -> None:
        """Paused, the history curves show what the legend (the live curves) says;
        live, the trace images redraw with the channels the legend shows."""
        for curves, history in zip(self.curves, self.history_curves):
            for c, h in zip(curves, history):
                h.setVisible(not self.live and c.isVisible())
        self._raster_keys = [None] * len(self.rows)
        self._drawn_generation = -1

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
        self._show_live(False)
        self._drawn_range = None

    def resume(self) -> None:
        self.live = True
        self._snapshot = None
        for history in self.history_curves:
            for h in history:
                h.setVisible(False)
                h.setData([], [])  # drop the copy of the history
        self._show_live(True)
        self._drawn_generation = -1

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
        self.set_x_range(x0, x1)
        x_tick = self._x_tick_spacing()
        dpr = self.devicePixelRatioF()
        for i in range(len(self.rows)):
            self._draw_trace(i, tail, t_end, x0, x_tick, dpr)
        post, pt = None, _NO_TIMES
        if state.posterior is not None:
            ptail = state.tail(state.posterior, self.window_s + margin, t_end)
            pt, post = ptail[:, T], ptail[:, 1:]
        self.ribbon.update_live(pt, post, {"truth": state.truth, "device": state.device},
                                t_end, self.window_s, x_tick, dpr, self.theme.background,
                                self.theme.grid_colour)
        self._ribbon_labels(placeholder)
        return True

    def _draw_trace(self, i: int, tail: np.ndarray, t_end: float, x0: float,
                    x_tick: float, dpr: float) -> None:
        """Bring plot i's column rings up to date and rasterise what changed."""
        ring, trace, vb = self.rings[i], self.traces[i], self.plots[i].vb
        width, height = vb.width() * dpr, int(round(vb.height() * dpr))
        if width < 2 or height < 2 or not len(tail):
            trace.set_view(QtCore.QRectF(), 0, -1, 0, dpr)
            return
        if ring.configure(width, height, self.window_s, dpr):
            self._raster_keys[i] = None
        c_a, c_b = ring.reduce(tail[:, T], tail, self._channel_cols[i], t_end)
        extent = ring.y_extent()
        self._fit_y_extent(i, *(extent if extent is not None else (0.0, 0.0)))
        yr = self._yranges[i]
        shown = 0  # the channels the legend shows, as bits
        for k, c in enumerate(self.curves[i]):
            if c.isVisible():
                shown |= 1 << k
        key = (yr, height, x_tick, shown)
        if key != self._raster_keys[i]:  # new y range, size, theme or channels: all
            self._raster_keys[i] = key
            ring.set_style([rgb32(ch.colour(self.theme)) for ch in self.rows[i].channels],
                           [bool(shown >> k & 1) for k in range(len(self.curves[i]))],
                           major_ticks(self.plots[i].getAxis("left"), yr[0], yr[1],
                                       height / dpr), yr)
            c_a = ring.oldest
        ring.raster(c_a, c_b, yr, self._bg_rgb, self._grid_rgb, x_tick)
        trace.set_view(vb.rect(), ring.oldest, ring.newest,
                       int(np.floor(x0 * ring.inv_dt + 0.5)), dpr)

    def _x_tick_spacing(self) -> float:
        """Major tick spacing of the time axis for the current window and width."""
        width = self.ribbon_plot.vb.width() or 800
        key = (self.window_s, width)
        if self._x_tick is None or self._x_tick[0] != key:
            axis = self.ribbon_plot.getAxis("bottom")
            levels = axis.tickValues(0.0, self.window_s, width)
            self._x_tick = (key, float(levels[0][0]) if levels else 0.0)
        return self._x_tick[1]

    def _show_live(self, live: bool) -> None:
        """Live: the trace images; paused: the history curves and grid items."""
        for plot, trace, grid in zip(self.plots, self.traces, self.grids):
            trace.setVisible(live)
            grid.setVisible(not live)
            # Live, nothing in the plots is in data coordinates (the traces are in
            # pixels), so only the ribbon follows the time range: moving five linked
            # ViewBoxes cost 2/3 of a frame's setup. Paused, they pan and zoom together.
            plot.setXLink(None if live else self.ribbon_plot)
        self.grids[-1].setVisible(not live)
        self.ribbon.set_live(live)
        self.ribbon_plot.getAxis("bottom").scrolling = live
        for ring in self.rings:
            ring.newest = None  # redo everything on the next live frame
        self._raster_keys = [None] * len(self.rows)

    def live_columns(self, row: int, channel: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What plot `row` draws of `channel` live: (column left-edge times, min, max)
        per pixel column, oldest first (min > max: nothing in that column)."""
        t, lo, hi = self.rings[row].columns()
        return t, lo[channel], hi[channel]

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
        """Grid lines for the paused view (live, the trace images hold them)."""
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
        self._ribbon_labels(placeholder)

    def _ribbon_labels(self, placeholder: str) -> None:
        """The ribbon's y ticks (activity, strips) and placeholder, when they change."""
        strips = self.ribbon.strip_names()
        if strips != getattr(self, "_ticks_for", None) or (
                bool(self.ribbon.classes) != getattr(self, "_ticks_classes", None)):
            self._ticks_classes = bool(self.ribbon.classes)
            self._set_ribbon_ticks(strips)
        shown = (placeholder, self.theme.muted)
        if shown != self._placeholder_shown:
            self._placeholder_shown = shown
            self.ribbon.set_placeholder(placeholder, self.theme.muted)

    def _fit_y(self, i: int, rows: np.ndarray, x0: float) -> None:
        """Y range of plot i for the sample rows from x0 on (paused view)."""
        spec = self.rows[i]
        if len(rows):
            start = int(np.searchsorted(rows[:, T], x0))
            data = rows[start:, [ch.column for ch in spec.channels]]
        else:
            data = np.zeros((0, 1))
        finite = data[np.isfinite(data)]
        if finite.size:
            self._fit_y_extent(i, float(finite.min()), float(finite.max()))
        else:
            self._fit_y_extent(i, 0.0, 0.0)

    def _fit_y_extent(self, i: int, lo: float, hi: float) -> None:
        """Y range with hysteresis for data in [lo, hi]: grow at once, shrink only
        when much too big."""
        spec = self.rows[i]
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
