"""The recognizer contract: one interface for every activity recognizer.

A recognizer maps a sequence of feature frames ``X`` (T, n_features) to
activity labels (str codes such as ``"WF"``) and posteriors over ``classes_``.

Contract (scikit-learn conventions; its parameter checks, ``check_is_fitted`` and ``clone``):

* ``__init__`` takes keyword parameters and only stores them; they are checked
  in ``fit`` against ``_parameter_constraints``.
* Learned state ends in ``_`` (``classes_``, ``n_features_in_``, ...); using an
  unfitted recognizer raises :class:`NotFittedError`.
* ``fit(sequences, labels)`` returns ``self``; ``predict(X)`` gives the best
  label sequence; ``predict_proba(X)`` smoothed posteriors (T, n_classes);
  ``filter(X)`` causal (filtered) posteriors; ``score(X)`` where defined.
* Streaming: ``reset()``, then ``step(x) -> (n_classes,)`` per frame or
  ``step_block(X) -> (n, n_classes)`` per block; both continue one stream and
  agree exactly with ``filter`` on the concatenated frames.
* Capabilities are data: :class:`RecognizerTags`, from ``get_tags()``.  A
  recognizer tagged ``supports_partial_fit`` also has ``partial_fit(sequences)``
  (unlabelled) and ``learn_block(X)``, which continues the stream like
  ``step_block`` while learning from it (the live monitor's "keep learning").
* Persistence: ``save(path)`` / ``load(path)`` / :func:`load_recognizer` use an
  ``.npz`` file read with ``allow_pickle=False``: numeric and fixed-width
  string arrays plus a JSON header (kind, format_version, params, fitted
  metadata) stored inside it as a ``uint8`` array.  Nothing in it can execute.
* :data:`RECOGNIZERS` maps a kind (``"hmm"``) to its class, for the CLI's
  ``--recognizer`` option and for :func:`load_recognizer`.
"""
from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import numbers
import os
import tempfile
import zipfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import sklearn.exceptions
from sklearn.base import clone
from sklearn.utils import Tags, TargetTags
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    StrOptions,
    make_constraint,
    validate_parameter_constraints,
)
from sklearn.utils.validation import check_is_fitted as _sklearn_check_is_fitted

from recognizers.npz_files import DAMAGE as NPZ_DAMAGE

__all__ = [
    "ModelFormatError",
    "NotFittedError",
    "RecognizerTags",
    "Interval",
    "StrOptions",
    "Recognizer",
    "RECOGNIZERS",
    "register_recognizer",
    "get_recognizer_class",
    "load_recognizer",
    "read_model_header",
    "check_is_fitted",
    "clone",
    "validate_params",
    "MODEL_FILE_FORMAT",
]

#: Value of the header's ``format`` field; identifies a WalkerLab model file.
MODEL_FILE_FORMAT = "walkerlab-recognizer"
_HEADER_KEY = "__header__"


class ModelFormatError(ValueError):
    """A model file that is not one, or of another kind or version than asked for."""


class NotFittedError(sklearn.exceptions.NotFittedError):
    """A recognizer or estimator was used before ``fit`` (or ``load``).

    A subclass of scikit-learn's :class:`sklearn.exceptions.NotFittedError` (itself a
    ``ValueError`` and an ``AttributeError``), so ``except`` clauses written for
    either library catch it.
    """


@dataclasses.dataclass(slots=True, frozen=True)
class RecognizerTags:
    """What a recognizer can do; tests and the GUI read these, not class names.

    supports_streaming : ``reset``/``step``/``step_block`` work.
    supports_partial_fit : ``partial_fit`` updates the model online.
    requires_labels : ``fit`` needs label sequences (supervised).
    """

    supports_streaming: bool = True
    supports_partial_fit: bool = False
    requires_labels: bool = True


# --------------------------------------------------------------------------- params
# Parameters are declared with scikit-learn's constraint classes and checked by its
# ``validate_parameter_constraints``; ``check_is_fitted`` and ``clone`` are its own.
# The names stay importable from here for code written against this module.


