"""Write WalkerLab recordings: RecordingWriter (one thread) and RecorderThread.

The writer logs every serial read to the raw byte log and decodes it with its own
StreamDecoder into the derived datasets, so the file always holds exactly what
recover() would rebuild from its raw log. Data is buffered in memory and written and
flushed at least every FLUSH_INTERVAL_S: a plain (non-SWMR) HDF5 file whose datasets
were all created up front survives a kill -9 with at most that much data missing
(tests/recording/test_recording_crash.py: what was flushed survives a kill -9).
"""
from __future__ import annotations

import json
import math
import os
import queue
import socket
import threading
import time

import h5py
import numpy as np

from device.protocol import wire
from host.recording import layout as L
from host.recording.reader import (
    LabelTrack, LabelTrackExistsError, _read_track, check_format, open_h5, text,
)
from host.recording.derive import (
    Appender, Deriver, set_sample_attrs, table_rows,
)
from host.recording.layout import iso_time

TRUTH_HOLD_S = 1.5  # TRUTH is re-sent every second: a label older than this has lapsed
DEFAULT_QUEUE_SIZE = 4096  # RecorderThread items (one per serial read: about 80 s)


def walkerlab_version() -> str:
    try:
        from importlib.metadata import version
        return version("walkerlab")
    except Exception:  # not installed (running from a source tree)
        return "0+unknown"


def _calibration_json(calibration) -> str:
    if calibration is None:
        return ""
    if hasattr(calibration, "to_json"):
        return calibration.to_json()
    if isinstance(calibration, str):
        json.loads(calibration)  # must be JSON
        return calibration
    return json.dumps(calibration)


# ---- label tracks ----------------------------------------------------------------
def check_track_name(name: str) -> str:
    # Names starting with '_' are the annotator's groups (_sync, _staging).
    if (not isinstance(name, str) or not name or "/" in name or name in (".", "..")
            or name.startswith("_")):
        raise ValueError("label track name must be a non-empty string without '/' "
                         "that does not start with '_': %r" % (name,))
    return name



def check_track(track: LabelTrack) -> str:
    """The track's dataset path under /annotations; ValueError for a bad name or source."""
    if track.source not in L.LABEL_SOURCES:
        raise ValueError("label source must be one of %s, not %r"
                         % (", ".join(L.LABEL_SOURCES), track.source))
    return L.ANNOTATIONS + "/" + check_track_name(track.name)


def create_track_table(f: h5py.File, path: str, track: LabelTrack, *, created: str,
                       modified: str) -> h5py.Dataset:
    """A new label dataset at ``path`` holding the track's segments and attributes."""
    rows = track.to_array()
    ds = L.create_table(f, path, L.LABEL_DTYPE)
    ds.resize(len(rows), axis=0)
    ds[:] = rows
    for k in ("annotator", "source", "model"):
        ds.attrs[k] = getattr(track, k)
    ds.attrs["created"] = created
    ds.attrs["modified"] = modified
    return ds


def _write_track(f: h5py.File, track: LabelTrack, mode: str) -> LabelTrack:
    if mode not in ("new", "append", "replace"):
        raise ValueError("mode must be 'new', 'append' or 'replace', not %r" % (mode,))
    path = check_track(track)
    now = iso_time()
    rows = track.to_array()
    exists = path in f
    if exists and mode == "new":
        raise LabelTrackExistsError("label track %r already exists in %s; use mode "
                                    "'append' or 'replace'" % (track.name, f.filename))
    if exists and mode == "append":
        ds = f[path]
        old_source = text(ds.attrs.get("source", ""))
        if old_source != track.source:
            raise ValueError("label track %r has source %r; cannot append %r labels"
                             % (track.name, old_source, track.source))
        n = ds.shape[0]
        ds.resize(n + len(rows), axis=0)
        ds[n:] = rows
        ds.attrs["modified"] = now
    else:
        if exists:
            del f[path]
        create_track_table(f, path, track, created=now, modified=now)
    return _read_track(f, path)


def write_labels(path, track: str, segments, *, annotator: str = "",
                 source: str = "human", model: str = "", mode: str = "new") -> LabelTrack:
    """Add a label track to an existing recording, touching nothing else.

    segments: (start_s, stop_s, activity) tuples in the recording's timestamps time
    base, a LABEL_DTYPE array or a LabelTrack. mode: 'new' (LabelTrackExistsError if
    the track exists), 'append' (same source required) or 'replace'.
    """
    new = LabelTrack.from_segments(track, segments, annotator=annotator, source=source,
                                   model=model)
    with open_h5(path, "r+") as f:
        check_format(f, path)
        out = _write_track(f, new, mode)
        f.attrs["writer_version"] = walkerlab_version()
    return out


