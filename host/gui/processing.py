"""The monitor's processing thread: LinkBatches in, display chunks out.

``ProcessingWorker`` drains one QueueSink (fed by the serial link's reader thread, or
by a ReplaySource with exactly the same LinkBatches), runs the RecognitionPipeline
(features + the recognizer's streaming filter) and computes what the views draw:
physical units, per-leg loads, the validity-gated centre of pressure. It hands the GUI
one ``DisplayChunk`` per wake-up (not per sample, not per frame) through a bounded
deque that the GUI drains on its redraw timer. No Qt here: the hop between threads is
a plain queue, so no Qt signal is ever emitted per sample.
"""
from __future__ import annotations

import collections
import queue
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from calibration import CalibrationError, WalkerCalibration, calibration_for
from device.protocol import wire
from host.features import cop_features
from host.link import QueueSink
from host.pipeline import RecognitionPipeline
from host.samples import SampleBlock

# Columns of DisplayChunk.values (and of the GUI's sample ring after its time column).
VALUE_NAMES = ("accel_x", "accel_y", "accel_z", "load_FR", "load_FL", "load_RL",
               "load_RR", "speed", "total_load", "cop_x", "cop_y")
V = {name: i for i, name in enumerate(VALUE_NAMES)}
N_VALUES = len(VALUE_NAMES)
GAP_MIN_S = 0.25  # a pause in device time longer than this (or 4 periods) is a gap
MAX_BATCHES_PER_CHUNK = 512
OUT_MAXLEN = 2048  # display chunks waiting for the GUI (about a minute at 30 Hz)


def one_line(exc: BaseException) -> str:
    """An exception as one line for the user: its message, never a traceback."""
    text = str(exc).strip().splitlines()
    return text[0] if text and text[0] else type(exc).__name__


@dataclass
class DisplayChunk:
    """What one wake-up of the worker produced, ready to append to ring buffers.

    Rows are samples in device-time order; a row of NaN values marks a gap (lost
    frames, unplugged cable) so curves break there instead of drawing a straight line.
    """

    t: np.ndarray  # (n,) display time: device seconds since the first sample
    values: np.ndarray  # (n, N_VALUES), columns VALUE_NAMES; cop_* NaN where invalid
    posterior: np.ndarray | None  # (n, K) filtered posteriors (NaN rows at gaps)
    classes: tuple[str, ...]
    arrival: float  # wall time (time.time()) the newest batch left the reader thread
    device_activity: list = field(default_factory=list)  # (t, index, confidence, code)
    truth: list = field(default_factory=list)  # (t, code): the simulator's label
    events: list = field(default_factory=list)  # host.link.LinkEvent
    info: dict | None = None  # the newest INFO frame, unpacked
    n_samples: int = 0  # real samples (rows minus gap rows)


