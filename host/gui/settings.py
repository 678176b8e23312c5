"""Where the monitor keeps its settings (window layout, last model, folders).

$WALKERLAB_SETTINGS names an INI file to use instead of the user's settings, so tests
and screenshots never read or touch them.
"""
from __future__ import annotations

import os

from PySide6 import QtCore

SETTINGS_ENV = "WALKERLAB_SETTINGS"


def open_settings() -> QtCore.QSettings:
    path = os.environ.get(SETTINGS_ENV)
    if path:
        return QtCore.QSettings(path, QtCore.QSettings.Format.IniFormat)
    return QtCore.QSettings(QtCore.QSettings.Format.IniFormat,
                            QtCore.QSettings.Scope.UserScope, "WalkerLab", "monitor")


def value(settings: QtCore.QSettings, key: str, default, kind=None):
    """settings.value with a type, tolerant of junk written by hand."""
    raw = settings.value(key, default)
    if kind is None:
        kind = type(default) if default is not None else None
    if kind is None or raw is None:
        return raw
    try:
        if kind is bool:
            return raw if isinstance(raw, bool) else str(raw).lower() in ("1", "true", "yes")
        return kind(raw)
    except (TypeError, ValueError):
        return default


def default_recordings_folder() -> str:
    return os.path.join(os.path.expanduser("~"), "WalkerLab", "recordings")
