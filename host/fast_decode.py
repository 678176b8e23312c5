"""Compiled fast path of the frame decoder for the host (replay, live link, recover).

``wire.FrameDecoder`` is plain Python so the firmware can share it, and costs ~3 us
per frame: most of ``walkerlab replay``'s time on an hour of data (issue 22). Here a
numba scan takes the run of well-formed, back-to-back frames at the start of the
decoder's buffer (sync, version, length, CRC and the type's payload length all
fine) as arrays; the first byte that is not such a frame, and everything after it,
goes through ``FrameDecoder.feed`` as before. The counters, the sequence tracking and
the frames handed on are exactly those the Python decoder alone gives (tested on
corrupted streams in random chunks).
"""
from __future__ import annotations

import numba
import numpy as np

from device.protocol import wire


def _crc_table() -> np.ndarray:
    table = np.empty(256, np.uint16)
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
        table[byte] = crc & 0xFFFF
    return table


CRC_TABLE = _crc_table()


def _length_bounds(max_payload: int) -> tuple[np.ndarray, np.ndarray]:
    lo = np.zeros(256, np.int64)
    hi = np.full(256, max_payload, np.int64)
    for ftype, (a, b) in wire.PAYLOAD_LENGTHS.items():
        lo[ftype], hi[ftype] = a, b
    return lo, hi


@numba.njit(cache=True)
def scan_clean_frames(buf, max_payload, lo, hi, table, ftype, seq, t_us, offset, lengths,
                      samples):
    """Frames starting at buf[0], back to back, each passing every check of
    FrameDecoder.feed; stops before the first that does not (or is incomplete).
    Fills ftype/seq/t_us/offset (payload start)/lengths per frame and copies SAMPLE
    payloads into the rows of ``samples`` (n_samples, SAMPLE_LEN), in order; returns
    (frames, samples, end position)."""
    n = buf.shape[0]
    pos = 0
    m = 0
    ns = 0
    cap = ftype.shape[0]
    while m < cap and n - pos >= wire.HEADER_LEN:
        if buf[pos] != wire.SYNC0 or buf[pos + 1] != wire.SYNC1:
            break
        if buf[pos + 2] != wire.PROTOCOL_VERSION:
            break
        ft = buf[pos + 3]
        length = np.int64(buf[pos + 4]) | (np.int64(buf[pos + 5]) << 8)
        if length > max_payload or length < lo[ft] or length > hi[ft]:
            break
        end = pos + wire.HEADER_LEN + length
        if n < end + wire.CRC_LEN:
            break
        crc = np.int64(0xFFFF)
        for i in range(pos + 2, end):
            crc = ((crc << 8) & 0xFFFF) ^ np.int64(table[((crc >> 8) ^ buf[i]) & 0xFF])
        if crc != (np.int64(buf[end]) | (np.int64(buf[end + 1]) << 8)):
            break
        ftype[m] = ft
        seq[m] = np.int64(buf[pos + 6]) | (np.int64(buf[pos + 7]) << 8)
        t_us[m] = (np.int64(buf[pos + 8]) | (np.int64(buf[pos + 9]) << 8)
                   | (np.int64(buf[pos + 10]) << 16) | (np.int64(buf[pos + 11]) << 24))
        offset[m] = pos + wire.HEADER_LEN
        lengths[m] = length
        if ft == wire.SAMPLE and length == wire.SAMPLE_LEN:
            for i in range(wire.SAMPLE_LEN):
                samples[ns, i] = buf[pos + wire.HEADER_LEN + i]
            ns += 1
        m += 1
        pos = end + wire.CRC_LEN
    return m, ns, pos


@numba.njit(cache=True)
def _consecutive(seqs, last_seq):
    """True if every seq follows the one before it (and ``last_seq``, if >= 0)."""
    prev = last_seq
    for i in range(seqs.shape[0]):
        if prev >= 0 and ((seqs[i] - prev - 1) & 0xFFFF) != 0:
            return False
        prev = seqs[i]
    return True


class FastFrames:
    """The clean frames of one feed: SAMPLE payloads as rows, the rest as Frames."""

    __slots__ = ("t_us", "is_sample", "seq", "samples", "others")

    def __init__(self, t_us, is_sample, seq, samples, others):
        self.t_us, self.is_sample, self.seq = t_us, is_sample, seq
        self.samples, self.others = samples, others  # others: (index, Frame)

    def __len__(self) -> int:
        return len(self.t_us)


