"""Wire protocol: CRC, round trips of every frame type, incremental decoding, fuzzing."""
import random
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from device.protocol import wire
from device.protocol.wire import Frame, FrameDecoder, encode_frame
from host.samples import SAMPLE_DTYPE, DeviceClock


def test_crc_check_value_is_ccitt_false():
    assert wire.crc16(b"123456789") == 0x29B1


def test_table_crc_used_on_micropython_matches_binascii(monkeypatch):
    data = bytes(range(256)) * 3
    expected = wire.crc16(data)
    monkeypatch.setattr(wire, "_crc_hqx", None)
    monkeypatch.setattr(wire, "_CRC_TABLE", wire._make_crc_table())
    assert wire.crc16(b"123456789") == 0x29B1
    assert wire.crc16(data) == expected


PAYLOADS = {
    wire.SAMPLE: wire.pack_sample((-1, 2, 32767), (8388607, -8388608, 0, 12345), -7, 0b1010,
                                  wire.STATUS_SIMULATED),
    wire.INFO: wire.pack_info((1, 2, 3), 50, "WL-0007", flags=wire.INFO_FLAG_SIMULATED),
    wire.ACK: wire.pack_ack(wire.CMD_START, 65535, 0),
    wire.NAK: wire.pack_ack(wire.CMD_SET_RATE, 3, wire.NAK_BAD_ARGUMENT),
    wire.LOG: wire.pack_log(wire.LOG_WARNING, "tare done é"),
    wire.ACTIVITY: wire.pack_activity(4, 0.75, "TRS"),
    wire.TRUTH: wire.pack_truth("GUC"),
    wire.CMD_HELLO: b"",
    wire.CMD_START: b"",
    wire.CMD_STOP: b"",
    wire.CMD_SET_RATE: wire.pack_set_rate(100),
    wire.CMD_TARE: b"",
}


@pytest.mark.parametrize("frame_type", sorted(PAYLOADS))
def test_every_frame_type_round_trips(frame_type):
    raw = encode_frame(frame_type, 513, 0xFFFFFFFF, PAYLOADS[frame_type])
    assert raw[:2] == wire.SYNC and len(raw) == wire.HEADER_LEN + len(PAYLOADS[frame_type]) + 2
    frames = FrameDecoder().feed(raw)
    assert frames == [Frame(frame_type, 513, 0xFFFFFFFF, PAYLOADS[frame_type])]
    assert frames[0].encode() == raw


def test_payload_helpers_round_trip():
    assert wire.unpack_sample(PAYLOADS[wire.SAMPLE]) == (
        -1, 2, 32767, 8388607, -8388608, 0, 12345, -7, 0b1010, wire.STATUS_SIMULATED)
    info = wire.unpack_info(PAYLOADS[wire.INFO])
    assert info["firmware_version"] == "1.2.3" and info["walker_id"] == "WL-0007"
    assert info["rate_hz"] == 50 and info["simulated"] and not info["streaming"]
    assert info["protocol_version"] == wire.PROTOCOL_VERSION
    assert wire.unpack_ack(PAYLOADS[wire.NAK]) == (wire.CMD_SET_RATE, 3, wire.NAK_BAD_ARGUMENT)
    assert wire.unpack_log(PAYLOADS[wire.LOG]) == (wire.LOG_WARNING, "tare done é")
    index, confidence, code = wire.unpack_activity(PAYLOADS[wire.ACTIVITY])
    assert (index, code) == (4, "TRS") and confidence == pytest.approx(0.75)
    assert wire.unpack_truth(PAYLOADS[wire.TRUTH]) == "GUC"
    assert wire.unpack_set_rate(PAYLOADS[wire.CMD_SET_RATE]) == 100


def test_wrong_payload_sizes_raise_value_error():
    for unpack in (wire.unpack_sample, wire.unpack_info, wire.unpack_ack,
                   wire.unpack_activity, wire.unpack_truth, wire.unpack_set_rate):
        with pytest.raises(ValueError):
            unpack(b"\x00")


