"""Raw serial reads -> every derived dataset of a recording (Deriver).

The live writer and recover() feed the same bytes through the same Deriver (a
StreamDecoder plus the tables it fills), so a recovered file holds exactly what a
clean recording of those bytes holds. Rows are buffered in memory (Appender) and
written by commit(); the writer decides when.
"""
from __future__ import annotations

import json
import math
import time

import h5py
import numpy as np

from device.protocol import wire
from host.recording import layout as L
from host.recording.reader import text
from host.samples import SampleBlock, StreamDecoder, split_frames


def sample_conversions(calibration_json: str, info: dict | None) -> dict[str, dict]:
    """NWB unit/conversion/resolution of accel, loads and encoder.

    Sources in order: the calibration (mean of per-channel values; exact per-channel
    values stay in the root attribute 'calibration'), the INFO frame, nominal values.
    """
    from calibration.walker_calibration import (
        GRAVITY, NOMINAL_ACCEL_COUNTS_PER_G, NOMINAL_ENCODER_TICKS_PER_REV,
        NOMINAL_LOAD_GAIN_COUNTS_PER_N, NOMINAL_WHEEL_DIAMETER_M,
    )

    cal = json.loads(calibration_json) if calibration_json else {}
    info = info or {}

    def pick(key, info_key, nominal):
        if key in cal:
            value = cal[key]
            return float(np.mean(value)) if isinstance(value, list) else float(value), \
                "calibration"
        if info_key and info.get(info_key):
            return float(info[info_key]), "INFO"
        return float(nominal), "nominal"

    cpg, accel_src = pick("accel_counts_per_g", "accel_counts_per_g",
                          NOMINAL_ACCEL_COUNTS_PER_G)
    gain, load_src = pick("load_gains_counts_per_n", None, NOMINAL_LOAD_GAIN_COUNTS_PER_N)
    tpr, tick_src = pick("encoder_ticks_per_rev", "encoder_ticks_per_rev",
                         NOMINAL_ENCODER_TICKS_PER_REV)
    wheel, wheel_src = pick("wheel_diameter_m", None, NOMINAL_WHEEL_DIAMETER_M)
    out = {}
    for name, unit, conv, src in (
            ("accel", "m/s^2", GRAVITY / cpg, accel_src),
            ("loads", "N", 1.0 / gain, load_src),
            ("encoder", "m", math.pi * wheel / tpr, "%s, wheel %s" % (tick_src, wheel_src))):
        out[name] = {"unit": unit, "conversion": np.float32(conv),
                     "resolution": np.float32(conv), "conversion_source": src}
    # Exact per-channel calibration beside the nominal NWB conversion:
    # value = (counts - channel_offset_counts) * channel_conversion, the features' formula
    # (host/features.py; load counts the firmware already tared, status 0x10, take no
    # offset).  recordings/README.md's h5py recipe uses these.
    n_cells, n_axes = 4, 3
    offsets = cal.get("load_offsets_counts") or [0.0] * n_cells
    gains = cal.get("load_gains_counts_per_n") or [NOMINAL_LOAD_GAIN_COUNTS_PER_N] * n_cells
    bias = cal.get("accel_bias_counts") or [0.0] * n_axes
    cpgs = cal.get("accel_counts_per_g") or [cpg] * n_axes
    out["loads"].update(channel_offset_counts=np.asarray(offsets, dtype=np.float64),
                        channel_conversion=1.0 / np.asarray(gains, dtype=np.float64))
    out["accel"].update(channel_offset_counts=np.asarray(bias, dtype=np.float64),
                        channel_conversion=GRAVITY / np.asarray(cpgs, dtype=np.float64))
    for name in ("loads", "accel"):
        out[name]["calibration_walker_id"] = str(cal.get("walker_id", ""))
    return out


class Appender:
    """Rows buffered in memory, appended to a resizable dataset by commit()."""

    def __init__(self, ds: h5py.Dataset) -> None:
        self.ds = ds
        self.pending: list[np.ndarray] = []
        self.rows = ds.shape[0]  # committed + pending

    def add(self, rows: np.ndarray) -> None:
        if len(rows):
            self.pending.append(rows)
            self.rows += len(rows)

    def commit(self) -> None:
        if not self.pending:
            return
        data = self.pending[0] if len(self.pending) == 1 else np.concatenate(self.pending)
        self.pending = []
        n = self.ds.shape[0]
        self.ds.resize(n + len(data), axis=0)
        self.ds[n:] = data


