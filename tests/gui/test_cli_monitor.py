"""`walkerlab monitor`: the window when there is a display, the terminal otherwise."""
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def _run(args, env, timeout=600):  # a ceiling against hangs: start-up is slow when busy
    return subprocess.run([sys.executable, "-m", "host.cli", "monitor", *args],
                          capture_output=True, text=True, env=env, timeout=timeout)


def test_screenshot_of_the_window_after_some_seconds(tmp_path, model_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen",
               WALKERLAB_SETTINGS=str(tmp_path / "settings.ini"))
    out = tmp_path / "monitor.png"
    result = _run(["--screenshot", str(out), "--after", "2.5", "--model", model_path,
                   "--seed", "21"], env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    # the terminal says which port and which model the window uses
    said = result.stdout.splitlines()
    assert "walkerlab monitor: model: %s, hmm" % model_path in said
    assert [line for line in said if line.startswith("walkerlab monitor: port: ")]
    from PySide6 import QtGui
    image = QtGui.QImage(str(out))
    assert (image.width(), image.height()) == (1400, 900)
    assert not (tmp_path / "settings.ini").exists()  # screenshots leave settings alone


def test_without_a_display_it_falls_back_to_the_terminal_monitor(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    if sys.platform in ("win32", "darwin"):
        pytest.skip("these platforms always have a display")
    result = _run(["--duration", "1"], env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr.startswith(
        "no display: showing the terminal monitor (use --headless to skip this message)")
    assert "WalkerLab monitor" in result.stdout
    refused = _run(["--screenshot", str(tmp_path / "x.png")], env)
    assert refused.returncode == 2 and "needs a display" in refused.stderr


def test_a_fresh_start_runs_the_shipped_model(tmp_path, qtbot):
    """No --model and no remembered one: the monitor loads the default model."""
    from host.gui.app import MainWindow
    from host.gui.controller import MonitorController
    from host.models import DEFAULT_MODEL

    window = MainWindow(MonitorController(), persist=False)
    qtbot.addWidget(window)
    assert window.load_model(str(DEFAULT_MODEL), remember=False)
    assert "Default model" in window.model_panel.name.text()
    assert "simulated" in window.model_panel.detail.text()
    window.close()