def validate_params(recognizer) -> None:
    """Check ``get_params(deep=False)`` against ``_parameter_constraints``.

    scikit-learn's check: raises its ``InvalidParameterError`` (a ``ValueError``)
    naming the parameter, the allowed values and the value received.  One rule is
    stricter than scikit-learn's: a bool is not taken for a number (``n_bins=True``
    is a mistake), only where the constraints say ``"boolean"``.
    """
    constraints = getattr(recognizer, "_parameter_constraints", {})
    params = recognizer.get_params(deep=False)
    for name, value in params.items():
        allowed = constraints.get(name)
        if allowed and isinstance(value, (bool, np.bool_)) and "boolean" not in allowed:
            raise InvalidParameterError(
                "The %r parameter of %s must be %s. Got %r instead."
                % (name, type(recognizer).__name__,
                   " or ".join(str(make_constraint(c)) for c in allowed), value))
    validate_parameter_constraints(constraints, params, caller_name=type(recognizer).__name__)


_NOT_FITTED = ("This %(name)s instance is not fitted yet; call fit(sequences, labels) "
               "or load a saved model first.")


def check_is_fitted(recognizer, attributes=None, *, msg=_NOT_FITTED, all_or_any=all) -> None:
    """scikit-learn's :func:`sklearn.utils.validation.check_is_fitted`, raising this
    module's :class:`NotFittedError` (a subclass of scikit-learn's), so ``except``
    clauses written for either library catch it.

    Fitted means: the given ``attributes`` exist, or ``__sklearn_is_fitted__()`` is
    true, or (by default) a public attribute ending in ``_`` exists.
    """
    try:
        _sklearn_check_is_fitted(recognizer, attributes, msg=msg, all_or_any=all_or_any)
    except sklearn.exceptions.NotFittedError as exc:
        if isinstance(exc, NotFittedError):
            raise
        raise NotFittedError(str(exc)) from None


def _check_sequence(X, name) -> np.ndarray:
    """One sequence as float64 C-contiguous (T, n_features)."""
    arr = np.asarray(X)
    if arr.dtype.kind not in "biuf":
        raise ValueError("%s must be numeric, got dtype %s" % (name, arr.dtype))
    if arr.ndim != 2:
        raise ValueError("%s must be 2-D (n_frames, n_features), got shape %s"
                         % (name, arr.shape))
    return np.ascontiguousarray(arr, dtype=np.float64)


def _as_sequence_list(sequences, name):
    """A list of arrays from a list of sequences or one 2-D array."""
    if isinstance(sequences, np.ndarray):
        if sequences.dtype == object:
            return list(sequences)
        return [sequences]
    if not isinstance(sequences, (list, tuple)):
        raise TypeError("%s must be a list of sequences, got %s"
                        % (name, type(sequences).__name__))
    return list(sequences)


# --------------------------------------------------------------------------- base class


class StreamRunMixin:
    """``filter``/``reset``/``step``/``step_block`` for a recognizer whose streaming is
    one stateful ``_run(stream, X)`` over a stream from ``_new_stream()`` (frames
    checked by ``_X``), so ``step`` equals ``filter`` row by row by construction.
    ``_fitted_attribute`` names the learned attribute that marks a fitted model.
    Put it before :class:`Recognizer` in the bases."""

    _fitted_attribute = "model_"

    def _X(self, X) -> np.ndarray:
        X = self._validate_X(X, reset=False)
        if np.isinf(X).any():
            raise ValueError("X contains infinite values (NaN marks a missing reading)")
        return X

    def filter(self, X) -> np.ndarray:
        """Causal posteriors (T, n_classes) from a fresh stream (what ``step`` returns)."""
        check_is_fitted(self, self._fitted_attribute)
        return self._run(self._new_stream(), self._X(X))

    def reset(self) -> None:
        """Forget the stream: the next ``step`` starts a new one."""
        check_is_fitted(self, self._fitted_attribute)
        self._stream = self._new_stream()

    def step(self, x) -> np.ndarray:
        """Posterior (n_classes,) after frame ``x``; equals ``filter`` row by row."""
        if self._fitted_attribute not in self.__dict__:
            raise NotFittedError("This %s instance is not fitted yet; call fit(sequences, "
                                 "labels) or load a saved model first." % type(self).__name__)
        x = self._validate_frame(x)
        if np.isinf(x).any():
            raise ValueError("a frame contains infinite values (NaN marks a missing reading)")
        return self._run(self._stream, x.reshape(1, -1))[0]

    def step_block(self, X) -> np.ndarray:
        """Continue the stream over a block (n, n_features); posteriors (n, n_classes)."""
        check_is_fitted(self, self._fitted_attribute)
        return self._run(self._stream, self._X(X))


