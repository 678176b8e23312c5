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
def scan_clean_frames(buf, max_payload, lo, hi, table, ftype, seq, t_us, offset, lengths):
    """Frames starting at buf[0], back to back, each passing every check of
    FrameDecoder.feed; stops before the first that does not (or is incomplete).
    Fills ftype/seq/t_us/offset (payload start)/lengths and returns (count, end position)."""
    n = buf.shape[0]
    pos = 0
    m = 0
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
        m += 1
        pos = end + wire.CRC_LEN
    return m, pos


class FastFrames:
    """The clean frames of one feed as arrays (payloads still in ``buf``)."""

    __slots__ = ("buf", "ftype", "seq", "t_us", "offset", "length")

    def __init__(self, buf, ftype, seq, t_us, offset, length):
        self.buf, self.ftype, self.seq, self.t_us = buf, ftype, seq, t_us
        self.offset, self.length = offset, length

    def __len__(self) -> int:
        return len(self.ftype)

    def frame(self, i: int) -> wire.Frame:
        a = int(self.offset[i])
        return wire.Frame(int(self.ftype[i]), int(self.seq[i]), int(self.t_us[i]),
                          self.buf[a:a + int(self.length[i])].tobytes())


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
    lo, hi = _bounds(decoder.max_payload)
    m, pos = scan_clean_frames(arr, decoder.max_payload, lo, hi, CRC_TABLE, ftype, seq,
                               t_us, offset, lengths)
    # Payloads are copied out before the buffer is trimmed (a bytearray with a live
    # numpy view cannot be resized).
    payload = arr[:pos].copy()
    del arr
    fast = FastFrames(payload, ftype[:m], seq[:m], t_us[:m], offset[:m], lengths[:m])
    if m:
        if decoder._skipping:
            decoder.resyncs += 1
            decoder._skipping = False
        if decoder.track_sequence:
            _track_all(decoder, fast.seq)
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


def _track_all(decoder: wire.FrameDecoder, seqs: np.ndarray) -> None:
    """decoder._track(s) for every s, in order: vectorised when nothing jumps."""
    if decoder._pending_jump is None and len(seqs):
        first_ok = decoder.last_seq < 0 or ((int(seqs[0]) - decoder.last_seq - 1)
                                            & 0xFFFF) == 0
        if first_ok and not np.any((np.diff(seqs) - 1) & 0xFFFF):
            decoder.last_seq = int(seqs[-1])
            return
    for s in seqs.tolist():
        decoder._track(s)


def split_fast(fast: FastFrames, rest: list, clock, host_time: float):
    """:func:`host.samples.split_frames` over the fast frames followed by ``rest``."""
    from host.samples import SampleBlock, split_frames

    if not len(fast):
        return split_frames(rest, clock, host_time)
    t_rest = np.fromiter((f.t_us for f in rest), np.int64, len(rest))
    times = clock.unwrap_array(np.concatenate([fast.t_us, t_rest]))
    m = len(fast)
    is_sample = (fast.ftype == wire.SAMPLE) & (fast.length == wire.SAMPLE_LEN)
    starts = fast.offset[is_sample]
    payload = fast.buf[starts[:, None] + np.arange(wire.SAMPLE_LEN)].tobytes()
    seqs = fast.seq[is_sample]
    others = [(int(times[i]), fast.frame(i)) for i in np.flatnonzero(~is_sample)]
    sample_times = times[:m][is_sample]
    if rest:
        rest_sample = [f.frame_type == wire.SAMPLE and len(f.payload) == wire.SAMPLE_LEN
                       for f in rest]
        payload += b"".join([f.payload for f, s in zip(rest, rest_sample) if s])
        seqs = np.concatenate([seqs, np.array([f.seq for f, s in zip(rest, rest_sample)
                                               if s], np.int64)])
        mask = np.fromiter(rest_sample, bool, len(rest))
        sample_times = np.concatenate([sample_times, times[m:][mask]])
        others += [(int(t), f) for t, f, s in zip(times[m:], rest, rest_sample) if not s]
    block = SampleBlock.from_payloads(payload, seqs, sample_times,
                                      np.full(len(seqs), host_time))
    return block, others
