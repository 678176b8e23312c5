"""The serial link: one reader thread owns the port, decodes, and hands out batches.

The thread never blocks on a consumer: every consumer (recorder, live pipeline, UI)
registers a sink whose put() is non-blocking and counts its own drops. On unplug
(SerialException/OSError) the port is closed, polled for, reopened, and the
configuration (hello, rate, start) is sent again. The walker's identity and
calibration arrive in one INFO frame, the answer to HELLO; a corrupted INFO would leave
a recording without them, so HELLO is repeated every INFO_RETRY_S until an INFO
arrives after each (re)connect. `bytes_received` and `silent_s` (listening time before
the first byte, counted in read timeouts) tell a silent port from a slow walker. A
watchdog notices when no frame has arrived for STALL_TIMEOUT_S while streaming. Device
timestamps are the time base; host arrival time is kept beside them.
"""
from __future__ import annotations

import os
import queue
import threading
import time
from dataclasses import dataclass, field

import serial

from device.protocol import wire
from host.errors import UserError
from host.samples import SampleBlock, StreamDecoder

STALL_TIMEOUT_S = 2.0
# Polling for a replugged port is cheap (opening a missing device fails at once), and
# every poll interval is data lost after the walker is back.
REOPEN_INTERVAL_S = 0.02
INFO_RETRY_S = 0.2
READ_TIMEOUT_S = 0.02
# How long a port may stay silent (not one byte) before `walkerlab record` gives up on
# it. `silent_s` counts listening in read timeouts, so a busy machine that leaves the
# reader thread waiting does not use it up; a walker still booting answers in 1-3 s.
ANSWER_TIMEOUT_S = 10.0


@dataclass
class LinkEvent:
    host_time: float
    kind: str  # connected, disconnected, reconnected, stalled, resumed, nak, error
    detail: str = ""
    value: int = 0


@dataclass
class LinkBatch:
    """What one read from the port produced."""

    host_time: float
    raw: bytes
    block: SampleBlock
    others: list  # (unwrapped device t_us, Frame) for non-SAMPLE frames
    events: list[LinkEvent] = field(default_factory=list)


class QueueSink:
    """A bounded queue of LinkBatch for one consumer; counts what it had to drop."""

    def __init__(self, maxsize: int = 1024) -> None:
        self.queue: queue.Queue = queue.Queue(maxsize)
        self.dropped = 0

    def put(self, batch: LinkBatch) -> None:
        try:
            self.queue.put_nowait(batch)
        except queue.Full:
            self.dropped += 1

    def drain(self, max_items: int | None = None) -> list[LinkBatch]:
        out = []
        while max_items is None or len(out) < max_items:
            try:
                out.append(self.queue.get_nowait())
            except queue.Empty:
                break
        return out


def check_port(port: str) -> None:
    """Fail early, with a clear message, for a port that does not exist."""
    if "://" in port:
        return
    if not os.path.exists(port):
        raise UserError("serial port %s does not exist (is the walker plugged in? "
                        "`walkerlab ports` lists ports)" % port)


def port_problem(exc: BaseException) -> str:
    """pyserial's reason a port did not open, in the user's words."""
    import errno

    text = str(exc)
    if "exclusively lock" in text or getattr(exc, "errno", None) in (errno.EAGAIN,
                                                                     errno.EBUSY):
        return "it is in use by another program (another walkerlab record or monitor?)"
    if "Inappropriate ioctl" in text or getattr(exc, "errno", None) == errno.ENOTTY:
        return "not a serial port"
    if getattr(exc, "errno", None) == errno.EACCES or "Permission denied" in text:
        return "permission denied (is your user in the dialout group?)"
    return text


