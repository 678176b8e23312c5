"""Names, dtypes and the description of the WalkerLab recording format (HDF5).

Everything that names a group, dataset or attribute lives here, so the writer, the
reader, recover() and recordings/README.md agree. FORMAT_VERSION is semver: a reader
accepts files of the same major version; minor versions only add things.

Two kinds of data:
  raw      /acquisition/serial/*  the serial bytes as read, the ground truth; written
           append-only and never rewritten, not even by recover().
  derived  everything decodable from the raw log (DERIVED_PATHS): recover() deletes
           and rebuilds them with the same StreamDecoder the live writer used.
Host-side facts that no byte carries (link events, queue drops, labels, session
attributes) are neither: recover() keeps them as they are.
"""
from __future__ import annotations

import datetime as _dt
import json
import re
import time

import h5py
import numpy as np

FORMAT_NAME = "walkerlab-recording"
FORMAT_VERSION = "1.2.0"
FORMAT_MAJOR = int(FORMAT_VERSION.split(".")[0])

# The writer flushes at least this often, so a crash (kill -9, power cut excepted)
# loses at most this much data plus the time one write takes.
FLUSH_INTERVAL_S = 0.5


def iso_time(t: float | None = None) -> str:
    """Unix time -> ISO 8601 with the local time zone's offset (the format of every
    time attribute: session_start_time, recovered_at, ...)."""
    t = time.time() if t is None else t
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).astimezone().isoformat(
        timespec="microseconds")


# ---- paths -----------------------------------------------------------------------
ACQUISITION = "/acquisition"
SERIAL = "/acquisition/serial"
SERIAL_BYTES = "/acquisition/serial/bytes"
SERIAL_CHUNKS = "/acquisition/serial/chunks"
SAMPLES = "/acquisition/samples"
INFO = "/acquisition/info"
LOG = "/acquisition/log"
ACTIVITY = "/acquisition/activity"
TRUTH = "/acquisition/truth"
EVENTS = "/events"
LINK_EVENTS = "/events/link"
DECODER_EVENTS = "/events/decoder"
ANNOTATIONS = "/annotations"

# The label track that TRUTH frames become, and the allowed label sources.
SIMULATOR_TRACK = "simulator"
LABEL_SOURCES = ("human", "model", "simulator")

# Rebuilt from the raw log by recover(); nothing else is ever deleted.
DERIVED_PATHS = (SAMPLES, INFO, LOG, ACTIVITY, TRUTH, DECODER_EVENTS)

# ---- dtypes ----------------------------------------------------------------------
STR = h5py.string_dtype("utf-8")  # variable-length UTF-8 (bytes inside tables in h5py)

CHUNK_DTYPE = np.dtype([("host_time", "<f8"), ("offset", "<i8"), ("length", "<i4")])
_FRAME_FIELDS = [("seq", "<u2"), ("t_us", "<i8"), ("timestamps", "<f8"),
                 ("host_time", "<f8")]
INFO_DTYPE = np.dtype(_FRAME_FIELDS + [
    ("protocol_version", "u1"), ("firmware_version", STR), ("rate_hz", "<u2"),
    ("walker_id", STR), ("n_load_cells", "u1"), ("hx711_rate_hz", "u1"),
    ("accel_range_g", "u1"), ("accel_counts_per_g", "<u2"),
    ("encoder_ticks_per_rev", "<u2"), ("simulated", "u1"), ("streaming", "u1")])
LOG_DTYPE = np.dtype(_FRAME_FIELDS + [("level", "u1"), ("text", STR)])  # escaped text
ACTIVITY_DTYPE = np.dtype(_FRAME_FIELDS + [("class_index", "u1"), ("confidence", "<f4"),
                                           ("code", STR)])
TRUTH_DTYPE = np.dtype(_FRAME_FIELDS + [("code", STR)])
EVENT_DTYPE = np.dtype([("host_time", "<f8"), ("kind", STR), ("detail", STR),
                        ("value", "<i8")])
LABEL_DTYPE = np.dtype([("start_s", "<f8"), ("stop_s", "<f8"), ("activity", STR)])