class Recognizer(ABC):
    """Base class of every recognizer: parameters, validation, streaming, files.

    Subclasses set ``kind`` (the registry and file name of the model type),
    ``format_version`` (bumped when the saved arrays change meaning),
    ``_parameter_constraints`` and ``_tags``; and implement ``fit``,
    ``predict_proba``, ``filter``, ``reset``, ``step``, ``_get_state`` and
    ``_set_state``.
    """

    kind: ClassVar[str] = ""
    format_version: ClassVar[int] = 1
    #: Oldest file version this class can still read.
    min_format_version: ClassVar[int] = 1
    _parameter_constraints: ClassVar[dict] = {}
    _tags: ClassVar[RecognizerTags] = RecognizerTags()
    #: Parameters counted in frames (windows): saved in seconds too, and what a
    #: change of sample rate would have to scale (see :meth:`at_rate`).
    _frame_params: ClassVar[tuple[str, ...]] = ()

    # -- parameters -------------------------------------------------------------
    @classmethod
    def _get_param_names(cls) -> list[str]:
        init = cls.__init__
        if init is object.__init__:
            return []
        params = [p for p in inspect.signature(init).parameters.values()
                  if p.name != "self" and p.kind != p.VAR_KEYWORD]
        for p in params:
            if p.kind == p.VAR_POSITIONAL:
                raise RuntimeError("%s.__init__ must not take *args (%s): parameters are "
                                   "read from its signature" % (cls.__name__, p))
        return sorted(p.name for p in params)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters by name (``deep``: also ``outer__inner`` of nested ones)."""
        out = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update(("%s__%s" % (name, k), v) for k, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params):
        """Set constructor parameters (``outer__inner`` for nested ones); returns self."""
        valid = self.get_params(deep=True)
        nested: dict[str, dict] = {}
        for key, value in params.items():
            name, delim, sub = key.partition("__")
            if name not in valid:
                raise ValueError("invalid parameter %r for %s; valid parameters are %s"
                                 % (name, type(self).__name__, sorted(self._get_param_names())))
            if delim:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, sub in nested.items():
            valid[name].set_params(**sub)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__)
                    .parameters.values() if p.default is not p.empty}
        shown = ["%s=%r" % (k, v) for k, v in self.get_params(deep=False).items()
                 if k not in defaults or not _same(v, defaults[k])]
        return "%s(%s)" % (type(self).__name__, ", ".join(shown))

    def get_tags(self) -> RecognizerTags:
        """This recognizer's capabilities."""
        return self._tags

    def __sklearn_tags__(self) -> Tags:
        """scikit-learn's tags (its ``check_is_fitted`` reads them): must be fitted;
        labels required unless the recognizer learns without them."""
        return Tags(estimator_type=None,
                    target_tags=TargetTags(required=self._tags.requires_labels))

    def _validate_params(self) -> None:
        validate_params(self)

    # -- input validation -------------------------------------------------------
    def _validate_X(self, X, *, reset: bool, name: str = "X") -> np.ndarray:
        """One sequence as float64 C-contiguous (T, n_features).

        ``reset=True`` (in ``fit``) records ``n_features_in_``; otherwise the
        feature count must match it.  NaN is allowed (a missing reading).
        """
        arr = _check_sequence(X, name)
        if reset:
            self.n_features_in_ = arr.shape[1]
        else:
            check_is_fitted(self)
            if arr.shape[1] != self.n_features_in_:
                raise ValueError("%s has %d features, but %s was fitted with %d"
                                 % (name, arr.shape[1], type(self).__name__,
                                    self.n_features_in_))
        return arr

    def _validate_frame(self, x) -> np.ndarray:
        """One frame as float64 (n_features,)."""
        arr = np.asarray(x, dtype=np.float64)
        if arr.shape != (self.n_features_in_,):
            raise ValueError("a frame must have shape (%d,), got %s"
                             % (self.n_features_in_, arr.shape))
        return arr

    def _validate_fit_data(self, sequences, labels):
        """Lists of float64 (T_i, n_features) arrays and str (T_i,) label arrays.

        Sets ``n_features_in_`` and ``classes_`` (sorted distinct labels).
        """
        seqs = _as_sequence_list(sequences, "sequences")
        if not seqs:
            raise ValueError("fit needs at least one sequence")
        if labels is None:
            raise ValueError("%s is supervised: fit(sequences, labels) needs labels"
                             % type(self).__name__)
        labs = _as_sequence_list(labels, "labels")
        if len(labs) != len(seqs):
            raise ValueError("got %d sequences but %d label sequences" % (len(seqs), len(labs)))
        out_X, out_y = [], []
        n_features = None
        for i, (X, y) in enumerate(zip(seqs, labs)):
            X = _check_sequence(X, "sequences[%d]" % i)
            if n_features is None:
                n_features = X.shape[1]
            elif X.shape[1] != n_features:
                raise ValueError("sequences[%d] has %d features, sequences[0] has %d"
                                 % (i, X.shape[1], n_features))
            y = np.asarray(y)
            if y.ndim != 1 or y.shape[0] != X.shape[0]:
                raise ValueError("labels[%d] has shape %s but sequences[%d] has %d frames"
                                 % (i, y.shape, i, X.shape[0]))
            out_X.append(X)
            out_y.append(y.astype(str))
        classes = np.unique(np.concatenate(out_y))
        if classes.size == 0:
            raise ValueError("fit needs at least one labelled frame")
        # Set only once everything is checked, so a failed fit changes nothing.
        self.n_features_in_ = n_features
        self.classes_ = classes
        return out_X, out_y

    # -- the interface ----------------------------------------------------------
    @abstractmethod
    def fit(self, sequences, labels=None, *, feature_set: str | None = None):
        """Learn from ``sequences`` (list of (T_i, n_features)) and ``labels``.

        ``feature_set`` (e.g. ``"cop"``) is recorded as ``feature_set_`` so the
        live pipeline computes the features the model was trained on.
        Returns ``self``.
        """

    @abstractmethod
    def predict_proba(self, X) -> np.ndarray:
        """Posteriors over ``classes_`` given the whole sequence, (T, n_classes)."""

    @abstractmethod
    def filter(self, X) -> np.ndarray:
        """Causal posteriors ``p(y_t | x_1..t)``, (T, n_classes), from a fresh start."""

    @abstractmethod
    def reset(self) -> None:
        """Start a new stream (the next ``step`` is the first frame)."""

    @abstractmethod
    def step(self, x) -> np.ndarray:
        """Consume one frame (n_features,); return its filtered posterior (n_classes,)."""

    def predict(self, X) -> np.ndarray:
        """The best label sequence (T,) of str; default: argmax of ``predict_proba``."""
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def step_block(self, X) -> np.ndarray:
        """Consume a block of frames (n, n_features); posteriors (n, n_classes)."""
        X = self._validate_X(X, reset=False)
        out = np.empty((X.shape[0], len(self.classes_)))
        for t in range(X.shape[0]):
            out[t] = self.step(X[t])
        return out

    def evaluation_variants(self) -> dict[tuple, "Recognizer"]:
        """Other readings of this fitted model that evaluation reports beside it.

        ``{(param, value): recognizer}``: the same fitted model decoded as if
        constructed with ``param=value``, without fitting again.  Latent-state
        recognizers return their other state-to-activity mapping, so majority and
        one-to-one figures come from one fit.  Default: none.
        """
        return {}

    # -- sample rate ------------------------------------------------------------
    def time_constants_s(self) -> dict:
        """Per-frame quantities in seconds (empty if the training rate is unknown).

        Every parameter of ``_frame_params`` as ``value / sample_rate_hz_``, plus
        whatever :meth:`_rate_dependent_seconds` adds (e.g. mean stays).
        """
        rate = self.__dict__.get("sample_rate_hz_")
        if not rate:
            return {}
        out = {}
        for name in self._frame_params:
            value = getattr(self, name, None)
            if isinstance(value, numbers.Real) and not isinstance(value, bool):
                out[name] = float(value) / rate
        out.update(self._rate_dependent_seconds(rate))
        return out

    def _rate_dependent_seconds(self, rate_hz: float) -> dict:
        """Fitted per-frame quantities in seconds (subclasses with a chain add stays)."""
        return {}

    def at_rate(self, rate_hz: float):
        """This model for a stream sampled at ``rate_hz``.

        Returns ``self`` when the model was trained at that rate, else a converted
        copy (:meth:`_convert_rate`), else raises ``ValueError`` saying why the
        conversion is impossible and what to do.  A model that does not know its
        rate (files written before rates were recorded) is taken to be at
        :data:`recognizers.rates.LEGACY_RATE_HZ`, with a :class:`RateWarning`.
        """
        import warnings

        from recognizers.rates import LEGACY_RATE_HZ, RateWarning

        check_is_fitted(self)
        trained = self.__dict__.get("sample_rate_hz_")
        if not trained:
            warnings.warn("this %s model does not record the sample rate it was trained at; "
                          "assuming %g Hz" % (self.kind, LEGACY_RATE_HZ), RateWarning,
                          stacklevel=2)
            trained = LEGACY_RATE_HZ
        rate_hz = float(rate_hz)
        if not rate_hz > 0:
            raise ValueError("a sample rate must be positive, got %r" % (rate_hz,))
        if abs(rate_hz - trained) < 1e-9 * trained:
            return self
        new = copy.deepcopy(self)
        try:
            new._convert_rate(rate_hz / trained)
        except NotImplementedError as exc:
            raise ValueError(
                "this %s model was trained at %g Hz and cannot run at %g Hz (%s); "
                "set the walker to %g Hz or retrain on %g Hz recordings"
                % (self.kind, trained, rate_hz, exc or "its parameters count frames",
                   trained, rate_hz)) from None
        new.sample_rate_hz_ = rate_hz
        new.metadata_ = dict(getattr(self, "metadata_", None) or {})
        new.metadata_["converted_from_hz"] = trained
        new.reset()
        return new

    def _convert_rate(self, factor: float) -> None:
        """Convert this (copied) fitted model in place to frames ``factor`` times as
        frequent; raise ``NotImplementedError(reason)`` if that is impossible.

        Default: not convertible (a subclass knows what its fitted state means).
        """
        if self._frame_params:
            raise NotImplementedError("its %s count frames" % ", ".join(self._frame_params))
        raise NotImplementedError("its fitted dynamics count frames")

    # -- persistence ------------------------------------------------------------
    @abstractmethod
    def _get_state(self) -> dict[str, np.ndarray]:
        """Fitted state as plain arrays (numeric or fixed-width str; no objects)."""

    @abstractmethod
    def _set_state(self, arrays: dict[str, np.ndarray]) -> None:
        """Restore fitted state from :meth:`_get_state` arrays."""

    def save(self, path) -> Path:
        """Write the fitted recognizer to ``path`` (an .npz file; no pickle).

        The file is written to a temporary name and renamed, so a crash never
        leaves a half-written model behind.  Returns the path.
        """
        check_is_fitted(self)
        path = Path(path)
        arrays = dict(self._get_state())
        arrays["classes"] = np.asarray(self.classes_, dtype=str)
        for key, value in arrays.items():
            if key == _HEADER_KEY or np.asarray(value).dtype == object:
                raise TypeError("state array %r cannot be saved without pickle" % key)
        header = {
            "format": MODEL_FILE_FORMAT,
            "kind": self.kind,
            "format_version": self.format_version,
            "params": self.get_params(deep=False),
            "n_features_in": int(self.n_features_in_),
            "feature_set": getattr(self, "feature_set_", None),
            # Provenance for the model registry (training recordings, label set,
            # metrics, app version...): whatever JSON the trainer put in metadata_.
            "metadata": getattr(self, "metadata_", None) or {},
            # Rate of the training frames, and every per-frame quantity in seconds, so
            # a stream at another rate is converted or refused (recognizers/rates.py).
            "sample_rate_hz": self.__dict__.get("sample_rate_hz_"),
            "time_constants_s": self.time_constants_s(),
        }
        arrays[_HEADER_KEY] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp",
                                   dir=path.parent if str(path.parent) else ".")
        try:
            with os.fdopen(fd, "wb") as fh:  # a handle keeps np.savez from adding ".npz"
                np.savez(fh, **arrays)
            os.chmod(tmp, 0o644)  # mkstemp makes 0600; a model is meant to be shared
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return path

    @classmethod
    def load(cls, path):
        """Read a model saved by :meth:`save`.

        Called on a subclass, the file must hold that kind; called on
        :class:`Recognizer` it dispatches like :func:`load_recognizer`.
        Raises :class:`ModelFormatError` for anything else.
        """
        header, arrays = _read_model_file(path)
        kind = header["kind"]
        if cls is Recognizer or not cls.kind:
            target = RECOGNIZERS.get(kind)
            if target is None:
                raise ModelFormatError(
                    "%s holds a recognizer of unknown kind %r (known kinds: %s)"
                    % (path, kind, ", ".join(sorted(RECOGNIZERS)) or "none"))
        elif kind != cls.kind:
            raise ModelFormatError("%s holds a %r model, not %r; load it with "
                                   "recognizers.load_recognizer" % (path, kind, cls.kind))
        else:
            target = cls
        version = header["format_version"]
        if not target.min_format_version <= version <= target.format_version:
            raise ModelFormatError(
                "%s is a %r model of format version %d; this WalkerLab reads versions "
                "%d to %d" % (path, kind, version, target.min_format_version,
                              target.format_version))
        params = header.get("params")
        if not isinstance(params, dict):
            raise ModelFormatError("%s: header has no parameter table" % path)
        try:
            obj = target(**params)
        except TypeError as exc:
            raise ModelFormatError("%s: parameters do not fit %s (%s)"
                                   % (path, target.__name__, exc)) from None
        try:
            obj.classes_ = np.asarray(arrays["classes"], dtype=str)
            obj.n_features_in_ = int(header["n_features_in"])
            obj.feature_set_ = header.get("feature_set")
            obj.metadata_ = dict(header.get("metadata") or {})
            rate = header.get("sample_rate_hz")
            if rate is not None:  # files before rates were recorded: None (see at_rate)
                obj.sample_rate_hz_ = float(rate)
            obj._set_state(arrays)
        except (KeyError, ValueError, IndexError, TypeError, OverflowError, RecursionError,
                AttributeError) as exc:  # what damaged arrays or header fields raise
            raise ModelFormatError("%s: damaged %r model (%s: %s)" % (
                path, kind, type(exc).__name__, str(exc).split("\n")[0])) from None
        return obj


