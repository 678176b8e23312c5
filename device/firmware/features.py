# The host's features (host/features.py, thesis eqs 6.1-6.3) computed on the device,
# one sample at a time, from the counts the firmware is about to send. Same formulas
# in the same order, so under double precision the values equal the host's bit for
# bit; the constants (calibration, geometry) come with the model file.
from device.firmware.model_format import N_CONST
from device.protocol.wire import MAX_RATE_HZ

try:
    from array import array
except ImportError:  # pragma: no cover
    array = None


# The encoder history is a ring of at most `capacity` samples: enough for the window at
# the highest sample rate, and never more, whatever the window (a bounded buffer). Times
# and ticks are kept modulo 2^30, small integers on every port (no heap per sample);
# differences over a window of at most 10 s are exact.
_MASK = 0x3FFFFFFF
_HALF = 0x20000000


class DeviceFeatures:
    """features(...) -> list of floats in the model's feature order."""

    def __init__(self, feature_set, constants):
        if len(constants) != N_CONST:
            raise ValueError("need %d feature constants" % N_CONST)
        c = constants
        self.feature_set = feature_set
        self.load_offsets = c[0:4]
        self.load_scale = c[4:8]
        self.accel_bias = c[8:11]
        self.accel_scale = c[11:14]
        self.m_per_tick = c[14]
        self.front_hw = c[15]
        self.rear_hw = c[16]
        self.min_total = c[17]
        self.window_us = int(c[18] * 1e6)
        self.capacity = int(c[18] * MAX_RATE_HZ) + 2
        self._t = array("i", range(self.capacity))
        self._ticks = array("i", range(self.capacity))
        self.reset()

    def reset(self):
        """Forget the encoder history (a new session)."""
        self._head = 0  # ring index of the oldest kept sample
        self._n = 0

    def speed(self, t_us, ticks):
        """Encoder speed over the last window: earliest kept sample >= t - window."""
        cap = self.capacity
        t_hist = self._t
        k_hist = self._ticks
        t = t_us & _MASK
        head = self._head
        n = self._n
        if n == cap:  # full (samples faster than the highest rate): drop the oldest
            head = (head + 1) % cap
            n -= 1
        new = (head + n) % cap
        t_hist[new] = t
        k_hist[new] = ticks & _MASK
        n += 1
        while n > 1 and (t - t_hist[head]) & _MASK > self.window_us:
            head = (head + 1) % cap
            n -= 1
        self._head = head
        self._n = n
        dt = ((t - t_hist[head]) & _MASK) * 1e-6
        if dt > 0:
            moved = (ticks - k_hist[head]) & _MASK
            if moved >= _HALF:
                moved -= _MASK + 1
            return moved * self.m_per_tick / dt
        return 0.0

    def features(self, t_us, accel, loads, tared, ticks):
        """accel (3 counts), loads (4 counts as sent), tared: loads are tare-relative."""
        ab = self.accel_bias
        asc = self.accel_scale
        out = [(accel[0] - ab[0]) * asc[0], (accel[1] - ab[1]) * asc[1],
               (accel[2] - ab[2]) * asc[2], self.speed(t_us, ticks)]
        off = self.load_offsets
        sc = self.load_scale
        if tared:
            fr = (loads[0] - 0.0) * sc[0]
            fl = (loads[1] - 0.0) * sc[1]
            rl = (loads[2] - 0.0) * sc[2]
            rr = (loads[3] - 0.0) * sc[3]
        else:
            fr = (loads[0] - off[0]) * sc[0]
            fl = (loads[1] - off[1]) * sc[1]
            rl = (loads[2] - off[2]) * sc[2]
            rr = (loads[3] - off[3]) * sc[3]
        if self.feature_set == "loadcells":
            out.extend((fr, fl, rl, rr))
            return out
        total = fr + fl + rl + rr
        if total >= self.min_total:
            cop_sp = (fl + fr - rl - rr) / total
            cop_fp = (self.front_hw * (fl - fr) + self.rear_hw * (rl - rr)) / total
        else:  # nobody leans on the walker: the COP is undefined, the host uses 0
            cop_sp = 0.0
            cop_fp = 0.0
        out.extend((cop_fp, cop_sp, total))
        return out
