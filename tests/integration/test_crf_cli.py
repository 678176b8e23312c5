"""`walkerlab train/evaluate --recognizer crf`, and a CRF model file driving replay."""
import json

import numpy as np
import pytest

from host.cli import main as walkerlab
from host.replay import replay_recording
from host.simulate import simulate_to_files
from recognizers import load_recognizer
from recognizers.crf_recognizer import CRFRecognizer


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    out = tmp_path_factory.mktemp("sessions")
    return [str(p) for p in simulate_to_files("exp2", 3, 71, out, duration_s=60,
                                              progress=False)]


def test_train_then_replay_runs_the_crf_filter_live(recordings, tmp_path, capsys):
    model = str(tmp_path / "crf.npz")
    assert walkerlab(["train", "--recognizer", "crf", "--feature-set", "loadcells",
                      "--param", "max_iterations=15", "--param", "transitions=self",
                      "--quiet", "--out", model, *recordings[:2]]) == 0
    crf = load_recognizer(model)
    assert isinstance(crf, CRFRecognizer) and crf.feature_set_ == "loadcells"
    assert crf.transitions == "self" and 0 < crf.crf_.n_iter_ <= 15
    _, result = replay_recording(recordings[2], crf)
    # the live pipeline's posteriors are the CRF filter over the replayed features
    np.testing.assert_allclose(result.posterior, crf.filter(result.features), atol=1e-12)
    assert tuple(result.classes) == tuple(crf.classes_)


def test_evaluate_reports_crf_accuracy_and_bad_params_exit_2(recordings, capsys):
    capsys.readouterr()
    assert walkerlab(["evaluate", "--quiet", "--json", "--recognizer", "crf",
                      "--param", "max_iterations=10", "--scheduler", "serial",
                      *recordings]) == 0
    (m,) = json.loads(capsys.readouterr().out)["models"]
    assert m["recognizer"] == "crf" and len(m["per_subject"]) == 3
    acc = m["accuracy_by_window"]
    assert 0.3 < acc["0"] <= acc["25"] <= 1.0
    assert walkerlab(["train", "--recognizer", "crf", "--param", "c2=-1", "--quiet",
                      "--out", "/tmp/never-written.npz", *recordings[:2]]) == 2
    err = capsys.readouterr().err
    assert "c2" in err and "Traceback" not in err
