"""``walkerlab workbench``: open the Workbench window (optionally run, screenshot, quit)."""
from __future__ import annotations

import os
import signal
import sys

from host.errors import UserError


def open_workbench(files=(), models_dir=None, monitor=None):
    """A Workbench window in the running application (the monitor's menu uses this)."""
    from host.workbench.window import WorkbenchWindow

    window = WorkbenchWindow(files, models_dir, monitor=monitor)
    window.show()
    return window


def run_workbench(files=(), models_dir=None, screenshot: str | None = None,
                  after_s: float | None = None, run_specs=(), tab: str = "evaluate",
                  feature_set: str = "cop") -> int:
    """Open the workbench; returns the exit status.

    files: recordings to list (ticked). run_specs: ModelSpecs to evaluate at start, one
    run each (so a screenshot shows results). screenshot: save a PNG of the window
    `after_s` seconds after the runs finished, showing `tab` ('evaluate' or
    'models'), and quit without touching saved settings.
    """
    from PySide6 import QtCore

    from host.gui.startup import check_screenshot_path, qt_application
    from host.workbench import catalog
    from host.workbench.window import WorkbenchWindow

    for f in files:
        if not os.path.exists(f):
            raise UserError("%s: no such file" % f)
        if not os.path.isdir(f):
            catalog.describe_recording(f)  # a one-line error before any window opens
    check_screenshot_path(screenshot)
    if tab not in ("evaluate", "models"):
        raise UserError("--tab is evaluate or models")
    for spec in run_specs:
        spec.check()
    app = qt_application()
    window = WorkbenchWindow([f for f in files if not os.path.isdir(f)], models_dir,
                             persist=not screenshot, restore_layout=not screenshot)
    status = {"code": 0}
    old_sigint = signal.getsignal(signal.SIGINT)
    try:
        window.show()
        ev = window.evaluate
        for f in files:  # checked in the background, the window showing progress
            if os.path.isdir(f):
                ev.recordings.wait_idle()  # one folder at a time
                ev.add_folder(f)
        ev.recordings.wait_idle()  # listed before any run or screenshot
        ev.feature_combo.setCurrentIndex(max(0, ev.feature_combo.findData(feature_set)))
        for spec in run_specs:
            ev.kind_combo.setCurrentIndex(ev.kind_combo.findText(spec.kind))
            ev.param_form.set_values(spec.params)
            if not ev.start_run():
                status["code"] = 2
                break
            ev.wait_idle()
        if run_specs and ev.runs:
            ev.select_run(0)
        window.tabs.setCurrentWidget(window.models if tab == "models" else ev)
        if tab == "models" and window.models.model_entries:
            window.models.models_table.selectRow(0)
        if screenshot:
            def shoot():
                window.repaint()
                if not window.grab().save(screenshot):
                    print("walkerlab workbench: error: cannot write %s" % screenshot,
                          file=sys.stderr)
                    status["code"] = 2
                window.close()
            QtCore.QTimer.singleShot(int(1000 * (after_s if after_s is not None else 1.0)),
                                     shoot)
        signal.signal(signal.SIGINT, lambda *_: window.close())
        wake = QtCore.QTimer()
        wake.start(200)
        wake.timeout.connect(lambda: None)
        if status["code"] == 0 or not screenshot:
            app.exec()
        wake.stop()
        if window.errors_shown and screenshot:
            print("walkerlab workbench: error: %s" % window.errors_shown[-1], file=sys.stderr)
            status["code"] = 2
    finally:
        signal.signal(signal.SIGINT, old_sigint)
        window.deleteLater()
        QtCore.QCoreApplication.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
    return status["code"]
