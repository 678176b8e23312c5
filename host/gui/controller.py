"""Orchestration of the live monitor, without widgets.

``MonitorController`` owns the data sources and threads of one monitor window:

* a live session: an optional in-process virtual walker, a ``SerialLink`` (reader
  thread: port, decoding, reconnects) with two sinks, the monitor's ``QueueSink`` and a
  ``RecordingTap`` that forwards batches to the current ``RecorderThread`` (if any);
* or a replay session: a ``ReplaySource`` thread feeding the same kind of queue;
* in both cases one ``ProcessingWorker`` thread (pipeline + display quantities).

The GUI calls ``poll()`` from its redraw timer to collect finished display chunks and
messages; every other method returns quickly (stopping a recording closes the file on
a helper thread). User mistakes raise ``host.errors.UserError`` (or the library's
user-error types) with a one-line message.
"""
from __future__ import annotations

import collections
import datetime as _dt
import itertools
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass, field

from device.protocol import wire
from host.errors import UserError
from host.gui.ports import VIRTUAL
from host.gui.processing import ProcessingWorker, one_line
from host.link import QueueSink, SerialLink

LINK_QUEUE_SIZE = 4096  # LinkBatches (one per serial read): tens of seconds of slack
REPLAY_QUEUE_SIZE = 64  # replay waits instead of dropping: keep its lead small
_virtual_ids = itertools.count()


class RecordingTap:
    """A link sink forwarding to the current recorder; lets recordings start and stop
    while the link runs (SerialLink has no remove_sink). Never blocks."""

    def __init__(self) -> None:
        self.recorder = None
        self._closed_drops = 0

    def put(self, batch) -> None:
        recorder = self.recorder
        if recorder is not None:
            recorder.put(batch)

    def detach(self):
        recorder, self.recorder = self.recorder, None
        if recorder is not None:
            self._closed_drops += recorder.dropped
        return recorder

    @property
    def dropped(self) -> int:
        recorder = self.recorder
        return self._closed_drops + (recorder.dropped if recorder is not None else 0)


@dataclass
class RecordingState:
    path: str
    recorder: object
    started: float  # time.monotonic()
    subject_id: str = ""
    session_set: bool = False


@dataclass
class PollResult:
    chunks: list = field(default_factory=list)  # processing.DisplayChunk
    errors: list = field(default_factory=list)  # one-line messages for dialogs
    notices: list = field(default_factory=list)  # one-line messages for the status bar


def recording_filename(folder: str, subject_id: str, when: float | None = None) -> str:
    """folder/<subject or 'session'>-YYYYmmdd-HHMMSS.h5, made safe for file systems."""
    stem = re.sub(r"[^A-Za-z0-9_-]+", "_", subject_id.strip()).strip("_") or "session"
    stamp = _dt.datetime.fromtimestamp(time.time() if when is None else when)
    return os.path.join(folder, "%s-%s.h5" % (stem, stamp.strftime("%Y%m%d-%H%M%S")))


