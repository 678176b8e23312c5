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
from host.outputs import OutputExistsError, check_free, exclusive_output


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


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def history_entry(operation: str, *, command: str = "", **details) -> dict:
    """One line of a model's history: what was done, when, by which version, how."""
    entry = {"operation": operation, "at": _now(), "app_version": app_version()}
    if command:
        entry["command"] = command
    entry.update({k: v for k, v in details.items() if v is not None})
    return entry


def append_history(model, operation: str, *, command: str = "", **details) -> dict:
    """Add an operation (train, learn, keep-learning, deploy...) to ``model.metadata_``."""
    meta = dict(getattr(model, "metadata_", None) or {})
    history = list(meta.get("history") or [])
    entry = history_entry(operation, command=command, **details)
    history.append(entry)
    meta["history"] = history
    model.metadata_ = meta
    return entry


def check_out_path(path, overwrite: bool, option: str = "--out") -> pathlib.Path:
    """Refuse to replace an existing model file unless asked to (``--overwrite``)."""
    path = pathlib.Path(path)
    if path.is_dir():
        raise UserError("%s %s is a folder; give a file name ending in .npz" % (option, path))
    check_free(path, overwrite)
    if path.suffix != ".npz":
        raise UserError("%s %s: model files end in .npz" % (option, path))
    return path


def save_model(model, path, *, overwrite: bool, operation: str | None = None,
               command: str = "", **details) -> pathlib.Path:
    """Save a recognizer (atomically, 0644) after adding ``operation`` to its history.

    Refuses to replace an existing file unless ``overwrite``, including one another
    command saved while this one ran (`host.outputs.exclusive_output`).
    """
    path = check_out_path(path, overwrite)
    if operation is not None:
        append_history(model, operation, command=command, **details)
    try:
        with exclusive_output(path, overwrite=overwrite) as tmp:
            model.save(tmp)
    except OSError as exc:
        raise UserError("cannot save the model to %s: %s" % (path, exc.strerror or exc)) \
            from None
    return path


def save_to_registry(model, stem: str) -> pathlib.Path:
    """Save ``model`` as a new file ``STEM-DATE-TIME.npz`` in the model registry.

    Never replaces a model: a name taken (by an earlier save in the same second, or
    another command at the same time) gets a ``-2``, ``-3``... suffix.
    """
    folder = default_models_dir()
    folder.mkdir(parents=True, exist_ok=True)
    name = "%s-%s" % (stem, _dt.datetime.now().strftime("%Y%m%d-%H%M%S"))
    for n in range(1, 1000):
        try:
            return save_model(model, folder / ("%s%s.npz" % (name, "-%d" % n if n > 1
                                                              else "")), overwrite=False)
        except OutputExistsError:
            continue
    raise UserError("cannot find a free model name %s-N.npz in %s" % (name, folder))


def load_model(path):
    """A saved recognizer, or UserError in one line.

    A file written before models recorded their sample rate gets the rate of its
    training recordings when they can still be read (else ``at_rate`` assumes
    50 Hz and warns).
    """
    from recognizers import ModelFormatError, load_recognizer

    path = os.fspath(path)
    if not os.path.exists(path):
        raise UserError("cannot load model %s: no such file" % path)
    try:
        model = load_recognizer(path)
    except ModelFormatError as exc:
        raise UserError("cannot load model: %s" % exc) from None
    except OSError as exc:
        raise UserError("cannot read model %s: %s" % (path, exc.strerror or exc)) from None
    if model.__dict__.get("sample_rate_hz_") is None:
        rate = _rate_of_recordings((model.metadata_ or {}).get("training_recordings") or [])
        if rate is not None:
            model.sample_rate_hz_ = rate
    return model


#: The model shipped with the package (scripts/train_default_model.py makes it).
DEFAULT_MODEL = pathlib.Path(__file__).resolve().parent / "data" / "default-model.npz"


def load_default_model():
    """The shipped model (so a fresh install recognises at once), or None if missing."""
    if not DEFAULT_MODEL.exists():
        return None
    return load_model(DEFAULT_MODEL)


def is_default_model(path) -> bool:
    try:
        return path is not None and os.path.samefile(path, DEFAULT_MODEL)
    except OSError:
        return False


def describe_training(model) -> str:
    """One line on how a model was trained, from its metadata (for the monitor)."""
    meta = getattr(model, "metadata_", None) or {}
    if meta.get("description"):
        return str(meta["description"])
    n = len(meta.get("training_recordings") or [])
    parts = []
    if n:
        parts.append("trained on %d recording%s" % (n, "" if n == 1 else "s"))
    if meta.get("label_track"):
        track = meta["label_track"]
        parts.append("labels: %s" % (", ".join(track) if isinstance(track, list) else track))
    rate = model.__dict__.get("sample_rate_hz_")
    if rate:
        parts.append("%g Hz" % rate)
    if meta.get("trained_at"):
        parts.append(str(meta["trained_at"])[:10])
    return ", ".join(parts) or "no training record"


