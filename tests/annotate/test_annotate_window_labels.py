"""Labelling in the window: keys, boundary drag, split/merge, undo/redo, autosave."""
import hashlib

import h5py
import numpy as np
import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from host.recording import open_recording
from host.recording.labels import read_tracks


def _raw_fingerprint(path):
    out = {}
    with h5py.File(path) as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and not name.startswith("annotations"):
                data = obj[()]
                raw = repr(data.tolist()).encode() if data.dtype.hasobject else data.tobytes()
                out[name] = hashlib.sha256(raw).hexdigest()
        f.visititems(visit)
    return out




def test_keyboard_labelling_split_merge_undo_redo_and_reopen(qtbot, open_window,
                                                              session_files):
    path, _, _ = session_files
    before = _raw_fingerprint(path)
    w = open_window(path)
    t = w.session.time_s
    assert w.active_track is None  # only the read-only simulator track so far
    w.set_cursor(10.003)  # snapped to the sample at 10.00
    qtbot.keyClick(w, QtCore.Qt.Key.Key_3)  # WF starts (a new track 'alice' is made)
    assert w.active_track == "alice" and w.pending[0] == "WF"
    w.set_cursor(14.0)
    qtbot.keyClick(w, QtCore.Qt.Key.Key_4)  # WF ends, TL starts
    w.set_cursor(16.0)
    qtbot.keyClick(w, QtCore.Qt.Key.Key_4)  # TL ends
    segs = w.session.tracks["alice"].segments
    assert [c for *_, c in segs] == ["WF", "TL"]
    assert segs[0][0] == pytest.approx(10.0) and segs[0][1] == pytest.approx(14.0)
    assert all(np.min(np.abs(w.session.grid.points - x)) == 0
               for a, b, _ in segs for x in (a, b))  # every boundary is a sample time
    assert w.pending is None
    w.set_cursor(12.0)
    qtbot.keyClick(w, QtCore.Qt.Key.Key_S)  # split WF at 12
    assert len(w.session.tracks["alice"].segments) == 3
    w.set_cursor(13.0)
    qtbot.keyClick(w, QtCore.Qt.Key.Key_M)  # merge WF[12,14) with TL -> WF [12,16)
    assert w.session.tracks["alice"].segments[-1][1:] == (pytest.approx(16.0), "WF")
    qtbot.keyClick(w, QtCore.Qt.Key.Key_Z, QtCore.Qt.KeyboardModifier.ControlModifier)
    assert [c for *_, c in w.session.tracks["alice"].segments] == ["WF", "WF", "TL"]
    qtbot.keyClick(w, QtCore.Qt.Key.Key_Z, QtCore.Qt.KeyboardModifier.ControlModifier)
    assert len(w.session.tracks["alice"].segments) == 2
    qtbot.keyClick(w, QtCore.Qt.Key.Key_Y, QtCore.Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(w, QtCore.Qt.Key.Key_Z, QtCore.Qt.KeyboardModifier.ControlModifier
                   | QtCore.Qt.KeyboardModifier.ShiftModifier)  # redo both
    final = list(w.session.tracks["alice"].segments)
    assert [c for *_, c in final] == ["WF", "WF"]
    w.set_cursor(15.0)
    qtbot.keyClick(w, QtCore.Qt.Key.Key_Delete)
    assert len(w.session.tracks["alice"].segments) == 1
    qtbot.keyClick(w, QtCore.Qt.Key.Key_Z, QtCore.Qt.KeyboardModifier.ControlModifier)
    assert w.session.tracks["alice"].segments == final
    # Autosave writes within a second; the labels survive closing and reopening.
    qtbot.waitUntil(lambda: "alice" in read_tracks(path), timeout=3000)
    w.close()
    stored = read_tracks(path)["alice"]
    assert stored.segments() == final and stored.annotator == "alice"
    assert stored.source == "human" and stored.created and stored.modified
    assert _raw_fingerprint(path) == before  # raw bytes and samples untouched
    w2 = open_window(path)
    assert w2.session.tracks["alice"].segments == final
    assert w2.active_track == "alice"


def _drag(w, t0, t1):
    """Press at time t0 on the active track's row, move and release at t1."""
    vb = w.label_box
    row = len(w.track_order) - 1 - w.track_order.index(w.active_track) + 0.5
    view = w.plots

    def pos(t):
        scene = vb.mapViewToScene(QtCore.QPointF(t, row))
        return view.mapFromScene(scene)

    def send(kind, p, buttons):
        ev = QtGui.QMouseEvent(kind, QtCore.QPointF(p), QtCore.QPointF(view.mapToGlobal(p)),
                               QtCore.Qt.MouseButton.LeftButton, buttons,
                               QtCore.Qt.KeyboardModifier.NoModifier)
        QtWidgets.QApplication.sendEvent(view.viewport(), ev)

    left = QtCore.Qt.MouseButton.LeftButton
    none = QtCore.Qt.MouseButton.NoButton
    send(QtCore.QEvent.Type.MouseButtonPress, pos(t0), left)
    for f in np.linspace(0, 1, 6)[1:]:
        send(QtCore.QEvent.Type.MouseMove, pos(t0 + f * (t1 - t0)), left)
    send(QtCore.QEvent.Type.MouseButtonRelease, pos(t1), none)


def test_boundary_drag_snaps_to_samples_and_undoes(qtbot, open_window, session_files):
    path, _, _ = session_files
    w = open_window(path)
    w.new_track("bob")
    w.edit([(10.0, 14.0, "WF"), (14.0, 16.0, "TL")], "test labels")
    w.plot_labels.setXRange(8.0, 18.0, padding=0)
    qtbot.wait(50)
    _drag(w, 14.0, 15.013)
    segs = w.session.tracks["bob"].segments
    px = w.label_box.viewPixelSize()[0]
    assert segs[0][1] == segs[1][0]
    assert abs(segs[0][1] - 15.013) <= px + 0.01  # where released, to a pixel ...
    assert np.min(np.abs(w.session.time_s - segs[0][1])) == 0
    w.undo_stack.undo()
    assert w.session.tracks["bob"].segments[0][1] == 14.0
    # Dragging away from any boundary pans the view instead of editing.
    _drag(w, 11.0, 12.0)
    assert w.session.tracks["bob"].segments[0][1] == 14.0


def test_read_only_tracks_refuse_edits_and_copies_are_editable(qtbot, open_window,
                                                                session_files):
    path, _, _ = session_files
    w = open_window(path)
    w.set_active_track("simulator")
    before = list(w.session.tracks["simulator"].segments)
    w.set_cursor(20.0)
    qtbot.keyClick(w, QtCore.Qt.Key.Key_S)
    assert w.session.tracks["simulator"].segments == before
    assert "read-only" in w.status.currentMessage()
    name = w.copy_track("simulator")
    assert w.active_track == name and not w.session.tracks[name].read_only
    qtbot.keyClick(w, QtCore.Qt.Key.Key_S)
    assert len(w.session.tracks[name].segments) == len(before) + 1
    # Agreement of the copy with the original: identical labels, kappa 1.
    w.agree_a.setCurrentText("simulator")
    w.agree_b.setCurrentText(name)
    res = w.compare_tracks()
    assert res.kappa == pytest.approx(1.0) and res.windowed_accuracy == 1.0


def test_model_predictions_track_is_read_only_and_copyable(qtbot, open_window,
                                                           session_files, tmp_path):
    from host.datasets import load_sessions
    from recognizers.hmm_recognizer import HMMRecognizer

    path, _, _ = session_files
    sessions = load_sessions([path], "cop")
    model = HMMRecognizer().fit([s.X for s in sessions], [s.y for s in sessions],
                                feature_set="cop")
    model_path = str(model.save(tmp_path / "m.npz"))
    w = open_window(path)
    name = w.add_model_track(model_path)
    track = w.session.tracks[name]
    assert track.read_only and track.source == "model"
    pred = model.predict(sessions[0].X)
    rec = open_recording(path)
    from host.annotate.labels import labels_on
    on_samples = labels_on(track.segments, rec.time_s)
    labelled = rec.labels_per_sample("simulator") != ""
    assert (on_samples[labelled] == pred).all()  # one segment per run of predictions
    copy = w.copy_track(name)
    assert w.session.tracks[copy].source == "human"


def test_frame_stepping_and_playback_speeds(qtbot, open_window, session_files):
    import time

    path, video, _ = session_files
    w = open_window(path, [video])
    w.set_cursor(50.0)
    k = w.video_frame(0)
    for n in range(1, 4):
        qtbot.keyClick(w, QtCore.Qt.Key.Key_Right)
        assert w.video_frame(0) == k + n
    qtbot.keyClick(w, QtCore.Qt.Key.Key_Left)
    assert w.video_frame(0) == k + 2
    shown = w.video_views[0].frame_index
    assert shown == k + 2  # what is on screen is the frame at the cursor
    for _ in range(5):
        qtbot.keyClick(w, QtCore.Qt.Key.Key_BracketRight)
    assert w.speed == 4.0 and w.speed_box.currentText() == "4x"
    for _ in range(9):
        qtbot.keyClick(w, QtCore.Qt.Key.Key_BracketLeft)
    assert w.speed == 0.25
    w.set_speed(4.0)
    t0, wall0 = w.cursor, time.monotonic()
    qtbot.keyClick(w, QtCore.Qt.Key.Key_Space)
    qtbot.wait(300)
    qtbot.keyClick(w, QtCore.Qt.Key.Key_Space)
    wall = time.monotonic() - wall0
    assert not w.playing and 0 < w.cursor - t0 <= 4.0 * wall + 1e-6
    assert w.video_views[0].frame_index == w.video_frame(0)


def test_label_set_presets_and_a_user_defined_set_drive_the_keys(qtbot, open_window,
                                                                  session_files,
                                                                  monkeypatch):
    path, _, _ = session_files
    w = open_window(path)
    w.set_box.setCurrentText("exp1")
    assert w.label_set.classes[6] == "TRS" and w.keys_list.count() == 7
    monkeypatch.setattr(QtWidgets.QInputDialog, "getText",
                        lambda *a, **k: ("sit, stand, walk", True))
    w.set_box.setCurrentText("Custom...")
    assert w.label_set.classes == ("sit", "stand", "walk")
    assert w.set_box.currentText() == "custom" and w.keys_list.count() == 3
    w.set_cursor(5.0)
    qtbot.keyClick(w, QtCore.Qt.Key.Key_3)
    w.set_cursor(6.0)
    qtbot.keyClick(w, QtCore.Qt.Key.Key_3)
    assert w.session.tracks[w.active_track].segments == [(5.0, 6.0, "walk")]
    qtbot.keyClick(w, QtCore.Qt.Key.Key_7)  # no seventh class in this set: ignored
    assert w.pending is None