class MonitorController:
    """See the module docstring. Modes: 'idle', 'live', 'replay'."""

    def __init__(self, *, virtual_course: str = "free", virtual_seed: int = 0,
                 virtual_rate_hz: int = 50, virtual_faults=None,
                 link_rate_hz: int | None = None) -> None:
        self.virtual_course = virtual_course
        self.virtual_seed = virtual_seed
        self.virtual_rate_hz = virtual_rate_hz
        self.virtual_faults = virtual_faults
        self.link_rate_hz = link_rate_hz
        self.mode = "idle"
        self.port = ""  # what we are connected to ('virtual' or a path) or replaying
        self.link: SerialLink | None = None
        self.virtual = None
        self.replay = None
        self.worker: ProcessingWorker | None = None
        self.sink: QueueSink | None = None
        self.tap = RecordingTap()
        self.recognizer = None
        self.model_path: str | None = None
        self.learning = False
        self.recording: RecordingState | None = None
        self.link_state = "disconnected"  # live: connected, reconnecting, stalled
        self.info: dict | None = None  # the walker's INFO (live) or the recording's
        self._messages: collections.deque = collections.deque(maxlen=64)
        self._closers: list[threading.Thread] = []

    # ---- sessions -----------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self.mode != "idle"

    def connect(self, port: str | None = None) -> None:
        """Connect to a serial port, or to an in-process virtual walker (None/'virtual')."""
        self.disconnect()
        port = port or VIRTUAL
        path = port
        if port == VIRTUAL:
            from host.virtual_port import BackgroundVirtualWalker

            name = "walkerlab-virtual-%d-%d" % (os.getpid(), next(_virtual_ids))
            self.virtual = BackgroundVirtualWalker(
                course=self.virtual_course, seed=self.virtual_seed,
                rate_hz=self.virtual_rate_hz, faults=self.virtual_faults,
                path=os.path.join(tempfile.gettempdir(), name))
            path = self.virtual.start()
        sink = QueueSink(maxsize=LINK_QUEUE_SIZE)
        link = SerialLink(path, rate_hz=self.link_rate_hz)
        link.add_sink(sink)
        link.add_sink(self.tap)
        worker = ProcessingWorker(sink, recognizer=self.recognizer,
                                  info_getter=lambda: link.info)
        worker.learning = self.learning
        try:
            link.open()
        except BaseException:
            self._stop_virtual()
            raise
        self.link, self.sink, self.worker = link, sink, worker.start()
        self.mode, self.port, self.link_state, self.info = "live", port, "connected", None

    def open_replay(self, path, speed: float = 1.0) -> None:
        """Replay a recording through the same queue, worker and views as live data."""
        from host.gui.replay_source import ReplaySource

        if self.recording is not None:
            raise UserError("stop the recording before opening a replay")
        sink = QueueSink(maxsize=REPLAY_QUEUE_SIZE)
        source = ReplaySource(path, sink, speed=speed)  # reads the file: errors here
        self.disconnect()
        rec = source.recording
        self.info = dict(rec.info) if rec.info else {
            "walker_id": rec.attrs.get("walker_id", ""),
            "firmware_version": rec.attrs.get("firmware_version", "")}
        self.replay, self.sink = source, sink
        self.worker = ProcessingWorker(sink, calibration=source.calibration,
                                       recognizer=self.recognizer)
        self.worker.learning = self.learning
        self.worker.start()
        self.mode, self.port, self.link_state = "replay", str(path), "replay"
        source.start()

    def disconnect(self) -> None:
        """End the live or replay session (stopping a recording first)."""
        if self.recording is not None:
            self.stop_recording()
        if self.link is not None:
            self.link.close()
            self.link = None
        self._stop_virtual()
        if self.replay is not None:
            self.replay.stop()
            self.replay = None
        if self.worker is not None:
            self.worker.stop()
            self.worker = None
        self.sink = None
        self.mode, self.link_state = "idle", "disconnected"

    def _stop_virtual(self) -> None:
        if self.virtual is not None:
            self.virtual.stop()
            self.virtual = None

    def shutdown(self) -> None:
        """Stop everything and wait for recordings to be closed (application exit)."""
        self.disconnect()
        self.wait_recordings_closed(30.0)

    # ---- replay control -------------------------------------------------------------
    def set_replay_speed(self, speed: float) -> None:
        if self.replay is not None:
            self.replay.speed = speed

    def set_replay_paused(self, paused: bool) -> None:
        if self.replay is not None:
            self.replay.paused = paused

    # ---- model --------------------------------------------------------------------
    def load_model(self, path) -> object:
        """Load a saved recognizer and use it from the next block on."""
        from host.models import load_model

        path = os.fspath(path)
        if not os.path.exists(path):
            raise UserError("model file %s does not exist" % path)
        try:
            recognizer = load_model(path)
        except (UserError, ValueError, KeyError, OSError) as exc:
            raise UserError("cannot load model %s: %s"
                            % (os.path.basename(path), _model_error(exc, path))) from None
        if not recognizer_streams(recognizer):
            raise UserError("model %s cannot run live (it does not stream)"
                            % os.path.basename(path))
        self.set_recognizer(recognizer, path)
        return recognizer

    def set_recognizer(self, recognizer, path: str | None = None) -> None:
        self.recognizer = recognizer
        self.model_path = path
        self.learning = False  # a newly loaded model starts by only recognising
        if self.worker is not None:
            self.worker.learning = self.learning
            self.worker.set_recognizer(recognizer)

    def clear_model(self) -> None:
        self.set_learning(False)
        self.set_recognizer(None, None)

    @property
    def can_learn(self) -> bool:
        r = self.recognizer
        return r is not None and r.get_tags().supports_partial_fit

    def set_learning(self, on: bool) -> None:
        """Let an online recognizer (BMM) keep learning from the live stream."""
        self.learning = bool(on) and self.can_learn
        if self.worker is not None:
            self.worker.learning = self.learning

    def save_model(self, path) -> str:
        """Save the running model (with what it learnt live) to ``path``."""
        if self.recognizer is None:
            raise UserError("no model is loaded")
        lock = self.worker.model_lock if self.worker is not None else None
        from host.models import append_history

        # The file dialog already asked before replacing a file.
        steps = getattr(getattr(self.recognizer, "bmm_", None), "n_steps_", None)
        try:
            if lock is not None:
                with lock:  # not in the middle of a learning step
                    append_history(self.recognizer, "keep-learning", source="live monitor",
                                   frames_learnt_total=None if steps is None else int(steps),
                                   from_model=self.model_path)
                    out = self.recognizer.save(path)
            else:
                append_history(self.recognizer, "keep-learning", source="live monitor",
                               frames_learnt_total=None if steps is None else int(steps),
                               from_model=self.model_path)
                out = self.recognizer.save(path)
        except OSError as exc:
            raise UserError("cannot save model to %s: %s" % (path, exc)) from None
        self.model_path = os.fspath(out)
        return self.model_path

    @property
    def classes(self) -> tuple[str, ...]:
        r = self.recognizer
        return tuple(str(c) for c in r.classes_) if r is not None else ()

    # ---- recording ----------------------------------------------------------------
    def start_recording(self, path, subject_id: str = "", notes: str = "") -> str:
        """Record the live stream to a new HDF5 file (RecorderThread, its own thread)."""
        from host.recording import RecorderThread

        if self.mode != "live" or self.link is None:
            raise UserError("connect a walker before recording")
        if self.recording is not None:
            raise UserError("already recording to %s" % self.recording.path)
        path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise UserError("cannot create folder %s: %s" % (folder, exc.strerror)) from None
        try:
            recorder = RecorderThread(path, subject_id=subject_id, notes=notes).start()
        except OSError as exc:  # exists, permission, disk: one line for the user
            raise UserError("cannot create %s: %s" % (path, one_line(exc))) from None
        self.recording = RecordingState(path, recorder, time.monotonic(), subject_id)
        self._set_session()
        self.tap.recorder = recorder
        # Ask for INFO again so the file holds the walker's description frame too.
        self.link.send_command(wire.CMD_HELLO)
        return path

    def _set_session(self) -> None:
        rec = self.recording
        info = self.link.info if self.link is not None else None
        if rec is None or rec.session_set or info is None:
            return
        worker_cal = self.worker.calibration if self.worker is not None else None
        if worker_cal is None:
            from calibration import calibration_for
            try:
                worker_cal = calibration_for(info["walker_id"], info.get("calibration"),
                                             use_sources=False)
            except ValueError as exc:
                self._messages.append(("error", one_line(exc)))
                return
        rec.recorder.put_session(walker_id=info["walker_id"],
                                 firmware_version=info["firmware_version"],
                                 calibration=worker_cal.to_json())
        rec.session_set = True

    def stop_recording(self) -> str | None:
        """Stop recording; the file is finished on a helper thread (see poll())."""
        rec = self.recording
        if rec is None:
            return None
        self._set_session()
        self.tap.detach()
        self.recording = None

        def close():
            try:
                rec.recorder.close()
            except Exception as exc:
                self._messages.append(("error", "recording %s: %s"
                                       % (rec.path, one_line(exc))))
            else:
                self._messages.append(("notice", "saved recording %s" % rec.path))

        t = threading.Thread(target=close, name="walkerlab-recorder-close", daemon=True)
        t.start()
        self._closers = [c for c in self._closers if c.is_alive()] + [t]
        return rec.path

    def wait_recordings_closed(self, timeout: float = 10.0) -> bool:
        end = time.monotonic() + timeout
        for t in self._closers:
            t.join(max(0.0, end - time.monotonic()))
        self._closers = [t for t in self._closers if t.is_alive()]
        return not self._closers

    def recording_status(self) -> dict | None:
        rec = self.recording
        if rec is None:
            return None
        try:
            size = os.path.getsize(rec.path)
        except OSError:
            size = 0
        return {"path": rec.path, "elapsed_s": time.monotonic() - rec.started,
                "samples": rec.recorder.writer.n_samples, "bytes": size,
                "dropped": rec.recorder.dropped}

    # ---- the GUI's timer ------------------------------------------------------------
    def poll(self) -> PollResult:
        """Finished display chunks and messages since the last call (GUI thread)."""
        result = PollResult()
        worker = self.worker
        if worker is not None:
            result.chunks = worker.drain()
            while worker.errors:
                result.errors.append(worker.errors.popleft())
        for chunk in result.chunks:
            if chunk.info is not None:
                self.info = chunk.info
            for ev in chunk.events:
                self._on_event(ev)
        if self.mode == "live" and self.link is not None:
            if self.info is None and self.link.info is not None:
                self.info = self.link.info
            if not self.link.connected:
                self.link_state = "reconnecting"
            if self.recording is not None:
                self._set_session()
                if self.recording.recorder.error is not None:
                    rec = self.recording
                    self.tap.detach()
                    self.recording = None
                    result.errors.append("recording %s stopped: %s"
                                         % (rec.path, one_line(rec.recorder.error)))
        if self.replay is not None and self.replay.error:
            result.errors.append(self.replay.error)
            self.replay.error = None
        while self._messages:
            kind, text = self._messages.popleft()
            (result.errors if kind == "error" else result.notices).append(text)
        return result

    def _on_event(self, ev) -> None:
        if ev.kind == "disconnected":
            self.link_state = "reconnecting"
        elif ev.kind in ("reconnected", "resumed", "connected"):
            self.link_state = "connected"
        elif ev.kind == "stalled":
            self.link_state = "stalled"

    @property
    def replay_finished(self) -> bool:
        return self.replay is not None and self.replay.finished and (
            self.sink is None or self.sink.queue.empty())

    def health(self) -> dict:
        """Link health for the status bar (live), or the replay decoder's counters."""
        if self.link is not None:
            h = self.link.health()
        elif self.replay is not None:
            c = self.replay.counters()
            h = {"connected": True, "frames": c["frames_ok"], "crc_errors": c["crc_errors"],
                 "resyncs": c["resyncs"], "seq_gaps": c["seq_gaps"],
                 "frames_lost": c["frames_lost"], "queue_drops": 0, "reconnects": 0,
                 "stalls": 0, "last_frame_age_s": None}
        else:
            return {"connected": False, "frames": 0, "crc_errors": 0, "resyncs": 0,
                    "seq_gaps": 0, "frames_lost": 0, "queue_drops": 0, "reconnects": 0,
                    "stalls": 0, "last_frame_age_s": None, "display_drops": 0}
        h["display_drops"] = self.worker.out_dropped if self.worker is not None else 0
        return h


def _model_error(exc: BaseException, path: str) -> str:
    """The loader's message, shorter: no repeated path, no advice about unpickling (models
    are never unpickled)."""
    text = one_line(exc)
    for prefix in (path + ": ", path + " "):
        if text.startswith(prefix):
            text = text[len(prefix):]
            if text.startswith("is "):
                text = "it " + text
    cut = text.find(" (")
    if cut > 0 and "pickle" in text[cut:]:
        text = text[:cut]
    return text or type(exc).__name__


def recognizer_streams(recognizer) -> bool:
    """A recognizer can run live unless its tags say it cannot stream."""
    try:
        tags = recognizer.get_tags()
    except Exception:
        return True
    return bool(getattr(tags, "supports_streaming", True))
