"""The annotator window: videos beside the sensor plots, one time cursor, label tracks
edited from the keyboard, sync taps turned into clock anchors.

Keys (the window catches them unless a text field has focus):
  activity keys (1..9, 0, Q, W, ...)   start a segment at the cursor; the next activity
                                       key closes it there (and starts the next one)
  Esc             cancel the open segment       Delete   erase the segment at the cursor
  S               split at the cursor           M        merge with the next segment
  Space           play / pause                  Left/Right   one video frame (or sample)
  Shift+Left/Right one second                   [ / ]    slower / faster playback
  A               anchor the selected tap to the frame on screen
  Ctrl+Z / Ctrl+Shift+Z (Ctrl+Y)  undo / redo every edit
Mouse: click a plot to move the cursor; drag a boundary of the active track to move
it (snapped to samples).
"""
from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from host.annotate import labels as L
from host.annotate.agreement import agreement
from host.annotate.labels import PRESETS, LabelSet, label_set_from_text
from host.annotate.session import AnnotationSession, EditTrack
from host.errors import UserError
from host.gui.theme import DARK, LIGHT, activity_name, class_color, system_prefers_dark

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)
AUTOSAVE_MS = 1000
TICK_MS = 15
VIEW_SPAN_S = 30.0
DRAG_TOLERANCE_PX = 6
AUTO_FLASH_MAX_FRAMES = 6000  # search short videos for flashes on open
CUSTOM_SET = "Custom..."


# ---- undo ------------------------------------------------------------------------------
class TrackEdit(QtGui.QUndoCommand):
    """Every label edit: the track's segments before and after (one mechanism)."""

    def __init__(self, window, track: str, before, after, text: str) -> None:
        super().__init__(text)
        self.window, self.track, self.before, self.after = window, track, before, after

    def redo(self) -> None:
        self.window._apply_segments(self.track, self.after)

    def undo(self) -> None:
        self.window._apply_segments(self.track, self.before)


class TrackAdd(QtGui.QUndoCommand):
    def __init__(self, window, track: EditTrack, text: str) -> None:
        super().__init__(text)
        self.window, self.track = window, track

    def redo(self) -> None:
        self.window.session.add_track(EditTrack(**vars(self.track)))
        self.window._tracks_changed(self.track.name)

    def undo(self) -> None:
        self.window.session.remove_track(self.track.name)
        self.window._tracks_changed()


# ---- widgets ----------------------------------------------------------------------------
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


class LabelViewBox(pg.ViewBox):
    """Clicks move the cursor; dragging near a boundary of the active track moves it."""

    def __init__(self, window) -> None:
        super().__init__()
        self.window = window
        self._drag_from = None

    def mouseClickEvent(self, ev) -> None:
        if ev.button() == QtCore.Qt.MouseButton.LeftButton:
            self.window.set_cursor(self.mapSceneToView(ev.scenePos()).x())
            ev.accept()
        else:
            super().mouseClickEvent(ev)

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


class TimeViewBox(pg.ViewBox):
    def __init__(self, window) -> None:
        super().__init__()
        self.window = window

    def mouseClickEvent(self, ev) -> None:
        if ev.button() == QtCore.Qt.MouseButton.LeftButton:
            self.window.set_cursor(self.mapSceneToView(ev.scenePos()).x())
            ev.accept()
        else:
            super().mouseClickEvent(ev)


