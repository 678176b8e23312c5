"""The posterior ribbon under the live plots, and its legend.

The ribbon is a stacked area of the filtered posterior over time, one colour per
activity, drawn as one image at the plot's pixel width (so its cost does not depend
on the sample rate or the number of classes). Thin strips under it show the
on-device estimate (ACTIVITY frames) and the simulator's truth (TRUTH frames) when
the stream carries them.

Live, the image is a ring of pixel columns like the curves' (``trace_raster``):
each frame paints only the columns its new rows reach, straight into a preallocated
image (no allocation per frame), and the newest column shows at once. Paused, the
visible range is rasterised once into pyqtgraph ImageItems (``rasterise_stack``).
"""
from __future__ import annotations

import math

import numba
import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from host.gui.display_state import T, LabelTrack
from host.gui.theme import activity_name, class_color
from host.gui.trace_raster import ColumnRing, TraceImage, raster_columns, rgb32

STACK_ROWS = 48  # vertical resolution of the stacked area
TRUTH_HOLD_S = 1.5  # a TRUTH/ACTIVITY label holds this long (they repeat every second)
STRIP_TOP = -0.06
STRIP_HEIGHT = 0.16
STRIP_GAP = 0.04
ALPHA = 235  # the stack and strips over the background and grid


def _rgba(colour: str, alpha: int = 255) -> tuple[int, int, int, int]:
    c = QtGui.QColor(colour)
    return c.red(), c.green(), c.blue(), alpha


def rasterise_stack(t: np.ndarray, P: np.ndarray, lut: np.ndarray, x0: float, x1: float,
                    width: int, rows: int = STACK_ROWS, max_gap_s: float = 0.5
                    ) -> np.ndarray:
    """Stacked-area image (width, rows, 4) uint8 of posteriors P (n, K) at times t.

    Column j shows the newest sample at or before its centre time (transparent where
    there is none within max_gap_s, or the row is a NaN gap row). Classes stack in
    order from the bottom; lut (K, 4) holds their colours.
    """
    img = np.zeros((width, rows, 4), dtype=np.uint8)
    if not len(t) or x1 <= x0:
        return img
    centres = x0 + (np.arange(width) + 0.5) * ((x1 - x0) / width)
    idx = np.searchsorted(t, centres, side="right") - 1
    ok = idx >= 0
    idx = np.clip(idx, 0, len(t) - 1)
    ok &= centres - t[idx] <= max_gap_s
    sel = P[idx]
    ok &= np.isfinite(sel[:, 0])
    if not ok.any():
        return img
    cum = np.cumsum(sel[ok], axis=1)
    cum /= np.maximum(cum[:, -1:], 1e-12)
    # Row r of a column shows class k when boundary k-1 <= r < boundary k: mark each
    # boundary's first row and cumulate (W*K + W*rows work, not W*rows*K compares).
    n, k = cum.shape
    edges = np.minimum((cum[:, :-1] * rows + 0.5).astype(np.int64), rows)
    flat = (np.arange(n)[:, None] * (rows + 1) + edges).ravel()
    marks = np.bincount(flat, minlength=n * (rows + 1)).reshape(n, rows + 1)
    cls = np.cumsum(marks[:, :rows], axis=1)
    np.minimum(cls, lut.shape[0] - 1, out=cls)
    img[ok] = lut[cls]
    return img


def rasterise_labels(t: np.ndarray, codes: np.ndarray, lut: np.ndarray, x0: float,
                     x1: float, width: int, hold_s: float = TRUTH_HOLD_S) -> np.ndarray:
    """A label strip (width, 2, 4): the label at or before each column's time.

    (Two identical rows: pyqtgraph 0.14 draws nothing for a one-row image.)"""
    img = np.zeros((width, 2, 4), dtype=np.uint8)
    if not len(t) or x1 <= x0:
        return img
    centres = x0 + (np.arange(width) + 0.5) * ((x1 - x0) / width)
    idx = np.searchsorted(t, centres, side="right") - 1
    ok = idx >= 0
    idx = np.clip(idx, 0, len(t) - 1)
    ok &= centres - t[idx] <= hold_s
    img[ok, :] = lut[codes[idx[ok]].astype(int)][:, None, :]
    return img


