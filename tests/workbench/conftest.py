"""Workbench tests: small simulated exp2 data."""
import os
import shutil

import pytest


@pytest.fixture(scope="session")
def exp2_paths(tmp_path_factory):
    """Three simulated exp2 subjects (S000-S002), 40 s each, simulator labels only."""
    from host.simulate import simulate_to_files

    folder = tmp_path_factory.mktemp("wb-exp2")
    return [str(p) for p in simulate_to_files("exp2", 3, 0, folder, duration_s=40,
                                               progress=False)]


@pytest.fixture
def varied_paths(exp2_paths, tmp_path):
    """Copies of exp2_paths: the third on walker W2, the first with alice's labels."""
    import h5py

    from host.recording import LabelTrack, open_recording
    from host.recording.labels import save_tracks

    out = []
    for p in exp2_paths:
        q = tmp_path / "varied" / os.path.basename(p)
        q.parent.mkdir(exist_ok=True)
        shutil.copy(p, q)
        out.append(str(q))
    with h5py.File(out[2], "r+") as f:  # a second walker (the simulator has one)
        f.attrs["walker_id"] = "W2"
    sim = open_recording(out[0]).labels["simulator"]
    save_tracks(out[0], [LabelTrack.from_segments("alice", sim.segments(), annotator="alice",
                                                  source="human")])
    return out


@pytest.fixture
def open_bench(qtbot, tmp_path):
    """open_bench(paths, size=(1400, 800)) -> a shown WorkbenchWindow listing paths (all
    ticked), with a temporary registry and no saved settings; closed after the test."""
    from host.workbench.window import WorkbenchWindow

    made = []

    def make(paths=(), size=(1400, 800)):
        window = WorkbenchWindow(list(paths), models_dir=str(tmp_path / "registry"),
                                 persist=False, restore_layout=False)
        qtbot.addWidget(window)
        window.resize(*size)
        window.show()
        made.append(window)
        return window

    yield make
    for window in made:
        window.close()
