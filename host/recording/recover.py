"""recover(): rebuild every derived dataset of a recording from its raw byte log.

The raw log is fed, read by read with the host times it was read at, through the
same StreamDecoder and the same code (derive.Deriver) as the live writer, so a recovered
file holds exactly what a clean recording of those bytes would have held. Used after
a crash (the last flush may have left derived data behind the raw log, and the TRUTH
label track is missing) and after a decoder fix. The raw log, link events, queue
drops, session attributes and non-simulator label tracks are never modified.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
from dataclasses import dataclass, field

import h5py
import numpy as np

from host.recording import layout as L
from host.recording.reader import (
    HDF5_DAMAGE, ReadBudget, RecordingFormatError, TruncatedRecordingError, check_format,
    checked_dataset, damaged, open_h5, text,
)
from host.recording.structure_probe import ProbeResult, probe_structure
from host.recording.derive import Deriver, set_sample_attrs
from host.recording.layout import iso_time
from host.recording.writer import walkerlab_version, write_truth_track

_COMMIT_EVERY = 4096  # reads between commits, to bound memory on long logs


@dataclass
class RecoverReport:
    path: str  # the file that was written
    raw_bytes: int
    reads: int  # rows of /acquisition/serial/chunks used
    ignored_reads: int  # rows pointing past the end of the byte log (crash)
    trailing_bytes: int  # bytes after the last read row, decoded as one more read
    samples_before: int
    samples: int
    frames: int
    counters: dict
    salvaged_from: int = 0  # a truncated source: its size in bytes (0: not truncated)
    left_out: list = field(default_factory=list)  # unreadable objects not copied


def _attach_calibration(f: h5py.File, calibration) -> None:
    """Session attributes from a calibration (when the walker's INFO never arrived)."""
    f.attrs["calibration"] = calibration.to_json()
    if calibration.walker_id:
        f.attrs["walker_id"] = calibration.walker_id


def _copy_attribute(src, dst, name: str) -> None:
    """Copy one root attribute; a damaged string (bytes that are not UTF-8 come back
    from h5py with surrogates, which it cannot write) is stored with backslash escapes,
    and an attribute that cannot be read at all is left out: recover never fails on one."""
    try:
        value = src[name]
    except (OSError, ValueError, TypeError, KeyError):
        return
    try:
        dst[name] = value
    except (UnicodeEncodeError, TypeError, ValueError):
        if isinstance(value, str):
            dst[name] = L.storable_text(value)


def copy_object(src, dst_parent: h5py.Group, name: str, budget: ReadBudget):
    """Copy a group (with everything in it) or a dataset of a file from outside into
    ``dst_parent`` as ``name``, attributes included, reading only the elements its
    dataspace holds, each dataset's size charged to ``budget`` first.

    Not h5py's Group.copy (H5Ocopy): that converts variable-length data a whole chunk
    at a time, so whatever lies in a table's last chunk past its last row (never read
    otherwise: a damaged or half-written file) is taken for strings of the lengths it
    says, and one damaged label track made it allocate 1.9 GB (fuzz file 1669, seed 1).
    The rows a dataspace holds are the ones structure_probe reads under its limit.
    """
    if isinstance(src, h5py.Group):
        out = dst_parent.create_group(name)
        for child in src:
            copy_object(src[child], out, child, budget)
    elif isinstance(src, h5py.Dataset):
        budget.take(int(src.size or 0) * src.dtype.itemsize, src.name)  # None: empty
        out = dst_parent.create_dataset(name, data=src[()], dtype=src.dtype,
                                        maxshape=src.maxshape, chunks=src.chunks)
    else:  # a named datatype: no data to convert
        src.parent.copy(src, dst_parent, name=name)
        return dst_parent[name]
    for k in src.attrs:
        _copy_attribute(src.attrs, out.attrs, k)
    return out


def _closed_cleanly(f: h5py.File) -> bool:
    try:
        return int(f.attrs.get("closed_cleanly", 0)) == 1
    except (TypeError, ValueError):  # a damaged attribute: treat as not closed
        return False


def _apply_session_events(f: h5py.File, source: str) -> None:
    """Session attributes a SWMR writer logged as link events but died before
    writing as attributes (format 1.1)."""
    if L.LINK_EVENTS not in f:
        return
    events = checked_dataset(f, L.LINK_EVENTS, L.EVENT_DTYPE, (), ReadBudget(source),
                             source)[()]
    for kind, detail in zip(events["kind"], events["detail"]):
        if text(kind) != L.SESSION_EVENT:
            continue
        try:
            values = json.loads(text(detail))
        except ValueError:
            continue
        for k, v in values.items() if isinstance(values, dict) else ():
            if k in L.SESSION_ATTRS and isinstance(v, str):
                f.attrs[k] = v


def _rebuild(f: h5py.File, path: str, calibration=None, source: str | None = None
             ) -> RecoverReport:
    """Rebuild f's derived datasets from its raw log; ``source`` (default ``path``) is
    the file the raw log came from, named in messages and bounding what is read."""
    source = source or path
    if L.SERIAL_BYTES not in f or L.SERIAL_CHUNKS not in f:
        raise RecordingFormatError("%s: no raw byte log to recover from" % source)
    before = f[L.SAMPLES + "/seq"].shape[0] if L.SAMPLES + "/seq" in f else 0
    for p in L.DERIVED_PATHS:
        if p in f:
            del f[p]
    f.attrs["timestamps_reference_device_us"] = np.int64(-1)
    f.attrs["timestamps_reference_time"] = ""
    if not _closed_cleanly(f):
        _apply_session_events(f, source)
    if calibration is not None:
        _attach_calibration(f, calibration)
    L.create_derived(f)
    set_sample_attrs(f)
    deriver = Deriver(f)

    budget = ReadBudget(source)
    raw = checked_dataset(f, L.SERIAL_BYTES, np.uint8, (), budget, source)[()]
    chunks = checked_dataset(f, L.SERIAL_CHUNKS, L.CHUNK_DTYPE, (), budget, source)[()]
    n = len(raw)
    ok = (chunks["offset"] >= 0) & (chunks["length"] > 0) & \
         (chunks["offset"] + chunks["length"] <= n)
    used = chunks[ok]
    end = int((used["offset"] + used["length"]).max()) if len(used) else 0
    for i, (host_time, offset, length) in enumerate(used.tolist()):
        deriver.feed(raw[offset:offset + length].tobytes(), host_time)
        if i % _COMMIT_EVERY == _COMMIT_EVERY - 1:
            deriver.commit()
    trailing = n - end
    if trailing > 0:
        host_time = float(used["host_time"][-1]) if len(used) else float("nan")
        deriver.feed(raw[end:].tobytes(), host_time)
    deriver.finish()
    deriver.commit()
    if L.LINK_EVENTS not in f:
        L.create_table(f, L.LINK_EVENTS, L.EVENT_DTYPE)
    if L.ANNOTATIONS in f and not isinstance(f[L.ANNOTATIONS], h5py.Group):
        raise RecordingFormatError("%s: %s is a dataset, not a group of label tracks"
                                   % (source, L.ANNOTATIONS))
    f.require_group(L.ANNOTATIONS)
    write_truth_track(f)
    f.attrs["recovered_at"] = iso_time()
    f.attrs["writer_version"] = walkerlab_version()
    counters = deriver.decoder.counters()
    return RecoverReport(path=path, raw_bytes=n, reads=len(used),
                         ignored_reads=int((~ok).sum()), trailing_bytes=max(trailing, 0),
                         samples_before=before, samples=deriver.n_samples,
                         frames=counters["frames_ok"], counters=counters)


def recover(path, out_path=None, *, overwrite: bool = False,
            calibration=None) -> RecoverReport:
    """Rebuild the derived datasets from the raw log (see _recover); whatever a damaged
    file makes HDF5 raise is a one-line RecordingFormatError."""
    try:
        return _recover(path, out_path, overwrite=overwrite, calibration=calibration)
    except HDF5_DAMAGE as exc:
        raise damaged(os.fspath(path), exc) from None


def _recover(path, out_path=None, *, overwrite: bool = False,
             calibration=None) -> RecoverReport:
    """Rebuild the derived datasets from the raw log, in place or into out_path.

    ``calibration`` (a :class:`calibration.WalkerCalibration`) is attached first, for
    recordings whose walker INFO frame never arrived: the walker id and calibration
    then come from it and the physical units are derived with it.

    In place, the derived datasets are deleted and rewritten; the raw log is left as
    it is. With out_path, a new compact file gets a copy of the raw log, link events,
    label tracks and attributes plus the rebuilt datasets (FileExistsError if out_path
    exists, unless overwrite=True). Works on files whose writer was killed.
    """
    src = os.fspath(path)
    if out_path is not None and os.path.exists(out_path) and os.path.samefile(src, out_path):
        out_path = None
    probe = probe_structure(src) if os.path.isfile(src) else None
    if probe is not None and not probe.ok:
        return _recover_around(probe, src, out_path, overwrite, calibration)
    try:
        open_h5(src, live_ok=False).close()
        if out_path is None:
            seal(src)
    except TruncatedRecordingError as cut:
        if out_path is None:
            raise RecordingFormatError(
                "%s: the file is truncated; recover it into a new file with --out NEW.h5 "
                "(the truncated file is kept as it is)" % src) from None
        return _salvage(cut, os.fspath(out_path), overwrite, calibration)
    if out_path is None:
        with open_h5(src, "r+") as f:
            check_format(f, src, check_calibration=calibration is None)
            return _rebuild(f, src, calibration)
    return _rebuild_into(src, os.fspath(out_path), overwrite, calibration)


def _rebuild_into(src: str, out: str, overwrite: bool, calibration,
                  probe: ProbeResult | None = None) -> RecoverReport:
    """A new file ``out``: src's raw log, link events, label tracks and attributes
    (those ``probe`` found readable) plus the datasets rebuilt from the raw log."""
    if os.path.exists(out) and not overwrite:
        raise FileExistsError("%s: already exists; choose another name or overwrite it "
                              "explicitly" % out)
    left_out, budget = [], ReadBudget(src)
    with open_h5(src) as s:
        check_format(s, src, check_calibration=calibration is None)
        d = h5py.File(out, "w" if overwrite else "x")
        try:
            for k in s.attrs:
                _copy_attribute(s.attrs, d.attrs, k)
            for p in (L.SERIAL, L.LINK_EVENTS, L.ANNOTATIONS):
                if p not in s:
                    continue
                parent = d.require_group(p.rsplit("/", 1)[0] or "/")
                if probe is None or not probe.unreadable(p) and not any(
                        b.startswith(p + "/") for b in probe.too_big):
                    copy_object(s[p], parent, p.rsplit("/", 1)[1], budget)
                    continue
                # Damaged parts are left out, one object at a time (label tracks).
                if probe.unreadable(p) or not isinstance(s[p], h5py.Group):
                    left_out.append(p)
                    continue
                group = parent.require_group(p.rsplit("/", 1)[1])
                for name in s[p]:
                    if probe.unreadable(p + "/" + name):
                        left_out.append(p + "/" + name)
                    else:
                        copy_object(s[p + "/" + name], group, name, budget)
            report = _rebuild(d, out, calibration, source=src)
            report.left_out = left_out
        except BaseException:
            d.close()
            os.unlink(out)
            raise
        d.close()
    return report


def _recover_around(probe: ProbeResult, src: str, out_path, overwrite: bool,
                    calibration) -> RecoverReport:
    """Recover a file whose structure the probe could not wholly read (see
    structure_probe): into a new file only, leaving the unreadable objects out; when
    the raw log itself is among them, or the library crashed or hung, from the frames
    found in the file's bytes."""
    if out_path is None:
        raise RecordingFormatError(
            "%s: %s; recover it into a new file with --out NEW.h5 (the damaged file is "
            "kept as it is)" % (src, probe.problem()))
    out = os.fspath(out_path)
    if os.path.exists(out) and not overwrite:
        raise FileExistsError("%s: already exists; choose another name or overwrite it "
                              "explicitly" % out)
    if probe.failed is None and not probe.unreadable(L.SERIAL_BYTES) and \
            not probe.unreadable(L.SERIAL_CHUNKS):
        open_h5(src, live_ok=False).close()
        return _rebuild_into(src, out, True, calibration, probe)
    report = _salvage_frames(src, out, calibration)
    report.left_out = ["everything but the frames in its bytes (%s)" % probe.problem()]
    return report


def seal(path) -> bool:
    """A SWMR recording whose writer died -> a plain HDF5 file (True if it was one).

    HDF5 marks a file open for SWMR writing in its superblock and refuses plain opens
    until that mark is cleared; the writer clears it on close.  Here every object is
    copied through a SWMR read into a new file that replaces the old one in one rename,
    so a crash during sealing leaves the unsealed original.
    """
    path = os.fspath(path)
    try:
        h5py.File(path, "r").close()
        return False
    except OSError as exc:
        if "already open for write" not in str(exc):
            return False  # not ours to seal; open_h5 reports what is wrong
    tmp = os.path.join(os.path.dirname(path) or ".",
                       "." + os.path.basename(path) + ".sealing")
    budget = ReadBudget(path)
    try:
        with h5py.File(path, "r", swmr=True) as s, h5py.File(tmp, "w") as d:
            for k in s.attrs:
                _copy_attribute(s.attrs, d.attrs, k)
            for name in s:
                copy_object(s[name], d, name, budget)
        shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True


# ---- truncated files ----------------------------------------------------------------
_READ_BLOCK = 1 << 16


def _intact_length(ds, file_size: int) -> int:
    """Rows of a 1-D dataset whose storage lies wholly before ``file_size``."""
    n = ds.shape[0]
    if ds.chunks is None:
        offset = ds.id.get_offset()
        if offset is None:
            return 0
        return max(0, min(n, (file_size - offset) // max(ds.dtype.itemsize, 1)))
    try:
        for i in range(ds.id.get_num_chunks()):
            info = ds.id.get_chunk_info(i)
            if info.byte_offset + info.size > file_size:
                n = min(n, info.chunk_offset[0])
    except (OSError, RuntimeError, ValueError):
        return 0  # the chunk index itself is past the cut
    return n


def _readable_prefix(ds, file_size: int) -> np.ndarray:
    """The leading rows of a 1-D dataset that survive a cut at ``file_size``."""
    parts, n = [], _intact_length(ds, file_size)
    for start in range(0, n, _READ_BLOCK):
        try:
            parts.append(ds[start:min(n, start + _READ_BLOCK)])
        except (OSError, RuntimeError, ValueError):
            break
    return np.concatenate(parts) if parts else ds[:0]


def _scan_for_frames(path: str, host_time: float) -> tuple[np.ndarray, np.ndarray]:
    """Last resort when the raw log's index is past the cut: the raw log is stored
    uncompressed, so its frames are still in the file's bytes. Decode the whole file
    as a byte stream (sync, length, type and CRC make a false frame practically
    impossible) and keep the frames found, re-encoded, as one read at ``host_time``
    (the session's start: the host times of the reads are lost with the index)."""
    from device.protocol import wire

    with open(path, "rb") as fh:
        data = fh.read()
    dec = wire.FrameDecoder(track_sequence=False)
    frames = dec.feed(data) + dec.finish()
    raw = np.frombuffer(b"".join(f.encode() for f in frames), dtype=np.uint8)
    chunks = np.zeros(1 if len(raw) else 0, dtype=L.CHUNK_DTYPE)
    if len(raw):
        chunks[0] = (host_time, 0, len(raw))
    return raw, chunks


def _session_start(f: h5py.File, path: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(f.attrs["session_start_time"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return os.path.getmtime(path)


# HDF5 can spin forever on metadata past the cut: the child must have read the
# file's structure within this time (the rebuild after it may take as long as it needs).
STRUCTURE_TIMEOUT_S = 20.0


def _salvage(cut: TruncatedRecordingError, out: str, overwrite: bool,
             calibration) -> RecoverReport:
    """Rebuild a new recording from what survives of a truncated one.

    First through HDF5 (_salvage_hdf5: keeps the session attributes, link events and
    labels), in a child process: the HDF5 library can loop forever or crash on
    metadata that lies past the cut, and a user's `recover` must never hang. If the
    child fails or times out, the frames are found by decoding the file's bytes
    (_salvage_bytes); only the session attributes are lost then, and `--calibration`
    puts the calibration back.
    """
    import multiprocessing as mp

    if os.path.exists(out) and not overwrite:
        raise FileExistsError("%s: already exists; choose another name or overwrite it "
                              "explicitly" % out)
    ctx = mp.get_context("spawn")
    answer = ctx.Queue()
    child = ctx.Process(target=_salvage_child, daemon=True,
                        args=(answer, (cut.path, cut.size, cut.expected), out, calibration))
    child.start()
    kind, value = _next_answer(answer, child, STRUCTURE_TIMEOUT_S)
    if kind == "opened":
        kind, value = _next_answer(answer, child, None)
    if child.is_alive():
        child.kill()
    child.join()
    if kind == "ok":
        return value
    if kind == "error" and not isinstance(value, _HDF5Unusable):
        raise value
    for leftover in (out, out + ".padded.tmp"):
        if os.path.exists(leftover):
            os.unlink(leftover)
    return _salvage_bytes(cut, out, calibration)


def _next_answer(answer, child, timeout: float | None):
    """The child's next message, or ("died", None) if it hangs or dies first."""
    import queue
    import time

    deadline = None if timeout is None else time.monotonic() + timeout
    while deadline is None or time.monotonic() < deadline:
        try:
            return answer.get(timeout=0.2)
        except queue.Empty:
            if not child.is_alive():
                try:
                    return answer.get(timeout=0.5)  # its last words may still be in flight
                except queue.Empty:
                    return "died", None
    return "died", None


class _HDF5Unusable(RecordingFormatError):
    """The truncated file's HDF5 structure cannot be read: fall back to its bytes."""


def _salvage_child(answer, cut_args, out, calibration) -> None:
    try:
        cut = TruncatedRecordingError(*cut_args)
        answer.put(("ok", _salvage_hdf5(cut, out, calibration,
                                        opened=lambda: answer.put(("opened", None)))))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent to decide
        answer.put(("error", _HDF5Unusable(str(exc).splitlines()[0] if str(exc) else
                                           type(exc).__name__)))


def _salvage_bytes(cut: TruncatedRecordingError, out: str, calibration) -> RecoverReport:
    """A new recording from the frames found in a truncated file's bytes."""
    return _salvage_frames(cut.path, out, calibration)


def _salvage_frames(src: str, out: str, calibration) -> RecoverReport:
    """A new recording from the frames found in a damaged file's bytes."""
    from host.recording.writer import RecordingWriter

    raw, chunks = _scan_for_frames(src, os.path.getmtime(src))
    if not len(raw):
        raise RecordingFormatError("%s: damaged, and no intact frame survives in it; "
                                   "nothing to salvage" % src)
    start = float(chunks["host_time"][0])
    w = RecordingWriter(out, overwrite=True, calibration=calibration,
                        session_start_time=start,
                        notes="salvaged from the damaged %s: its session attributes "
                              "were lost; host times are the file's modification time"
                              % os.path.basename(src))
    try:
        w.write_serial(raw.tobytes(), start)
        w.close()
    except BaseException:
        w.abort()
        raise
    with h5py.File(out, "r+") as f:
        f.attrs["recovered_at"] = iso_time()
        counters = {k: int(f[L.DECODER_EVENTS].attrs.get(k, 0)) for k in L.DECODER_COUNTERS}
        samples = f[L.SAMPLES + "/seq"].shape[0]
    return RecoverReport(path=out, raw_bytes=len(raw), reads=1, ignored_reads=0,
                         trailing_bytes=0, samples_before=0, samples=samples,
                         frames=counters["frames_ok"], counters=counters,
                         salvaged_from=os.path.getsize(src))


def _salvage_hdf5(cut: TruncatedRecordingError, out: str, calibration,
                  opened=lambda: None) -> RecoverReport:
    """Rebuild a new recording from what survives of a truncated one.

    HDF5 refuses a file shorter than its stored end, so a padded copy (zeros up to
    the stored end) is read instead: every raw-log read row whose bytes lie in the
    surviving part is kept (blocks past the cut read as zeros or fail and are left
    out), the session attributes, link events and label tracks that can still be read
    are copied, and the derived datasets are rebuilt from the raw log as recover()
    always does. Storage is judged by where HDF5 placed each chunk, so nothing past
    the cut is ever taken for data; when the raw log's own index is lost, its frames
    are found by decoding the file's bytes (_scan_for_frames).
    """
    padded = out + ".padded.tmp"
    with open(cut.path, "rb") as s_fh, open(padded, "wb") as d_fh:
        while block := s_fh.read(1 << 20):
            d_fh.write(block)
        d_fh.truncate(cut.expected)
    d = None
    try:
        with h5py.File(padded, "r") as s:
            check_format(s, cut.path, check_calibration=calibration is None)
            if L.SERIAL_BYTES not in s or L.SERIAL_CHUNKS not in s:
                raise RecordingFormatError("%s: truncated before its raw byte log; nothing "
                                           "to salvage" % cut.path)
            # Only storage wholly before the cut is data (past it the copy holds zeros).
            raw = _readable_prefix(s[L.SERIAL_BYTES], cut.size)
            chunks = _readable_prefix(s[L.SERIAL_CHUNKS], cut.size)
            keep = (chunks["offset"] >= 0) & (chunks["offset"] + chunks["length"] <= len(raw))
            chunks = chunks[keep]
            if not len(chunks):
                raw, chunks = _scan_for_frames(cut.path, _session_start(s, cut.path))
            d = h5py.File(out, "w")  # _salvage checked that it may
            for k in s.attrs:
                _copy_attribute(s.attrs, d.attrs, k)
            L.create_raw(d)
            d[L.SERIAL_BYTES].resize((len(raw),))
            d[L.SERIAL_BYTES][:] = raw
            d[L.SERIAL_CHUNKS].resize((len(chunks),))
            d[L.SERIAL_CHUNKS][:] = chunks
            with contextlib.suppress(KeyError, OSError, RuntimeError):
                rows = _readable_prefix(s[L.LINK_EVENTS], cut.size)
                d[L.LINK_EVENTS].resize((len(rows),))
                d[L.LINK_EVENTS][:] = rows
            budget = ReadBudget(cut.path)
            with contextlib.suppress(KeyError, OSError, RuntimeError):
                for name, ds in s[L.ANNOTATIONS].items():
                    with contextlib.suppress(OSError, RuntimeError, RecordingFormatError):
                        copy_object(ds, d[L.ANNOTATIONS], name, budget)
        opened()  # everything read from the damaged file: the rest cannot hang
        report = _rebuild(d, out, calibration, source=cut.path)
        d.close()
    except BaseException:
        if d is not None:
            d.close()
            os.unlink(out)
        raise
    finally:
        os.unlink(padded)
    report.salvaged_from = cut.size
    return report
