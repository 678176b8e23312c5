"""The annotator's plots as the user sees and touches them: the label tracks drawn as
rows of coloured segments, and the view boxes that turn clicks into cursor moves and
drags of a boundary into edits.

The items read the window's ``session``, ``track_order``, ``active_track``,
``pending``, ``cursor``, ``drag_preview`` and ``theme``, and call its ``set_cursor``,
``boundary_near``, ``move_boundary`` and ``refresh_tracks``.
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from host.gui.theme import class_color

DRAG_TOLERANCE_PX = 6


class TrackItem(pg.GraphicsObject):
    """The label tracks as rows of coloured segments; the active row is outlined."""

    def __init__(self, window) -> None:
        super().__init__()
        self.window = window
        self._bounds = QtCore.QRectF(0, 0, 1, 1)

    def boundingRect(self) -> QtCore.QRectF:
        return self._bounds

    def refresh(self) -> None:
        self.prepareGeometryChange()
        w = self.window
        n = max(1, len(w.track_order))
        self._bounds = QtCore.QRectF(w.session.start_s, 0, w.session.end_s - w.session.start_s,
                                     n)
        self.update()

    def paint(self, p: QtGui.QPainter, *args) -> None:
        w = self.window
        view = self.getViewBox()
        x0, x1 = (view.viewRange()[0] if view is not None
                  else (w.session.start_s, w.session.end_s))
        p.setPen(QtCore.Qt.PenStyle.NoPen)
        to_device = p.transform()
        names = []  # (device rect, code): written after the rects, in pixels
        for row, name in enumerate(w.track_order):
            track = w.session.tracks[name]
            y = len(w.track_order) - 1 - row
            for a, b, c in track.segments:
                if b < x0 or a > x1:
                    continue
                p.setBrush(QtGui.QColor(class_color(c)))
                rect = QtCore.QRectF(a, y + 0.1, b - a, 0.8)
                p.drawRect(rect)
                device = to_device.mapRect(rect)
                if device.width() > 8 * len(c) + 6:
                    names.append((device, c))
            if name == w.active_track:
                pen = QtGui.QPen(QtGui.QColor(w.theme.foreground))
                pen.setCosmetic(True)
                pen.setWidth(2)
                p.setPen(pen)
                p.setBrush(QtCore.Qt.BrushStyle.NoBrush)
                p.drawRect(QtCore.QRectF(x0, y + 0.05, x1 - x0, 0.9))
                p.setPen(QtCore.Qt.PenStyle.NoPen)
                if w.pending is not None:
                    act, t0 = w.pending
                    a, b = sorted((t0, w.cursor))
                    col = QtGui.QColor(class_color(act))
                    p.setBrush(QtGui.QBrush(col, QtCore.Qt.BrushStyle.BDiagPattern))
                    p.drawRect(QtCore.QRectF(a, y + 0.1, max(b - a, 1e-3), 0.8))
        if w.drag_preview is not None:
            pen = QtGui.QPen(QtGui.QColor(w.theme.foreground))
            pen.setCosmetic(True)
            pen.setStyle(QtCore.Qt.PenStyle.DashLine)
            p.setPen(pen)
            t = w.drag_preview[1]
            p.drawLine(QtCore.QPointF(t, 0), QtCore.QPointF(t, len(w.track_order)))
        p.save()
        p.resetTransform()
        p.setPen(QtGui.QColor("#101010"))
        for device, code in names:
            p.drawText(device, QtCore.Qt.AlignmentFlag.AlignCenter, code)
        p.restore()


class TimeViewBox(pg.ViewBox):
    """Clicks move the window's cursor to the time clicked."""

    def __init__(self, window) -> None:
        super().__init__()
        self.window = window

    def mouseClickEvent(self, ev) -> None:
        if ev.button() == QtCore.Qt.MouseButton.LeftButton:
            self.window.set_cursor(self.mapSceneToView(ev.scenePos()).x())
            ev.accept()
        else:
            super().mouseClickEvent(ev)


class LabelViewBox(TimeViewBox):
    """Clicks move the cursor; dragging near a boundary of the active track moves it."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self._drag_from = None

    def mouseDragEvent(self, ev, axis=None) -> None:
        if ev.button() != QtCore.Qt.MouseButton.LeftButton:
            return super().mouseDragEvent(ev, axis)
        t = self.mapSceneToView(ev.scenePos()).x()
        if ev.isStart():
            t0 = self.mapSceneToView(ev.buttonDownScenePos()).x()
            px = self.viewPixelSize()[0]
            self._drag_from = self.window.boundary_near(t0, DRAG_TOLERANCE_PX * px)
        if self._drag_from is None:
            return super().mouseDragEvent(ev, axis)
        ev.accept()
        if ev.isFinish():
            self.window.move_boundary(self._drag_from, t)
            self._drag_from = None
            self.window.drag_preview = None
        else:
            self.window.drag_preview = (self._drag_from, t)
        self.window.refresh_tracks()
