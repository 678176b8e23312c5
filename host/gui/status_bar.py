"""Link health in the status bar: frames, CRC errors, gaps, drops, reconnects, age."""
from __future__ import annotations

from PySide6 import QtWidgets


class LinkHealthBar(QtWidgets.QWidget):
    """One label per counter; a counter that signals trouble turns the warning colour."""

    FIELDS = ("state", "frames", "crc", "gaps", "drops", "reconnects", "age", "latency")
    TIPS = {
        "state": "Link state",
        "frames": "Frames received",
        "crc": "Frames rejected for a bad checksum (CRC errors) / resynchronisations",
        "gaps": "Sequence gaps in the stream (frames lost on the way)",
        "drops": "Batches dropped because a consumer (monitor, recorder) fell behind",
        "reconnects": "Times the link was re-established after an unplug",
        "age": "Time since the last frame arrived",
        "latency": "Time from a frame's arrival to its data being drawn (median)",
    }

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        lay = QtWidgets.QHBoxLayout(self)
        lay.setContentsMargins(6, 0, 6, 0)
        lay.setSpacing(16)
        self.labels = {}
        for name in self.FIELDS:
            label = QtWidgets.QLabel()
            label.setToolTip(self.TIPS[name])
            lay.addWidget(label)
            self.labels[name] = label
        lay.addStretch(1)
        self.colours = ("#2e8b57", "#c77700", "#c62828")
        self._last: dict = {}

    def set_colours(self, ok: str, warn: str, bad: str) -> None:
        self.colours = (ok, warn, bad)
        self._last = {}

    def _set(self, name: str, text: str, tone: int | None = None) -> None:
        if self._last.get(name) == (text, tone):
            return
        self._last[name] = (text, tone)
        label = self.labels[name]
        label.setText(text)
        label.setStyleSheet("" if tone is None else "color:%s;%s" % (
            self.colours[tone], " font-weight:bold;" if tone else ""))

    def update_health(self, h: dict, state: str, latency_ms: float | None) -> None:
        tone = {"connected": 0, "replay": 0, "reconnecting": 2, "stalled": 1}.get(state)
        names = {"connected": "● connected", "reconnecting": "● reconnecting",
                 "stalled": "● stalled", "disconnected": "○ not connected",
                 "replay": "▶ replay", "replay_paused": "❚❚ replay paused",
                 "replay_finished": "■ replay finished"}
        self._set("state", names.get(state, state), tone)
        self._set("frames", "frames %s" % format(h.get("frames", 0), ","))
        crc = h.get("crc_errors", 0)
        self._set("crc", "CRC errors %d · resyncs %d" % (crc, h.get("resyncs", 0)),
                  1 if crc else None)
        gaps = h.get("seq_gaps", 0)
        self._set("gaps", "gaps %d (lost %d)" % (gaps, h.get("frames_lost", 0)),
                  1 if gaps else None)
        drops = h.get("queue_drops", 0) + h.get("display_drops", 0)
        self._set("drops", "drops %d" % drops, 1 if drops else None)
        rc = h.get("reconnects", 0)
        self._set("reconnects", "reconnects %d" % rc, 1 if rc else None)
        age = h.get("last_frame_age_s")
        if age is None:
            self._set("age", "last frame –")
        else:
            self._set("age", "last frame %.1f s ago" % age if age >= 0.95
                      else "last frame %d ms ago" % round(age * 1000),
                      (2 if age > 2 else 1) if age > 0.5 and h.get("connected") else None)
        self._set("latency", "display latency –" if latency_ms is None
                  else "display latency %d ms" % round(latency_ms))