def test_numpy_sample_dtype_matches_struct_layout():
    rec = np.frombuffer(PAYLOADS[wire.SAMPLE], dtype=SAMPLE_DTYPE)[0]
    fields = wire.unpack_sample(PAYLOADS[wire.SAMPLE])
    assert tuple(rec["accel"]) == fields[0:3]
    assert tuple(rec["loads"]) == fields[3:7]
    assert (rec["encoder"], rec["fresh"], rec["status"]) == fields[7:10]


def test_maximum_payload_is_enforced_on_both_sides():
    with pytest.raises(ValueError):
        encode_frame(wire.LOG, 0, 0, bytes(wire.MAX_PAYLOAD + 1))
    # A header claiming a longer payload is never trusted: the decoder slides past it.
    head = struct.pack(wire.HEADER, wire.SYNC0, wire.SYNC1, 1, wire.LOG, 1000, 0, 0)
    good = encode_frame(wire.LOG, 1, 0, wire.pack_log(20, "ok"))
    decoder = FrameDecoder()
    assert decoder.feed(head + good) == [Frame(wire.LOG, 1, 0, wire.pack_log(20, "ok"))]
    assert decoder.bad_headers == 1 and decoder.resyncs == 1


def test_frame_split_across_reads_is_reassembled():
    stream = b"".join(encode_frame(wire.SAMPLE, i, i * 20000, PAYLOADS[wire.SAMPLE])
                      for i in range(10))
    decoder = FrameDecoder()
    frames = []
    for byte in stream:
        frames += decoder.feed(bytes([byte]))
    assert [f.seq for f in frames] == list(range(10))
    assert decoder.crc_errors == decoder.resyncs == decoder.seq_gaps == 0
    assert decoder.pending() == 0


def test_bad_crc_drops_frame_and_counts_it():
    frames = [encode_frame(wire.SAMPLE, i, 0, PAYLOADS[wire.SAMPLE]) for i in range(3)]
    broken = bytearray(frames[1])
    broken[20] ^= 0x04
    decoder = FrameDecoder()
    out = decoder.feed(frames[0] + bytes(broken) + frames[2])
    assert [f.seq for f in out] == [0, 2]
    assert decoder.crc_errors == 1 and decoder.resyncs == 1
    assert decoder.seq_gaps == 1 and decoder.frames_lost == 1


def test_sequence_gap_counts_missing_frames_across_wrap():
    decoder = FrameDecoder()
    stream = b"".join(encode_frame(wire.SAMPLE, s, 0, PAYLOADS[wire.SAMPLE])
                      for s in (65534, 65535, 0, 3))
    assert len(decoder.feed(stream)) == 4
    assert decoder.seq_gaps == 1 and decoder.frames_lost == 2


def test_frame_of_another_protocol_version_is_counted_not_delivered():
    payload = b"\x01\x02"
    head = struct.pack(wire.HEADER, wire.SYNC0, wire.SYNC1, 9, wire.LOG, 2, 0, 0)
    crc = wire.crc16(payload, wire.crc16(head[2:]))
    foreign = head + payload + struct.pack("<H", crc)
    decoder = FrameDecoder()
    assert decoder.feed(foreign) == []
    assert decoder.version_errors == 1 and decoder.last_foreign_version == 9


def test_garbage_without_sync_does_not_grow_the_buffer():
    decoder = FrameDecoder()
    for _ in range(100):
        decoder.feed(bytes(range(0, 160)))
    assert decoder.pending() <= 1


def test_device_clock_unwraps_32_bit_microseconds():
    raw = [0xFFFFFF00, 0xFFFFFFF0, 0x00000010, 0x00000100]
    clock = DeviceClock()
    assert [clock.unwrap(t) for t in raw] == [0xFFFFFF00, 0xFFFFFFF0, 0x100000010,
                                               0x100000100]
    vec = DeviceClock()
    first = vec.unwrap_array(np.array(raw[:2]))
    second = vec.unwrap_array(np.array(raw[2:]))
    assert list(np.concatenate([first, second])) == [0xFFFFFF00, 0xFFFFFFF0,
                                                      0x100000010, 0x100000100]


