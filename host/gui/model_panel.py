"""The 'Recognition' panel: which saved model runs live."""
from __future__ import annotations

import os

from PySide6 import QtCore, QtWidgets


class ModelPanel(QtWidgets.QGroupBox):
    loadRequested = QtCore.Signal()
    unloadRequested = QtCore.Signal()

    def __init__(self, parent=None) -> None:
        super().__init__("Recognition", parent)
        lay = QtWidgets.QVBoxLayout(self)
        self.name = QtWidgets.QLabel()
        self.name.setWordWrap(True)
        self.detail = QtWidgets.QLabel()
        self.detail.setWordWrap(True)
        self.detail.setEnabled(False)
        lay.addWidget(self.name)
        lay.addWidget(self.detail)
        row = QtWidgets.QHBoxLayout()
        self.load_button = QtWidgets.QPushButton("Load model…")
        self.load_button.setToolTip("Choose a saved recognizer (.npz) to run live (Ctrl+M)")
        self.load_button.clicked.connect(self.loadRequested)
        self.unload_button = QtWidgets.QPushButton("Unload")
        self.unload_button.setToolTip("Stop recognising")
        self.unload_button.clicked.connect(self.unloadRequested)
        row.addWidget(self.load_button, 1)
        row.addWidget(self.unload_button)
        lay.addLayout(row)
        self.set_model(None, None)

    def set_model(self, path: str | None, recognizer) -> None:
        if recognizer is None:
            self.name.setText("No model loaded")
            self.detail.setText("Plots and recording work without one.")
            self.unload_button.setEnabled(False)
            self.setToolTip("")
            return
        kind = getattr(recognizer, "kind", type(recognizer).__name__)
        fs = getattr(recognizer, "feature_set_", None) or "?"
        n = len(recognizer.classes_)
        self.name.setText("<b>%s</b>" % os.path.basename(path or "model"))
        self.detail.setText("%s · %s features · %d activities" % (kind, fs, n))
        self.unload_button.setEnabled(True)
        self.setToolTip(path or "")
