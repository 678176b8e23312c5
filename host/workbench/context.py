"""What the workbench window gives each tab: settings, theme, and where messages go."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from host.gui.dialogs import guarded


@dataclass
class TabContext:
    """The window's services a tab uses.

    settings: the QSettings; persist: whether to remember choices in them; theme:
    the application theme; show_error(title, message): a one-line dialog;
    show_status(message, ms): the status bar.
    """

    settings: object
    persist: bool
    theme: object
    show_error: Callable[[str, str], None]
    show_status: Callable[[str, int], None]

    def guard(self, title: str, fn, *args):
        """fn(*args), or None after showing a user error as a dialog."""
        return guarded(self.show_error, title, fn, *args)
