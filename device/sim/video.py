"""Synthetic video of a simulated session: test media for the annotator.

A camera on the walker looking down at the user's feet (the thesis's rear camera,
section 6.1.3): the floor slides by as the wheels roll, the feet step in time with
the distance walked, a disc at each leg grows with its load, the current activity is
written in the corner, and a sync tap (a knock on the frame) fires a white flash.

The camera has its own clock: frame k is captured at video time k / fps, which is
session (sensor) time ``t_sensor = a * t_video + b`` with ``a = 1 + drift_ppm * 1e-6``
and ``b = offset_s``. A flash lights the frames captured during FLASH_S after the
tap, so the first flash frame is the first one captured at or after the tap.

Frames are numpy arrays (no drawing library needed); encoding uses PyAV.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

FLASH_S = 0.12  # how long a tap's flash stays lit
STRIDE_M = 0.5  # one step of each foot per this much distance
FLOOR_STRIPE_M = 0.25

# 5x7 bitmap font: enough for activity codes, times and short words.
_FONT = {
    "A": "01110100011000111111100011000110001", "B": "11110100011000111110100011000111110",
    "C": "01110100011000010000100001000101110", "D": "11110100011000110001100011000111110",
    "E": "11111100001000011110100001000011111", "F": "11111100001000011110100001000010000",
    "G": "01110100011000010111100011000101111", "H": "10001100011000111111100011000110001",
    "I": "01110001000010000100001000010001110", "J": "00111000100001000010000101001001100",
    "K": "10001100101010011000101001001010001", "L": "10000100001000010000100001000011111",
    "M": "10001110111010110101100011000110001", "N": "10001110011010110011100011000110001",
    "O": "01110100011000110001100011000101110", "P": "11110100011000111110100001000010000",
    "Q": "01110100011000110001101011001001101", "R": "11110100011000111110101001001010001",
    "S": "01111100001000001110000010000111110", "T": "11111001000010000100001000010000100",
    "U": "10001100011000110001100011000101110", "V": "10001100011000110001100010101000100",
    "W": "10001100011000110101101011101110001", "X": "10001100010101000100010101000110001",
    "Y": "10001100010101000100001000010000100", "Z": "11111000010001000100010001000011111",
    "0": "01110100011001110101110011000101110", "1": "00100011000010000100001000010001110",
    "2": "01110100010000100010001000100011111", "3": "11111000100010000010000011000101110",
    "4": "00010001100101010010111110001000010", "5": "11111100001111000001000011000101110",
    "6": "00110010001000011110100011000101110", "7": "11111000010001000100010000100001000",
    "8": "01110100011000101110100011000101110", "9": "01110100011000101111000010001001100",
    ".": "00000000000000000000000000110001100", ":": "00000011000110000000011000110000000",
    "-": "00000000000000011111000000000000000", " ": "0" * 35,
}
_GLYPHS = {ch: np.array([int(b) for b in bits], dtype=bool).reshape(7, 5)
           for ch, bits in _FONT.items()}


def draw_text(img: np.ndarray, text: str, x: int, y: int, scale: int, color) -> None:
    """Write text (upper-cased; unknown characters as blanks) at (x, y), top-left."""
    for ch in text.upper():
        glyph = _GLYPHS.get(ch, _GLYPHS[" "])
        big = np.kron(glyph, np.ones((scale, scale), dtype=bool))
        h, w = big.shape
        y0, x0 = max(y, 0), max(x, 0)
        y1, x1 = min(y + h, img.shape[0]), min(x + w, img.shape[1])
        if y1 > y0 and x1 > x0:
            img[y0:y1, x0:x1][big[y0 - y:y1 - y, x0 - x:x1 - x]] = color
        x += 6 * scale


def _disc(img, cx, cy, r, color) -> None:
    h, w = img.shape[:2]
    x0, x1 = max(int(cx - r), 0), min(int(cx + r) + 1, w)
    y0, x1y = max(int(cy - r), 0), min(int(cy + r) + 1, h)
    if x1 <= x0 or x1y <= y0:
        return
    yy, xx = np.ogrid[y0:x1y, x0:x1]
    img[y0:x1y, x0:x1][(xx - cx) ** 2 + (yy - cy) ** 2 <= r * r] = color


def _ellipse(img, cx, cy, rx, ry, color) -> None:
    h, w = img.shape[:2]
    x0, x1 = max(int(cx - rx), 0), min(int(cx + rx) + 1, w)
    y0, y1 = max(int(cy - ry), 0), min(int(cy + ry) + 1, h)
    if x1 <= x0 or y1 <= y0:
        return
    yy, xx = np.ogrid[y0:y1, x0:x1]
    img[y0:y1, x0:x1][((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 <= 1.0] = color


@dataclass
class SessionScene:
    """What the camera sees, sampled at the sensors' times (session time base, s)."""

    time_s: np.ndarray  # (n,) increasing
    loads_n: np.ndarray  # (n, 4) FR, FL, RL, RR
    distance_m: np.ndarray  # (n,) wheel distance rolled
    labels: np.ndarray  # (n,) activity code ('' = none)
    taps_s: np.ndarray  # sync tap times

    def at(self, t_s: float) -> int:
        """Index of the sample shown at session time t_s (-1 outside the session)."""
        if not len(self.time_s) or t_s < self.time_s[0] or t_s > self.time_s[-1]:
            return -1
        return int(np.searchsorted(self.time_s, t_s, side="right") - 1)


