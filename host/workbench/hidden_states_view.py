"""Workbench tab "Hidden states": the hidden states an HCRF-DPM model uses per activity,
as a Hinton diagram in the manner of Fig. 3 of Bousmalis, Zafeiriou, Morency, Pantic
and Ghahramani, "Variational Hidden Conditional Random Fields with Coupled Dirichlet
Process Mixtures", ECML PKDD 2013.

Each square's area is the share of an activity's expected frame occupancy held by a
hidden state (the model's ``state_usage_``, rows summing to 1); states at or above
the model's usage threshold are filled, the rest outlined. The model is an
``hcrf-dpm`` file of the registry (`walkerlab train --recognizer hcrf-dpm`, or Train
here on the recordings ticked in Evaluate); selecting one in the Models tab loads it
here. Loading and training run off the GUI thread.
"""
from __future__ import annotations

import os

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from host.errors import UserError, user_errors
from host.gui.processing import one_line
from host.workbench.analysis_tab import AnalysisTab


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


def load_hcrf_dpm(path: str):
    """An ``hcrf-dpm`` recognizer from a model file (UserError for anything else)."""
    from recognizers import Recognizer

    try:
        rec = Recognizer.load(path)
    except (OSError, ValueError, KeyError) as exc:
        raise UserError("cannot read %s: %s" % (path, exc)) from None
    if getattr(rec, "kind", None) != "hcrf-dpm":
        raise UserError("%s is a %r model; the hidden-state view needs an hcrf-dpm model"
                        % (path, getattr(rec, "kind", "?")))
    return rec


class HiddenStatesView(AnalysisTab):
    """An hcrf-dpm model of the registry (or trained here on the ticked recordings),
    its Hinton diagram and a summary line.

    train_target(): (RunConfig, models folder) for Train (the window builds it from
    the Evaluate tab's recordings and settings; UserError when it cannot). Signals:
    ``model_saved(path)`` after Train.
    """

    USED = (40, 90, 160)
    model_saved = QtCore.Signal(str)

    def __init__(self, recordings=lambda: [], theme=None, train_target=None,
                 parent=None) -> None:
        super().__init__("Train hcrf-dpm on the ticked recordings", recordings, theme,
                         parent=parent)
        self.train_target = train_target
        self.action_button.setToolTip("Fit an hcrf-dpm model (the Evaluate tab's settings "
                                      "when its kind is hcrf-dpm) and save it into the "
                                      "registry")
        self.model_choice = QtWidgets.QComboBox()
        self.model_choice.setSizeAdjustPolicy(
            QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.model_choice.setMinimumContentsLength(16)
        self.model_choice.setToolTip("The registry's hcrf-dpm models (Models tab)")
        self.model_choice.activated.connect(
            lambda i: self.show_model(self.model_choice.itemData(i)))
        self.open_button = QtWidgets.QPushButton("Open file…")
        self.open_button.clicked.connect(self.open_dialog)
        for w in (QtWidgets.QLabel("Model"), self.model_choice, self.open_button):
            self.controls.addWidget(w)
        self.status.setToolTip("square area: share of the activity's expected frame "
                               "occupancy held by the hidden state")
        self.plot = pg.PlotWidget(background=self.theme.background)
        self.plot.setAspectLocked(True)
        self.plot.invertY(True)
        self.plot.setLabel("bottom", "hidden state")
        self.plot.setMouseEnabled(x=False, y=False)
        self.squares = pg.ScatterPlotItem(pxMode=False, symbol="s")
        self.plot.addItem(self.squares)
        self.set_content(self.plot)
        self.recognizer = None
        self.model_path: str | None = None

    def hint_text(self) -> str:
        if self.model_choice.count():
            return "Choose an hcrf-dpm model above, or train one on the ticked recordings."
        if not self.selected_paths():
            return ("No hcrf-dpm model in the registry: tick recordings in the Evaluate "
                    "tab and train one, or open a model file.")
        return "No hcrf-dpm model in the registry: train one on the ticked recordings."

    def set_models(self, entries) -> None:
        """The registry's models (``host.models`` entries); lists the hcrf-dpm ones."""
        current = self.model_choice.currentData()
        self.model_choice.clear()
        for e in entries:
            if e.kind == "hcrf-dpm":
                self.model_choice.addItem(os.path.basename(e.path), str(e.path))
        self.model_choice.setCurrentIndex(max(0, self.model_choice.findData(current)))
        self.refresh_selection()

    def open_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "hcrf-dpm model", "", "WalkerLab models (*.npz);;All files (*)")
        if path:
            self.show_model(path)

    # ---- work ---------------------------------------------------------------------------
    def show_model(self, path) -> bool:
        """Load an hcrf-dpm model file in the background and draw it (False: refused)."""
        if not path:
            self._error("give an hcrf-dpm model file")
            return False
        path = str(path)

        def load(progress, cancelled):
            progress(0, 1)
            return path, load_hcrf_dpm(path)

        return self.start("Loading %s" % os.path.basename(path), load, self._loaded)

    def run(self) -> bool:
        """Train an hcrf-dpm model on the ticked recordings in the background."""
        from host.workbench.runs import train_and_save

        try:
            if self.train_target is None:
                raise UserError("this view has no recordings to train on")
            config, folder = self.train_target()
            config.check()
        except user_errors() as exc:
            self._error(one_line(exc))
            return False

        def train(progress, cancelled):
            path = str(train_and_save(config, folder, progress=progress))
            return path, load_hcrf_dpm(path)

        return self.start("Training hcrf-dpm on %d recording(s)" % len(config.paths),
                          train, self._trained)

    def _trained(self, loaded) -> None:
        self.model_saved.emit(loaded[0])
        self._loaded(loaded)

    def _loaded(self, loaded) -> None:
        self.model_path, rec = loaded
        i = self.model_choice.findData(self.model_path)
        if i >= 0:
            self.model_choice.setCurrentIndex(i)
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
        self.show_content()
        on = usage >= thr
        per = ", ".join("%s %d" % (n, k) for n, k in zip(names, on.sum(axis=1)))
        self.status.setText(
            "%d of %d hidden states used (filled: >= %.0f %% of an activity's frames). "
            "Per activity: %s"
            % (int(on.any(axis=0).sum()), L, 100 * thr, per))