@numba.njit(cache=True, nogil=True)
def _tick_column(c, x_tick, inv_dt):
    """A multiple of x_tick (> 0) falls in column c (as raster_columns decides)."""
    if x_tick <= 0:
        return False
    per_tick = x_tick * inv_dt
    k0 = int(math.floor(c / per_tick)) - 1
    for k in range(k0, k0 + 3):
        if int(math.floor(k * x_tick * inv_dt)) == c:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def raster_stack_columns(img, t, P, c_a, c_b, inv_dt, max_gap, row0, rows, lut, lut_grid,
                         x_tick, cum):
    """The stacked area of rasterise_stack into columns c_a..c_b of the ring image
    img (H, R), rows row0..row0 + rows - 1 (class 0 at the bottom); column c shows
    the newest row of P at or before its centre (nothing when none within max_gap or
    a NaN row). lut/lut_grid: opaque class colours over the background / a grid
    line. cum: scratch of at least K floats."""
    R = img.shape[1]
    n = t.shape[0]
    K = P.shape[1]
    if c_b - c_a + 1 > R:
        c_a = c_b - R + 1
    if n == 0 or K == 0:
        return
    # the last row at or before the first column's centre
    i = np.searchsorted(t, (c_a + 0.5) / inv_dt, side="right") - 1
    for c in range(c_a, c_b + 1):
        centre = (c + 0.5) / inv_dt
        while i + 1 < n and t[i + 1] <= centre:
            i += 1
        if i < 0 or centre - t[i] > max_gap or not np.isfinite(P[i, 0]):
            continue
        s = c % R
        colours = lut_grid if _tick_column(c, x_tick, inv_dt) else lut
        total = 0.0
        for k in range(K):
            total += P[i, k]
            cum[k] = total
        if total < 1e-12:
            total = 1e-12
        start = 0
        for k in range(K):
            if k == K - 1:
                stop = rows
            else:
                stop = min(int(cum[k] / total * rows + 0.5), rows)
            for r in range(start, stop):  # r counts from the bottom
                img[row0 + rows - 1 - r, s] = colours[k]
            if stop > start:
                start = stop


@numba.njit(cache=True, nogil=True)
def raster_label_columns(img, t, codes, c_a, c_b, inv_dt, hold, row0, row1, lut, lut_grid,
                         x_tick):
    """A label strip (rasterise_labels) into columns c_a..c_b, rows row0..row1 - 1."""
    R = img.shape[1]
    n = t.shape[0]
    if c_b - c_a + 1 > R:
        c_a = c_b - R + 1
    if n == 0:
        return
    # the last row at or before the first column's centre
    i = np.searchsorted(t, (c_a + 0.5) / inv_dt, side="right") - 1
    for c in range(c_a, c_b + 1):
        centre = (c + 0.5) / inv_dt
        while i + 1 < n and t[i + 1] <= centre:
            i += 1
        if i < 0 or centre - t[i] > hold:
            continue
        code = int(codes[i])
        if code < 0 or code >= lut.shape[0]:
            continue
        colour = lut_grid[code] if _tick_column(c, x_tick, inv_dt) else lut[code]
        s = c % R
        for r in range(row0, row1):
            img[r, s] = colour


def blend_rgb32(colours: list[str], under: str | QtGui.QColor, alpha: int = ALPHA
                ) -> np.ndarray:
    """0xffRRGGBB of each colour at `alpha` over the opaque colour `under`."""
    u = QtGui.QColor(under)
    out = np.empty(len(colours), np.uint32)
    for i, colour in enumerate(colours):
        c = QtGui.QColor(colour)
        rgb = [(alpha * a + (255 - alpha) * b + 127) // 255 for a, b in
               ((c.red(), u.red()), (c.green(), u.green()), (c.blue(), u.blue()))]
        out[i] = 0xFF000000 | rgb[0] << 16 | rgb[1] << 8 | rgb[2]
    return out


