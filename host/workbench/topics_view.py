"""The workbench's *Topics* tab: LDA topics of the selected recordings' motion words
(host/topics.py). Top: the first recording's topic proportions over time as stacked
areas, under a ribbon of its activities. Bottom: the topic-by-activity heatmap (mean
topic proportions of each activity's documents over all selected recordings).

The codebook and topics are learnt off the GUI thread; the view only draws. Topics
take the model-state colours (host.gui.theme.STATE_COLORS), never an activity's;
the legend, beside the plot, lists the topics and then the ribbon's activities.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from host.gui.theme import STATE_COLORS, activity_name, class_color, state_color
from host.workbench.analysis_tab import NO_SELECTION, AnalysisTab
from host.workbench.plots import LegendPlot


class TopicsResult:
    """What the view shows: the model and one session's topics over time."""

    def __init__(self, model, path, t, theta, activities):
        self.model = model
        self.path = path
        self.t = t                      # (n_docs,) document start, s
        self.theta = theta              # (n_docs, T)
        self.activities = activities    # (n_docs,) majority activity ("" unlabelled)


def compute_topics(paths, n_topics: int, progress=lambda done, total: None) -> TopicsResult:
    """Learn the topics of ``paths``; the first one's topics over time."""
    from host.topics import learn_topics

    progress(0, 2)
    model = learn_topics(paths, n_topics=n_topics, progress=False)
    progress(1, 2)
    t, theta, acts = model.session_topics(paths[0])
    progress(2, 2)
    return TopicsResult(model, paths[0], t, theta, acts)


class TopicsView(AnalysisTab):
    """Number of topics and Learn; topics over time (legend beside) and the heatmap."""

    def __init__(self, recordings=lambda: [], theme=None, parent=None) -> None:
        super().__init__("Learn topics", recordings, theme, parent=parent)
        self.result: TopicsResult | None = None
        self.learn_button = self.action_button
        self.learn_button.setToolTip("Motion words (k-means of 0.5 s windows), 10 s "
                                     "documents, LDA by Bayesian moment matching, of the "
                                     "recordings ticked in Evaluate")
        self.n_topics = QtWidgets.QSpinBox()
        self.n_topics.setRange(2, len(STATE_COLORS))  # one distinct colour each
        self.n_topics.setValue(5)
        self.n_topics.setPrefix("topics: ")
        self.controls.addWidget(self.n_topics)
        self.time_view = LegendPlot()
        self.time_view.set_theme(self.theme)
        self.time_plot = self.time_view.plot
        self.time_plot.setLabel("bottom", "time", units="s")
        self.time_plot.setLabel("left", "topic proportion")
        self.heat_plot = pg.PlotWidget(background=self.theme.background)
        self.heat_plot.setLabel("bottom", "topic")
        self.heat_plot.setLabel("left", "activity")
        self.heat_plot.setTitle("mean topic proportion of each activity's documents "
                                "(dark 0, bright 1)", color=self.theme.foreground)
        self.heat_plot.getAxis("left").setWidth(150)  # room for activity names
        self.heatmap = pg.ImageItem()
        self.heat_plot.addItem(self.heatmap)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        split.addWidget(self.time_view)
        split.addWidget(self.heat_plot)
        split.setSizes([450, 350])
        self.set_content(split)

    def hint_text(self) -> str:
        if not self.selected_paths():
            return NO_SELECTION
        return "Press Learn topics to learn the topics of the %d ticked recording(s)." \
            % len(self.selected_paths())

    def run(self) -> bool:
        return self.learn_selected()

    def learn_selected(self) -> bool:
        """Learn the selected recordings' topics in the background (False: refused)."""
        paths = self.selected_paths()
        if not paths:
            self._error("No recording selected: tick one or more in the Evaluate tab.")
            return False
        k = self.n_topics.value()
        return self.start("Learning %d topics from %d recording(s)" % (k, len(paths)),
                          lambda progress, cancelled: compute_topics(paths, k, progress),
                          self.show_topics)

    def show_topics(self, r: TopicsResult) -> None:
        self.result = r
        doc_s = r.model.header["doc_s"]
        edges = np.r_[r.t, r.t[-1] + doc_s] if len(r.t) else np.zeros(1)
        self.time_view.clear_plot()
        # stacked areas: topic k fills between the cumulative sums k-1 and k
        below = np.zeros(len(r.t))
        base = pg.PlotDataItem(edges, below.copy(), stepMode="center")
        for k in range(r.theta.shape[1]):
            top = below + r.theta[:, k]
            upper = self.time_plot.plot(edges, top, stepMode="center",
                                        pen=pg.mkPen(state_color(k), width=1),
                                        name="topic %d" % k)
            fill = pg.FillBetweenItem(base, upper, brush=pg.mkBrush(state_color(k)))
            self.time_plot.addItem(fill)
            base, below = upper, top
        # the activity ribbon above the areas
        for i, act in enumerate(r.activities):
            if act:
                bar = QtWidgets.QGraphicsRectItem(edges[i], 1.02, doc_s, 0.1)
                bar.setBrush(pg.mkBrush(class_color(act)))
                bar.setPen(pg.mkPen(None))
                bar.setToolTip(activity_name(act))
                self.time_plot.addItem(bar)
        for act in sorted(set(r.activities) - {""}):  # the ribbon's key, below the topics
            self.time_view.legend.addItem(
                pg.ScatterPlotItem(symbol="s", size=10, pen=None,
                                   brush=pg.mkBrush(class_color(act))),
                "activity: " + activity_name(act))
        self.time_plot.setYRange(0, 1.14, padding=0)
        assoc = r.model.header["association"]
        acts = sorted(assoc)
        if acts:
            M = np.array([assoc[a] for a in acts])  # (activities, topics)
            self.heatmap.setImage(M.T, levels=(0, 1))
            self.heatmap.setColorMap(pg.colormap.get("viridis"))
            self.heat_plot.getAxis("left").setTicks(
                [[(i + 0.5, activity_name(a)) for i, a in enumerate(acts)]])
            self.heat_plot.getAxis("bottom").setTicks(
                [[(k + 0.5, str(k)) for k in range(M.shape[1])]])
        self.show_content()
        self.status.setText("%s: %d documents of %g s; heatmap over %d documents of %d "
                            "recording(s)" % (r.path, len(r.t), doc_s,
                                              r.model.header["n_documents"],
                                              len(r.model.header["recordings"])))
