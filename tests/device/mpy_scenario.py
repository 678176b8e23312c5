# A firmware session on simulated electronics, runnable by MicroPython and CPython
# alike: test_micropython_runtime.py runs it under both and compares the bytes.
#
# usage: <interpreter> mpy_scenario.py REPO_ROOT MODEL_FILE STORAGE_DIR N_SAMPLES
# Prints the firmware's output bytes as hex, 64 bytes a line.
import sys

ROOT = sys.argv[1]
sys.path.insert(0, ROOT)
sys.path.insert(0, ROOT + "/device/sim")  # hardware.py alone: device.sim needs numpy

import hardware  # noqa: E402
from device.firmware.adxl345 import ADXL345  # noqa: E402
from device.firmware.core import WalkerFirmware  # noqa: E402
from device.firmware.encoder import QuadratureEncoder  # noqa: E402
from device.firmware.hx711 import HX711  # noqa: E402
from device.firmware.storage import FileStorage  # noqa: E402
from device.protocol import wire  # noqa: E402

OFFSETS = (157000, -120000, 90000, 4000000)


class Sensors:
    """Deterministic stand-in for SimulatedSensors: an LCG drives every reading."""

    def __init__(self):
        self.t_us = 0
        self.x = 12345
        self.next_conv = [1000 + 3000 * i for i in range(4)]
        self.pos = 0

    def rand(self, n):
        self.x = (1103515245 * self.x + 12345) & 0x7FFFFFFF
        return self.x % n

    def hx711_ready(self, cell):
        return self.t_us >= self.next_conv[cell]

    def hx711_read(self, cell):
        self.next_conv[cell] = self.t_us + 12500
        phase = (self.t_us // 2000000) % 3  # the load pattern changes every 2 s
        load = (0, 400000, 1500000)[phase] * (cell + 1)
        v = OFFSETS[cell] + load + self.rand(20001) - 10000
        return max(-(1 << 23), min((1 << 23) - 1, v))

    def accel_read(self):
        return (self.rand(401) - 200, self.rand(401) - 200, 256 + self.rand(101) - 50)

    def encoder_count(self):
        return (self.t_us // 4000) % 700 - 100  # forwards, then a jump back


class Board:
    simulated = True
    walker_id = "MPY-TEST"

    def __init__(self, storage):
        self.sensors = Sensors()
        self.chips = [hardware.SimHX711(self, i) for i in range(4)]
        self.load_cells = [HX711(c.sck, c.dout_pin) for c in self.chips]
        self.accel = ADXL345(hardware.SimI2C({0x53: hardware.SimADXL345(self)}))
        self.wheel = hardware.SimQuadrature()
        self.encoder = QuadratureEncoder(self.wheel.pin_a, self.wheel.pin_b)
        self.storage = storage


def main():
    model_path, storage_dir, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
    with open(model_path, "rb") as f:
        model = f.read()
    out = bytearray()
    board = Board(FileStorage(storage_dir))
    fw = WalkerFirmware(board, out.extend)
    seq = [0]

    def cmd(kind, payload=b""):
        fw.handle_bytes(wire.encode_frame(kind, seq[0], 0, payload), board.sensors.t_us)
        seq[0] += 1

    cmd(wire.CMD_HELLO)
    cmd(wire.CMD_MODEL_BEGIN, wire.pack_model_begin(len(model), wire.crc16(model)))
    step = wire.MODEL_CHUNK_MAX
    for off in range(0, len(model), step):
        cmd(wire.CMD_MODEL_CHUNK, wire.pack_model_chunk(off, model[off:off + step]))
    cmd(wire.CMD_MODEL_COMMIT)
    cmd(wire.CMD_SET_RATE, wire.pack_set_rate(100))
    cmd(wire.CMD_START)
    for i in range(n):
        t = i * fw.period_us
        board.sensors.t_us = t
        if i == 300:
            cmd(wire.CMD_TARE)
        board.wheel.sync(board.sensors.encoder_count())
        fw.sample(t)
    # a reboot: the model comes back from storage
    fw2 = WalkerFirmware(Board(FileStorage(storage_dir)), out.extend)
    out.extend(b"REBOOT" if fw2.recognizer is not None else b"NOMODEL")
    data = bytes(out)
    for i in range(0, len(data), 64):
        print("".join("%02x" % b for b in data[i:i + 64]))


main()
