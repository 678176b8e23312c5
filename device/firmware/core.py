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
#   optional board.storage: read(name)/write(name, data)/remove(name) (storage.py),
#     where the calibration (CALIBRATION_FILE) and an uploaded model are kept; without
#     it neither can be stored
#   optional board.truth_label() -> str (virtual walker only: the simulated activity)
from device.protocol import wire
from device.firmware.features import DeviceFeatures
from device.firmware.hmm_filter import DeviceHMM
from device.firmware.model_format import MAX_BYTES, ModelError, unpack_model

FIRMWARE_VERSION = (0, 1, 0)
DEFAULT_RATE_HZ = 50
TARE_CONVERSIONS = 16  # conversions averaged per load cell by a tare
TRUTH_REPEAT_US = 1000000  # re-send the TRUTH label every second
ACTIVITY_REPEAT_US = 1000000  # ACTIVITY: when the class changes, else once a second
MODEL_FILE = "model.wlm"
CALIBRATION_FILE = "calibration.wlc"  # the CALIBRATION payload as received


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
        self._last_conversion = [0, 0, 0, 0]
        self._stall_us = 4 * 1000000 // hx711_rate_hz  # four conversion periods
        self.storage = getattr(board, "storage", None)
        self.recognizer = None
        self.features = None
        self._activity = -1
        self._activity_sent_us = 0
        self._upload = None
        self._upload_crc = 0
        self._upload_n = 0
        self.model_error = None
        self.calibration = None  # the stored CALIBRATION payload (bytes), if any
        if self.storage is not None:
            data = self.storage.read(CALIBRATION_FILE)
            if data is not None:
                try:
                    wire.unpack_calibration(data)
                    self.calibration = bytes(data)
                except ValueError:
                    pass  # a damaged file: the walker reports no calibration
        if self.storage is not None:
            data = self.storage.read(MODEL_FILE)
            if data is not None:
                try:
                    self.install_model(data)
                except (ModelError, ValueError) as exc:
                    self.model_error = str(exc)  # a stale model never stops sampling

    # ---- the on-device recognizer ---------------------------------------------------
    def install_model(self, data):
        """Parse model bytes and run them from the next sample (ModelError if bad)."""
        model = unpack_model(data)
        self.features = DeviceFeatures(model.feature_set, model.constants)
        self.recognizer = DeviceHMM(model)
        self._activity = -1
        self.status |= wire.STATUS_MODEL_ACTIVE

    def remove_model(self):
        self.recognizer = None
        self.features = None
        self.status &= ~wire.STATUS_MODEL_ACTIVE
        if self.storage is not None:
            self.storage.remove(MODEL_FILE)

    def _model_command(self, kind, payload, t_us):
        """MODEL_BEGIN/CHUNK/COMMIT/CLEAR; returns the NAK code (0: ACK)."""
        if self.storage is None:
            return wire.NAK_UNSUPPORTED
        if kind == wire.CMD_MODEL_BEGIN:
            try:
                size, crc = wire.unpack_model_begin(payload)
            except ValueError:
                return wire.NAK_BAD_ARGUMENT
            if not 0 < size <= MAX_BYTES:
                return wire.NAK_BAD_ARGUMENT
            self._upload = None
            try:
                self._upload = bytearray(size)
            except MemoryError:
                return wire.NAK_BUSY
            self._upload_crc = crc
            self._upload_n = 0
            return 0
        if kind == wire.CMD_MODEL_CHUNK:
            buf = self._upload
            try:
                offset, data = wire.unpack_model_chunk(payload)
            except ValueError:
                return wire.NAK_BAD_ARGUMENT
            # A chunk may repeat (its ACK was lost) but never leave a hole.
            if buf is None or offset > self._upload_n or offset + len(data) > len(buf):
                return wire.NAK_BAD_ARGUMENT
            buf[offset:offset + len(data)] = data
            if offset + len(data) > self._upload_n:
                self._upload_n = offset + len(data)
            return 0
        if kind == wire.CMD_MODEL_COMMIT:
            buf = self._upload
            if buf is None or self._upload_n != len(buf):
                return wire.NAK_BAD_ARGUMENT
            self._upload = None
            if wire.crc16(buf) != self._upload_crc:
                self.log(t_us, wire.LOG_ERROR, "model upload: CRC mismatch")
                return wire.NAK_BAD_MODEL
            try:
                self.install_model(buf)
            except (ModelError, ValueError) as exc:
                self.log(t_us, wire.LOG_ERROR, "model rejected: %s" % exc)
                return wire.NAK_BAD_MODEL
            self.storage.write(MODEL_FILE, buf)
            m = self.recognizer.model
            self.log(t_us, wire.LOG_INFO, "model loaded: %d classes, %s features, %d bytes"
                     % (m.n_classes, m.feature_set, m.table_bytes()))
            return 0
        self._upload = None  # CMD_MODEL_CLEAR
        self.remove_model()
        return 0

    def _recognize(self, t_us, accel, loads, ticks):
        """Step the on-device HMM on this sample; ACTIVITY frame when due."""
        feats = self.features.features(t_us, accel, loads,
                                       self.status & wire.STATUS_TARED, ticks)
        rec = self.recognizer
        rec.step(feats)
        if not self.streaming:
            return
        index, confidence = rec.best()
        if index != self._activity or t_us - self._activity_sent_us >= ACTIVITY_REPEAT_US:
            self._activity = index
            self._activity_sent_us = t_us
            self._send(wire.ACTIVITY, t_us, wire.pack_activity(
                index, confidence, rec.model.classes[index]))

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
        if self.calibration is not None:
            flags |= wire.INFO_FLAG_CALIBRATED
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
            if self.calibration is not None:  # the walker's identity includes it
                self._send(wire.CALIBRATION, t_us, self.calibration)
        elif kind == wire.CMD_START:
            self.streaming = True
            self._truth = None
            if self.recognizer is not None:  # a session: filter the host's samples
                self.recognizer.reset()
                self.features.reset()
                self._activity = -1
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
        elif wire.CMD_MODEL_BEGIN <= kind <= wire.CMD_MODEL_CLEAR:
            code = self._model_command(kind, frame.payload, t_us)
        elif kind == wire.CMD_CAL_WRITE:
            code = self._store_calibration(frame.payload, t_us)
        elif kind == wire.CMD_CAL_READ:
            code = 0 if self.calibration is not None else wire.NAK_NO_CALIBRATION
        else:
            code = wire.NAK_UNKNOWN_COMMAND
        if code:
            self._send(wire.NAK, t_us, wire.pack_ack(kind, frame.seq, code))
        else:
            self._send(wire.ACK, t_us, wire.pack_ack(kind, frame.seq, 0))
            if kind == wire.CMD_CAL_WRITE or kind == wire.CMD_CAL_READ:
                self._send(wire.CALIBRATION, t_us, self.calibration)

    def _store_calibration(self, payload, t_us):
        """CAL_WRITE: check the payload, keep it in flash; returns the NAK code (0: ACK)."""
        if self.storage is None:
            return wire.NAK_UNSUPPORTED
        try:
            wire.unpack_calibration(payload)
        except ValueError as exc:
            self.log(t_us, wire.LOG_ERROR, "calibration rejected: %s" % exc)
            return wire.NAK_BAD_ARGUMENT
        self.storage.write(CALIBRATION_FILE, payload)
        self.calibration = bytes(payload)
        return 0

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
        last = self._last_conversion
        stale = False
        for i in range(4):
            cell = cells[i]
            if cell.is_ready():
                loads[i] = cell.read()
                fresh |= 1 << i
                last[i] = t_us
                if self._tare_n is not None:
                    self._update_tare(i, loads[i], t_us)
            elif t_us - last[i] > self._stall_us + self.period_us:
                stale = True  # several conversions missed: a cell stopped converting
        if stale:
            self.status |= wire.STATUS_LOADCELL_FAULT
        else:
            self.status &= ~wire.STATUS_LOADCELL_FAULT
        if not self.streaming and self.recognizer is None:
            return
        try:
            accel = self.board.accel.read()
            self.status &= ~wire.STATUS_ACCEL_FAULT
        except OSError:  # the I2C device did not answer
            accel = (0, 0, 0)
            self.status |= wire.STATUS_ACCEL_FAULT
        ticks = self.board.encoder.count()
        tare = self._tare
        sent = (loads[0] - tare[0], loads[1] - tare[1], loads[2] - tare[2], loads[3] - tare[3])
        if self.streaming:
            self._send(wire.SAMPLE, t_us, wire.pack_sample(accel, sent, ticks, fresh,
                                                           self.status))
        if self.recognizer is not None:
            self._recognize(t_us, accel, sent, ticks)
        if not self.streaming:
            return
        if self._truth_fn is not None:
            label = self._truth_fn()
            if label != self._truth or t_us - self._truth_sent_us >= TRUTH_REPEAT_US:
                self._truth = label
                self._truth_sent_us = t_us
                self._send(wire.TRUTH, t_us, wire.pack_truth(label))
