"""`walkerlab render-video`: a synthetic camera video of a simulated recording.

The scene comes from the recording (loads, wheel distance, the simulator's labels)
and the flashes from its 'sync_tap' link events (written by `walkerlab simulate
--sync-taps`), so the video is the test media for host/annotate/sync.py with a
known clock: t_sensor = (1 + drift_ppm * 1e-6) * t_video + offset_s.
"""
from __future__ import annotations


import numpy as np
from tqdm import tqdm

from device.sim.video import SessionScene, VideoClock, render_session_video
from host.errors import UserError
from host.features import FeatureExtractor
from host.outputs import check_free, exclusive_output
from host.recording import open_recording
from host.replay import recording_calibration
from host.simulate import SYNC_TAP_EVENT


def recording_scene(path) -> SessionScene:
    rec = open_recording(path, untrusted=True)  # the user's FILE argument
    if len(rec.time_s) == 0:
        raise UserError("%s: the recording holds no samples" % path)
    cal = recording_calibration(rec)
    fx = FeatureExtractor(cal, "cop")
    ticks = rec.samples.encoder.astype(np.int64)
    distance = (ticks - ticks[0]) * cal.metres_per_tick
    if "simulator" in rec.labels:
        labels = rec.labels_per_sample("simulator").astype(object)
    else:
        labels = np.full(len(rec.time_s), "", dtype=object)
    ref_us = int(rec.attrs.get("timestamps_reference_device_us", 0))
    ev = rec.link_events
    taps = np.sort((ev["value"][ev["kind"] == SYNC_TAP_EVENT] - ref_us) * 1e-6)
    return SessionScene(rec.time_s, fx.loads_newton(rec.samples), distance, labels, taps)


def render_recording_video(path, out, *, fps: int = 10, width: int = 160,
                           height: int = 120, offset_s: float = 0.0, drift_ppm: float = 0.0,
                           codec: str = "libx264", overwrite: bool = False,
                           progress: bool = True) -> VideoClock:
    """Render the recording's synthetic video to `out` (see module docstring)."""
    check_free(out, overwrite)  # before rendering
    if not 1 <= fps <= 120:
        raise UserError("--fps must be between 1 and 120")
    if width < 64 or height < 48 or width % 2 or height % 2:
        raise UserError("--size must be even and at least 64x48")
    if abs(drift_ppm) > 1e5:
        raise UserError("--drift is in ppm and must be within +-100000")
    scene = recording_scene(path)
    if not len(scene.taps_s):
        print("note: %s has no simulated sync taps (simulate with --sync-taps): the "
              "video has no flashes" % path)
    n = int(np.ceil((scene.time_s[-1] + 1.0 - offset_s) / (1 + drift_ppm * 1e-6) * fps))
    bar = tqdm(total=n, desc="rendering", unit="frame", disable=not progress)
    try:
        with exclusive_output(out, overwrite=overwrite) as tmp:
            return render_session_video(scene, tmp, fps=fps, size=(width, height),
                                        offset_s=offset_s, drift_ppm=drift_ppm,
                                        codec=codec, progress=bar.update)
    finally:
        bar.close()
