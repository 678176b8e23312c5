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

from host.annotate.agreement import agreement
from host.annotate.labels import PRESETS, LabelSet, label_set_from_text
from host.annotate.session import AnnotationSession
from host.annotate.shortcuts import KeyboardShortcuts
from host.annotate.sync_panel import SyncPanel
from host.annotate.track_editing import TrackEditing
from host.annotate.track_view import LabelViewBox, TimeViewBox, TrackItem
from host.annotate.video_view import SPEEDS, VideoView
from host.errors import UserError
from host.gui.theme import DARK, LIGHT, activity_name, class_color, system_prefers_dark

AUTOSAVE_MS = 1000
TICK_MS = 15
VIEW_SPAN_S = 30.0
AUTO_FLASH_MAX_FRAMES = 6000  # search short videos for flashes on open
CUSTOM_SET = "Custom..."


class AnnotatorWindow(TrackEditing, SyncPanel, KeyboardShortcuts, QtWidgets.QMainWindow):
    """The annotator window over one ``AnnotationSession``; see the module docstring.

    The window lays out the videos, the plots and the side tabs, moves the cursor and
    plays; its parts live in their own modules: ``TrackEditing`` (label edits and
    tracks, undoable), ``SyncPanel`` (the Sync tab) and ``KeyboardShortcuts`` (what each
    key does), with the plot items in ``track_view`` and the video pane in
    ``video_view``.
    """

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
        tabs.addTab(self._build_sync_tab(), "Sync")
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

    # ---- keyboard (what each key does: KeyboardShortcuts.handle_key) ---------------
    def eventFilter(self, obj, event) -> bool:
        if (event.type() == QtCore.QEvent.Type.KeyPress and self.isActiveWindow()
                and isinstance(obj, QtWidgets.QWidget) and obj.window() is self
                and not isinstance(obj, (QtWidgets.QLineEdit, QtWidgets.QAbstractSpinBox))):
            return self.handle_key(event)
        return False

    def keyPressEvent(self, event) -> None:
        if not self.handle_key(event):
            super().keyPressEvent(event)

    # ---- saving -------------------------------------------------------------------
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
