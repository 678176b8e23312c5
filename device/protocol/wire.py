# WalkerLab wire protocol, version 1: framing, payloads and an incremental decoder.
#
# Shared verbatim by the firmware (MicroPython) and the host (CPython), so it only
# uses what both have: struct, const, plain classes, no f-strings or annotations.
# The byte layout is documented in docs/protocol.md; keep the two in step.
import struct

try:
    from micropython import const
except ImportError:  # CPython

    def const(value):
        return value


try:
    from binascii import crc_hqx as _crc_hqx
except ImportError:  # MicroPython's binascii has no crc_hqx
    _crc_hqx = None

PROTOCOL_VERSION = const(1)
SYNC0 = const(0xA5)
SYNC1 = const(0x5A)
SYNC = b"\xa5\x5a"
# sync(2) version(1) type(1) length(2) seq(2) t_us(4)
HEADER = "<BBBBHHI"
HEADER_LEN = const(12)
CRC_LEN = const(2)
MAX_PAYLOAD = const(240)

# Device -> host frame types.
SAMPLE = const(0x01)
INFO = const(0x02)
ACK = const(0x03)
NAK = const(0x04)
LOG = const(0x05)
ACTIVITY = const(0x06)
TRUTH = const(0x07)  # virtual walker only: ground-truth activity of the simulated person
CALIBRATION = const(0x08)  # the calibration stored in the walker's flash
# Host -> device commands.
CMD_HELLO = const(0x10)
CMD_START = const(0x11)
CMD_STOP = const(0x12)
CMD_SET_RATE = const(0x13)
CMD_TARE = const(0x14)
# On-device model upload (docs/protocol.md, "Model upload"): BEGIN, CHUNKs, COMMIT.
CMD_MODEL_BEGIN = const(0x15)
CMD_MODEL_CHUNK = const(0x16)
CMD_MODEL_COMMIT = const(0x17)
CMD_MODEL_CLEAR = const(0x18)
# Calibration in flash (docs/protocol.md, "Calibration"): WRITE stores one, READ asks
# for it; the walker answers both (and a HELLO, when it holds one) with CALIBRATION.
CMD_CAL_WRITE = const(0x19)
CMD_CAL_READ = const(0x1A)

FRAME_TYPE_NAMES = {
    SAMPLE: "SAMPLE", INFO: "INFO", ACK: "ACK", NAK: "NAK", LOG: "LOG",
    ACTIVITY: "ACTIVITY", TRUTH: "TRUTH", CMD_HELLO: "HELLO", CMD_START: "START",
    CMD_STOP: "STOP", CMD_SET_RATE: "SET_RATE", CMD_TARE: "TARE",
    CMD_MODEL_BEGIN: "MODEL_BEGIN", CMD_MODEL_CHUNK: "MODEL_CHUNK",
    CMD_MODEL_COMMIT: "MODEL_COMMIT", CMD_MODEL_CLEAR: "MODEL_CLEAR",
    CALIBRATION: "CALIBRATION", CMD_CAL_WRITE: "CAL_WRITE", CMD_CAL_READ: "CAL_READ",
}

# SAMPLE: accel x, y, z (int16 counts); load cells FR, FL, RL, RR (int32 counts,
# HX711 24-bit sign-extended); cumulative encoder ticks (int32); fresh bits (bit i set:
# load cell i finished a new conversion since the previous SAMPLE); status bits.
SAMPLE_FORMAT = "<hhhiiiiiBB"
SAMPLE_LEN = const(28)
LOAD_CELL_ORDER = ("FR", "FL", "RL", "RR")
STATUS_LOADCELL_FAULT = const(0x01)  # an HX711 stopped converting
STATUS_ACCEL_FAULT = const(0x02)
STATUS_OVERRUN = const(0x04)  # the sample loop missed its deadline
STATUS_SIMULATED = const(0x08)  # the virtual walker produced this sample
STATUS_TARED = const(0x10)  # load counts are relative to the last tare
STATUS_MODEL_ACTIVE = const(0x20)  # the on-device recognizer is running
# The on-device recognizer raised and was switched off (safe mode; the LOG says why).
# Samples keep streaming; a new model upload or a reboot clears it. Firmware >= 0.2.
STATUS_RECOGNIZER_FAULT = const(0x40)

