"""Qt widgets caught in reference cycles are freed in the GUI thread, never in a worker.

Regression: the workbench hung in CI when Dask's IO-loop thread happened to trigger a
cycle collection that freed a closed window's menu; Qt destroyed it off the GUI thread
and deadlocked.  The app turns automatic collection off and collects on a GUI timer.
"""
import gc
import threading

from PySide6 import QtWidgets

from host.gui.startup import qt_application

from gui_helpers import HANG_GUARD_MS

freed_in_threads: list[int] = []


class _Widget(QtWidgets.QWidget):
    def __del__(self):
        freed_in_threads.append(threading.get_ident())


def _make_garbage_cycle() -> None:
    widget = _Widget()
    holder = {"widget": widget}
    holder["self"] = holder  # a cycle: only the cycle collector can free it
    widget.holder = holder


def _allocate_cycles_in_a_worker() -> None:
    def allocate():
        for _ in range(20000):  # far beyond gc's generation-0 threshold of 700 (2000 on 3.13)
            a = []
            a.append(a)

    worker = threading.Thread(target=allocate)
    worker.start()
    worker.join()


def test_cycles_holding_widgets_are_collected_by_the_gui_thread_only(qtbot):
    gc.enable()
    qt_application()
    assert not gc.isenabled(), "automatic collection must be off in a WalkerLab app"
    freed_in_threads.clear()
    _make_garbage_cycle()
    _allocate_cycles_in_a_worker()
    assert freed_in_threads == [], "a worker thread's allocations freed the widget"
    # ...and the GUI timer (1 s) does free it, in this (the GUI) thread.
    qtbot.waitUntil(lambda: freed_in_threads != [], timeout=HANG_GUARD_MS)
    assert freed_in_threads == [threading.get_ident()]
