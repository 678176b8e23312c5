"""The monitor window end to end, offscreen, against the virtual walker on a pty."""
import os
import threading
import time

import numpy as np
import pytest
from PySide6 import QtCore, QtWidgets

from device.protocol import wire
from device.sim.virtual_walker import FaultConfig
from host.gui.processing import V
from host.link import LinkBatch
from host.recording import open_recording
from host.replay import recording_calibration, recording_chunks, replay_bytes
from host.samples import StreamDecoder

from gui_helpers import HANG_GUARD_MS, wait_samples

pytestmark = pytest.mark.integration


def test_connect_to_the_virtual_walker_and_see_frames_arrive(qtbot, make_window):
    window = make_window()
    assert window.connection_panel.selected_port() == "virtual"  # nothing plugged in
    assert window.connect_to("virtual")
    wait_samples(qtbot, window, 60)
    qtbot.waitUntil(lambda: window.connection_panel.info_labels["walker_id"].text()
                    == "SIM-0", timeout=HANG_GUARD_MS)
    assert window.connection_panel.info_labels["rate_hz"].text() == "50 Hz"
    assert window.connection_panel.state_label.text() == "Connected"
    assert window.health_bar.labels["frames"].text() != "frames 0"
    t, lo, hi = window.plots.live_columns(0, 2)  # accel z per pixel column, in m/s^2
    drawn = lo <= hi
    assert drawn.sum() > 15 and 8 < np.median((lo[drawn] + hi[drawn]) / 2) < 11
    bars = window.footprint.bars.opts["height"]
    assert len(bars) == 4 and np.all(np.isfinite(bars))
    # measured (its size is the machine's business: benchmarks/bench_gui.py)
    assert window.latency_ms() is not None and window.latency_ms() >= 0
    window.disconnect()
    assert not window.controller.connected
    assert window.connection_panel.connect_button.text() == "Connect"


def test_record_from_the_panel_writes_a_valid_recording(qtbot, make_window, tmp_path):
    window = make_window()
    window.connect_to("virtual")
    wait_samples(qtbot, window, 10)
    panel = window.recording_panel
    panel.folder.setText(str(tmp_path / "sessions"))
    panel.subject.setText("S07")
    panel.notes.setPlainText("left hand weak")
    qtbot.mouseClick(panel.button, QtCore.Qt.MouseButton.LeftButton)
    status = window.controller.recording_status()
    assert status is not None and os.path.basename(status["path"]).startswith("S07-")
    qtbot.waitUntil(lambda: "REC" in panel.status.text(), timeout=HANG_GUARD_MS)
    # the recorder's own count: the display may lag behind on a busy machine
    qtbot.waitUntil(lambda: window.controller.recording_status()["samples"] >= 75,
                    timeout=HANG_GUARD_MS)
    qtbot.mouseClick(panel.button, QtCore.Qt.MouseButton.LeftButton)
    assert window.controller.recording is None and window.controller.connected
    assert window.controller.wait_recordings_closed(HANG_GUARD_MS / 1000)
    qtbot.waitUntil(lambda: panel.status.text().startswith("Saved"), timeout=HANG_GUARD_MS)
    rec = open_recording(status["path"])
    assert rec.closed_cleanly and rec.attrs["subject_id"] == "S07"
    assert rec.attrs["notes"] == "left hand weak" and rec.attrs["walker_id"] == "SIM-0"
    assert rec.info is not None and rec.info["rate_hz"] == 50  # INFO asked for again
    assert rec.calibration is not None and len(rec.samples) >= 60
    assert rec.counters["crc_errors"] == 0


