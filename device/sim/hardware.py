"""Simulated electronics under the real firmware drivers (device/firmware/*.py).

The drivers talk to duck-typed ``machine.Pin`` and ``machine.I2C`` objects; these
classes answer like the chips would, driven by a :class:`SimulatedSensors` session:

* :class:`SimHX711`: DOUT low while a conversion is ready; each rising PD_SCK edge
  shifts out one bit of the 24-bit two's-complement word, MSB first; the 25th pulse
  pulls DOUT high; the number of pulses (25/26/27) selects channel and gain of the
  next conversion (A/128, B/32, A/64). Channel A at gain 64 reads half the gain-128
  counts; channel B is not wired on the walker and reads 0. Not modelled: the
  power-down that PD_SCK held high for > 60 us causes (no wall-clock time here).
* :class:`SimADXL345`: the register file at I2C address 0x53 (DEVID, BW_RATE,
  POWER_CTL, DATA_FORMAT, DATAX0..DATAZ1 with auto-increment); data registers read 0
  until POWER_CTL's measure bit is set, and follow DATA_FORMAT's range and
  resolution. The simulated output data rate is 200 Hz whatever BW_RATE says.
* :class:`SimQuadrature`: channels A and B of the wheel encoder; ``sync()`` walks the
  Gray sequence edge by edge to the simulated wheel position, calling the pin IRQ
  handlers the driver registered, as the pins would.

Kept MicroPython-compatible (no __future__ import, no numpy), so the firmware's
drivers can also be exercised on MicroPython itself (tests/device/mpy_scenario.py).
"""
import errno

from device.firmware import adxl345 as adxl

_PULSES_GAIN = {25: 128, 26: 32, 27: 64}
_FULL_RES_LIMIT = 4096  # 13-bit full-resolution output at +-16 g


class _SckPin:
    def __init__(self, chip: "SimHX711") -> None:
        self._chip = chip
        self._level = 0

    def value(self, v=None):
        if v is None:
            return self._level
        v = 1 if v else 0
        if v and not self._level:
            self._chip.rising_edge()
        self._level = v
        return None


class _DoutPin:
    def __init__(self, chip: "SimHX711") -> None:
        self._chip = chip

    def value(self, v=None):
        return self._chip.dout()


class SimHX711:
    """One HX711 whose conversions come from ``source.sensors`` (cell ``index``)."""

    def __init__(self, source, index: int) -> None:
        self._source = source
        self.index = index
        self.sck = _SckPin(self)
        self.dout_pin = _DoutPin(self)
        self.gain = 128  # channel/gain of the conversion the next read returns
        self.pulses = 0  # PD_SCK pulses in the current read
        self._word = 0
        self.reads = 0

    def _finish(self) -> None:
        """The driver stopped clocking: the pulse count sets the next gain."""
        if self.pulses >= 25:
            self.gain = _PULSES_GAIN[min(self.pulses, 27)]
        self.pulses = 0

    def dout(self) -> int:
        p = self.pulses
        if 1 <= p <= 24:
            return (self._word >> (24 - p)) & 1
        if p:
            self._finish()
        return 0 if self._source.sensors.hx711_ready(self.index) else 1

    def rising_edge(self) -> None:
        if self.pulses == 0:
            sensors = self._source.sensors
            if not sensors.hx711_ready(self.index):
                return  # no conversion ready: the chip ignores the clock
            counts = sensors.hx711_read(self.index)
            if self.gain == 64:
                counts >>= 1
            elif self.gain == 32:
                counts = 0
            self._word = counts & 0xFFFFFF
            self.reads += 1
        self.pulses += 1


class SimI2C:
    """machine.I2C look-alike with devices attached by address."""

    def __init__(self, devices: dict) -> None:
        self.devices = devices

    def _dev(self, addr):
        try:
            return self.devices[addr]
        except KeyError:
            raise OSError(errno.ENODEV, "no I2C device at 0x%02x" % addr) from None

    def scan(self) -> list[int]:
        return sorted(self.devices)

    def readfrom_mem(self, addr, reg, n):
        return self._dev(addr).read(reg, n)

    def writeto_mem(self, addr, reg, buf):
        self._dev(addr).write(reg, bytes(buf))


class SimADXL345:
    """The ADXL345 register file; samples from ``source.sensors.accel_read()``."""

    def __init__(self, source) -> None:
        self._source = source
        self.regs = bytearray(0x40)
        self.regs[adxl.REG_DEVID] = adxl.DEVID
        self.regs[adxl.REG_BW_RATE] = 0x0A  # power-on defaults: 100 Hz, 10 bit, +-2 g
        self.writes: list[tuple[int, int]] = []

    def write(self, reg: int, data: bytes) -> None:
        for i, b in enumerate(data):
            r = reg + i
            if r in (adxl.REG_BW_RATE, adxl.REG_POWER_CTL, adxl.REG_DATA_FORMAT):
                self.regs[r] = b
                self.writes.append((r, b))

    def _sample(self) -> tuple[int, int, int]:
        if not self.regs[adxl.REG_POWER_CTL] & adxl.POWER_CTL_MEASURE:
            return (0, 0, 0)
        fmt = self.regs[adxl.REG_DATA_FORMAT]
        range_g = 2 << (fmt & 3)
        full = bool(fmt & adxl.DATA_FORMAT_FULL_RES)
        per_g = adxl.counts_per_g(range_g, full)
        limit = range_g * per_g  # saturation of this range and resolution
        out = []
        for c in self._source.sensors.accel_read():  # counts at 256/g (full res, 16 g)
            v = c if per_g == adxl.FULL_RES_COUNTS_PER_G else (c * per_g) // 256
            out.append(max(-limit, min(limit - 1, v)))
        return tuple(out)

    def read(self, reg: int, n: int) -> bytes:
        if reg <= adxl.REG_DATAX0 + 5 and reg + n > adxl.REG_DATAX0:
            x, y, z = self._sample()
            data = (x & 0xFFFF).to_bytes(2, "little") + (y & 0xFFFF).to_bytes(2, "little") \
                + (z & 0xFFFF).to_bytes(2, "little")
            self.regs[adxl.REG_DATAX0:adxl.REG_DATAX0 + 6] = data
        return bytes(self.regs[reg:reg + n])


class _EncoderPin:
    IRQ_RISING = 8  # the rp2 port's values (esp32: 1, 2); drivers must not assume
    IRQ_FALLING = 4

    def __init__(self) -> None:
        self.level = 0
        self.handler = None
        self.trigger = 0

    def value(self, v=None):
        return self.level

    def irq(self, handler=None, trigger=3, **_):
        self.handler = handler
        self.trigger = trigger

    def _set(self, level: int) -> None:
        edge = self.IRQ_RISING if level else self.IRQ_FALLING
        self.level = level
        if self.handler is not None and self.trigger & edge:
            self.handler(self)


# Channel levels (A, B) at position p mod 4; forward (A leads B): 00 10 11 01.
_GRAY = ((0, 0), (1, 0), (1, 1), (0, 1))


class SimQuadrature:
    """Encoder channels A and B at a signed edge position."""

    def __init__(self) -> None:
        self.pin_a = _EncoderPin()
        self.pin_b = _EncoderPin()
        self.position = 0
        self.edges = 0

    def sync(self, target: int) -> None:
        """Move the wheel to `target` edges, one edge (one IRQ) at a time."""
        step = 1 if target > self.position else -1
        while self.position != target:
            self.position += step
            a, b = _GRAY[self.position & 3]
            self.edges += 1
            if a != self.pin_a.level:
                self.pin_a._set(a)
            else:
                self.pin_b._set(b)
