"""Workbench tab "Regimes": discover the regimes of one of the selected recordings
(host.discover) and show its windows' latent trajectory coloured by regime.

The legend and the count are those of the label track discover made (R1, R2, ... in
order of first appearance), the one written to the recording when "save" is ticked.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from host.gui.theme import STATE_COLORS, state_color
from host.workbench.analysis_tab import NO_SELECTION, AnalysisTab, RecordingChoice
from host.workbench.plots import LegendPlot

TRACK = "discovered"


def regime_names(track) -> list[str]:
    """The regimes of a discovered label track, R1 before R2 before R10."""
    names = {a for _, _, a in track.segments()}
    return sorted(names, key=lambda n: (len(n), n))


def discover_regimes(path: str, max_regimes: int, method: str, save: bool, progress):
    """discover() off the GUI thread; the track is written only if not cancelled."""
    from host.discover import discover
    from host.recording.labels import save_tracks

    progress(0, 2)
    res = discover(path, max_regimes, write=False, progress=False, method=method,
                   track_name=TRACK)
    progress(1, 2)  # Cancel pressed during the fit: stop here, nothing written
    if save:
        save_tracks(path, [res.track])
    progress(2, 2)
    return res


class RegimesView(AnalysisTab):
    """Recording, maximum number of regimes, method, save, Discover; the trajectory."""

    def __init__(self, recordings=lambda: [], theme=None, parent=None) -> None:
        super().__init__("Discover", recordings, theme, parent=parent)
        self.recording = RecordingChoice()
        self.max_regimes = QtWidgets.QSpinBox()
        self.max_regimes.setRange(2, len(STATE_COLORS))  # one distinct colour each
        self.max_regimes.setValue(10)
        self.max_regimes.setPrefix("at most ")
        self.max_regimes.setSuffix(" regimes")
        self.method = QtWidgets.QComboBox()
        self.method.addItems(["sbhmm", "lm2gp"])
        self.method.setToolTip("sbhmm: stick-breaking HMM on window means (PCA view); "
                               "lm2gp: its GP latent-variable variant")
        self.save = QtWidgets.QCheckBox("save as label track '%s'" % TRACK)
        for w in (QtWidgets.QLabel("Recording"), self.recording, self.max_regimes,
                  self.method, self.save):
            self.controls.addWidget(w)
        self.view = LegendPlot()
        self.view.set_theme(self.theme)
        self.plot = self.view.plot
        self.plot.setLabel("bottom", "latent 1")
        self.plot.setLabel("left", "latent 2")
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.set_content(self.view)
        self.result = None
        self.regimes: list[str] = []
        self.refresh_selection()

    def hint_text(self) -> str:
        if not self.selected_paths():
            return NO_SELECTION
        return "Press Discover to find the regimes of %s." % self.recording.currentText()

    def refresh_selection(self) -> None:
        self.recording.set_paths(self.selected_paths())
        super().refresh_selection()

    def run(self) -> bool:
        """Discover the chosen recording's regimes in the background (False: refused)."""
        path = self.recording.path()
        if path is None:
            self._error("No recording selected: tick one in the Evaluate tab.")
            return False
        k, method, save = self.max_regimes.value(), self.method.currentText(), \
            self.save.isChecked()
        return self.start("Discovering the regimes of %s" % self.recording.currentText(),
                          lambda progress, cancelled: discover_regimes(path, k, method,
                                                                       save, progress),
                          self.show_result)

    def show_result(self, res) -> None:
        """Draw a ``host.discover.DiscoverResult``: one colour and entry per regime."""
        self.result = res
        self.regimes = regime_names(res.track)
        self.view.clear_plot()
        Z = res.latent
        self.plot.plot(Z[:, 0], Z[:, 1], pen=pg.mkPen((150, 150, 150, 60), width=1))
        names = res.track.labels_at(res.window_t_s)  # each window's regime, as written
        for i, name in enumerate(self.regimes):
            sel = names == name
            self.plot.plot(Z[sel, 0], Z[sel, 1], pen=None, symbol="o", symbolSize=5,
                           symbolPen=None, symbolBrush=state_color(i), name=name)
        # a few outlying windows (e.g. stumbles) must not squash the bulk of the trajectory
        lo, hi = np.percentile(Z, [0.5, 99.5], axis=0)
        self.plot.setRange(xRange=(lo[0], hi[0]), yRange=(lo[1], hi[1]))
        self.show_content()
        err = "" if res.error_vs_truth is None else \
            "; %.1f %% error against the simulator's activities" % (100 * res.error_vs_truth)
        saved = (" saved as label track '%s'" % res.track.name if self.save.isChecked()
                 else " (not saved)")
        self.status.setText("%d regime(s) in %d segment(s) over %d windows%s%s"
                            % (len(self.regimes), len(res.track), len(res.regimes), saved,
                               err))
