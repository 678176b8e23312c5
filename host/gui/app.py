"""The WalkerLab live monitor window, and ``run_monitor`` (``walkerlab monitor``).

The window owns no threads and does no decoding: a ``MonitorController`` runs the link,
processing and recording threads, and a QTimer (30 Hz by default) drains finished
display chunks into ring buffers and redraws. See host/gui/__init__.py.
"""
from __future__ import annotations

import os
import signal
import statistics
import sys
import time
import traceback

from PySide6 import QtCore, QtGui, QtWidgets

from host.errors import UserError
from host.gui.activity_banner import ActivityBanner
from host.gui.connection_panel import ConnectionPanel
from host.gui.controller import MonitorController
from host.gui.dialogs import FAILED, guarded, open_error_box
from host.gui.display_state import DisplayState
from host.gui.footprint_view import FootprintView
from host.gui.live_plots import LivePlots
from host.gui.menus import MonitorMenus
from host.gui.model_panel import ModelPanel
from host.gui.ports import VIRTUAL
from host.gui.posterior_ribbon import ActivityLegend
from host.gui.processing import one_line
from host.gui.recording_panel import RecordingPanel
from host.gui.replay_panel import ReplayPanel
from host.gui.session_actions import SessionActions
from host.gui.settings import default_recordings_folder, open_settings, value
from host.gui.startup import check_screenshot_path, qt_application
from host.gui.status_bar import LinkHealthBar
from host.gui.theme import apply_application_theme
from host.gui.view_navigation import ViewNavigation

DEFAULT_SIZE = (1400, 900)
SLOW_TICK_MS = 250
EVENT_TEXT = {
    "connected": "connected to %s",
    "disconnected": "connection lost (%s)",
    "reconnected": "reconnected to %s",
    "stalled": "walker stalled (%s)",
    "resumed": "data flowing again",
    "nak": "walker refused a command (%s)",
    "replay": "replaying %s",
}


def _event_text(ev) -> str:
    fmt = EVENT_TEXT.get(ev.kind)
    if fmt is None:
        return "%s %s" % (ev.kind, ev.detail)
    return fmt % ev.detail if "%s" in fmt else fmt


def _scrolling(widget: QtWidgets.QWidget) -> QtWidgets.QScrollArea:
    """widget in a frameless area that scrolls vertically (a dock may be short)."""
    scroll = QtWidgets.QScrollArea()
    scroll.setWidget(widget)
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
    scroll.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    return scroll


