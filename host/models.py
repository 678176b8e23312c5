"""The model registry: saved recognizers with where they came from and how good they are.

A model file (``.npz``, see ``recognizers.base``) carries a ``metadata`` dict in its
JSON header; ``walkerlab train`` fills it with :func:`training_metadata` (training
recordings, label track and set, feature set, settings, app version, the command,
and leave-one-subject-out metrics when asked for).  The registry is simply a folder
of such files (default :func:`default_models_dir`), listed by :func:`list_models`
without loading any model arrays.
"""
from __future__ import annotations

import datetime as _dt
import os
import pathlib
from dataclasses import dataclass, field

from host.errors import UserError


def default_models_dir() -> pathlib.Path:
    """``$WALKERLAB_MODELS``, else ``$XDG_DATA_HOME/walkerlab/models`` (~/.local/share)."""
    env = os.environ.get("WALKERLAB_MODELS")
    if env:
        return pathlib.Path(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"),
                                                           ".local", "share")
    return pathlib.Path(base) / "walkerlab" / "models"


def app_version() -> str:
    from host.recording.writer import walkerlab_version

    return walkerlab_version()


def training_metadata(*, files, label_track, label_set, feature_set, kind, params,
                      command: str = "", metrics: dict | None = None) -> dict:
    """The provenance a trained model carries (JSON-serialisable)."""
    meta = {
        "trained_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "app_version": app_version(),
        "recognizer": kind,
        "params": dict(params),
        "feature_set": feature_set,
        "label_track": label_track,
        "label_set": sorted(str(c) for c in label_set),
        "training_recordings": [os.path.abspath(os.fspath(f)) for f in files],
        "command": command,
    }
    if metrics is not None:
        meta["metrics"] = metrics
    return meta


@dataclass
class ModelEntry:
    """One model file of the registry, described from its header."""

    path: str
    kind: str
    feature_set: str | None
    classes: list[str]
    metadata: dict = field(default_factory=dict)

    @property
    def trained_at(self) -> str:
        return self.metadata.get("trained_at", "")

    @property
    def n_recordings(self) -> int:
        return len(self.metadata.get("training_recordings", []))

    @property
    def accuracy(self) -> dict:
        """LOSO accuracy by window (str keys) if the model was evaluated when trained."""
        return (self.metadata.get("metrics") or {}).get("accuracy_by_window", {})

    @property
    def runs_on_device(self) -> bool:
        """Deployable with ``walkerlab deploy-model`` (the firmware runs discrete HMMs)."""
        return self.kind == "hmm"


def describe_model(path) -> ModelEntry:
    """A registry entry for one model file (ModelFormatError if it is not one)."""
    from recognizers.base import read_model_header

    header = read_model_header(path)
    return ModelEntry(str(path), header["kind"], header.get("feature_set"),
                      header["classes"], header.get("metadata") or {})


def list_models(directory=None) -> tuple[list[ModelEntry], list[str]]:
    """(entries newest first, problems) for every ``*.npz`` in the folder."""
    from recognizers.base import ModelFormatError

    folder = pathlib.Path(directory) if directory is not None else default_models_dir()
    if not folder.exists():
        return [], []
    if not folder.is_dir():
        raise UserError("%s is not a folder" % folder)
    entries, problems = [], []
    for path in sorted(folder.glob("*.npz")):
        try:
            entries.append(describe_model(path))
        except ModelFormatError as exc:
            problems.append(str(exc))
    entries.sort(key=lambda e: (e.trained_at, e.path), reverse=True)
    return entries, problems
