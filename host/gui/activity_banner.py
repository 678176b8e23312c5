"""The current activity, large: the host's estimate, the walker's own, the truth."""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from host.gui.theme import activity_name, class_color


class ActivityBanner(QtWidgets.QFrame):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("ActivityBanner")
        self.setFrameShape(QtWidgets.QFrame.Shape.StyledPanel)
        lay = QtWidgets.QHBoxLayout(self)
        lay.setContentsMargins(12, 8, 16, 8)
        lay.setSpacing(14)
        self.chip = QtWidgets.QLabel()
        self.chip.setFixedSize(18, 58)
        lay.addWidget(self.chip)
        main = QtWidgets.QVBoxLayout()
        main.setSpacing(0)
        self.title = QtWidgets.QLabel("CURRENT ACTIVITY (host model)")
        small = self.title.font()
        small.setPointSizeF(max(7.0, small.pointSizeF() * 0.8))
        small.setBold(True)
        self.title.setFont(small)
        self.title.setEnabled(False)
        self.activity = QtWidgets.QLabel()
        big = self.activity.font()
        big.setPointSizeF(big.pointSizeF() * 2.3)
        big.setBold(True)
        self.activity.setFont(big)
        self.detail = QtWidgets.QLabel()
        main.addWidget(self.title)
        main.addWidget(self.activity)
        main.addWidget(self.detail)
        lay.addLayout(main, 1)
        side = QtWidgets.QGridLayout()
        side.setHorizontalSpacing(10)
        side.setVerticalSpacing(2)
        self.device_title = QtWidgets.QLabel("On the walker:")
        self.device = QtWidgets.QLabel()
        self.truth_title = QtWidgets.QLabel("Simulator truth:")
        self.truth = QtWidgets.QLabel()
        mid = self.device.font()
        mid.setPointSizeF(mid.pointSizeF() * 1.25)
        mid.setBold(True)
        self.device.setFont(mid)
        self.truth.setFont(mid)
        for w in (self.device_title, self.truth_title):
            w.setEnabled(False)
        side.addWidget(self.device_title, 0, 0, QtCore.Qt.AlignmentFlag.AlignRight)
        side.addWidget(self.device, 0, 1)
        side.addWidget(self.truth_title, 1, 0, QtCore.Qt.AlignmentFlag.AlignRight)
        side.addWidget(self.truth, 1, 1)
        self.side = QtWidgets.QWidget()
        self.side.setLayout(side)
        lay.addWidget(self.side)
        self._shown = None
        self.set_current(None, 0.0, None, "No model loaded",
                         "Load a model (Ctrl+M) to recognise activities live.")
        self.set_device(None)
        self.set_truth(None)

    def set_current(self, code: str | None, p: float, since_s: float | None,
                    empty_title: str = "", empty_detail: str = "") -> None:
        key = (code, round(p, 2), None if since_s is None else int(since_s), empty_title,
               empty_detail)
        if key == self._shown:
            return
        self._shown = key
        if code is None:
            self.chip.setStyleSheet("background: palette(mid); border-radius:3px;")
            self.activity.setText(empty_title)
            self.activity.setEnabled(False)
            self.detail.setText(empty_detail)
            return
        self.activity.setEnabled(True)
        self.chip.setStyleSheet("background:%s; border-radius:3px;" % class_color(code))
        self.activity.setText("%s  <span style='font-weight:normal; color:gray'>%s</span>"
                              % (activity_name(code), code))
        since = "" if since_s is None else (" · for %d s" % since_s if since_s >= 1
                                            else " · just now")
        self.detail.setText("probability %.2f%s" % (p, since))

    def _label(self, label: QtWidgets.QLabel, code: str | None, extra: str = "") -> None:
        if code is None:
            label.setText("–")
            return
        label.setText("<span style='color:%s'>■</span> %s%s"
                      % (class_color(code), activity_name(code), extra))

    def set_device(self, latest) -> None:
        """latest: (t, code, confidence) of the newest ACTIVITY frame, or None."""
        visible = latest is not None
        self.device_title.setVisible(visible)
        self.device.setVisible(visible)
        if visible:
            self._label(self.device, latest[1], "  (%.2f)" % latest[2])

    def set_truth(self, latest) -> None:
        visible = latest is not None
        self.truth_title.setVisible(visible)
        self.truth.setVisible(visible)
        if visible:
            self._label(self.truth, latest[1] or None)
