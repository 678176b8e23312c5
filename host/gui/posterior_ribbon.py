"""The posterior ribbon under the live plots, and its legend.

The ribbon is a stacked area of the filtered posterior over time, one colour per
activity, drawn as one image rasterised to the plot's pixel width (so its cost does
not depend on the sample rate or the number of classes). Thin strips under it show
the on-device estimate (ACTIVITY frames) and the simulator's truth (TRUTH frames)
when the stream carries them.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from host.gui.display_state import T, LabelTrack
from host.gui.theme import activity_name, class_color

STACK_ROWS = 48  # vertical resolution of the stacked area
TRUTH_HOLD_S = 1.5  # a TRUTH/ACTIVITY label holds this long (they repeat every second)
STRIP_TOP = -0.06
STRIP_HEIGHT = 0.16
STRIP_GAP = 0.04


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

    def set_classes(self, classes: tuple[str, ...]) -> None:
        self.classes = tuple(classes)
        if classes:
            self.lut = np.array([_rgba(class_color(c), 235) for c in classes], np.uint8)
        else:
            self.lut = np.zeros((1, 4), dtype=np.uint8)
            self.image.clear()

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
