"""`walkerlab monitor --headless`: a terminal live view of a walker.

Shows the current activity and posterior (when a model is loaded), key features and
link health, refreshed a few times a second. Without a port it starts a virtual
walker in-process, so it works out of the box.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from calibration import calibration_for
from host.errors import UserError
from host.link import QueueSink, SerialLink
from host.pipeline import RecognitionPipeline

REFRESH_S = 0.5


def _bar(p: float, width: int = 20) -> str:
    n = int(round(p * width))
    return "#" * n + "." * (width - n)


def render_status(link: SerialLink, pipeline: RecognitionPipeline | None, last_x,
                  posterior, feature_names, model_line: str = "") -> str:
    """The text of one refresh of the terminal view."""
    h = link.health()
    info = link.info or {}
    lines = []
    title = "WalkerLab monitor  %s  walker %s  fw %s  %s Hz" % (
        link.port_name, info.get("walker_id", "?"), info.get("firmware_version", "?"),
        info.get("rate_hz", "?"))
    lines.append(title)
    age = h["last_frame_age_s"]
    lines.append("link: %s  frames %d  crc errors %d  resyncs %d  seq gaps %d "
                 "(lost %d)  queue drops %d  reconnects %d  last frame %s" % (
                     "connected" if h["connected"] else "DISCONNECTED", h["frames"],
                     h["crc_errors"], h["resyncs"], h["seq_gaps"], h["frames_lost"],
                     h["queue_drops"], h["reconnects"],
                     "-" if age is None else "%.2f s ago" % age))
    if last_x is not None:
        lines.append("features: " + "  ".join(
            "%s %.2f" % (name, value) for name, value in zip(feature_names, last_x)))
    if model_line:
        lines.append(model_line)
    if pipeline is not None and pipeline.recognizer is not None and posterior is not None:
        k = int(np.argmax(posterior))
        lines.append("activity: %s  (p = %.2f)" % (pipeline.classes[k], posterior[k]))
        order = np.argsort(posterior)[::-1][:5]
        for j in order:
            lines.append("  %-4s %s %.2f" % (pipeline.classes[j], _bar(posterior[j]),
                                             posterior[j]))
    elif pipeline is not None and pipeline.recognizer is None:
        lines.append("activity: (no model loaded: --model MODEL to recognise)")
    return "\n".join(lines)


def _model_line(recognizer) -> str:
    """Which model runs and how it was trained (the shipped default says so)."""
    if recognizer is None:
        return ""
    from host.models import describe_training

    return "model: %s %s (%s)" % (recognizer.kind, recognizer.feature_set_ or "",
                                  describe_training(recognizer))


def run_headless_monitor(port: str, recognizer=None, duration_s: float | None = None,
                         out=None, refresh_s: float = REFRESH_S) -> dict:
    """Run the terminal view until duration_s or Ctrl-C; return the final link health."""
    out = out or sys.stdout
    interactive = hasattr(out, "isatty") and out.isatty()
    link = SerialLink(port)
    sink = QueueSink(maxsize=4096)
    link.add_sink(sink)
    pipeline = None
    last_x = posterior = None
    names: tuple = ()
    t0 = time.monotonic()
    link.open()
    try:
        while duration_s is None or time.monotonic() - t0 < duration_s:
            time.sleep(refresh_s)
            for batch in sink.drain():
                if pipeline is None and link.info is not None:
                    cal = calibration_for(link.info.get("walker_id") or "walker",
                                          link.info.get("calibration"), use_sources=False)
                    try:
                        pipeline = RecognitionPipeline(cal, recognizer,
                                                       rate_hz=link.info.get("rate_hz"))
                    except ValueError as exc:  # a model that cannot run at this rate
                        raise UserError(str(exc)) from None
                    names = pipeline.features.names
                if pipeline is None or not len(batch.block):
                    continue
                result = pipeline.process(batch.block)
                last_x = result.features.X[-1]
                if result.posterior is not None:
                    posterior = result.posterior[-1]
            text = render_status(link, pipeline, last_x, posterior, names,
                                 _model_line(recognizer))
            if interactive:
                out.write("\x1b[H\x1b[J" + text + "\n")
            else:
                out.write(text + "\n\n")
            out.flush()
    except KeyboardInterrupt:
        pass
    finally:
        link.close()
    return link.health()