def _rate_of_recordings(paths) -> float | None:
    """The common sample rate of these recordings, if they exist and agree."""
    from host.datasets import recording_rate_hz
    from host.recording import open_recording

    rates = set()
    for p in paths:
        try:
            rates.add(recording_rate_hz(open_recording(p)))
        except Exception:  # gone or unreadable: the rate stays unknown
            return None
    return rates.pop() if len(rates) == 1 else None


def training_metadata(*, files, label_track, label_set, feature_set, kind, params,
                      command: str = "", metrics: dict | None = None,
                      sample_rate_hz: float | None = None) -> dict:
    """The provenance a trained model carries (JSON-serialisable).

    Its ``history`` starts with the ``train`` operation; :func:`append_history`
    adds later ones (``learn``, ``keep-learning``, ``deploy``).
    """
    meta = {
        "trained_at": _now(),
        "app_version": app_version(),
        "recognizer": kind,
        "params": dict(params),
        "feature_set": feature_set,
        "label_track": label_track,
        "label_set": sorted(str(c) for c in label_set),
        "training_recordings": [os.path.abspath(os.fspath(f)) for f in files],
        "command": command,
    }
    if sample_rate_hz is not None:
        meta["sample_rate_hz"] = float(sample_rate_hz)
    if metrics is not None:
        meta["metrics"] = metrics
    meta["history"] = [history_entry("train", command=command, recordings=len(files))]
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

    from recognizers.base import ModelFormatError

    header = read_model_header(path)
    entry = ModelEntry(str(path), header["kind"], header.get("feature_set"),
                       header["classes"], header.get("metadata") or {})
    try:  # what the listing shows must be readable, or the file is listed as broken
        str(entry.trained_at), entry.n_recordings, dict(entry.accuracy)
        if entry.feature_set is not None and not isinstance(entry.feature_set, str):
            raise TypeError("feature_set")
    except (TypeError, AttributeError, ValueError) as exc:
        raise ModelFormatError("%s: malformed metadata in the model header (%s)"
                               % (path, exc)) from None
    return entry


# The analysis models other commands save (``kind`` in their JSON ``header`` array):
# WalkerLab files too, but not recognizers.
TOPIC_MODEL_KIND = "walker-topics"
LATENT_MODEL_KIND = "latent-harmonium"
ANALYSIS_MODELS = {TOPIC_MODEL_KIND: "topic model (`walkerlab topics show` reads it)",
                   LATENT_MODEL_KIND: "latent map (`walkerlab latent fit` made it)"}


def analysis_model_kind(path) -> str | None:
    """The kind of an analysis model file (a key of ANALYSIS_MODELS), else None."""
    import json
    import zipfile

    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as z:
            if "header" not in z.files:
                return None
            header = json.loads(np.asarray(z["header"], dtype=np.uint8).tobytes()
                                .decode("utf-8"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, EOFError,
            UnicodeDecodeError, zipfile.BadZipFile):
        return None
    kind = header.get("kind") if isinstance(header, dict) else None
    return kind if kind in ANALYSIS_MODELS else None


def _npz_files(directory) -> list[pathlib.Path]:
    folder = pathlib.Path(directory) if directory is not None else default_models_dir()
    if not folder.exists():
        return []
    if not folder.is_dir():
        raise UserError("%s is not a folder" % folder)
    return sorted(folder.glob("*.npz"))


def list_models(directory=None) -> tuple[list[ModelEntry], list[str]]:
    """(recognizers newest first, problems) for every ``*.npz`` in the folder.

    Analysis models (:func:`list_analysis_models`) are neither: they are not
    recognizers, and not broken.
    """
    from recognizers.base import ModelFormatError

    entries, problems = [], []
    for path in _npz_files(directory):
        try:
            entries.append(describe_model(path))
        except ModelFormatError as exc:  # broken files are listed, never fatal
            if analysis_model_kind(path) is None:
                problems.append(str(exc))
        except OSError as exc:
            problems.append("%s cannot be read (%s)" % (path, exc.strerror or exc))
    entries.sort(key=lambda e: (str(e.trained_at), e.path), reverse=True)
    return entries, problems


def list_analysis_models(directory=None) -> list[tuple[str, str]]:
    """(path, kind) of every analysis model file (topic model, latent map) in the folder."""
    found = []
    for path in _npz_files(directory):
        kind = analysis_model_kind(path)
        if kind is not None:
            found.append((str(path), kind))
    return found
