"""Error dialogs shared by the app's windows (monitor, workbench): one line, never a
traceback, one non-blocking dialog at a time."""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from host.errors import user_errors
from host.gui.processing import one_line

FAILED = object()  # what the monitor asks ``guarded`` to return when it showed an error


def open_error_box(window: QtWidgets.QWidget, title: str, message: str) -> bool:
    """Open a window-modal, non-blocking warning box, unless the window shows one already.

    The open box is kept in ``window._error_box``. Returns whether a box was opened.
    """
    current = getattr(window, "_error_box", None)
    if current is not None and current.isVisible():
        return False
    box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Warning, title, message,
                                QtWidgets.QMessageBox.StandardButton.Ok, window)
    box.setWindowModality(QtCore.Qt.WindowModality.WindowModal)
    box.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
    box.finished.connect(lambda *_: setattr(window, "_error_box", None))
    window._error_box = box
    box.open()
    return True


def guarded(show_error, title: str, fn, *args, failed=None):
    """fn(*args); a user mistake (or ValueError/OSError) goes to show_error and gives ``failed``."""
    try:
        return fn(*args)
    except (*user_errors(), ValueError, OSError) as exc:
        show_error(title, one_line(exc))
    return failed
