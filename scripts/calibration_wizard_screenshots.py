"""Screenshots of every step of the calibration wizard, for docs/calibration.md.

Runs `walkerlab calibrate --gui`'s wizard offscreen against a virtual walker on a
calibration bench whose technician makes one mistake per procedure (so the refusal is
shown too), presses each step's button when it is enabled, and saves a picture of each
step into docs/images/calibration/.

    QT_QPA_PLATFORM=offscreen python scripts/calibration_wizard_screenshots.py
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("WALKERLAB_THEME", "light")

from PySide6 import QtWidgets  # noqa: E402

from host.calibrate import CalibrationStore  # noqa: E402
from host.gui.calibration_wizard import CalibrationWizard  # noqa: E402
from host.gui.theme import apply_application_theme  # noqa: E402
from host.virtual_port import bench_walker  # noqa: E402

MISTAKES = {
    "load": {2: lambda b: b.place_mass(10.0, cell=1)},  # the mass over the wrong leg
    "accel": {3: lambda b: b.orient(1, -1)},  # laid on the wrong side
    "encoder": {},
}


def drive(wizard: CalibrationWizard, app, timeout_s: float = 120.0) -> None:
    """Press the wizard's button whenever it waits, until the procedure ends."""
    end = time.monotonic() + timeout_s
    wizard.start()
    while wizard._thread.is_alive() and time.monotonic() < end:
        app.processEvents()
        if wizard.next_button.isEnabled():
            time.sleep(0.05)
            app.processEvents()
            wizard.next_button.click()
        time.sleep(0.02)
    app.processEvents()


def main() -> int:
    out = ROOT / "docs" / "images" / "calibration"
    for old in out.glob("calibration-*.png"):
        old.unlink()
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    apply_application_theme(app)
    for procedure in ("load", "accel", "encoder"):
        walker, technician, _ = bench_walker(2, speed=6.0, mistakes=MISTAKES[procedure])
        store = CalibrationStore(tempfile.mkdtemp())
        with walker:
            wizard = CalibrationWizard(procedure, walker.path, store, technician,
                                       masses_kg=(10.0, 20.0), screenshots=str(out))
            wizard.show()
            drive(wizard, app)
            print(procedure, "ok" if wizard.finished_ok else wizard.error, len(wizard.shots),
                  "screenshots")
            wizard.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