class MainWindow(SessionActions, ViewNavigation, MonitorMenus, QtWidgets.QMainWindow):
    """The monitor window; see the module docstring.

    The window builds the views, runs the redraw timers, keeps the settings and shows
    errors; its parts live in their own modules: ``SessionActions`` (connect, model,
    record, replay), ``ViewNavigation`` (pause, window, scrollbar) and ``MonitorMenus``
    (menus, shortcuts, help).
    """

    # PySide6 finds QObject.disconnect before a mixin's method of that name on an
    # instance; naming it in the class itself makes ours the one called.
    disconnect = SessionActions.disconnect

    def __init__(self, controller: MonitorController | None = None, settings=None,
                 redraw_hz: float = 30.0, restore_layout: bool = True,
                 persist: bool = True, workbench_opener=None) -> None:
        super().__init__()
        # How File > Training workbench opens it: given by whoever composes the two
        # windows (the CLI, or the workbench itself). host.gui never imports
        # host.workbench: the workbench builds on the monitor, not the reverse
        # (import-linter contract in pyproject.toml).
        self.workbench_opener = workbench_opener
        self.setWindowTitle("WalkerLab — live monitor")
        self.controller = controller or MonitorController()
        self.settings = settings if settings is not None else open_settings()
        self.persist = persist
        self.state = DisplayState()
        app = QtWidgets.QApplication.instance()
        self.theme = apply_application_theme(app)
        self.last_error: str | None = None
        self.errors_shown: list[str] = []
        self._error_box: QtWidgets.QMessageBox | None = None
        self._latencies: list[float] = []
        self._ticks = 0
        self._mode_shown = None
        self._hint_state: str | None = None
        self._last_error_at = 0.0
        self.ticks_drawn = 0
        self._build()
        self._build_actions()
        self._restore(restore_layout)
        self.apply_theme()
        app.styleHints().colorSchemeChanged.connect(self._scheme_changed)
        self.timer = QtCore.QTimer(self)
        self.timer.setTimerType(QtCore.Qt.TimerType.PreciseTimer)
        self.timer.setInterval(int(round(1000 / max(1.0, redraw_hz))))
        self.timer.timeout.connect(self.tick)
        self.timer.start()
        self.slow_timer = QtCore.QTimer(self)
        self.slow_timer.setInterval(SLOW_TICK_MS)
        self.slow_timer.timeout.connect(self.slow_tick)
        self.slow_timer.start()
        if self.controller.recognizer is not None:
            self.model_panel.set_model(self.controller.model_path, self.controller.recognizer)
        if self.controller.mode == "live":
            if self.controller.port != VIRTUAL:
                self.connection_panel.select_port(self.controller.port)
            self.connection_panel.add_event("connecting to %s" % self.controller.port)
        elif self.controller.mode == "replay":
            self.connection_panel.add_event("replaying %s"
                                            % os.path.basename(self.controller.port))
        self._update_mode_widgets()
        self.slow_tick()

    # ---- construction ---------------------------------------------------------------
    def _build(self) -> None:
        central = QtWidgets.QWidget()
        vbox = QtWidgets.QVBoxLayout(central)
        vbox.setContentsMargins(6, 6, 6, 2)
        vbox.setSpacing(4)
        self.banner = ActivityBanner()
        vbox.addWidget(self.banner)
        vbox.addLayout(self._build_view_bar())
        self.plots = LivePlots(theme=self.theme)
        vbox.addWidget(self.plots, 1)
        vbox.addWidget(self._build_scrollbar())
        self.setCentralWidget(central)

        # Left: the session panels.
        panels = QtWidgets.QWidget()
        pbox = QtWidgets.QVBoxLayout(panels)
        pbox.setContentsMargins(6, 6, 6, 6)
        self.connection_panel = ConnectionPanel()
        self.connection_panel.connectRequested.connect(self.connect_to)
        self.connection_panel.disconnectRequested.connect(self.disconnect)
        self.model_panel = ModelPanel()
        self.model_panel.loadRequested.connect(self.load_model_dialog)
        self.model_panel.unloadRequested.connect(self.unload_model)
        self.model_panel.learningToggled.connect(self.set_learning)
        self.model_panel.saveRequested.connect(self.save_model_dialog)
        self.recording_panel = RecordingPanel()
        self.recording_panel.startRequested.connect(self.start_recording)
        self.recording_panel.stopRequested.connect(self.stop_recording)
        self.recording_panel.browseRequested.connect(self._browse_folder)
        self.replay_panel = ReplayPanel()
        self.replay_panel.openRequested.connect(self.open_recording_dialog)
        self.replay_panel.pauseToggled.connect(self.toggle_replay_pause)
        self.replay_panel.speedChanged.connect(self.set_replay_speed)
        for w in (self.connection_panel, self.model_panel, self.recording_panel,
                  self.replay_panel):
            pbox.addWidget(w)
        pbox.addStretch(1)
        self.session_dock = self._dock("Session", "SessionDock", _scrolling(panels),
                                       QtCore.Qt.DockWidgetArea.LeftDockWidgetArea)
        self.session_dock.setMinimumWidth(290)

        # Right: the walker seen from above, and the activities with probabilities.
        self.footprint = FootprintView(theme=self.theme)
        self.footprint.setMinimumHeight(300)
        right = QtCore.Qt.DockWidgetArea.RightDockWidgetArea
        self.footprint_dock = self._dock("Walker from above", "FootprintDock",
                                         self.footprint, right)
        self.legend = ActivityLegend()
        self.legend_dock = self._dock("Activities", "ActivitiesDock",
                                      _scrolling(self.legend), right)
        self.resizeDocks([self.footprint_dock, self.legend_dock], [420, 330],
                         QtCore.Qt.Orientation.Vertical)
        self.resizeDocks([self.session_dock, self.footprint_dock], [300, 340],
                         QtCore.Qt.Orientation.Horizontal)

        self.health_bar = LinkHealthBar()
        self.statusBar().addPermanentWidget(self.health_bar, 1)
        self.statusBar().setSizeGripEnabled(True)

    def _dock(self, title: str, name: str, widget: QtWidgets.QWidget,
              area: QtCore.Qt.DockWidgetArea) -> QtWidgets.QDockWidget:
        """A dock holding widget; name is the key of its place in the saved layout."""
        dock = QtWidgets.QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    # ---- settings -------------------------------------------------------------------
    def _restore(self, restore_layout: bool) -> None:
        s = self.settings
        self._default_state = self.saveState()
        self.resize(*DEFAULT_SIZE)
        if restore_layout:
            geometry = s.value("window/geometry")
            if geometry is not None:
                self.restoreGeometry(geometry)
            state = s.value("window/state")
            if state is not None:
                self.restoreState(state)
        window_s = value(s, "view/window_s", 30.0, float)
        i = self.window_combo.findData(window_s)
        self.window_combo.setCurrentIndex(i if i >= 0 else 1)
        self._window_changed(self.window_combo.currentIndex())
        self.replay_panel.set_speed(value(s, "replay/speed", 1.0, float))
        self.recording_panel.folder.setText(
            value(s, "recording/folder", default_recordings_folder(), str))
        self.recording_panel.subject.setText(value(s, "recording/subject", "", str))
        self.connection_panel.refresh_ports(value(s, "walker/port", "", str) or None)

    def save_settings(self) -> None:
        if not self.persist:
            return
        s = self.settings
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState())
        s.setValue("view/window_s", self.plots.window_s)
        s.setValue("replay/speed", self.replay_panel.speed_value())
        s.setValue("recording/folder", self.recording_panel.folder.text())
        s.setValue("recording/subject", self.recording_panel.subject_id())
        port = self.connection_panel.selected_port()
        if port:
            s.setValue("walker/port", port)
        s.setValue("model/path", self.controller.model_path or "")
        s.sync()

    def reset_layout(self) -> None:
        self.restoreState(self._default_state)
        for dock in (self.session_dock, self.footprint_dock, self.legend_dock):
            dock.setVisible(True)
            dock.setFloating(False)

    # ---- theme ----------------------------------------------------------------------
    def _scheme_changed(self, *_) -> None:
        self.theme = apply_application_theme(QtWidgets.QApplication.instance())
        self.apply_theme()

    def apply_theme(self) -> None:
        th = self.theme
        self.plots.set_theme(th)
        self.footprint.set_theme(th)
        self.connection_panel.set_colours(th.ok, th.warn, th.bad, th.muted)
        self.connection_panel.set_state(self.connection_panel.state)
        self.health_bar.set_colours(th.ok, th.warn, th.bad)
        self._mode_shown = None

    # ---- errors ---------------------------------------------------------------------
    def show_error(self, title: str, message: str) -> None:
        """A one-line message in a (non-blocking) dialog; never a traceback."""
        message = one_line(Exception(message)) if "\n" in message else message
        now = time.monotonic()
        if message == self.last_error and now - self._last_error_at < 10.0:
            return  # the same failure again (a model failing on every block): said it
        self._last_error_at = now
        self.last_error = message
        self.errors_shown.append(message)
        del self.errors_shown[:-50]
        self.connection_panel.add_event("error: " + message)
        if not open_error_box(self, title, message):
            self.statusBar().showMessage(message, 8000)  # one dialog at a time

    def _guard(self, title: str, fn, *args):
        """Run fn; a user error becomes a dialog. Returns fn's result, or FAILED."""
        return guarded(self.show_error, title, fn, *args, failed=FAILED)

    # ---- the timers -----------------------------------------------------------------
    def tick(self) -> None:
        """Drain finished chunks into the rings and redraw (the redraw timer)."""
        self._ticks += 1
        result = self.controller.poll()
        for chunk in result.chunks:
            for ev in chunk.events:
                if ev.kind not in ("connected", "replay"):  # said already, by us
                    self.connection_panel.add_event(_event_text(ev), ev.host_time)
            self.state.append(chunk)
        for message in result.errors:
            self.show_error("WalkerLab", message)
        for message in result.notices:
            self.statusBar().showMessage(message, 6000)
            self.connection_panel.add_event(message)
            if message.startswith("saved recording"):
                self.recording_panel.set_message("Saved " + os.path.basename(
                    message.split(" ", 2)[-1]))
        if self.state.classes != self.plots.ribbon.classes:
            self.plots.set_classes(self.state.classes)
            self.legend.set_classes(self.state.classes)
        drew = self.plots.refresh(self.state, self._placeholder())
        if drew and self.plots.live and result.chunks and self.state.newest_arrival:
            self._latencies.append(time.time() - self.state.newest_arrival)
            del self._latencies[:-200]
        if drew:
            self.ticks_drawn += 1
        if self._ticks % 2 == 0:  # the footprint at half the redraw rate is plenty
            self.footprint.refresh(self.state)
        if self._ticks % 3 == 0 or result.chunks and not self.state.samples_seen:
            self._update_activity()

    def _placeholder(self) -> str:
        c = self.controller
        if c.mode == "idle" and not len(self.state.samples):
            return "Not connected. Choose a walker and press Connect (Ctrl+K)."
        if not self.state.classes:
            if c.recognizer is not None:
                return "Waiting for data…"
            return "No model loaded: File ▸ Load model… (Ctrl+M) to see activity " \
                   "probabilities here."
        return ""

    def _update_activity(self) -> None:
        current = self.state.current()
        if current is None:
            if self.controller.recognizer is None:
                self.banner.set_current(None, 0.0, None, "No model loaded",
                                        "Load a model (Ctrl+M) to recognise activities "
                                        "live.")
            else:
                self.banner.set_current(None, 0.0, None, "Waiting for data…",
                                        "Model: %s" % os.path.basename(
                                            self.controller.model_path or ""))
        else:
            code, p = current
            t_now = self.state.latest_time()
            since = None
            if self.state.current_since is not None and t_now is not None:
                since = max(0.0, t_now - self.state.current_since)
            self.banner.set_current(code, p, since)
        self.banner.set_device(self.state.device.latest())
        self.banner.set_truth(self.state.truth.latest())
        self.legend.set_probabilities(self.state.latest_posterior())

    def latency_ms(self) -> float | None:
        if not self._latencies:
            return None
        return 1000 * statistics.median(self._latencies[-60:])

    def display_state_name(self) -> str:
        c = self.controller
        if c.mode == "replay":
            r = c.replay
            if c.replay_finished:
                return "replay_finished"
            return "replay_paused" if r is not None and r.paused else "replay"
        if c.mode == "idle":
            return "disconnected"
        return c.link_state

    def slow_tick(self) -> None:
        """Status bar, panels and replay progress (4 Hz)."""
        c = self.controller
        state = self.display_state_name()
        self.health_bar.update_health(c.health(), state, self.latency_ms())
        detail = ""
        if state == "reconnecting" and c.link is not None:
            age = c.link.health()["last_frame_age_s"]
            detail = "no data for %.0f s" % age if age is not None else ""
        self.connection_panel.set_state(state, detail)
        if state != self._hint_state:
            self._hint_state = state
            self._update_view_widgets(state)
        source = ""
        if c.mode == "live":
            source = "virtual walker (simulated)" if c.port == VIRTUAL else c.port
        elif c.mode == "replay":
            source = "recording"
        self.connection_panel.set_info(c.info, source)
        self._update_recording()
        if c.mode == "replay" and c.replay is not None:
            r = c.replay
            self.replay_panel.set_progress(r.progress, r.position - r.first_host_time,
                                           r.duration_s, r.paused, c.replay_finished)
        if (c.mode, c.recording is not None) != self._mode_shown:
            self._update_mode_widgets()

    def _update_recording(self) -> None:
        status = self.controller.recording_status()
        if status is not None or self.recording_panel.recording:
            self.recording_panel.set_recording(status, self.theme.bad)

    def _update_mode_widgets(self) -> None:
        c = self.controller
        self._mode_shown = (c.mode, c.recording is not None)
        self.connection_panel.set_connected(c.mode != "idle", replay=c.mode == "replay")
        self.recording_panel.set_available(
            c.mode == "live", "Connect a walker to record" if c.mode == "idle"
            else "Replays cannot be recorded")
        self.replay_panel.set_active(c.port if c.mode == "replay" else None,
                                     c.replay.duration_s if c.replay is not None else 0.0)
        self.actions_by_name["record"].setEnabled(c.mode == "live")
        title = "WalkerLab — live monitor"
        if c.mode == "replay":
            title += " — replay of %s" % os.path.basename(c.port)
        elif c.mode == "live":
            title += " — %s" % ("virtual walker" if c.port == VIRTUAL else c.port)
        self.setWindowTitle(title)
        self._update_view_widgets(self.display_state_name())

    # ---- closing --------------------------------------------------------------------
    def closeEvent(self, event: QtGui.QCloseEvent) -> None:
        self.timer.stop()
        self.slow_timer.stop()
        self.save_settings()
        self.controller.shutdown()
        super().closeEvent(event)


