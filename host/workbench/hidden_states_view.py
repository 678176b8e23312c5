"""Workbench tab "Hidden states": the hidden states an HCRF-DPM model uses per activity,
as a Hinton diagram (paper 000, Fig. 3).

Each square's area is the share of an activity's expected frame occupancy held by a
hidden state (the model's ``state_usage_``, rows summing to 1); states at or above
the model's usage threshold are filled, the rest outlined. The model is an
``hcrf-dpm`` file of the registry (`walkerlab train --recognizer hcrf-dpm`); selecting
one in the Models tab loads it here.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from host.errors import UserError, user_errors


def hinton_squares(usage: np.ndarray, threshold: float):
    """Squares of a Hinton diagram of ``usage`` (rows: activities, columns: states).

    Returns (x, y, size, used): centres (column, row), side lengths (the largest
    entry gets 0.9 of a cell, area proportional to the entry) and whether each entry
    reaches ``threshold``; zero entries are left out.
    """
    usage = np.asarray(usage, dtype=np.float64)
    rows, cols = np.nonzero(usage > 0)
    v = usage[rows, cols]
    top = usage.max() if usage.size and usage.max() > 0 else 1.0
    return (cols.astype(float), rows.astype(float), 0.9 * np.sqrt(v / top),
            v >= threshold)


class HiddenStatesView(QtWidgets.QWidget):
    """Model path, a Show button, the Hinton diagram and a summary line."""

    USED = (40, 90, 160)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.path = QtWidgets.QLineEdit()
        self.path.setPlaceholderText("hcrf-dpm model (.npz)")
        self.path.returnPressed.connect(self.run)
        self.button = QtWidgets.QPushButton("Show")
        self.button.clicked.connect(self.run)
        self.status = QtWidgets.QLabel("")
        self.status.setSizePolicy(QtWidgets.QSizePolicy.Policy.Preferred,
                                  QtWidgets.QSizePolicy.Policy.Minimum)
        self.status.setToolTip("square area: share of the activity's expected frame "
                               "occupancy held by the hidden state")
        self.plot = pg.PlotWidget()
        self.plot.setAspectLocked(True)
        self.plot.invertY(True)
        self.plot.setLabel("bottom", "hidden state")
        self.plot.setMouseEnabled(x=False, y=False)
        self.squares = pg.ScatterPlotItem(pxMode=False, symbol="s")
        self.plot.addItem(self.squares)
        bar = QtWidgets.QHBoxLayout()
        for w in (QtWidgets.QLabel("Model"), self.path, self.button):
            bar.addWidget(w)
        bar.setStretch(1, 1)
        lay = QtWidgets.QVBoxLayout(self)
        lay.addLayout(bar)
        lay.addWidget(self.status)
        lay.addWidget(self.plot, 1)
        self.recognizer = None

    def run(self) -> None:
        """Load the model named in the path field and show it (errors go to the status)."""
        from recognizers import Recognizer

        try:
            path = self.path.text().strip()
            if not path:
                raise UserError("give an hcrf-dpm model file")
            rec = Recognizer.load(path)
            if getattr(rec, "kind", None) != "hcrf-dpm":
                raise UserError("%s is a %r model; the hidden-state view needs an hcrf-dpm "
                                "model" % (path, getattr(rec, "kind", "?")))
        except (*user_errors(), OSError, ValueError, KeyError) as exc:
            self.status.setText("error: %s" % exc)
            return
        self.show_recognizer(rec)

    def show_recognizer(self, rec) -> None:
        """Draw the diagram of a fitted ``hcrf-dpm`` recognizer."""
        self.recognizer = rec
        m = rec.model_
        usage = np.asarray(m.state_usage_)
        names = [str(rec.classes_[c]) for c in rec.window_classes_]
        thr = float(m.usage_threshold)
        x, y, size, used = hinton_squares(usage, thr)
        brushes = [pg.mkBrush(*self.USED) if u else pg.mkBrush(0, 0, 0, 0) for u in used]
        pens = [pg.mkPen(*self.USED, width=1) for _ in used]
        self.squares.setData(x=x, y=y, size=size, brush=brushes, pen=pens)
        C, L = usage.shape
        self.plot.getAxis("left").setTicks([[(i, n) for i, n in enumerate(names)]])
        self.plot.getAxis("bottom").setTicks([[(k, "h%d" % (k + 1)) for k in range(L)]])
        self.plot.setXRange(-0.6, L - 0.4, padding=0)
        self.plot.setYRange(-0.6, C - 0.4, padding=0)
        on = usage >= thr
        per = ", ".join("%s %d" % (n, k) for n, k in zip(names, on.sum(axis=1)))
        self.status.setText(
            "%d of %d hidden states used (filled: >= %.0f %% of an activity's frames). "
            "Per activity: %s"
            % (int(on.any(axis=0).sum()), L, 100 * thr, per))
