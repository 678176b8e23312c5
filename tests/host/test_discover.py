"""`walkerlab discover` end to end on a simulated free-living recording."""
import numpy as np
import pytest

from host.cli import main
from host.discover import discover, window_means
from host.recording.labels import read_tracks
from host.simulate import simulate_to_files


@pytest.fixture(scope="module")
def free_recording(tmp_path_factory):
    out = tmp_path_factory.mktemp("free")
    return str(simulate_to_files("free", 1, 3, str(out), rate_hz=50, duration_s=600,
                             progress=False)[0])


def test_window_means_exact():
    X = np.array([[1.0], [3.0], [10.0], [10.0]])
    F, starts = window_means(X, np.array([0.0, 0.5, 1.0, 1.5]), 1.0)
    np.testing.assert_allclose(F, [[2.0, 1.0], [10.0, 0.0]])
    np.testing.assert_allclose(starts, [0.0, 1.0])


def test_discover_writes_a_track_matching_the_activities(free_recording):
    res = discover(free_recording, max_regimes=8, progress=False)
    tracks = read_tracks(free_recording)
    assert "discovered" in tracks and tracks["discovered"].source == "model"
    seg = tracks["discovered"].segments()
    # segments tile the windows in order, one label per window
    assert len(seg) == len(res.track)
    assert all(a[1] == pytest.approx(b[0]) for a, b in zip(seg, seg[1:]))
    assert 2 <= res.n_regimes <= 8
    # clearly better than the best constant labelling (every window the commonest
    # activity) of the simulator's activities, annotation slop included
    truth = tracks["simulator"].labels_at(np.array([(a[0] + a[1]) / 2 for a in seg]))
    _, counts = np.unique(truth[truth != ""], return_counts=True)
    constant_error = 1.0 - counts.max() / counts.sum()
    assert res.error_vs_truth is not None and res.error_vs_truth < constant_error - 0.05


def test_cli_discover_and_user_error(free_recording, capsys):
    assert main(["discover", free_recording, "--max-regimes", "6", "--track", "d2",
                 "--quiet"]) == 0
    assert "regime(s)" in capsys.readouterr().out
    assert "d2" in read_tracks(free_recording)
    assert main(["discover", free_recording, "--max-regimes", "1", "--quiet"]) == 2
    assert "max-regimes" in capsys.readouterr().err
