"""Frame-accurate reading: every frame carries its index in big black/white blocks."""
import math

import numpy as np
import pytest

from device.sim.video import encode_frames
from host.annotate.video import VideoReader
from host.errors import UserError

BITS = 10
W, H = 160, 64


def numbered(k):
    img = np.zeros((H, W, 3), np.uint8)
    for b in range(BITS):
        if (k >> b) & 1:
            img[16:48, b * 16:(b + 1) * 16] = 255
    return img


def read_number(img):
    bits = [img[20:44, b * 16 + 3:(b + 1) * 16 - 3].mean() > 128 for b in range(BITS)]
    return sum(1 << b for b, on in enumerate(bits) if on)


@pytest.fixture(scope="module", params=["libx264-bframes", "mpeg4"])
def video(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("video") / ("n-%s.mp4" % request.param)
    n = 300
    if request.param == "mpeg4":
        encode_frames(path, (numbered(k) for k in range(n)), 25, (W, H), "mpeg4", gop=25)
    else:
        import av
        from fractions import Fraction
        with av.open(str(path), "w") as c:  # x264 defaults: B-frames, reordered decode
            s = c.add_stream("libx264", rate=25)
            s.width, s.height, s.pix_fmt = W, H, "yuv420p"
            s.gop_size = 30
            s.codec_context.time_base = Fraction(1, 25)
            for k in range(n):
                f = __import__("av").VideoFrame.from_ndarray(numbered(k), format="rgb24")
                f.pts = k
                for p in s.encode(f):
                    c.mux(p)
            for p in s.encode():
                c.mux(p)
    return str(path), n


def test_random_seeks_return_exactly_the_frame_asked_for(video):
    path, n = video
    with VideoReader(path, cache_frames=8) as r:
        assert r.n_frames == n and r.fps == pytest.approx(25)
        assert np.allclose(r.time_s, np.arange(n) / 25)
        rng = np.random.default_rng(0)
        for k in rng.integers(0, n, 60):
            assert read_number(r.frame(int(k))) == k
        for k in (n - 1, 0, n - 1, 1):
            assert read_number(r.frame(k)) == k


def test_stepping_forward_decodes_without_seeking(video):
    path, n = video
    with VideoReader(path, cache_frames=4) as r:
        r.frame(100)
        seeks = r.seeks
        for k in range(101, 160):
            assert read_number(r.frame(k)) == k
        assert r.seeks == seeks
        for k in range(159, 140, -1):  # stepping back: at most one seek per keyframe span
            assert read_number(r.frame(k)) == k
        assert r.seeks - seeks <= 20


def test_frame_on_screen_at_a_time(video):
    path, n = video
    with VideoReader(path) as r:
        assert r.index_at(0.0) == 0 and r.index_at(0.0399) == 0 and r.index_at(0.04) == 1
        assert r.index_at(-5) == 0 and r.index_at(1e6) == n - 1
        k, img = r.frame_at(2.0)
        assert k == 50 and read_number(img) == 50
        with pytest.raises(IndexError):
            r.frame(n)


def test_not_a_video_is_a_clear_error(tmp_path):
    bad = tmp_path / "x.mp4"
    bad.write_bytes(b"not a video at all" * 10)
    with pytest.raises(UserError, match="not a video file"):
        VideoReader(bad)
    with pytest.raises(UserError, match="no such video"):
        VideoReader(tmp_path / "missing.mp4")


def test_flash_frames_follow_the_camera_clock():
    from device.sim.video import VideoClock, flash_frames

    clock = VideoClock(a=1.001, b=-2.0, fps=10.0, n_frames=10_000)
    for tap in (3.0, 100.02, 500.5):
        frames = flash_frames([tap], clock)
        tv = (tap + 2.0) / 1.001
        assert frames[0] == math.ceil(tv * 10)  # first frame captured at/after the tap
        assert (frames[0] - 1) / 10 < tv <= frames[0] / 10