def table_rows(dtype: np.dtype, rows: list[tuple]) -> np.ndarray:
    """Rows (tuples) as a structured array of a table's dtype."""
    return np.array(rows, dtype=dtype)


class Deriver:
    """Raw serial reads -> every derived dataset. Shared by the writer and recover()."""

    def __init__(self, f: h5py.File) -> None:
        self.f = f
        self.decoder = StreamDecoder()
        g = f[L.SAMPLES]
        self.columns = {name: Appender(g[name]) for name in L.SAMPLE_COLUMNS}
        self.info = Appender(f[L.INFO])
        self.log = Appender(f[L.LOG])
        self.activity = Appender(f[L.ACTIVITY])
        self.truth = Appender(f[L.TRUTH])
        self.events = Appender(f[L.DECODER_EVENTS])
        t0 = int(f.attrs.get("timestamps_reference_device_us", -1))
        self.t0: int | None = None if t0 < 0 else t0
        self._counted = dict.fromkeys(L.DECODER_COUNTERS, 0)
        self._skipped = 0  # bytes skipped since the last resync event
        self._counters_written: dict | None = None
        self._latest_info: tuple | None = None  # (t_us, timestamps, host_time, dict)
        self.info_attrs: dict | None = None  # the last INFO frame, as attributes
        self._t0_attrs: tuple | None = None
        self.last_host_time: float | None = None

    # ---- input ------------------------------------------------------------------
    def feed(self, data: bytes, host_time: float) -> None:
        self.last_host_time = host_time
        block, others = self.decoder.feed(data, host_time)
        self._take(block, others, host_time)

    def finish(self) -> None:
        """End of the byte stream: frames the decoder still held back."""
        host_time = self.last_host_time if self.last_host_time is not None else time.time()
        block, others = split_frames(self.decoder.frames.finish(), self.decoder.clock,
                                     host_time)
        self._take(block, others, host_time)

    # ---- decoding ---------------------------------------------------------------
    def _take(self, block: SampleBlock, others: list, host_time: float) -> None:
        if self.t0 is None and (len(block) or others):
            firsts = ([int(block.t_us[0])] if len(block) else []) + \
                     ([others[0][0]] if others else [])
            self.t0 = min(firsts)
            self._t0_attrs = (np.int64(self.t0), L.iso_time(host_time))
        if len(block):
            ts = (block.t_us - self.t0) / 1e6
            for name, app in self.columns.items():
                app.add(ts if name == "timestamps" else getattr(block, name))
        events = []
        for t_us, frame in others:
            self._frame(t_us, frame, host_time, events)
        counters = self.decoder.counters()
        delta = {k: counters[k] - self._counted[k] for k in L.DECODER_COUNTERS}
        self._counted = counters
        if delta["crc_errors"]:
            events.append((host_time, "crc_error", "", delta["crc_errors"]))
        if delta["bad_headers"]:
            events.append((host_time, "bad_header", "", delta["bad_headers"]))
        if delta["version_errors"]:
            events.append((host_time, "version_error",
                           "protocol version %d" % self.decoder.frames.last_foreign_version,
                           delta["version_errors"]))
        self._skipped += delta["bytes_skipped"]
        if delta["resyncs"]:
            events.append((host_time, "resync", "%d bytes skipped" % self._skipped,
                           delta["resyncs"]))
            self._skipped = 0
        if delta["bad_lengths"]:
            events.append((host_time, "bad_length", "", delta["bad_lengths"]))
        if delta["false_jumps"]:
            # A jump already logged was a false frame's: its gap is withdrawn below.
            events.append((host_time, "false_jump", "sequence jump withdrawn",
                           delta["false_jumps"]))
        if delta["seq_gaps"]:
            events.append((host_time, "seq_gap", "%d gap(s)" % delta["seq_gaps"],
                           delta["frames_lost"]))
        if events:
            self.events.add(table_rows(L.EVENT_DTYPE, events))

    def _frame(self, t_us: int, frame: wire.Frame, host_time: float, events: list) -> None:
        head = (frame.seq, t_us, (t_us - self.t0) / 1e6, host_time)
        kind = frame.frame_type
        name = wire.FRAME_TYPE_NAMES.get(kind, "0x%02x" % kind)
        try:
            if kind == wire.INFO:
                d = wire.unpack_info(frame.payload)
                self.info.add(table_rows(L.INFO_DTYPE, [head + (
                    d["protocol_version"], d["firmware_version"], d["rate_hz"],
                    d["walker_id"], d["n_load_cells"], d["hx711_rate_hz"],
                    d["accel_range_g"], d["accel_counts_per_g"],
                    d["encoder_ticks_per_rev"], d["simulated"], d["streaming"])]))
                self._latest_info = head[1:] + (d,)
            elif kind == wire.LOG:
                if not frame.payload:
                    raise ValueError("LOG payload is empty")
                self.log.add(table_rows(L.LOG_DTYPE, [head + (
                    frame.payload[0], L.escape_wire_text(frame.payload[1:]))]))
            elif kind == wire.ACTIVITY:
                self.activity.add(table_rows(L.ACTIVITY_DTYPE,
                                        [head + wire.unpack_activity(frame.payload)]))
            elif kind == wire.TRUTH:
                self.truth.add(table_rows(L.TRUTH_DTYPE,
                                     [head + (wire.unpack_truth(frame.payload),)]))
            elif kind in (wire.ACK, wire.NAK):
                cmd, cmd_seq, code = wire.unpack_ack(frame.payload)
                events.append((host_time, "ack" if kind == wire.ACK else "nak",
                               "%s seq %d" % (wire.FRAME_TYPE_NAMES.get(cmd, hex(cmd)),
                                              cmd_seq), code))
            elif kind == wire.SAMPLE:  # split_frames() keeps only well-formed ones
                raise ValueError("SAMPLE payload must be %d bytes" % wire.SAMPLE_LEN)
            else:
                events.append((host_time, "unknown_frame", "type %s, %d bytes"
                               % (name, len(frame.payload)), kind))
        except (ValueError, UnicodeDecodeError) as exc:
            events.append((host_time, "bad_payload", "%s: %s" % (name, exc), kind))

    # ---- output -----------------------------------------------------------------
    def commit(self) -> None:
        for app in (*self.columns.values(), self.info, self.log, self.activity,
                    self.truth, self.events):
            app.commit()
        if self.f.swmr_mode:
            # A SWMR writer must not write attributes (h5py re-creates them: HDF5
            # then fails or corrupts the file). The tables above are the live record;
            # these attributes are written at close (RecordingWriter.close re-opens
            # the file plainly) or rebuilt by recover() from the raw log.
            return
        self.commit_attrs()

    def commit_attrs(self) -> None:
        if self._t0_attrs is not None:
            self.f.attrs["timestamps_reference_device_us"] = self._t0_attrs[0]
            self.f.attrs["timestamps_reference_time"] = self._t0_attrs[1]
            self._t0_attrs = None
        if self._latest_info is not None:
            t_us, ts, host_time, d = self._latest_info
            self._latest_info = None
            self.info_attrs = dict(d, t_us=t_us, timestamps=ts, host_time=host_time)
            write_info_attrs(self.f, self.info_attrs)
            root = self.f.attrs
            if not text(root.get("walker_id", "")):
                root["walker_id"] = d["walker_id"]
            if not text(root.get("firmware_version", "")):
                root["firmware_version"] = d["firmware_version"]
            set_sample_attrs(self.f, d)
        if self._counted != self._counters_written:
            attrs = self.f[L.DECODER_EVENTS].attrs
            for k in L.DECODER_COUNTERS:
                attrs[k] = np.int64(self._counted[k])
            self._counters_written = dict(self._counted)

    @property
    def n_samples(self) -> int:
        return self.columns["seq"].rows


def write_info_attrs(f: h5py.File, info: dict) -> None:
    """The last INFO frame as attributes of /acquisition/info, its rate on the samples."""
    attrs = f[L.INFO].attrs
    for k, v in info.items():
        attrs[k] = v
    f[L.SAMPLES].attrs["rate"] = np.float64(info["rate_hz"])


def set_sample_attrs(f: h5py.File, info: dict | None = None) -> None:
    """NWB unit and conversion attributes of the sample columns (sample_conversions)."""
    g = f[L.SAMPLES]
    conv = sample_conversions(text(f.attrs.get("calibration", "")), info)
    for name, attrs in L.SAMPLE_ATTRS.items():
        for k, v in {**attrs, **conv.get(name, {})}.items():
            g[name].attrs[k] = v
