"""The walker seen from above: legs, centre-of-pressure trace, per-leg load bars.

Geometry comes from the walker's calibration (front/rear half widths, wheelbase); the
COP is the validity-gated one of host.features.cop_features (undefined while nobody
leans on the walker: then the trace simply stops and the view says so). Front is up,
the user's left is on the left.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtGui

from calibration.walker_calibration import FRONT_HALF_WIDTH_M, REAR_HALF_WIDTH_M, WHEELBASE_M
from host.gui.display_state import DisplayState
from host.gui.processing import V
from host.gui.theme import LIGHT, Theme

TRACE_S = 3.0  # seconds of COP trace
LEG_ORDER = ("FL", "FR", "RL", "RR")  # bars left to right as seen from above
_LOAD_COL = {"FR": 1 + V["load_FR"], "FL": 1 + V["load_FL"], "RL": 1 + V["load_RL"],
             "RR": 1 + V["load_RR"]}
_LEG_COLOUR = {"FR": 0, "FL": 1, "RL": 2, "RR": 3}  # index into Theme.legs


class FootprintView(pg.GraphicsLayoutWidget):
    """Top: the footprint with the COP trace. Bottom: one load bar per leg."""

    def __init__(self, theme: Theme = LIGHT, parent=None) -> None:
        super().__init__(parent=parent)
        self.theme = theme
        self.ci.setContentsMargins(4, 4, 4, 4)
        self.top = self.addPlot(row=0, col=0)
        self.top.setAspectLocked(True)
        self.top.setMouseEnabled(x=False, y=False)
        self.top.hideButtons()
        self.top.setMenuEnabled(False)
        self.top.hideAxis("left")
        self.top.hideAxis("bottom")
        self.frame = pg.PlotCurveItem()
        self.top.addItem(self.frame)
        self.legs = pg.ScatterPlotItem(size=16, pxMode=True)
        self.top.addItem(self.legs)
        self.leg_labels = {name: pg.TextItem(name, anchor=(0.5, 0.5)) for name in LEG_ORDER}
        for item in self.leg_labels.values():
            self.top.addItem(item)
        self.front_label = pg.TextItem("FRONT", anchor=(0.5, 1.0))
        self.top.addItem(self.front_label)
        self.trace = pg.PlotDataItem(connect="finite")
        self.top.addItem(self.trace)
        self.cop = pg.ScatterPlotItem(size=13, pxMode=True)
        self.top.addItem(self.cop)
        self.status = pg.TextItem("", anchor=(0.5, 0.0))
        self.top.addItem(self.status)
        self.bars_plot = self.addPlot(row=1, col=0)
        self.bars_plot.setMouseEnabled(x=False, y=False)
        self.bars_plot.hideButtons()
        self.bars_plot.setMenuEnabled(False)
        self.bars_plot.getAxis("left").setWidth(44)
        self.bars_plot.setLabel("left", "N")
        self.bars_plot.getAxis("left").enableAutoSIPrefix(False)
        self.bars_plot.getAxis("bottom").setTicks([[(i, n) for i, n in enumerate(LEG_ORDER)]])
        self.bars_plot.setXRange(-0.6, len(LEG_ORDER) - 0.4, padding=0)
        self.bars = pg.BarGraphItem(x=np.arange(4), height=np.zeros(4), width=0.6)
        self.bars_plot.addItem(self.bars)
        self.bar_values = [pg.TextItem("", anchor=(0.5, 1.0)) for _ in LEG_ORDER]
        for item in self.bar_values:
            self.bars_plot.addItem(item)
        self.ci.layout.setRowStretchFactor(0, 3)
        self.ci.layout.setRowStretchFactor(1, 2)
        self._bar_top = 50.0
        self._bar_bottom = 0.0
        self.bars_plot.vb.disableAutoRange()
        self.bars_plot.setYRange(0.0, self._bar_top, padding=0)
        self.set_geometry(FRONT_HALF_WIDTH_M, REAR_HALF_WIDTH_M, WHEELBASE_M)
        self.set_theme(theme)
        self._drawn_generation = -1

    # ---- set-up -----------------------------------------------------------------------
    def set_geometry(self, front_half_width_m: float, rear_half_width_m: float,
                     wheelbase_m: float) -> None:
        f, r, h = front_half_width_m, rear_half_width_m, wheelbase_m / 2
        self.positions = {"FL": (-f, h), "FR": (f, h), "RL": (-r, -h), "RR": (r, -h)}
        xs = [-f, f, r, -r, -f]
        ys = [h, h, -h, -h, h]
        self.frame.setData(xs, ys)
        for name, (x, y) in self.positions.items():
            self.leg_labels[name].setPos(x, y + (0.07 if y > 0 else -0.07))
        self.front_label.setPos(0, h + 0.13)
        self.status.setPos(0, -h - 0.12)
        w = max(f, r) + 0.12
        self.top.setXRange(-w, w, padding=0)
        self.top.setYRange(-h - 0.22, h + 0.22, padding=0)
        self._draw_legs(np.zeros(4))

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self.setBackground(theme.background)
        fg = QtGui.QColor(theme.foreground)
        self.frame.setPen(pg.mkPen(theme.muted, width=1))
        for item in (*self.leg_labels.values(), self.front_label, self.status,
                     *self.bar_values):
            item.setColor(fg)
        self.front_label.setColor(QtGui.QColor(theme.muted))
        ax = self.bars_plot.getAxis("left")
        for name in ("left", "bottom"):
            a = self.bars_plot.getAxis(name)
            a.setPen(pg.mkPen(theme.muted, width=1))
            a.setTextPen(pg.mkPen(fg))
        ax.label.setDefaultTextColor(fg)
        self.bars.setOpts(brushes=[pg.mkBrush(theme.legs[_LEG_COLOUR[n]]) for n in LEG_ORDER],
                          pens=[pg.mkPen(None)] * 4)
        self.trace.setPen(pg.mkPen(theme.cop, width=1))
        self.cop.setBrush(pg.mkBrush(theme.cop))
        self.cop.setPen(pg.mkPen(theme.background, width=1))
        self._drawn_generation = -1

    def _draw_legs(self, loads: np.ndarray) -> None:
        spots = []
        for name in LEG_ORDER:
            x, y = self.positions[name]
            colour = self.theme.legs[_LEG_COLOUR[name]] if hasattr(self, "theme") else "#888"
            spots.append({"pos": (x, y), "brush": pg.mkBrush(colour),
                          "pen": pg.mkPen(None), "size": 16})
        self.legs.setData(spots)

    # ---- drawing ----------------------------------------------------------------------
    def refresh(self, state: DisplayState) -> None:
        if state.generation == self._drawn_generation:
            return
        self._drawn_generation = state.generation
        tail = state.tail(state.samples, TRACE_S)
        latest = state.latest_values()
        if latest is None:
            self.trace.setData([], [])
            self.cop.setData([], [])
            self.status.setText("no data")
            self._set_bars(np.zeros(4))
            return
        x = tail[:, 1 + V["cop_x"]]
        y = tail[:, 1 + V["cop_y"]]
        self.trace.setData(x, y)
        cx, cy = latest[V["cop_x"]], latest[V["cop_y"]]
        total = latest[V["total_load"]]
        if np.isfinite(cx):
            self.cop.setData([cx], [cy])
            self.status.setText("total %.0f N" % total)
        else:
            self.cop.setData([], [])
            self.status.setText("total %.0f N · COP undefined (hands off)" % total)
        self._set_bars(np.array([latest[V["load_" + n]] for n in LEG_ORDER]))

    def _set_bars(self, loads: np.ndarray) -> None:
        loads = np.nan_to_num(loads)
        top = max(50.0, float(loads.max()) * 1.25)
        bottom = min(0.0, float(loads.min()) * 1.25)  # a lifted leg reads negative
        if (top > self._bar_top or bottom < self._bar_bottom
                or top - bottom < 0.5 * (self._bar_top - self._bar_bottom)):
            self._bar_top, self._bar_bottom = top, bottom
            self.bars_plot.setYRange(bottom, top, padding=0)
        self.bars.setOpts(height=loads)
        for i, (item, value) in enumerate(zip(self.bar_values, loads)):
            item.setText("%.0f" % (value if abs(value) >= 0.5 else 0.0))
            item.setPos(i, max(value, 0.0) + 0.02 * self._bar_top)
            item.setAnchor((0.5, 1.0))
