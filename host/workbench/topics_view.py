"""The workbench's *Topics* tab: LDA topics of the selected recordings' motion words
(host/topics.py). Top: the first recording's topic proportions over time as stacked
areas, under a ribbon of its activities. Bottom: the topic-by-activity heatmap (mean
topic proportions of each activity's documents over all selected recordings).

The codebook and topics are learnt off the GUI thread; the view only draws.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from host.gui.theme import activity_name, class_color

TOPIC_COLOURS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                 "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")


class TopicsResult:
    """What the view shows: the model and one session's topics over time."""

    def __init__(self, model, path, t, theta, activities):
        self.model = model
        self.path = path
        self.t = t                      # (n_docs,) document start, s
        self.theta = theta              # (n_docs, T)
        self.activities = activities    # (n_docs,) majority activity ("" unlabelled)


def compute_topics(paths, n_topics: int) -> TopicsResult:
    from host.topics import learn_topics

    model = learn_topics(paths, n_topics=n_topics, progress=False)
    t, theta, acts = model.session_topics(paths[0])
    return TopicsResult(model, paths[0], t, theta, acts)


class TopicsView(QtWidgets.QWidget):
    def __init__(self, recordings=lambda: [], parent=None) -> None:
        super().__init__(parent)
        self._recordings = recordings
        self.result: TopicsResult | None = None
        self._thread = None
        self.errors: list[str] = []
        lay = QtWidgets.QVBoxLayout(self)
        row = QtWidgets.QHBoxLayout()
        self.learn_button = QtWidgets.QPushButton("Learn topics of the selected recordings")
        self.learn_button.setToolTip("Motion words (k-means of 0.5 s windows), 10 s "
                                     "documents, LDA by Bayesian moment matching")
        self.learn_button.clicked.connect(self.learn_selected)
        self.n_topics = QtWidgets.QSpinBox()
        self.n_topics.setRange(2, len(TOPIC_COLOURS))
        self.n_topics.setValue(5)
        self.n_topics.setPrefix("topics: ")
        self.status = QtWidgets.QLabel("Tick recordings in Evaluate, then learn their topics.")
        row.addWidget(self.learn_button)
        row.addWidget(self.n_topics)
        row.addWidget(self.status, 1)
        lay.addLayout(row)
        self.time_plot = pg.PlotWidget()
        self.time_plot.setLabel("bottom", "time", units="s")
        self.time_plot.setLabel("left", "topic proportion")
        self.time_plot.addLegend(offset=(5, 5))
        self.heat_plot = pg.PlotWidget()
        self.heat_plot.setLabel("bottom", "topic")
        self.heat_plot.setLabel("left", "activity")
        self.heat_plot.setTitle("mean topic proportion of each activity's documents "
                                "(dark 0, bright 1)")
        self.heat_plot.getAxis("left").setWidth(150)  # room for activity names
        self.heatmap = pg.ImageItem()
        self.heat_plot.addItem(self.heatmap)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        split.addWidget(self.time_plot)
        split.addWidget(self.heat_plot)
        split.setSizes([450, 350])
        lay.addWidget(split, 1)

    @property
    def busy(self) -> bool:
        return self._thread is not None

    def learn_selected(self) -> bool:
        paths = list(self._recordings())
        if not paths:
            self._error("No recording selected: tick one or more in the Evaluate tab.")
            return False
        if self._thread is not None:
            return False
        from host.workbench.tasks import TaskThread

        k = self.n_topics.value()
        self._thread = TaskThread(lambda progress, cancelled: compute_topics(paths, k), self)
        self._thread.succeeded.connect(self.show_topics)
        self._thread.failed.connect(self._error)
        self._thread.finished.connect(self._done)
        self.status.setText("Learning %d topics from %d recording(s)…" % (k, len(paths)))
        self.learn_button.setEnabled(False)
        self._thread.start()
        return True

    def _done(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.deleteLater()
        self.learn_button.setEnabled(True)

    def _error(self, message: str) -> None:
        self.errors.append(message)
        self.status.setText(message)

    def show_topics(self, r: TopicsResult) -> None:
        self.result = r
        doc_s = r.model.header["doc_s"]
        edges = np.r_[r.t, r.t[-1] + doc_s] if len(r.t) else np.zeros(1)
        self.time_plot.clear()
        # stacked areas: topic k fills between the cumulative sums k-1 and k
        below = np.zeros(len(r.t))
        base = pg.PlotDataItem(edges, below.copy(), stepMode="center")
        for k in range(r.theta.shape[1]):
            top = below + r.theta[:, k]
            upper = self.time_plot.plot(edges, top, stepMode="center",
                                        pen=pg.mkPen(TOPIC_COLOURS[k], width=1),
                                        name="topic %d" % k)
            fill = pg.FillBetweenItem(base, upper, brush=pg.mkBrush(TOPIC_COLOURS[k]))
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
        self.status.setText("%s: %d documents of %g s; heatmap over %d documents of %d "
                            "recording(s)" % (r.path, len(r.t), doc_s,
                                              r.model.header["n_documents"],
                                              len(r.model.header["recordings"])))