class PosteriorRibbon:
    """Draws the stacked posterior (and label strips) into a pyqtgraph PlotItem."""

    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        self.image = pg.ImageItem(axisOrder="col-major")
        self.image.setAutoDownsample(False)
        plot.addItem(self.image)
        self.strips: dict[str, pg.ImageItem] = {}
        self.strip_labels: dict[str, pg.TextItem] = {}
        for name in ("device", "truth"):
            item = pg.ImageItem(axisOrder="col-major")
            item.setVisible(False)
            plot.addItem(item)
            self.strips[name] = item
        self.classes: tuple[str, ...] = ()
        self.lut = np.zeros((1, 4), dtype=np.uint8)
        self.placeholder = pg.TextItem("", anchor=(0.5, 0.5))
        plot.addItem(self.placeholder, ignoreBounds=True)
        plot.setYRange(-0.02, 1.0, padding=0)
        plot.setMouseEnabled(x=True, y=False)
        plot.hideButtons()
        plot.setMenuEnabled(False)
        self.n_strips = 0
        # live: a ring of pixel columns (see the module docstring)
        self.ring = ColumnRing(0)
        self.live_image = TraceImage(self.ring, plot.vb)
        self.live_image.setZValue(-1)
        self.live = False
        self._cum = np.zeros(16)
        self._live_key: tuple | None = None
        self._luts: dict = {}  # (kind, n) -> (over background, over grid) colours
        self._no_grid_rows = np.zeros(1, np.int64)
        self._no_channels = np.zeros(0, np.int64)
        self._no_colours = np.zeros(0, np.uint32)

    def set_classes(self, classes: tuple[str, ...]) -> None:
        self.classes = tuple(classes)
        if classes:
            self.lut = np.array([_rgba(class_color(c), ALPHA) for c in classes], np.uint8)
        else:
            self.lut = np.zeros((1, 4), dtype=np.uint8)
            self.image.clear()
        if len(self._cum) < len(classes):
            self._cum = np.zeros(len(classes))
        self._live_key = None

    def set_live(self, live: bool) -> None:
        """Live: the column ring; paused: ImageItems over the visible range."""
        self.live = live
        self.live_image.setVisible(live)
        if live:
            self.image.setVisible(False)
            for item in self.strips.values():
                item.setVisible(False)
        self.ring.newest = None
        self._live_key = None

    def update_live(self, t: np.ndarray, P: np.ndarray | None,
                    labels: dict[str, LabelTrack], t_end: float, window_s: float,
                    x_tick: float, dpr: float, bg: str, grid: str) -> None:
        """Paint the columns up to t_end (the newest sample) into the live ring."""
        vb = self.plot.vb
        width, height = vb.width() * dpr, int(round(vb.height() * dpr))
        visible = [name for name in ("device", "truth") if len(labels[name].ring)]
        self._layout_strips(visible)
        self._visible_strips = visible
        ring = self.ring
        if width < 2 or height < 2:
            self.live_image.set_view(QtCore.QRectF(), 0, -1, 0, dpr)
            return
        if ring.configure(width, height, window_s, dpr):
            self._live_key = None
        (_, _), (bottom, top) = vb.viewRange()
        key = (self.classes, tuple(visible), height, x_tick, bg, grid, bottom, top)
        c_a, c_b = ring.advance(t_end)
        if key != self._live_key:  # everything visible again
            self._live_key = key
            c_a = ring.oldest
        scale = height / (top - bottom) if top > bottom else 0.0
        raster_columns(ring.image, ring.lo, ring.hi, self._no_channels, 0, self._no_colours,
                       c_a, c_b, top, scale, np.uint32(rgb32(bg)), np.uint32(rgb32(grid)),
                       self._no_grid_rows, 0, x_tick, ring.inv_dt)
        if P is not None and self.classes and len(t):
            row0 = int(math.floor((top - 1.0) * scale))
            row1 = min(height, int(math.floor((top - 0.0) * scale)))
            lut, lut_grid = self._class_luts(bg, grid)
            raster_stack_columns(ring.image, t, P, c_a, c_b, ring.inv_dt, 0.5, max(row0, 0),
                                 row1 - max(row0, 0), lut, lut_grid, x_tick, self._cum)
        for i, name in enumerate(visible):
            track = labels[name]
            rows = track.ring.view()
            y0 = STRIP_TOP - (i + 1) * STRIP_HEIGHT - i * STRIP_GAP
            r0 = max(0, int(math.floor((top - (y0 + STRIP_HEIGHT)) * scale)))
            r1 = min(height, int(math.floor((top - y0) * scale)))
            lut, lut_grid = self._label_luts(name, track, bg, grid)
            raster_label_columns(ring.image, rows[:, T], rows[:, 1], c_a, c_b, ring.inv_dt,
                                 TRUTH_HOLD_S, r0, r1, lut, lut_grid, x_tick)
        x0 = t_end - window_s
        self.live_image.set_view(vb.rect(), ring.oldest, ring.newest,
                                 int(math.floor(x0 * ring.inv_dt + 0.5)), dpr)
        self.placeholder.setPos(x0 + window_s / 2, 0.5)

    def _class_luts(self, bg: str, grid: str):
        key = ("classes", self.classes, bg, grid)
        lut = self._luts.get(key)
        if lut is None:
            colours = [class_color(c) for c in self.classes]
            if len(self._luts) > 64:
                self._luts.clear()
            lut = self._luts[key] = (blend_rgb32(colours, bg), blend_rgb32(colours, grid))
        return lut

    def _label_luts(self, name: str, track: LabelTrack, bg: str, grid: str):
        key = (name, len(track.codes), bg, grid)  # codes only ever grow
        lut = self._luts.get(key)
        if lut is None:
            colours = [class_color(c) for c in track.codes]
            if len(self._luts) > 64:
                self._luts.clear()
            lut = self._luts[key] = (blend_rgb32(colours, bg), blend_rgb32(colours, grid))
        return lut

    def set_placeholder(self, text: str, colour: str) -> None:
        self.placeholder.setText(text, color=colour)
        self.placeholder.setVisible(bool(text))

    def _layout_strips(self, visible: list[str]) -> None:
        n = len(visible)
        if n != self.n_strips:
            self.n_strips = n
            bottom = STRIP_TOP - n * (STRIP_HEIGHT + STRIP_GAP)
            self.plot.setYRange(bottom if n else -0.02, 1.0, padding=0)

    def update(self, t: np.ndarray, P: np.ndarray | None, labels: dict[str, LabelTrack],
               x0: float, x1: float, width_px: int) -> None:
        """Redraw for the x range [x0, x1] (t: times of the rows of P)."""
        width = int(min(max(width_px, 32), 2400))
        if P is not None and self.classes and len(t):
            img = rasterise_stack(t, P, self.lut, x0, x1, width)
            self.image.setImage(img, autoLevels=False, levels=None)
            self.image.setRect(QtCore.QRectF(x0, 0.0, x1 - x0, 1.0))
            self.image.setVisible(True)
        else:
            self.image.setVisible(False)
        visible = [name for name in ("device", "truth") if len(labels[name].ring)]
        self._layout_strips(visible)
        for name, item in self.strips.items():
            track = labels[name]
            if name not in visible:
                item.setVisible(False)
                continue
            rows = track.ring.view()
            lut = np.array([_rgba(class_color(c), 235) for c in track.codes], np.uint8)
            img = rasterise_labels(rows[:, T], rows[:, 1], lut, x0, x1, width)
            i = visible.index(name)
            y0 = STRIP_TOP - (i + 1) * STRIP_HEIGHT - i * STRIP_GAP
            item.setImage(img, autoLevels=False, levels=None)
            item.setRect(QtCore.QRectF(x0, y0, x1 - x0, STRIP_HEIGHT))
            item.setVisible(True)
        self.placeholder.setPos((x0 + x1) / 2, 0.5)

    def strip_names(self) -> list[str]:
        """Visible strips, top to bottom ('device', 'truth')."""
        if self.live:
            return list(getattr(self, "_visible_strips", []))
        return [n for n in ("device", "truth") if self.strips[n].isVisible()]


