"""The 'Walker' panel: choose a port, connect/disconnect, walker info, link events."""
from __future__ import annotations

import time

from PySide6 import QtCore, QtWidgets

from host.gui.ports import PortChoice, default_choice, list_port_choices

MAX_EVENTS = 100

STATE_TEXT = {
    "disconnected": ("Not connected", "muted"),
    "connected": ("Connected", "ok"),
    "reconnecting": ("Connection lost: reconnecting…", "warn"),
    "stalled": ("No data from the walker: waiting…", "warn"),
    "replay": ("Replaying a recording", "ok"),
    "replay_paused": ("Replay paused", "muted"),
    "replay_finished": ("Replay finished", "muted"),
}


class StateDot(QtWidgets.QLabel):
    def __init__(self) -> None:
        super().__init__()
        self.setFixedSize(12, 12)

    def set_colour(self, colour: str) -> None:
        self.setStyleSheet("background:%s; border-radius:6px;" % colour)


class ConnectionPanel(QtWidgets.QGroupBox):
    """Emits connectRequested(port device or 'virtual') / disconnectRequested()."""

    connectRequested = QtCore.Signal(str)
    disconnectRequested = QtCore.Signal()

    def __init__(self, parent=None) -> None:
        super().__init__("Walker", parent)
        self.choices: list[PortChoice] = []
        self.connected = False
        self.colours = {"ok": "#2e8b57", "warn": "#c77700", "bad": "#c62828",
                        "muted": "#8a8a8a"}
        lay = QtWidgets.QVBoxLayout(self)
        row = QtWidgets.QHBoxLayout()
        self.port_combo = QtWidgets.QComboBox()
        self.port_combo.setSizeAdjustPolicy(
            QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.port_combo.setMinimumContentsLength(16)
        self.port_combo.setToolTip("Serial port of the walker; the virtual walker is a "
                                   "simulated one running in this program")
        self.refresh_button = QtWidgets.QToolButton()
        self.refresh_button.setText("⟳")
        self.refresh_button.setToolTip("Look for serial ports again (F5)")
        self.refresh_button.clicked.connect(lambda: self.refresh_ports())
        row.addWidget(self.port_combo, 1)
        row.addWidget(self.refresh_button)
        lay.addLayout(row)
        self.connect_button = QtWidgets.QPushButton("Connect")
        self.connect_button.setToolTip("Connect to the selected walker (Ctrl+K)")
        self.connect_button.clicked.connect(self._toggle)
        lay.addWidget(self.connect_button)
        srow = QtWidgets.QHBoxLayout()
        self.dot = StateDot()
        self.state_label = QtWidgets.QLabel()
        self.state_label.setWordWrap(True)
        srow.addWidget(self.dot)
        srow.addWidget(self.state_label, 1)
        lay.addLayout(srow)
        form = QtWidgets.QFormLayout()
        form.setContentsMargins(0, 0, 0, 0)
        form.setHorizontalSpacing(10)
        form.setVerticalSpacing(2)
        self.info_labels = {}
        for key, title in (("walker_id", "Walker"), ("firmware_version", "Firmware"),
                           ("rate_hz", "Sample rate"), ("source", "Source")):
            value = QtWidgets.QLabel("–")
            value.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
            form.addRow(title + ":", value)
            self.info_labels[key] = value
        lay.addLayout(form)
        self.events = QtWidgets.QListWidget()
        self.events.setToolTip("Link events: connections, unplugs, reconnects, stalls")
        self.events.setMaximumHeight(92)
        self.events.setAlternatingRowColors(True)
        self.events.setUniformItemSizes(True)
        self.events.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.events.setTextElideMode(QtCore.Qt.TextElideMode.ElideRight)
        self.events.setWordWrap(False)
        lay.addWidget(QtWidgets.QLabel("Link events:"))
        lay.addWidget(self.events)
        self.set_state("disconnected")

    # ---- ports --------------------------------------------------------------------
    def refresh_ports(self, preferred: str | None = None, comports=None) -> None:
        current = preferred or self.selected_port()
        self.choices = list_port_choices(comports)
        self.port_combo.clear()
        for c in self.choices:
            self.port_combo.addItem(c.label, c.device)
            self.port_combo.setItemData(self.port_combo.count() - 1,
                                        c.description or c.device,
                                        QtCore.Qt.ItemDataRole.ToolTipRole)
        choice = default_choice(self.choices, current)
        self.port_combo.setCurrentIndex(self.choices.index(choice))

    def selected_port(self) -> str | None:
        return self.port_combo.currentData()

    def select_port(self, device: str) -> None:
        i = self.port_combo.findData(device)
        if i < 0:  # a path not enumerated (a pty, a symlink): offer it anyway
            self.port_combo.insertItem(0, device, device)
            i = 0
        self.port_combo.setCurrentIndex(i)

    # ---- state --------------------------------------------------------------------
    def _toggle(self) -> None:
        if self.connected:
            self.disconnectRequested.emit()
        else:
            self.connectRequested.emit(self.selected_port() or "virtual")

    def set_colours(self, ok: str, warn: str, bad: str, muted: str) -> None:
        self.colours = {"ok": ok, "warn": warn, "bad": bad, "muted": muted}

    def set_connected(self, connected: bool, replay: bool = False) -> None:
        self.connected = connected
        self.connect_button.setText("Disconnect" if connected and not replay
                                    else "Close replay" if replay else "Connect")
        self.connect_button.setToolTip(
            "Disconnect from the walker (Ctrl+K)" if connected and not replay
            else "Stop the replay and go back to live walkers (Ctrl+K)" if replay
            else "Connect to the selected walker (Ctrl+K)")
        self.port_combo.setEnabled(not connected)
        self.refresh_button.setEnabled(not connected)

    def set_state(self, state: str, detail: str = "") -> None:
        text, tone = STATE_TEXT.get(state, (state, "muted"))
        self.dot.set_colour(self.colours[tone])
        self.state_label.setText(text + (" — " + detail if detail else ""))
        self.state = state

    def set_info(self, info: dict | None, source: str = "") -> None:
        info = info or {}
        rate = info.get("rate_hz")
        values = {"walker_id": info.get("walker_id") or "–",
                  "firmware_version": info.get("firmware_version") or "–",
                  "rate_hz": "%s Hz" % rate if rate else "–",
                  "source": source or "–"}
        for key, label in self.info_labels.items():
            if label.text() != values[key]:
                label.setText(values[key])

    def add_event(self, text: str, when: float | None = None) -> None:
        stamp = time.strftime("%H:%M:%S", time.localtime(when or time.time()))
        self.events.addItem("%s  %s" % (stamp, text))
        self.events.item(self.events.count() - 1).setToolTip(text)
        while self.events.count() > MAX_EVENTS:
            self.events.takeItem(0)
        self.events.scrollToBottom()
