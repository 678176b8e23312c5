"""Work off the GUI thread: one task at a time per tab, with progress and Cancel.

A task is a function ``fn(progress, cancelled)``. It calls ``progress(done, total)``
as it goes; once Cancel is pressed, that call raises :class:`Cancelled`, so the task
stops at its next progress report (after the fold or step in progress: a numba
kernel cannot be interrupted). :class:`TaskRunner` owns the thread and tells the
tab how it ended; :class:`TaskBar` is the progress bar and Cancel button a tab shows
while its task runs.
"""
from __future__ import annotations

import math
import time
import traceback

from PySide6 import QtCore, QtWidgets

from host.errors import user_errors
from host.gui.processing import one_line
from host.workbench.runs import Cancelled


class TaskThread(QtCore.QThread):
    """Runs fn(progress, cancelled) off the GUI thread; reports through signals."""

    progressed = QtCore.Signal(int, int)
    succeeded = QtCore.Signal(object)
    failed = QtCore.Signal(str)
    cancelled_ = QtCore.Signal()

    def __init__(self, fn, parent=None) -> None:
        super().__init__(parent)
        self.fn = fn
        self._cancel = False

    def cancel(self) -> None:
        self._cancel = True

    def _progress(self, done: int, total: int) -> None:
        self.progressed.emit(done, total)
        if self._cancel:
            raise Cancelled()

    def run(self) -> None:
        try:
            if self._cancel:
                raise Cancelled()
            out = self.fn(self._progress, lambda: self._cancel)
        except Cancelled:
            self.cancelled_.emit()
        except user_errors() as exc:
            self.failed.emit(one_line(exc))
        except (ValueError, OSError) as exc:
            self.failed.emit(one_line(exc))
        except Exception as exc:  # a bug: say so in one line, the details go to stderr
            traceback.print_exc()
            self.failed.emit("unexpected error: %s: %s" % (type(exc).__name__, one_line(exc)))
        else:
            self.succeeded.emit(out)


class TaskRunner(QtCore.QObject):
    """At most one background task at a time, and what the tab shows of it.

    Signals: ``started(name)``, ``progressed(done, total)``, ``cancelling()`` (Cancel
    was pressed), ``ended(outcome)`` with outcome "done", "failed" or "cancelled",
    after the task's own callbacks ran.
    """

    started = QtCore.Signal(str)
    progressed = QtCore.Signal(int, int)
    cancelling = QtCore.Signal()
    ended = QtCore.Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.thread: TaskThread | None = None
        self.name = ""
        self.unit = "steps"
        self.outcome = ""   # how the last task ended
        self._cancel_requested = False

    @property
    def busy(self) -> bool:
        return self.thread is not None

    @property
    def cancel_requested(self) -> bool:
        return self._cancel_requested

    def start(self, name: str, fn, on_done, on_failed=None, on_cancelled=None,
              unit: str = "steps") -> bool:
        """Run fn(progress, cancelled) in a thread (False: a task is running already).

        unit: what progress counts ("folds", "steps"), for the progress bar.

        on_done(result), on_failed(message) and on_cancelled() run in the GUI thread
        (the thread's signals reach this object, which lives there, queued).
        """
        if self.busy:
            return False
        self.name = name
        self.unit = unit
        self._cancel_requested = False
        self._callbacks = {"done": on_done, "failed": on_failed, "cancelled": on_cancelled}
        self._outcome = "done"
        thread = self.thread = TaskThread(fn, self)
        thread.progressed.connect(self._on_progress)
        thread.succeeded.connect(self._on_succeeded)
        thread.failed.connect(self._on_failed)
        thread.cancelled_.connect(self._on_cancelled)
        thread.finished.connect(self._on_finished)
        thread.start()
        self.started.emit(name)
        return True

    def _on_progress(self, done: int, total: int) -> None:
        self.progressed.emit(done, total)

    def _on_succeeded(self, result) -> None:
        self._callbacks["done"](result)

    def _on_failed(self, message: str) -> None:
        self._outcome = "failed"
        if self._callbacks["failed"] is not None:
            self._callbacks["failed"](message)

    def _on_cancelled(self) -> None:
        self._outcome = "cancelled"
        if self._callbacks["cancelled"] is not None:
            self._callbacks["cancelled"]()

    def _on_finished(self) -> None:
        thread, self.thread = self.thread, None
        if thread is not None:
            thread.deleteLater()
        self.outcome = self._outcome
        self.ended.emit(self.outcome)

    def cancel(self) -> None:
        """Ask the task to stop at its next progress report."""
        if self.thread is not None and not self._cancel_requested:
            self._cancel_requested = True
            self.thread.cancel()
            self.cancelling.emit()

    def stop(self) -> None:
        """Cancel and wait for the thread (a window closing)."""
        thread = self.thread
        if thread is not None:
            thread.cancel()
            thread.wait()

    def wait_idle(self, timeout_ms: int | None = None) -> bool:
        """Block, handling events, until the task ends or ``timeout_ms`` (default: no
        limit) passes; whether it ended (scripts and --screenshot only; tests wait
        with qtbot.waitUntil)."""
        t_end = math.inf if timeout_ms is None else time.monotonic() + timeout_ms / 1000
        while self.thread is not None and time.monotonic() < t_end:
            QtWidgets.QApplication.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents,
                                                 50)
            if self.thread is not None:
                self.thread.wait(20)
        QtWidgets.QApplication.processEvents()
        return self.thread is None


class TaskBar(QtWidgets.QWidget):
    """A task's progress bar and Cancel button; the bar shows only while it runs."""

    def __init__(self, runner: TaskRunner, parent=None) -> None:
        super().__init__(parent)
        self.runner = runner
        self.progress = QtWidgets.QProgressBar()
        self.progress.setMinimumWidth(160)
        self.progress.setMaximumWidth(260)
        self.progress.setVisible(False)
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop after the step in progress")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(runner.cancel)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Maximum,
                           QtWidgets.QSizePolicy.Policy.Fixed)
        row = QtWidgets.QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.progress)
        row.addWidget(self.cancel_button)
        runner.started.connect(self._started)
        runner.progressed.connect(self._progressed)
        runner.cancelling.connect(lambda: self.cancel_button.setEnabled(False))
        runner.ended.connect(self._ended)

    def _started(self, name: str) -> None:
        self.progress.setRange(0, 0)  # busy until the first report
        self.progress.setFormat("%%v of %%m %s" % self.runner.unit)
        self.progress.setToolTip(name)
        self.progress.setVisible(True)
        self.cancel_button.setEnabled(True)

    def _progressed(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)

    def _ended(self, outcome: str) -> None:
        self.progress.setVisible(False)
        self.cancel_button.setEnabled(False)