# ---- the entry point --------------------------------------------------------------------
def _excepthook(window_ref):
    def hook(kind, exc, tb):
        traceback.print_exception(kind, exc, tb, file=sys.stderr)
        window = window_ref()
        if window is not None and not issubclass(kind, KeyboardInterrupt):
            try:
                window.show_error("Unexpected error", "%s: %s" % (kind.__name__,
                                                                  one_line(exc)))
            except Exception:
                pass
    return hook


def startup_summary(controller: MonitorController, default_model: str | None = None
                    ) -> list[str]:
    """What the terminal is told once the monitor is up: the port it uses and the model.

    default_model: the shipped model's path (said so when that is the one running).
    """
    if controller.mode == "live" and controller.port == VIRTUAL:
        where = ("port: the virtual walker (pseudo-terminal %s; no walker plugged in)"
                 % (controller.virtual.path if controller.virtual is not None else "?"))
    elif controller.mode == "live":
        where = "port: %s" % controller.port
    elif controller.mode == "replay":
        where = "replaying %s" % controller.port
    else:
        where = "port: none yet (choose one in the window's connection panel)"
    path = controller.model_path
    if controller.recognizer is None or not path:
        model = "model: none (File > Load model…)"
    else:
        kind = getattr(controller.recognizer, "kind", type(controller.recognizer).__name__)
        shipped = (" (the shipped default)" if default_model and os.path.abspath(path)
                   == os.path.abspath(default_model) else "")
        model = "model: %s, %s%s" % (path, kind, shipped)
    return ["walkerlab monitor: " + where, "walkerlab monitor: " + model]


