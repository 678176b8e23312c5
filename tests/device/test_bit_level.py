"""The virtual walker's bit-level board (firmware drivers on simulated electronics)
and the fast board used for bulk simulation produce identical bytes."""
import pytest

from calibration import calibration_for
from device.protocol import wire
from device.sim.virtual_walker import VirtualWalker
from host.deploy import model_bytes


def _session(hardware, model=None, seconds=40, rate=50, course="exp1", repeat=False):
    w = VirtualWalker(course, 4, rate, duration_s=None if course != "free" else seconds,
                      hardware=hardware, repeat=repeat)
    seq = 0

    def cmd(kind, payload=b""):
        nonlocal seq
        w.command(kind, payload, seq=seq)
        seq += 1

    cmd(wire.CMD_HELLO)
    if model is not None:
        cmd(wire.CMD_MODEL_BEGIN, wire.pack_model_begin(len(model), wire.crc16(model)))
        for off in range(0, len(model), wire.MODEL_CHUNK_MAX):
            cmd(wire.CMD_MODEL_CHUNK,
                wire.pack_model_chunk(off, model[off:off + wire.MODEL_CHUNK_MAX]))
        cmd(wire.CMD_MODEL_COMMIT)
    cmd(wire.CMD_START)
    out = bytearray()
    for k in range(1, seconds + 1):
        if k == 10:
            cmd(wire.CMD_TARE)
        if k == 20:
            cmd(wire.CMD_SET_RATE, wire.pack_set_rate(100))
        out += w.advance(k * 1_000_000)
    return bytes(out), w


@pytest.mark.parametrize("with_model", [False, True])
def test_bit_level_and_fast_boards_send_identical_bytes(trained_hmms, with_model):
    model = model_bytes(trained_hmms["cop"], calibration_for("SIM-0")) if with_model else None
    bits, wb = _session("bits", model)
    fast, _ = _session("fast", model)
    assert bits == fast
    frames = wire.FrameDecoder().feed(bits)
    kinds = {f.frame_type for f in frames}
    assert wire.SAMPLE in kinds and (wire.ACTIVITY in kinds) == with_model
    # the bit-level path really went through the drivers
    assert all(c.reads > 1000 for c in wb.board.hx711_chips)
    assert wb.board.wheel.edges > 100
    assert wb.board.adxl345.writes[-1] == (0x2D, 0x08)


def test_identical_across_subjects_on_a_repeating_walker():
    """The wheel keeps its position when the next subject starts (encoder offset)."""
    bits, wb = _session("bits", course="free", seconds=25, repeat=False)
    fast, _ = _session("fast", course="free", seconds=25, repeat=False)
    assert bits == fast
    wb2 = VirtualWalker("free", 0, 50, duration_s=5, repeat=True, hardware="bits")
    wf2 = VirtualWalker("free", 0, 50, duration_s=5, repeat=True, hardware="fast")
    for w in (wb2, wf2):
        w.command(wire.CMD_START)
    assert wb2.advance(12_000_000) == wf2.advance(12_000_000)
    assert wb2.subjects_done == 2


def test_unknown_hardware_is_a_value_error():
    with pytest.raises(ValueError, match="hardware"):
        VirtualWalker("free", 0, hardware="quantum")
