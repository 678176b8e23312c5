"""Synthetic walker byte streams for the recording tests (and their kill -9 child).

Every value is a function of the sample index, so a test can check what arrived
without keeping a copy, and every frame is made by device.protocol.wire.
"""
from __future__ import annotations

import numpy as np

from device.protocol import wire
from host.samples import SampleBlock, StreamDecoder

TRUTH_CODES = ("SIT", "STD", "WLK")


def expected_sample(i: int):
    """(accel, loads, encoder, fresh, status) of sample i."""
    accel = ((i % 2000) - 1000, -(i % 300), 256 + i % 5)
    loads = (3 * i, -i, i % 7, 8_000_000 - i)
    return accel, loads, i // 2, i & 0x0F, wire.STATUS_SIMULATED


class Synth:
    """A device: frames with one sequence counter and a microsecond clock."""

    def __init__(self, rate_hz: int = 100, t0_us: int = 123_456, seq0: int = 0,
                 truth_every: int = 100) -> None:
        self.period_us = 1_000_000 // rate_hz
        self.rate_hz = rate_hz
        self.t0_us = t0_us
        self.seq = seq0
        self.i = 0
        self.truth_every = truth_every

    def frame(self, frame_type: int, payload: bytes, t_us: int | None = None) -> bytes:
        t = self.t0_us + self.i * self.period_us if t_us is None else t_us
        data = wire.encode_frame(frame_type, self.seq, t, payload)
        self.seq = (self.seq + 1) & 0xFFFF
        return data

    def info(self) -> bytes:
        return self.frame(wire.INFO, wire.pack_info((0, 1, 0), self.rate_hz, "WL-TEST",
                                                    flags=wire.INFO_FLAG_SIMULATED))

    def truth_code(self, i: int) -> str:
        return TRUTH_CODES[(i // (3 * self.truth_every)) % len(TRUTH_CODES)]

    def sample(self) -> bytes:
        """The next SAMPLE frame (and a TRUTH frame every truth_every samples)."""
        i = self.i
        accel, loads, enc, fresh, status = expected_sample(i)
        data = self.frame(wire.SAMPLE, wire.pack_sample(accel, loads, enc, fresh, status))
        if self.truth_every and i % self.truth_every == 0:
            data += self.frame(wire.TRUTH, wire.pack_truth(self.truth_code(i)))
        self.i += 1
        return data


def check_samples(block: SampleBlock, first: int = 0) -> None:
    """Assert block holds samples first, first+1, ... exactly as Synth made them."""
    n = len(block)
    idx = np.arange(first, first + n)
    exp = [expected_sample(int(i)) for i in idx]
    np.testing.assert_array_equal(block.accel, np.array([e[0] for e in exp], np.int16)
                                  .reshape(n, 3))
    np.testing.assert_array_equal(block.loads, np.array([e[1] for e in exp], np.int32)
                                  .reshape(n, 4))
    np.testing.assert_array_equal(block.encoder, np.array([e[2] for e in exp], np.int32))
    np.testing.assert_array_equal(block.fresh, np.array([e[3] for e in exp], np.uint8))


def decode_reads(reads):
    """Reference: (SampleBlock, others, counters) from [(bytes, host_time)] reads,
    decoded by a fresh StreamDecoder exactly as a recording's raw log is."""
    from host.samples import split_frames

    dec = StreamDecoder()
    blocks, others = [], []
    for data, host_time in reads:
        b, o = dec.feed(data, host_time)
        blocks.append(b)
        others.extend(o)
    if reads:
        b, o = split_frames(dec.frames.finish(), dec.clock, reads[-1][1])
        blocks.append(b)
        others.extend(o)
    return SampleBlock.concatenate(blocks), others, dec.counters()
