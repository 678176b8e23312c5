"""`walkerlab train --recognizer bmm` then `walkerlab learn`: continued unlabelled learning."""
import numpy as np
import pytest

from host.cli import main as walkerlab
from host.datasets import load_features
from host.simulate import simulate_to_files
from recognizers import load_recognizer


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    out = tmp_path_factory.mktemp("sessions")
    return [str(p) for p in simulate_to_files("exp2", 3, 41, out, duration_s=90,
                                              progress=False)]


def test_learn_updates_a_bmm_model_in_place(recordings, tmp_path):
    model = str(tmp_path / "bmm.npz")
    assert walkerlab(["train", "--recognizer", "bmm", "--feature-set", "loadcells",
                      "--param", "init_frames=2000", "--quiet", "--out", model,
                      *recordings[:2]]) == 0
    before = load_recognizer(model)
    assert walkerlab(["learn", model, recordings[2], "--quiet"]) == 0
    after = load_recognizer(model)
    X, _ = load_features(recordings[2], "loadcells")
    assert after.bmm_.n_steps_ == before.bmm_.n_steps_ + len(X) > len(X) > 0
    assert not np.allclose(after.transmat_, before.transmat_)
    assert after.feature_set_ == "loadcells"


def test_learn_refuses_models_that_cannot_and_bad_files(recordings, tmp_path, capsys):
    model = str(tmp_path / "hmm.npz")
    assert walkerlab(["train", "--quiet", "--out", model, *recordings[:2]]) == 0
    capsys.readouterr()
    assert walkerlab(["learn", model, recordings[2], "--quiet"]) == 2
    assert "cannot learn from unlabelled data" in capsys.readouterr().err
    assert walkerlab(["learn", str(tmp_path / "missing.npz"), recordings[2]]) == 2
    assert "cannot load model" in capsys.readouterr().err
    bmm = str(tmp_path / "bmm.npz")
    assert walkerlab(["train", "--recognizer", "bmm", "--quiet", "--param", "n_init=1",
                      "--out", bmm, *recordings[:2]]) == 0
    saved = open(bmm, "rb").read()
    assert walkerlab(["learn", bmm, str(tmp_path / "nope.h5"), "--quiet"]) == 2
    assert open(bmm, "rb").read() == saved  # a failed update leaves the model untouched
