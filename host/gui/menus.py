"""The monitor's menus, keyboard shortcuts and help boxes.

``MonitorMenus`` is a part of ``host.gui.app.MainWindow`` (a mixin): the actions call
the window's slots (connect, record, pause, ...). Every action is also added to the
window, so its shortcut works while the menu is closed; ``actions_by_name`` keeps them
for the shortcuts box and for tests.
"""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

# The shortcuts listed by Help > Keyboard shortcuts, in this order.
SHORTCUT_ACTIONS = ("connect", "record", "pause", "live", "open", "model", "unload",
                    "workbench", "window1", "window2", "window3", "window4", "slower",
                    "faster", "refresh", "help", "quit")


class MonitorMenus:
    """File, Walker, View and Help menus of the monitor window."""

    def _action(self, text: str, shortcut, slot, tip: str = "", menu=None,
                checkable: bool = False) -> QtGui.QAction:
        act = QtGui.QAction(text, self)
        if shortcut:
            seqs = shortcut if isinstance(shortcut, (list, tuple)) else [shortcut]
            act.setShortcuts([QtGui.QKeySequence(s) for s in seqs])
        act.setShortcutContext(QtCore.Qt.ShortcutContext.WindowShortcut)
        if tip:
            act.setStatusTip(tip)
            act.setToolTip(tip)
        act.setCheckable(checkable)
        act.triggered.connect(lambda *_: slot())
        self.addAction(act)
        if menu is not None:
            menu.addAction(act)
        return act

    def _build_actions(self) -> None:
        mb = self.menuBar()
        file_menu = mb.addMenu("&File")
        walker_menu = mb.addMenu("&Walker")
        view_menu = mb.addMenu("&View")
        help_menu = mb.addMenu("&Help")
        a = self.actions_by_name = {}
        a["open"] = self._action("&Open recording…", "Ctrl+O", self.open_recording_dialog,
                                 "Replay a recording through the live views", file_menu)
        a["model"] = self._action("Load &model…", "Ctrl+M", self.load_model_dialog,
                                  "Choose a saved recognizer to run live", file_menu)
        a["unload"] = self._action("&Unload model", "Ctrl+Shift+M", self.unload_model,
                                   "Stop recognising", file_menu)
        a["workbench"] = self._action("Training &workbench…", "Ctrl+B", self.open_workbench,
                                      "Train and evaluate recognizers; models opened "
                                      "there load here", file_menu)
        file_menu.addSeparator()
        a["quit"] = self._action("&Quit", "Ctrl+Q", self.close, "", file_menu)
        a["connect"] = self._action("&Connect / disconnect", "Ctrl+K", self.toggle_connection,
                                    "Connect to the selected walker, or disconnect",
                                    walker_menu)
        a["refresh"] = self._action("&Refresh ports", "F5",
                                    lambda: self.connection_panel.refresh_ports(),
                                    "Look for serial ports again", walker_menu)
        walker_menu.addSeparator()
        cal_menu = walker_menu.addMenu("&Calibrate")
        for proc, text in (("load", "&Load cells…"), ("accel", "&Accelerometer…"),
                           ("encoder", "Wheel &encoder…")):
            a["calibrate_" + proc] = self._action(
                text, None, lambda proc=proc: self.open_calibration(proc),
                "Calibrate the connected walker step by step (the virtual walker: on a "
                "calibration bench)", cal_menu)
        walker_menu.addSeparator()
        a["record"] = self._action("Start / stop &recording", "Ctrl+R",
                                   self.toggle_recording, "Record the walker to a file",
                                   walker_menu)
        a["pause"] = self._action("&Pause / resume", "Space", self.toggle_pause,
                                  "Freeze the view (data keeps arriving)", view_menu)
        a["live"] = self._action("Go &live", "End", self.go_live,
                                 "Follow the newest data", view_menu)
        view_menu.addSeparator()
        for i in range(self.window_combo.count()):
            a["window%d" % (i + 1)] = self._action(
                "Window %s" % self.window_combo.itemText(i), "Ctrl+%d" % (i + 1),
                lambda i=i: self.window_combo.setCurrentIndex(i), "", view_menu)
        view_menu.addSeparator()
        a["slower"] = self._action("Replay slower", "[",
                                   lambda: self.replay_panel.step_speed(-1), "", view_menu)
        a["faster"] = self._action("Replay faster", "]",
                                   lambda: self.replay_panel.step_speed(+1), "", view_menu)
        view_menu.addSeparator()
        for dock in (self.session_dock, self.footprint_dock, self.legend_dock):
            view_menu.addAction(dock.toggleViewAction())
        a["reset_layout"] = self._action("Reset &layout", None, self.reset_layout, "",
                                         view_menu)
        a["help"] = self._action("&Keyboard shortcuts", "F1", self.show_shortcuts, "",
                                 help_menu)
        a["about"] = self._action("&About WalkerLab", None, self.show_about, "", help_menu)

    def show_shortcuts(self) -> None:
        rows = []
        for key in SHORTCUT_ACTIONS:
            act = self.actions_by_name[key]
            rows.append("<tr><td><b>%s</b></td><td>&nbsp;&nbsp;%s</td></tr>" % (
                act.shortcut().toString(QtGui.QKeySequence.SequenceFormat.NativeText),
                act.text().replace("&", "").rstrip("…")))
        box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.NoIcon, "Keyboard shortcuts",
                                    "<table>%s</table>" % "".join(rows),
                                    QtWidgets.QMessageBox.StandardButton.Close, self)
        box.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    def show_about(self) -> None:
        from host.recording.writer import walkerlab_version

        QtWidgets.QMessageBox.about(
            self, "About WalkerLab",
            "<b>WalkerLab</b> %s<br>Live monitor for instrumented rolling walkers."
            % walkerlab_version())
