"""The calibration wizard: `walkerlab calibrate load|accel|encoder --gui`.

The same guided procedures as the terminal (host/calibrate.py GuidedCalibration, same
steps, steadiness waits, checks and refusals) run in a worker thread; the window is
their user interface: each step's instruction, the live reading while the wizard
waits for it to be steady, a refused step in red with the reason (Redo / Give up),
and at the end the fitted constants with their standard errors and a plot of the
residuals, with Save / Discard. The GUI thread only shows what the worker says and
hands back the technician's answers; the worker reads the link and writes the files.
"""
from __future__ import annotations

import re
import threading

from PySide6 import QtCore, QtWidgets

from host.calibrate import PROCEDURES, run_calibration
from host.errors import UserError

TITLES = {"load": "Load cells", "accel": "Accelerometer", "encoder": "Wheel encoder"}


class _Bridge(QtCore.QObject):
    """The procedure's ui (say / ask / live), called from the worker thread; answers
    come back from the GUI thread through answer()."""

    said = QtCore.Signal(str)
    asked = QtCore.Signal(str, str)
    lived = QtCore.Signal(str)
    done = QtCore.Signal(str)  # "" on success, else the reason

    def __init__(self) -> None:
        super().__init__()
        self._answer = ""
        self._ready = threading.Event()
        self.cancelled = False

    # worker side
    def say(self, text: str) -> None:
        self.said.emit(text)

    def live(self, text: str) -> None:
        import time
        now = time.monotonic()
        if now - getattr(self, "_last_live", 0.0) >= 0.1:  # 10 Hz is plenty to read
            self._last_live = now
            self.lived.emit(text)

    def ask(self, prompt: str, default: str = "") -> str:
        self._ready.clear()
        self.asked.emit(prompt, default)
        while not self._ready.wait(0.1):
            if self.cancelled:
                raise UserError("calibration abandoned: the window was closed")
        return self._answer or default

    # GUI side
    def answer(self, text: str) -> None:
        self._answer = text
        self._ready.set()


