"""The firmware's drivers against the simulated electronics (device/sim/hardware.py)."""
import pytest

from device.firmware import adxl345 as adxl
from device.firmware.adxl345 import ADXL345
from device.firmware.encoder import QuadratureEncoder
from device.firmware.hx711 import HX711, to_signed24
from device.sim.hardware import SimADXL345, SimHX711, SimI2C, SimQuadrature


class FakeSensors:
    """Conversions handed out one by one; records the reads."""

    def __init__(self, values=(), accel=(0, 0, 256)):
        self.values = list(values)
        self.reads = 0
        self.accel = accel

    def hx711_ready(self, cell):
        return self.reads < len(self.values)

    def hx711_read(self, cell):
        v = self.values[self.reads]
        self.reads += 1
        return v

    def accel_read(self):
        return self.accel


class Source:
    def __init__(self, sensors):
        self.sensors = sensors


class CountingPin:
    """Wraps the simulated PD_SCK pin and logs every level written."""

    def __init__(self, pin):
        self.pin = pin
        self.levels = []

    def value(self, v=None):
        if v is not None:
            self.levels.append(v)
        return self.pin.value(v)


EXTREMES = [0, 1, -1, 123456, -123456, (1 << 23) - 1, -(1 << 23), 0x2AAAAA, -0x2AAAAA]


def test_to_signed24_brute_force_against_definition():
    for raw in list(range(0, 1 << 24, 4099)) + [0x7FFFFF, 0x800000, 0xFFFFFF]:
        expected = raw if raw < (1 << 23) else raw - (1 << 24)
        assert to_signed24(raw) == expected


def test_hx711_reads_twos_complement_msb_first_with_25_pulses():
    sensors = FakeSensors(EXTREMES)
    chip = SimHX711(Source(sensors), 0)
    sck = CountingPin(chip.sck)
    hx = HX711(sck, chip.dout_pin)
    got = []
    while hx.is_ready():
        sck.levels.clear()
        raw = hx.read_raw()
        assert raw == EXTREMES[len(got)] & 0xFFFFFF  # the 24 bits, MSB first
        got.append(to_signed24(raw))
        assert sck.levels.count(1) == 25 and sck.levels[-1] == 0  # gain 128: 25 pulses
    assert got == EXTREMES
    assert not hx.is_ready()  # DOUT high: no conversion pending
    assert chip.gain == 128


@pytest.mark.parametrize("gain, pulses, expected", [(128, 25, 200000), (64, 27, 100000),
                                                    (32, 26, 0)])
def test_hx711_gain_pulses_select_the_next_conversion(gain, pulses, expected):
    sensors = FakeSensors([200000, 200000, 200000])
    chip = SimHX711(Source(sensors), 0)
    sck = CountingPin(chip.sck)
    hx = HX711(sck, chip.dout_pin)
    hx.set_gain(gain)
    sck.levels.clear()
    first = hx.read()
    assert sck.levels.count(1) == pulses
    assert first == 200000  # this conversion was made at the old gain (A, 128)
    assert hx.is_ready()  # ends the transaction: the chip now knows the pulse count
    assert chip.gain == gain
    assert hx.read() == expected


def test_hx711_rejects_unknown_gain():
    chip = SimHX711(Source(FakeSensors()), 0)
    with pytest.raises(ValueError):
        HX711(chip.sck, chip.dout_pin, gain=100)


def test_adxl345_setup_writes_range_resolution_rate_and_measure():
    dev = SimADXL345(Source(FakeSensors(accel=(10, -20, 256))))
    acc = ADXL345(SimI2C({0x53: dev}), range_g=16, rate_hz=200)
    # standby, full resolution +-16 g, 200 Hz, then measure; in that order
    assert dev.writes == [(adxl.REG_POWER_CTL, 0), (adxl.REG_DATA_FORMAT, 0x0B),
                          (adxl.REG_BW_RATE, 0x0B), (adxl.REG_POWER_CTL, 0x08)]
    assert acc.counts_per_g == 256
    assert acc.read() == (10, -20, 256)
    assert acc.read_g() == pytest.approx((10 / 256, -20 / 256, 1.0))


@pytest.mark.parametrize("range_g, full, counts, expected", [
    (2, False, (256, -256, 4000), (256, -256, 511)),  # 10 bit at 2 g: 256/g, saturates
    (4, False, (256, -256, 100), (128, -128, 50)),  # 128/g
    (16, False, (256, -512, 4095), (32, -64, 511)),  # 32/g
    (2, True, (256, -600, 1000), (256, -512, 511)),  # full res 256/g, saturates at 2 g
])
def test_adxl345_scaling_follows_data_format(range_g, full, counts, expected):
    dev = SimADXL345(Source(FakeSensors(accel=counts)))
    acc = ADXL345(SimI2C({0x53: dev}), range_g=range_g, full_resolution=full)
    assert acc.counts_per_g == (256 if full else 512 // range_g)
    assert acc.read() == expected
    x, y, z = acc.read_g()
    assert x == pytest.approx(expected[0] / acc.counts_per_g)


def test_adxl345_missing_or_wrong_chip_is_an_oserror():
    with pytest.raises(OSError):
        ADXL345(SimI2C({}))
    dev = SimADXL345(Source(FakeSensors()))
    dev.regs[adxl.REG_DEVID] = 0x42
    with pytest.raises(OSError, match="no ADXL345"):
        ADXL345(SimI2C({0x53: dev}))


def test_adxl345_reads_zero_in_standby():
    dev = SimADXL345(Source(FakeSensors(accel=(5, 5, 5))))
    i2c = SimI2C({0x53: dev})
    assert bytes(i2c.readfrom_mem(0x53, adxl.REG_DATAX0, 6)) == bytes(6)


def test_encoder_counts_every_edge_with_direction():
    wheel = SimQuadrature()
    enc = QuadratureEncoder(wheel.pin_a, wheel.pin_b)
    path = [0, 7, 3, 3, -5, 250, -1000, 17]
    for target in path:
        wheel.sync(target)
        assert enc.count() == target
    assert enc.errors == 0
    assert wheel.edges == sum(abs(b - a) for a, b in zip(path, path[1:]))
    rev = QuadratureEncoder(wheel.pin_a, wheel.pin_b, reverse=True)  # re-registers IRQs
    wheel.sync(wheel.position + 9)
    assert rev.count() == -9


def test_encoder_counts_a_missed_edge_as_an_error_not_a_step():
    wheel = SimQuadrature()
    enc = QuadratureEncoder(wheel.pin_a, wheel.pin_b)
    wheel.sync(1)  # A high
    wheel.pin_a.level, wheel.pin_b.level = 0, 1  # both channels changed between IRQs
    enc._edge(wheel.pin_a)
    assert enc.errors == 1 and enc.count() == 1
