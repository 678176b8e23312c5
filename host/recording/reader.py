"""Read WalkerLab recordings: open_recording(path) -> Recording.

Everything but the raw byte log is loaded into memory at open (a one-hour 100 Hz
session is about 20 MB); the raw log is read on demand with Recording.raw_bytes().
Files that are not ours, not whole, or of another major format version raise
RecordingFormatError with a one-line message.
"""
from __future__ import annotations

import json
import os
import re
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field

import h5py
import numpy as np

from host.recording import layout as L
from host.samples import SampleBlock


class RecordingFormatError(ValueError):
    """A file that cannot be read as a WalkerLab recording (the message is one line)."""


class RecordingWarning(UserWarning):
    """A readable recording with something the user should know (crash, newer minor)."""


def label_sort_key(code: str) -> tuple:
    """Sort key of activity codes in natural order: R2 before R10, then by text."""
    import re

    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in re.split(r"(\d+)", code) if part)


class LabelTrackExistsError(FileExistsError):
    """write_labels(mode='new') on a track that already exists."""


# ---- small helpers ----------------------------------------------------------------
def text(value) -> str:
    """An attribute or table string as str, whether HDF5 gave bytes or str."""
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, np.ndarray) and value.shape == ():
        return text(value[()])
    return str(value)


def _plain(value):
    """Attribute value -> plain Python (str, int, float, bool, list)."""
    if isinstance(value, (bytes, np.bytes_, str)):
        return text(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OSU":
            return [_plain(v) for v in value.tolist()]
        return value.tolist()
    return value


def _decode_strings(arr: np.ndarray) -> np.ndarray:
    """Table read by h5py (vlen strings as bytes) -> same table with str objects."""
    str_fields = [n for n in arr.dtype.names or () if arr.dtype[n].kind == "O"]
    if not str_fields:
        return arr
    out = arr.copy()
    for name in str_fields:
        out[name] = [text(v) for v in arr[name]]
    return out


def _one_line(exc: BaseException) -> str:
    msg = " ".join(str(exc).split())
    # h5py: "Unable to synchronously open file (file signature not found)"
    if "(" in msg and msg.endswith(")"):
        msg = msg[msg.index("(") + 1:-1]
    return msg


# What h5py raises on a file whose structure or data is damaged (a bad checksum is a
# KeyError, a bad heap pointer an OSError, ...), as opposed to one that is not there.
HDF5_DAMAGE = (KeyError, OSError, RuntimeError, ValueError, TypeError, IndexError,
               OverflowError)
_NOT_DAMAGE = (FileNotFoundError, IsADirectoryError, PermissionError, FileExistsError)


def damaged(path, exc: BaseException) -> BaseException:
    """The one-line RecordingFormatError for what reading `path` raised, or `exc`
    itself when it is a user error already (no such file, a recording error)."""
    if isinstance(exc, (RecordingFormatError, *_NOT_DAMAGE)) or not isinstance(
            exc, HDF5_DAMAGE):
        return exc
    return RecordingFormatError("%s: damaged HDF5 file (%s: %s)"
                                % (path, type(exc).__name__, _one_line(exc)[:200]))


def parse_version(version: str) -> tuple[int, int, int]:
    parts = version.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(version)
    return int(parts[0]), int(parts[1]), int(parts[2])


_TRUNCATED = re.compile(r"truncated file: eof = (\d+).*stored_eof = (\d+)")


class TruncatedRecordingError(RecordingFormatError):
    """The file is shorter than HDF5 says it should be: cut short (an interrupted
    copy, a full disk), not a file still being written."""

    def __init__(self, path, size: int, expected: int) -> None:
        self.path, self.size, self.expected = os.fspath(path), size, expected
        super().__init__(
            "%s: the file is truncated (%d of %d bytes: an interrupted copy or a full "
            "disk cut it short); `walkerlab recover %s --out NEW.h5` salvages every "
            "complete part of it" % (self.path, size, expected, self.path))


# A recording being written is in HDF5 SWMR mode: its superblock says "open for SWMR
# writing" and plain opens fail.  The writer also holds an OFD lock on the file (an
# open-file-description lock, independent of HDF5's flock and of other descriptors),
# which the kernel drops when the writer dies: locked = still being written, unlocked
# = the writer crashed (read it with swmr=True; `walkerlab recover` seals it).
_SWMR_OPEN = "already open for write"


def writer_alive(path) -> bool:
    """True while a RecordingWriter (any process on this host) holds ``path`` open."""
    import fcntl
    import struct
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY)
    except OSError:
        return False
    try:
        query = struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 0, 0)  # struct flock
        got = fcntl.fcntl(fd, getattr(fcntl, "F_OFD_GETLK", 36), query)
        return struct.unpack("hhqqi4x", got)[0] != fcntl.F_UNLCK
    finally:
        os.close(fd)