def run_monitor(port: str | None = None, model_path: str | None = None,
                screenshot: str | None = None, after_s: float | None = None,
                course: str = "free", seed: int | None = None,
                duration_s: float | None = None,
                theme: str | None = None, replay: str | None = None,
                speed: float = 1.0, workbench_opener=None) -> int:
    """Open the monitor window; returns the exit status.

    port: connect to it at once (default: the virtual walker if no USB serial device is
    plugged in). model_path: run this recognizer (default: the last one used).
    screenshot/after_s: save a PNG of the window after that many seconds and quit
    (uses the default layout and does not touch saved settings). duration_s: quit after.
    theme: 'dark' or 'light' instead of the system's. replay: open this recording and
    replay it at `speed` (1-20) instead of connecting. workbench_opener: what File >
    Training workbench calls (``host.workbench.app.open_workbench``; None hides it).
    """
    import weakref

    from host.gui.ports import default_choice, list_port_choices
    from host.link import check_port

    if port and replay:
        raise UserError("give a port or a recording to replay, not both")
    if replay and not os.path.exists(replay):
        raise UserError("recording %s does not exist" % replay)
    if not 0 < speed <= 100:
        raise UserError("replay speed must be between 0 and 100 times real time")
    if port:
        check_port(port)  # a clear one-line error before any window opens
    if model_path and not os.path.exists(model_path):
        raise UserError("model file %s does not exist" % model_path)
    check_screenshot_path(screenshot)
    app = qt_application(theme)
    if seed is None:
        from device.sim.activities import DEMO_SEED as seed
    controller = MonitorController(virtual_course=course, virtual_seed=seed)
    if model_path:
        controller.load_model(model_path)  # a bad model: one line from the CLI, no window
    if port:
        controller.connect(port)  # likewise for a port that cannot be opened
    elif replay:
        controller.open_replay(replay, speed)  # and for a file that is not a recording
    try:
        window = MainWindow(controller, restore_layout=not screenshot,
                            persist=not screenshot, workbench_opener=workbench_opener)
    except BaseException:
        controller.shutdown()
        raise
    old_hook = sys.excepthook
    old_sigint = signal.getsignal(signal.SIGINT)
    sys.excepthook = _excepthook(weakref.ref(window))
    status = {"code": 0}
    try:
        if not model_path and not screenshot:
            last = value(window.settings, "model/path", "", str)
            if last and os.path.exists(last):
                window.load_model(last)
        if controller.recognizer is None and not model_path:
            from host.models import DEFAULT_MODEL

            if DEFAULT_MODEL.exists():  # a fresh install recognises at once
                window.load_model(str(DEFAULT_MODEL), remember=False)
        window.show()
        if replay:
            window.replay_panel.speed.blockSignals(True)
            window.replay_panel.set_speed(speed)
            window.replay_panel.speed.blockSignals(False)
        elif not port:
            choice = default_choice(list_port_choices())
            if choice.is_virtual:
                window.connect_to(VIRTUAL)
        from host.models import DEFAULT_MODEL

        for line in startup_summary(controller, str(DEFAULT_MODEL)):
            print(line, flush=True)
        if screenshot:
            def shoot():
                window.tick()
                window.repaint()
                if not window.grab().save(screenshot):
                    print("walkerlab monitor: error: cannot write %s" % screenshot,
                          file=sys.stderr)
                    status["code"] = 2
                window.close()
            QtCore.QTimer.singleShot(int(1000 * (after_s if after_s is not None else 5.0)),
                                     shoot)
        if duration_s is not None:
            QtCore.QTimer.singleShot(int(1000 * duration_s), window.close)
        # Let Ctrl-C in the terminal close the window cleanly.
        signal.signal(signal.SIGINT, lambda *_: window.close())
        wake = QtCore.QTimer()
        wake.start(200)
        wake.timeout.connect(lambda: None)
        app.exec()
        wake.stop()
    finally:
        sys.excepthook = old_hook
        signal.signal(signal.SIGINT, old_sigint)
        controller.shutdown()
        window.deleteLater()
        QtCore.QCoreApplication.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
    return status["code"]
