"""What the monitor's session panels ask for: connect and disconnect, load, learn and
save a model, record, replay, calibrate, open the workbench.

``SessionActions`` is a part of ``host.gui.app.MainWindow`` (a mixin): it drives the
window's ``controller`` and updates its panels (``connection_panel``, ``model_panel``,
``recording_panel``, ``replay_panel``); a user mistake becomes one error dialog through
the window's ``_guard``.
"""
from __future__ import annotations

import os

from PySide6 import QtCore, QtWidgets

from host.gui.controller import recording_filename
from host.gui.dialogs import FAILED
from host.gui.ports import VIRTUAL
from host.gui.settings import default_recordings_folder, value


class SessionActions:
    """Connection, model, recording and replay actions of the monitor window."""

    # ---- connection -----------------------------------------------------------------
    def toggle_connection(self) -> None:
        if self.controller.connected:
            self.disconnect()
        else:
            self.connect_to(self.connection_panel.selected_port() or VIRTUAL)

    def connect_to(self, port: str | None = None) -> bool:
        port = port or VIRTUAL
        if port != VIRTUAL and self.connection_panel.port_combo.findData(port) < 0:
            self.connection_panel.select_port(port)
        if self._guard("Cannot connect", self.controller.connect, port) is FAILED:
            self._update_mode_widgets()
            return False
        self._new_session()
        label = "the virtual walker" if port == VIRTUAL else port
        self.connection_panel.add_event("connecting to %s" % label)
        self.statusBar().showMessage("Connected to %s" % label, 4000)
        self._update_mode_widgets()
        return True

    def disconnect(self) -> None:
        was = self.controller.mode
        recording = self.controller.recording is not None
        self.controller.disconnect()
        if recording:
            self.recording_panel.set_message("Saving…")
        if was != "idle":
            self.connection_panel.add_event("replay closed" if was == "replay"
                                            else "disconnected")
        self._update_mode_widgets()

    def _new_session(self) -> None:
        self.state.clear()
        self.plots.resume()
        self._latencies.clear()
        self.scrollbar.setVisible(False)

    # ---- model ----------------------------------------------------------------------
    def load_model_dialog(self) -> None:
        start = self.controller.model_path or value(self.settings, "model/path", "", str)
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "Load a recognizer", os.path.dirname(start) if start else "",
            "WalkerLab models (*.npz);;All files (*)")
        if path:
            self.load_model(path)

    def _busy(self, fn, *args):
        QtWidgets.QApplication.setOverrideCursor(QtCore.Qt.CursorShape.WaitCursor)
        try:
            return fn(*args)
        finally:
            QtWidgets.QApplication.restoreOverrideCursor()

    def load_model(self, path: str, remember: bool = True) -> bool:
        recognizer = self._busy(self._guard, "Cannot load model", self.controller.load_model,
                                path)
        if recognizer is FAILED:
            return False
        self.model_panel.set_model(path, recognizer)
        self.statusBar().showMessage("Model %s loaded" % os.path.basename(path), 4000)
        if self.persist and remember:
            self.settings.setValue("model/path", path)
        return True

    calibration_speed = 1.0  # a virtual bench walker's device seconds per real second

    def open_calibration(self, procedure: str):
        """The calibration wizard for the connected walker: the monitor lets go of the
        port while it runs and connects again when it is closed. A virtual walker (or
        none) is calibrated on a calibration bench."""
        from host.calibrate import CalibrationStore
        from host.gui.calibration_wizard import CalibrationWizard

        port = self.controller.port if self.controller.mode == "live" else ""
        if self.controller.recording is not None:
            self.statusBar().showMessage("Stop the recording before calibrating", 6000)
            return None
        self.disconnect()
        bench, technician = None, None
        if not port or port == VIRTUAL:
            from host.virtual_port import bench_walker

            bench, technician, _ = bench_walker(0, speed=self.calibration_speed)
            path = bench.start()
        else:
            path = port
        wizard = CalibrationWizard(procedure, path, CalibrationStore(), technician,
                                   parent=self)

        def finished(*_):
            if bench is not None:
                bench.stop()
            if port:
                self.connect_to(port)

        wizard.finished.connect(finished)
        self.calibration_wizard = wizard
        wizard.open()
        wizard.start()
        return wizard

    def open_workbench(self):
        """The training and evaluation workbench, loading its models into this monitor."""
        if self.workbench_opener is None:
            self.statusBar().showMessage("The workbench is not available in this window; "
                                         "run `walkerlab workbench`", 6000)
            return None
        bench = getattr(self, "workbench", None)
        if bench is None or not bench.isVisible():
            self.workbench = bench = self.workbench_opener(monitor=self)
        bench.raise_()
        bench.activateWindow()
        return bench

    def set_learning(self, on: bool) -> None:
        self.controller.set_learning(on)
        self.statusBar().showMessage(
            "Learning from live data" if self.controller.learning else "Recognising only", 4000)

    def save_model_dialog(self) -> None:
        start = self.controller.model_path or ""
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self, "Save the model", start, "WalkerLab models (*.npz)")
        if path:
            self.save_model(path)

    def save_model(self, path: str) -> bool:
        saved = self._guard("Cannot save model", self.controller.save_model, path)
        if saved is FAILED:
            return False
        self.model_panel.set_model(saved, self.controller.recognizer)
        self.model_panel.learn_check.setChecked(self.controller.learning)
        self.statusBar().showMessage("Model saved to %s" % saved, 4000)
        return True

    def unload_model(self) -> None:
        self.controller.clear_model()
        self.model_panel.set_model(None, None)

    # ---- recording ------------------------------------------------------------------
    def toggle_recording(self) -> None:
        if self.controller.recording is not None:
            self.stop_recording()
        else:
            self.start_recording()

    def start_recording(self, path: str | None = None) -> str | None:
        if self.controller.mode != "live":
            self.show_error("Cannot record", "connect a walker before recording"
                            if self.controller.mode == "idle"
                            else "a replay cannot be recorded; close it and connect a walker")
            return None
        folder = self.recording_panel.folder.text().strip() or default_recordings_folder()
        path = path or recording_filename(folder, self.recording_panel.subject_id())
        out = self._guard("Cannot record", self.controller.start_recording, path,
                          self.recording_panel.subject_id(),
                          self.recording_panel.notes_text())
        if out is FAILED:
            return None
        if out:
            self.connection_panel.add_event("recording to %s" % os.path.basename(out))
            self._update_recording()
        return out

    def stop_recording(self) -> str | None:
        path = self.controller.stop_recording()
        if path:
            self.recording_panel.set_recording(None)
            self.recording_panel.set_message("Saving %s…" % os.path.basename(path))
        return path

    def _browse_folder(self) -> None:
        folder = QtWidgets.QFileDialog.getExistingDirectory(
            self, "Folder for recordings", self.recording_panel.folder.text())
        if folder:
            self.recording_panel.folder.setText(folder)

    # ---- replay ---------------------------------------------------------------------
    def open_recording_dialog(self) -> None:
        folder = self.recording_panel.folder.text()
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "Replay a recording", folder if os.path.isdir(folder) else "",
            "WalkerLab recordings (*.h5 *.hdf5);;All files (*)")
        if path:
            self.open_replay(path)

    def open_replay(self, path: str, speed: float | None = None) -> bool:
        if speed is None:
            speed = self.replay_panel.speed_value()
        elif speed > 0:  # 0 (as fast as possible, for tests) has no entry in the list
            self.replay_panel.speed.blockSignals(True)
            self.replay_panel.set_speed(speed)
            self.replay_panel.speed.blockSignals(False)
        if self._busy(self._guard, "Cannot open recording", self.controller.open_replay,
                      path, speed) is FAILED:
            return False
        self._new_session()
        self.connection_panel.add_event("replaying %s" % os.path.basename(path))
        self._update_mode_widgets()
        return True

    def set_replay_speed(self, speed: float) -> None:
        self.controller.set_replay_speed(speed)

    def toggle_replay_pause(self) -> None:
        r = self.controller.replay
        if r is None:
            return
        if r.paused:
            self.controller.set_replay_paused(False)
            self.go_live()
        else:
            self.controller.set_replay_paused(True)
            self.pause()
