"""Annotator video seek: random frame-accurate seeks in a 30-minute 640x480 30 fps video.

    .venv/bin/python benchmarks/bench_video_seek.py [--minutes 30] [--seeks 200]

Generates the video once (H.264, a keyframe every 2 s like most cameras, cached in
the temp dir: $TMPDIR/walkerlab-bench-video/), then times host.annotate.video.
VideoReader.frame(k) for random k (cache emptied before each seek, so every seek
decodes), and checks each returned frame is frame k (the index is painted into it).
Peer in the same run: plain PyAV seek-and-decode (container.seek to the time, decode
forward converting every frame, as simple players do).
Goal (issue 9): under 50 ms per seek.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from tqdm import tqdm

from device.sim.video import encode_frames
from host.annotate.video import VideoReader

W, H, FPS = 640, 480, 30
BITS = 17


def frame_source(n: int):
    # A scene panning sideways (coarse texture, 8 px cells) with fine sensor noise:
    # roughly a 640x480 camera's bit rate (x264 crf 23, printed below).
    rng = np.random.default_rng(0)
    coarse = rng.integers(40, 220, (H // 8, (W + 512) // 8, 3)).astype(np.uint8)
    texture = np.kron(coarse, np.ones((8, 8, 1), dtype=np.uint8))
    grain = rng.integers(0, 5, (8, H, W + 512, 3), dtype=np.uint8)
    for k in range(n):
        x = (7 * k) % 512
        img = texture[:, x:x + W] + grain[k % 8, :, x:x + W]
        for b in range(BITS):
            img[8:40, 8 + b * 36:8 + b * 36 + 32] = 255 if (k >> b) & 1 else 0
        yield img


def read_number(img) -> int:
    return sum(1 << b for b in range(BITS)
               if img[14:34, 14 + b * 36:34 + b * 36].mean() > 128)


def make_video(minutes: float) -> str:
    folder = os.path.join(tempfile.gettempdir(), "walkerlab-bench-video")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "seek-%gmin-%dx%d-%dfps.mp4" % (minutes, W, H, FPS))
    if not os.path.exists(path):
        n = int(minutes * 60 * FPS)
        tmp = path + ".part.mp4"
        with tqdm(total=n, desc="encoding test video", unit="frame") as bar:
            encode_frames(tmp, frame_source(n), FPS, (W, H), "libx264", gop=2 * FPS,
                          progress=bar.update)
        os.replace(tmp, path)
    return path


def naive_seek(c, t_s: float) -> np.ndarray:
    """Peer: seek the open container to the time, decode forward converting every
    frame (default threading), as simple players do."""
    s = c.streams.video[0]
    target = int(round(t_s / float(s.time_base)))
    c.seek(target, stream=s, backward=True)
    for frame in c.decode(s):
        img = frame.to_ndarray(format="rgb24")
        if frame.pts >= target:
            return img
    raise RuntimeError("frame not found")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--seeks", type=int, default=200)
    parser.add_argument("--quick", action="store_true",
        help="small sizes, runs in seconds (CI)")
    args = parser.parse_args()
    if args.quick:
        args.minutes = 0.2
        args.seeks = 10
    path = make_video(args.minutes)
    t0 = time.perf_counter()
    reader = VideoReader(path, cache_frames=2)
    open_s = time.perf_counter() - t0
    size = os.path.getsize(path)
    print("%s: %d frames, %.0f MB (%.1f Mbit/s); opening (packet index) %.2f s"
          % (path, reader.n_frames, size / 1e6, size * 8 / 1e6 / reader.duration_s, open_s))
    rng = np.random.default_rng(1)
    ks = rng.integers(0, reader.n_frames, args.seeks)
    times = []
    for k in ks:
        reader._cache.clear()  # every seek decodes
        reader._decoder = None
        t = time.perf_counter()
        img = reader.frame(int(k))
        times.append(time.perf_counter() - t)
        assert read_number(img) == k, (read_number(img), k)
    times = np.array(times) * 1000
    import av

    container = av.open(path)
    peer = []
    for k in ks[:max(20, args.seeks // 5)]:
        t = time.perf_counter()
        img = naive_seek(container, reader.time_s[k])
        peer.append(time.perf_counter() - t)
        assert read_number(img) == k
    peer = np.array(peer) * 1000
    step = []
    reader.frame(int(ks[0]))
    for k in range(int(ks[0]) + 1, min(int(ks[0]) + 301, reader.n_frames)):
        t = time.perf_counter()
        reader.frame(k)
        step.append(time.perf_counter() - t)
    step = np.array(step) * 1000
    k0 = int(ks[0])
    peer_step = []
    for k in range(k0 + 1, min(k0 + 31, reader.n_frames)):
        t = time.perf_counter()
        naive_seek(container, reader.time_s[k])
        peer_step.append(time.perf_counter() - t)
    peer_step = np.array(peer_step) * 1000
    container.close()
    print("random seek (WalkerLab VideoReader): mean %.1f ms, median %.1f, p95 %.1f, "
          "max %.1f ms over %d seeks (all frames exact)"
          % (times.mean(), np.median(times), np.percentile(times, 95), times.max(), len(times)))
    print("random seek (plain PyAV seek+decode): mean %.1f ms, median %.1f, p95 %.1f ms "
          "over %d seeks" % (peer.mean(), np.median(peer), np.percentile(peer, 95), len(peer)))
    print("ratio plain PyAV / VideoReader (mean): %.1fx" % (peer.mean() / times.mean()))
    print("next-frame step: mean %.2f ms, max %.1f ms over %d steps"
          % (step.mean(), step.max(), len(step)))
    print("next-frame step (plain PyAV seek+decode): mean %.1f ms; ratio %.0fx"
          % (peer_step.mean(), peer_step.mean() / step.mean()))
    print("goal: mean < 50 ms per seek -> %s" % ("met" if times.mean() < 50 else "MISSED"))


if __name__ == "__main__":
    main()
