"""The virtual walker: a simulated person and walker running the real firmware logic.

`VirtualWalker` turns simulated time into wire bytes (offline, as fast as possible);
`PtyServer` serves it in real time on a pseudo-terminal that host code opens with
pyserial exactly like a USB walker, with optional fault injection.

The walker is battery powered: unplugging the USB cable (a simulated disconnect)
drops the link but not the device, so its clock and sequence numbers run on and the
host sees the frames it missed as a sequence gap.
"""
from __future__ import annotations

import fcntl
import os
import select
import struct
import termios
import tempfile
import time
import tty
from dataclasses import dataclass

import numpy as np

from device.firmware.core import DEFAULT_RATE_HZ, WalkerFirmware
from device.protocol import wire

from .board import BitLevelBoard, SimulatedBoard
from .sensors import SimulatedSensors, WalkerHardwareTruth


BOARDS = {"bits": BitLevelBoard, "fast": SimulatedBoard}


class VirtualWalker:
    """Simulated sensors + a simulated board + WalkerFirmware, driven by device time.

    hardware="bits" (default) runs the firmware's drivers on simulated pins and I2C
    registers; "fast" reads the simulation directly (same bytes, for bulk offline
    simulation). storage: where an uploaded model is kept (default: in memory; a
    device.firmware.storage.FileStorage keeps it across runs like flash).
    """

    def __init__(self, course: str = "free", seed: int = 0, rate_hz: int = DEFAULT_RATE_HZ,
                 label_jitter_s: float = 0.0, duration_s: float | None = None,
                 truth: WalkerHardwareTruth | None = None, repeat: bool = False,
                 sync_taps_s=(), hardware: str = "bits", storage=None,
                 bench=None, factory_flash: bool = False) -> None:
        if hardware not in BOARDS:
            raise ValueError("hardware must be one of %s, got %r" % (", ".join(BOARDS),
                                                                   hardware))
        self.course = course
        self.seed = seed
        self.repeat = repeat
        self.subjects_done = 0
        self._session_kwargs = dict(course=course, truth=truth,
                                    label_jitter_s=label_jitter_s, duration_s=duration_s,
                                    sync_taps_s=sync_taps_s)
        if bench is not None:
            from .bench import BenchSensors
            self.sensors = BenchSensors(truth, bench, seed)
        else:
            self.sensors = SimulatedSensors(seed=seed, **self._session_kwargs)
        if factory_flash:
            from device.firmware.core import CALIBRATION_FILE
            from device.firmware.storage import MemoryStorage

            from .factory_calibration import factory_calibration_payload
            storage = storage if storage is not None else MemoryStorage()
            if storage.read(CALIBRATION_FILE) is None:
                storage.write(CALIBRATION_FILE,
                              factory_calibration_payload(self.sensors.truth))
        self.board = BOARDS[hardware](self.sensors, storage=storage)
        self._out = bytearray()
        self.firmware = WalkerFirmware(self.board, self._out.extend, rate_hz=rate_hz)
        self.t_us = 0
        self._next_sample_us = 0
        self._session_start_us = 0

    def _next_subject(self, t_us: int) -> None:
        """A finished course starts again with the next subject (repeat=True)."""
        self.subjects_done += 1
        truth = self.sensors.truth  # same walker, same hardware
        kwargs = dict(self._session_kwargs, truth=truth)
        self.sensors = SimulatedSensors(seed=self.seed + self.subjects_done, **kwargs)
        self.board.rebind(self.sensors)
        self._session_start_us = t_us

    @property
    def finished(self) -> bool:
        """The simulated course is over (never when repeating or free living)."""
        return not self.repeat and self.sensors.finished

    @property
    def next_sample_us(self) -> int:
        """Device time of the next sample the firmware will take."""
        return self._next_sample_us

    def receive(self, data: bytes) -> None:
        """Bytes from the host (commands), handled at the current device time."""
        self.firmware.handle_bytes(data, self.t_us)

    def advance(self, t_us: int) -> bytes:
        """Run the firmware up to device time t_us; return the bytes it sent."""
        firmware = self.firmware
        sensors = self.sensors
        while self._next_sample_us <= t_us:
            t = self._next_sample_us
            if sensors.finished:
                if not self.repeat:
                    break
                self._next_subject(t)
                sensors = self.sensors
            sensors.advance_to((t - self._session_start_us) * 1e-6)
            self.board.sync()
            firmware.sample(t)
            self._next_sample_us = t + firmware.period_us
        self.t_us = t_us
        out = bytes(self._out)
        self._out.clear()
        return out

    def command(self, frame_type: int, payload: bytes = b"", seq: int = 0) -> None:
        """Send one host command to the firmware (used by offline sessions and tests)."""
        self.receive(wire.encode_frame(frame_type, seq, 0, payload))