def test_a_loaded_model_updates_the_posterior_ribbon_and_the_banner(
        qtbot, make_window, model_path):
    window = make_window()
    window.connect_to("virtual")
    wait_samples(qtbot, window, 10)
    assert window.banner.activity.text() == "No model loaded"
    assert window.load_model(model_path)  # swapped in while streaming
    from recognizers import load_recognizer

    classes = tuple(str(c) for c in load_recognizer(model_path).classes_)
    qtbot.waitUntil(lambda: window.state.posterior is not None
                    and len(window.state.posterior) > 40, timeout=HANG_GUARD_MS)
    p = window.state.posterior.view()[:, 1:]
    p = p[np.isfinite(p[:, 0])]
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-9)
    assert window.plots.ribbon.classes == classes and window.legend.classes == classes
    from host.gui.posterior_ribbon import blend_rgb32
    from host.gui.theme import class_color

    ribbon = window.plots.ribbon
    colours = blend_rgb32([class_color(c) for c in classes], window.plots.theme.background)
    assert ribbon.live_image.isVisible()
    qtbot.waitUntil(lambda: np.isin(ribbon.ring.image, colours).any(), timeout=HANG_GUARD_MS)
    code, prob = window.state.current()
    qtbot.waitUntil(lambda: code in window.banner.activity.text()
                    or window.state.current()[0] in window.banner.activity.text(),
                    timeout=HANG_GUARD_MS)
    assert "probability" in window.banner.detail.text()
    assert window.banner.truth.isVisible()  # the virtual walker sends its truth
    assert window.model_panel.unload_button.isEnabled()
    window.unload_model()
    qtbot.waitUntil(lambda: window.state.posterior is None, timeout=HANG_GUARD_MS)


def test_an_online_model_keeps_learning_live_when_switched_on_and_saves_it(
        qtbot, make_window, bmm_model_path, model_path, tmp_path):
    from recognizers import load_recognizer

    window = make_window()
    window.connect_to("virtual")
    wait_samples(qtbot, window, 10)
    panel = window.model_panel
    assert window.load_model(model_path)
    assert not panel.learn_check.isVisible()  # a supervised HMM cannot learn online
    assert window.load_model(bmm_model_path)
    assert panel.learn_check.isVisible() and not panel.learn_check.isChecked()
    model = window.controller.recognizer
    learnt_before = model.bmm_.n_steps_
    qtbot.waitUntil(lambda: window.state.posterior is not None
                    and len(window.state.posterior) > 20, timeout=HANG_GUARD_MS)
    assert model.bmm_.n_steps_ == learnt_before  # recognising only
    panel.learn_check.setChecked(True)
    assert window.controller.learning
    qtbot.waitUntil(lambda: model.bmm_.n_steps_ > learnt_before + 50, timeout=HANG_GUARD_MS)
    saved = tmp_path / "learnt.npz"
    assert window.save_model(str(saved))
    assert load_recognizer(saved).bmm_.n_steps_ > learnt_before + 50
    panel.learn_check.setChecked(False)
    assert not window.controller.learning
    # Once the batch in flight is through, no further batch is learnt from.
    wait_samples(qtbot, window, 50)
    frozen = model.bmm_.n_steps_
    wait_samples(qtbot, window, 100)
    assert model.bmm_.n_steps_ == frozen
    p = window.state.posterior.view()[:, 1:]
    p = p[np.isfinite(p[:, 0])]
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-9)


def test_on_device_activity_frames_show_beside_the_host_estimate(qtbot, make_window):
    window = make_window()
    window.connect_to("virtual")
    wait_samples(qtbot, window, 5)
    assert not window.banner.device.isVisible()
    # An ACTIVITY frame as the walker's own recognizer would send it.
    raw = wire.encode_frame(wire.ACTIVITY, 1, 0, wire.pack_activity(2, 0.87, "WF"))
    block, others = StreamDecoder().feed(raw, time.time())
    window.controller.sink.put(LinkBatch(time.time(), raw, block, others, []))
    qtbot.waitUntil(lambda: window.banner.device.isVisible(), timeout=HANG_GUARD_MS)
    assert "Walking forward" in window.banner.device.text()
    assert "0.87" in window.banner.device.text()


def test_replay_goes_through_the_same_pipeline_and_reproduces_replay_bytes(
        qtbot, make_window, model_path, recording_path):
    from recognizers import load_recognizer

    window = make_window()
    window.load_model(model_path)
    assert window.open_replay(recording_path, speed=0)  # as fast as the views take it
    rec = open_recording(recording_path)
    qtbot.waitUntil(lambda: window.controller.replay_finished
                    and window.state.samples_seen == len(rec.samples), timeout=HANG_GUARD_MS)
    expected = replay_bytes(recording_chunks(rec), recording_calibration(rec),
                            load_recognizer(model_path))
    shown = window.state.posterior.view()[:, 1:]
    shown = shown[np.isfinite(shown[:, 0])]
    np.testing.assert_allclose(shown, expected.posterior, rtol=0, atol=1e-12)
    samples = window.state.samples.view()
    np.testing.assert_allclose(samples[:, 1 + V["speed"]], expected.features[:, 3])
    qtbot.waitUntil(lambda: window.connection_panel.state_label.text()
                    == "Replay finished", timeout=HANG_GUARD_MS)
    assert window.connection_panel.info_labels["walker_id"].text() == "SIM-0"
    assert not window.recording_panel.button.isEnabled()  # a replay cannot be recorded