class ResidualPlot(QtWidgets.QWidget):
    """The fit's residuals as bars around zero (pyqtgraph)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        import pyqtgraph as pg

        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.plot = pg.PlotWidget()
        self.plot.setMinimumHeight(160)
        self.plot.showGrid(y=True, alpha=0.3)
        self.plot.setBackground(self.palette().color(self.backgroundRole()))
        fg = self.palette().color(self.foregroundRole())
        for axis in ("left", "bottom"):
            self.plot.getAxis(axis).setPen(fg)
            self.plot.getAxis(axis).setTextPen(fg)
        self.plot.setLabel("bottom", "step")
        layout.addWidget(self.plot)
        self._pg = pg

    def show_residuals(self, values, unit: str) -> None:
        self.plot.clear()
        x = list(range(1, len(values) + 1))
        self.plot.addItem(self._pg.BarGraphItem(x=x, height=values, width=0.6,
                                                brush="#4e79a7"))
        self.plot.setLabel("left", "residual", units=unit)
        self.plot.getAxis("bottom").setTicks([[(i, str(i)) for i in x]])


class CalibrationWizard(QtWidgets.QDialog):
    """Step-by-step calibration of the walker on `port` (see the module docstring).

    technician: for a virtual walker, the callable that performs each confirmed step.
    screenshots: folder where a picture of each step is saved (docs/images)."""

    step_shown = QtCore.Signal(str)  # the step's instruction (for tests)

    def __init__(self, procedure: str, port: str, store, technician=None,
                 masses_kg=(10.0, 20.0), distance_m: float = 5.0, screenshots=None,
                 parent=None) -> None:
        super().__init__(parent)
        if procedure not in PROCEDURES:
            raise UserError("unknown procedure %r" % procedure)
        self.procedure, self.port, self.store = procedure, port, store
        self.technician = technician
        self.masses_kg, self.distance_m = masses_kg, distance_m
        self.screenshots = screenshots
        self.shots: list[str] = []
        self.result_lines: list[str] = []
        self.error = None
        self.finished_ok = False
        self.setWindowTitle("Calibrate: %s" % TITLES[procedure])
        self.resize(780, 660)
        self._bridge = _Bridge()
        self._bridge.said.connect(self._on_say)
        self._bridge.asked.connect(self._on_ask)
        self._bridge.lived.connect(self._on_live)
        self._bridge.done.connect(self._on_done)
        self._build()
        self._in_results = False
        self._step_no = 0
        self._thread = threading.Thread(target=self._work, name="walkerlab-calibrate",
                                        daemon=True)

    # ---- layout ----------------------------------------------------------------------
    def _build(self) -> None:
        v = QtWidgets.QVBoxLayout(self)
        self.header = QtWidgets.QLabel("Connecting to %s ..." % self.port)
        self.header.setStyleSheet("font-weight: bold; font-size: 15px;")
        self.header.setWordWrap(True)
        v.addWidget(self.header)
        self.progress = QtWidgets.QLabel("")
        v.addWidget(self.progress)
        self.instruction = QtWidgets.QLabel("")
        self.instruction.setWordWrap(True)
        self.instruction.setStyleSheet("font-size: 14px; padding: 8px;")
        v.addWidget(self.instruction)
        self.live = QtWidgets.QLabel("")
        self.live.setStyleSheet("font-family: monospace;")
        self.live.setWordWrap(True)
        v.addWidget(self.live)
        self.message = QtWidgets.QLabel("")
        self.message.setWordWrap(True)
        v.addWidget(self.message)
        self.results = QtWidgets.QPlainTextEdit()
        self.results.setReadOnly(True)
        self.results.setStyleSheet("font-family: monospace;")
        self.results.setMinimumHeight(170)
        self.results.hide()
        v.addWidget(self.results)
        self.plot = ResidualPlot()
        self.plot.hide()
        v.addWidget(self.plot)
        v.addStretch(1)
        row = QtWidgets.QHBoxLayout()
        self.field_label = QtWidgets.QLabel("")
        self.field = QtWidgets.QLineEdit()
        self.field.setMaximumWidth(120)
        self.field.returnPressed.connect(self._next)
        row.addWidget(self.field_label)
        row.addWidget(self.field)
        row.addStretch(1)
        self.give_up = QtWidgets.QPushButton("Give up")
        self.give_up.clicked.connect(self._give_up)
        self.next_button = QtWidgets.QPushButton("Next")
        self.next_button.setDefault(True)
        self.next_button.clicked.connect(self._next)
        row.addWidget(self.give_up)
        row.addWidget(self.next_button)
        v.addLayout(row)
        self._waiting(True)

    def _waiting(self, waiting: bool) -> None:
        self.next_button.setEnabled(not waiting)
        self.field.setEnabled(not waiting)

    # ---- the worker ------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def _work(self) -> None:
        try:
            run_calibration(self.port, self.procedure, self._bridge, self.store,
                            technician=self.technician, masses_kg=self.masses_kg,
                            distance_m=self.distance_m)
            self._bridge.done.emit("")
        except Exception as exc:  # shown in the window; the worker must not die silently
            self._bridge.done.emit(str(exc) or type(exc).__name__)

    # ---- what the procedure says -----------------------------------------------------
    def _on_say(self, text: str) -> None:
        t = text.strip()
        if t.startswith("REFUSED:"):
            self.message.setStyleSheet("color: #d62728; font-weight: bold;")
            self.message.setText("Step refused: " + t[len("REFUSED:"):].strip())
            self._shot("refused")
        elif t.startswith("walker "):
            self.header.setText("%s calibration — %s" % (TITLES[self.procedure], t))
        elif re.match(r"^(Step \d+|Position \d|Roll \d|Last step)", t):
            self._step_no += 1
            self.instruction.setText(t)
            self.progress.setText("Step %d" % self._step_no)
            self.message.setText("")
            self.live.setText("")
            self.step_shown.emit(t)
        elif t.startswith(("load:", "accel:", "encoder:")) and "," in t:
            self._in_results = True
            self.result_lines = [t]
        elif self._in_results:
            self.result_lines.append(text)
        elif t.startswith(("saved", "written", "not saved")):
            self.message.setStyleSheet("color: #2ca02c;")
            self.message.setText(t)
        elif t:
            if not self.instruction.text():
                self.instruction.setText(t)
            else:
                self.message.setStyleSheet("")
                self.message.setText(t)

    def _on_live(self, text: str) -> None:
        first = not self.live.text()
        self.live.setText("Live reading — waiting for it to be steady:\n" + text.strip())
        if first:
            self._shot("live")

    def _on_ask(self, prompt: str, default: str) -> None:
        p = prompt.strip()
        self.field.setText(default)
        numeric = bool(default) and re.match(r"^[\d.]+$", default) is not None
        self.field.setVisible(numeric)
        self.field_label.setVisible(numeric)
        self.field_label.setText(p.split(",")[0] if numeric else "")
        if p.startswith("save this calibration"):
            self._show_results()
            self.next_button.setText("Save")
            self.give_up.setText("Discard")
        elif p.startswith("redo this step"):
            self.next_button.setText("Redo")
        elif numeric and "distance" in p:
            self.instruction.setText("Measure the distance you will roll the walker "
                                     "(5 m or more) and enter it.")
            self.next_button.setText("Next")
        else:
            self.next_button.setText("Done" if "mass placed" not in p else "Placed")
        self._prompt = p
        self._waiting(False)
        self.next_button.setFocus()
        self._shot("step")

    def _show_results(self) -> None:
        self.progress.setText("Result")
        self.instruction.setText("The fit, its standard errors and its residuals. "
                                 "Save it as the walker's calibration?")
        self.live.setText("")
        self.results.setPlainText("\n".join(self.result_lines))
        self.results.show()
        residuals, unit = [], ""
        for line in self.result_lines:
            m = re.match(r"\s*residuals \((\w+)\): (.*)", line)
            if m:
                unit = m.group(1)
                residuals = [float(v) for v in m.group(2).split()]
        self.plot.show_residuals(residuals, unit)
        self.plot.show()

    def _on_done(self, error: str) -> None:
        self._waiting(True)
        self.error = error or None
        self.finished_ok = not error
        if error:
            self.message.setStyleSheet("color: #d62728; font-weight: bold;")
            self.message.setText(error)
        self.give_up.setText("Close")
        self.give_up.setEnabled(True)
        self._shot("done")

    # ---- the technician's answers ----------------------------------------------------
    def _next(self) -> None:
        if not self.next_button.isEnabled():
            return
        self._waiting(True)
        prompt = getattr(self, "_prompt", "")
        text = "y" if prompt.startswith("save this") else (
            self.field.text() if self.field.isVisible() else "")
        if prompt.startswith("redo"):
            self.message.setText("")
        self._bridge.answer(text)

    def _give_up(self) -> None:
        if not self._thread.is_alive():
            self.accept() if self.finished_ok else self.reject()
            return
        prompt = getattr(self, "_prompt", "")
        if self.next_button.isEnabled():
            self._waiting(True)
            self._bridge.answer("n" if prompt.startswith("save this") else "q")
        else:
            self._bridge.cancelled = True

    def closeEvent(self, event) -> None:
        self._bridge.cancelled = True
        if self._thread.is_alive() and self.next_button.isEnabled():
            self._bridge.answer("q")
        super().closeEvent(event)

    def _shot(self, kind: str) -> None:
        if not self.screenshots:
            return
        import pathlib

        folder = pathlib.Path(self.screenshots)
        folder.mkdir(parents=True, exist_ok=True)
        name = folder / ("calibration-%s-%02d-%s.png" % (self.procedure, len(self.shots) + 1,
                                                        kind))
        self.shots.append(str(name))
        self.layout().activate()  # lay out the texts just set before taking the picture
        self.grab().save(str(name))  # no processEvents here: it would re-enter handlers


def run_wizard(procedure: str, port: str, store, technician=None, masses_kg=(10.0, 20.0),
               distance_m: float = 5.0, screenshots=None) -> int:
    """Show the wizard until it is closed; 0 if a calibration was made, else 2."""
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    from host.gui.theme import apply_application_theme
    apply_application_theme(app)
    wizard = CalibrationWizard(procedure, port, store, technician, masses_kg, distance_m,
                               screenshots)
    wizard.show()
    wizard.start()
    app.exec()
    if wizard.error:
        raise UserError(wizard.error)
    return 0 if wizard.finished_ok else 2