def simulate_session_bytes(course: str, seed: int, rate_hz: int = DEFAULT_RATE_HZ,
                           duration_s: float | None = None, label_jitter_s: float = 0.0,
                           chunk_s: float = 1.0, sync_taps_s=(), hardware: str = "fast",
                           factory_flash: bool = False):
    """Yield (device_time_s, bytes) chunks of a whole simulated session, offline.

    sync_taps_s: session times (s) of knocks on the frame (device.sim.sensors.tap_pulse).

    The host's commands are the ones a recorder sends (hello, set rate, start), so
    the byte stream is exactly what a recording made over the serial link would hold.
    hardware: the fast board by default, the same bytes as the bit-level one several
    times quicker (docs/firmware.md, "Simulation speed"). factory_flash: the walker
    reports its factory calibration after INFO, like a served virtual walker.
    """
    walker = VirtualWalker(course, seed, rate_hz, label_jitter_s=label_jitter_s,
                           duration_s=duration_s, sync_taps_s=sync_taps_s,
                           hardware=hardware, factory_flash=factory_flash)
    walker.command(wire.CMD_HELLO, seq=0)
    walker.command(wire.CMD_SET_RATE, wire.pack_set_rate(rate_hz), seq=1)
    walker.command(wire.CMD_START, seq=2)
    t_us = 0
    step = int(chunk_s * 1e6)
    while not walker.finished:
        t_us += step
        yield t_us * 1e-6, walker.advance(t_us)


@dataclass
class FaultConfig:
    """Faults the pty server injects into the device-to-host byte stream."""

    corrupt_rate: float = 0.0  # probability that a byte gets one bit flipped
    drop_rate: float = 0.0  # probability that a byte is lost
    stall_every_s: float = 0.0  # the firmware freezes this often (0: never) ...
    stall_duration_s: float = 3.0  # ... for this long, then resumes
    # The USB cable is pulled this often (0: never), counted from the host's first
    # command, so a host that is slow to start never finds the port missing at open ...
    disconnect_every_s: float = 0.0
    disconnect_duration_s: float = 1.0  # ... and plugged back in after this long
    disconnect_jitter: float = 0.0  # both drawn from [x (1 - j), x (1 + j)] (0: fixed)
    corrupt_first_info: int = 0  # the first N INFO frames sent get one payload bit flipped
    seed: int = 0


class FaultInjector:
    """Flips bits and drops bytes at random. With keep_log, it keeps the clean stream
    and which of its bytes it touched, so tests can tell intact frames from hit ones."""

    def __init__(self, config: FaultConfig, keep_log: bool = False) -> None:
        self.config = config
        self.rng = np.random.default_rng(config.seed)
        self.bits_flipped = 0
        self.bytes_dropped = 0
        self.infos_corrupted = 0
        self.clean_log = bytearray() if keep_log else None
        self.touched_log = bytearray() if keep_log else None

    _INFO_HEAD = bytes((wire.SYNC0, wire.SYNC1, wire.PROTOCOL_VERSION, wire.INFO))

    def _corrupt_info(self, data: bytes, touched: np.ndarray) -> bytes:
        """The worst case for identity: the walker's INFO answers are hit."""
        pos = data.find(self._INFO_HEAD)
        while pos >= 0 and self.infos_corrupted < self.config.corrupt_first_info:
            at = pos + wire.HEADER_LEN + 3  # inside the walker id
            if at < len(data):
                data = data[:at] + bytes((data[at] ^ 0x01,)) + data[at + 1:]
                touched[at] = 1
                self.infos_corrupted += 1
                self.bits_flipped += 1
            pos = data.find(self._INFO_HEAD, pos + 1)
        return data

    def apply(self, data: bytes) -> bytes:
        c = self.config
        touched = np.zeros(len(data), dtype=np.uint8)
        clean = data
        if data and self.infos_corrupted < c.corrupt_first_info:
            data = self._corrupt_info(data, touched)
        if data and (c.corrupt_rate > 0 or c.drop_rate > 0):
            buf = np.frombuffer(data, dtype=np.uint8).copy()
            if c.corrupt_rate > 0:
                hit = self.rng.random(buf.size) < c.corrupt_rate
                n = int(hit.sum())
                if n:
                    buf[hit] ^= (1 << self.rng.integers(0, 8, n)).astype(np.uint8)
                    self.bits_flipped += n
                    touched[hit] = 1
            if c.drop_rate > 0:
                keep = self.rng.random(buf.size) >= c.drop_rate
                self.bytes_dropped += int(buf.size - keep.sum())
                touched[~keep] = 1
                buf = buf[keep]
            out = buf.tobytes()
        else:
            out = data
        if self.clean_log is not None:
            self.clean_log += clean
            self.touched_log += touched.tobytes()
        return out