class ProcessingWorker:
    """A daemon thread turning one QueueSink's LinkBatches into DisplayChunks.

    calibration: known up front (replay: the recording's) or None (live: looked up by
    walker id when the INFO frame arrives; ``info_getter`` gives the link's INFO if it
    came before this worker started).
    """

    def __init__(self, sink: QueueSink, *, calibration: WalkerCalibration | None = None,
                 recognizer=None, info_getter=None, name: str = "walkerlab-processing"
                 ) -> None:
        self.sink = sink
        self.calibration = calibration
        self._recognizer = recognizer
        self._pending_recognizer: list = []  # [recognizer] when a swap is requested
        self._info_getter = info_getter
        self._pipeline: RecognitionPipeline | None = None
        self._out: collections.deque = collections.deque()
        self.out_dropped = 0
        self.errors: collections.deque = collections.deque(maxlen=16)
        self.samples = 0
        self.batches = 0
        self.waiting_samples = 0  # samples dropped while waiting for the walker's INFO
        self.busy_s = 0.0  # time spent processing (for the benchmarks)
        self._t0: float | None = None
        self._last_t: float | None = None
        self._offset = 0.0
        self._period = 0.02
        self.learning = False  # keep learning online (a recognizer that can), set by the GUI
        # Held while a batch is processed: whoever saves the (learning) model takes it.
        self.model_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    # ---- control (any thread) ---------------------------------------------------------
    def start(self) -> "ProcessingWorker":
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def set_recognizer(self, recognizer) -> None:
        """Swap the model; the worker rebuilds its pipeline before the next batch."""
        self._pending_recognizer.append(recognizer)

    @property
    def classes(self) -> tuple[str, ...]:
        r = self._recognizer
        return tuple(str(c) for c in r.classes_) if r is not None else ()

    def drain(self) -> list[DisplayChunk]:
        """Finished chunks, oldest first (called by the GUI thread)."""
        out = []
        pop = self._out.popleft
        while True:
            try:
                out.append(pop())
            except IndexError:
                return out

    # ---- the thread -------------------------------------------------------------------
    def _run(self) -> None:
        q = self.sink.queue
        while not self._stop.is_set():
            try:
                first = q.get(timeout=0.05)
            except queue.Empty:
                continue
            batches = [first] + self.sink.drain(MAX_BATCHES_PER_CHUNK)
            t = time.perf_counter()
            try:
                with self.model_lock:
                    chunk = self.process(batches)
            except Exception as exc:  # a bad model or calibration: tell the user, go on
                self.errors.append(one_line(exc))
                chunk = None
            self.busy_s += time.perf_counter() - t
            if chunk is not None:
                if len(self._out) >= OUT_MAXLEN:  # the GUI is not draining: drop display
                    self._out.popleft()           # data, never recorded data
                    self.out_dropped += 1
                self._out.append(chunk)

    # ---- processing (the worker thread, or a test calling it directly) ----------------
    def _ensure_pipeline(self, info: dict | None) -> bool:
        if self._pending_recognizer:
            self._recognizer = self._pending_recognizer.pop()
            self._pending_recognizer.clear()
            self._pipeline = None
        if self._pipeline is not None:
            return True
        if self.calibration is None:
            if info is None and self._info_getter is not None:
                info = self._info_getter()
            if info is None:
                return False
            walker_id = info.get("walker_id") or "walker"
            try:
                self.calibration = calibration_for(walker_id, info.get("calibration"),
                                                   use_sources=False)
            except CalibrationError as exc:
                self.errors.append("calibration of walker %s: %s; using nominal values"
                                   % (walker_id, one_line(exc)))
                self.calibration = WalkerCalibration(walker_id=walker_id)
        if info is None and self._info_getter is not None:
            info = self._info_getter()
        self._pipeline = RecognitionPipeline(self.calibration, self._recognizer,
                                             rate_hz=(info or {}).get("rate_hz"))
        return True

    def _apply_learning(self) -> None:
        if self._pipeline is not None and self._pipeline.learning != self.learning:
            self._pipeline.set_learning(self.learning)

    def process(self, batches: list) -> DisplayChunk | None:
        """LinkBatches -> one DisplayChunk (None if there is nothing to show)."""
        self.batches += len(batches)
        events, others, blocks = [], [], []
        info = None
        arrival = 0.0
        for b in batches:
            events.extend(b.events)
            others.extend(b.others)
            if len(b.block):
                blocks.append(b.block)
            arrival = max(arrival, getattr(b, "wall_time", b.host_time))
        for _, frame in others:
            if frame.frame_type == wire.INFO:
                try:
                    info = wire.unpack_info(frame.payload)
                except ValueError:
                    pass
            elif frame.frame_type == wire.CALIBRATION and info is not None:
                try:  # a calibrated walker sends it right after INFO
                    info = dict(info, calibration=wire.unpack_calibration(frame.payload))
                except ValueError:
                    pass
        if info is not None and info.get("calibrated") and "calibration" not in info:
            linked = self._info_getter() if self._info_getter is not None else None
            info = linked if linked and "calibration" in linked else None  # not complete yet
        if info is not None and info.get("rate_hz"):
            self._period = 1.0 / info["rate_hz"]
        block = SampleBlock.concatenate(blocks) if len(blocks) > 1 else (
            blocks[0] if blocks else SampleBlock.empty())
        ready = self._ensure_pipeline(info)
        if len(block) and not ready:
            self.waiting_samples += len(block)
            block = SampleBlock.empty()
        device_activity, truth = [], []
        for t_us, frame in others:
            try:
                if frame.frame_type == wire.ACTIVITY:
                    index, conf, code = wire.unpack_activity(frame.payload)
                    device_activity.append((self._display_time(t_us * 1e-6), index,
                                            float(conf), code))
                elif frame.frame_type == wire.TRUTH:
                    truth.append((self._display_time(t_us * 1e-6),
                                  wire.unpack_truth(frame.payload)))
            except ValueError:
                pass  # a malformed payload; the decoder counted what it could
        n = len(block)
        if not n:
            if not (events or device_activity or truth or info):
                return None
            return DisplayChunk(np.zeros(0), np.zeros((0, N_VALUES)), None,
                                self._pipeline.classes if self._pipeline else (),
                                arrival, device_activity, truth, events, info, 0)
        self._apply_learning()
        out = self._pipeline.process(block)
        fx = self._pipeline.features
        values = np.empty((n, N_VALUES))
        values[:, 0:3] = out.features.X[:, 0:3]
        values[:, V["speed"]] = out.features.X[:, 3]
        loads = fx.loads_newton(block)
        values[:, 3:7] = loads
        total, cop_sp, cop_fp, valid = cop_features(loads, self.calibration)
        values[:, V["total_load"]] = total
        values[:, V["cop_x"]] = np.where(valid, -cop_fp, np.nan)  # screen x: right
        values[:, V["cop_y"]] = np.where(valid, cop_sp * self.calibration.wheelbase_m / 2,
                                         np.nan)  # screen y: front
        t = self._times(block.t_us * 1e-6)
        t, values, posterior = self._insert_gaps(t, values, out.posterior)
        self.samples += n
        return DisplayChunk(t, values, posterior, out.classes, arrival, device_activity,
                            truth, events, info, n)

    def _display_time(self, t_s: float) -> float:
        if self._t0 is None:
            self._t0 = t_s
        return t_s - self._t0 + self._offset

    def _times(self, t_s: np.ndarray) -> np.ndarray:
        """Device seconds -> display seconds, strictly increasing (for the plots' x).

        Only the display is adjusted: a device clock that steps back (a reboot) continues
        from where the plot was; the data themselves are never re-stamped.
        """
        if self._t0 is None:
            self._t0 = float(t_s[0])
        t = t_s - self._t0 + self._offset
        if self._last_t is not None and t[0] <= self._last_t:
            shift = self._last_t + self._period - t[0]
            self._offset += shift
            t = t + shift
        d = np.diff(t)
        if len(d) and d.min() <= 0:
            d[d <= 0] = self._period
            t = t[0] + np.concatenate(([0.0], np.cumsum(d)))
        return t

    def _insert_gaps(self, t, values, posterior):
        """NaN rows where device time jumps (frames lost, cable pulled)."""
        limit = max(GAP_MIN_S, 4 * self._period)
        prev = np.concatenate(([self._last_t if self._last_t is not None else t[0]], t[:-1]))
        gaps = np.flatnonzero(t - prev > limit)
        self._last_t = float(t[-1])
        if not len(gaps):
            return t, values, posterior
        t = np.insert(t, gaps, prev[gaps] + self._period)
        values = np.insert(values, gaps, np.nan, axis=0)
        if posterior is not None:
            posterior = np.insert(posterior, gaps, np.nan, axis=0)
        return t, values, posterior