class LiveRecordingError(RecordingFormatError):
    """The recording is still being written: it can be read, not changed."""


class UnsealedRecordingError(RecordingFormatError):
    """The writer of a SWMR recording died: readable, but recover() must seal it
    before anything writes to it."""


def open_h5(path, mode: str = "r", *, live_ok: bool = True) -> h5py.File:
    """h5py.File(path, mode), with the errors a user can meet turned into one line.

    A recording still being written (or whose SWMR writer died) opens read-only with
    swmr=True: the reader sees every frame flushed so far, and ``f.refresh()``-free
    re-opens see more.  ``live_ok=False`` refuses a file still being written.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError("%s: is a directory, not a recording" % path)
    if not os.path.exists(path):
        raise FileNotFoundError("%s: no such file" % path)
    live_error = LiveRecordingError(
        "%s: the recording is still being written; it can be read (walkerlab "
        "info/replay) but not changed until it is closed" % path)
    if mode != "r" and writer_alive(path):  # HDF5 would share the writer's own handle
        raise live_error
    try:
        return h5py.File(path, mode)
    except OSError as exc:
        msg = _one_line(exc)
        if _SWMR_OPEN in msg:
            if writer_alive(path):
                if mode != "r" or not live_ok:
                    raise live_error from None
            elif mode != "r":
                raise UnsealedRecordingError(
                    "%s: the recorder stopped without closing the file; run "
                    "`walkerlab recover %s` first" % (path, path)) from None
            try:
                return h5py.File(path, "r", swmr=True)
            except OSError as exc2:
                msg = _one_line(exc2)
        cut = _TRUNCATED.search(msg)
        if cut:
            raise TruncatedRecordingError(path, int(cut.group(1)), int(cut.group(2))) \
                from None
        if "unable to lock" in msg.lower() or "errno = 11" in msg:
            raise RecordingFormatError(
                "%s: the file is open for writing by another process (%s)"
                % (path, msg)) from None
        if isinstance(exc, PermissionError):
            raise
        if "signature" in msg:  # h5py's words for "this is not HDF5 at all"
            raise RecordingFormatError("%s: not an HDF5 file (WalkerLab recordings are "
                                       "HDF5 .h5 files)" % path) from None
        if "truncated" in msg or "eof" in msg.lower():
            raise RecordingFormatError("%s: the HDF5 file is truncated (cut short while "
                                       "being copied or written)" % path) from None
        raise RecordingFormatError("%s: not a readable HDF5 file (%s)"
                                   % (path, msg)) from None


# ---- reading datasets from a file we did not write -------------------------------------
# A crafted file can declare any shape (10^12 rows, none stored) or a compression bomb;
# every dataset is checked against the layout (kind, rank, dtype) and what reading it
# would allocate is charged to a budget of a few times the file's size before a byte
# is read.
READ_ALLOWANCE_BYTES = 64 * 1024**2
READ_FACTOR = 4


class ReadBudget:
    """Bytes a reader may still allocate for one file's datasets."""

    def __init__(self, path) -> None:
        self.path = os.fspath(path)
        try:
            size = os.path.getsize(self.path)
        except OSError:
            size = 0
        self.left = READ_ALLOWANCE_BYTES + READ_FACTOR * size

    def take(self, nbytes: int, where: str) -> None:
        if nbytes > self.left:
            raise RecordingFormatError(
                "%s: %s declares %.0f MB, more than the file (%.1f MB) can hold; "
                "refusing to read it" % (self.path, where, nbytes / 1e6,
                                         os.path.getsize(self.path) / 1e6))
        self.left -= nbytes


