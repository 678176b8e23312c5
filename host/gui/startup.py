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
    return app
