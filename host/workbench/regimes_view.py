"""Workbench tab "Regimes": discover the regimes of a recording and show its latent
trajectory coloured by regime (logic in host.discover)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from host.errors import user_errors


class RegimesView(QtWidgets.QWidget):
    """Recording path, C, method, a Discover button, and the coloured trajectory."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.path = QtWidgets.QLineEdit()
        self.path.setPlaceholderText("recording (.h5)")
        self.max_regimes = QtWidgets.QSpinBox()
        self.max_regimes.setRange(2, 30)
        self.max_regimes.setValue(10)
        self.method = QtWidgets.QComboBox()
        self.method.addItems(["sbhmm", "lm2gp"])
        self.save = QtWidgets.QCheckBox("save as label track 'discovered'")
        self.button = QtWidgets.QPushButton("Discover")
        self.button.clicked.connect(self.run)
        self.status = QtWidgets.QLabel("")
        self.plot = pg.PlotWidget()
        self.plot.setLabel("bottom", "latent 1")
        self.plot.setLabel("left", "latent 2")
        self.plot.addLegend()
        bar = QtWidgets.QHBoxLayout()
        for w in (QtWidgets.QLabel("Recording"), self.path, QtWidgets.QLabel("max regimes"),
                  self.max_regimes, self.method, self.save, self.button):
            bar.addWidget(w)
        lay = QtWidgets.QVBoxLayout(self)
        lay.addLayout(bar)
        lay.addWidget(self.status)
        lay.addWidget(self.plot, 1)
        self.result = None

    def run(self) -> None:
        from host.discover import discover

        try:
            self.result = discover(self.path.text().strip(), self.max_regimes.value(),
                                   write=self.save.isChecked(), progress=False,
                                   method=self.method.currentText())
        except user_errors() as exc:
            self.status.setText("error: %s" % exc)
            return
        self.show_result(self.result)

    def show_result(self, res) -> None:
        self.plot.clear()
        Z, r = res.latent, res.regimes
        self.plot.plot(Z[:, 0], Z[:, 1], pen=pg.mkPen((150, 150, 150, 60), width=1))
        for i, k in enumerate(dict.fromkeys(r.tolist())):
            sel = r == k
            self.plot.plot(Z[sel, 0], Z[sel, 1], pen=None, symbol="o", symbolSize=4,
                           symbolPen=None, symbolBrush=pg.intColor(i, hues=max(3, len(set(r)))),
                           name="R%d" % (i + 1))
        # a few outlying windows (e.g. stumbles) must not squash the bulk of the trajectory
        lo, hi = np.percentile(Z, [0.5, 99.5], axis=0)
        self.plot.setRange(xRange=(lo[0], hi[0]), yRange=(lo[1], hi[1]))
        err = "" if res.error_vs_truth is None else \
            "; %.1f %% error against the simulator's activities" % (100 * res.error_vs_truth)
        self.status.setText("%d regime(s) holding >= 1 %% of the windows (%d in the path), "
                            "%d segment(s) over %d windows%s"
                            % (res.n_regimes, len(set(r.tolist())), len(res.track), len(r), err))