def _compatible(actual: np.dtype, expected: np.dtype) -> bool:
    if expected.names:
        return bool(actual.names) and all(
            n in actual.names and _compatible(actual[n], expected[n]) for n in expected.names)
    if expected.kind == "O":  # variable-length text
        return actual.kind in "OSU"
    return actual.kind in "biuf" and np.can_cast(actual, expected, casting="same_kind")


def checked_dataset(f: h5py.File, where: str, dtype, tail_shape: tuple = (),
                    budget: ReadBudget | None = None, name: str | None = None
                    ) -> h5py.Dataset:
    """f[where] if it is a dataset of rank 1 + len(tail_shape) with that tail and a
    dtype that reads as ``dtype``, its size charged to ``budget``;
    RecordingFormatError naming the file (``name``, else f's) and the dataset otherwise."""
    obj = f.get(where)
    path = name or f.filename
    dtype = np.dtype(dtype)
    if not isinstance(obj, h5py.Dataset):
        raise RecordingFormatError("%s: %s is %s, not a dataset" % (
            path, where, "missing" if obj is None else "a group"))
    if obj.ndim != 1 + len(tail_shape) or tuple(obj.shape[1:]) != tuple(tail_shape):
        raise RecordingFormatError("%s: %s has shape %s, expected (n%s)" % (
            path, where, obj.shape, "".join(", %d" % d for d in tail_shape)))
    if not _compatible(obj.dtype, dtype):
        raise RecordingFormatError("%s: %s has dtype %s, expected %s" % (
            path, where, obj.dtype, dtype))
    if budget is not None:
        budget.take(int(obj.size) * max(obj.dtype.itemsize, dtype.itemsize), where)
    return obj


def check_format(f: h5py.File, path, check_calibration: bool = True) -> str:
    """The file's format_version; RecordingFormatError if this code cannot read it
    (``check_calibration``: also if its calibration attribute is not a valid one)."""
    if text(f.attrs.get("format", "")) != L.FORMAT_NAME:
        raise RecordingFormatError("%s: not a WalkerLab recording (an HDF5 file without "
                                   "the attribute format='%s')" % (path, L.FORMAT_NAME))
    version = text(f.attrs.get("format_version", ""))
    try:
        major = parse_version(version)[0]
    except ValueError:
        raise RecordingFormatError("%s: unreadable format_version %r" % (path, version)) \
            from None
    if major != L.FORMAT_MAJOR:
        raise RecordingFormatError(
            "%s: recording format %s is not supported (this WalkerLab reads %d.x; %s)"
            % (path, version, L.FORMAT_MAJOR,
               "upgrade WalkerLab" if major > L.FORMAT_MAJOR else "migrate the file"))
    calibration = text(f.attrs.get("calibration", ""))
    if check_calibration and calibration:
        from calibration import WalkerCalibration

        try:
            WalkerCalibration.from_json(calibration, "calibration")
        except ValueError as exc:  # CalibrationError: says what is wrong with it
            raise RecordingFormatError(
                "%s: its %s; `walkerlab recover %s --calibration FILE --out NEW.h5` "
                "replaces it" % (path, str(exc).splitlines()[0], path)) from None
    return version


def can_read(path) -> bool:
    """True if open_recording(path) would accept the file (cheap: attributes only)."""
    try:
        with open_h5(path) as f:
            check_format(f, path)
        return True
    except (OSError, RecordingFormatError):
        return False


