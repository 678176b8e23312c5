"""The 'Replay' panel: open a recording, play/pause, speed 1x-20x, progress."""
from __future__ import annotations

import os

from PySide6 import QtCore, QtWidgets

SPEEDS = (1.0, 2.0, 5.0, 10.0, 20.0)


class ReplayPanel(QtWidgets.QGroupBox):
    openRequested = QtCore.Signal()
    pauseToggled = QtCore.Signal()
    speedChanged = QtCore.Signal(float)

    def __init__(self, parent=None) -> None:
        super().__init__("Replay", parent)
        lay = QtWidgets.QVBoxLayout(self)
        self.file = QtWidgets.QLabel("Open a recording to replay it through the same "
                                     "views and model.")
        self.file.setWordWrap(True)
        lay.addWidget(self.file)
        row = QtWidgets.QHBoxLayout()
        self.open_button = QtWidgets.QPushButton("Open recording…")
        self.open_button.setToolTip("Replay a recording (Ctrl+O)")
        self.open_button.clicked.connect(self.openRequested)
        row.addWidget(self.open_button, 1)
        lay.addLayout(row)
        row = QtWidgets.QHBoxLayout()
        self.play_button = QtWidgets.QPushButton("Pause")
        self.play_button.setToolTip("Pause or resume the replay (Space)")
        self.play_button.clicked.connect(self.pauseToggled)
        self.speed = QtWidgets.QComboBox()
        for s in SPEEDS:
            self.speed.addItem("%gx" % s, s)
        self.speed.setToolTip("Replay speed ([ slower, ] faster)")
        self.speed.currentIndexChanged.connect(
            lambda i: self.speedChanged.emit(float(self.speed.itemData(i))))
        row.addWidget(self.play_button, 1)
        row.addWidget(QtWidgets.QLabel("Speed:"))
        row.addWidget(self.speed)
        lay.addLayout(row)
        self.progress = QtWidgets.QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(True)
        self.progress.setFormat("")
        lay.addWidget(self.progress)
        self.set_active(None)

    def speed_value(self) -> float:
        return float(self.speed.currentData())

    def set_speed(self, speed: float) -> None:
        i = min(range(len(SPEEDS)), key=lambda j: abs(SPEEDS[j] - speed))
        self.speed.setCurrentIndex(i)

    def step_speed(self, direction: int) -> None:
        i = max(0, min(len(SPEEDS) - 1, self.speed.currentIndex() + direction))
        self.speed.setCurrentIndex(i)

    def set_active(self, path: str | None, duration_s: float = 0.0) -> None:
        active = path is not None
        self.play_button.setEnabled(active)
        self.progress.setEnabled(active)
        if active:
            self.file.setText("<b>%s</b><br><small>%.0f s recorded</small>"
                              % (os.path.basename(path), duration_s))
            self.file.setToolTip(path)
        else:
            self.progress.setValue(0)
            self.progress.setFormat("")

    def set_progress(self, fraction: float, position_s: float, duration_s: float,
                     paused: bool, finished: bool) -> None:
        self.progress.setValue(int(round(fraction * 1000)))
        self.progress.setFormat("finished" if finished else
                                "%d:%02d / %d:%02d" % (position_s // 60, position_s % 60,
                                                       duration_s // 60, duration_s % 60))
        self.play_button.setText("Resume" if paused else "Pause")
        self.play_button.setEnabled(not finished)
