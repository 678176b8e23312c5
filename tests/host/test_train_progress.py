"""`walkerlab train` shows a long fit's own progress bar (a recognizer with a `verbose`
setting) unless --quiet, and saves the model with the bar off."""
from __future__ import annotations

import pytest

from host.cli import main
from host.models import load_model
from host.simulate import simulate_to_files


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    folder = tmp_path_factory.mktemp("train_progress")
    return [str(p) for p in simulate_to_files("exp1", 2, 1, folder, progress=False)]


@pytest.mark.parametrize("quiet", [False, True])
def test_shdp_training_shows_the_supervised_hdp_s_iterations(recordings, tmp_path, capsys,
                                                             quiet):
    out = tmp_path / "shdp.npz"
    argv = ["train", *recordings, "--recognizer", "shdp", "--param", "max_iter=4",
            "--out", str(out)]
    assert main(argv + (["--quiet"] if quiet else [])) == 0
    err = capsys.readouterr().err
    # the bar names the estimator, counts the iterations and shows the bound
    assert ("SupervisedHDP:" in err and "/4" in err and "bound " in err) is not quiet
    model = load_model(out)
    assert model.verbose is False and model.max_iter == 4
