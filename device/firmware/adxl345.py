# ADXL345 3-axis accelerometer over I2C (datasheet rev. G register map).
#
# Wiring (docs/firmware.md): VCC 3V3, GND, SDA/SCL to the board's I2C pins with
# 4.7 kOhm pull-ups, CS high (selects I2C), SDO/ALT ADDRESS low (address 0x53; high
# gives 0x1D). The driver takes a duck-typed machine.I2C (readfrom_mem/writeto_mem).
import struct

ADDRESS = 0x53
ALT_ADDRESS = 0x1D
REG_DEVID = 0x00
REG_BW_RATE = 0x2C
REG_POWER_CTL = 0x2D
REG_DATA_FORMAT = 0x31
REG_DATAX0 = 0x32  # X0 X1 Y0 Y1 Z0 Z1, little-endian int16
DEVID = 0xE5
POWER_CTL_MEASURE = 0x08
DATA_FORMAT_FULL_RES = 0x08
RANGE_BITS = {2: 0, 4: 1, 8: 2, 16: 3}
# BW_RATE rate codes (normal power): output data rate in Hz -> code.
RATE_CODES = {25: 0x08, 50: 0x09, 100: 0x0A, 200: 0x0B, 400: 0x0C, 800: 0x0D}
FULL_RES_COUNTS_PER_G = 256  # 3.9 mg/LSB at every range in full resolution


def counts_per_g(range_g, full_resolution=True):
    """Scale of the data registers: 256 /g in full resolution, else 10 bits over the range."""
    if full_resolution:
        return FULL_RES_COUNTS_PER_G
    return 512 // range_g


class ADXL345:
    """read() -> (x, y, z) raw counts; read_g() in g."""

    def __init__(self, i2c, address=ADDRESS, range_g=16, rate_hz=200, full_resolution=True):
        if range_g not in RANGE_BITS:
            raise ValueError("ADXL345 range must be 2, 4, 8 or 16 g")
        if rate_hz not in RATE_CODES:
            raise ValueError("ADXL345 rate must be one of 25, 50, 100, 200, 400, 800 Hz")
        self.i2c = i2c
        self.address = address
        self.range_g = range_g
        self.rate_hz = rate_hz
        self.full_resolution = full_resolution
        self.counts_per_g = counts_per_g(range_g, full_resolution)
        self._buf = bytearray(6)
        self.setup()

    def _write(self, reg, value):
        self.i2c.writeto_mem(self.address, reg, bytes((value,)))

    def _read(self, reg):
        return self.i2c.readfrom_mem(self.address, reg, 1)[0]

    def setup(self):
        """Check the chip id, then range, resolution, data rate, and start measuring."""
        devid = self._read(REG_DEVID)
        if devid != DEVID:
            raise OSError("no ADXL345 at 0x%02x (DEVID 0x%02x)" % (self.address, devid))
        self._write(REG_POWER_CTL, 0)  # standby while configuring
        fmt = RANGE_BITS[self.range_g] | (DATA_FORMAT_FULL_RES if self.full_resolution else 0)
        self._write(REG_DATA_FORMAT, fmt)
        self._write(REG_BW_RATE, RATE_CODES[self.rate_hz])
        self._write(REG_POWER_CTL, POWER_CTL_MEASURE)

    def read(self):
        """The latest output sample, raw counts (int16 each)."""
        buf = self.i2c.readfrom_mem(self.address, REG_DATAX0, 6)
        return struct.unpack("<hhh", buf)

    def read_g(self):
        x, y, z = self.read()
        s = 1.0 / self.counts_per_g
        return (x * s, y * s, z * s)