class VirtualClock:
    """The replay thread's clock: sleeping advances it at once, so pacing is checked
    against the time the replay believes has passed, whatever the machine's load.
    At ``hold_at`` (virtual seconds) the sleeping thread waits until ``release``."""

    def __init__(self, hold_at):
        self.now = 0.0
        self.hold_at = hold_at
        self.held = threading.Event()
        self.release = threading.Event()

    def perf_counter(self):
        return self.now

    def time(self):
        return time.time()

    def sleep(self, seconds):
        if not self.release.is_set() and self.now + seconds >= self.hold_at:
            self.now = self.hold_at
            self.held.set()
            assert self.release.wait(HANG_GUARD_MS / 1000)
            return
        self.now += seconds
        time.sleep(0.001)  # let the other threads run


def test_replay_is_paced_at_the_chosen_speed_and_can_pause(qtbot, make_window,
                                                           recording_path, monkeypatch):
    import host.gui.replay_source as replay_source

    clock = VirtualClock(hold_at=0.5)  # 10 s into the recording at 20x
    monkeypatch.setattr(replay_source, "time", clock)
    window = make_window()
    window.replay_panel.set_speed(20.0)
    assert window.open_replay(recording_path)  # 20 s recorded -> 1 s at 20x
    source = window.controller.replay
    qtbot.waitUntil(clock.held.is_set, timeout=HANG_GUARD_MS)
    window.toggle_pause()
    assert window.controller.replay.paused and window.paused
    paused_at, sent = clock.now, source.chunks_sent
    clock.release.set()
    # Paused: nothing is sent while the replay's clock runs on for a (virtual) second,
    # in which 20x would have sent the remaining 10 s.
    qtbot.waitUntil(lambda: clock.now > paused_at + 1.0, timeout=HANG_GUARD_MS)
    assert source.chunks_sent == sent and not source.finished
    resumed_at = clock.now
    window.toggle_pause()
    assert not window.controller.replay.paused and not window.paused
    qtbot.waitUntil(lambda: window.controller.replay_finished, timeout=HANG_GUARD_MS)
    rec = open_recording(recording_path)
    qtbot.waitUntil(lambda: window.state.samples_seen == len(rec.samples),
                    timeout=HANG_GUARD_MS)
    # The whole recording at 20x, plus the pause: the replay's own schedule, to within
    # a few of its 50 ms sleeps (around the pause it re-anchors its pacing).
    paced = clock.now - (resumed_at - paused_at)
    assert paced == pytest.approx(source.duration_s / 20.0, abs=0.15)


def test_survives_a_virtual_walker_disconnect_and_reconnect(qtbot, make_window):
    window = make_window(virtual_faults=FaultConfig(disconnect_every_s=1.5,
                                                    disconnect_duration_s=0.6))
    window.connect_to("virtual")
    qtbot.waitUntil(lambda: window.controller.health()["reconnects"] >= 1,
                    timeout=HANG_GUARD_MS)
    # The outage is judged by what the user is told (the connection panel's events below),
    # not by sampling the state display: one GUI tick can bring both the loss and the
    # reconnect, so a poll of the display may never see "reconnecting".
    wait_samples(qtbot, window, 40)  # data flow again after the reconnect
    events = [window.connection_panel.events.item(i).text()
              for i in range(window.connection_panel.events.count())]
    assert any("connection lost" in e for e in events)
    assert any("reconnected" in e for e in events)
    qtbot.waitUntil(lambda: window.display_state_name() == "connected", timeout=HANG_GUARD_MS)
    # the cable is pulled every 1.5 s, so on a slow machine more reconnects may have
    # happened by now: the bar must show the controller's count, whatever it is
    qtbot.waitUntil(lambda: "reconnects %d" % window.controller.health()["reconnects"]
                    in window.health_bar.labels["reconnects"].text(), timeout=HANG_GUARD_MS)
    gaps = np.isnan(window.state.samples.view()[:, 1])
    assert gaps.any()  # the plots break across the unplugged second
    assert window.last_error is None