# Sample columns: name -> (dtype, shape of one row). All share the row index.
SAMPLE_COLUMNS = {
    "seq": ("<u2", ()),
    "t_us": ("<i8", ()),
    "timestamps": ("<f8", ()),
    "host_time": ("<f8", ()),
    "accel": ("<i2", (3,)),
    "loads": ("<i4", (4,)),
    "encoder": ("<i4", ()),
    "fresh": ("u1", ()),
    "status": ("u1", ()),
}

# Chunk sizes (rows): about 1 000 rows per chunk for streams (h5py advice: 10 KiB to
# 1 MiB), 64 KiB for the byte log, small for the sparse tables.
SAMPLE_CHUNK_ROWS = 1024
BYTES_CHUNK = 65536
TABLE_CHUNK_ROWS = 256

# ---- attributes --------------------------------------------------------------------
# Root attributes: name -> (default, meaning). Strings are UTF-8; "" means unknown.
ROOT_ATTRS = {
    "format": (FORMAT_NAME, "always 'walkerlab-recording': what makes a file ours"),
    "format_version": (FORMAT_VERSION,
                       "semver of this layout; readers accept the same major"),
    "writer_version": ("", "WalkerLab version that last wrote the file"),
    "writer_version_at_creation": ("", "WalkerLab version that created the file"),
    "app_version": ("", "WalkerLab version that recorded the session"),
    "protocol_version": (0, "wire protocol version of the host decoder (int)"),
    "session_start_time": ("", "ISO 8601 with time zone: when recording started"),
    "session_end_time": ("", "ISO 8601 with time zone: when the writer closed "
                             "('' if it crashed)"),
    "timestamps_reference_time": ("", "ISO 8601 with time zone: host clock when the "
                                      "first frame arrived"),
    "timestamps_reference_device_us": (-1, "unwrapped device time (us) of the first "
                                           "frame: timestamps = 0 (int64; -1 before any "
                                           "frame)"),
    "subject_id": ("", "who used the walker"),
    "walker_id": ("", "which walker (from the caller, else from the first INFO frame)"),
    "firmware_version": ("", "firmware version (from the caller, else from the first "
                             "INFO frame)"),
    "calibration": ("", "calibration in use, as JSON (WalkerCalibration.to_json())"),
    "calibration_history": ("", "JSON list of the calibrations this recording had before "
                                "`walkerlab recalibrate` replaced them, oldest first, each "
                                "{replaced_at, calibration} ('' if never replaced)"),
    "notes": ("", "free text"),
    "host": ("", "host name of the recording computer"),
    "closed_cleanly": (0, "1 once the writer closed normally; 0 during recording or "
                          "after a crash"),
    "recovered_at": ("", "ISO 8601: last time recover() rebuilt the derived datasets"),
    "layout": ("", "JSON description of every group and dataset (LAYOUT below)"),
}
SESSION_ATTRS = ("subject_id", "walker_id", "firmware_version", "calibration", "notes",
                 "host")

# Decoder counters (wire.FrameDecoder.counters()), attributes of /events/decoder.
DECODER_COUNTERS = ("bytes_in", "frames_ok", "crc_errors", "bad_headers",
                    "version_errors", "resyncs", "bytes_skipped", "seq_gaps",
                    "frames_lost", "bad_lengths", "false_jumps")
# Link event whose detail is a JSON object of session attributes set while the file
# was in SWMR mode (format 1.1): the attributes follow at close; recover() applies them.
SESSION_EVENT = "session"
QUEUE_DROPS_ATTR = "queue_drops"  # on /events/link: recorder queue overflows (items)

# Label track attributes (on /annotations/<track>).
LABEL_ATTRS = ("annotator", "source", "model", "created", "modified")

