"""What the workbench's analysis tabs (latent map, topics, regimes, hidden states)
share: they work on the recordings ticked in Evaluate, fit in a background thread
with progress and Cancel, and show a one-line hint until there is something to draw.
"""
from __future__ import annotations

import os

from PySide6 import QtCore, QtWidgets

from host.gui.theme import apply_application_theme
from host.workbench.tasks import TaskBar, TaskRunner

NO_SELECTION = "Tick recordings in the Evaluate tab first."


class AnalysisTab(QtWidgets.QWidget):
    """A row of controls ending in the action button and its task bar, a status
    line, and below them either the hint (nothing drawn yet) or the tab's content.

    recordings: a callable giving the selected recordings' paths (the Evaluate
    tab's selection); theme: a ``host.gui.theme.Theme`` (default: the
    application's). Subclasses put their controls in ``controls`` (before the
    button), call :meth:`set_content` once, start work with :meth:`start` and
    override :meth:`hint_text` and :meth:`refresh_selection` as needed.
    """

    def __init__(self, action_text: str, recordings=lambda: [], theme=None,
                 parent=None) -> None:
        super().__init__(parent)
        self._recordings = recordings
        self.theme = theme or apply_application_theme(QtWidgets.QApplication.instance())
        self.errors: list[str] = []
        self.runner = TaskRunner(self)
        self.runner.ended.connect(self._ended)
        lay = QtWidgets.QVBoxLayout(self)
        self.controls = QtWidgets.QHBoxLayout()
        self.action_button = QtWidgets.QPushButton(action_text)
        self.action_button.clicked.connect(self.run)
        self.task_bar = TaskBar(self.runner)
        row = QtWidgets.QHBoxLayout()
        row.addLayout(self.controls)
        row.addWidget(self.action_button)
        row.addWidget(self.task_bar)
        row.addStretch(1)
        lay.addLayout(row)
        self.status = QtWidgets.QLabel("")
        self.status.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored,
                                  QtWidgets.QSizePolicy.Policy.Minimum)
        lay.addWidget(self.status)
        self.hint = QtWidgets.QLabel()
        self.hint.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.hint.setObjectName("hint")
        self.stack = QtWidgets.QStackedWidget()
        self.stack.addWidget(self.hint)
        lay.addWidget(self.stack, 1)

    # ---- layout -----------------------------------------------------------------------
    def set_content(self, widget: QtWidgets.QWidget) -> None:
        self.stack.addWidget(widget)
        self.show_hint()

    def show_hint(self) -> None:
        """Show the one-line hint instead of empty plots."""
        self.hint.setText(self.hint_text())
        self.stack.setCurrentWidget(self.hint)

    def show_content(self) -> None:
        self.stack.setCurrentIndex(1)

    @property
    def showing_hint(self) -> bool:
        return self.stack.currentWidget() is self.hint

    def hint_text(self) -> str:
        """What to do to see something here (one line)."""
        return NO_SELECTION if not self.selected_paths() else (
            "Press %s." % self.action_button.text())

    # ---- the selection ----------------------------------------------------------------
    def selected_paths(self) -> list[str]:
        return list(self._recordings())

    def refresh_selection(self) -> None:
        """The Evaluate tab's selection changed."""
        if self.showing_hint:
            self.hint.setText(self.hint_text())

    # ---- work ---------------------------------------------------------------------------
    def run(self) -> bool:
        """The action button (subclasses)."""
        raise NotImplementedError

    @property
    def busy(self) -> bool:
        return self.runner.busy

    def start(self, name: str, fn, on_done) -> bool:
        """Run fn(progress, cancelled) in the background; on_done(result) draws it."""
        if self.busy:
            return False
        self.errors.clear()
        self.status.setText(name + "…")
        self.action_button.setEnabled(False)
        return self.runner.start(name, fn, on_done, on_failed=self._error,
                                 on_cancelled=lambda: self.status.setText(
                                     "%s: cancelled" % name))

    def _ended(self, outcome: str) -> None:
        self.action_button.setEnabled(True)

    def _error(self, message: str) -> None:
        self.errors.append(message)
        self.status.setText(message)


class RecordingChoice(QtWidgets.QComboBox):
    """One of the selected recordings (its file name shown, the path as data)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.setMinimumContentsLength(12)
        self.setToolTip("Which of the recordings ticked in the Evaluate tab")

    def set_paths(self, paths) -> None:
        current = self.currentData()
        self.blockSignals(True)
        self.clear()
        for p in paths:
            self.addItem(os.path.basename(p), p)
            self.setItemData(self.count() - 1, p, QtCore.Qt.ItemDataRole.ToolTipRole)
        self.setCurrentIndex(max(0, self.findData(current)))
        self.blockSignals(False)

    def path(self) -> str | None:
        return self.currentData()
