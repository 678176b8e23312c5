"""The workbench's *Evaluate* tab: recordings, a recognizer and its settings, and
leave-one-subject-out runs compared side by side.

Left: the recordings (``recordings_panel``), the recognizer form (``param_form``),
the evaluation options, and Run (in a background thread, with progress and Cancel)
and Train and save. Right: the finished runs (comparison table, accuracy and
transition precision and recall against the window size, confusion matrix,
per-activity accuracy), with Export report….  The work itself is in ``runs``.
"""
from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from host.errors import UserError, user_errors
from host.gui.processing import one_line
from host.gui.settings import value
from host.gui.theme import class_color
from host.workbench.context import TabContext
from host.workbench.param_form import ParamForm
from host.workbench.params import changed_params
from host.workbench.plots import side_legend
from host.workbench.recordings_panel import RecordingsPanel
from host.workbench.runs import Run, RunConfig, execute, report_summary, train_and_save
from host.workbench.tables import frame_count, number, percent, row_table, table_item
from host.workbench.tasks import TaskBar, TaskRunner

FEATURE_SETS = (("cop", "COP + TotalLoad (cop)"), ("loadcells", "raw load cells (loadcells)"))
DECODERS = (("predict", "best sequence (Viterbi)"), ("filter", "causal filter"),
            ("smooth", "smoothed argmax"))
SCHEDULERS = (("serial", "this process (serial)"), ("local", "local Dask cluster"))
RUN_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
AUTO_TRACK = "(automatic)"


class WindowPlots(pg.GraphicsLayoutWidget):
    """Accuracy, transition precision and recall against the window size (Figure 6.5)."""

    TITLES = ("Accuracy (%)", "Transition precision", "Transition recall")

    def __init__(self, theme, parent=None) -> None:
        super().__init__(parent)
        self.plots = []
        for i, title in enumerate(self.TITLES):
            p = self.addPlot(row=0, col=i, title=title)
            p.showGrid(x=True, y=True, alpha=0.3)
            p.setLabel("bottom", "window (frames)")
            p.setMouseEnabled(x=False, y=False)
            p.hideButtons()
            self.plots.append(p)
        # the runs' legend in a column of its own, beside the plots, not over a curve
        self.legend = side_legend(self, len(self.TITLES), "8pt")
        self.plots[0].legend = self.legend
        self.set_theme(theme)

    def set_theme(self, theme) -> None:
        self.setBackground(theme.background)
        for p in self.plots:
            for axis in ("left", "bottom"):
                p.getAxis(axis).setPen(theme.muted)
                p.getAxis(axis).setTextPen(theme.foreground)
            p.setTitle(p.titleLabel.text, color=theme.foreground)
        self.legend.setLabelTextColor(theme.foreground)

    def show_runs(self, runs: list[tuple[Run, str]]) -> None:
        self.legend.clear()
        for p in self.plots:
            p.clear()
        for run, colour in runs:
            r = run.result
            windows = sorted(int(w) for w in r["accuracy_by_window"])
            acc = [100 * r["accuracy_by_window"][w] for w in windows]
            tr = r["transitions_by_window"]
            prec = [tr[w]["precision"] for w in windows]
            rec = [tr[w]["recall"] for w in windows]
            pen = pg.mkPen(colour, width=2)
            for p, ys, named in zip(self.plots, (acc, prec, rec), (True, False, False)):
                y = np.asarray(ys, dtype=float)
                p.plot(windows, y, pen=pen, symbol="o", symbolSize=5, symbolBrush=colour,
                       symbolPen=colour, connect="finite",
                       name=run.name if named else None)
        for p in self.plots[1:]:
            p.setYRange(0, 1.02, padding=0)



