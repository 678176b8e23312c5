"""The workbench's *Latent map* tab: a session's 1-second windows projected by a
dual-wing Bayesian harmonium (host/latent.py) onto its first two latent
components, coloured by activity.  Clicking a point seeks the recording's trace
(total handle load and speed against time) to that window.

The recording is one of those ticked in the Evaluate tab. The windows are cut and
the harmonium fitted off the GUI thread; the view only draws the result. Legends sit
beside the plots, not over the points.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from host.gui.theme import activity_name, class_color
from host.workbench.analysis_tab import NO_SELECTION, AnalysisTab, RecordingChoice
from host.workbench.plots import LegendPlot


class LatentMap:
    """What the view shows: a session's windows, their projection and traces."""

    def __init__(self, windows, Z, t_trace, load_trace, speed_trace):
        self.windows = windows          # host.latent.SessionWindows
        self.Z = Z                      # (n_windows, J) E[h | window]
        self.t_trace = t_trace
        self.load_trace = load_trace
        self.speed_trace = speed_trace


def compute_map(path, n_components: int = 4, random_state: int = 0,
                progress=lambda done, total: None) -> LatentMap:
    """Cut one recording into windows, fit the harmonium on them, project (eq. 22)."""
    from host import latent

    progress(0, 2)
    windows = latent.session_windows(path)
    if len(windows.X) < 3:
        raise ValueError("%s holds fewer than three %g-second windows" % (path, latent.WINDOW_S))
    progress(1, 2)
    est = latent.make_harmonium(max(2, n_components), random_state).fit(windows.X)
    Z = est.transform(windows.X)
    progress(2, 2)
    # a trace to seek in: mean total load and speed per window, drawn as steps
    t = np.r_[windows.t_start, windows.t_end[-1]]
    return LatentMap(windows, Z, t, windows.X[:, 7], windows.X[:, 8])


class LatentMapView(AnalysisTab):
    """Scatter of the first two latent components plus the recording's trace."""

    window_selected = QtCore.Signal(int, float, float)   # index, start s, end s

    def __init__(self, recordings=lambda: [], theme=None, parent=None) -> None:
        super().__init__("Map", recordings, theme, parent=parent)
        self.map: LatentMap | None = None
        self.current: int | None = None
        self.show_button = self.action_button
        self.show_button.setToolTip("Fit a dual-wing Bayesian harmonium on the recording's "
                                    "1-s windows")
        self.recording = RecordingChoice()
        self.components = QtWidgets.QSpinBox()
        self.components.setRange(2, 16)
        self.components.setValue(4)
        self.components.setPrefix("components: ")
        for w in (QtWidgets.QLabel("Recording"), self.recording, self.components):
            self.controls.addWidget(w)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        self.scatter_view = LegendPlot()
        self.scatter_view.set_theme(self.theme)
        scatter = self.scatter_view.plot
        scatter.setLabel("bottom", "latent component 1  E[h1 | window]")
        scatter.setLabel("left", "latent component 2")
        self.legend = self.scatter_view.legend
        # a ring that shows on light and dark themes
        self.highlight = pg.ScatterPlotItem(size=20, pen=pg.mkPen("#d62728", width=3),
                                            brush=None)
        scatter.addItem(self.highlight)
        self.trace_view = LegendPlot()
        self.trace_view.set_theme(self.theme)
        self.trace_plot = self.trace_view.plot
        self.trace_plot.setLabel("bottom", "time", units="s")
        self.trace_plot.setLabel("left", "window mean")
        self.region = pg.LinearRegionItem(movable=False, brush=pg.mkBrush(80, 80, 200, 60))
        self.cursor = pg.InfiniteLine(angle=90, pen=pg.mkPen("#d62728", width=2))
        split.addWidget(self.scatter_view)
        split.addWidget(self.trace_view)
        split.setSizes([600, 600])
        self.set_content(split)
        self._scatters: list[pg.ScatterPlotItem] = []
        self.refresh_selection()

    def hint_text(self) -> str:
        if not self.selected_paths():
            return NO_SELECTION
        return "Press Map to project the 1-second windows of %s." \
            % self.recording.currentText()

    def refresh_selection(self) -> None:
        self.recording.set_paths(self.selected_paths())
        super().refresh_selection()

    # ---- work --------------------------------------------------------------------------
    def run(self) -> bool:
        return self.map_selected()

    def map_selected(self) -> bool:
        """Map the chosen recording in the background (False: refused)."""
        path = self.recording.path()
        if path is None:
            self._error("No recording selected: tick one in the Evaluate tab.")
            return False
        k = self.components.value()
        return self.start("Fitting the harmonium on %s" % self.recording.currentText(),
                          lambda progress, cancelled: compute_map(path, k, progress=progress),
                          self.show_map)

    # ---- drawing -----------------------------------------------------------------------
    def show_map(self, m: LatentMap) -> None:
        self.map = m
        for s in self._scatters:
            self.scatter_view.plot.removeItem(s)
        self._scatters = []
        self.legend.clear()
        labels = m.windows.labels
        for code in sorted(set(labels)):
            idx = np.flatnonzero(labels == code)
            name = activity_name(code) if code else "unlabelled"
            s = pg.ScatterPlotItem(x=m.Z[idx, 0], y=m.Z[idx, 1], data=idx, size=8,
                                   brush=pg.mkBrush(class_color(code) if code else "#bbbbbb"),
                                   pen=pg.mkPen(None), name=name, hoverable=True)
            s.sigClicked.connect(self._clicked)
            self.scatter_view.plot.addItem(s)
            self._scatters.append(s)
        self.trace_view.clear_plot()
        self.trace_plot.plot(m.t_trace, m.load_trace, stepMode="center", pen=pg.mkPen("#4e79a7", width=2),
                             name="total load / session 95th percentile")
        self.trace_plot.plot(m.t_trace, m.speed_trace, stepMode="center", pen=pg.mkPen("#59a14f", width=2),
                             name="speed (m/s)")
        self.trace_plot.addItem(self.region)
        self.trace_plot.addItem(self.cursor)
        self.show_content()
        self.status.setText("%s: %d windows, subject %s. Click a point to seek to its window."
                            % (m.windows.path, len(labels), m.windows.subject))
        self.seek_window(0)

    def _clicked(self, item, points, *args) -> None:
        if len(points):
            self.seek_window(int(points[0].data()))

    def seek_window(self, index: int) -> None:
        """Move the recording's cursor to window ``index`` and highlight its point."""
        m = self.map
        if m is None or not 0 <= index < len(m.Z):
            return
        self.current = index
        t0, t1 = float(m.windows.t_start[index]), float(m.windows.t_end[index])
        self.region.setRegion((t0, t1))
        self.cursor.setValue(t0)
        self.highlight.setData(x=[m.Z[index, 0]], y=[m.Z[index, 1]])
        span = 30.0
        self.trace_plot.setXRange(max(float(m.t_trace[0]), t0 - span / 2), t0 + span / 2, padding=0)
        label = m.windows.labels[index] or "unlabelled"
        self.status.setText("window %d: %.1f-%.1f s, %s" % (index, t0, t1, activity_name(label)))
        self.window_selected.emit(index, t0, t1)
