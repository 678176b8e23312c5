# Quadrature wheel encoder, decoded in pin interrupts (x4: every edge of A and B).
#
# Channels A and B are 90 degrees apart; on each edge the previous and the new
# (A, B) state give +1, -1, or 0 (an impossible double step, counted in `errors`).
# Pins are duck-typed machine.Pin objects with value() and irq(handler, trigger).
# On the RP2040 the same decoding can run in a PIO state machine; at walking speed
# (~400 edges/s at 1 m/s with a 256-line wheel) pin IRQs are ample.

# _STEP[(old_state << 2) | new_state], state = (A << 1) | B. Forward (A leads B)
# runs AB = 00 10 11 01 00, i.e. states 0 2 3 1 0.
_STEP = (0, -1, 1, 0,
         1, 0, 0, -1,
         -1, 0, 0, 1,
         0, 1, -1, 0)


class QuadratureEncoder:
    """count() -> signed cumulative ticks (edges); forward is A leading B."""

    def __init__(self, pin_a, pin_b, reverse=False):
        self.pin_a = pin_a
        self.pin_b = pin_b
        self._sign = -1 if reverse else 1
        self._count = 0
        self.errors = 0
        self._state = (pin_a.value() << 1) | pin_b.value()
        # The edge flags differ between ports (rp2: 8 | 4, esp32: 1 | 2): ask the pin.
        trigger = pin_a.IRQ_RISING | pin_a.IRQ_FALLING
        pin_a.irq(self._edge, trigger)
        pin_b.irq(self._edge, trigger)

    def _edge(self, pin):
        new = (self.pin_a.value() << 1) | self.pin_b.value()
        idx = (self._state << 2) | new
        self._state = new
        step = _STEP[idx]
        if step:
            self._count += step
        elif (idx >> 2) != new:
            self.errors += 1  # both channels changed between two interrupts

    def count(self):
        return self._sign * self._count

    def reset(self, value=0):
        self._count = self._sign * value