# ---- labels -------------------------------------------------------------------------
@dataclass
class LabelTrack:
    """Segments [start_s, stop_s) of one annotation track, in the timestamps time base.

    Where segments overlap, the later one in the table wins.
    """

    name: str
    start_s: np.ndarray  # float64
    stop_s: np.ndarray  # float64
    activity: np.ndarray  # object array of str
    annotator: str = ""
    source: str = "human"
    model: str = ""
    created: str = ""
    modified: str = ""

    def __len__(self) -> int:
        return len(self.start_s)

    @classmethod
    def from_segments(cls, name: str, segments, **attrs) -> "LabelTrack":
        """segments: (start_s, stop_s, activity) tuples, a LABEL_DTYPE-like array or a
        LabelTrack; checked (finite, start < stop, activity non-empty)."""
        if isinstance(segments, LabelTrack):
            start, stop, act = segments.start_s, segments.stop_s, segments.activity
        elif isinstance(segments, np.ndarray) and segments.dtype.names:
            start, stop, act = segments["start_s"], segments["stop_s"], segments["activity"]
        else:
            rows = list(segments)
            if any(len(r) != 3 for r in rows):
                raise ValueError("label segments must be (start_s, stop_s, activity)")
            start = [r[0] for r in rows]
            stop = [r[1] for r in rows]
            act = [r[2] for r in rows]
        start = np.asarray(start, dtype=np.float64).reshape(-1)
        stop = np.asarray(stop, dtype=np.float64).reshape(-1)
        act = np.array([text(a) for a in act], dtype=object).reshape(-1)
        if not np.all(np.isfinite(start)) or not np.all(np.isfinite(stop)):
            raise ValueError("label track %r: segment times must be finite" % name)
        bad = np.flatnonzero(stop <= start)
        if bad.size:
            raise ValueError("label track %r: segment %d has stop_s <= start_s (%g, %g)"
                             % (name, bad[0], start[bad[0]], stop[bad[0]]))
        if any(a == "" for a in act):
            raise ValueError("label track %r: empty activity name" % name)
        return cls(name, start, stop, act, **attrs)

    def segments(self) -> list[tuple[float, float, str]]:
        return [(float(a), float(b), str(c))
                for a, b, c in zip(self.start_s, self.stop_s, self.activity)]

    def to_array(self) -> np.ndarray:
        out = np.empty(len(self), dtype=L.LABEL_DTYPE)
        out["start_s"] = self.start_s
        out["stop_s"] = self.stop_s
        out["activity"] = self.activity
        return out

    def labels_at(self, time_s) -> np.ndarray:
        """Activity at each time ('' where no segment covers it), as a str array."""
        t = np.asarray(time_s, dtype=np.float64)
        width = max([len(a) for a in self.activity] + [1])
        out = np.zeros(t.shape, dtype="<U%d" % width)
        if not len(self) or not t.size:
            return out
        order = np.argsort(t, kind="stable")
        ts = t[order]
        lo = np.searchsorted(ts, self.start_s, side="left")
        hi = np.searchsorted(ts, self.stop_s, side="left")
        for a, b, act in zip(lo, hi, self.activity):
            out[order[a:b]] = act
        return out


def label_track_names(f: h5py.File) -> list[str]:
    """Names of the datasets under /annotations (groups there are the annotator's)."""
    if L.ANNOTATIONS not in f:
        return []
    g = f[L.ANNOTATIONS]
    if not isinstance(g, h5py.Group):
        raise RecordingFormatError("%s: %s is a dataset, not a group" % (f.filename,
                                                                         L.ANNOTATIONS))
    return [name for name, obj in g.items() if isinstance(obj, h5py.Dataset)]


def _read_track(f: h5py.File, where: str, budget: ReadBudget | None = None) -> LabelTrack:
    """A label track checked against LABEL_DTYPE; RecordingFormatError if damaged."""
    ds = checked_dataset(f, where, L.LABEL_DTYPE, (), budget)
    rows = _decode_strings(ds[()])
    if not (np.isfinite(rows["start_s"]).all() and np.isfinite(rows["stop_s"]).all()):
        raise RecordingFormatError("%s: label track %s has times that are not finite"
                                   % (f.filename, where))
    return LabelTrack(ds.name.rsplit("/", 1)[-1], rows["start_s"].astype(np.float64),
                      rows["stop_s"].astype(np.float64), rows["activity"].astype(object),
                      **{k: text(ds.attrs.get(k, "")) for k in L.LABEL_ATTRS})


