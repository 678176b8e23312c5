"""GUI tests (offscreen Qt and temporary settings come from tests/conftest.py)."""
import pytest


@pytest.fixture(scope="session")
def model_path(tmp_path_factory):
    """A small HMM trained on two simulated free-living subjects (a few seconds)."""
    from host.datasets import load_sessions
    from host.simulate import simulate_to_files
    from recognizers.hmm_recognizer import HMMRecognizer

    folder = tmp_path_factory.mktemp("gui-model")
    paths = simulate_to_files("free", 2, 100, folder, duration_s=150, progress=False)
    sessions = load_sessions(paths, "cop")
    model = HMMRecognizer().fit([s.X for s in sessions], [s.y for s in sessions],
                                feature_set="cop")
    return str(model.save(folder / "model.npz"))


@pytest.fixture(scope="session")
def bmm_model_path(tmp_path_factory):
    """An online BMM recognizer trained on two simulated free-living subjects."""
    from host.datasets import load_sessions
    from host.simulate import simulate_to_files
    from recognizers import BMMRecognizer

    folder = tmp_path_factory.mktemp("gui-bmm")
    paths = simulate_to_files("free", 2, 100, folder, duration_s=150, progress=False)
    sessions = load_sessions(paths, "cop")
    model = BMMRecognizer(n_init=1).fit([s.X for s in sessions], [s.y for s in sessions],
                                        feature_set="cop")
    return str(model.save(folder / "bmm.npz"))


@pytest.fixture(scope="session")
def recording_path(tmp_path_factory):
    """A 20 s simulated recording (subject seed 21 walks from the start)."""
    from host.simulate import simulate_to_files

    folder = tmp_path_factory.mktemp("gui-recording")
    return str(simulate_to_files("free", 1, 21, folder, duration_s=20, progress=False)[0])


@pytest.fixture
def make_window(qtbot):
    """make_window(**controller_kwargs) -> a shown MainWindow; closed after the test."""
    from host.gui.app import MainWindow
    from host.gui.controller import MonitorController

    made = []

    def make(controller=None, **kwargs):
        window = MainWindow(controller or MonitorController(**kwargs))
        qtbot.addWidget(window)
        window.show()
        made.append(window)
        return window

    yield make
    for window in made:
        window.close()
