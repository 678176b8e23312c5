"""The 'Recognition' panel: which saved model runs live."""
from __future__ import annotations

import os

from PySide6 import QtCore, QtWidgets


class ModelPanel(QtWidgets.QGroupBox):
    loadRequested = QtCore.Signal()
    unloadRequested = QtCore.Signal()
    saveRequested = QtCore.Signal()
    learningToggled = QtCore.Signal(bool)

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
        # Online models (BMM) can go on learning from the live stream; what they learn
        # stays in memory until saved.
        self.learn_check = QtWidgets.QCheckBox("Keep learning from live data")
        self.learn_check.setToolTip("Update the model's posterior with every frame "
                                    "(online Bayesian moment matching); save to keep it")
        self.learn_check.toggled.connect(self.learningToggled)
        self.save_button = QtWidgets.QPushButton("Save model…")
        self.save_button.setToolTip("Save the running model, with what it has learnt")
        self.save_button.clicked.connect(self.saveRequested)
        lay.addWidget(self.learn_check)
        lay.addWidget(self.save_button)
        self.set_model(None, None)

    def set_model(self, path: str | None, recognizer) -> None:
        if recognizer is None:
            self.name.setText("No model loaded")
            self.detail.setText("Plots and recording work without one.")
            self.unload_button.setEnabled(False)
            self._set_learnable(False)
            self.save_button.setVisible(False)
            self.setToolTip("")
            return
        from host.models import describe_training, is_default_model

        kind = getattr(recognizer, "kind", type(recognizer).__name__)
        fs = getattr(recognizer, "feature_set_", None) or "?"
        n = len(recognizer.classes_)
        if is_default_model(path):
            self.name.setText("<b>Default model</b> (shipped with WalkerLab; Load model… "
                              "replaces it)")
        else:
            self.name.setText("<b>%s</b>" % os.path.basename(path or "model"))
        self.detail.setText("%s · %s features · %d activities\n%s"
                            % (kind, fs, n, describe_training(recognizer)))
        self.unload_button.setEnabled(True)
        tags = recognizer.get_tags() if hasattr(recognizer, "get_tags") else None
        learnable = bool(tags and tags.supports_partial_fit)
        self._set_learnable(learnable)
        self.save_button.setVisible(learnable)
        self.setToolTip(path or "")

    def _set_learnable(self, learnable: bool) -> None:
        self.learn_check.blockSignals(True)  # a new model starts not learning
        self.learn_check.setChecked(False)
        self.learn_check.blockSignals(False)
        self.learn_check.setVisible(learnable)