# ---- the recording -------------------------------------------------------------------
@dataclass
class Recording:
    """A WalkerLab recording in memory (all but the raw bytes); see recordings/README.md."""

    path: str
    attrs: dict
    samples: SampleBlock
    time_s: np.ndarray  # float64 seconds of each sample (device clock, session reference)
    raw_chunks: np.ndarray  # CHUNK_DTYPE: host_time, offset, length per serial read
    raw_size: int
    info: dict | None  # the latest INFO frame, unpacked (None if none arrived)
    info_table: np.ndarray  # every INFO frame (INFO_DTYPE, strings as str)
    log: np.ndarray  # LOG_DTYPE
    device_activity: np.ndarray  # ACTIVITY_DTYPE
    truth: np.ndarray  # TRUTH_DTYPE
    link_events: np.ndarray  # EVENT_DTYPE
    decoder_events: np.ndarray  # EVENT_DTYPE
    labels: dict[str, LabelTrack]
    counters: dict  # decoder counters (wire.FrameDecoder.counters())
    queue_drops: int
    warnings: list[str] = field(default_factory=list)

    @property
    def format_version(self) -> str:
        return self.attrs["format_version"]

    @property
    def closed_cleanly(self) -> bool:
        return bool(self.attrs.get("closed_cleanly", 0))

    @property
    def calibration(self) -> dict | None:
        raw = self.attrs.get("calibration", "")
        return json.loads(raw) if raw else None

    @property
    def events(self) -> np.ndarray:
        """Link and decoder events merged in host-time order, with a 'source' field."""
        dt = np.dtype([(n, L.EVENT_DTYPE[n]) for n in L.EVENT_DTYPE.names]
                      + [("source", object)])
        parts = []
        for source, table in (("link", self.link_events), ("decoder", self.decoder_events)):
            part = np.empty(len(table), dtype=dt)
            for name in L.EVENT_DTYPE.names:
                part[name] = table[name]
            part["source"] = source
            parts.append(part)
        merged = np.concatenate(parts)
        return merged[np.argsort(merged["host_time"], kind="stable")]

    def raw_bytes(self, start: int = 0, stop: int | None = None) -> bytes:
        """The serial byte log (or a slice of it), read from the file now."""
        with open_h5(self.path) as f:
            return f[L.SERIAL_BYTES][start:stop].tobytes()

    # ---- labels -------------------------------------------------------------------
    def _track(self, track: str) -> LabelTrack:
        try:
            return self.labels[track]
        except KeyError:
            raise KeyError("no label track %r in %s (tracks: %s)"
                           % (track, self.path, ", ".join(sorted(self.labels)) or "none")) \
                from None

    def labels_per_sample(self, track: str) -> np.ndarray:
        """The track's activity at every sample ('' where unlabelled), str array (n,)."""
        return self._track(track).labels_at(self.time_s)

    def label_sample_counts(self, track: str) -> dict[str, int]:
        """{activity: number of samples}; unlabelled samples are not counted."""
        counts = Counter(self.labels_per_sample(track).tolist())
        counts.pop("", None)
        return dict(sorted(counts.items(), key=lambda kv: label_sort_key(kv[0])))

    # ---- summary ------------------------------------------------------------------
    def summary(self) -> dict:
        """The figures `walkerlab info` prints."""
        t = self.samples.t_us
        dt = np.diff(t)
        dt = dt[dt > 0]
        kinds = Counter(self.link_events["kind"].tolist())
        return {
            "path": self.path,
            "format_version": self.format_version,
            "session_start_time": self.attrs.get("session_start_time", ""),
            "subject_id": self.attrs.get("subject_id", ""),
            "walker_id": self.attrs.get("walker_id", ""),
            "firmware_version": self.attrs.get("firmware_version", ""),
            "frames": int(self.counters.get("frames_ok", 0)),
            "samples": len(self.samples),
            "duration_s": float((t.max() - t.min()) / 1e6) if len(t) else 0.0,
            "rate_hz": float(1e6 / np.median(dt)) if len(dt) else 0.0,
            "seq_gaps": int(self.counters.get("seq_gaps", 0)),
            "frames_lost": int(self.counters.get("frames_lost", 0)),
            "crc_errors": int(self.counters.get("crc_errors", 0)),
            "resyncs": int(self.counters.get("resyncs", 0)),
            "dropped": int(self.queue_drops),
            "reconnects": kinds["reconnected"] + kinds["reconnect"],
            "stalls": kinds["stalled"] + kinds["stall"],
            "raw_bytes": int(self.raw_size),
            "label_tracks": sorted(self.labels),
            "closed_cleanly": self.closed_cleanly,
            # The walker's INFO frame (identity, rates) never arrived and no
            # calibration was attached: physical units are nominal guesses.
            "walker_info_missing": self.info is None and not self.calibration,
        }


