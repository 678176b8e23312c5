"""Sensor faults reach the SAMPLE status bits, and clear when the sensor recovers."""
from device.firmware.core import WalkerFirmware
from device.protocol import wire
from device.sim.board import BitLevelBoard
from device.sim.sensors import SimulatedSensors


def _status_run(board, fw, t0, t1, step=20_000):
    out = []
    for t in range(t0, t1, step):
        board.sensors.advance_to(t * 1e-6)
        board.sync()
        fw.sample(t)
        out.append(fw.status)
    return out


def test_stalled_load_cell_and_missing_accelerometer_set_fault_bits():
    board = BitLevelBoard(SimulatedSensors("free", seed=3, duration_s=20))
    out = bytearray()
    fw = WalkerFirmware(board, out.extend)
    fw.streaming = True
    ok = _status_run(board, fw, 0, 1_000_000)
    assert not any(s & (wire.STATUS_LOADCELL_FAULT | wire.STATUS_ACCEL_FAULT) for s in ok)
    chip = board.hx711_chips[2]
    real = chip.dout
    chip.dout = lambda: 1  # DOUT stuck high: the HX711 stopped converting
    stuck = _status_run(board, fw, 1_000_000, 1_200_000)
    assert stuck[0] & wire.STATUS_LOADCELL_FAULT == 0  # one missed sample is normal
    assert all(s & wire.STATUS_LOADCELL_FAULT for s in stuck[4:])
    chip.dout = real
    assert not _status_run(board, fw, 1_200_000, 1_300_000)[-1] & wire.STATUS_LOADCELL_FAULT
    devices = board.i2c.devices
    board.i2c.devices = {}  # the accelerometer drops off the bus
    lost = _status_run(board, fw, 1_300_000, 1_400_000)
    assert all(s & wire.STATUS_ACCEL_FAULT for s in lost)
    frames = wire.FrameDecoder().feed(bytes(out))
    last = wire.unpack_sample([f for f in frames if f.frame_type == wire.SAMPLE][-1].payload)
    assert last[:3] == (0, 0, 0)
    board.i2c.devices = devices
    assert not _status_run(board, fw, 1_400_000, 1_500_000)[-1] & wire.STATUS_ACCEL_FAULT
