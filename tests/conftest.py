"""Every test: offscreen Qt, and settings, the model registry and the feature cache in
temporary places (never the user's)."""
import gc
import os

os.environ["QT_QPA_PLATFORM"] = "offscreen"  # before pytest-qt creates the QApplication

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path, monkeypatch):
    path = tmp_path / "walkerlab-settings.ini"
    monkeypatch.setenv("WALKERLAB_SETTINGS", str(path))
    monkeypatch.setenv("WALKERLAB_MODELS", str(tmp_path / "default-models"))
    monkeypatch.setenv("WALKERLAB_FEATURE_CACHE", str(tmp_path / "feature-cache"))
    monkeypatch.delenv("WALKERLAB_THEME", raising=False)
    return path


@pytest.fixture(autouse=True)
def qt_garbage_in_gui_thread(request):
    """As the app does (host.gui.startup.collect_garbage_in_gui_thread): no automatic
    collection while a Qt test runs, so no thread of it frees a widget off the GUI thread;
    the test's garbage is collected here, in the main thread, and collection turned back
    on for the tests that follow."""
    uses_qt = "qtbot" in request.fixturenames or "qapp" in request.fixturenames
    if uses_qt:
        gc.collect()
        gc.disable()
    yield
    if uses_qt or not gc.isenabled():
        gc.collect()
        gc.enable()


def pytest_collection_modifyitems(session, config, items):
    """The benchmarks' quick modes (tests/benchmarks) run last: they run whole scripts
    end to end, so a failing unit test shows first, and they find the numba kernels
    that the unit tests compiled already in numba's on-disk cache, as a user's second
    run does (a fresh clone's first run of bench_hdp --quick spends most of its time
    compiling)."""
    last = os.sep + "benchmarks" + os.sep
    items.sort(key=lambda item: last in str(item.path))  # stable: order kept otherwise