def _session_from_events(attrs: dict, link_events: np.ndarray) -> None:
    """Session attributes a SWMR writer logged as events and writes at close."""
    for kind, detail in zip(link_events["kind"], link_events["detail"]):
        if kind != L.SESSION_EVENT:
            continue
        try:
            values = json.loads(detail)
        except ValueError:
            continue
        for k, v in values.items() if isinstance(values, dict) else ():
            if k in L.SESSION_ATTRS and isinstance(v, str):
                attrs[k] = v


def _table(f: h5py.File, path: str, dtype: np.dtype, budget: ReadBudget) -> np.ndarray:
    if path not in f:
        return np.zeros(0, dtype=_decode_strings(np.zeros(0, dtype)).dtype)
    return _decode_strings(checked_dataset(f, path, dtype, (), budget)[()])


def _read_samples(f: h5py.File, budget: ReadBudget) -> tuple[SampleBlock, np.ndarray]:
    if L.SAMPLES not in f:
        return SampleBlock.empty(), np.zeros(0)
    g = f[L.SAMPLES]
    if not isinstance(g, h5py.Group):
        raise RecordingFormatError("%s: %s is a dataset, not a group" % (f.filename,
                                                                         L.SAMPLES))
    names = [n for n in L.SAMPLE_COLUMNS if n in g]
    columns = {name: checked_dataset(f, L.SAMPLES + "/" + name, *L.SAMPLE_COLUMNS[name],
                                     budget=budget) for name in names}
    # After a crash the columns may differ in length by one write: keep whole rows.
    n = min(ds.shape[0] for ds in columns.values()) if names else 0
    cols = {name: ds[:n].astype(L.SAMPLE_COLUMNS[name][0], copy=False)
            for name, ds in columns.items()}
    missing = [n for n in SampleBlock.__dataclass_fields__ if n not in cols]
    if missing:
        raise RecordingFormatError("%s: sample columns missing: %s"
                                   % (f.filename, ", ".join(missing)))
    block = SampleBlock(**{name: cols[name] for name in SampleBlock.__dataclass_fields__})
    return block, cols["timestamps"].astype(np.float64)


def check_structures(paths) -> None:
    """Probe each of ``paths`` (files from outside) in the structure probe's child;
    RecordingFormatError (one line naming the file) for the first it could not read
    within its memory and CPU limits. Each file version is probed once per process;
    paths that are not files are left to whoever opens them."""
    from host.recording.structure_probe import probe_structures

    paths = [os.fspath(p) for p in paths if os.path.isfile(p)]
    for path, probe in zip(paths, probe_structures(paths)):
        if not probe.ok:
            raise RecordingFormatError(probe.message(path))


def open_recording(path, *, untrusted: bool = False) -> Recording:
    """Read a recording; RecordingFormatError (one line) if it is not one we can read.

    A file still being written (SWMR) can be caught in the middle of a flush, when
    its metadata is briefly inconsistent; the read is then retried a few times.
    ``untrusted``: the file comes from outside (a user's FILE argument, an import), so
    its structure is first read in a child process under a memory limit
    (structure_probe), as a damaged size field makes libhdf5 allocate gigabytes;
    costs a Python start-up.
    """
    path = os.fspath(path)
    if untrusted:
        check_structures([path])
    for attempt in range(LIVE_READ_ATTEMPTS):
        try:
            try:
                return _open_recording_once(path)
            except HDF5_DAMAGE as exc:
                raise damaged(path, exc) from None
        except RecordingFormatError:
            if attempt == LIVE_READ_ATTEMPTS - 1 or not writer_alive(path):
                raise
            time.sleep(0.2)


