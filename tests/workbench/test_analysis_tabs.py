"""What every analysis tab shares: the Evaluate tab's selection, a one-line hint
instead of an empty canvas, legends beside the data, model-state colours."""
import os

import numpy as np
from PySide6 import QtCore

from host.gui.theme import ACTIVITY_COLORS, STATE_COLORS
from host.workbench.analysis_tab import NO_SELECTION


def _tabs(bench):
    return [bench.latent_view, bench.topics_view, bench.regimes_view,
            bench.hidden_states_view]


def test_tabs_follow_the_selection_and_hint_in_one_line(open_bench, exp2_paths):
    bench = open_bench(exp2_paths)
    recordings = bench.evaluate.recordings
    for tab in _tabs(bench):
        assert tab.selected_paths() == exp2_paths
        assert tab.showing_hint and tab.hint.text() and "\n" not in tab.hint.text()
    names = [os.path.basename(p) for p in exp2_paths]
    for combo in (bench.regimes_view.recording, bench.latent_view.recording):
        assert [combo.itemText(i) for i in range(combo.count())] == names
    # unticking in Evaluate empties the single-recording choices and changes the hints
    recordings.table.item(0, 0).setCheckState(QtCore.Qt.CheckState.Unchecked)
    assert bench.regimes_view.recording.count() == 2
    assert bench.topics_view.selected_paths() == exp2_paths[1:]
    recordings.set_all_checked(False)
    for tab in _tabs(bench)[:3]:
        assert tab.hint.text() == NO_SELECTION and tab.showing_hint
        assert not tab.run()  # nothing to work on: said in the status line, no thread
        assert not tab.busy and "No recording selected" in tab.errors[-1]
    assert bench.regimes_view.recording.count() == 0
    assert "tick recordings" in bench.hidden_states_view.hint.text()


def test_topic_colours_and_legend_are_apart_from_the_activities(qtbot, open_bench,
                                                               exp2_paths):
    bench = open_bench(exp2_paths[:2])
    view = bench.topics_view
    bench.tabs.setCurrentWidget(view)
    view.n_topics.setValue(4)
    assert view.learn_selected()
    qtbot.waitUntil(lambda: not view.busy, timeout=600_000)
    assert view.errors == []
    topics = [item for item in view.time_plot.listDataItems()
              if (item.name() or "").startswith("topic")]
    assert [t.name() for t in topics] == ["topic %d" % k for k in range(4)]
    pens = [t.opts["pen"].color().name() for t in topics]
    assert pens == list(STATE_COLORS[:4])
    assert not set(pens) & set(ACTIVITY_COLORS.values())
    # the legend lists the topics, then the activity ribbon's key, beside the plot
    names = view.time_view.legend_names()
    acts = sorted(set(view.result.activities) - {""})
    assert names[:4] == ["topic %d" % k for k in range(4)]
    assert len(names) == 4 + len(acts) and all(n.startswith("activity: ") for n in names[4:])
    qtbot.waitUntil(lambda: not view.time_view.legend_overlaps_data(),
                    timeout=60_000)  # once laid out
    out = os.environ.get("WALKERLAB_SCREENSHOT_DIR")
    if out:
        bench.grab().save(os.path.join(out, "workbench-topics-window.png"))


def test_latent_map_legend_is_beside_the_points(qtbot, open_bench, exp2_paths):
    bench = open_bench(exp2_paths[:1])
    view = bench.latent_view
    bench.tabs.setCurrentWidget(view)
    assert view.map_selected()
    qtbot.waitUntil(lambda: not view.busy, timeout=600_000)
    assert view.errors == [] and not view.showing_hint
    labels = view.map.windows.labels
    assert len(view.scatter_view.legend_names()) == len(set(labels))
    qtbot.waitUntil(lambda: not view.scatter_view.legend_overlaps_data(),
                    timeout=60_000)  # once laid out
    qtbot.waitUntil(lambda: not view.trace_view.legend_overlaps_data(),
                    timeout=60_000)  # once laid out
    assert np.isfinite(view.map.Z).all()
