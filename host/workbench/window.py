"""The Workbench window: one tab per task, composed here.

*Evaluate* (``evaluate_tab``): recordings, a recognizer and its settings,
leave-one-subject-out runs compared side by side. *Models* (``models_tab``): the
registry folder's models, Open in live monitor, Deploy to walker…. The analysis tabs
(*Latent map*, *Topics*, *Regimes*, *Hidden states*) work on the recordings ticked
in Evaluate. The window owns what the tabs share: the menu, the status bar, error
dialogs, and the live monitor models open in.
"""
from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from host.errors import UserError
from host.gui.dialogs import open_error_box
from host.gui.settings import open_settings, value
from host.gui.theme import apply_application_theme
from host.workbench.context import TabContext
from host.workbench.evaluate_tab import EvaluateTab
from host.workbench.hidden_states_view import HiddenStatesView
from host.workbench.latent_view import LatentMapView
from host.workbench.models_tab import ModelsTab
from host.workbench.regimes_view import RegimesView
from host.workbench.topics_view import TopicsView

DEFAULT_SIZE = (1600, 1000)


class WorkbenchWindow(QtWidgets.QMainWindow):
    """The workbench; ``monitor``: the live monitor window it was opened from, if any."""

    def __init__(self, files=(), models_dir=None, settings=None, monitor=None,
                 persist: bool = True, restore_layout: bool = True) -> None:
        super().__init__()
        self.setWindowTitle("WalkerLab — training and evaluation workbench")
        self.settings = settings if settings is not None else open_settings()
        self.persist = persist
        self.monitor = monitor
        self.theme = apply_application_theme(QtWidgets.QApplication.instance())
        self.errors_shown: list[str] = []
        self.last_error: str | None = None
        self._error_box = None
        self._monitor_windows = []  # monitors we opened (kept alive)
        self.context = TabContext(self.settings, persist, self.theme, self.show_error,
                                  self.statusBar().showMessage)
        self._build()
        self._build_actions()
        self.resize(*DEFAULT_SIZE)
        if restore_layout:
            geometry = self.settings.value("workbench/geometry")
            if geometry is not None:
                self.restoreGeometry(geometry)
        folder = models_dir or (value(self.settings, "workbench/models_dir", "", str)
                                if restore_layout else "")
        if not folder:
            from host.models import default_models_dir

            folder = str(default_models_dir())
        self.models.models_folder.setText(str(folder))
        if files:  # checked by the workbench command already: listed at once
            self.evaluate.add_files(files, background=False)
        self.models.refresh_models()

    # ---- construction ---------------------------------------------------------------
    def _build(self) -> None:
        self.tabs = QtWidgets.QTabWidget()
        self.setCentralWidget(self.tabs)
        self.models = ModelsTab(self.context, open_model=self.open_in_monitor)
        self.evaluate = EvaluateTab(self.context,
                                    models_folder=lambda: self.models.models_folder.text())
        self.evaluate.model_saved.connect(lambda path: self.models.refresh_models(select=path))
        recordings = self.evaluate.recordings
        selection = recordings.selected_paths
        self.latent_view = LatentMapView(selection, self.theme)
        self.topics_view = TopicsView(selection, self.theme)
        self.regimes_view = RegimesView(selection, self.theme)
        self.hidden_states_view = HiddenStatesView(selection, self.theme,
                                                   train_target=self._hcrf_dpm_target)
        for view in (self.latent_view, self.topics_view, self.regimes_view,
                     self.hidden_states_view):
            recordings.selection_changed.connect(view.refresh_selection)
        self.models.listed.connect(self.hidden_states_view.set_models)
        self.models.model_selected.connect(self._show_hidden_states)
        self.hidden_states_view.model_saved.connect(
            lambda path: self.models.refresh_models(select=path))
        for tab, title in ((self.evaluate, "Evaluate"), (self.models, "Models"),
                           (self.latent_view, "Latent map"), (self.topics_view, "Topics"),
                           (self.regimes_view, "Regimes"),
                           (self.hidden_states_view, "Hidden states")):
            self.tabs.addTab(tab, title)

    def _build_actions(self) -> None:
        mb = self.menuBar()
        fm = mb.addMenu("&File")
        rm = mb.addMenu("&Run")
        self.actions_by_name = a = {}
        ev = self.evaluate

        def act(name, text, shortcut, slot, menu):
            action = QtGui.QAction(text, self)
            if shortcut:
                action.setShortcut(QtGui.QKeySequence(shortcut))
            action.triggered.connect(lambda *_: slot())
            menu.addAction(action)
            self.addAction(action)
            a[name] = action

        act("add_files", "&Add recordings…", "Ctrl+O", ev.recordings.add_files_dialog, fm)
        act("add_folder", "Add &folder…", "Ctrl+Shift+O", ev.recordings.add_folder_dialog, fm)
        act("report", "&Export report…", "Ctrl+E", ev.export_report_dialog, fm)
        fm.addSeparator()
        act("close", "&Close", "Ctrl+Q", self.close, fm)
        act("run", "&Run leave-one-subject-out", "Ctrl+R", ev.start_run, rm)
        act("cancel", "&Cancel", "Esc", ev.cancel, rm)
        act("train", "&Train and save", "Ctrl+T", ev.train_selected, rm)

    def _show_hidden_states(self, entry) -> None:
        if entry is not None and entry.kind == "hcrf-dpm":  # its hidden states, in their tab
            self.hidden_states_view.show_model(entry.path)

    def _hcrf_dpm_target(self):
        """What the Hidden states tab trains: the ticked recordings and Evaluate's
        settings, into the Models tab's folder."""
        folder = self.models.models_folder.text().strip()
        if not folder:
            raise UserError("choose a model folder on the Models tab")
        return self.evaluate.config_for("hcrf-dpm"), folder

    # ---- errors ---------------------------------------------------------------------
    def show_error(self, title: str, message: str) -> None:
        """A one-line message in a non-blocking dialog; never a traceback."""
        message = message.strip().splitlines()[0] if message.strip() else title
        self.last_error = message
        self.errors_shown.append(message)
        self.statusBar().showMessage(message, 8000)
        open_error_box(self, title, message)

    # ---- the live monitor -----------------------------------------------------------
    def open_in_monitor(self, path: str):
        """Load the model in the monitor this workbench came from, else a new monitor."""
        monitor = self.monitor
        if monitor is None or not monitor.isVisible():
            from host.gui.app import MainWindow

            monitor = MainWindow(persist=self.persist,
                                 workbench_opener=lambda monitor: self._adopt(monitor))
            monitor.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
            self._monitor_windows.append(monitor)
            monitor.destroyed.connect(lambda *_, m=monitor: self._forget_monitor(m))
            self.monitor = monitor
        if not monitor.load_model(path):
            return None
        monitor.show()
        monitor.raise_()
        monitor.activateWindow()
        return monitor

    def _adopt(self, monitor):
        """A monitor opened from here asks for a workbench: this one."""
        self.monitor = monitor
        return self

    def _forget_monitor(self, monitor) -> None:
        if monitor in self._monitor_windows:
            self._monitor_windows.remove(monitor)
        if self.monitor is monitor:
            self.monitor = None

    # ---- closing --------------------------------------------------------------------
    def closeEvent(self, event: QtGui.QCloseEvent) -> None:
        for tab in (self.evaluate, self.latent_view, self.topics_view, self.regimes_view,
                    self.hidden_states_view):
            tab.runner.stop()
        self.evaluate.recordings.runner.stop()
        if self.persist:
            self.settings.setValue("workbench/geometry", self.saveGeometry())
            self.settings.sync()
        super().closeEvent(event)
