"""The simulated boards: SimulatedSensors seen through the firmware's hardware interface.

device/firmware/core.py talks to `board.load_cells[i].is_ready()/read()`,
`board.accel.read()` and `board.encoder.count()`. Two boards answer:

* `BitLevelBoard`: the real firmware drivers (device/firmware/hx711.py, adxl345.py,
  encoder.py) on simulated pins, I2C registers and encoder edges (hardware.py), so
  the bytes come from the firmware down to the bit-banged HX711 reads. The virtual
  walker serves this one.
* `SimulatedBoard`: the fast path for bulk offline simulation (`walkerlab
  simulate`); it answers the same calls straight from the simulation, skipping the
  pin-level detour. tests/device/test_bit_level.py checks that both give identical
  bytes.
"""
from __future__ import annotations

from device.firmware.adxl345 import ADXL345
from device.firmware.encoder import QuadratureEncoder
from device.firmware.hx711 import HX711
from device.firmware.storage import MemoryStorage

from .hardware import SimADXL345, SimHX711, SimI2C, SimQuadrature
from .sensors import SimulatedSensors


class _SimLoadCell:
    def __init__(self, sensors: SimulatedSensors, index: int) -> None:
        self._sensors = sensors
        self._index = index

    def is_ready(self) -> bool:
        return self._sensors.hx711_ready(self._index)

    def read(self) -> int:
        return self._sensors.hx711_read(self._index)


class _SimAccel:
    def __init__(self, sensors: SimulatedSensors) -> None:
        self.read = sensors.accel_read


class _SimEncoder:
    def __init__(self, sensors: SimulatedSensors, offset: int = 0) -> None:
        self._sensors = sensors
        self.offset = offset  # ticks rolled in earlier sessions: the count is cumulative

    def count(self) -> int:
        return self.offset + self._sensors.encoder_count()


class SimulatedBoard:
    """Board for WalkerFirmware backed by a SimulatedSensors instance."""

    simulated = True

    def __init__(self, sensors: SimulatedSensors, walker_id: str | None = None,
                 storage=None) -> None:
        self.walker_id = walker_id or sensors.truth.walker_id
        self.storage = storage if storage is not None else MemoryStorage()
        self.rebind(sensors)

    def sync(self) -> None:
        """Nothing to deliver between samples: reads go straight to the simulation."""

    def rebind(self, sensors: SimulatedSensors) -> None:
        """Attach to another simulated session (the next subject on the same walker)."""
        offset = self.encoder.count() if hasattr(self, "encoder") else 0
        self.sensors = sensors
        self.load_cells = [_SimLoadCell(sensors, i) for i in range(4)]
        self.accel = _SimAccel(sensors)
        self.encoder = _SimEncoder(sensors, offset)

    def truth_label(self) -> str:
        return self.sensors.truth_label()


class BitLevelBoard:
    """The firmware's own drivers on simulated electronics (see hardware.py)."""

    simulated = True

    def __init__(self, sensors: SimulatedSensors, walker_id: str | None = None,
                 storage=None) -> None:
        self.walker_id = walker_id or sensors.truth.walker_id
        self.storage = storage if storage is not None else MemoryStorage()
        self.sensors = sensors
        self.hx711_chips = [SimHX711(self, i) for i in range(4)]
        self.adxl345 = SimADXL345(self)
        self.i2c = SimI2C({0x53: self.adxl345})
        self.wheel = SimQuadrature()
        self.load_cells = [HX711(c.sck, c.dout_pin) for c in self.hx711_chips]
        self.accel = ADXL345(self.i2c)
        self.encoder = QuadratureEncoder(self.wheel.pin_a, self.wheel.pin_b)
        self._encoder_offset = 0

    def rebind(self, sensors: SimulatedSensors) -> None:
        """The next subject on the same walker: the wheel keeps its position."""
        self._encoder_offset = self.wheel.position
        self.sensors = sensors

    def sync(self) -> None:
        """Deliver the encoder edges up to the simulation's current time."""
        self.wheel.sync(self._encoder_offset + self.sensors.encoder_count())

    def truth_label(self) -> str:
        return self.sensors.truth_label()
