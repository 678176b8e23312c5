"""Looking back through the monitor's plots: pause and live, the time window, the
history scrollbar and the hint line above the plots.

``ViewNavigation`` is a part of ``host.gui.app.MainWindow`` (a mixin): it expects the
window's ``plots`` (``LivePlots``), ``state``, ``controller``, ``theme`` and
``display_state_name()``.
"""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets

WINDOWS_S = (10.0, 30.0, 60.0, 120.0)


class ViewNavigation:
    """Pause/live buttons, time window, history scrollbar and hint of the monitor."""

    def _build_view_bar(self) -> QtWidgets.QHBoxLayout:
        """The row above the plots: pause, live, window and the hint."""
        bar = QtWidgets.QHBoxLayout()
        bar.setSpacing(6)
        self.pause_button = QtWidgets.QPushButton("❚❚ Pause")
        self.pause_button.setToolTip("Freeze the view to look back; data keeps arriving "
                                     "(Space)")
        self.pause_button.clicked.connect(self.toggle_pause)
        self.live_button = QtWidgets.QPushButton("▶ Live")
        self.live_button.setToolTip("Follow the newest data again (End)")
        self.live_button.clicked.connect(self.go_live)
        self.window_combo = QtWidgets.QComboBox()
        for s in WINDOWS_S:
            self.window_combo.addItem("%d s" % s if s < 60 else "%d min" % (s // 60), s)
        self.window_combo.setToolTip("Time window of the plots (Ctrl+1 … Ctrl+4)")
        self.window_combo.currentIndexChanged.connect(self._window_changed)
        self.view_hint = QtWidgets.QLabel()
        bar.addWidget(self.pause_button)
        bar.addWidget(self.live_button)
        bar.addSpacing(8)
        bar.addWidget(QtWidgets.QLabel("Window:"))
        bar.addWidget(self.window_combo)
        bar.addSpacing(12)
        bar.addWidget(self.view_hint, 1)
        return bar

    def _build_scrollbar(self) -> QtWidgets.QScrollBar:
        """The history scrollbar below the plots (shown while paused)."""
        self.plots.sigPaused.connect(self._user_paused)
        self.plots.ribbon_plot.vb.sigXRangeChanged.connect(self._x_range_changed)
        self.scrollbar = QtWidgets.QScrollBar(QtCore.Qt.Orientation.Horizontal)
        self.scrollbar.setToolTip("Scroll back through the history (paused)")
        self.scrollbar.valueChanged.connect(self._scrolled)
        self.scrollbar.setVisible(False)
        return self.scrollbar

    @property
    def paused(self) -> bool:
        return not self.plots.live

    def toggle_pause(self) -> None:
        if self.controller.mode == "replay":
            self.toggle_replay_pause()
        elif self.paused:
            self.go_live()
        else:
            self.pause()

    def _user_paused(self) -> None:
        """The user dragged or zoomed a plot while it followed the data."""
        if not self.paused:
            self.toggle_pause()  # a replay pauses too, like scrubbing a video

    def pause(self) -> None:
        if self.paused:
            return
        self.plots.pause(self.state)
        span = self.plots.history_span()
        if span is not None:
            self._update_scrollbar()
            self.scrollbar.setVisible(True)
        self._update_view_widgets(self.display_state_name())

    def go_live(self) -> None:
        if self.controller.replay is not None and self.controller.replay.paused:
            self.controller.set_replay_paused(False)
        self.plots.resume()
        self.scrollbar.setVisible(False)
        self._update_view_widgets(self.display_state_name())

    def _window_changed(self, i: int) -> None:
        seconds = float(self.window_combo.itemData(i))
        self.plots.set_window(seconds)

    def _update_scrollbar(self) -> None:
        span = self.plots.history_span()
        if span is None:
            return
        x0, x1 = self.plots.x_range()
        page = max(1, int((x1 - x0) * 1000))
        lo = int(span[0] * 1000)
        hi = max(lo, int(span[1] * 1000) - page)
        sb = self.scrollbar
        sb.blockSignals(True)
        sb.setRange(lo, hi)
        sb.setPageStep(page)
        sb.setSingleStep(max(1, page // 10))
        sb.setValue(int(x0 * 1000))
        sb.blockSignals(False)

    def _scrolled(self, v: int) -> None:
        if not self.paused:
            return
        x0, x1 = self.plots.x_range()
        start = v / 1000.0
        self.plots.set_x_range(start, start + (x1 - x0))

    def _x_range_changed(self, *_) -> None:
        if self.paused and self.scrollbar.isVisible():
            self._update_scrollbar()

    def _update_view_widgets(self, state: str | None = None) -> None:
        paused = self.paused
        self.pause_button.setText("▶ Resume" if paused else "❚❚ Pause")
        self.live_button.setEnabled(paused)
        if paused:
            replay = self.controller.replay
            if replay is not None:
                more = ("replay paused" if replay.paused else "the replay goes on")
            else:
                more = "data keep arriving and recording continues"
            self.view_hint.setText("<b>Paused</b> — %s. Drag or scroll to look back; "
                                   "Space or End to go live." % more)
        elif state in ("reconnecting", "stalled"):
            self.view_hint.setText("<span style='color:%s'><b>%s</b></span>" % (
                self.theme.bad if state == "reconnecting" else self.theme.warn,
                "Connection to the walker lost — reconnecting automatically…"
                if state == "reconnecting" else
                "No data from the walker — waiting for it…"))
        else:
            self.view_hint.setText("")
