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
#   optional board.mem_free() -> int: free heap bytes (default gc.mem_free on
#     MicroPython; under CPython without it no heap check is made)
#
# Nothing a host sends may reset the walker or leave it unable to run (docs/reliability.md,
# "The walker cannot be bricked"): models are checked in full before they reach flash and
# against the free heap at MODEL_BEGIN; an exception while handling a command is a NAK
# with its reason in a LOG frame; an exception in the on-device recognizer switches it
# off (safe mode, STATUS_RECOGNIZER_FAULT) while samples keep streaming; and a boot
# counter in flash boots without a stored model that two boots did not survive.
import gc

from device.protocol import wire
from device.firmware.features import DeviceFeatures
from device.firmware.hmm_filter import DeviceHMM
from device.firmware.model_format import FLOAT_CODE, MAX_BYTES, unpack_model

FIRMWARE_VERSION = (0, 2, 0)
DEFAULT_RATE_HZ = 50
TARE_CONVERSIONS = 16  # conversions averaged per load cell by a tare
TRUTH_REPEAT_US = 1000000  # re-send the TRUTH label every second
ACTIVITY_REPEAT_US = 1000000  # ACTIVITY: when the class changes, else once a second
MODEL_FILE = "model.wlm"
CALIBRATION_FILE = "calibration.wlc"  # the CALIBRATION payload as received
BOOT_FILE = "boots.wlb"  # one byte: boots with the stored model not yet proven healthy
MAX_FAILED_BOOTS = 2  # after this many, boot without the stored model
HEALTHY_STEPS = 250  # recognizer steps without a fault that prove a model (5 s at 50 Hz)
HEAP_HEADROOM = 8192  # bytes MODEL_BEGIN keeps free beyond the upload and its tables


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
        self.model_skipped = False  # booted without the stored model (INFO flag)
        self._unproven_steps = 0  # steps left before the model in flash counts as healthy
        if self.storage is not None:
            self._load_stored_model()

    def _load_stored_model(self):
        """Run the model in flash, unless MAX_FAILED_BOOTS boots with it never got to
        HEALTHY_STEPS recognizer steps (a reset, a watchdog, a hard fault)."""
        try:
            data = self.storage.read(MODEL_FILE)  # MemoryError too: never a boot loop
            if data is None:
                return
            boots = self.storage.read(BOOT_FILE)
            boots = boots[0] if boots else 0
            if boots >= MAX_FAILED_BOOTS:
                self.model_skipped = True
                self.model_error = ("stored model skipped: %d boots with it failed; "
                                    "upload a model or clear it" % boots)
                return
            self.storage.write(BOOT_FILE, bytes((boots + 1,)))
            self.install_model(data)
            self._unproven_steps = HEALTHY_STEPS
        except Exception as exc:  # a stale or damaged model never stops sampling
            self.model_skipped = True
            self.model_error = "stored model not loaded: %s" % _reason(exc)

    # ---- the on-device recognizer ---------------------------------------------------
    def install_model(self, data, store=False):
        """Parse model bytes and run them from the next sample (ModelError if bad).

        Everything is built before anything is replaced: a model that fails (a bad
        constant, MemoryError, a flash error with store=True) leaves the running model
        and the one in flash as they were."""
        model = unpack_model(data)
        features = DeviceFeatures(model.feature_set, model.constants)
        recognizer = DeviceHMM(model)
        if store:
            self.storage.write(MODEL_FILE, data)
            self.storage.remove(BOOT_FILE)
            self.model_skipped = False
            self.model_error = None
        self.features = features
        self.recognizer = recognizer
        self._activity = -1
        self.status |= wire.STATUS_MODEL_ACTIVE
        self.status &= ~wire.STATUS_RECOGNIZER_FAULT

    def remove_model(self):
        self.recognizer = None
        self.features = None
        self.status &= ~(wire.STATUS_MODEL_ACTIVE | wire.STATUS_RECOGNIZER_FAULT)
        self.model_skipped = False
        self.model_error = None
        if self.storage is not None:
            self.storage.remove(MODEL_FILE)
            self.storage.remove(BOOT_FILE)

    def _safe_mode(self, t_us, exc):
        """The recognizer raised: switch it off, say why, keep sampling."""
        self.recognizer = None
        self.features = None
        self.status &= ~wire.STATUS_MODEL_ACTIVE
        self.status |= wire.STATUS_RECOGNIZER_FAULT
        self.log(t_us, wire.LOG_ERROR, "recognizer disabled (safe mode): " + _reason(exc))

    def _mem_free(self):
        """Free heap bytes after a collection, or None where it cannot be known."""
        probe = getattr(self.board, "mem_free", None) or getattr(gc, "mem_free", None)
        if probe is None:
            return None
        gc.collect()
        return probe()

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
            # The upload buffer, the parsed tables (the file's floats at this port's
            # precision) and headroom must all fit: else MemoryError at COMMIT.
            need = size + size * (4 if FLOAT_CODE == "f" else 8) // 8 + HEAP_HEADROOM
            free = self._mem_free()
            if free is not None and need > free:
                self.log(t_us, wire.LOG_ERROR, "model of %d bytes needs %d bytes of heap, "
                         "%d free" % (size, need, free))
                return wire.NAK_NO_MEMORY
            try:  # mem_free() is a total: a fragmented heap may still not fit it
                self._upload = bytearray(size)
            except MemoryError:
                self._upload = None
                self.log(t_us, wire.LOG_ERROR, "model of %d bytes does not fit the heap "
                         "(%s bytes free, fragmented)" % (size, free))
                return wire.NAK_NO_MEMORY
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
                self.install_model(buf, store=True)
            except Exception as exc:  # never a reset: the previous model keeps running
                buf = None
                self.log(t_us, wire.LOG_ERROR, "model rejected: " + _reason(exc))
                return wire.NAK_BAD_MODEL
            buf = None
            self._unproven_steps = 0  # checked in full just now
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
        if self._unproven_steps:
            self._unproven_steps -= 1
            if not self._unproven_steps:  # the stored model survived: reset the counter
                self.storage.remove(BOOT_FILE)
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
        if self.model_skipped:
            flags |= wire.INFO_FLAG_MODEL_SKIPPED
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
        """Act on one command frame and answer ACK or NAK; never raises for what a
        host sends (an unexpected exception is a NAK with its reason in a LOG)."""
        try:
            code = self._command(frame, t_us)
        except Exception as exc:
            self._upload = None
            self.log(t_us, wire.LOG_ERROR, "command %s failed: %s"
                     % (wire.FRAME_TYPE_NAMES.get(frame.frame_type, frame.frame_type),
                        _reason(exc)))
            code = wire.NAK_BAD_ARGUMENT
        kind = frame.frame_type
        if code:
            self._send(wire.NAK, t_us, wire.pack_ack(kind, frame.seq, code))
        else:
            self._send(wire.ACK, t_us, wire.pack_ack(kind, frame.seq, 0))
            if kind == wire.CMD_CAL_WRITE or kind == wire.CMD_CAL_READ:
                self._send(wire.CALIBRATION, t_us, self.calibration)
        if kind == wire.CMD_HELLO and self.model_error is not None:
            self.log(t_us, wire.LOG_WARNING, self.model_error)

    def _command(self, frame, t_us):
        """The command's effect; returns the NAK code (0: ACK)."""
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
        return code

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
            try:
                self._recognize(t_us, accel, sent, ticks)
            except Exception as exc:
                self._safe_mode(t_us, exc)
        if not self.streaming:
            return
        if self._truth_fn is not None:
            label = self._truth_fn()
            if label != self._truth or t_us - self._truth_sent_us >= TRUTH_REPEAT_US:
                self._truth = label
                self._truth_sent_us = t_us
                self._send(wire.TRUTH, t_us, wire.pack_truth(label))


def _reason(exc):
    """One line naming an exception: 'ModelError: constant ... must ...'."""
    text = str(exc)
    name = type(exc).__name__
    return name + ": " + text if text else name
