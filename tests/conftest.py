"""Every test: offscreen Qt, and settings and the model registry in temporary places
(never the user's)."""
import os

os.environ["QT_QPA_PLATFORM"] = "offscreen"  # before pytest-qt creates the QApplication

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path, monkeypatch):
    path = tmp_path / "walkerlab-settings.ini"
    monkeypatch.setenv("WALKERLAB_SETTINGS", str(path))
    monkeypatch.setenv("WALKERLAB_MODELS", str(tmp_path / "default-models"))
    monkeypatch.delenv("WALKERLAB_THEME", raising=False)
    return path