# ---- the layout, as stored in the file's 'layout' attribute ----------------------
# (path, kind, dtype, shape, unit, meaning)
LAYOUT = [
    (SERIAL_BYTES, "dataset", "uint8", "(n_bytes,)", "byte",
     "every byte read from the serial port, in order; append-only ground truth"),
    (SERIAL_CHUNKS, "dataset", "compound", "(n_reads,)", "",
     "one row per read: host_time (s, Unix), offset into bytes, length"),
    (SAMPLES, "group", "", "", "", "SAMPLE frames as columns sharing one row index"),
    (SAMPLES + "/seq", "dataset", "uint16", "(n,)", "", "frame sequence number as sent"),
    (SAMPLES + "/t_us", "dataset", "int64", "(n,)", "us", "device time, unwrapped"),
    (SAMPLES + "/timestamps", "dataset", "float64", "(n,)", "s",
     "device time relative to timestamps_reference_device_us"),
    (SAMPLES + "/host_time", "dataset", "float64", "(n,)", "s",
     "host clock (Unix time) when the read that completed the frame returned"),
    (SAMPLES + "/accel", "dataset", "int16", "(n, 3)", "counts", "accelerometer x, y, z"),
    (SAMPLES + "/loads", "dataset", "int32", "(n, 4)", "counts",
     "HX711 load cells in the order FR, FL, RL, RR"),
    (SAMPLES + "/encoder", "dataset", "int32", "(n,)", "ticks",
     "cumulative wheel-encoder ticks"),
    (SAMPLES + "/fresh", "dataset", "uint8", "(n,)", "bitmask",
     "bit i: load cell i converted since the previous sample"),
    (SAMPLES + "/status", "dataset", "uint8", "(n,)", "bitmask",
     "device status bits (wire.STATUS_*)"),
    (INFO, "dataset", "compound", "(n_info,)", "",
     "every INFO frame; the latest one also as attributes of this dataset"),
    (LOG, "dataset", "compound", "(n_log,)", "", "LOG frames: level, text"),
    (ACTIVITY, "dataset", "compound", "(n_activity,)", "",
     "ACTIVITY frames of the on-device recognizer: class_index, confidence, code"),
    (TRUTH, "dataset", "compound", "(n_truth,)", "",
     "TRUTH frames of the virtual walker (simulated person's true activity code)"),
    (LINK_EVENTS, "dataset", "compound", "(n_events,)", "",
     "host-side link events: host_time, kind, detail, value (reconnected, stalled, "
     "queue_overflow, ...); attribute queue_drops"),
    (DECODER_EVENTS, "dataset", "compound", "(n_events,)", "",
     "events found by decoding the raw log (crc_error, resync, seq_gap, ack, nak, ...); "
     "attributes: the decoder counters"),
    (ANNOTATIONS, "group", "", "", "", "label tracks, one dataset per track"),
    (ANNOTATIONS + "/<track>", "dataset", "compound", "(n_segments,)", "s",
     "segments start_s, stop_s (half-open, timestamps time base), activity; attributes "
     "annotator, source (human|model|simulator), model, created, modified"),
]


# ---- text from the wire -------------------------------------------------------------
# A LOG frame carries any bytes: a NUL, invalid UTF-8. HDF5 variable-length strings hold
# neither, so the writer stores the text escaped (format 1.2): UTF-8 as it is, and a
# backslash, a NUL or a byte that is not UTF-8 as a backslash escape ("\\", "\x00",
# "\xff"). escape_wire_text and unescape_wire_text are exact inverses.
_ESCAPE = re.compile(r"\\(\\|x[0-9a-f]{2})")


def escape_wire_text(raw: bytes) -> str:
    """Bytes from the wire as a NUL-free, valid UTF-8 string (see above)."""
    text = bytes(raw).replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")
    return text.replace("\x00", "\\x00")


def unescape_wire_text(text: str) -> bytes:
    """The bytes escape_wire_text was given."""
    out, pos = bytearray(), 0
    for m in _ESCAPE.finditer(text):
        out += text[pos:m.start()].encode("utf-8")
        esc = m.group(1)
        out += b"\\" if esc == "\\" else bytes((int(esc[1:], 16),))
        pos = m.end()
    out += text[pos:].encode("utf-8")
    return bytes(out)


