"""Turn decoded frames into column arrays: the host's unit of sensor data.

Every consumer downstream of the decoder (recording writer, features, recognizers,
plots) works on :class:`SampleBlock` arrays, never on frames one by one.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from device.protocol import wire

# Bytes of a SAMPLE payload as a numpy record (little-endian, packed): must match
# wire.SAMPLE_FORMAT, checked in tests/device/test_protocol.py.
SAMPLE_DTYPE = np.dtype([
    ("accel", "<i2", (3,)),
    ("loads", "<i4", (4,)),
    ("encoder", "<i4"),
    ("fresh", "u1"),
    ("status", "u1"),
])
assert SAMPLE_DTYPE.itemsize == wire.SAMPLE_LEN


class DeviceClock:
    """Unwraps the device's 32-bit microsecond timestamps into a continuous int64.

    The wire carries t_us modulo 2**32 (71.6 minutes). Consecutive frames are far
    less than 2**31 us apart, so the forward difference modulo 2**32 is the elapsed
    time; a "negative" difference (device reset) is kept as a small backward step.
    """

    def __init__(self) -> None:
        self._last_raw: int | None = None
        self._last: int = 0

    def unwrap(self, t_us: int) -> int:
        if self._last_raw is None:
            self._last = t_us
        else:
            delta = (t_us - self._last_raw) & 0xFFFFFFFF
            if delta >= 1 << 31:
                delta -= 1 << 32
            self._last += delta
        self._last_raw = t_us
        return self._last

    def unwrap_array(self, t_us: np.ndarray) -> np.ndarray:
        """Vectorised unwrap of a block of raw timestamps, continuing the state."""
        raw = np.asarray(t_us, dtype=np.int64)
        if raw.size == 0:
            return raw
        prev = np.empty_like(raw)
        prev[0] = raw[0] if self._last_raw is None else self._last_raw
        prev[1:] = raw[:-1]
        delta = (raw - prev) & 0xFFFFFFFF
        delta[delta >= 1 << 31] -= 1 << 32
        start = raw[0] if self._last_raw is None else self._last
        out = start + np.cumsum(delta)
        if self._last_raw is None:
            out -= delta[0]
        self._last_raw = int(raw[-1])
        self._last = int(out[-1])
        return out


@dataclass
class SampleBlock:
    """A block of SAMPLE frames as columns (n rows each)."""

    seq: np.ndarray  # uint16, as sent
    t_us: np.ndarray  # int64, unwrapped device time in microseconds
    host_time: np.ndarray  # float64, host arrival time (seconds, time.time())
    accel: np.ndarray  # (n, 3) int16 counts
    loads: np.ndarray  # (n, 4) int32 counts, order FR, FL, RL, RR
    encoder: np.ndarray  # int32 cumulative ticks
    fresh: np.ndarray  # uint8, bit i: load cell i converted since the previous sample
    status: np.ndarray  # uint8 status bits (wire.STATUS_*)

    def __len__(self) -> int:
        return len(self.seq)

    @classmethod
    def empty(cls) -> "SampleBlock":
        return cls.from_payloads(b"", np.zeros(0, np.uint16), np.zeros(0, np.int64),
                                 np.zeros(0))

    @classmethod
    def from_payloads(cls, payloads: bytes, seq, t_us, host_time) -> "SampleBlock":
        rec = np.frombuffer(payloads, dtype=SAMPLE_DTYPE)
        return cls(
            seq=np.asarray(seq, dtype=np.uint16),
            t_us=np.asarray(t_us, dtype=np.int64),
            host_time=np.asarray(host_time, dtype=np.float64),
            accel=rec["accel"].copy(),
            loads=rec["loads"].copy(),
            encoder=rec["encoder"].copy(),
            fresh=rec["fresh"].copy(),
            status=rec["status"].copy(),
        )

    @classmethod
    def concatenate(cls, blocks: list["SampleBlock"]) -> "SampleBlock":
        if not blocks:
            return cls.empty()
        return cls(**{name: np.concatenate([getattr(b, name) for b in blocks])
                      for name in cls.__dataclass_fields__})

    def slice(self, start: int, stop: int) -> "SampleBlock":
        return SampleBlock(**{name: getattr(self, name)[start:stop]
                              for name in self.__dataclass_fields__})


def split_frames(frames, clock: DeviceClock, host_time: float):
    """Split decoded frames into a SampleBlock and the list of other frames.

    Returns (block, others) where others are (unwrapped t_us, frame) pairs. Every frame
    goes through `clock`, in arrival order, so the time base stays continuous.
    """
    times = clock.unwrap_array(np.fromiter((f.t_us for f in frames), np.int64,
                                           len(frames)))
    sample_type = wire.SAMPLE
    sample_len = wire.SAMPLE_LEN
    is_sample = [f.frame_type == sample_type and len(f.payload) == sample_len
                 for f in frames]
    payloads = b"".join([f.payload for f, s in zip(frames, is_sample) if s])
    seqs = [f.seq for f, s in zip(frames, is_sample) if s]
    mask = np.fromiter(is_sample, bool, len(frames))
    others = [(int(t), f) for t, f, s in zip(times, frames, is_sample) if not s]
    block = SampleBlock.from_payloads(payloads, seqs, times[mask],
                                      np.full(len(seqs), host_time))
    return block, others


class StreamDecoder:
    """Raw serial bytes -> (SampleBlock, other frames): the first stage of every path.

    The live link, replay and `walkerlab recover` all use this one class, so a
    recording's raw byte log always decodes to exactly what was seen live.
    """

    def __init__(self) -> None:
        self.frames = wire.FrameDecoder()
        self.clock = DeviceClock()

    def feed(self, data: bytes, host_time: float):
        # The compiled scan takes the clean frames; FrameDecoder the rest (issue 22).
        from host.fast_decode import feed_fast, split_fast

        fast, rest = feed_fast(self.frames, data)
        return split_fast(fast, rest, self.clock, host_time)

    def counters(self) -> dict:
        return self.frames.counters()
