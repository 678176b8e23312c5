# HX711 24-bit load-cell ADC, bit-banged over two pins.
#
# Protocol (HX711 datasheet): DOUT goes low when a conversion is ready. Each rising
# edge of PD_SCK shifts out one bit, MSB first (sampled after the edge); 24 pulses
# read the two's-complement value. 1, 2 or 3 extra pulses (25/26/27 in total) select
# the input and gain of the NEXT conversion: channel A gain 128, channel B gain 32,
# channel A gain 64. PD_SCK held high for > 60 us powers the chip down; the read is
# done with interrupts off so a pulse is never stretched that long. The conversion
# rate (10 or 80 Hz) is set by the RATE pin, which the board wires (board_config).
#
# Pins are duck-typed machine.Pin objects: sck.value(0/1), dout.value() -> 0/1.

GAIN_PULSES = {128: 1, 32: 2, 64: 3}  # extra pulses after the 24 data bits
CHANNEL_OF_GAIN = {128: "A", 32: "B", 64: "A"}

try:
    from machine import disable_irq, enable_irq
except ImportError:  # CPython (virtual walker): nothing to mask

    def disable_irq():
        return 0

    def enable_irq(state):
        pass


def to_signed24(raw):
    """24-bit two's complement -> int."""
    raw &= 0xFFFFFF
    return raw - 0x1000000 if raw & 0x800000 else raw


class HX711:
    """One HX711: is_ready() and read() are all the firmware core needs."""

    def __init__(self, sck, dout, gain=128):
        if gain not in GAIN_PULSES:
            raise ValueError("HX711 gain must be 128, 64 or 32")
        self.sck = sck
        self.dout = dout
        self.gain = gain
        sck.value(0)  # low: powered up

    def set_gain(self, gain):
        """Select input and gain; applies from the conversion after the next read."""
        if gain not in GAIN_PULSES:
            raise ValueError("HX711 gain must be 128, 64 or 32")
        self.gain = gain

    def is_ready(self):
        return self.dout.value() == 0

    def read_raw(self):
        """Shift out one conversion (call when is_ready()): the 24-bit raw word."""
        clock = self.sck.value  # bound once: attribute lookups cost on MicroPython
        bit = self.dout.value
        extra = GAIN_PULSES[self.gain]
        raw = 0
        state = disable_irq()
        try:
            for _ in range(24):
                clock(1)
                clock(0)
                raw = (raw << 1) | bit()
            for _ in range(extra):
                clock(1)
                clock(0)
        finally:
            enable_irq(state)
        return raw

    def read(self):
        """The latest conversion in signed counts."""
        return to_signed24(self.read_raw())

    def power_down(self):
        self.sck.value(0)
        self.sck.value(1)  # held high > 60 us: the chip sleeps

    def power_up(self):
        self.sck.value(0)  # resets to channel A, gain 128
        self.gain = 128