def _corrupt_stream(frames, rng):
    """Corrupt some frames (bit flips, dropped/inserted bytes); return stream, intact idx."""
    out = bytearray()
    intact = []
    for i, raw in enumerate(frames):
        raw = bytearray(raw)
        action = rng.random()
        if action < 0.15:
            raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        elif action < 0.25:
            del raw[rng.randrange(len(raw))]
        elif action < 0.32:
            raw = raw[: rng.randrange(len(raw))]  # truncated: the cable was pulled
        else:
            intact.append(i)
        if rng.random() < 0.1:
            out += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 30)))
        if rng.random() < 0.05:
            out += wire.SYNC  # a false sync right before a frame
        out += raw
    return bytes(out), intact


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), chunk=st.integers(1, 300))
def test_random_corruption_never_raises_and_recovers_every_intact_frame(seed, chunk):
    rng = random.Random(seed)
    types = sorted(PAYLOADS)
    frames = [encode_frame(t, i, i * 1000, PAYLOADS[t])
              for i, t in enumerate(rng.choice(types) for _ in range(60))]
    stream, intact = _corrupt_stream(frames, rng)
    decoder = FrameDecoder()
    decoded = []
    pos = 0
    while pos < len(stream):
        step = rng.randrange(1, chunk + 1)
        decoded += decoder.feed(stream[pos:pos + step])
        pos += step
    decoded += decoder.finish()
    got = {(f.seq, f.frame_type, f.payload) for f in decoded}
    for i in intact:
        frame = FrameDecoder().feed(frames[i])[0]
        assert (frame.seq, frame.frame_type, frame.payload) in got
    assert decoder.frames_ok == len(decoded)


@given(data=st.binary(max_size=2000))
@settings(max_examples=200, deadline=None)
def test_arbitrary_bytes_never_raise(data):
    decoder = FrameDecoder()
    decoder.feed(data)
    decoder.finish()
    assert decoder.pending() == 0


def test_frame_whose_length_does_not_fit_its_type_is_rejected():
    # A CRC-valid SAMPLE with 27 payload bytes: what a CRC-16 collision in corrupted
    # bytes looks like. It must not come out, and the good frame after it must.
    false = wire.encode_frame(wire.SAMPLE, 7, 0, bytes(27))
    good = wire.encode_frame(wire.SAMPLE, 1, 0, bytes(wire.SAMPLE_LEN))
    dec = wire.FrameDecoder()
    frames = dec.feed(false + good)
    assert [(f.frame_type, f.seq) for f in frames] == [(wire.SAMPLE, 1)]
    assert dec.bad_lengths == 1
    # Every listed type accepts exactly its documented lengths.
    for ftype, (lo, hi) in wire.PAYLOAD_LENGTHS.items():
        for n in {lo, hi}:
            assert wire.FrameDecoder().feed(wire.encode_frame(ftype, 0, 0, bytes(n)))
        if lo > 0:
            assert not wire.FrameDecoder().feed(wire.encode_frame(ftype, 0, 0, bytes(lo - 1)))


def test_a_false_frame_cannot_inflate_the_loss_counters():
    def sample(seq):
        return wire.encode_frame(wire.SAMPLE, seq, 0, bytes(wire.SAMPLE_LEN))

    # 0, 1, 2, [false 9000], 3, 4: the jump to 9000 is withdrawn by frame 3.
    dec = wire.FrameDecoder()
    dec.feed(sample(0) + sample(1) + sample(2) + sample(9000) + sample(3) + sample(4))
    assert (dec.seq_gaps, dec.frames_lost, dec.false_jumps) == (0, 0, 1)
    # A false frame behind the stream (seq 1 after 2) is withdrawn too.
    dec = wire.FrameDecoder()
    dec.feed(sample(0) + sample(1) + sample(2) + sample(1) + sample(3))
    assert (dec.seq_gaps, dec.frames_lost) == (0, 0)
    # A real loss (frames 3-5 never arrive) stays counted once the stream goes on after it.
    dec = wire.FrameDecoder()
    dec.feed(sample(0) + sample(1) + sample(2) + sample(6) + sample(7))
    assert (dec.seq_gaps, dec.frames_lost, dec.false_jumps) == (1, 3, 0)
    # A walker that restarts its sequence after a reboot is a real jump.
    dec = wire.FrameDecoder()
    dec.feed(sample(500) + sample(501) + sample(0) + sample(1))
    assert dec.seq_gaps == 1 and dec.false_jumps == 0
