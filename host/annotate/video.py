"""Frame-accurate video reading with PyAV: every frame addressed by its index or time.

Opening a video demuxes its packets once (no decoding) to learn every frame's
presentation time and where the keyframes are. Reading frame k then seeks to the
last keyframe at or before it and decodes forward to exactly frame k; frames read on
the way are cached (LRU), and reading the next frame continues the decoder without
seeking, so stepping and playback cost one decode per frame.

Times are the video's own clock in seconds (pts * time_base, from its first frame);
host/annotate/sync.py maps them to the recording's time base.
"""
from __future__ import annotations

import os
from collections import OrderedDict

import numpy as np

from host.errors import UserError


class VideoReader:
    """One video stream. frame(k) -> RGB (H, W, 3) uint8; time_s[k] its time (s)."""

    def __init__(self, path, cache_frames: int = 64, max_width: int | None = None) -> None:
        import av

        self.path = os.fspath(path)
        if not os.path.isfile(self.path):
            raise UserError("%s: no such video file" % self.path)
        try:
            self._container = av.open(self.path)
        except (av.FFmpegError, OSError) as exc:
            raise UserError("%s: not a video file PyAV can read (%s)"
                            % (self.path, str(exc).splitlines()[0])) from None
        if not self._container.streams.video:
            self._container.close()
            raise UserError("%s: has no video stream" % self.path)
        self._stream = self._container.streams.video[0]
        self._stream.thread_type = "FRAME"  # fastest for decode-forward seeks (benchmarks/)
        self._tb = float(self._stream.time_base)
        pts, keys = [], []
        demux = av.open(self.path)
        try:
            for packet in demux.demux(demux.streams.video[0]):
                if packet.pts is None:
                    continue
                pts.append(packet.pts)
                if packet.is_keyframe:
                    keys.append(packet.pts)
        finally:
            demux.close()
        if not pts:
            self._container.close()
            raise UserError("%s: the video stream holds no frames" % self.path)
        self.pts = np.unique(np.asarray(pts, dtype=np.int64))  # presentation order
        self._keys = np.unique(np.asarray(keys or pts[:1], dtype=np.int64))
        self._pts0 = int(self.pts[0])
        self.time_s = (self.pts - self._pts0) * self._tb
        self.n_frames = len(self.pts)
        rate = self._stream.average_rate or self._stream.guessed_rate
        self.fps = float(rate) if rate else (
            (self.n_frames - 1) / self.time_s[-1] if self.n_frames > 1 else 1.0)
        cc = self._stream.codec_context
        self.width, self.height = cc.width, cc.height
        self._max_width = max_width
        self._cache: OrderedDict[int, np.ndarray] = OrderedDict()
        self._cache_frames = max(2, cache_frames)
        self._decoder = None  # frames iterator positioned after self._next_index - 1
        self._next_index = -1
        self.seeks = 0  # number of container seeks (for tests and benchmarks)

    # ---- addressing -------------------------------------------------------------
    @property
    def duration_s(self) -> float:
        return float(self.time_s[-1]) + 1.0 / self.fps

    def index_at(self, t_s: float) -> int:
        """The frame on screen at video time t_s: the last one with time <= t_s."""
        k = int(np.searchsorted(self.time_s, t_s + 1e-9, side="right")) - 1
        return min(max(k, 0), self.n_frames - 1)

    # ---- decoding ---------------------------------------------------------------
    def _rgb(self, frame) -> np.ndarray:
        if self._max_width and frame.width > self._max_width:
            h = int(round(frame.height * self._max_width / frame.width)) // 2 * 2
            return frame.to_ndarray(format="rgb24", width=self._max_width, height=h)
        return frame.to_ndarray(format="rgb24")

    def _remember(self, k: int, img: np.ndarray) -> None:
        self._cache[k] = img
        self._cache.move_to_end(k)
        while len(self._cache) > self._cache_frames:
            self._cache.popitem(last=False)

    def frame(self, k: int) -> np.ndarray:
        """Frame k (0 <= k < n_frames) as RGB uint8, exactly that frame."""
        k = int(k)
        if not 0 <= k < self.n_frames:
            raise IndexError("frame %d outside 0..%d" % (k, self.n_frames - 1))
        hit = self._cache.get(k)
        if hit is not None:
            self._cache.move_to_end(k)
            return hit
        target = int(self.pts[k])
        key = int(self._keys[max(np.searchsorted(self._keys, target, side="right") - 1, 0)])
        # Continue decoding when the target is ahead and no keyframe lies between.
        if not (self._decoder is not None and 0 <= self._next_index <= k
                and int(self.pts[max(self._next_index, 0)]) >= key):
            self._container.seek(key, stream=self._stream, backward=True, any_frame=False)
            self._decoder = self._container.decode(self._stream)
            self._next_index = -1
            self.seeks += 1
        for frame in self._decoder:
            if frame.pts is None:
                continue
            i = int(np.searchsorted(self.pts, frame.pts))
            if i >= self.n_frames or self.pts[i] != frame.pts:
                continue
            self._next_index = i + 1
            if i < k:
                continue  # on the way: not converted, so skipping costs only the decode
            img = self._rgb(frame)
            self._remember(i, img)
            if i == k:
                return img
            break  # overshot (a frame missing in decode order): fall back to a seek
        self._decoder = None
        self._next_index = -1
        raise RuntimeError("%s: frame %d could not be decoded" % (self.path, k))

    def frame_at(self, t_s: float) -> tuple[int, np.ndarray]:
        k = self.index_at(t_s)
        return k, self.frame(k)

    def mean_brightness(self, step: int = 1, progress=None) -> np.ndarray:
        """Mean luma (0-255) of every step-th frame, decoded in one sequential pass at
        low resolution (flash detection). NaN for frames skipped."""
        import av

        out = np.full(self.n_frames, np.nan)
        with av.open(self.path) as c:
            s = c.streams.video[0]
            s.thread_type = "AUTO"
            for frame in c.decode(s):
                if frame.pts is None:
                    continue
                i = int(np.searchsorted(self.pts, frame.pts))
                if i < self.n_frames and self.pts[i] == frame.pts and i % step == 0:
                    y = frame.to_ndarray(format="gray", width=64, height=48)
                    out[i] = float(y.mean())
                if progress is not None:
                    progress(1)
        return out

    def close(self) -> None:
        self._decoder = None
        self._container.close()

    def __enter__(self) -> "VideoReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