# INFO: protocol version, firmware major/minor/patch, sample rate (Hz), walker id
# (16 bytes, NUL padded ASCII), number of load cells, HX711 conversion rate (Hz),
# accelerometer range (+-g), accelerometer counts per g, encoder ticks per wheel
# revolution, flags (bit 0 simulated, bit 1 streaming).
INFO_FORMAT = "<BBBBH16sBBBHHB"
INFO_LEN = const(30)
INFO_FLAG_SIMULATED = const(0x01)
INFO_FLAG_STREAMING = const(0x02)
INFO_FLAG_CALIBRATED = const(0x04)  # a CALIBRATION frame follows this INFO
# The walker booted without its stored model: two boots with it failed (the boot
# counter in flash) or it did not load. Firmware >= 0.2.
INFO_FLAG_MODEL_SKIPPED = const(0x08)

# ACK / NAK: the command's type, the command frame's sequence number, a code.
ACK_FORMAT = "<BHB"
ACK_LEN = const(4)
NAK_UNKNOWN_COMMAND = const(1)
NAK_BAD_ARGUMENT = const(2)
NAK_BUSY = const(3)
NAK_UNSUPPORTED = const(4)
NAK_BAD_MODEL = const(5)  # MODEL_COMMIT: CRC mismatch or a model the firmware cannot load
NAK_NO_CALIBRATION = const(6)  # CAL_READ: the walker holds no calibration
NAK_NO_MEMORY = const(7)  # MODEL_BEGIN: the model would not fit the free heap (fw >= 0.2)

# ACTIVITY: class index, confidence (float32, 0..1), activity code (4 ASCII, NUL padded).
ACTIVITY_FORMAT = "<Bf4s"
ACTIVITY_LEN = const(9)
# TRUTH: activity code (4 ASCII, NUL padded).
TRUTH_FORMAT = "<4s"
TRUTH_LEN = const(4)
# SET_RATE: sample rate in Hz.
SET_RATE_FORMAT = "<H"
# MODEL_BEGIN: total size (bytes), CRC-16 of the whole model file.
MODEL_BEGIN_FORMAT = "<IH"
# MODEL_CHUNK: offset of the data in the file, then the data.
MODEL_CHUNK_HEAD = "<I"
MODEL_CHUNK_MAX = const(MAX_PAYLOAD - 4)
# CALIBRATION / CAL_WRITE payload, layout version 1 (the first byte; a walker NAKs a
# version it does not know): version, date (unix seconds, uint32), load offsets FR FL
# RL RR (counts), load gains (counts/N), accel bias x y z (counts), accel scale
# (counts/g), encoder ticks per revolution (uint16), wheel diameter, front and rear
# half widths, wheelbase (m), least total load for a COP (N); float32 little-endian.
CAL_FORMAT = "<BI4f4f3f3fH5f"
CAL_LEN = const(83)
CAL_VERSION = const(1)
MIN_RATE_HZ = const(25)
MAX_RATE_HZ = const(200)

# Payload lengths each device -> host frame type may have (min, max). A frame whose
# length does not fit its type is rejected like a CRC error: with CRC-16 alone about
# one random candidate in 65,536 passes, and a false frame would corrupt the loss
# counters. Commands are not listed: the firmware answers a malformed one with a NAK
# (bad argument), which a silent drop would hide. Unlisted types (newer firmware)
# are accepted with any length.
PAYLOAD_LENGTHS = {
    SAMPLE: (SAMPLE_LEN, SAMPLE_LEN), INFO: (INFO_LEN, INFO_LEN),
    ACK: (ACK_LEN, ACK_LEN), NAK: (ACK_LEN, ACK_LEN), LOG: (1, MAX_PAYLOAD),
    ACTIVITY: (ACTIVITY_LEN, ACTIVITY_LEN), TRUTH: (TRUTH_LEN, TRUTH_LEN),
    CALIBRATION: (1, MAX_PAYLOAD),  # version byte first; later versions may be longer
}

