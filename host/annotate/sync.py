"""Synchronising a video with a recording: sync taps, anchors and the clock fit.

A sync tap is a knock on the walker's frame: the accelerometer jolts and every load
cell spikes at once. Each tap seen in the sensors and in a video (the user confirms
the frame; a camera flash, if there is one, is found automatically) is an anchor
(t_video, t_sensor). Two or more anchors fit ``t_sensor = a * t_video + b`` (clock
drift and offset) by least squares; one anchor fixes the offset only (a = 1).

Both clocks only sample the event: the tap happened between the last sample (frame)
before it was seen and the first one that shows it. Each side is stamped with the
middle of that interval, so neither the sensor rate nor the frame rate biases the
offset (error at most half a frame plus half a sample).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.ndimage import median_filter

from host.features import FeatureExtractor
from host.replay import recording_calibration

# A knock jolts the frame and presses all four legs at once. Curbs jolt it too (up to
# ~2.3 g in the simulator) but shift under 100 N; a knock seen at 50 Hz reads 1.5-4 g
# and 200-300 N over the running median.
TAP_MIN_ACCEL_MPS2 = 9.80665  # a jolt of at least 1 g over the running median
TAP_MIN_LOAD_N = 150.0  # with a jump in the total load of at least this much
TAP_LOAD_WINDOW_S = 0.25  # ... within this time of the jolt
TAP_REFRACTORY_S = 1.0  # jolts closer than this are one tap
FLASH_MIN_RISE = 60.0  # a flash raises the mean luma by at least this much (0-255)


@dataclass
class SyncEvent:
    """A tap found in the sensors: its estimated time and how strong it was."""

    t_s: float  # recording time base
    index: int  # first sample that shows it
    accel_mps2: float
    load_n: float


def detect_taps(recording) -> list[SyncEvent]:
    """Sync taps in a recording (sharp accelerometer jolt + load-cell spike)."""
    t = recording.time_s
    if len(t) < 10:
        return []
    fx = FeatureExtractor(recording_calibration(recording), "cop")
    acc = fx.accel_mps2(recording.samples)
    load = fx.loads_newton(recording.samples).sum(axis=1)
    dt = float(np.median(np.diff(t)))
    win = max(3, int(round(0.5 / dt)) | 1)
    jolt = np.linalg.norm(acc - median_filter(acc, size=(win, 1), mode="nearest"), axis=1)
    load_dev = np.abs(load - median_filter(load, size=win, mode="nearest"))
    hits = np.flatnonzero(jolt >= TAP_MIN_ACCEL_MPS2)
    events: list[SyncEvent] = []
    reach = max(1, int(round(TAP_LOAD_WINDOW_S / dt)))
    last = -np.inf
    for i in hits:
        if t[i] - last < TAP_REFRACTORY_S:
            continue
        lo, hi = max(i - 1, 0), min(i + reach + 1, len(t))
        peak_load = float(load_dev[lo:hi].max())
        if peak_load < TAP_MIN_LOAD_N:
            continue
        last = t[i]
        # The knock fell between sample i-1 and sample i: stamp the middle.
        t_tap = float(t[i] - 0.5 * (t[i] - t[i - 1])) if i > 0 else float(t[i])
        events.append(SyncEvent(t_tap, int(i), float(jolt[i:hi].max()), peak_load))
    return events


def event_video_time(frame_times_s: np.ndarray, k: int) -> float:
    """Video time of an event first visible in frame k: between frames k-1 and k."""
    if k <= 0:
        return float(frame_times_s[0])
    return float(0.5 * (frame_times_s[k - 1] + frame_times_s[k]))


def detect_flashes(brightness: np.ndarray) -> list[int]:
    """First frame of each flash: luma jumps by FLASH_MIN_RISE over the frame before."""
    b = np.asarray(brightness, dtype=np.float64)
    ok = np.isfinite(b)
    idx = np.flatnonzero(ok)
    if idx.size < 2:
        return []
    vals = b[idx]
    rise = np.flatnonzero(np.diff(vals) >= FLASH_MIN_RISE) + 1
    return [int(idx[r]) for r in rise]


@dataclass
class ClockFit:
    """t_sensor = a * t_video + b, with the anchors' residuals (s)."""

    a: float = 1.0
    b: float = 0.0
    residuals_s: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def drift_ppm(self) -> float:
        return (self.a - 1.0) * 1e6

    @property
    def rms_s(self) -> float:
        r = self.residuals_s
        return float(np.sqrt(np.mean(r * r))) if r.size else 0.0

    def sensor_time(self, t_video):
        return self.a * np.asarray(t_video, dtype=np.float64) + self.b

    def video_time(self, t_sensor):
        return (np.asarray(t_sensor, dtype=np.float64) - self.b) / self.a


def fit_clock(t_video, t_sensor) -> ClockFit:
    """Least-squares fit of t_sensor = a t_video + b (offset only with one anchor)."""
    tv = np.asarray(t_video, dtype=np.float64).reshape(-1)
    ts = np.asarray(t_sensor, dtype=np.float64).reshape(-1)
    if tv.size != ts.size:
        raise ValueError("anchors need as many video as sensor times")
    if tv.size == 0:
        return ClockFit()
    if tv.size == 1 or np.ptp(tv) < 1e-6:
        b = float(np.mean(ts - tv))
        return ClockFit(1.0, b, ts - (tv + b))
    A = np.column_stack([tv - tv.mean(), np.ones_like(tv)])  # centred: well conditioned
    (a, c), *_ = np.linalg.lstsq(A, ts, rcond=None)
    b = float(c - a * tv.mean())
    return ClockFit(float(a), b, ts - (a * tv + b))


def match_flashes(tap_times_s, flash_video_s, tolerance_s: float = 0.5) -> list[int | None]:
    """For each tap, the index of its flash (None if none fits).

    Tries every (tap, flash) pair as the offset and keeps the one under which most
    taps have a flash within tolerance_s; drift is small enough to ignore here.
    """
    taps = np.asarray(tap_times_s, dtype=np.float64)
    flashes = np.asarray(flash_video_s, dtype=np.float64)
    best: list[int | None] = [None] * len(taps)
    if not taps.size or not flashes.size:
        return best
    best_score = (0, np.inf)
    for ts in taps:
        for tv in flashes:
            b = ts - tv
            d = np.abs(taps[:, None] - b - flashes[None, :])
            j = d.argmin(axis=1)
            ok = d[np.arange(len(taps)), j] <= tolerance_s
            score = (int(ok.sum()), float(d[np.arange(len(taps)), j][ok].sum()))
            if score[0] > best_score[0] or (score[0] == best_score[0]
                                            and score[1] < best_score[1]):
                best_score = score
                best = [int(jj) if o else None for jj, o in zip(j, ok)]
    return best
