"""What every WalkerLab window's entry point (monitor, annotator, workbench) does before
its window opens: check the screenshot target, and make the QApplication."""
from __future__ import annotations

import os
import sys

from host.errors import UserError

_QUIET_QT_MESSAGES = ("This plugin does not support propagateSizeHints()",)


def _qt_message(mode, context, message) -> None:
    """Qt's own warnings to stderr, minus the offscreen platform's harmless noise."""
    if message in _QUIET_QT_MESSAGES:
        return
    print("qt: %s" % message, file=sys.stderr)


def check_screenshot_path(screenshot: str | None) -> None:
    """A one-line error now, rather than after the window ran, for an unwritable folder."""
    if screenshot:
        folder = os.path.dirname(os.path.abspath(screenshot))
        if not os.path.isdir(folder):
            raise UserError("cannot save the screenshot: folder %s does not exist" % folder)


def qt_application(theme: str | None = None):
    """The QApplication (made once), named WalkerLab; ``theme`` overrides light/dark."""
    from PySide6 import QtCore, QtWidgets

    from host.gui.theme import THEME_ENV

    if theme:
        os.environ[THEME_ENV] = theme
    QtCore.qInstallMessageHandler(_qt_message)
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    app.setApplicationName("WalkerLab")
    app.setOrganizationName("WalkerLab")
    app.setApplicationDisplayName("WalkerLab")
    collect_garbage_in_gui_thread(app)
    return app


def collect_garbage_in_gui_thread(app) -> None:
    """Run Python's cycle collector only in the GUI thread, on a timer.

    Left automatic, a collection can start in whichever thread happens to allocate (a
    recording thread, Dask's IO loop under the workbench) and free a cycle that holds a
    Qt widget there; Qt then destroys the widget off the GUI thread and deadlocks against
    it (seen in CI: the workbench hung in QObject::~QObject).  pyqtgraph's
    GarbageCollector turns automatic collection off and collects from a QTimer instead.
    """
    import gc

    if getattr(app, "_walkerlab_garbage_collector", None) is None:
        from pyqtgraph.util.garbage_collector import GarbageCollector

        app._walkerlab_garbage_collector = GarbageCollector(interval=1.0)
    gc.disable()  # again, should anything have turned it back on since