def render_frame(scene: SessionScene, t_s: float, size=(160, 120), flash: bool = False
                 ) -> np.ndarray:
    """One RGB frame (H, W, 3) uint8 of the scene at session time t_s."""
    w, h = size
    img = np.empty((h, w, 3), dtype=np.uint8)
    if flash:
        img[:] = 255
        return img
    i = scene.at(t_s)
    s = h / 120.0  # layout is designed at 160x120 and scaled
    if i < 0:
        img[:] = (20, 20, 24)
        draw_text(img, "NO DATA", int(4 * s), int(4 * s), max(1, int(s)), (160, 160, 160))
        return img
    img[:] = (70, 72, 78)
    # Floor stripes move towards the camera as the walker rolls forward.
    px_per_m = 120 * s
    shift = (scene.distance_m[i] * px_per_m) % (FLOOR_STRIPE_M * px_per_m)
    y = shift
    while y < h:
        img[int(y):int(y) + max(1, int(2 * s))] = (90, 92, 100)
        y += FLOOR_STRIPE_M * px_per_m
    # Walker frame (top-down, front at the top) and its legs, scaled by load.
    cx, top, bottom = w / 2, 18 * s, 100 * s
    half = 46 * s
    img[int(top):int(top + 3 * s), int(cx - half):int(cx + half)] = (200, 200, 210)
    for side in (-1, 1):
        x = int(cx + side * half)
        img[int(top):int(bottom), max(x - int(1.5 * s), 0):x + int(1.5 * s)] = (200, 200, 210)
    legs = ((cx + half, top), (cx - half, top), (cx - half, bottom), (cx + half, bottom))
    for (lx, ly), load in zip(legs, scene.loads_n[i]):
        r = (2.5 + float(np.clip(load, 0, 400)) / 25.0) * s
        _disc(img, lx, ly, r, (230, 120, 60))
    # Feet step with the distance walked (left and right in antiphase).
    phase = 2 * math.pi * scene.distance_m[i] / STRIDE_M
    for side in (-1, 1):
        fy = (88 + side * 8 * math.sin(phase)) * s
        _ellipse(img, cx + side * 14 * s, fy, 6 * s, 11 * s, (40, 40, 45))
    draw_text(img, scene.labels[i] or "-", int(3 * s), int(3 * s), max(1, int(2 * s)),
              (255, 255, 90))
    return img


@dataclass
class VideoClock:
    """t_sensor = a * t_video + b, the ground truth of a rendered video."""

    a: float
    b: float
    fps: float
    n_frames: int

    def sensor_time(self, t_video):
        return self.a * np.asarray(t_video, dtype=np.float64) + self.b

    def video_time(self, t_sensor):
        return (np.asarray(t_sensor, dtype=np.float64) - self.b) / self.a


def flash_frames(taps_s, clock: VideoClock) -> np.ndarray:
    """Indices of the frames lit by a flash (captured within FLASH_S after a tap)."""
    out = []
    for tap in np.asarray(taps_s, dtype=np.float64):
        tv = float(clock.video_time(tap))
        k = math.ceil(tv * clock.fps - 1e-9)
        while k / clock.fps < tv + FLASH_S / clock.a:
            if 0 <= k < clock.n_frames:
                out.append(k)
            k += 1
    return np.unique(np.asarray(out, dtype=np.int64))


def encode_frames(path, frames, fps: int, size, codec: str = "libx264",
                  gop: int | None = None, progress=None) -> None:
    """Encode an iterable of RGB frames; frame k gets pts k (time base 1/fps)."""
    import av

    w, h = size
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(codec, rate=Fraction(fps).limit_denominator(1000))
        stream.width, stream.height = w, h
        stream.pix_fmt = "yuv420p"
        stream.gop_size = gop or int(round(2 * fps))  # a keyframe every 2 s, like cameras
        if codec == "libx264":
            stream.options = {"preset": "ultrafast", "crf": "23", "bf": "0"}
        stream.codec_context.time_base = Fraction(1, int(round(fps)))
        for k, rgb in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts = k
            for packet in stream.encode(frame):
                container.mux(packet)
            if progress is not None:
                progress(1)
        for packet in stream.encode():
            container.mux(packet)


def render_session_video(scene: SessionScene, path, *, fps: int = 10, size=(160, 120),
                         offset_s: float = 0.0, drift_ppm: float = 0.0,
                         codec: str = "libx264", progress=None) -> VideoClock:
    """Render and encode the whole session (plus a second either side); return the
    camera clock (the truth the synchronisation must recover)."""
    a = 1.0 + drift_ppm * 1e-6
    end_v = (scene.time_s[-1] + 1.0 - offset_s) / a
    n = max(1, int(math.ceil(end_v * fps)))
    clock = VideoClock(a, offset_s, float(fps), n)
    lit = set(flash_frames(scene.taps_s, clock).tolist())
    frames = (render_frame(scene, float(clock.sensor_time(k / fps)), size, k in lit)
              for k in range(n))
    encode_frames(path, frames, fps, size, codec, progress=progress)
    return clock
