"""`walkerlab workbench` from the command line: a screenshot after a run, clear errors."""
import os
import subprocess
import sys

import pytest


def _walkerlab(*args, tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen",
               WALKERLAB_SETTINGS=str(tmp_path / "settings.ini"))
    return subprocess.run([sys.executable, "-m", "host.cli", "workbench", *args],
                          capture_output=True, text=True, env=env, timeout=600)


def test_screenshot_after_a_run(exp2_paths, tmp_path):
    from PySide6 import QtGui

    shot = tmp_path / "bench.png"
    proc = _walkerlab(os.path.dirname(exp2_paths[0]), "--models", str(tmp_path / "m"),
                      "--run", "hmm", "--param", "n_bins=12", "--screenshot", str(shot),
                      "--after", "0.2", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    image = QtGui.QImage(str(shot))
    assert image.width() >= 1200 and image.height() >= 800


@pytest.mark.parametrize("args, message", [
    (["{junk}"], "junk.h5"),
    (["{missing}"], "no such file"),
    (["--run", "nosuchkind"], "nosuchkind"),
    (["--after", "2"], "--after goes with --screenshot"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    junk = tmp_path / "junk.h5"
    junk.write_text("not a recording")
    args = [a.format(junk=junk, missing=tmp_path / "missing.h5") for a in args]
    proc = _walkerlab(*args, "--screenshot", str(tmp_path / "x.png"), tmp_path=tmp_path) \
        if "--after" not in args else _walkerlab(*args, tmp_path=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.png").exists()
