"""Models carry their provenance and metrics; `walkerlab models` lists the registry."""
import json
import os

import pytest

from host.cli import main as walkerlab
from host.evaluate import ModelSpec, evaluate_recordings
from host.models import describe_model, list_models
from host.simulate import simulate_to_files
from recognizers import load_recognizer


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    out = tmp_path_factory.mktemp("sessions")
    return [str(p) for p in simulate_to_files("exp2", 3, 71, out, duration_s=60,
                                              progress=False)]


def test_train_stores_provenance_and_loso_metrics(recordings, tmp_path, monkeypatch, capsys):
    registry = tmp_path / "registry"
    monkeypatch.setenv("WALKERLAB_MODELS", str(registry))
    assert walkerlab(["train", "--quiet", "--evaluate", "--param", "tau=500",
                      *recordings]) == 0
    (path,) = registry.glob("hmm-cop-*.npz")  # saved into the registry by default
    entry = describe_model(path)
    meta = entry.metadata
    assert entry.kind == "hmm" and entry.feature_set == "cop" and entry.runs_on_device
    assert meta["training_recordings"] == [os.path.abspath(p) for p in recordings]
    assert meta["label_track"] == ["simulator"] and meta["params"] == {"tau": 500}
    assert meta["label_set"] == sorted(entry.classes) and meta["app_version"]
    expected = evaluate_recordings(recordings, [ModelSpec("hmm", {"tau": 500})],
                                   transition_window=25)[0]
    got = meta["metrics"]["accuracy_by_window"]
    assert {int(w): v for w, v in got.items()} == expected["accuracy_by_window"]
    # The metadata survive loading and saving again.
    model = load_recognizer(path)
    assert model.metadata_ == meta
    assert describe_model(model.save(tmp_path / "copy.npz")).metadata == meta
    capsys.readouterr()
    assert walkerlab(["models"]) == 0
    listing = capsys.readouterr().out
    assert str(path) in listing and "LOSO w0" in listing and "runs on the walker" in listing
    assert walkerlab(["models", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["metadata"] == meta


def test_the_registry_skips_files_that_are_not_models(tmp_path):
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    entries, problems = list_models(tmp_path)
    assert entries == [] and len(problems) == 1 and "not a WalkerLab model" in problems[0]
    assert list_models(tmp_path / "absent") == ([], [])
