"""The workbench's Topics tab (pytest-qt, offscreen): learn topics, draw them in
colours apart from the activities, legend beside the plot."""
import os

import numpy as np

from host.gui.theme import ACTIVITY_COLORS, STATE_COLORS


def test_topics_tab_learns_and_draws_areas_and_heatmap(qtbot, open_bench, exp2_paths):
    bench = open_bench(exp2_paths[:2])
    view = bench.topics_view
    bench.tabs.setCurrentWidget(view)
    view.n_topics.setValue(4)
    assert view.learn_selected()
    qtbot.waitUntil(lambda: not view.busy, timeout=600_000)
    assert view.errors == []
    r = view.result
    assert r.theta.shape == (len(r.t), 4)
    np.testing.assert_allclose(r.theta.sum(1), 1.0)
    # the heatmap holds one row per labelled activity, each a distribution over topics
    image = view.heatmap.image
    assert image.shape == (4, len(r.model.header["association"]))
    np.testing.assert_allclose(image.sum(0), 1.0, atol=1e-3)
    assert "documents" in view.status.text()
    # topics in model-state colours, never an activity's; the legend lists the topics,
    # then the activity ribbon's key, beside the plot
    topics = [item for item in view.time_plot.listDataItems()
              if (item.name() or "").startswith("topic")]
    assert [t.name() for t in topics] == ["topic %d" % k for k in range(4)]
    pens = [t.opts["pen"].color().name() for t in topics]
    assert pens == list(STATE_COLORS[:4])
    assert not set(pens) & set(ACTIVITY_COLORS.values())
    names = view.time_view.legend_names()
    acts = sorted(set(r.activities) - {""})
    assert names[:4] == ["topic %d" % k for k in range(4)]
    assert len(names) == 4 + len(acts) and all(n.startswith("activity: ") for n in names[4:])
    qtbot.waitUntil(lambda: not view.time_view.legend_overlaps_data(),
                    timeout=60_000)  # once laid out
    out = os.environ.get("WALKERLAB_SCREENSHOT_DIR")
    if out:
        view.grab().save(os.path.join(out, "workbench-topics.png"))


def test_topics_tab_without_selection_says_so(qtbot):
    from host.workbench.topics_view import TopicsView

    view = TopicsView(lambda: [])
    qtbot.addWidget(view)
    assert not view.learn_selected()
    assert "No recording selected" in view.errors[0]
