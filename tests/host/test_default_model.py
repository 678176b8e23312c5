"""The default model ships with the package and the monitor runs it at once."""
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from host.models import DEFAULT_MODEL, describe_training, is_default_model, load_default_model

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_model_is_package_data_with_its_provenance():
    assert DEFAULT_MODEL.is_file() and DEFAULT_MODEL.stat().st_size < 100_000
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "*.npz" in data["package-data"]["*"]
    assert (DEFAULT_MODEL.parent / "__init__.py").is_file()  # a package: installed
    model = load_default_model()
    assert model.kind == "hmm" and model.feature_set_ == "cop"
    assert model.sample_rate_hz_ == 50.0
    (train,) = model.metadata_["history"]
    assert train["operation"] == "train"
    assert train["command"] == "python scripts/train_default_model.py"
    assert "scripts/train_default_model.py" in describe_training(model)
    assert is_default_model(str(DEFAULT_MODEL))
    # measured on the monitor's own virtual person, which it never trained on
    held = model.metadata_["held_out"]
    assert "seed 21" in held["recording"] and held["filter_accuracy"] > 0.6


def test_the_headless_monitor_recognises_with_the_default_model(tmp_path):
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
           "WALKERLAB_SETTINGS": str(tmp_path / "s.ini")}
    result = subprocess.run([sys.executable, "-m", "host.cli", "monitor", "--headless",
                             "--duration", "3"], capture_output=True, text=True, env=env,
                            timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "activity: " in result.stdout and "no model loaded" not in result.stdout


@pytest.mark.slow
def test_the_training_script_regenerates_the_shipped_model():
    result = subprocess.run([sys.executable, "scripts/train_default_model.py", "--check"],
                            capture_output=True, text=True, cwd=ROOT, timeout=120,
                            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "matches a fresh training" in result.stdout