@dataclass
class Unplug:
    """One simulated unplug as the walker saw it, in device time (microseconds).

    What the host cannot receive: the samples taken while unplugged, and the bytes
    still in the cable (pty) when it was pulled. Everything from ``back_us`` on was
    written to the port after it was plugged back in, at ``back_host_time``
    (time.time()), which a host's own reconnect time can be compared with."""

    last_sent_us: int  # the last sample written to the port before the cable was pulled
    unread_bytes: int  # bytes the host had not read then (lost with the cable)
    back_us: int  # the first sample taken after the cable was plugged back in
    back_host_time: float


class PtyServer:
    """Serve a VirtualWalker on a pseudo-terminal in real time.

    `path` is a stable symlink to the current pty (like a udev name for a USB
    device): a simulated disconnect closes the pty, so the host's reads fail, and a
    reconnect makes a new pty and points the symlink at it.
    """

    MAX_PENDING = 64 * 1024  # bytes held while the host is not reading (then dropped)
    UNREAD_SETTLE_S = 0.05  # see _take_unread

    def __init__(self, walker: VirtualWalker, faults: FaultConfig | None = None,
                 path: str | None = None, keep_log: bool = False) -> None:
        self.walker = walker
        self.faults = faults or FaultConfig()
        self.injector = FaultInjector(self.faults, keep_log=keep_log)
        self.path = path or os.path.join(tempfile.gettempdir(),
                                         "walkerlab-virtual-%d" % os.getpid())
        self._master: int | None = None
        self._slave: int | None = None
        self._pending = bytearray()
        self.bytes_sent = 0
        self.bytes_discarded = 0
        self.disconnects = 0
        self.unplugs: list[Unplug] = []
        self.host_talked_us: int | None = None  # device time of the host's first command
        self.stalls = 0

    # ---- the pseudo-terminal ------------------------------------------------------------
    def _plug(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no newline translation: a binary link
        os.set_blocking(master, False)
        self._master, self._slave = master, slave
        tmp = self.path + ".new"
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(os.ttyname(slave), tmp)
        os.replace(tmp, self.path)

    def _take_unread(self) -> int:
        """Count the bytes the host has not read from the cable; return how many.

        The kernel hands bytes written to a pty to its reading side asynchronously, so
        this waits until the count of readable bytes (FIONREAD, which reads nothing)
        has not changed for UNREAD_SETTLE_S; the caller then unplugs, and those bytes
        are lost with the cable. Counting must not read them: the host reads the same
        queue, and a read here would take frames from the middle of its stream (a hole
        before the unplug's gap) whenever the host read at the same moment."""
        def readable() -> int:
            try:
                return struct.unpack("i", fcntl.ioctl(self._slave, termios.FIONREAD,
                                                      b"\0\0\0\0"))[0]
            except OSError:
                return 0

        count = readable()
        while True:
            time.sleep(self.UNREAD_SETTLE_S)
            now = readable()
            if now == count:
                break
            count = now
        # Read by the host between the last count and the unplug: an overestimate,
        # which only widens what a test allows for the cable.
        return len(self._pending) + count

    def _unplug(self) -> None:
        if os.path.lexists(self.path):
            os.unlink(self.path)
        for fd in (self._master, self._slave):
            if fd is not None:
                os.close(fd)
        self._master = self._slave = None
        self._pending.clear()

    def open(self) -> str:
        self._plug()
        return self.path

    def close(self) -> None:
        self._unplug()

    def __enter__(self) -> "PtyServer":
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- serving ------------------------------------------------------------------------
    def _jittered(self, seconds: float) -> float:
        j = self.faults.disconnect_jitter
        return seconds * self.injector.rng.uniform(1 - j, 1 + j) if j else seconds

    def _write(self, data: bytes) -> None:
        self._pending.extend(data)
        if len(self._pending) > self.MAX_PENDING:
            cut = len(self._pending) - self.MAX_PENDING
            del self._pending[:cut]
            self.bytes_discarded += cut
        try:
            n = os.write(self._master, self._pending)
        except BlockingIOError:
            return
        except OSError:
            return
        del self._pending[:n]
        self.bytes_sent += n

    def _read_commands(self) -> bool:
        """Hand the host's bytes to the firmware; True if there were any."""
        try:
            data = os.read(self._master, 4096)
        except (BlockingIOError, OSError):
            return False
        if data:
            self.walker.receive(data)
        return bool(data)

    def serve(self, duration_s: float | None = None, should_stop=None,
              speed: float = 1.0, max_lag_s: float | None = None) -> None:
        """Run until duration_s elapses, should_stop() is true, or interrupted.

        speed: device seconds per real second (20: an hour of walking in three
        minutes, for soak tests); fault intervals stay in real seconds.
        max_lag_s: when the simulation falls further behind than this (device seconds;
        a machine too busy for `speed`), the walker's clock gives up the rest instead of
        catching up, so it keeps answering commands (None: always catch up)."""
        if self._master is None:
            self.open()
        faults = self.faults
        t0 = time.monotonic()
        period = 1.0 / max(self.walker.firmware.rate_hz, 1)
        next_disconnect = float("inf")  # scheduled when the host first talks
        next_stall = faults.stall_every_s or float("inf")
        frozen_s = 0.0  # device time lost to stalls: the firmware's clock stood still
        while True:
            now = time.monotonic() - t0
            if duration_s is not None and now >= duration_s:
                return
            if should_stop is not None and should_stop():
                return
            if now >= next_disconnect:
                last_sent_us = self.walker.next_sample_us - self.walker.firmware.period_us
                unread = self._take_unread()
                self._unplug()
                self.disconnects += 1
                time.sleep(self._jittered(faults.disconnect_duration_s))
                # The firmware sampled on while unplugged; USB CDC drops what it wrote
                # into a closed port, so the host sees those frames as a sequence gap.
                back_host_time = time.time()
                t_dev = (time.monotonic() - t0 - frozen_s) * speed
                self.bytes_discarded += len(self.walker.advance(int(t_dev * 1e6)))
                self._plug()
                self.unplugs.append(Unplug(last_sent_us, unread, self.walker.next_sample_us,
                                           back_host_time))
                next_disconnect = (time.monotonic() - t0
                                   + self._jittered(faults.disconnect_every_s))
                continue
            if now >= next_stall:
                self.stalls += 1
                time.sleep(faults.stall_duration_s)
                frozen_s += faults.stall_duration_s
                next_stall = time.monotonic() - t0 + faults.stall_every_s
                continue
            readable, _, _ = select.select([self._master], [], [], period / 2 / speed)
            if readable and self._read_commands() and self.host_talked_us is None:
                self.host_talked_us = self.walker.t_us
                if faults.disconnect_every_s:
                    next_disconnect = now + faults.disconnect_every_s
            t_dev = (time.monotonic() - t0 - frozen_s) * speed
            if max_lag_s is not None:
                behind = t_dev - self.walker.t_us * 1e-6 - max_lag_s
                if behind > 0:
                    frozen_s += behind / speed
                    t_dev -= behind
            out = self.walker.advance(int(t_dev * 1e6))
            if out:
                self._write(self.injector.apply(out))
            elif self._pending:
                self._write(b"")