class SerialLink:
    """Owns a serial port in a reader thread; see the module docstring."""

    def __init__(self, port: str, rate_hz: int | None = None, baudrate: int = 921600,
                 open_port=None) -> None:
        self.port_name = port
        self.rate_hz = rate_hz
        self.baudrate = baudrate
        self._open_port = open_port or self._default_open
        self._sinks: list = []
        self._port = None
        self._thread: threading.Thread | None = None
        self._running = threading.Event()
        self._write_lock = threading.Lock()
        self._cmd_seq = 0
        self.decoder = StreamDecoder()
        self.info: dict | None = None  # INFO, with "calibration" when the walker holds one
        self._info_waiting: dict | None = None  # an INFO whose CALIBRATION has not come
        self.walker_calibration: dict | None = None  # last CALIBRATION frame, decoded
        self.info_requests = 0  # HELLOs sent (the first per connection included)
        self._info_pending = False  # no INFO yet since the last (re)connect
        self._hello_time = 0.0
        self.connected = False
        self.reconnects = 0
        self.frames = 0
        self.samples = 0
        self.bytes_received = 0
        # Seconds the reader has listened without a byte: counted in read timeouts, so
        # time in which a busy machine did not run the reader thread does not count.
        self.silent_s = 0.0
        self.stalls = 0
        self.naks = 0
        self.last_frame_host_time: float | None = None
        self._stalled = False
        self._pending_events: list[LinkEvent] = []

    # ---- consumers ------------------------------------------------------------------
    def add_sink(self, sink) -> None:
        """sink.put(LinkBatch) is called from the reader thread and must not block."""
        self._sinks.append(sink)

    def health(self) -> dict:
        c = self.decoder.counters()
        age = (time.time() - self.last_frame_host_time
               if self.last_frame_host_time is not None else None)
        return {
            "connected": self.connected, "frames": self.frames, "samples": self.samples,
            "crc_errors": c["crc_errors"], "resyncs": c["resyncs"],
            "seq_gaps": c["seq_gaps"], "frames_lost": c["frames_lost"],
            "version_errors": c["version_errors"],
            "queue_drops": sum(getattr(s, "dropped", 0) for s in self._sinks),
            "reconnects": self.reconnects, "stalls": self.stalls, "naks": self.naks,
            "info_requests": self.info_requests, "bad_lengths": c["bad_lengths"],
            "bytes_received": self.bytes_received,
            "last_frame_age_s": age,
        }

    # ---- port handling --------------------------------------------------------------
    def _default_open(self):
        if "://" in self.port_name:
            return serial.serial_for_url(self.port_name, baudrate=self.baudrate,
                                         timeout=READ_TIMEOUT_S)
        return serial.Serial(self.port_name, baudrate=self.baudrate,
                             timeout=READ_TIMEOUT_S, exclusive=True)

    def send_command(self, frame_type: int, payload: bytes = b"") -> int:
        """Send one command; return its sequence number (the walker's ACK carries it)."""
        with self._write_lock:
            port = self._port
            seq = self._cmd_seq
            self._cmd_seq = (seq + 1) & 0xFFFF
            if port is None:
                return seq
            try:
                port.write(wire.encode_frame(frame_type, seq, 0, payload))
            except (serial.SerialException, OSError):
                pass  # the reader thread notices the unplug and reconnects
            return seq

    def _request_info(self) -> None:
        self._hello_time = time.monotonic()
        self.info_requests += 1
        self.send_command(wire.CMD_HELLO)

    def _configure(self) -> None:
        self._info_pending = True
        self._request_info()
        if self.rate_hz:
            self.send_command(wire.CMD_SET_RATE, wire.pack_set_rate(self.rate_hz))
        self.send_command(wire.CMD_START)

    def _event(self, kind: str, detail: str = "", value: int = 0) -> None:
        self._pending_events.append(LinkEvent(time.time(), kind, detail, value))

    def open(self) -> None:
        """Open the port and start the reader thread; errors here are the user's."""
        check_port(self.port_name)
        try:
            self._port = self._open_port()
        except (serial.SerialException, OSError) as exc:
            raise UserError("cannot open %s: %s" % (self.port_name, port_problem(exc))) \
                from None
        self._port.reset_input_buffer()
        self.connected = True
        self._event("connected", self.port_name)
        self._configure()
        self._running.set()
        self._thread = threading.Thread(target=self._run, name="walkerlab-serial",
                                        daemon=True)
        self._thread.start()

    def close(self, stop_device: bool = True) -> None:
        if stop_device and self._port is not None:
            self.send_command(wire.CMD_STOP)
        self._running.clear()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        with self._write_lock:
            if self._port is not None:
                try:
                    self._port.close()
                except (serial.SerialException, OSError):
                    pass
            self._port = None
        self.connected = False

    def __enter__(self) -> "SerialLink":
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- the reader thread ----------------------------------------------------------
    def _lost(self, why: str) -> None:
        with self._write_lock:
            try:
                self._port.close()
            except (serial.SerialException, OSError):
                pass
            self._port = None
        self.connected = False
        self._event("disconnected", why)
        self._publish(b"")

    def _try_reopen(self) -> None:
        try:
            port = self._open_port()
        except (serial.SerialException, OSError):
            return
        with self._write_lock:
            self._port = port
        self.connected = True
        self.reconnects += 1
        self._event("reconnected", self.port_name, self.reconnects)
        self._configure()

    def _publish(self, raw: bytes) -> None:
        now = time.time()
        block, others = self.decoder.feed(raw, now) if raw else (SampleBlock.empty(), [])
        n_frames = len(block) + len(others)
        if n_frames:
            self.frames += n_frames
            self.samples += len(block)
            self.last_frame_host_time = now
            if self._stalled:
                self._stalled = False
                self._event("resumed")
        for _, frame in others:
            if frame.frame_type == wire.INFO:
                try:
                    info = wire.unpack_info(frame.payload)
                except ValueError:
                    continue
                if info["calibrated"]:  # complete once its CALIBRATION frame is here
                    self._info_waiting = info
                else:
                    self.info = info
                    self._info_pending = False
            elif frame.frame_type == wire.CALIBRATION:
                try:
                    cal = wire.unpack_calibration(frame.payload)
                except ValueError as exc:
                    self._event("error", "walker calibration unreadable: %s" % exc)
                    continue
                self.walker_calibration = cal
                if self._info_waiting is not None:
                    self.info = dict(self._info_waiting, calibration=cal)
                    self._info_waiting = None
                    self._info_pending = False
                elif self.info is not None:
                    self.info = dict(self.info, calibration=cal)
            elif frame.frame_type == wire.NAK:
                self.naks += 1
                self._event("nak", wire.FRAME_TYPE_NAMES.get(frame.payload[0], "?")
                            if frame.payload else "?")
        events, self._pending_events = self._pending_events, []
        if not (raw or events):
            return
        batch = LinkBatch(now, raw, block, others, events)
        for sink in self._sinks:
            sink.put(batch)

    def _run(self) -> None:
        self.last_frame_host_time = time.time()
        while self._running.is_set():
            if self._port is None:
                time.sleep(REOPEN_INTERVAL_S)
                self._try_reopen()
                if self._pending_events:
                    self._publish(b"")
                continue
            try:
                data = self._port.read(max(1, self._port.in_waiting))
            except (serial.SerialException, OSError, TypeError, AttributeError) as exc:
                self._lost(str(exc) or type(exc).__name__)
                continue
            if self._info_pending and time.monotonic() - self._hello_time > INFO_RETRY_S:
                self._request_info()  # the INFO frame was lost or corrupted: ask again
            if data:
                self.bytes_received += len(data)
                self._publish(data)
                continue
            if self.bytes_received == 0:
                self.silent_s += READ_TIMEOUT_S
            if (not self._stalled and self.last_frame_host_time is not None
                    and time.time() - self.last_frame_host_time > STALL_TIMEOUT_S):
                self._stalled = True
                self.stalls += 1
                self._event("stalled", "no frames for %.0f s" % STALL_TIMEOUT_S)
                self._publish(b"")
                self._configure()  # a stalled walker may have rebooted: say hello again
            elif self._pending_events:
                self._publish(b"")
