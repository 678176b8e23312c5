"""Replay a recording into the monitor as if a walker were connected.

``ReplaySource`` reads a recording's raw serial chunks (``host.replay.recording_chunks``),
paces them at 1x-20x of the recorded host timing from its own thread, decodes them
with a fresh ``StreamDecoder`` and puts the same ``LinkBatch``es the serial link would
into the same kind of queue. Everything downstream (ProcessingWorker, pipeline, ring
buffers, plots) cannot tell a replay from a live walker, so a replay shows exactly
what was seen live.

(``host.replay.replay_bytes`` runs its own pipeline, keeps every feature in memory
and passes on neither the per-leg loads nor ACTIVITY/TRUTH frames, so it cannot feed
the views; this module reuses its chunking and calibration helpers instead.)
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass

from host.errors import UserError
from host.link import LinkBatch, LinkEvent
from host.recording import open_recording
from host.replay import recording_calibration, recording_chunks
from host.samples import StreamDecoder

MAX_SLEEP_S = 0.05  # re-check pause/stop/speed at least this often


@dataclass
class ReplayBatch(LinkBatch):
    """A LinkBatch from a recording: host_time is the recorded arrival time, wall_time
    when the replay thread published it (for latency figures)."""

    wall_time: float = 0.0


class ReplaySource:
    """A thread pacing a recording's chunks into ``sink`` (a host.link.QueueSink).

    speed: times the recorded pace (0: as fast as the consumer takes them).
    Unlike the live link, replay never drops: a full queue makes the replay wait.
    """

    def __init__(self, path, sink, speed: float = 1.0, recording=None) -> None:
        self.path = str(path)
        self.recording = recording if recording is not None else \
            open_recording(path, untrusted=True)  # a file the user picked: probe it
        rec = self.recording
        if not len(rec.raw_chunks):
            raise UserError("%s has no serial data to replay" % self.path)
        self.calibration = recording_calibration(rec)
        self.sink = sink
        self._speed = float(speed)
        self._paused = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.first_host_time = float(rec.raw_chunks["host_time"][0])
        self.last_host_time = float(rec.raw_chunks["host_time"][-1])
        self.position = self.first_host_time  # recorded host time of the last chunk sent
        self.chunks_sent = 0
        self.n_chunks = len(rec.raw_chunks)
        self.finished = False
        self.error: str | None = None
        self.decoder = StreamDecoder()
        self._anchor: tuple[float, float] | None = None  # (wall, recorded host time)
        self._thread = threading.Thread(target=self._run, name="walkerlab-replay",
                                        daemon=True)

    # ---- control (any thread) -----------------------------------------------------
    def start(self) -> "ReplaySource":
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def speed(self) -> float:
        return self._speed

    @speed.setter
    def speed(self, value: float) -> None:
        with self._lock:
            self._speed = float(value)
            self._anchor = None  # re-anchor the pacing at the current position

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    @paused.setter
    def paused(self, value: bool) -> None:
        with self._lock:
            if value:
                self._paused.set()
            else:
                self._paused.clear()
            self._anchor = None

    @property
    def duration_s(self) -> float:
        return self.last_host_time - self.first_host_time

    @property
    def progress(self) -> float:
        """0..1 through the recording."""
        if self.finished:
            return 1.0
        d = self.duration_s
        return min(1.0, max(0.0, (self.position - self.first_host_time) / d)) if d > 0 \
            else 0.0

    def counters(self) -> dict:
        return self.decoder.counters()

    # ---- the thread -----------------------------------------------------------------
    def _wait_until_due(self, host_time: float) -> bool:
        """Sleep until the chunk recorded at host_time is due; False when stopping."""
        while not self._stop.is_set():
            if self._paused.is_set():
                time.sleep(MAX_SLEEP_S)
                continue
            with self._lock:
                speed = self._speed
                if speed <= 0:
                    return True
                if self._anchor is None:
                    self._anchor = (time.perf_counter(), self.position)
                wall0, host0 = self._anchor
            delay = wall0 + (host_time - host0) / speed - time.perf_counter()
            if delay <= 0:
                return True
            time.sleep(min(delay, MAX_SLEEP_S))
        return False

    def _put(self, batch) -> bool:
        while not self._stop.is_set():
            try:
                self.sink.queue.put(batch, timeout=MAX_SLEEP_S)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            start = LinkEvent(time.time(), "replay", self.path)
            first = True
            for host_time, data in recording_chunks(self.recording):
                if not self._wait_until_due(host_time):
                    return
                block, others = self.decoder.feed(data, host_time)
                batch = ReplayBatch(host_time, data, block, others,
                                    [start] if first else [], wall_time=time.time())
                first = False
                if not self._put(batch):
                    return
                self.position = host_time
                self.chunks_sent += 1
        except Exception as exc:  # an unreadable file part: say so, stop replaying
            from host.gui.processing import one_line
            self.error = "%s: %s" % (self.path, one_line(exc))
        finally:
            self.finished = not self._stop.is_set()