LOG_DEBUG = const(10)
LOG_INFO = const(20)
LOG_WARNING = const(30)
LOG_ERROR = const(40)


def _make_crc_table():
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return table


_CRC_TABLE = None if _crc_hqx is not None else _make_crc_table()


def crc16(data, crc=0xFFFF):
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF); crc16(b"123456789") == 0x29B1."""
    if _crc_hqx is not None:
        return _crc_hqx(data, crc)
    table = _CRC_TABLE
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ table[((crc >> 8) ^ byte) & 0xFF]
    return crc


def encode_frame(frame_type, seq, t_us, payload=b""):
    """Return the bytes of one frame. seq wraps at 2**16, t_us at 2**32."""
    n = len(payload)
    if n > MAX_PAYLOAD:
        raise ValueError("payload too long")
    head = struct.pack(HEADER, SYNC0, SYNC1, PROTOCOL_VERSION, frame_type, n,
                       seq & 0xFFFF, t_us & 0xFFFFFFFF)
    crc = crc16(payload, crc16(head[2:]))
    return head + payload + struct.pack("<H", crc)


class Frame:
    """One decoded frame: type, sequence number, device time (us, wrapping) and payload."""

    __slots__ = ("frame_type", "seq", "t_us", "payload")

    def __init__(self, frame_type, seq, t_us, payload):
        self.frame_type = frame_type
        self.seq = seq
        self.t_us = t_us
        self.payload = payload

    def __eq__(self, other):
        return (isinstance(other, Frame) and self.frame_type == other.frame_type
                and self.seq == other.seq and self.t_us == other.t_us
                and self.payload == other.payload)

    def __repr__(self):
        name = FRAME_TYPE_NAMES.get(self.frame_type, hex(self.frame_type))
        return "Frame(%s, seq=%d, t_us=%d, %d bytes)" % (name, self.seq, self.t_us,
                                                          len(self.payload))

    def encode(self):
        return encode_frame(self.frame_type, self.seq, self.t_us, self.payload)


def _find_sync(buf, start):
    find = getattr(buf, "find", None)
    if find is not None:
        return find(SYNC, start)
    for i in range(start, len(buf) - 1):  # MicroPython bytearray has no find()
        if buf[i] == SYNC0 and buf[i + 1] == SYNC1:
            return i
    return -1


class FrameDecoder:
    """Incremental decoder: feed() arbitrary byte chunks, get back the frames completed.

    On a bad sync, an impossible length, an unknown version, a CRC mismatch or a
    length that does not fit the frame type it slides one byte and rescans, so one
    corrupted byte costs at most the frames it touches.
    Counters: bytes_in, frames_ok, crc_errors, bad_headers (impossible length),
    bad_lengths (CRC-valid frames whose length does not fit their type: false frames),
    version_errors (intact frames of another protocol version), resyncs (times bytes
    had to be discarded to regain sync), bytes_skipped, seq_gaps (jumps in the
    device's sequence numbers) and frames_lost (frames those jumps skipped).

    A jump in the sequence is only counted for good when the next frame continues
    after it: if instead the next frame continues from before the jump, the jumping
    frame was a false one (a CRC collision in corrupted bytes) and the jump is
    withdrawn (counted in false_jumps), so a false frame cannot inflate the losses.
    """

    def __init__(self, max_payload=MAX_PAYLOAD, track_sequence=True):
        self.max_payload = max_payload
        self.track_sequence = track_sequence
        self._buf = bytearray()
        self._skipping = False
        self.last_seq = -1
        self.bytes_in = 0
        self.frames_ok = 0
        self.crc_errors = 0
        self.bad_headers = 0
        self.version_errors = 0
        self.last_foreign_version = 0
        self.resyncs = 0
        self.bytes_skipped = 0
        self.seq_gaps = 0
        self.frames_lost = 0
        self.bad_lengths = 0
        self.false_jumps = 0
        self._pending_jump = None  # (gap, last_seq before the jump)

    def counters(self):
        return {
            "bytes_in": self.bytes_in, "frames_ok": self.frames_ok,
            "crc_errors": self.crc_errors, "bad_headers": self.bad_headers,
            "version_errors": self.version_errors, "resyncs": self.resyncs,
            "bytes_skipped": self.bytes_skipped, "seq_gaps": self.seq_gaps,
            "frames_lost": self.frames_lost, "bad_lengths": self.bad_lengths,
            "false_jumps": self.false_jumps,
        }

    def pending(self):
        """Number of bytes held back waiting for the rest of a frame."""
        return len(self._buf)

    def _skip(self, n):
        self.bytes_skipped += n
        self._skipping = True

    def _track(self, seq):
        pending = self._pending_jump
        self._pending_jump = None
        if pending is not None:
            jump, before = pending
            since_before = (seq - before - 1) & 0xFFFF
            if since_before < jump:
                # This frame continues from before the jump: the jumping frame was false.
                self.seq_gaps -= 1
                self.frames_lost -= jump
                self.false_jumps += 1
                self.last_seq = before
        if self.last_seq >= 0:
            gap = (seq - self.last_seq - 1) & 0xFFFF
            if gap:
                self.seq_gaps += 1
                self.frames_lost += gap
                self._pending_jump = (gap, self.last_seq)
        self.last_seq = seq

    def feed(self, data):
        self.bytes_in += len(data)
        buf = self._buf
        buf.extend(data)
        frames = []
        pos = 0
        n = len(buf)
        max_payload = self.max_payload
        while True:
            idx = _find_sync(buf, pos)
            if idx < 0:
                # Keep a trailing first sync byte: its partner may be in the next chunk.
                keep = 1 if n > pos and buf[n - 1] == SYNC0 else 0
                if n - keep > pos:
                    self._skip(n - keep - pos)
                pos = n - keep
                break
            if idx > pos:
                self._skip(idx - pos)
                pos = idx
            if n - idx < HEADER_LEN:
                break
            _, _, version, ftype, length, seq, t_us = struct.unpack_from(HEADER, buf, idx)
            if length > max_payload:
                self.bad_headers += 1
                self._skip(1)
                pos = idx + 1
                continue
            end = idx + HEADER_LEN + length
            if n < end + CRC_LEN:
                break
            crc = buf[end] | (buf[end + 1] << 8)
            if crc16(memoryview(buf)[idx + 2:end]) != crc:
                self.crc_errors += 1
                self._skip(1)
                pos = idx + 1
                continue
            if version != PROTOCOL_VERSION:
                self.version_errors += 1
                self.last_foreign_version = version
                self._skip(HEADER_LEN + length + CRC_LEN)
                pos = end + CRC_LEN
                continue
            bounds = PAYLOAD_LENGTHS.get(ftype)
            if bounds is not None and not bounds[0] <= length <= bounds[1]:
                self.bad_lengths += 1
                self._skip(1)
                pos = idx + 1
                continue
            if self._skipping:
                self.resyncs += 1
                self._skipping = False
            if self.track_sequence:
                self._track(seq)
            self.frames_ok += 1
            frames.append(Frame(ftype, seq, t_us, bytes(buf[idx + HEADER_LEN:end])))
            pos = end + CRC_LEN
        if pos:
            self._buf = buf[pos:]
        return frames

    def finish(self):
        """End of input: frames still recoverable from the bytes held back.

        A corrupted length can make the decoder wait for bytes that will never come;
        at the end of a stream (a recording's raw log) it slides past such false
        headers one byte at a time instead, so no intact frame is left behind.
        """
        frames = self.feed(b"")
        while len(self._buf) > 1:
            self._buf = self._buf[1:]
            self._skip(1)
            frames.extend(self.feed(b""))
        if self._buf:
            self._skip(len(self._buf))
            self._buf = bytearray()
        return frames


# ---- payload helpers -------------------------------------------------------------

def pack_sample(accel, loads, encoder_ticks, fresh_bits, status):
    return struct.pack(SAMPLE_FORMAT, accel[0], accel[1], accel[2], loads[0], loads[1],
                       loads[2], loads[3], encoder_ticks, fresh_bits, status)


def unpack_sample(payload):
    """-> (ax, ay, az, l_fr, l_fl, l_rl, l_rr, encoder_ticks, fresh_bits, status)"""
    if len(payload) != SAMPLE_LEN:
        raise ValueError("SAMPLE payload must be %d bytes" % SAMPLE_LEN)
    return struct.unpack(SAMPLE_FORMAT, payload)


def _ascii_field(text, size):
    raw = text.encode() if isinstance(text, str) else bytes(text)
    return raw[:size]


def _ascii_text(raw):
    end = raw.find(b"\x00")
    return (raw if end < 0 else raw[:end]).decode()


def pack_info(firmware_version, rate_hz, walker_id, n_load_cells=4, hx711_rate_hz=80,
              accel_range_g=16, accel_counts_per_g=256, encoder_ticks_per_rev=1024,
              flags=0):
    major, minor, patch = firmware_version
    return struct.pack(INFO_FORMAT, PROTOCOL_VERSION, major, minor, patch, rate_hz,
                       _ascii_field(walker_id, 16), n_load_cells, hx711_rate_hz,
                       accel_range_g, accel_counts_per_g, encoder_ticks_per_rev, flags)


def unpack_info(payload):
    """-> dict with protocol_version, firmware_version "a.b.c", rate_hz, walker_id, ..."""
    if len(payload) != INFO_LEN:
        raise ValueError("INFO payload must be %d bytes" % INFO_LEN)
    (proto, major, minor, patch, rate, walker_id, n_cells, hx_rate, accel_range,
     counts_per_g, ticks_per_rev, flags) = struct.unpack(INFO_FORMAT, payload)
    return {
        "protocol_version": proto,
        "firmware_version": "%d.%d.%d" % (major, minor, patch),
        "rate_hz": rate,
        "walker_id": _ascii_text(walker_id),
        "n_load_cells": n_cells,
        "hx711_rate_hz": hx_rate,
        "accel_range_g": accel_range,
        "accel_counts_per_g": counts_per_g,
        "encoder_ticks_per_rev": ticks_per_rev,
        "simulated": bool(flags & INFO_FLAG_SIMULATED),
        "streaming": bool(flags & INFO_FLAG_STREAMING),
        "calibrated": bool(flags & INFO_FLAG_CALIBRATED),
        "model_skipped": bool(flags & INFO_FLAG_MODEL_SKIPPED),
    }


CAL_FIELDS = ("load_offsets_counts", "load_gains_counts_per_n", "accel_bias_counts",
              "accel_counts_per_g", "encoder_ticks_per_rev", "wheel_diameter_m",
              "front_half_width_m", "rear_half_width_m", "wheelbase_m", "min_total_load_n")


def pack_calibration(cal, date_s=0):
    """cal: dict with CAL_FIELDS (lists of 4/4/3/3 numbers, then scalars)."""
    lo, lg = cal["load_offsets_counts"], cal["load_gains_counts_per_n"]
    ab, ag = cal["accel_bias_counts"], cal["accel_counts_per_g"]
    return struct.pack(CAL_FORMAT, CAL_VERSION, int(date_s) & 0xFFFFFFFF,
                       lo[0], lo[1], lo[2], lo[3], lg[0], lg[1], lg[2], lg[3],
                       ab[0], ab[1], ab[2], ag[0], ag[1], ag[2],
                       int(cal["encoder_ticks_per_rev"]), cal["wheel_diameter_m"],
                       cal["front_half_width_m"], cal["rear_half_width_m"],
                       cal["wheelbase_m"], cal["min_total_load_n"])


def unpack_calibration(payload):
    """-> dict with CAL_FIELDS, "version" and "date_s"; ValueError for a payload of
    another length or version, or with a value no walker can have (non-finite, a zero
    gain, a non-positive length)."""
    if len(payload) < 1 or payload[0] != CAL_VERSION:
        raise ValueError("calibration layout version %r is not %d"
                         % (payload[0] if len(payload) else None, CAL_VERSION))
    if len(payload) != CAL_LEN:
        raise ValueError("CALIBRATION payload must be %d bytes" % CAL_LEN)
    v = struct.unpack(CAL_FORMAT, payload)
    out = {"version": v[0], "date_s": v[1],
           "load_offsets_counts": list(v[2:6]), "load_gains_counts_per_n": list(v[6:10]),
           "accel_bias_counts": list(v[10:13]), "accel_counts_per_g": list(v[13:16]),
           "encoder_ticks_per_rev": v[16], "wheel_diameter_m": v[17],
           "front_half_width_m": v[18], "rear_half_width_m": v[19], "wheelbase_m": v[20],
           "min_total_load_n": v[21]}
    for x in v[2:16] + v[17:]:
        if x != x or x > 3e38 or x < -3e38:  # NaN or infinite (MicroPython has no isfinite)
            raise ValueError("calibration holds a non-finite value")
    for x in v[6:10] + v[13:16]:
        if x == 0:
            raise ValueError("calibration holds a zero gain")
    if v[16] <= 0 or min(v[17:]) <= 0:
        raise ValueError("calibration holds a non-positive length or count")
    return out


def pack_ack(command_type, command_seq, code=0):
    return struct.pack(ACK_FORMAT, command_type, command_seq & 0xFFFF, code)


def unpack_ack(payload):
    """-> (command_type, command_seq, code)"""
    if len(payload) != ACK_LEN:
        raise ValueError("ACK/NAK payload must be %d bytes" % ACK_LEN)
    return struct.unpack(ACK_FORMAT, payload)


def pack_log(level, text):
    raw = text.encode() if isinstance(text, str) else bytes(text)
    return bytes((level,)) + raw[:MAX_PAYLOAD - 1]


def unpack_log(payload):
    """-> (level, text)"""
    if len(payload) < 1:
        raise ValueError("LOG payload is empty")
    return payload[0], bytes(payload[1:]).decode("utf-8", "replace")


def pack_activity(index, confidence, code):
    return struct.pack(ACTIVITY_FORMAT, index, confidence, _ascii_field(code, 4))


def unpack_activity(payload):
    """-> (class index, confidence, activity code)"""
    if len(payload) != ACTIVITY_LEN:
        raise ValueError("ACTIVITY payload must be %d bytes" % ACTIVITY_LEN)
    index, confidence, code = struct.unpack(ACTIVITY_FORMAT, payload)
    return index, confidence, _ascii_text(code)


def pack_truth(code):
    return struct.pack(TRUTH_FORMAT, _ascii_field(code, 4))


def unpack_truth(payload):
    if len(payload) != TRUTH_LEN:
        raise ValueError("TRUTH payload must be %d bytes" % TRUTH_LEN)
    return _ascii_text(struct.unpack(TRUTH_FORMAT, payload)[0])


def pack_set_rate(rate_hz):
    return struct.pack(SET_RATE_FORMAT, rate_hz)


def unpack_set_rate(payload):
    if len(payload) != 2:
        raise ValueError("SET_RATE payload must be 2 bytes")
    return struct.unpack(SET_RATE_FORMAT, payload)[0]


def pack_model_begin(size, crc):
    return struct.pack(MODEL_BEGIN_FORMAT, size, crc)


def unpack_model_begin(payload):
    """-> (size, crc)"""
    if len(payload) != 6:
        raise ValueError("MODEL_BEGIN payload must be 6 bytes")
    return struct.unpack(MODEL_BEGIN_FORMAT, payload)


def pack_model_chunk(offset, data):
    if len(data) > MODEL_CHUNK_MAX:
        raise ValueError("model chunk too long")
    return struct.pack(MODEL_CHUNK_HEAD, offset) + bytes(data)


def unpack_model_chunk(payload):
    """-> (offset, data)"""
    if len(payload) < 4:
        raise ValueError("MODEL_CHUNK payload too short")
    return struct.unpack_from(MODEL_CHUNK_HEAD, payload, 0)[0], payload[4:]
