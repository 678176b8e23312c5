"""Annotator tests: one simulated session with sync taps and its synthetic video (known
offset and drift), shared by the tests."""
import shutil

import pytest

from annotate_constants import DRIFT_PPM, FPS, OFFSET_S


@pytest.fixture(scope="session")
def media(tmp_path_factory):
    """(recording, video, clock) of a 240 s free-living session with two sync taps."""
    from host.annotate.simulated_video import render_recording_video
    from host.simulate import simulate_to_files

    folder = tmp_path_factory.mktemp("annotate-media")
    rec = simulate_to_files("free", 1, 3, folder, duration_s=240, progress=False,
                            sync_taps_s=(2.0, -3.0))[0]
    video = folder / "rear.mp4"
    clock = render_recording_video(rec, video, fps=FPS, offset_s=OFFSET_S,
                                   drift_ppm=DRIFT_PPM, progress=False)
    return str(rec), str(video), clock


@pytest.fixture
def session_files(media, tmp_path):
    """A private copy of the media (tests write labels and syncs into it)."""
    rec, video, clock = media
    rec2 = tmp_path / "session.h5"
    shutil.copy(rec, rec2)
    return str(rec2), video, clock


@pytest.fixture
def open_window(qtbot):
    """open_window(recording, videos=()) -> a shown AnnotatorWindow, closed after."""
    from host.annotate.session import AnnotationSession
    from host.annotate.window import AnnotatorWindow

    made = []

    def make(path, videos=(), **kwargs):
        window = AnnotatorWindow(AnnotationSession(path, videos), annotator="alice",
                                 **kwargs)
        qtbot.addWidget(window)
        window.resize(1400, 800)
        window.show()
        made.append(window)
        return window

    yield make
    for window in made:
        window.close()