class _Bar(QtWidgets.QWidget):
    """A thin horizontal probability bar (painted: cheaper than a QProgressBar)."""

    def __init__(self, colour: str) -> None:
        super().__init__()
        self.colour = QtGui.QColor(colour)
        self.value = 0.0
        self.setMinimumWidth(40)
        self.setFixedHeight(10)

    def set_value(self, value: float) -> None:
        value = float(np.clip(value, 0.0, 1.0)) if np.isfinite(value) else 0.0
        if abs(value - self.value) > 0.004:
            self.value = value
            self.update()

    def paintEvent(self, event) -> None:
        p = QtGui.QPainter(self)
        r = self.rect()
        track = self.palette().color(QtGui.QPalette.ColorRole.Mid)
        track.setAlpha(70)
        p.fillRect(r, track)
        w = int(round(r.width() * self.value))
        if w:
            p.fillRect(QtCore.QRect(r.left(), r.top(), w, r.height()), self.colour)
        p.end()


class ActivityLegend(QtWidgets.QWidget):
    """One row per class: colour, code, name, live probability; the top one in bold."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.grid = QtWidgets.QGridLayout(self)
        self.grid.setContentsMargins(4, 4, 4, 4)
        self.grid.setHorizontalSpacing(8)
        self.grid.setVerticalSpacing(3)
        self.grid.setColumnStretch(2, 1)
        self.rows: list[tuple[QtWidgets.QLabel, QtWidgets.QLabel, _Bar, QtWidgets.QLabel]] = []
        self.classes: tuple[str, ...] = ()
        self.empty = QtWidgets.QLabel("No model loaded.\nLoad one to see the activities "
                                      "and their probabilities.")
        self.empty.setWordWrap(True)
        self.empty.setEnabled(False)
        self.grid.addWidget(self.empty, 0, 0, 1, 4)
        self.grid.setRowStretch(1, 1)  # keep the rows at the top
        self._top = -1

    def set_classes(self, classes: tuple[str, ...]) -> None:
        if tuple(classes) == self.classes:
            return
        self.classes = tuple(classes)
        for widgets in self.rows:
            for w in widgets:
                self.grid.removeWidget(w)
                w.deleteLater()
        self.rows = []
        self.empty.setVisible(not classes)
        for i, code in enumerate(classes):
            chip = QtWidgets.QLabel()
            chip.setFixedSize(12, 12)
            chip.setStyleSheet("background:%s; border-radius:2px;" % class_color(code))
            name = QtWidgets.QLabel("%s <span style='color:gray'>%s</span>"
                                    % (activity_name(code), code))
            name.setToolTip("%s: %s" % (code, activity_name(code)))
            bar = _Bar(class_color(code))
            value = QtWidgets.QLabel("")
            value.setMinimumWidth(value.fontMetrics().horizontalAdvance("0.00") + 2)
            value.setAlignment(QtCore.Qt.AlignmentFlag.AlignRight
                               | QtCore.Qt.AlignmentFlag.AlignVCenter)
            self.grid.addWidget(chip, i + 1, 0)
            self.grid.addWidget(name, i + 1, 1)
            self.grid.addWidget(bar, i + 1, 2)
            self.grid.addWidget(value, i + 1, 3)
            self.rows.append((chip, name, bar, value))
        for row in range(self.grid.rowCount()):
            self.grid.setRowStretch(row, 0)
        self.grid.setRowStretch(len(classes) + 1, 1)
        self._top = -1

    def set_probabilities(self, p: np.ndarray | None) -> None:
        if p is None or len(p) != len(self.rows):
            for _, _, bar, value in self.rows:
                bar.set_value(0.0)
                value.setText("")
            return
        top = int(np.argmax(p))
        for i, (_, name, bar, value) in enumerate(self.rows):
            bar.set_value(p[i])
            value.setText("%.2f" % p[i])
        if top != self._top:
            for i, (_, name, _, value) in enumerate(self.rows):
                f = name.font()
                f.setBold(i == top)
                name.setFont(f)
                value.setFont(f)
            self._top = top
