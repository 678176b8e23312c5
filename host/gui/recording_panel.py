"""The 'Recording' panel: subject, notes, folder, start/stop, what is being written."""
from __future__ import annotations

import os

from PySide6 import QtCore, QtWidgets


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return ("%d %s" if unit == "B" else "%.1f %s") % (n, unit)
        n /= 1000.0
    return ""


def _clock(seconds: float) -> str:
    s = int(seconds)
    return "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60)


class RecordingPanel(QtWidgets.QGroupBox):
    startRequested = QtCore.Signal()
    stopRequested = QtCore.Signal()
    browseRequested = QtCore.Signal()

    def __init__(self, parent=None) -> None:
        super().__init__("Recording", parent)
        lay = QtWidgets.QVBoxLayout(self)
        form = QtWidgets.QFormLayout()
        form.setContentsMargins(0, 0, 0, 0)
        self.subject = QtWidgets.QLineEdit()
        self.subject.setPlaceholderText("e.g. S01")
        self.subject.setToolTip("Subject id, stored in the file and used in its name")
        self.notes = QtWidgets.QPlainTextEdit()
        self.notes.setPlaceholderText("Notes stored in the file")
        self.notes.setFixedHeight(48)
        self.notes.setTabChangesFocus(True)
        folder_row = QtWidgets.QHBoxLayout()
        self.folder = QtWidgets.QLineEdit()
        self.folder.setToolTip("Folder new recordings are written to")
        browse = QtWidgets.QToolButton()
        browse.setText("…")
        browse.setToolTip("Choose the folder")
        browse.clicked.connect(self.browseRequested)
        folder_row.addWidget(self.folder, 1)
        folder_row.addWidget(browse)
        form.addRow("Subject:", self.subject)
        form.addRow("Notes:", self.notes)
        form.addRow("Folder:", folder_row)
        lay.addLayout(form)
        self.button = QtWidgets.QPushButton("● Record")
        self.button.setToolTip("Start recording the walker to a new file (Ctrl+R)")
        self.button.clicked.connect(self._clicked)
        lay.addWidget(self.button)
        self.status = QtWidgets.QLabel("")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.status)
        self.recording = False
        self.set_recording(None)

    def _clicked(self) -> None:
        (self.stopRequested if self.recording else self.startRequested).emit()

    def subject_id(self) -> str:
        return self.subject.text().strip()

    def notes_text(self) -> str:
        return self.notes.toPlainText().strip()

    def set_available(self, available: bool, why: str = "") -> None:
        self.button.setEnabled(available or self.recording)
        if not self.recording:
            self.button.setToolTip("Start recording the walker to a new file (Ctrl+R)"
                                   if available else why)

    def set_recording(self, status: dict | None, bad_colour: str = "#c62828") -> None:
        was = self.recording
        self.recording = status is not None
        for w in (self.subject, self.notes, self.folder):
            w.setEnabled(not self.recording)
        if self.recording:
            if not was:
                self.button.setText("■ Stop recording")
                self.button.setToolTip("Stop and close the file (Ctrl+R)")
                self.button.setStyleSheet("color:%s; font-weight:bold;" % bad_colour)
            self.status.setText("<span style='color:%s'>●</span> REC %s · %s · %d samples"
                                "<br><small>%s</small>"
                                % (bad_colour, _clock(status["elapsed_s"]),
                                   _size(status["bytes"]), status["samples"],
                                   os.path.basename(status["path"])))
        elif was or not self.status.text():
            self.button.setText("● Record")
            self.button.setStyleSheet("")
            self.button.setToolTip("Start recording the walker to a new file (Ctrl+R)")

    def set_message(self, text: str) -> None:
        if not self.recording:
            self.status.setText(text)
