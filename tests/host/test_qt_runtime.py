"""PySide6 6.12.0 on CPython 3.11 aborts after ~600 signal emits (bool_dealloc).

The project requires Python >= 3.12 (pyproject.toml), where bools are immortal. This
test runs the reproducer in a subprocess, so a regression shows as a failure here
instead of killing the test run, and adds the 1,000 setData calls of a live plot.
"""
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import os
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import numpy as np
    from PySide6 import QtCore, QtWidgets
    import pyqtgraph as pg

    app = QtWidgets.QApplication([])

    class Emitter(QtCore.QObject):
        changed = QtCore.Signal(bool)
        ticked = QtCore.Signal()

    got = []
    e = Emitter()
    e.changed.connect(lambda flag: got.append(flag))
    e.ticked.connect(lambda: None)
    for i in range(10_000):
        e.changed.emit(i % 2 == 0)
        e.ticked.emit()
    assert len(got) == 10_000 and got[:2] == [True, False]

    plot = pg.PlotWidget()
    curve = plot.plot(pen=pg.mkPen(width=1))
    x = np.arange(1500, dtype=float)
    for i in range(1_000):
        curve.setData(x, np.sin(x / 50 + i))
    app.processEvents()
    print("ok", flush=True)
""")


def test_ten_thousand_signal_emits_and_thousand_setdata_calls_survive():
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True,
                            text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")


def test_interpreter_is_one_the_project_supports():
    # PySide6 6.12.0 + CPython 3.11 is the crashing pair; pyproject.toml requires 3.12.
    assert sys.version_info >= (3, 12)