def truth_segments(truth_time_s, codes, sample_time_s) -> list[tuple[float, float, str]]:
    """TRUTH frames (sent on change and every second) -> label segments.

    A label holds until the next TRUTH frame, at most TRUTH_HOLD_S; the last one until
    just after the last sample. Consecutive equal labels merge; '' means no label.
    """
    truth_time_s = np.asarray(truth_time_s, dtype=np.float64)
    sample_time_s = np.asarray(sample_time_s, dtype=np.float64)
    if not len(truth_time_s):
        return []
    dt = np.diff(sample_time_s)
    dt = dt[dt > 0]
    period = float(np.median(dt)) if len(dt) else 0.0
    end = max(float(truth_time_s.max()),
              float(sample_time_s.max()) if len(sample_time_s) else -math.inf) + period
    out: list[tuple[float, float, str]] = []
    n = len(truth_time_s)
    for i in range(n):
        start = float(truth_time_s[i])
        nxt = float(truth_time_s[i + 1]) if i + 1 < n else end
        stop = min(nxt, start + TRUTH_HOLD_S)
        code = codes[i]
        if not code or stop <= start:
            continue
        if out and out[-1][2] == code and out[-1][1] == start:
            out[-1] = (out[-1][0], stop, code)
        else:
            out.append((start, stop, code))
    return out


def write_truth_track(f: h5py.File) -> LabelTrack | None:
    """Turn /acquisition/truth into the label track 'simulator' (if there are frames).

    A track of that name from another source is left alone.
    """
    truth = f[L.TRUTH][()]
    if not len(truth):
        return None
    path = L.ANNOTATIONS + "/" + L.SIMULATOR_TRACK
    if path in f and text(f[path].attrs.get("source", "")) != "simulator":
        return None
    segments = truth_segments(truth["timestamps"], [text(c) for c in truth["code"]],
                              f[L.SAMPLES]["timestamps"][()])
    track = LabelTrack.from_segments(L.SIMULATOR_TRACK, segments, annotator="simulator",
                                     source="simulator",
                                     model="virtual walker firmware %s"
                                     % text(f.attrs.get("firmware_version", "")))
    return _write_track(f, track, "replace")


# ---- the writer ----------------------------------------------------------------------
# HDF5's per-dataset chunk cache (1 MB each by default) fills with the chunks an
# append-only writer has finished with: RSS grew ~25 MB per recorded hour. A small
# cache keeps memory flat over long recordings (benchmarks/bench_stress.py, soak).
CHUNK_CACHE_BYTES = 64 * 1024
_TEARDOWN_SKIPPED = []
EXIT_CODE_AFTER_WRITE_FAILURE = 2


def _skip_hdf5_teardown_at_exit() -> None:
    if _TEARDOWN_SKIPPED:
        return
    import atexit
    import sys

    def leave() -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_CODE_AFTER_WRITE_FAILURE)

    _TEARDOWN_SKIPPED.append(True)
    atexit.register(leave)  # Python's atexit runs before the C library's teardown


# SWMR needs the v110 object formats; HDF5 >= 1.10 reads them.
SWMR_LIBVER = ("v110", "latest")


def _hold_writer_lock(path: str) -> int:
    """An OFD write lock on the recording: reader.writer_alive() sees it while this
    process lives, the kernel drops it when the process dies (kill -9 included)."""
    import fcntl
    import struct
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.fcntl(fd, getattr(fcntl, "F_OFD_SETLK", 37),
                    struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 0, 0))
    except OSError:
        os.close(fd)
        raise
    return fd