def feed_fast(decoder: wire.FrameDecoder, data: bytes):
    """``decoder.feed(data)`` with the clean run at the front taken by the compiled
    scan: returns (FastFrames, list of Frame that follow them)."""
    decoder.bytes_in += len(data)
    buf = decoder._buf
    buf.extend(data)
    arr = np.frombuffer(buf, np.uint8)
    cap = len(buf) // (wire.HEADER_LEN + wire.CRC_LEN) + 1
    ftype = np.empty(cap, np.int64)
    seq = np.empty(cap, np.int64)
    t_us = np.empty(cap, np.int64)
    offset = np.empty(cap, np.int64)
    lengths = np.empty(cap, np.int64)
    samples = np.empty((len(buf) // (wire.HEADER_LEN + wire.SAMPLE_LEN + wire.CRC_LEN) + 1,
                        wire.SAMPLE_LEN), np.uint8)
    lo, hi = _bounds(decoder.max_payload)
    m, ns, pos = scan_clean_frames(arr, decoder.max_payload, lo, hi, CRC_TABLE, ftype, seq,
                                   t_us, offset, lengths, samples)
    ftype, seq = ftype[:m], seq[:m]
    is_sample = (ftype == wire.SAMPLE) & (lengths[:m] == wire.SAMPLE_LEN)
    others = []
    if ns < m:  # payloads of the other frames leave the buffer before it is trimmed
        for i in np.flatnonzero(~is_sample).tolist():
            a = int(offset[i])
            others.append((i, wire.Frame(int(ftype[i]), int(seq[i]), int(t_us[i]),
                                         bytes(arr[a:a + int(lengths[i])]))))
    del arr  # a bytearray with a live numpy view cannot be resized
    fast = FastFrames(t_us[:m], is_sample, seq[is_sample] if ns < m else seq,
                      samples[:ns], others)
    if m:
        if decoder._skipping:
            decoder.resyncs += 1
            decoder._skipping = False
        if decoder.track_sequence:
            if decoder._pending_jump is None and _consecutive(seq, decoder.last_seq):
                decoder.last_seq = int(seq[-1])
            else:
                for s_ in seq.tolist():
                    decoder._track(s_)
        decoder.frames_ok += m
        del buf[:pos]
    decoder.bytes_in -= len(data)  # feed() below counts them
    rest = decoder.feed(b"")
    decoder.bytes_in += len(data)
    return fast, rest


_BOUNDS: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _bounds(max_payload: int):
    b = _BOUNDS.get(max_payload)
    if b is None:
        b = _BOUNDS[max_payload] = _length_bounds(max_payload)
    return b


def split_fast(fast: FastFrames, rest: list, clock, host_time: float):
    """:func:`host.samples.split_frames` over the fast frames followed by ``rest``."""
    from host.samples import SAMPLE_DTYPE, SampleBlock, split_frames

    if not len(fast):
        return split_frames(rest, clock, host_time)
    m = len(fast)
    if rest:
        t_rest = np.fromiter((f.t_us for f in rest), np.int64, len(rest))
        times = clock.unwrap_array(np.concatenate([fast.t_us, t_rest]))
    else:
        times = clock.unwrap_array(fast.t_us)
    others = [(int(times[i]), f) for i, f in fast.others]
    rec = fast.samples.view(SAMPLE_DTYPE).reshape(-1)
    seqs = fast.seq
    sample_times = times[:m][fast.is_sample] if fast.others else times[:m]
    if rest:
        rest_block, rest_others = split_frames(rest, _Times(times[m:]), host_time)
        n_rest = len(rest_block)
        if n_rest:
            rec = np.concatenate([rec, np.frombuffer(b"".join(
                [f.payload for f in rest if f.frame_type == wire.SAMPLE
                 and len(f.payload) == wire.SAMPLE_LEN]), SAMPLE_DTYPE)])
            seqs = np.concatenate([seqs, rest_block.seq.astype(np.int64)])
            sample_times = np.concatenate([sample_times, rest_block.t_us])
        others += rest_others
    return SampleBlock(
        seq=seqs.astype(np.uint16), t_us=sample_times,
        host_time=np.full(len(seqs), host_time), accel=rec["accel"].copy(),
        loads=rec["loads"].copy(), encoder=rec["encoder"].copy(),
        fresh=rec["fresh"].copy(), status=rec["status"].copy()), others


class _Times:
    """A stand-in clock for split_frames: the times are unwrapped already."""

    def __init__(self, times):
        self.times = times

    def unwrap_array(self, _):
        return self.times
