"""`walkerlab record`: a session from a walker's serial port into a recording file."""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

from tqdm import tqdm

from calibration import calibration_for
from host.errors import UserError
from host.outputs import check_free
from host.link import ANSWER_TIMEOUT_S, SerialLink, check_port
from host.recording import RecorderThread

# How long record waits after the end for an INFO frame still on its way.
INFO_TIMEOUT_S = 3.0


def _set_session(recorder, info: dict | None) -> bool:
    """Write the walker's identity and calibration as soon as its INFO has arrived."""
    if info is None:
        return False
    walker_id = info["walker_id"]
    recorder.put_session(walker_id=walker_id, firmware_version=info["firmware_version"],
                         calibration=calibration_for(
                             walker_id, info.get("calibration"), use_sources=False).to_json())
    return True


def _write_failure(exc: BaseException) -> str:
    """The OS's words from an HDF5 write error ('No space left on device', ...)."""
    import re

    m = re.search(r"error message = '([^']+)'", str(exc))
    return m.group(1) if m else " ".join(str(exc).split())[:100]


class _CtrlC:
    """Ctrl-C (SIGINT) during a recording sets ``pressed`` instead of raising
    KeyboardInterrupt wherever the main thread happens to be: an exception raised
    inside a call that holds a lock (the writer's, tqdm's) could leave it held, and
    closing the file would then wait for ever. Only the main thread can install it;
    elsewhere KeyboardInterrupt is left to the caller."""

    def __init__(self) -> None:
        self.pressed = False
        self._installed = threading.current_thread() is threading.main_thread()
        if self._installed:
            self._previous = signal.signal(signal.SIGINT, self._press)

    def _press(self, *_) -> None:
        self.pressed = True

    def restore(self) -> None:
        if self._installed:
            # (None: a handler not set from Python; the default is the safe choice)
            signal.signal(signal.SIGINT, self._previous if self._previous is not None
                          else signal.default_int_handler)
            self._installed = False


def record_session(port: str, out_path, duration_s: float, *, subject_id: str = "",
                   notes: str = "", rate_hz: int | None = None, overwrite: bool = False,
                   progress: bool = True, extra_sinks=(),
                   answer_timeout_s: float = ANSWER_TIMEOUT_S) -> dict:
    """Record `duration_s` seconds from `port` into `out_path`; return the link health.

    The file is created (exclusively, unless ``overwrite``) before the port is opened,
    so a name clash fails first; if the port cannot be opened, sends not one byte in
    ``answer_timeout_s`` of listening, or no frame by the end, the file is removed
    again, so a retry finds the name free. A walker that answers (any byte) is never
    refused for being slow to start streaming. Ctrl-C closes the file
    cleanly and keeps what was recorded: the health then says ``interrupted`` and
    ``recorded_s``.
    """
    if duration_s <= 0:
        raise UserError("--duration must be positive")
    check_port(port)
    check_free(out_path, overwrite)
    try:
        recorder = RecorderThread(out_path, overwrite=overwrite, subject_id=subject_id,
                                  notes=notes).start()
    except FileExistsError:  # another command created it since the check
        raise UserError("%s was created by another command meanwhile (use --overwrite "
                        "to replace it)" % out_path) from None
    # Load the compiled frame scan before the port opens: its compiler state then
    # belongs to start-up, not to memory growth during the recording.
    from host.fast_decode import feed_fast
    from device.protocol.wire import FrameDecoder

    feed_fast(FrameDecoder(), b"")
    link = SerialLink(port, rate_hz=rate_hz)
    link.add_sink(recorder)
    for sink in extra_sinks:
        link.add_sink(sink)
    try:
        link.open()
    except BaseException:
        recorder.close()
        _discard(out_path)  # nothing was recorded: leave nothing that blocks a retry
        raise
    session_set = False
    interrupted = False
    t0 = time.monotonic()
    bar = tqdm(total=round(duration_s), unit="s", desc="recording", disable=not progress)
    ctrl_c = _CtrlC()
    try:
        while (elapsed := time.monotonic() - t0) < duration_s and not ctrl_c.pressed:
            time.sleep(min(0.1, duration_s - elapsed))
            bar.n = min(round(elapsed), bar.total)
            bar.set_postfix(frames=link.frames, gaps=link.decoder.frames.seq_gaps,
                            crc=link.decoder.frames.crc_errors, refresh=False)
            bar.refresh()
            session_set = session_set or _set_session(recorder, link.info)
            if recorder.error is not None:  # disk full, removed drive: stop, keep the rest
                break
            if link.bytes_received == 0 and link.silent_s > answer_timeout_s:
                raise UserError(_no_frames(port, link, link.silent_s))
        if link.frames == 0 and not ctrl_c.pressed:
            raise UserError(_no_frames(port, link, duration_s))
    except KeyboardInterrupt:  # Ctrl-C off the main thread's handler (see _CtrlC)
        interrupted = True
    finally:
        ctrl_c.restore()
        interrupted = interrupted or ctrl_c.pressed
        recorded_s = time.monotonic() - t0
        bar.close()
        # The INFO answer may still be on its way (the link keeps asking): wait a little.
        deadline = time.monotonic() + INFO_TIMEOUT_S
        while link.info is None and link.frames and time.monotonic() < deadline:
            time.sleep(0.05)
        link.close()
        session_set = session_set or _set_session(recorder, link.info)  # a late INFO
        try:
            recorder.close()
        except (OSError, RuntimeError) as exc:  # h5py reports write failures as either
            reason = getattr(exc, "strerror", None) or _write_failure(exc)
            raise UserError(
                "recording stopped after %.0f s: cannot write %s (%s); what was written "
                "before is kept (if `walkerlab info` cannot read it, `walkerlab recover "
                "%s --out NEW.h5` salvages it)" % (recorded_s, out_path,
                                                  reason, out_path)) from None
        if link.frames == 0 and (sys.exc_info()[0] is not None or interrupted):
            # Stopped before anything arrived: leave nothing that would block a retry.
            _discard(out_path)
    health = link.health()
    health["info_received"] = session_set
    health["interrupted"] = interrupted
    health["recorded_s"] = min(recorded_s, duration_s)
    health["kept"] = os.path.exists(out_path)
    return health


def _no_frames(port: str, link, seconds: float) -> str:
    """Why nothing was recorded, in one line: a silent port, or bytes that are no frames."""
    if link.bytes_received == 0:
        return ("no frames from %s: not one byte in %.1f s (is it a WalkerLab walker, "
                "switched on? --answer-timeout waits longer)" % (port, seconds))
    return ("no frames from %s in %.1f s: %d bytes arrived, none a WalkerLab frame "
            "(another device, or a walker still starting: record for longer)"
            % (port, seconds, link.bytes_received))


def _discard(path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
