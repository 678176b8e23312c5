"""The workbench's Regimes tab: the Evaluate selection, a background fit with Cancel,
and a legend and count that are the label track's."""
import os
import threading

import numpy as np
import pytest

from host.gui.theme import ACTIVITY_COLORS, STATE_COLORS
from host.recording.labels import read_tracks


@pytest.fixture(scope="module")
def long_recording(tmp_path_factory):
    """Ten minutes of free living: enough windows for several regimes."""
    from host.simulate import simulate_to_files

    out = tmp_path_factory.mktemp("regimes")
    return str(simulate_to_files("free", 1, 3, str(out), rate_hz=50, duration_s=600,
                                 progress=False)[0])


def test_regimes_of_a_ticked_recording_legend_and_count_are_the_written_track(
        qtbot, open_bench, long_recording, tmp_path):
    import shutil

    path = str(tmp_path / os.path.basename(long_recording))
    shutil.copy(long_recording, path)
    window = open_bench([path], size=(1300, 800))
    view = window.regimes_view
    window.tabs.setCurrentWidget(view)
    assert view.recording.path() == path  # the recording ticked in Evaluate, no typing
    assert view.showing_hint and view.hint.text() == (
        "Press Discover to find the regimes of %s." % os.path.basename(path))
    view.max_regimes.setValue(10)
    view.save.setChecked(True)
    assert view.run()
    assert view.task_bar.progress.isVisible() and not view.action_button.isEnabled()
    qtbot.waitUntil(lambda: not view.busy, timeout=600_000)
    assert view.errors == [] and view.runner.outcome == "done"
    written = read_tracks(path)["discovered"]
    names = sorted({a for _, _, a in written.segments()}, key=lambda n: int(n[1:]))
    # legend, count and colours: the regimes in the track, R1..Rk, nothing more
    assert names == ["R%d" % (i + 1) for i in range(len(names))]
    assert view.view.legend_names() == names
    assert view.status.text().startswith("%d regime(s) in %d segment(s)"
                                         % (len(names), len(written)))
    qtbot.waitUntil(lambda: not view.view.legend_overlaps_data(),
                    timeout=60_000)  # once laid out
    scatters = [item for item in view.plot.listDataItems() if item.name()]
    assert [s.name() for s in scatters] == names
    brushes = [s.opts["symbolBrush"] for s in scatters]
    assert brushes == list(STATE_COLORS[:len(names)])
    assert not set(brushes) & set(ACTIVITY_COLORS.values())
    # each window drawn once, in the colour of the regime the track gives it
    labels = written.labels_at(view.result.window_t_s)
    for s in scatters:
        assert len(s.xData) == int(np.sum(labels == s.name()))
    assert not view.showing_hint
    out = os.environ.get("WALKERLAB_SCREENSHOT_DIR")
    if out:
        view.grab().save(os.path.join(out, "workbench-regimes.png"))


def test_cancel_stops_discover_before_anything_is_written(qtbot, open_bench,
                                                          long_recording, tmp_path,
                                                          monkeypatch):
    import shutil

    import host.discover

    path = str(tmp_path / "copy.h5")
    shutil.copy(long_recording, path)
    real, entered, gate = host.discover.discover, threading.Event(), threading.Event()

    def held(*args, **kwargs):  # the fit starts only once the test has pressed Cancel
        entered.set()
        assert gate.wait(120)
        return real(*args, **kwargs)

    monkeypatch.setattr(host.discover, "discover", held)
    window = open_bench([path], size=(1300, 800))
    view = window.regimes_view
    view.save.setChecked(True)
    assert view.run()
    qtbot.waitUntil(entered.is_set, timeout=600_000)
    view.task_bar.cancel_button.click()
    assert not view.task_bar.cancel_button.isEnabled()
    gate.set()
    qtbot.waitUntil(lambda: not view.busy, timeout=600_000)
    assert view.runner.outcome == "cancelled" and view.errors == []
    assert "cancelled" in view.status.text()
    assert "discovered" not in read_tracks(path)  # cancelled: nothing written
    assert view.showing_hint and view.action_button.isEnabled()
    assert not view.task_bar.progress.isVisible()
