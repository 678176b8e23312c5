"""The compiled decoder fast path gives exactly what the Python FrameDecoder gives."""
import numpy as np
import pytest

from device.protocol import wire
from host.samples import DeviceClock, StreamDecoder, split_frames


def _stream(rng, n_frames=3000, corrupt=True) -> bytes:
    out = bytearray()
    seq = 0
    t = 4_294_000_000  # wraps the 32-bit device clock within the stream
    for i in range(n_frames):
        kind = rng.random()
        if kind < 0.9:
            ft, payload = wire.SAMPLE, rng.bytes(wire.SAMPLE_LEN)
        elif kind < 0.93:
            ft, payload = wire.TRUTH, b"WF  "
        elif kind < 0.96:
            ft, payload = wire.LOG, rng.bytes(int(rng.integers(1, 60)))
        elif kind < 0.98:
            ft, payload = 0x7E, rng.bytes(int(rng.integers(0, 20)))  # unknown type
        else:
            ft, payload = wire.SAMPLE, rng.bytes(wire.SAMPLE_LEN - 1)  # bad length
        frame = bytearray(wire.encode_frame(ft, seq, t % 2**32, payload))
        if corrupt:
            r = rng.random()
            if r < 0.01:
                frame[int(rng.integers(len(frame)))] ^= 0x40  # CRC error
            elif r < 0.015:
                frame = frame[:int(rng.integers(1, len(frame)))]  # truncated
            elif r < 0.02:
                frame = bytearray(rng.bytes(int(rng.integers(1, 30)))) + frame  # garbage
            elif r < 0.025:  # an intact frame of another protocol version
                frame[2] = 2
                crc = wire.crc16(bytes(frame[2:-2]))
                frame[-2:] = bytes([crc & 0xFF, crc >> 8])
            elif r < 0.03:
                seq += int(rng.integers(1, 5))  # lost frames
        out += frame
        seq = (seq + 1) & 0xFFFF
        t += 10_000
    return bytes(out)


def _reference(chunks):
    dec = wire.FrameDecoder()
    clock = DeviceClock()
    results = [split_frames(dec.feed(c), clock, float(i)) for i, c in enumerate(chunks)]
    return dec, results


@pytest.mark.parametrize("seed,corrupt", [(0, False), (1, True), (2, True), (3, True)])
def test_fast_decoder_equals_the_python_decoder(seed, corrupt):
    rng = np.random.default_rng(seed)
    raw = _stream(rng, corrupt=corrupt)
    cuts = np.sort(rng.integers(0, len(raw), 200))
    chunks = [raw[a:b] for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(raw)])]
    ref_dec, ref = _reference(chunks)
    fast = StreamDecoder()
    got = [fast.feed(c, float(i)) for i, c in enumerate(chunks)]
    assert fast.counters() == ref_dec.counters()
    assert bytes(fast.frames._buf) == bytes(ref_dec._buf)
    assert fast.frames.last_seq == ref_dec.last_seq
    total = 0
    for (b1, o1), (b2, o2) in zip(got, ref):
        for name in b2.__dataclass_fields__:
            a, b = getattr(b1, name), getattr(b2, name)
            assert a.dtype == b.dtype and np.array_equal(a, b), name
        assert o1 == o2
        total += len(b1)
    assert total > 2000
    if corrupt:
        c = ref_dec.counters()
        assert c["crc_errors"] and c["resyncs"] and c["seq_gaps"] and c["version_errors"]


def test_unpaced_replay_joins_reads_without_changing_the_result():
    """replay_bytes joins reads into larger pieces when unpaced and unobserved; with
    an on_output observer it keeps every read: both give the same arrays."""
    from calibration import calibration_for
    from device.sim.virtual_walker import simulate_session_bytes
    from host.models import load_default_model
    from host.replay import replay_bytes

    chunks = list(simulate_session_bytes("free", 3, 100, duration_s=240))
    assert sum(len(d) for _, d in chunks) > 20 * (1 << 14)  # many joined pieces
    model = load_default_model()
    cal = calibration_for("SIM-0")
    joined = replay_bytes(chunks, cal, model, rate_hz=100, _coalesce_bytes=1 << 14)
    seen = []
    per_read = replay_bytes(chunks, cal, model, rate_hz=100, on_output=seen.append)
    assert len(seen) > 100 and joined.frames == per_read.frames > 20000
    np.testing.assert_array_equal(joined.t_s, per_read.t_s)
    np.testing.assert_array_equal(joined.features, per_read.features)
    np.testing.assert_array_equal(joined.posterior, per_read.posterior)