#: Reads of a live recording before a damaged-looking one is reported as damaged.
LIVE_READ_ATTEMPTS = 5


def _open_recording_once(path: str) -> Recording:
    with open_h5(path) as f:
        version = check_format(f, path)
        notes = []
        if parse_version(version)[:2] > parse_version(L.FORMAT_VERSION)[:2]:
            notes.append("written by a newer format (%s); parts this WalkerLab does not "
                         "know are ignored" % version)
        attrs = {k: _plain(v) for k, v in f.attrs.items()}
        live = f.mode == "r" and f.swmr_mode and writer_alive(path)
        if live:
            notes.append("the recording is still being written: this is what was "
                         "flushed so far (about every %.1f s)" % L.FLUSH_INTERVAL_S)
        elif not attrs.get("closed_cleanly", 0) and not attrs.get("recovered_at"):
            notes.append("the recording was not closed cleanly (crash or still being "
                         "written); `walkerlab recover` rebuilds it from the raw log")
        budget = ReadBudget(path)
        try:
            samples, time_s = _read_samples(f, budget)
            info_table = _table(f, L.INFO, L.INFO_DTYPE, budget)
            info = None
            if len(info_table):
                info = {k: _plain(v) for k, v in f[L.INFO].attrs.items()}
                if "walker_id" not in info:  # still being written (SWMR): the last row
                    last = info_table[-1]
                    info = {k: _plain(last[k]) for k in info_table.dtype.names
                            if k != "seq"}
            counters = {}
            if L.DECODER_EVENTS in f:
                counters = {k: int(f[L.DECODER_EVENTS].attrs.get(k, 0))
                            for k in L.DECODER_COUNTERS}
            queue_drops = 0
            if L.LINK_EVENTS in f:
                queue_drops = int(f[L.LINK_EVENTS].attrs.get(L.QUEUE_DROPS_ATTR, 0))
            link_events = _table(f, L.LINK_EVENTS, L.EVENT_DTYPE, budget)
            if not attrs.get("closed_cleanly", 0):
                _session_from_events(attrs, link_events)
            if info is not None and not text(attrs.get("walker_id", "")):
                attrs["walker_id"] = text(info.get("walker_id", ""))
            labels = {}
            for name in label_track_names(f):
                labels[name] = _read_track(f, L.ANNOTATIONS + "/" + name, budget)
            rec = Recording(
                path=path, attrs=attrs, samples=samples, time_s=time_s,
                raw_chunks=_table(f, L.SERIAL_CHUNKS, L.CHUNK_DTYPE, budget),
                raw_size=checked_dataset(f, L.SERIAL_BYTES, np.uint8).shape[0]
                if L.SERIAL_BYTES in f else 0,
                info=info, info_table=info_table,
                log=_table(f, L.LOG, L.LOG_DTYPE, budget),
                device_activity=_table(f, L.ACTIVITY, L.ACTIVITY_DTYPE, budget),
                truth=_table(f, L.TRUTH, L.TRUTH_DTYPE, budget),
                link_events=link_events,
                decoder_events=_table(f, L.DECODER_EVENTS, L.EVENT_DTYPE, budget),
                labels=labels, counters=counters, queue_drops=queue_drops, warnings=notes)
        except (OSError, KeyError, ValueError, TypeError) as exc:
            raise RecordingFormatError("%s: damaged recording (%s)" % (path, _one_line(exc))) \
                from None
    for note in notes:
        warnings.warn("%s: %s" % (path, note), RecordingWarning, stacklevel=2)
    return rec


def read_attrs(path) -> dict:
    """A recording's session attributes only (subject, walker, ...), without its data."""
    path = os.fspath(path)
    with open_h5(path) as f:
        check_format(f, path)
        return {k: _plain(v) for k, v in f.attrs.items()}
