"""The workbench's *Latent map* tab: a session's 1-second windows projected by a
dual-wing Bayesian harmonium (host/latent.py) onto its first two latent
components, coloured by activity.  Clicking a point seeks the recording's trace
(total handle load and speed against time) to that window.

The windows are cut and the harmonium fitted off the GUI thread; the view only
draws the result.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from host.gui.theme import activity_name, class_color


class LatentMap:
    """What the view shows: a session's windows, their projection and traces."""

    def __init__(self, windows, Z, t_trace, load_trace, speed_trace):
        self.windows = windows          # host.latent.SessionWindows
        self.Z = Z                      # (n_windows, J) E[h | window]
        self.t_trace = t_trace
        self.load_trace = load_trace
        self.speed_trace = speed_trace


def compute_map(path, n_components: int = 4, random_state: int = 0) -> LatentMap:
    """Cut one recording into windows, fit the harmonium on them, project (eq. 22)."""
    from host import latent

    windows = latent.session_windows(path)
    if len(windows.X) < 3:
        raise ValueError("%s holds fewer than three %g-second windows" % (path, latent.WINDOW_S))
    est = latent.make_harmonium(max(2, n_components), random_state).fit(windows.X)
    Z = est.transform(windows.X)
    # a trace to seek in: mean total load and speed per window, drawn as steps
    t = np.r_[windows.t_start, windows.t_end[-1]]
    return LatentMap(windows, Z, t, windows.X[:, 7], windows.X[:, 8])


class LatentMapView(QtWidgets.QWidget):
    """Scatter of the first two latent components plus the recording's trace."""

    window_selected = QtCore.Signal(int, float, float)   # index, start s, end s

    def __init__(self, recordings=lambda: [], parent=None) -> None:
        super().__init__(parent)
        self._recordings = recordings
        self.map: LatentMap | None = None
        self.current: int | None = None
        self._thread = None
        self.errors: list[str] = []
        lay = QtWidgets.QVBoxLayout(self)
        row = QtWidgets.QHBoxLayout()
        self.show_button = QtWidgets.QPushButton("Map the first selected recording")
        self.show_button.setToolTip("Fit a dual-wing Bayesian harmonium on its 1-s windows")
        self.show_button.clicked.connect(self.map_selected)
        self.components = QtWidgets.QSpinBox()
        self.components.setRange(2, 16)
        self.components.setValue(4)
        self.components.setPrefix("components: ")
        self.status = QtWidgets.QLabel("Tick a recording in Evaluate, then map it.")
        row.addWidget(self.show_button)
        row.addWidget(self.components)
        row.addWidget(self.status, 1)
        lay.addLayout(row)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        self.scatter_plot = pg.PlotWidget()
        self.scatter_plot.setLabel("bottom", "latent component 1  E[h1 | window]")
        self.scatter_plot.setLabel("left", "latent component 2")
        self.legend = self.scatter_plot.addLegend(offset=(5, 5))
        # a ring that shows on light and dark themes
        self.highlight = pg.ScatterPlotItem(size=20, pen=pg.mkPen("#d62728", width=3), brush=None)
        self.scatter_plot.addItem(self.highlight)
        self.trace_plot = pg.PlotWidget()
        self.trace_plot.setLabel("bottom", "time", units="s")
        self.trace_plot.setLabel("left", "window mean")
        self.trace_plot.addLegend(offset=(5, 5))
        self.region = pg.LinearRegionItem(movable=False, brush=pg.mkBrush(80, 80, 200, 60))
        self.cursor = pg.InfiniteLine(angle=90, pen=pg.mkPen("#d62728", width=2))
        split.addWidget(self.scatter_plot)
        split.addWidget(self.trace_plot)
        split.setSizes([600, 600])
        lay.addWidget(split, 1)
        self._scatters: list[pg.ScatterPlotItem] = []

    # ---- work --------------------------------------------------------------------------
    def map_selected(self) -> bool:
        paths = list(self._recordings())
        if not paths:
            self._error("No recording selected: tick one in the Evaluate tab.")
            return False
        if self._thread is not None:
            return False
        from host.workbench.tasks import TaskThread

        path, k = paths[0], self.components.value()
        self._thread = TaskThread(lambda progress, cancelled: compute_map(path, k), self)
        self._thread.succeeded.connect(self.show_map)
        self._thread.failed.connect(self._error)
        self._thread.finished.connect(self._done)
        self.status.setText("Fitting the harmonium on %s…" % path)
        self.show_button.setEnabled(False)
        self._thread.start()
        return True

    @property
    def busy(self) -> bool:
        return self._thread is not None

    def _done(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.deleteLater()
        self.show_button.setEnabled(True)

    def _error(self, message: str) -> None:
        self.errors.append(message)
        self.status.setText(message)

    # ---- drawing -----------------------------------------------------------------------
    def show_map(self, m: LatentMap) -> None:
        self.map = m
        for s in self._scatters:
            self.scatter_plot.removeItem(s)
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
            self.scatter_plot.addItem(s)
            self._scatters.append(s)
        self.trace_plot.clear()   # the legend stays and empties with it
        self.trace_plot.plot(m.t_trace, m.load_trace, stepMode="center", pen=pg.mkPen("#4e79a7", width=2),
                             name="total load / session 95th percentile")
        self.trace_plot.plot(m.t_trace, m.speed_trace, stepMode="center", pen=pg.mkPen("#59a14f", width=2),
                             name="speed (m/s)")
        self.trace_plot.addItem(self.region)
        self.trace_plot.addItem(self.cursor)
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
