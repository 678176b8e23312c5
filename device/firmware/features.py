# The host's features (host/features.py, thesis eqs 6.1-6.3) computed on the device,
# one sample at a time, from the counts the firmware is about to send. Same formulas
# in the same order, so under double precision the values equal the host's bit for
# bit; the constants (calibration, geometry) come with the model file.
from device.firmware.model_format import N_CONST


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
        self.reset()

    def reset(self):
        """Forget the encoder history (a new session)."""
        self._t = []
        self._ticks = []
        self._head = 0

    def speed(self, t_us, ticks):
        """Encoder speed over the last window: earliest kept sample >= t - window."""
        t_hist = self._t
        k_hist = self._ticks
        t_hist.append(t_us)
        k_hist.append(ticks)
        limit = t_us - self.window_us
        head = self._head
        while t_hist[head] < limit:
            head += 1
        if head > 64:  # compact now and then rather than on every sample
            del t_hist[:head]
            del k_hist[:head]
            head = 0
        self._head = head
        dt = (t_us - t_hist[head]) * 1e-6
        if dt > 0:
            return (ticks - k_hist[head]) * self.m_per_tick / dt
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
