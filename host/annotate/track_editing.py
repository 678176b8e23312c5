"""Label editing in the annotator: every edit of a track's segments, and adding,
copying and choosing tracks, all through the window's undo stack.

``TrackEditing`` is a part of ``host.annotate.window.AnnotatorWindow`` (a mixin): it
edits the window's ``session`` at its ``cursor`` in its ``active_track``, and keeps the
tracks list, the agreement choosers and the label plot's rows in step. The edits
themselves are pure functions of segment lists (``host.annotate.labels``).
"""
from __future__ import annotations

from PySide6 import QtGui, QtWidgets

from host.annotate import labels as L
from host.annotate.session import EditTrack


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
    """Adding a track (new, copied or predicted); undone by removing it."""

    def __init__(self, window, track: EditTrack, text: str) -> None:
        super().__init__(text)
        self.window, self.track = window, track

    def redo(self) -> None:
        self.window.session.add_track(EditTrack(**vars(self.track)))
        self.window._tracks_changed(self.track.name)

    def undo(self) -> None:
        self.window.session.remove_track(self.track.name)
        self.window._tracks_changed()


class TrackEditing:
    """Segment edits and track management of the annotator window."""

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
