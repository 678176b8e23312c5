"""Synchronisation end to end: simulated taps -> detected -> flash frames -> clock fit."""
import numpy as np
import pytest

from annotate_constants import FPS
from host.annotate.sync import detect_taps, event_video_time, fit_clock
from host.recording import open_recording
from host.recording.labels import read_sync
from host.simulate import SYNC_TAP_EVENT


def _true_taps(path):
    rec = open_recording(path)
    ev = rec.link_events
    ref = rec.attrs["timestamps_reference_device_us"]
    return np.sort((ev["value"][ev["kind"] == SYNC_TAP_EVENT] - ref) * 1e-6), rec


def test_detected_taps_match_the_simulated_ones_within_a_sample(media):
    path = media[0]
    truth, rec = _true_taps(path)
    found = detect_taps(rec)
    assert len(truth) == 2 and len(found) == 2
    period = float(np.median(np.diff(rec.time_s)))
    for t_true, ev in zip(truth, found):
        assert abs(ev.t_s - t_true) <= period  # stamped mid-interval: <= half + rounding


def test_annotator_accepts_the_taps_and_recovers_offset_and_drift(open_window, session_files):
    """Done-when: within one video frame over the whole session."""
    path, video, clock = session_files
    w = open_window(path, [video])
    v = w.session.videos[0]
    assert v.flashes is not None and len(v.flashes) >= 2  # found on open
    assert w.tap_table.rowCount() == 2
    w.accept_proposals()
    fit = v.fit
    assert len(v.anchors) == 2
    tv = np.linspace(0.0, v.reader.duration_s, 2001)
    err = np.abs(fit.sensor_time(tv) - clock.sensor_time(tv))
    assert err.max() < 1.0 / FPS, err.max()
    assert fit.drift_ppm == pytest.approx(clock.a * 1e6 - 1e6, abs=1e6 / FPS / 240)
    # The anchors and the fit are stored in the recording and come back on reopening.
    stored = read_sync(path)["rear.mp4"]
    assert (stored.a, stored.b) == (fit.a, fit.b) and len(stored.anchors) == 2
    w.close()
    w2 = open_window(path, [video])
    assert w2.session.videos[0].fit.a == fit.a and w2.session.videos[0].fit.b == fit.b
    # On screen at the tap: the last frame before it; one frame step on, the flash.
    reader = w2.session.videos[0].reader
    w2.go_to_tap(1)
    assert reader.frame(w2.video_frame(0)).mean() < 200
    w2.step_frame(1)
    assert reader.frame(w2.video_frame(0)).mean() > 250


def test_manual_anchor_at_the_frame_on_screen_and_one_anchor_is_offset_only(
        open_window, session_files):
    path, video, clock = session_files
    w = open_window(path, [video])
    v = w.session.videos[0]
    k = v.flashes[0]
    w.tap_table.selectRow(0)
    w.set_cursor(float(v.reader.time_s[k]) + 1e-6)  # no fit yet: video time = rec time
    assert w.video_frame(0) == k
    w.anchor_here()
    assert v.fit.a == 1.0 and len(v.anchors) == 1
    assert v.fit.b == pytest.approx(w.session.taps[0].t_s - event_video_time(
        v.reader.time_s, k))
    assert "offset only" in w.fit_label.text()
    w.remove_anchor(0)
    assert not v.anchors and v.fit.b == 0.0


def test_fit_is_exact_on_noiseless_anchors_and_residuals_show_outliers():
    tv = np.array([1.0, 50.0, 120.0, 200.0])
    fit = fit_clock(tv, 1.0005 * tv - 2.0)
    assert fit.a == pytest.approx(1.0005, abs=1e-12) and fit.b == pytest.approx(-2.0)
    assert np.abs(fit.residuals_s).max() < 1e-9
    ts = 1.0005 * tv - 2.0
    ts[2] += 0.3  # a wrong frame picked for one tap
    assert np.argmax(np.abs(fit_clock(tv, ts).residuals_s)) == 2
    empty = fit_clock([], [])
    assert fit_clock([5.0], [7.5]).b == 2.5 and (empty.a, empty.b) == (1.0, 0.0)