# ---- the window -------------------------------------------------------------------------
class AnnotatorWindow(QtWidgets.QMainWindow):
    def __init__(self, session: AnnotationSession, label_set: LabelSet | None = None,
                 annotator: str = "", autosave_ms: int = AUTOSAVE_MS) -> None:
        super().__init__()
        self.session = session
        self.theme = DARK if system_prefers_dark() else LIGHT
        self.label_set = label_set or self._guess_label_set()
        self.annotator = annotator or "annotator"
        self.undo_stack = QtGui.QUndoStack(self)
        self.cursor = session.start_s
        self.pending: tuple[str, float] | None = None
        self.drag_preview = None
        self.playing = False
        self.speed = 1.0
        self._last_tick = 0.0
        self.track_order: list[str] = []
        self.active_track: str | None = None
        self.setWindowTitle("WalkerLab annotator - %s" % session.path)
        self._build()
        self._autosave = QtCore.QTimer(self, singleShot=True, interval=autosave_ms)
        self._autosave.timeout.connect(self.save)
        self._timer = QtCore.QTimer(self, interval=TICK_MS)
        self._timer.timeout.connect(self._tick)
        self._tracks_changed()
        human = [n for n in self.track_order if not session.tracks[n].read_only]
        if human:
            self.set_active_track(human[0])
        for i, v in enumerate(session.videos):
            if v.reader.n_frames <= AUTO_FLASH_MAX_FRAMES:
                session.find_flashes(i)
        self._refresh_sync()
        self.set_cursor(session.start_s)
        QtWidgets.QApplication.instance().installEventFilter(self)

    def _guess_label_set(self) -> LabelSet:
        used = {c for t in self.session.tracks.values() for _, _, c in t.segments}
        return PRESETS["exp1"] if used and used <= set(PRESETS["exp1"].classes) \
            else PRESETS["exp2"]

    # ---- layout -----------------------------------------------------------------
    def _build(self) -> None:
        s = self.session
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        # Videos and transport.
        left = QtWidgets.QWidget()
        lv = QtWidgets.QVBoxLayout(left)
        lv.setContentsMargins(4, 4, 4, 4)
        self.video_views = []
        for v in s.videos:
            view = VideoView(v.name)
            self.video_views.append(view)
            lv.addWidget(view, 1)
            cap = QtWidgets.QLabel()
            cap.setObjectName("caption")
            view.caption = cap
            lv.addWidget(cap)
        if not s.videos:
            lv.addWidget(QtWidgets.QLabel("no video: open with --video FILE"), 1)
        bar = QtWidgets.QHBoxLayout()
        self.play_button = QtWidgets.QPushButton("Play")
        self.play_button.clicked.connect(self.toggle_play)
        back = QtWidgets.QPushButton("<")
        back.setToolTip("previous frame (Left)")
        back.clicked.connect(lambda: self.step_frame(-1))
        fwd = QtWidgets.QPushButton(">")
        fwd.setToolTip("next frame (Right)")
        fwd.clicked.connect(lambda: self.step_frame(1))
        self.speed_box = QtWidgets.QComboBox()
        self.speed_box.addItems(["%gx" % x for x in SPEEDS])
        self.speed_box.setCurrentIndex(SPEEDS.index(1.0))
        self.speed_box.currentIndexChanged.connect(lambda i: self.set_speed(SPEEDS[i]))
        self.time_label = QtWidgets.QLabel()
        for w in (back, self.play_button, fwd, self.speed_box):
            w.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
            bar.addWidget(w)
        bar.addWidget(self.time_label, 1)
        lv.addLayout(bar)
        split.addWidget(left)
        # Plots: acceleration, loads, label tracks, x linked, one cursor.
        self.plots = pg.GraphicsLayoutWidget()
        self.plots.setBackground(self.theme.background)
        self.plots.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        t = s.time_s
        self.cursor_lines = []
        p_acc = self.plots.addPlot(row=0, col=0, viewBox=TimeViewBox(self))
        p_acc.setLabel("left", "Accel", units="m/s²")
        for k, name in enumerate("xyz"):
            p_acc.plot(t, s.accel[:, k], pen=pg.mkPen(self.theme.accel[k], width=1),
                       name=name)
        p_load = self.plots.addPlot(row=1, col=0, viewBox=TimeViewBox(self))
        p_load.setLabel("left", "Load", units="N")
        for k in range(4):
            p_load.plot(t, s.loads[:, k], pen=pg.mkPen(self.theme.legs[k], width=1))
        self.label_box = LabelViewBox(self)
        p_lab = self.plots.addPlot(row=2, col=0, viewBox=self.label_box)
        p_lab.setLabel("bottom", "time", units="s")
        p_lab.setMouseEnabled(x=True, y=False)
        self.track_item = TrackItem(self)
        p_lab.addItem(self.track_item)
        self.tap_lines = []
        for p in (p_acc, p_load, p_lab):
            p.setClipToView(True)
            p.setDownsampling(auto=True, mode="peak")
            p.showGrid(x=True, y=False, alpha=0.3)
            p.getAxis("left").setWidth(70)
            line = pg.InfiniteLine(s.start_s, angle=90, movable=True,
                                   pen=pg.mkPen(self.theme.bad, width=2))
            line.sigDragged.connect(lambda ln: self.set_cursor(ln.value()))
            p.addItem(line)
            self.cursor_lines.append(line)
            if p is not p_lab:
                p.setXLink(p_lab)
                p.getAxis("bottom").setStyle(showValues=False)
            for tap in s.taps:
                tl = pg.InfiniteLine(tap.t_s, angle=90,
                                     pen=pg.mkPen(self.theme.warn, width=1,
                                                  style=QtCore.Qt.PenStyle.DashLine))
                p.addItem(tl)
        self.plot_acc, self.plot_load, self.plot_labels = p_acc, p_load, p_lab
        self.plots.ci.layout.setRowStretchFactor(0, 3)
        self.plots.ci.layout.setRowStretchFactor(1, 3)
        self.plots.ci.layout.setRowStretchFactor(2, 2)
        p_lab.sigXRangeChanged.connect(lambda *_: self.track_item.update())
        p_lab.setXRange(s.start_s, min(s.end_s, s.start_s + VIEW_SPAN_S), padding=0)
        split.addWidget(self.plots)
        split.addWidget(self._side_panel())
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setStretchFactor(2, 0)
        split.setSizes([420, 640, 330])
        self.setCentralWidget(split)
        self.status = self.statusBar()
        self._build_menu()

    def _side_panel(self) -> QtWidgets.QWidget:
        tabs = QtWidgets.QTabWidget()
        tabs.setMinimumWidth(300)
        # Labels tab.
        lab = QtWidgets.QWidget()
        fl = QtWidgets.QVBoxLayout(lab)
        row = QtWidgets.QHBoxLayout()
        row.addWidget(QtWidgets.QLabel("Label set"))
        self.set_box = QtWidgets.QComboBox()
        self.set_box.addItems(sorted(PRESETS))
        if self.label_set.name not in PRESETS:
            self.set_box.addItem(self.label_set.name)
        self.set_box.addItem(CUSTOM_SET)
        self.set_box.setCurrentText(self.label_set.name)
        self.set_box.currentTextChanged.connect(self._choose_label_set)
        row.addWidget(self.set_box, 1)
        fl.addLayout(row)
        self.keys_list = QtWidgets.QListWidget()
        self.keys_list.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        fl.addWidget(self.keys_list, 2)
        fl.addWidget(QtWidgets.QLabel("Tracks (edits go to the selected one)"))
        self.tracks_list = QtWidgets.QListWidget()
        self.tracks_list.currentTextChanged.connect(
            lambda text: self.set_active_track(text.split("  ")[0]) if text else None)
        fl.addWidget(self.tracks_list, 2)
        buttons = QtWidgets.QHBoxLayout()
        new = QtWidgets.QPushButton("New track")
        new.clicked.connect(self._ask_new_track)
        copy = QtWidgets.QPushButton("Copy track")
        copy.setToolTip("an editable copy of the selected track (e.g. model predictions)")
        copy.clicked.connect(lambda: self.copy_track())
        model = QtWidgets.QPushButton("Predict...")
        model.setToolTip("add a saved recognizer's predictions as a read-only track")
        model.clicked.connect(self._ask_model)
        for b in (new, copy, model):
            b.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
            buttons.addWidget(b)
        fl.addLayout(buttons)
        tabs.addTab(lab, "Labels")
        # Sync tab.
        syn = QtWidgets.QWidget()
        fs = QtWidgets.QVBoxLayout(syn)
        self.video_box = QtWidgets.QComboBox()
        self.video_box.addItems([v.name for v in self.session.videos])
        self.video_box.currentIndexChanged.connect(lambda *_: self._refresh_sync())
        fs.addWidget(self.video_box)
        self.tap_table = QtWidgets.QTableWidget(0, 4)
        self.tap_table.setHorizontalHeaderLabels(["tap (s)", "proposed", "anchor", "resid. ms"])
        self.tap_table.horizontalHeader().setSectionResizeMode(
            QtWidgets.QHeaderView.ResizeMode.Stretch)
        self.tap_table.verticalHeader().setVisible(False)
        self.tap_table.setSelectionBehavior(
            QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.tap_table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tap_table.cellDoubleClicked.connect(lambda r, c: self.go_to_tap(r))
        fs.addWidget(self.tap_table, 1)
        grid = QtWidgets.QGridLayout()
        actions = (("Go to tap", lambda: self.go_to_tap(self._selected_tap())),
                   ("Go to proposed frame", lambda: self.go_to_proposed(self._selected_tap())),
                   ("Anchor to this frame (A)", lambda: self.anchor_here()),
                   ("Remove anchor", lambda: self.remove_anchor()),
                   ("Accept all proposed", lambda: self.accept_proposals()),
                   ("Find flashes", lambda: self.find_flashes()))
        for i, (text, fn) in enumerate(actions):
            b = QtWidgets.QPushButton(text)
            b.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
            b.clicked.connect(fn)
            grid.addWidget(b, i // 2, i % 2)
        fs.addLayout(grid)
        self.fit_label = QtWidgets.QLabel()
        self.fit_label.setWordWrap(True)
        fs.addWidget(self.fit_label)
        tabs.addTab(syn, "Sync")
        # Agreement tab.
        agr = QtWidgets.QWidget()
        fa = QtWidgets.QFormLayout(agr)
        self.agree_a = QtWidgets.QComboBox()
        self.agree_b = QtWidgets.QComboBox()
        self.agree_window = QtWidgets.QSpinBox()
        self.agree_window.setRange(0, 500)
        self.agree_window.setValue(25)
        self.agree_window.setSuffix(" samples")
        fa.addRow("Reference", self.agree_a)
        fa.addRow("Compared", self.agree_b)
        fa.addRow("Window", self.agree_window)
        go = QtWidgets.QPushButton("Compare")
        go.clicked.connect(self.compare_tracks)
        fa.addRow(go)
        self.agree_label = QtWidgets.QLabel()
        self.agree_label.setWordWrap(True)
        fa.addRow(self.agree_label)
        tabs.addTab(agr, "Agreement")
        self.tabs = tabs
        self._fill_keys()
        return tabs

    def _build_menu(self) -> None:
        m = self.menuBar().addMenu("&Edit")
        undo = self.undo_stack.createUndoAction(self, "&Undo")
        undo.setShortcuts([QtGui.QKeySequence.StandardKey.Undo])
        redo = self.undo_stack.createRedoAction(self, "&Redo")
        redo.setShortcuts([QtGui.QKeySequence("Ctrl+Shift+Z"), QtGui.QKeySequence("Ctrl+Y")])
        m.addAction(undo)
        m.addAction(redo)
        save = QtGui.QAction("&Save now", self, shortcut=QtGui.QKeySequence("Ctrl+S"))
        save.triggered.connect(self.save)
        m.addAction(save)

    def _fill_keys(self) -> None:
        self.keys_list.clear()
        for key, code in self.label_set.keys.items():
            item = QtWidgets.QListWidgetItem("%s   %-4s %s" % (key, code, activity_name(code)))
            pix = QtGui.QPixmap(12, 12)
            pix.fill(QtGui.QColor(class_color(code)))
            item.setIcon(QtGui.QIcon(pix))
            self.keys_list.addItem(item)

    def _choose_label_set(self, name: str) -> None:
        if name in PRESETS:
            self.label_set = PRESETS[name]
        elif name == CUSTOM_SET:
            text, ok = QtWidgets.QInputDialog.getText(
                self, "Label set", "Activity codes, comma-separated (or a JSON file):",
                text=",".join(self.label_set.classes))
            try:
                chosen = label_set_from_text(text) if ok and text.strip() else None
            except UserError as exc:
                QtWidgets.QMessageBox.warning(self, "Label set", str(exc))
                chosen = None
            if chosen is not None:
                self.label_set = chosen
            self.set_box.blockSignals(True)
            if self.set_box.findText(self.label_set.name) < 0:
                self.set_box.insertItem(self.set_box.count() - 1, self.label_set.name)
            self.set_box.setCurrentText(self.label_set.name)
            self.set_box.blockSignals(False)
        self._fill_keys()

    # ---- cursor, video, playback ----------------------------------------------------
    def set_cursor(self, t: float) -> None:
        s = self.session
        self.cursor = float(min(max(t, s.start_s), s.end_s))
        for line in self.cursor_lines:
            line.blockSignals(True)
            line.setValue(self.cursor)
            line.blockSignals(False)
        x0, x1 = self.plot_labels.viewRange()[0]
        if not x0 <= self.cursor <= x1:
            span = x1 - x0
            self.plot_labels.setXRange(self.cursor - 0.1 * span, self.cursor + 0.9 * span,
                                       padding=0)
        self._show_frames()
        if self.pending is not None:
            self.track_item.update()
        self.time_label.setText(self._time_text())

    def _time_text(self) -> str:
        text = "t = %.3f s" % self.cursor
        if self.session.videos:
            k = self.video_frame(0)
            text += "   frame %d" % k if k is not None else "   (no frame)"
        if self.pending is not None:
            text += "   labelling %s from %.2f s" % self.pending
        return text

    def video_frame(self, i: int) -> int | None:
        """Frame of video i on screen at the cursor (None outside the video)."""
        v = self.session.videos[i]
        tv = float(v.fit.video_time(self.cursor))
        r = v.reader
        if tv < r.time_s[0] - 0.5 / r.fps or tv > r.duration_s:
            return None
        return r.index_at(tv)

    def _show_frames(self) -> None:
        for i, (v, view) in enumerate(zip(self.session.videos, self.video_views)):
            k = self.video_frame(i)
            if getattr(view, "frame_index", None) == k:
                continue
            view.frame_index = k
            view.show_frame(None if k is None else v.reader.frame(k))
            view.caption.setText("%s   frame %s / %d   video %.3f s" % (
                v.name, "-" if k is None else k, v.reader.n_frames,
                float(v.fit.video_time(self.cursor))))

    def step_frame(self, n: int) -> None:
        """Move to the next/previous frame of the first video (else n samples)."""
        s = self.session
        if s.videos:
            v = s.videos[0]
            k = self.video_frame(0)
            if k is None:
                k = v.reader.index_at(float(v.fit.video_time(self.cursor)))
            k = min(max(k + n, 0), v.reader.n_frames - 1)
            # A hair after the frame's time, so rounding never shows the previous one.
            self.set_cursor(float(v.fit.sensor_time(v.reader.time_s[k])) + 1e-6)
        else:
            i = int(np.searchsorted(s.time_s, self.cursor + 1e-9)) - 1 + n
            self.set_cursor(float(s.time_s[min(max(i, 0), len(s.time_s) - 1)]))

    def toggle_play(self) -> None:
        self.playing = not self.playing
        self.play_button.setText("Pause" if self.playing else "Play")
        if self.playing:
            self._last_tick = time.monotonic()
            self._timer.start()
        else:
            self._timer.stop()

    def set_speed(self, speed: float) -> None:
        self.speed = float(speed)
        if self.speed_box.currentText() != "%gx" % speed and speed in SPEEDS:
            self.speed_box.setCurrentIndex(SPEEDS.index(speed))

    def _tick(self) -> None:
        now = time.monotonic()
        dt, self._last_tick = now - self._last_tick, now
        self.set_cursor(self.cursor + dt * self.speed)
        if self.cursor >= self.session.end_s:
            self.toggle_play()

    # ---- keyboard ------------------------------------------------------------------
    def eventFilter(self, obj, event) -> bool:
        if (event.type() == QtCore.QEvent.Type.KeyPress and self.isActiveWindow()
                and isinstance(obj, QtWidgets.QWidget) and obj.window() is self
                and not isinstance(obj, (QtWidgets.QLineEdit, QtWidgets.QAbstractSpinBox))):
            return self.handle_key(event)
        return False

    def keyPressEvent(self, event) -> None:
        if not self.handle_key(event):
            super().keyPressEvent(event)

    def handle_key(self, event) -> bool:
        key = event.key()
        mods = event.modifiers()
        K = QtCore.Qt.Key
        ctrl = bool(mods & QtCore.Qt.KeyboardModifier.ControlModifier)
        shift = bool(mods & QtCore.Qt.KeyboardModifier.ShiftModifier)
        if ctrl:
            if key == K.Key_Z:
                (self.undo_stack.redo if shift else self.undo_stack.undo)()
                return True
            if key == K.Key_Y:
                self.undo_stack.redo()
                return True
            if key == K.Key_S:
                self.save()
                return True
            return False
        text = event.text().upper()
        if text and text in self.label_set.keys:
            self.activity_key(self.label_set.keys[text])
            return True
        if key == K.Key_Space:
            self.toggle_play()
        elif key in (K.Key_Left, K.Key_Right):
            sign = 1 if key == K.Key_Right else -1
            if shift:
                self.set_cursor(self.cursor + sign)
            else:
                self.step_frame(sign)
        elif key == K.Key_Escape:
            self.pending = None
            self.refresh_tracks()
        elif key in (K.Key_Delete, K.Key_Backspace):
            self.erase_at_cursor()
        elif key == K.Key_S:
            self.split_at_cursor()
        elif key == K.Key_M:
            self.merge_at_cursor()
        elif key == K.Key_A:
            self.anchor_here()
        elif key == K.Key_BracketLeft:
            i = SPEEDS.index(self.speed) if self.speed in SPEEDS else 2
            self.set_speed(SPEEDS[max(i - 1, 0)])
        elif key == K.Key_BracketRight:
            i = SPEEDS.index(self.speed) if self.speed in SPEEDS else 2
            self.set_speed(SPEEDS[min(i + 1, len(SPEEDS) - 1)])
        else:
            return False
        return True

    # ---- label edits (all through the undo stack) ---------------------------------
    def _editable(self) -> EditTrack | None:
        if self.active_track is None:
            self.new_track()
        track = self.session.tracks.get(self.active_track)
        if track is None or track.read_only:
            self.status.showMessage("track %r is read-only: copy it to edit (Copy track)"
                                    % self.active_track, 5000)
            return None
        return track

    def edit(self, after, text: str) -> bool:
        track = self._editable()
        if track is None:
            return False
        after = self.session.grid.snap_segments(after)
        if after == track.segments:
            return False
        self.undo_stack.push(TrackEdit(self, track.name, list(track.segments), after, text))
        return True

    def _apply_segments(self, name: str, segments) -> None:
        self.session.set_segments(name, segments)
        self.refresh_tracks()
        self._autosave.start()

    def activity_key(self, code: str) -> None:
        """Start a segment at the cursor, or close the open one there."""
        if self._editable() is None:
            return
        t = self.session.grid.snap(self.cursor)
        if self.pending is not None:
            act, t0 = self.pending
            self.pending = None
            self.edit(L.paint(self.session.tracks[self.active_track].segments, t0, t, act),
                      "label %s" % act)
            if code == act:
                self.refresh_tracks()
                return
        self.pending = (code, t)
        self.refresh_tracks()
        self.time_label.setText(self._time_text())

    def erase_at_cursor(self) -> None:
        track = self._editable()
        if track is None:
            return
        i = L.index_at(track.segments, self.cursor)
        if i >= 0:
            a, b, _ = track.segments[i]
            self.edit(L.erase(track.segments, a, b), "delete segment")

    def split_at_cursor(self) -> None:
        track = self._editable()
        if track is not None:
            self.edit(L.split(track.segments, self.session.grid.snap(self.cursor)), "split")

    def merge_at_cursor(self) -> None:
        track = self._editable()
        if track is not None:
            self.edit(L.merge(track.segments, self.cursor), "merge")

    def boundary_near(self, t: float, tolerance: float) -> float | None:
        track = self.session.tracks.get(self.active_track)
        if track is None or track.read_only:
            return None
        return L.nearest_boundary(track.segments, t, tolerance)

    def move_boundary(self, old: float, new: float) -> None:
        track = self._editable()
        if track is not None:
            self.edit(L.move_boundary(track.segments, old, self.session.grid.snap(new)),
                      "move boundary")

    # ---- tracks -------------------------------------------------------------------
    def _unique_name(self, base: str) -> str:
        name, n = base, 2
        while name in self.session.tracks:
            name, n = "%s-%d" % (base, n), n + 1
        return name

    def new_track(self, name: str | None = None, annotator: str | None = None) -> str:
        name = self._unique_name(name or self.annotator)
        track = EditTrack(name, [], annotator or self.annotator, "human")
        self.undo_stack.push(TrackAdd(self, track, "new track %s" % name))
        return name

    def _ask_new_track(self) -> None:
        name, ok = QtWidgets.QInputDialog.getText(
            self, "New track", "Annotator (the track is named after them):",
            text=self.annotator)
        name = name.strip().replace("/", "-").lstrip("_")
        if ok and name:
            self.new_track(name, annotator=name)

    def copy_track(self, source: str | None = None, name: str | None = None) -> str | None:
        source = source or self.active_track
        if source not in self.session.tracks:
            return None
        src = self.session.tracks[source]
        name = self._unique_name(name or "%s-%s" % (self.annotator, source))
        track = EditTrack(name, self.session.grid.snap_segments(src.segments),
                          self.annotator, "human")
        self.undo_stack.push(TrackAdd(self, track, "copy %s" % source))
        return name

    def add_model_track(self, model_path: str) -> str:
        track = self.session.predictions(model_path)
        track.name = self._unique_name(track.name)
        self.undo_stack.push(TrackAdd(self, track, "predictions %s" % track.name))
        return track.name

    def _ask_model(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Recognizer", "",
                                                        "Models (*.npz)")
        if path:
            try:
                self.add_model_track(path)
            except Exception as exc:  # a model that does not load is the user's to fix
                QtWidgets.QMessageBox.warning(self, "Cannot predict", str(exc))

    def set_active_track(self, name: str | None) -> None:
        if name not in self.session.tracks:
            return
        self.active_track = name
        self.pending = None
        row = self.track_order.index(name) if name in self.track_order else -1
        if row >= 0 and self.tracks_list.currentRow() != row:
            self.tracks_list.blockSignals(True)
            self.tracks_list.setCurrentRow(row)
            self.tracks_list.blockSignals(False)
        self.refresh_tracks()

    def _tracks_changed(self, select: str | None = None) -> None:
        self.track_order = sorted(self.session.tracks,
                                  key=lambda n: (self.session.tracks[n].read_only, n))
        if select is not None:
            self.active_track = select
        elif self.active_track not in self.session.tracks:
            self.active_track = None
        self.tracks_list.blockSignals(True)
        self.tracks_list.clear()
        for n in self.track_order:
            t = self.session.tracks[n]
            self.tracks_list.addItem("%s  (%s%s)" % (n, t.source,
                                                     ", read-only" if t.read_only else ""))
            if n == self.active_track:
                self.tracks_list.setCurrentRow(self.tracks_list.count() - 1)
        self.tracks_list.blockSignals(False)
        for box in (self.agree_a, self.agree_b):
            current = box.currentText()
            box.clear()
            box.addItems(self.track_order)
            if current in self.track_order:
                box.setCurrentText(current)
        ax = self.plot_labels.getAxis("left")
        n = len(self.track_order)
        ax.setTicks([[(n - 1 - i + 0.5, name[:12]) for i, name in enumerate(self.track_order)]])
        self.plot_labels.setYRange(0, max(n, 1), padding=0.02)
        self._autosave.start()
        self.refresh_tracks()

    def refresh_tracks(self) -> None:
        self.track_item.refresh()

    def save(self) -> None:
        try:
            n = self.session.save()
        except Exception as exc:  # keep the edits in memory; tell the user why
            self.status.showMessage("autosave failed: %s" % exc)
            QtWidgets.QMessageBox.warning(self, "Cannot save labels", str(exc))
            return
        if n:
            self.status.showMessage("saved %d track(s) to %s" % (n, self.session.path),
                                    4000)

    # ---- agreement ----------------------------------------------------------------
    def compare_tracks(self):
        a, b = self.agree_a.currentText(), self.agree_b.currentText()
        if not a or not b:
            return None
        res = agreement(self.session.tracks[a].segments, self.session.tracks[b].segments,
                        self.session.time_s, self.agree_window.value())
        if res.n_samples == 0:
            self.agree_label.setText("the two tracks share no labelled samples")
        else:
            self.agree_label.setText(
                "%d samples labelled in both\nCohen's kappa %.3f\nagreement %.1f %%\n"
                "windowed accuracy (±%d) %.1f %%" % (
                    res.n_samples, res.kappa, 100 * res.accuracy, res.window,
                    100 * res.windowed_accuracy))
        return res

    # ---- sync ---------------------------------------------------------------------
    @property
    def sync_video(self) -> int:
        return max(self.video_box.currentIndex(), 0)

    def _selected_tap(self) -> int:
        rows = self.tap_table.selectionModel().selectedRows()
        return rows[0].row() if rows else 0

    def _refresh_sync(self) -> None:
        s = self.session
        self.tap_table.setRowCount(len(s.taps))
        if not s.videos:
            self.fit_label.setText("open a video to synchronise")
            return
        v = s.videos[self.sync_video]
        proposed, flashed = s.proposals(self.sync_video)
        resid = dict(zip(v.anchors.keys(), v.fit.residuals_s))
        for i, tap in enumerate(s.taps):
            anchor = v.anchors.get(i)
            cells = ("%.3f" % tap.t_s, "%d%s" % (proposed[i], " flash" if flashed[i] else ""),
                     str(anchor[3]) if anchor else "",
                     "%.1f" % (round(1000 * resid[i], 1) + 0.0) if i in resid else "")
            for c, text in enumerate(cells):
                self.tap_table.setItem(i, c, QtWidgets.QTableWidgetItem(text))
        f = v.fit
        flashes = ("%d flash(es) found" % len(v.flashes) if v.flashes is not None
                   else "flashes not searched")
        if not v.anchors:
            text = "no anchors: video time = recording time. %d tap(s) detected, %s." % (
                len(s.taps), flashes)
        else:
            text = ("%d anchor(s): t_rec = %.7f · t_video %+.4f s\ndrift %+.1f ppm, "
                    "offset %+.3f s, residual rms %.1f ms (%s)"
                    % (len(v.anchors), f.a, f.b, f.drift_ppm, f.b, 1000 * f.rms_s, flashes))
            if len(v.anchors) == 1:
                text += "\none anchor: offset only; add another for drift"
        self.fit_label.setText(text)
        for view in self.video_views:
            view.frame_index = -2  # the mapping changed: redraw
        self._show_frames()

    def go_to_tap(self, tap: int) -> None:
        if 0 <= tap < len(self.session.taps):
            self.tap_table.selectRow(tap)
            self.set_cursor(self.session.taps[tap].t_s)

    def go_to_proposed(self, tap: int) -> None:
        s = self.session
        if not s.videos or not 0 <= tap < len(s.taps):
            return
        v = s.videos[self.sync_video]
        k = s.proposals(self.sync_video)[0][tap]
        self.tap_table.selectRow(tap)
        self.set_cursor(float(v.fit.sensor_time(v.reader.time_s[k])) + 1e-6)

    def anchor_here(self, tap: int | None = None) -> None:
        """The selected tap is first visible in the frame now on screen."""
        s = self.session
        if not s.videos or not s.taps:
            self.status.showMessage("no taps or no video to anchor", 4000)
            return
        tap = self._selected_tap() if tap is None else tap
        k = self.video_frame(self.sync_video)
        if k is None:
            v = s.videos[self.sync_video]
            k = v.reader.index_at(float(v.fit.video_time(self.cursor)))
        s.anchor(self.sync_video, tap, k)
        self._refresh_sync()

    def remove_anchor(self, tap: int | None = None) -> None:
        if self.session.videos:
            self.session.unanchor(self.sync_video, self._selected_tap() if tap is None
                                  else tap)
            self._refresh_sync()

    def accept_proposals(self) -> None:
        """Anchor every tap that has a matching flash to that flash's frame (taps
        without one need a frame confirmed by eye: select, step, A)."""
        s = self.session
        if not s.videos:
            return
        proposed, flashed = s.proposals(self.sync_video)
        if not any(flashed):
            self.status.showMessage("no flashes matched the taps: go to each tap's frame "
                                    "and anchor it with A", 6000)
        for tap, (k, ok) in enumerate(zip(proposed, flashed)):
            if ok:
                s.anchor(self.sync_video, tap, k)
        self._refresh_sync()

    def find_flashes(self) -> None:
        s = self.session
        if not s.videos:
            return
        r = s.videos[self.sync_video].reader
        dialog = QtWidgets.QProgressDialog("Looking for flashes...", "", 0, r.n_frames, self)
        dialog.setCancelButton(None)
        dialog.setMinimumDuration(500)
        done = [0]

        def progress(n):
            done[0] += n
            if done[0] % 200 == 0:
                dialog.setValue(done[0])
                QtWidgets.QApplication.processEvents()

        s.find_flashes(self.sync_video, progress)
        dialog.close()
        self._refresh_sync()

    # ---- closing ------------------------------------------------------------------
    def closeEvent(self, event) -> None:
        self._timer.stop()
        self._autosave.stop()
        self.save()
        app = QtWidgets.QApplication.instance()
        if app is not None:
            app.removeEventFilter(self)
        self.session.close()
        super().closeEvent(event)