def _release_writer_lock(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


class RecordingWriter:
    """Owns one recording's h5py.File; use it from one thread (or via RecorderThread).

    write_serial(data, host_time) for every read from the port (the bytes go to the raw
    log and through the writer's StreamDecoder), write_event() for link events.
    With swmr=True (the default) other processes can read the file while it is
    written (recordings/README.md, "Reading while recording"); swmr=False writes a
    plain HDF5 file that only this process may open until close.
    Everything is flushed at least every flush_interval_s; close() decodes what the
    decoder held back, writes the 'simulator' label track from TRUTH frames and marks
    the file closed_cleanly.
    """

    def __init__(self, path, *, overwrite: bool = False, subject_id: str = "",
                 walker_id: str = "", firmware_version: str = "", calibration=None,
                 notes: str = "", host: str | None = None, app_version: str | None = None,
                 session_start_time: float | None = None,
                 flush_interval_s: float = L.FLUSH_INTERVAL_S, swmr: bool = True) -> None:
        self.path = os.fspath(path)
        if os.path.isdir(self.path):
            raise IsADirectoryError("%s: is a directory" % self.path)
        if os.path.exists(self.path) and not overwrite:
            raise FileExistsError("%s: already exists; choose another name or overwrite "
                                  "it explicitly" % self.path)
        calibration_json = _calibration_json(calibration)
        self.flush_interval_s = flush_interval_s
        self.swmr = bool(swmr)
        self._f = h5py.File(self.path, "w" if overwrite else "x",
                            libver=SWMR_LIBVER if swmr else None,
                            rdcc_nbytes=CHUNK_CACHE_BYTES)
        self._lock_fd: int | None = None
        try:
            version = walkerlab_version()
            attrs = self._f.attrs
            for name, (default, _) in L.ROOT_ATTRS.items():
                attrs[name] = np.int64(default) if isinstance(default, int) else default
            attrs.update({
                "writer_version": version, "writer_version_at_creation": version,
                "app_version": app_version or version,
                "protocol_version": np.int64(wire.PROTOCOL_VERSION),
                "session_start_time": iso_time(session_start_time),
                "subject_id": L.storable_text(subject_id),
                "walker_id": L.storable_text(walker_id),
                "firmware_version": L.storable_text(firmware_version),
                "calibration": calibration_json, "notes": L.storable_text(notes),
                "host": L.storable_text(socket.gethostname() if host is None else host),
                "layout": L.layout_description(),
            })
            L.create_raw(self._f)
            L.create_derived(self._f)
            set_sample_attrs(self._f)
            self._f.flush()
            # Every group and dataset exists now: readers may follow from here on.
            self._lock_fd = _hold_writer_lock(self.path)
            if self.swmr:
                self._f.swmr_mode = True
        except BaseException:
            self._f.close()
            _release_writer_lock(self._lock_fd)
            os.unlink(self.path)
            raise
        self._bytes: list[bytes] = []
        self._n_bytes = 0
        self._raw = Appender(self._f[L.SERIAL_BYTES])
        self._chunks = Appender(self._f[L.SERIAL_CHUNKS])
        self._link = Appender(self._f[L.LINK_EVENTS])
        self._deriver = Deriver(self._f)
        self._queue_drops = self._queue_drops_written = 0
        self._session: dict[str, str] = {}  # set while in SWMR mode, written at close
        self._labels: list[tuple[LabelTrack, str]] = []  # likewise
        self._last_flush = time.monotonic()
        self.closed = False

    # ---- input ------------------------------------------------------------------
    def write_serial(self, data: bytes, host_time: float | None = None) -> None:
        """One read from the serial port: log it and decode it."""
        self._check_open()
        if not data:
            return
        host_time = time.time() if host_time is None else float(host_time)
        data = bytes(data)
        self._raw.add(np.frombuffer(data, dtype=np.uint8))
        self._chunks.add(np.array([(host_time, self._raw.rows - len(data), len(data))],
                                  dtype=L.CHUNK_DTYPE))
        self._deriver.feed(data, host_time)
        self.flush_if_due()

    def write_event(self, kind: str, detail: str = "", value: int = 0,
                    host_time: float | None = None) -> None:
        """A link event (connected, reconnected, stalled, ...): host-side facts."""
        self._check_open()
        host_time = time.time() if host_time is None else float(host_time)
        self._link.add(table_rows(L.EVENT_DTYPE, [(host_time, L.storable_text(kind),
                                              L.storable_text(detail), int(value))]))
        self.flush_if_due()

    def write_batch(self, batch) -> None:
        """A host.link.LinkBatch (anything with host_time, raw and events)."""
        for ev in batch.events:
            self.write_event(ev.kind, ev.detail, ev.value, ev.host_time)
        self.write_serial(batch.raw, batch.host_time)

    def record_queue_drops(self, total: int, host_time: float | None = None) -> None:
        """The producer queue dropped `total` items so far: event + attribute."""
        if total > self._queue_drops:
            self.write_event("queue_overflow", "recorder queue full: %d item(s) dropped"
                             % (total - self._queue_drops), total - self._queue_drops,
                             host_time)
            self._queue_drops = total

    def write_labels(self, track: str, segments, *, annotator: str = "",
                     source: str = "human", model: str = "", mode: str = "new") -> LabelTrack:
        new = LabelTrack.from_segments(track, segments, annotator=annotator, source=source,
                                       model=model)
        if self._f.swmr_mode:  # no new objects in SWMR mode: written at close
            check_track(new)
            if mode not in ("new", "append", "replace"):
                raise ValueError("mode must be 'new', 'append' or 'replace', not %r"
                                 % (mode,))
            self._labels.append((new, mode))
            return new
        return _write_track(self._f, new, mode)

    def set_session(self, **attrs) -> None:
        """Change session attributes (notes, subject_id, ...) during the recording."""
        for k, v in attrs.items():
            if k not in L.SESSION_ATTRS:
                raise ValueError("%r is not a session attribute (%s)"
                                 % (k, ", ".join(L.SESSION_ATTRS)))
        values = {k: _calibration_json(v) if k == "calibration" else L.storable_text(v)
                  for k, v in attrs.items()}
        if self._f.swmr_mode:
            # Attributes wait for close; the link-event table carries them now, so a
            # live reader and recover() after a crash have them (L.SESSION_EVENT).
            self._session.update(values)
            self.write_event(L.SESSION_EVENT, json.dumps(values))
            return
        for k, v in values.items():
            self._set_session_attr(k, v)

    def _set_session_attr(self, k: str, v: str) -> None:
        self._f.attrs[k] = v
        if k == "calibration":  # the per-channel attributes follow it
            set_sample_attrs(self._f, self._f[L.INFO].attrs if L.INFO in self._f
                             and len(self._f[L.INFO]) else None)

    # ---- state ------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("%s: the recording is closed" % self.path)

    @property
    def n_samples(self) -> int:
        return self._deriver.n_samples

    @property
    def n_bytes(self) -> int:
        return self._raw.rows

    def counters(self) -> dict:
        return dict(self._deriver.decoder.counters(), samples=self.n_samples,
                    queue_drops=self._queue_drops)

    def next_flush_in(self) -> float:
        return self._last_flush + self.flush_interval_s - time.monotonic()

    # ---- output -----------------------------------------------------------------
    def flush(self) -> None:
        """Write everything buffered and hand it to the OS (h5py flush)."""
        self._raw.commit()
        self._chunks.commit()
        self._link.commit()
        if not self._f.swmr_mode:
            self._write_writer_attrs()
        self._deriver.commit()
        self._f.flush()
        self._last_flush = time.monotonic()

    def _write_writer_attrs(self) -> None:
        if self._queue_drops != self._queue_drops_written:
            self._f[L.LINK_EVENTS].attrs[L.QUEUE_DROPS_ATTR] = np.int64(self._queue_drops)
            self._queue_drops_written = self._queue_drops

    def flush_if_due(self) -> bool:
        if self.next_flush_in() <= 0:
            self.flush()
            return True
        return False

    def close(self) -> None:
        """Decode the rest, write the TRUTH label track, mark the file clean, close."""
        if self.closed:
            return
        try:
            self._deriver.finish()
            self.flush()
            # SWMR forbids new objects: the TRUTH track and the end marks go in after
            # the SWMR writer closes, in a plain re-open (a finished file opens plainly).
            if self.swmr:
                self._f.close()
                # SWMR readers hold a shared HDF5 lock that would refuse this open;
                # the writer's own OFD lock already keeps other writers out.
                self._f = h5py.File(self.path, "r+", libver=SWMR_LIBVER, locking=False)
            self._deriver.f = self._f
            self._deriver.commit_attrs()
            self._write_writer_attrs()
            for k, v in self._session.items():
                self._set_session_attr(k, v)
            for track, mode in self._labels:
                _write_track(self._f, track, mode)
            write_truth_track(self._f)
            self._f.attrs["session_end_time"] = iso_time()
            self._f.attrs["closed_cleanly"] = np.int64(1)
            self._f.flush()
        finally:
            self.closed = True
            try:
                self._f.close()
            finally:
                _release_writer_lock(self._lock_fd)
                self._lock_fd = None

    def abort(self) -> None:
        """Close without marking the file clean (after an error); keeps what was flushed."""
        if not self.closed:
            self.closed = True
            try:
                self._f.close()
                _release_writer_lock(self._lock_fd)
                self._lock_fd = None
            except Exception:
                # The disk is full (or gone): HDF5 keeps the file half-closed and its
                # library teardown at exit then crashes (SIGSEGV/SIGBUS, HDF5 1.14).
                # What was flushed is on disk; leave without that teardown.
                _skip_hdf5_teardown_at_exit()

    def __enter__(self) -> "RecordingWriter":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        else:
            try:
                self.close()
            except Exception:
                self.abort()


# ---- the thread ------------------------------------------------------------------------
_STOP = object()


class RecorderThread:
    """A RecordingWriter driven by its own thread, fed through a bounded queue.

    put(batch) (a host.link sink), put_serial() and put_event() never block: when
    the queue is full the item is dropped and counted (`dropped`), and the writer
    thread records a queue_overflow event. The thread flushes at least every
    flush interval; close() drains the queue, writes the TRUTH label track and
    closes the file, and re-raises an error the writer thread met.
    """

    def __init__(self, writer, *, maxsize: int = DEFAULT_QUEUE_SIZE, **writer_kwargs) -> None:
        if not isinstance(writer, RecordingWriter):
            writer = RecordingWriter(writer, **writer_kwargs)
        elif writer_kwargs:
            raise TypeError("writer options go to RecordingWriter, not an existing writer")
        self.writer = writer
        self._queue: queue.Queue = queue.Queue(maxsize)
        self._drop_lock = threading.Lock()
        self.dropped = 0
        self.error: BaseException | None = None
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="walkerlab-recorder",
                                        daemon=True)

    # ---- producers (any thread) ---------------------------------------------------
    def _put(self, item) -> bool:
        if not self._closing and self.error is None:
            try:
                self._queue.put_nowait(item)
                return True
            except queue.Full:
                pass
        with self._drop_lock:
            self.dropped += 1
        return False

    def put(self, batch) -> bool:
        """A host.link.LinkBatch; False if it had to be dropped."""
        return self._put(("batch", batch))

    def put_serial(self, data: bytes, host_time: float | None = None) -> bool:
        return self._put(("serial", bytes(data),
                          time.time() if host_time is None else host_time))

    def put_event(self, kind: str, detail: str = "", value: int = 0,
                  host_time: float | None = None) -> bool:
        return self._put(("event", kind, detail, value,
                          time.time() if host_time is None else host_time))

    def put_session(self, **attrs) -> bool:
        """Session attributes learnt while recording (walker id, calibration, ...)."""
        return self._put(("session", attrs))

    # ---- the writer thread ----------------------------------------------------------
    def start(self) -> "RecorderThread":
        self._thread.start()
        return self

    def _handle(self, item) -> None:
        kind = item[0]
        if kind == "serial":
            self.writer.write_serial(item[1], item[2])
        elif kind == "batch":
            self.writer.write_batch(item[1])
        elif kind == "session":
            self.writer.set_session(**item[1])
        else:
            self.writer.write_event(*item[1:])

    def _run(self) -> None:
        w = self.writer
        try:
            while True:
                try:
                    item = self._queue.get(timeout=max(0.0, w.next_flush_in()))
                except queue.Empty:
                    item = None
                if item is _STOP:
                    break
                if item is not None:
                    self._handle(item)
                w.record_queue_drops(self.dropped)
                w.flush_if_due()
            while True:  # items that raced past close()
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not _STOP:
                    self._handle(item)
            w.record_queue_drops(self.dropped)
            w.close()
        except BaseException as exc:  # disk full, ...: keep what was flushed
            self.error = exc
            w.abort()

    def close(self, timeout: float | None = 30.0) -> None:
        """Drain, write the TRUTH label track, close the file; re-raise writer errors."""
        if not self._thread.is_alive():
            if self._thread.ident is None and self.error is None:  # never started
                self._closing = True
                self.writer.record_queue_drops(self.dropped)
                self.writer.close()
            elif self.error is not None:
                raise self.error
            return
        self._closing = True
        while self._thread.is_alive():
            try:
                self._queue.put(_STOP, timeout=0.1)
                break
            except queue.Full:
                continue
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("recorder thread did not finish within %s s" % timeout)
        with self._drop_lock:  # put() calls that raced past the final drain
            self.dropped += self._queue.qsize()
        if self.error is not None:
            raise self.error

    def __enter__(self) -> "RecorderThread":
        if self._thread.ident is None:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()
