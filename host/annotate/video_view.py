"""One video of the annotator (a frame scaled to fit its pane) and the playback speeds."""
from __future__ import annotations

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)  # playback speeds offered, times real time


class VideoView(QtWidgets.QLabel):
    """One video frame, scaled to fit, with a caption."""

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title = title
        self.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.setMinimumSize(240, 180)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding,
                           QtWidgets.QSizePolicy.Policy.Expanding)
        self.setStyleSheet("background: #111; color: #ccc;")
        self._image = None

    def show_frame(self, rgb: np.ndarray | None) -> None:
        if rgb is None:
            self._image = None
            self.setText("%s: outside the video" % self.title)
            return
        rgb = np.ascontiguousarray(rgb)
        h, w, _ = rgb.shape
        self._image = (QtGui.QImage(rgb.data, w, h, 3 * w, QtGui.QImage.Format.Format_RGB888)
                       .copy())
        self._rescale()

    def _rescale(self) -> None:
        if self._image is not None:
            self.setPixmap(QtGui.QPixmap.fromImage(self._image).scaled(
                self.size(), QtCore.Qt.AspectRatioMode.KeepAspectRatio,
                QtCore.Qt.TransformationMode.SmoothTransformation))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._rescale()
