"""The layer contracts of pyproject.toml ([tool.importlinter]) hold: lint-imports passes.

They keep the domain vocabulary free of product code, the firmware free of host code,
the recognizers free of host and device code, the simulator imported only by the
commands that start it, and the workbench above the monitor (not the reverse).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.fail("lint-imports not installed (import-linter is in the dev extra)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([exe, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "BROKEN" not in proc.stdout


def test_the_simulator_registers_its_calibration_instead_of_being_imported():
    # calibration/ finds a virtual walker's factory calibration only once the
    # simulator is loaded (a fresh interpreter, nothing else imported).
    code = ("import calibration; a = calibration.calibration_for('SIM-3').source; "
            "import device.sim; b = calibration.calibration_for('SIM-3').source; "
            "print(a); print(b)")
    env = dict(os.environ, PYTHONPATH=str(ROOT), WALKERLAB_CALIBRATION_DIR=str(ROOT / "nowhere"))
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split("\n")
    assert out[0] == "nominal"
    assert out[1] == "virtual walker factory calibration"
