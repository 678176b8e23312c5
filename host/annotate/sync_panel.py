"""The annotator's Sync tab: the sync taps of the recording against the frames of a
video, flashes proposed as anchors, and the clock fit they give.

``SyncPanel`` is a part of ``host.annotate.window.AnnotatorWindow`` (a mixin): it
anchors taps of the window's ``session`` to the frame on screen at its ``cursor``
(``video_frame``) and redraws the videos (``_show_frames``) when the mapping changes.
"""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets


class SyncPanel:
    """Tap table, anchors and clock fit of the annotator window."""

    def _build_sync_tab(self) -> QtWidgets.QWidget:
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
        return syn

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