def storable_text(text: str) -> str:
    """A host-side string HDF5 can hold: a NUL becomes "\\x00" and a lone surrogate
    (an undecodable file name or argument) a backslash escape; anything else unchanged."""
    text = str(text)
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:  # bytes that were not UTF-8, carried as surrogates: "\\xff" as for the wire
            text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # other lone surrogates: "\\udc80"
            text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def layout_description() -> str:
    """The JSON stored in the root attribute 'layout' (kept well under 64 KiB)."""
    def dtype_text(dt: np.dtype):
        if dt.names is None:
            return str(dt)
        return [[name, "str" if h5py.check_string_dtype(dt[name]) else str(dt[name])]
                for name in dt.names]

    tables = {CHUNK_DTYPE: SERIAL_CHUNKS, INFO_DTYPE: INFO, LOG_DTYPE: LOG,
              ACTIVITY_DTYPE: ACTIVITY, TRUTH_DTYPE: TRUTH, EVENT_DTYPE: LINK_EVENTS,
              LABEL_DTYPE: ANNOTATIONS + "/<track>"}
    fields = {path: dtype_text(dt) for dt, path in tables.items()}
    fields[DECODER_EVENTS] = fields[LINK_EVENTS]
    return json.dumps({
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "documentation": "recordings/README.md in the WalkerLab sources",
        "root_attributes": {k: v[1] for k, v in ROOT_ATTRS.items()},
        "objects": [dict(path=p, kind=k, dtype=d, shape=s, unit=u, meaning=m,
                         **({"fields": fields[p]} if p in fields else {}))
                    for p, k, d, s, u, m in LAYOUT],
        "derived": list(DERIVED_PATHS),
        "decoder_counters": list(DECODER_COUNTERS),
    }, separators=(",", ":"))


# ---- creation helpers ------------------------------------------------------------
def create_table(f: h5py.File, path: str, dtype: np.dtype,
                 chunk_rows: int = TABLE_CHUNK_ROWS) -> h5py.Dataset:
    """An empty, resizable, chunked 1-D table."""
    return f.create_dataset(path, shape=(0,), maxshape=(None,), dtype=dtype,
                            chunks=(chunk_rows,))


def create_raw(f: h5py.File) -> None:
    f.create_dataset(SERIAL_BYTES, shape=(0,), maxshape=(None,), dtype="u1",
                     chunks=(BYTES_CHUNK,))
    create_table(f, SERIAL_CHUNKS, CHUNK_DTYPE)
    create_table(f, LINK_EVENTS, EVENT_DTYPE).attrs[QUEUE_DROPS_ATTR] = np.int64(0)
    f.require_group(ANNOTATIONS)


def create_derived(f: h5py.File) -> None:
    """Create every derived dataset, empty (the writer and recover() fill them)."""
    g = f.create_group(SAMPLES)
    for name, (dtype, shape) in SAMPLE_COLUMNS.items():
        g.create_dataset(name, shape=(0,) + shape, maxshape=(None,) + shape, dtype=dtype,
                         chunks=(SAMPLE_CHUNK_ROWS,) + shape)
    create_table(f, INFO, INFO_DTYPE)
    create_table(f, LOG, LOG_DTYPE)
    create_table(f, ACTIVITY, ACTIVITY_DTYPE)
    create_table(f, TRUTH, TRUTH_DTYPE)
    ev = create_table(f, DECODER_EVENTS, EVENT_DTYPE)
    for name in DECODER_COUNTERS:
        ev.attrs[name] = np.int64(0)

# Fixed attributes of the sample columns (unit/conversion of accel, loads and encoder
# are added by the writer, see derive.sample_conversions()).
SAMPLE_ATTRS = {
    "seq": {"description": "frame sequence number as sent (wraps at 2**16)"},
    "t_us": {"unit": "us", "description": "device time, unwrapped to int64"},
    "timestamps": {"unit": "s", "interval": 1, "description":
                   "device time relative to the root attribute "
                   "timestamps_reference_device_us (NWB timestamps)"},
    "host_time": {"unit": "s", "description": "host clock (Unix time) when the read "
                  "that completed the frame returned"},
    "accel": {"raw_unit": "counts", "offset": 0.0, "continuity": "continuous",
              "columns": "x,y,z", "description": "accelerometer, raw counts"},
    "loads": {"raw_unit": "counts", "offset": 0.0, "continuity": "step",
              "columns": "FR,FL,RL,RR", "description": "HX711 load cells, raw counts, "
              "latest conversion of each cell (see fresh)"},
    "encoder": {"raw_unit": "ticks", "offset": 0.0, "continuity": "continuous",
                "description": "cumulative wheel-encoder ticks"},
    "fresh": {"unit": "bitmask", "description":
              "bit i set: load cell i (FR, FL, RL, RR) converted since the previous sample"},
    "status": {"unit": "bitmask", "description":
               "0x01 load-cell fault, 0x02 accel fault, 0x04 overrun, 0x08 simulated, "
               "0x10 tared, 0x20 on-device recognizer active"},
}
