"""recover(): rebuild every derived dataset of a recording from its raw byte log.

The raw log is fed, read by read with the host times it was read at, through the
same StreamDecoder and the same code (_Deriver) as the live writer, so a recovered
file holds exactly what a clean recording of those bytes would have held. Used after
a crash (the last flush may have left derived data behind the raw log, and the TRUTH
label track is missing) and after a decoder fix. The raw log, link events, queue
drops, session attributes and non-simulator label tracks are never modified.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import h5py
import numpy as np

from host.recording import layout as L
from host.recording.reader import RecordingFormatError, check_format, open_h5
from host.recording.writer import (
    _Deriver, iso_time, set_sample_attrs, walkerlab_version, write_truth_track,
)

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


def _attach_calibration(f: h5py.File, calibration) -> None:
    """Session attributes from a calibration (when the walker's INFO never arrived)."""
    f.attrs["calibration"] = calibration.to_json()
    if calibration.walker_id:
        f.attrs["walker_id"] = calibration.walker_id


def _rebuild(f: h5py.File, path: str, calibration=None) -> RecoverReport:
    if L.SERIAL_BYTES not in f or L.SERIAL_CHUNKS not in f:
        raise RecordingFormatError("%s: no raw byte log to recover from" % path)
    before = f[L.SAMPLES + "/seq"].shape[0] if L.SAMPLES + "/seq" in f else 0
    for p in L.DERIVED_PATHS:
        if p in f:
            del f[p]
    f.attrs["timestamps_reference_device_us"] = np.int64(-1)
    f.attrs["timestamps_reference_time"] = ""
    if calibration is not None:
        _attach_calibration(f, calibration)
    L.create_derived(f)
    set_sample_attrs(f)
    deriver = _Deriver(f)

    raw = f[L.SERIAL_BYTES][()]
    chunks = f[L.SERIAL_CHUNKS][()]
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
    if out_path is None:
        with open_h5(src, "r+") as f:
            check_format(f, src)
            return _rebuild(f, src, calibration)
    out = os.fspath(out_path)
    if os.path.exists(out) and not overwrite:
        raise FileExistsError("%s: already exists; choose another name or overwrite it "
                              "explicitly" % out)
    with open_h5(src) as s:
        check_format(s, src)
        d = h5py.File(out, "w" if overwrite else "x")
        try:
            for k, v in s.attrs.items():
                d.attrs[k] = v
            for p in (L.SERIAL, L.LINK_EVENTS, L.ANNOTATIONS):
                if p in s:
                    parent = d.require_group(p.rsplit("/", 1)[0] or "/")
                    s.copy(s[p], parent, name=p.rsplit("/", 1)[1])
            report = _rebuild(d, out, calibration)
        except BaseException:
            d.close()
            os.unlink(out)
            raise
        d.close()
    return report