def test_pause_freezes_the_view_while_data_keep_arriving(qtbot, make_window):
    window = make_window()
    window.connect_to("virtual")
    wait_samples(qtbot, window, 30)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=HANG_GUARD_MS)
    qtbot.keyClick(window.plots, QtCore.Qt.Key.Key_Space)
    assert window.paused and window.scrollbar.isVisible()
    frozen = window.plots.x_range()
    wait_samples(qtbot, window, 25)  # still arriving
    assert window.plots.x_range() == frozen
    assert "Paused" in window.view_hint.text()
    qtbot.keyClick(window.plots, QtCore.Qt.Key.Key_End)
    assert not window.paused and not window.scrollbar.isVisible()
    qtbot.waitUntil(lambda: window.plots.x_range()[1] > frozen[1], timeout=HANG_GUARD_MS)
    x0, x1 = window.plots.x_range()
    assert x1 - x0 == pytest.approx(window.plots.window_s)
    window.plots.sigPaused.emit()  # what dragging a plot while live does
    assert window.paused


def test_keyboard_shortcuts_drive_the_main_actions(qtbot, make_window):
    window = make_window()
    expected = {"connect": "Ctrl+K", "record": "Ctrl+R", "pause": "Space",
                "open": "Ctrl+O", "model": "Ctrl+M", "live": "End", "quit": "Ctrl+Q",
                "window1": "Ctrl+1", "help": "F1"}
    for name, key in expected.items():
        assert window.actions_by_name[name].shortcut().toString() == key
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow,
                    timeout=HANG_GUARD_MS)
    qtbot.keyClick(window.plots, QtCore.Qt.Key.Key_K,
                    QtCore.Qt.KeyboardModifier.ControlModifier)
    assert window.controller.mode == "live"
    qtbot.keyClick(window.plots, QtCore.Qt.Key.Key_3,
                    QtCore.Qt.KeyboardModifier.ControlModifier)
    assert window.plots.window_s == 60.0
    qtbot.keyClick(window.plots, QtCore.Qt.Key.Key_K,
                    QtCore.Qt.KeyboardModifier.ControlModifier)
    assert window.controller.mode == "idle"


def test_layout_and_choices_are_saved_between_runs(qtbot, make_window, isolated_settings):
    window = make_window()
    window.window_combo.setCurrentIndex(2)  # 60 s
    window.recording_panel.subject.setText("S11")
    window.legend_dock.setVisible(False)
    window.close()
    assert isolated_settings.exists()  # the file named by $WALKERLAB_SETTINGS
    again = make_window()
    assert again.plots.window_s == 60.0
    assert again.recording_panel.subject.text() == "S11"
    assert not again.legend_dock.isVisible()
    assert again.session_dock.isVisible()


def test_errors_are_one_line_dialogs(qtbot, make_window, tmp_path):
    window = make_window()
    bad = tmp_path / "not-a-model.npz"
    bad.write_bytes(b"this is not a model")
    assert not window.load_model(str(bad))
    assert window.last_error.startswith("cannot load model not-a-model.npz")
    assert "\n" not in window.last_error and "Traceback" not in window.last_error
    box = window.findChild(QtWidgets.QMessageBox)
    assert box is not None and box.isVisible() and box.text() == window.last_error
    box.close()
    assert not window.connect_to("/dev/walkerlab-no-such-port")
    assert "does not exist" in window.last_error
    assert window.start_recording() is None
    assert window.last_error == "connect a walker before recording"
    assert not window.open_replay(str(bad))
    assert "\n" not in window.last_error


def test_dark_theme_follows_the_override(qtbot, make_window, monkeypatch):
    monkeypatch.setenv("WALKERLAB_THEME", "dark")
    window = make_window()
    assert window.theme.dark
    bg = window.plots.backgroundBrush().color()
    assert bg.lightness() < 80
    monkeypatch.setenv("WALKERLAB_THEME", "light")
    window._scheme_changed()
    assert not window.theme.dark
    assert window.plots.backgroundBrush().color().lightness() > 200
