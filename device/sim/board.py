"""The simulated board: SimulatedSensors seen through the firmware's hardware interface.

device/firmware/core.py talks to `board.load_cells[i].is_ready()/read()`,
`board.accel.read()` and `board.encoder.count()`; this adapter answers from the
physical simulation, so the real firmware logic runs unchanged in the virtual walker.
"""
from __future__ import annotations

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

    def __init__(self, sensors: SimulatedSensors, walker_id: str | None = None) -> None:
        self.walker_id = walker_id or sensors.truth.walker_id
        self.rebind(sensors)

    def rebind(self, sensors: SimulatedSensors) -> None:
        """Attach to another simulated session (the next subject on the same walker)."""
        offset = self.encoder.count() if hasattr(self, "encoder") else 0
        self.sensors = sensors
        self.load_cells = [_SimLoadCell(sensors, i) for i in range(4)]
        self.accel = _SimAccel(sensors)
        self.encoder = _SimEncoder(sensors, offset)

    def truth_label(self) -> str:
        return self.sensors.truth_label()
