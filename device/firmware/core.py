# The walker firmware's logic: sampling, framing and command handling.
#
# Runs unchanged on MicroPython (main.py feeds it real drivers) and on CPython inside
# the virtual walker (device/sim feeds it simulated hardware), so the bytes a host sees
# from the virtual walker are produced by this code. It does no I/O itself: bytes go
# out through the `write` callable and come in through handle_bytes().
#
# The hardware abstraction it needs (a "board"):
#   board.load_cells: 4 objects with is_ready() -> bool and read() -> int (HX711 counts)
#   board.accel: read() -> (x, y, z) counts
#   board.encoder: count() -> cumulative ticks
#   board.walker_id: str; board.simulated: bool
#   optional board.truth_label() -> str (virtual walker only: the simulated activity)
from device.protocol import wire

FIRMWARE_VERSION = (0, 1, 0)
DEFAULT_RATE_HZ = 50
TARE_CONVERSIONS = 16  # conversions averaged per load cell by a tare
TRUTH_REPEAT_US = 1000000  # re-send the TRUTH label every second


class WalkerFirmware:
    def __init__(self, board, write, rate_hz=DEFAULT_RATE_HZ, accel_range_g=16,
                 accel_counts_per_g=256, encoder_ticks_per_rev=256, hx711_rate_hz=80):
        self.board = board
        self.write = write
        self.rate_hz = rate_hz
        self.accel_range_g = accel_range_g
        self.accel_counts_per_g = accel_counts_per_g
        self.encoder_ticks_per_rev = encoder_ticks_per_rev
        self.hx711_rate_hz = hx711_rate_hz
        self.streaming = False
        self.seq = 0
        self.status = wire.STATUS_SIMULATED if board.simulated else 0
        self._decoder = wire.FrameDecoder(track_sequence=False)
        self._loads = [0, 0, 0, 0]
        self._tare = [0, 0, 0, 0]
        self._tare_sum = None
        self._tare_n = None
        self._truth = None
        self._truth_sent_us = 0
        self._truth_fn = getattr(board, "truth_label", None)

    # ---- output ---------------------------------------------------------------------
    def _send(self, frame_type, t_us, payload):
        self.write(wire.encode_frame(frame_type, self.seq, t_us, payload))
        self.seq = (self.seq + 1) & 0xFFFF

    def log(self, t_us, level, text):
        self._send(wire.LOG, t_us, wire.pack_log(level, text))

    def info_payload(self):
        flags = wire.INFO_FLAG_SIMULATED if self.board.simulated else 0
        if self.streaming:
            flags |= wire.INFO_FLAG_STREAMING
        return wire.pack_info(FIRMWARE_VERSION, self.rate_hz, self.board.walker_id,
                              len(self.board.load_cells), self.hx711_rate_hz,
                              self.accel_range_g, self.accel_counts_per_g,
                              self.encoder_ticks_per_rev, flags)

    @property
    def period_us(self):
        return 1000000 // self.rate_hz

    # ---- commands -------------------------------------------------------------------
    def handle_bytes(self, data, t_us):
        """Feed bytes received from the host; act on every complete command."""
        for frame in self._decoder.feed(data):
            self.handle_command(frame, t_us)

    def handle_command(self, frame, t_us):
        kind = frame.frame_type
        code = 0
        if kind == wire.CMD_HELLO:
            self._send(wire.INFO, t_us, self.info_payload())
        elif kind == wire.CMD_START:
            self.streaming = True
            self._truth = None
        elif kind == wire.CMD_STOP:
            self.streaming = False
        elif kind == wire.CMD_SET_RATE:
            try:
                rate = wire.unpack_set_rate(frame.payload)
            except ValueError:
                rate = 0
            if wire.MIN_RATE_HZ <= rate <= wire.MAX_RATE_HZ:
                self.rate_hz = rate
            else:
                code = wire.NAK_BAD_ARGUMENT
        elif kind == wire.CMD_TARE:
            self._tare_sum = [0, 0, 0, 0]
            self._tare_n = [0, 0, 0, 0]
        else:
            code = wire.NAK_UNKNOWN_COMMAND
        if code:
            self._send(wire.NAK, t_us, wire.pack_ack(kind, frame.seq, code))
        else:
            self._send(wire.ACK, t_us, wire.pack_ack(kind, frame.seq, 0))

    # ---- sampling -------------------------------------------------------------------
    def _update_tare(self, cell, counts, t_us):
        self._tare_sum[cell] += counts
        self._tare_n[cell] += 1
        if min(self._tare_n) >= TARE_CONVERSIONS:
            self._tare = [s // n for s, n in zip(self._tare_sum, self._tare_n)]
            self._tare_sum = None
            self._tare_n = None
            self.status |= wire.STATUS_TARED
            self.log(t_us, wire.LOG_INFO, "tare done")

    def sample(self, t_us):
        """Take one sample at device time t_us: read sensors, emit SAMPLE (and TRUTH)."""
        fresh = 0
        loads = self._loads
        cells = self.board.load_cells
        for i in range(4):
            cell = cells[i]
            if cell.is_ready():
                loads[i] = cell.read()
                fresh |= 1 << i
                if self._tare_n is not None:
                    self._update_tare(i, loads[i], t_us)
        if not self.streaming:
            return
        ax, ay, az = self.board.accel.read()
        ticks = self.board.encoder.count()
        tare = self._tare
        payload = wire.pack_sample((ax, ay, az), (loads[0] - tare[0], loads[1] - tare[1],
                                                   loads[2] - tare[2], loads[3] - tare[3]),
                                   ticks, fresh, self.status)
        self._send(wire.SAMPLE, t_us, payload)
        if self._truth_fn is not None:
            label = self._truth_fn()
            if label != self._truth or t_us - self._truth_sent_us >= TRUTH_REPEAT_US:
                self._truth = label
                self._truth_sent_us = t_us
                self._send(wire.TRUTH, t_us, wire.pack_truth(label))