class EvaluateTab(QtWidgets.QSplitter):
    """Setup on the left, finished runs on the right.

    ``models_folder()``: the registry folder Train and save writes to (the Models
    tab's). Signals: ``model_saved(path)`` after Train and save.
    """

    model_saved = QtCore.Signal(str)

    def __init__(self, context: TabContext, models_folder=lambda: "", parent=None) -> None:
        super().__init__(QtCore.Qt.Orientation.Horizontal, parent)
        self.context = context
        self.models_folder = models_folder
        self.runs: list[Run] = []
        self.run_checked: dict[int, bool] = {}
        self.last_saved_model: str | None = None
        self._run_number = 0
        self.runner = TaskRunner(self)
        self.runner.started.connect(lambda name: self.context.show_status(name + "…", 0))
        self.runner.progressed.connect(self._task_progress)
        self.runner.cancelling.connect(lambda: self.context.show_status(
            "Cancelling after the fold in progress…", 0))
        self.runner.ended.connect(self._update_buttons)
        self.addWidget(self._build_setup())
        self.addWidget(self._build_results())
        self.setStretchFactor(0, 0)
        self.setStretchFactor(1, 1)
        self.setSizes([640, 960])
        self.kind_combo.setCurrentIndex(max(0, self.kind_combo.findText("hmm")))
        self._kind_changed()
        self._update_buttons()

    # ---- construction ---------------------------------------------------------------
    def _build_setup(self) -> QtWidgets.QWidget:
        left = QtWidgets.QWidget()
        lv = QtWidgets.QVBoxLayout(left)
        lv.setContentsMargins(6, 6, 6, 6)
        self.recordings = RecordingsPanel(self.context)
        self.recordings.listed.connect(self._refresh_tracks)
        self.recordings.annotator_track.connect(
            lambda track: self.track_combo.setCurrentIndex(
                max(0, self.track_combo.findData(track))))
        lv.addWidget(self.recordings, 3)

        model_box = QtWidgets.QGroupBox("Recognizer")
        mv = QtWidgets.QVBoxLayout(model_box)
        top = QtWidgets.QFormLayout()
        self.kind_combo = QtWidgets.QComboBox()
        from recognizers import RECOGNIZERS

        for kind in sorted(RECOGNIZERS):
            self.kind_combo.addItem(kind)
        self.kind_combo.currentIndexChanged.connect(self._kind_changed)
        top.addRow("Kind", self.kind_combo)
        mv.addLayout(top)
        self.param_form = ParamForm()
        scroll = QtWidgets.QScrollArea()
        scroll.setWidget(self.param_form)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        scroll.setMinimumHeight(190)
        mv.addWidget(scroll)
        self.defaults_button = QtWidgets.QPushButton("Defaults")
        self.defaults_button.setToolTip("Reset the settings to the recognizer's defaults")
        self.defaults_button.clicked.connect(self._kind_changed)
        mv.addWidget(self.defaults_button, 0, QtCore.Qt.AlignmentFlag.AlignRight)

        eval_box = QtWidgets.QGroupBox("Evaluation")
        ef = QtWidgets.QFormLayout(eval_box)
        self.feature_combo = QtWidgets.QComboBox()
        for key, text in FEATURE_SETS:
            self.feature_combo.addItem(text, key)
        self.track_combo = QtWidgets.QComboBox()
        self.track_combo.addItem(AUTO_TRACK, None)
        self.track_combo.setToolTip("Label track to learn from and score against "
                                    "(automatic: the only human track, else the "
                                    "simulator's)")
        self.decoder_combo = QtWidgets.QComboBox()
        for key, text in DECODERS:
            self.decoder_combo.addItem(text, key)
        self.own_spin = QtWidgets.QSpinBox()
        self.own_spin.setRange(0, 20)
        self.own_spin.setToolTip("Sessions of the test subject also used for training "
                                 "(thesis experiment 1: 1)")
        srow = QtWidgets.QHBoxLayout()
        self.scheduler_combo = QtWidgets.QComboBox()
        for key, text in SCHEDULERS:
            self.scheduler_combo.addItem(text, key)
        self.scheduler_combo.setToolTip("Run the folds here, or as processes of a Dask "
                                        "cluster on this machine (same metrics)")
        self.scheduler_combo.currentIndexChanged.connect(
            lambda *_: self.workers_spin.setEnabled(
                self.scheduler_combo.currentData() == "local"))
        self.workers_spin = QtWidgets.QSpinBox()
        self.workers_spin.setRange(1, 64)
        self.workers_spin.setValue(os.cpu_count() or 1)
        self.workers_spin.setPrefix("workers: ")
        self.workers_spin.setEnabled(False)
        srow.addWidget(self.scheduler_combo, 1)
        srow.addWidget(self.workers_spin)
        ef.addRow("Features", self.feature_combo)
        ef.addRow("Labels", self.track_combo)
        ef.addRow("Decoder", self.decoder_combo)
        ef.addRow("Own sessions", self.own_spin)
        ef.addRow("Run on", srow)

        both = QtWidgets.QHBoxLayout()
        both.addWidget(model_box, 1)
        both.addWidget(eval_box, 1)
        lv.addLayout(both, 2)

        row = QtWidgets.QHBoxLayout()
        self.run_button = QtWidgets.QPushButton("▶ Run leave-one-subject-out")
        self.run_button.setToolTip("Evaluate these settings on the ticked recordings (Ctrl+R)")
        self.run_button.clicked.connect(self.start_run)
        self.task_bar = TaskBar(self.runner)
        self.cancel_button = self.task_bar.cancel_button
        self.cancel_button.setToolTip("Stop after the fold in progress (Esc)")
        self.train_button = QtWidgets.QPushButton("Train and save")
        self.train_button.setToolTip("Train the selected run's settings (or, with no run "
                                     "selected, the form's) on all its recordings and save "
                                     "the model into the registry with the run's metrics")
        self.train_button.clicked.connect(self.train_selected)
        row.addWidget(self.run_button, 2)
        row.addWidget(self.task_bar)
        row.addWidget(self.train_button, 1)
        lv.addLayout(row)
        return left

    def _build_results(self) -> QtWidgets.QWidget:
        right = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        runs_box = QtWidgets.QGroupBox("Runs (ticked ones are compared)")
        rv = QtWidgets.QVBoxLayout(runs_box)
        self.runs_table = row_table()
        self.runs_table.horizontalHeader().setStretchLastSection(True)
        self.runs_table.itemChanged.connect(self._run_item_changed)
        self.runs_table.itemSelectionChanged.connect(self._run_selected)
        rv.addWidget(self.runs_table, 1)
        row = QtWidgets.QHBoxLayout()
        self.report_button = QtWidgets.QPushButton("Export report…")
        self.report_button.setToolTip("HTML report with plots and JSON metrics of the "
                                      "ticked runs (Ctrl+E)")
        self.report_button.clicked.connect(self.export_report_dialog)
        self.use_button = QtWidgets.QPushButton("Use these settings")
        self.use_button.setToolTip("Put the selected run's settings back into the form")
        self.use_button.clicked.connect(self.use_selected_settings)
        self.remove_run_button = QtWidgets.QPushButton("Remove run")
        self.remove_run_button.clicked.connect(self.remove_selected_run)
        row.addWidget(self.report_button)
        row.addWidget(self.use_button)
        row.addWidget(self.remove_run_button)
        row.addStretch(1)
        rv.addLayout(row)
        right.addWidget(runs_box)

        self.window_plots = WindowPlots(self.context.theme)
        self.window_plots.setMinimumHeight(220)
        right.addWidget(self.window_plots)

        bottom = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        conf_box = QtWidgets.QGroupBox("Confusion matrix (selected run; rows true)")
        cv = QtWidgets.QVBoxLayout(conf_box)
        self.confusion_table = QtWidgets.QTableWidget(0, 0)
        self.confusion_table.horizontalHeader().setSectionResizeMode(
            QtWidgets.QHeaderView.ResizeMode.Stretch)
        self.confusion_table.verticalHeader().setSectionResizeMode(
            QtWidgets.QHeaderView.ResizeMode.Stretch)
        self.confusion_table.setEditTriggers(
            QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        cv.addWidget(self.confusion_table)
        acc_box = QtWidgets.QGroupBox("Per-activity accuracy (ticked runs)")
        av = QtWidgets.QVBoxLayout(acc_box)
        wrow = QtWidgets.QHBoxLayout()
        wrow.addWidget(QtWidgets.QLabel("Window"))
        self.class_window_combo = QtWidgets.QComboBox()
        self.class_window_combo.currentIndexChanged.connect(self._refresh_class_table)
        wrow.addWidget(self.class_window_combo)
        wrow.addStretch(1)
        av.addLayout(wrow)
        self.class_table = QtWidgets.QTableWidget(0, 0)
        self.class_table.horizontalHeader().setSectionResizeMode(
            QtWidgets.QHeaderView.ResizeMode.Stretch)
        self.class_table.setEditTriggers(
            QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        av.addWidget(self.class_table)
        bottom.addWidget(conf_box)
        bottom.addWidget(acc_box)
        bottom.setSizes([660, 300])
        right.addWidget(bottom)
        right.setSizes([200, 300, 460])
        return right


    # ---- the configuration ----------------------------------------------------------
    def _kind_changed(self, *_) -> None:
        kind = self.kind_combo.currentText()
        if kind:
            self.param_form.set_kind(kind)

    def current_config(self) -> RunConfig:
        """The form as a RunConfig (UserError for a bad setting)."""
        sel = self.selected_recordings()
        if not sel:
            raise UserError("no recordings selected: add recordings (File ▸ Add "
                            "recordings…) and tick them")
        scheduler = self.scheduler_combo.currentData()
        kind = self.kind_combo.currentText()
        # Only what differs from the defaults: short run names, reports and commands.
        return RunConfig(tuple(r.path for r in sel), kind,
                         changed_params(kind, self.param_form.values()),
                         self.feature_combo.currentData(),
                         self.track_combo.currentData(), self.decoder_combo.currentData(),
                         self.own_spin.value(), scheduler,
                         self.workers_spin.value() if scheduler == "local" else None)

    def config_for(self, kind: str) -> RunConfig:
        """The form as a RunConfig for recognizer ``kind``: the form's settings when it
        shows that kind, else the kind's defaults (UserError for a bad setting)."""
        config = self.current_config()
        if config.kind == kind:
            return config
        return dataclasses.replace(config, kind=kind, params={})

    def set_config(self, config: RunConfig) -> None:
        """Put a configuration into the form (not the recordings)."""
        self.kind_combo.setCurrentIndex(max(0, self.kind_combo.findText(config.kind)))
        self.param_form.set_kind(config.kind)
        self.param_form.set_values(config.params)
        for combo, v in ((self.feature_combo, config.feature_set),
                         (self.track_combo, config.track),
                         (self.decoder_combo, config.decoder),
                         (self.scheduler_combo, config.scheduler)):
            combo.setCurrentIndex(max(0, combo.findData(v)))
        self.own_spin.setValue(config.own_sessions)


    # ---- the selection and background work ------------------------------------------
    def add_files(self, paths, background: bool = True) -> int:
        return self.recordings.add_files(paths, background)

    def add_folder(self, folder, background: bool = True) -> int:
        return self.recordings.add_folder(folder, background)

    def selected_recordings(self):
        return self.recordings.selected_recordings()

    def _refresh_tracks(self) -> None:
        current = self.track_combo.currentData()
        self.track_combo.clear()
        self.track_combo.addItem(AUTO_TRACK, None)
        for t in self.recordings.track_names():
            self.track_combo.addItem(t, t)
        self.track_combo.setCurrentIndex(max(0, self.track_combo.findData(current)))

    @property
    def busy(self) -> bool:
        return self.runner.busy

    def _start_task(self, name: str, fn, on_done, unit: str = "steps") -> bool:
        if self.busy:
            self.context.show_error("Busy", "%s is still running: wait or cancel it"
                                    % self.runner.name)
            return False
        self.runner.start(name, fn, on_done,
                          on_failed=lambda msg: self.context.show_error("%s failed" % name,
                                                                        msg),
                          on_cancelled=lambda: self.context.show_status(
                              "%s cancelled" % name, 6000), unit=unit)
        self._update_buttons()
        return True

    def _task_progress(self, done: int, total: int) -> None:
        self.context.show_status("%s: %d of %d %s done" % (self.runner.name, done, total,
                                                         self.runner.unit), 0)

    def cancel(self) -> None:
        self.runner.cancel()

    def wait_idle(self, timeout_ms: int | None = None) -> bool:
        """Block until the background task ends (for scripts and --screenshot)."""
        return self.runner.wait_idle(timeout_ms)

    def _update_buttons(self, *_) -> None:
        busy = self.busy
        self.run_button.setEnabled(not busy)
        self.train_button.setEnabled(not busy)
        self.report_button.setEnabled(bool(self.runs))
        self.use_button.setEnabled(self.selected_run() is not None)
        self.remove_run_button.setEnabled(self.selected_run() is not None and not busy)

    # ---- runs -----------------------------------------------------------------------
    def start_run(self) -> bool:
        """Start LOSO for the form's settings in the background (False: refused)."""
        if self.busy:
            self.context.show_error("Busy", "%s is still running: wait or cancel it"
                                    % self.runner.name)
            return False
        try:
            config = self.current_config()
            config.check()
            subjects = {r.subject for r in self.selected_recordings()}
            if len(subjects) < 2:
                raise UserError("leave-one-subject-out needs recordings of at least two "
                                "subjects; the ticked ones are all of %s"
                                % (", ".join(sorted(subjects)) or "one subject"))
        except user_errors() as exc:
            self.context.show_error("Cannot run", one_line(exc))
            return False
        self._run_number += 1
        number = self._run_number
        return self._start_task("Evaluation #%d (%s)" % (number, config.kind),
                                lambda progress, cancelled: execute(
                                    config, number, progress, cancelled),
                                self.add_run, unit="folds")

    def add_run(self, run: Run) -> None:
        """Keep a finished run, ticked for comparison and selected."""
        self.runs.append(run)
        self.run_checked[run.number] = True
        self._refresh_runs(select=len(self.runs) - 1)
        self.context.show_status("%s: accuracy %s at window 0, %s at window 25 (%.1f s)"
                                     % (run.name, percent(run.accuracy(0)),
                                        percent(run.result["accuracy_by_window"].get(25)),
                                        run.elapsed_s), 10000)

    def checked_runs(self) -> list[Run]:
        return [r for r in self.runs if self.run_checked.get(r.number, True)]

    def selected_run(self) -> Run | None:
        rows = {i.row() for i in self.runs_table.selectedIndexes()}
        if len(rows) != 1:
            return None
        row = rows.pop()
        return self.runs[row] if 0 <= row < len(self.runs) else None

    def select_run(self, index: int) -> None:
        self.runs_table.selectRow(index)

    def set_run_checked(self, index: int, on: bool) -> None:
        self.runs_table.item(index, 0).setCheckState(
            QtCore.Qt.CheckState.Checked if on else QtCore.Qt.CheckState.Unchecked)

    def _refresh_runs(self, select: int | None = None) -> None:
        rows = [r.summary_row() for r in self.runs]
        headers = list(rows[0]) if rows else ["run"]
        t = self.runs_table
        t.blockSignals(True)
        t.clear()
        t.setColumnCount(len(headers))
        t.setHorizontalHeaderLabels(headers)
        t.setRowCount(len(rows))
        for i, (run, row) in enumerate(zip(self.runs, rows)):
            colour = RUN_COLOURS[(run.number - 1) % len(RUN_COLOURS)]
            for j, (key, v) in enumerate(row.items()):
                if key.startswith("accuracy"):
                    text, right = percent(v), True
                elif key.startswith("transition"):
                    text, right = number(v), True
                elif key == "time (s)":
                    text, right = "%.1f" % v, True
                else:
                    text, right = str(v), isinstance(v, (int, float))
                it = table_item(text, right)
                if j == 0:
                    it.setFlags(it.flags() | QtCore.Qt.ItemFlag.ItemIsUserCheckable)
                    it.setCheckState(QtCore.Qt.CheckState.Checked
                                     if self.run_checked.get(run.number, True)
                                     else QtCore.Qt.CheckState.Unchecked)
                    it.setForeground(QtGui.QBrush(QtGui.QColor(colour)))
                    it.setToolTip(json.dumps(run.config.params, sort_keys=True))
                t.setItem(i, j, it)
        t.blockSignals(False)
        if select is not None and 0 <= select < len(self.runs):
            t.selectRow(select)
        self._refresh_results()

    def _run_item_changed(self, item) -> None:
        if item.column() != 0 or item.row() >= len(self.runs):
            return
        run = self.runs[item.row()]
        self.run_checked[run.number] = item.checkState() == QtCore.Qt.CheckState.Checked
        self._refresh_results()

    def _run_selected(self) -> None:
        self._refresh_confusion()
        self._update_buttons()

    def remove_selected_run(self) -> None:
        run = self.selected_run()
        if run is None:
            return
        self.runs.remove(run)
        self._refresh_runs()

    def use_selected_settings(self) -> None:
        run = self.selected_run()
        if run is not None:
            self.set_config(run.config)

    def _run_colour(self, run: Run) -> str:
        return RUN_COLOURS[(run.number - 1) % len(RUN_COLOURS)]

    def _refresh_results(self) -> None:
        checked = self.checked_runs()
        self.window_plots.show_runs([(r, self._run_colour(r)) for r in checked])
        windows = sorted({int(w) for r in checked for w in r.result["class_accuracy_by_window"]})
        current = self.class_window_combo.currentData()
        self.class_window_combo.blockSignals(True)
        self.class_window_combo.clear()
        for w in windows:
            self.class_window_combo.addItem(str(w), w)
        i = self.class_window_combo.findData(current if current is not None else 0)
        self.class_window_combo.setCurrentIndex(max(0, i))
        self.class_window_combo.blockSignals(False)
        self._refresh_class_table()
        self._refresh_confusion()
        self._update_buttons()

    def _refresh_class_table(self, *_) -> None:
        checked = self.checked_runs()
        w = self.class_window_combo.currentData()
        classes = []
        for r in checked:
            for c in r.result["classes"]:
                if c not in classes:
                    classes.append(c)
        t = self.class_table
        t.clear()
        t.setRowCount(len(classes))
        t.setColumnCount(len(checked))
        t.setHorizontalHeaderLabels(["#%d %s" % (r.number, r.config.kind) for r in checked])
        t.setVerticalHeaderLabels(classes)
        for j, r in enumerate(checked):
            per = r.result["class_accuracy_by_window"].get(w, {}) if w is not None else {}
            for i, c in enumerate(classes):
                t.setItem(i, j, table_item(percent(per.get(c)), True, tip=r.name))
            t.horizontalHeaderItem(j).setForeground(QtGui.QBrush(QtGui.QColor(
                self._run_colour(r))))
            t.horizontalHeaderItem(j).setToolTip(r.name)

    def _refresh_confusion(self) -> None:
        run = self.selected_run()
        if run is None and self.runs:
            run = self.runs[-1]
        t = self.confusion_table
        t.clear()
        if run is None:
            t.setRowCount(0)
            t.setColumnCount(0)
            return
        classes = [str(c) for c in run.result["classes"]]
        m = np.asarray(run.result["confusion"], dtype=float)
        t.setRowCount(len(classes))
        t.setColumnCount(len(classes))
        t.setHorizontalHeaderLabels(classes)
        t.setVerticalHeaderLabels(classes)
        totals = m.sum(axis=1, keepdims=True)
        share = np.divide(m, totals, out=np.zeros_like(m), where=totals > 0)
        base = QtGui.QColor(self._run_colour(run))
        for i in range(len(classes)):
            for j in range(len(classes)):
                it = table_item(frame_count(m[i, j]), True,
                           tip="true %s, predicted %s: %d frames (%.1f%% of %s)"
                           % (classes[i], classes[j], m[i, j], 100 * share[i, j],
                              classes[i]))
                it.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
                if m[i, j] > 0:
                    c = QtGui.QColor(base)
                    c.setAlphaF(0.12 + 0.75 * float(share[i, j]))
                    it.setBackground(QtGui.QBrush(c))
                t.setItem(i, j, it)
        for i, c in enumerate(classes):
            t.verticalHeaderItem(i).setForeground(QtGui.QBrush(QtGui.QColor(class_color(c))))
        t.parentWidget().setTitle("Confusion matrix of %s (rows true, window %s)"
                                  % (run.name.split(" ")[0] + " " + run.config.kind,
                                     run.result.get("confusion_window", 0)))

    # ---- report and training ----------------------------------------------------------
    def export_report_dialog(self) -> None:
        if not self.checked_runs():
            self.context.show_error("Nothing to report", "tick at least one finished run")
            return
        folder = QtWidgets.QFileDialog.getExistingDirectory(
            self, "Folder for the report",
            value(self.context.settings, "workbench/report_folder", "", str))
        if folder:
            self.export_report(folder)

    def export_report(self, folder) -> str | None:
        """Write the ticked runs' report into folder; returns the index page."""
        from host.report import write_report

        runs = self.checked_runs()
        if not runs:
            self.context.show_error("Nothing to report", "tick at least one finished run")
            return None
        index = self.context.guard("Cannot write report", write_report, folder,
                            report_summary(runs))
        if index is None:
            return None
        if self.context.persist:
            self.context.settings.setValue("workbench/report_folder", str(folder))
        self.context.show_status("Report written to %s" % index, 10000)
        return str(index)

    def train_selected(self) -> bool:
        """Train the selected run's settings (with its metrics), else the form's."""
        run = self.selected_run()
        try:
            config = run.config if run is not None else self.current_config()
            config.check()
        except user_errors() as exc:
            self.context.show_error("Cannot train", one_line(exc))
            return False
        folder = self.models_folder().strip()
        if not folder:
            self.context.show_error("Cannot train", "choose a model folder on the Models tab")
            return False
        return self._start_task("Training %s" % config.kind,
                                lambda progress, cancelled: train_and_save(
                                    config, folder, run, progress=progress),
                                self._trained)

    def _trained(self, path) -> None:
        self.last_saved_model = str(path)
        self.context.show_status("Saved model %s" % path, 10000)
        self.model_saved.emit(str(path))