def _same(a, b) -> bool:
    try:
        return bool(a == b) or (a is b)
    except Exception:
        return a is b


def _check_model_npz(path: Path) -> None:
    """Refuse, before loading, an .npz whose arrays are pickles or would not fit what
    the file can hold (zip bombs, huge declared shapes): see recognizers/npz_files.py."""
    from recognizers.npz_files import NpzFormatError, check_npz

    if path.is_file() and zipfile.is_zipfile(path):
        try:
            check_npz(path)
        except NpzFormatError as exc:
            raise ModelFormatError("%s is not a WalkerLab model file (%s)" % (
                path, str(exc).split(": ", 1)[-1])) from None


def _read_model_file(path):
    """(header dict, arrays dict) of a model file, or :class:`ModelFormatError`."""
    path = Path(path)
    _check_model_npz(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            if not hasattr(npz, "files"):
                raise ModelFormatError("%s is not a WalkerLab model file (a bare .npy array)"
                                       % path)
            if _HEADER_KEY not in npz.files:
                raise ModelFormatError("%s is not a WalkerLab model file (no header)" % path)
            raw = npz[_HEADER_KEY]
            arrays = {k: npz[k] for k in npz.files if k != _HEADER_KEY}
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except ModelFormatError:
        raise
    except (*NPZ_DAMAGE, TypeError, AttributeError) as exc:  # TypeError: a bare .npy
        raise ModelFormatError(_unreadable(path, exc)) from None
    header = _parse_header(raw, path)
    version = header.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ModelFormatError("%s: model header lacks a kind or an integer format_version"
                               % path)
    return header, arrays


# Header fields and the JSON types a model file may give them (absent is allowed).
_HEADER_TYPES = {"params": (dict,), "n_features_in": (int,), "feature_set": (str,),
                 "metadata": (dict,), "sample_rate_hz": (int, float),
                 "time_constants_s": (dict,)}


def _parse_header(raw, path) -> dict:
    """The JSON header of a model file, its fields of the right types; whatever a
    hostile header raises (deep nesting, NaN, wrong types) is a ModelFormatError."""
    try:
        header = json.loads(np.asarray(raw, dtype=np.uint8).tobytes().decode("utf-8"))
    except RecursionError:
        raise ModelFormatError("%s: model header is nested too deeply" % path) from None
    except (ValueError, UnicodeDecodeError, TypeError, OverflowError):
        raise ModelFormatError("%s: model header is not valid JSON" % path) from None
    if not isinstance(header, dict) or header.get("format") != MODEL_FILE_FORMAT:
        raise ModelFormatError("%s is not a WalkerLab model file (its header is not a "
                               "WalkerLab model header)" % path)
    if not isinstance(header.get("kind"), str):
        raise ModelFormatError("%s: model header lacks a kind" % path)
    for name, types in _HEADER_TYPES.items():
        value = header.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            raise ModelFormatError("%s: model header field %r is a %s, not a %s" % (
                path, name, type(value).__name__, " or ".join(t.__name__ for t in types)))
    rate = header.get("sample_rate_hz")
    if rate is not None and not 0 < rate < 1e9:  # also NaN
        raise ModelFormatError("%s: model header's sample_rate_hz %r is not a rate"
                               % (path, rate))
    if header.get("n_features_in") is not None and not 0 <= header["n_features_in"] < 2**31:
        raise ModelFormatError("%s: model header's n_features_in is out of range" % path)
    return header


def _unreadable(path, exc: BaseException) -> str:
    """Why a file is not a model, in words (numpy's text talks of pickles and magic)."""
    try:
        size = os.path.getsize(path)
    except OSError:
        size = None
    if size == 0:
        reason = "the file is empty (0 bytes)"
    elif isinstance(exc, (zipfile.BadZipFile, EOFError)) or "pickle" in str(exc) \
            or "magic" in str(exc):
        reason = "not an .npz archive; damaged or another kind of file"
    elif isinstance(exc, (TypeError, AttributeError)):
        reason = "a bare NumPy array (.npy), not a model archive"
    elif isinstance(exc, UnicodeDecodeError):
        reason = "model header is not valid JSON"
    else:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        reason = "unreadable: %s" % text
    return "%s is not a WalkerLab model file (%s)" % (path, reason)


# --------------------------------------------------------------------------- registry

#: kind -> recognizer class; filled by :func:`register_recognizer`.
RECOGNIZERS: dict[str, type[Recognizer]] = {}


def register_recognizer(cls):
    """Class decorator: make ``cls`` selectable by ``cls.kind``."""
    if not cls.kind:
        raise ValueError("%s has no kind to register under" % cls.__name__)
    other = RECOGNIZERS.get(cls.kind)
    if other is not None and other is not cls:
        raise ValueError("recognizer kind %r is already taken by %s"
                         % (cls.kind, other.__name__))
    RECOGNIZERS[cls.kind] = cls
    return cls


def get_recognizer_class(kind: str) -> type[Recognizer]:
    """The class registered as ``kind`` (``ValueError`` listing the known kinds)."""
    try:
        return RECOGNIZERS[kind]
    except KeyError:
        raise ValueError("unknown recognizer %r; choose one of: %s"
                         % (kind, ", ".join(sorted(RECOGNIZERS)))) from None


def read_model_header(path) -> dict:
    """The JSON header of a model file (kind, params, feature_set, metadata, classes).

    Reads no model arrays except the class names: cheap enough to list a folder.
    """
    path = Path(path)
    _check_model_npz(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            if _HEADER_KEY not in z.files:
                raise ModelFormatError("%s is not a WalkerLab model file (no header)" % path)
            header = _parse_header(z[_HEADER_KEY], path)
            classes = [str(c) for c in z["classes"]] if "classes" in z.files else []
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except ModelFormatError:
        raise
    except (*NPZ_DAMAGE, TypeError, AttributeError) as exc:  # TypeError: a bare .npy
        raise ModelFormatError(_unreadable(path, exc)) from None
    header["classes"] = classes
    header["metadata"] = header.get("metadata") or {}
    return header


def load_recognizer(path) -> Recognizer:
    """Load a saved recognizer of any registered kind."""
    return Recognizer.load(path)
