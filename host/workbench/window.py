"""The Workbench window: recordings, a recognizer and its settings, LOSO runs, models.

Two tabs.  *Evaluate*: the recordings table with filters, the recognizer form, Run
(leave-one-subject-out in a background thread, with progress and Cancel), and the
finished runs side by side (comparison table, accuracy and transition precision and
recall against the window size, confusion matrix, per-activity accuracy), with
Export report… and Train and save.  *Models*: the registry folder's models, with Open
in live monitor and Deploy to walker….  The work itself is in ``catalog``, ``params``
and ``runs``; this module only shows it.
"""
from __future__ import annotations

import json
import math
import os
import time
import traceback

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from host.errors import UserError, user_errors
from host.gui.dialogs import guarded, open_error_box
from host.gui.processing import one_line
from host.gui.settings import open_settings, value
from host.gui.theme import apply_application_theme, class_color
from host.workbench import catalog
from host.workbench.params import changed_params, format_value, param_fields, parse_value
from host.workbench.runs import (TRANSITION_WINDOW, Cancelled, Run, RunConfig, execute,
                                 report_summary, train_and_save)

DEFAULT_SIZE = (1600, 1000)
FEATURE_SETS = (("cop", "COP + TotalLoad (cop)"), ("loadcells", "raw load cells (loadcells)"))
DECODERS = (("predict", "best sequence (Viterbi)"), ("filter", "causal filter"),
            ("smooth", "smoothed argmax"))
SCHEDULERS = (("serial", "this process (serial)"), ("local", "local Dask cluster"))
RUN_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
AUTO_TRACK = "(automatic)"


class TaskThread(QtCore.QThread):
    """Runs fn(progress, cancelled) off the GUI thread; reports through signals."""

    progressed = QtCore.Signal(int, int)
    succeeded = QtCore.Signal(object)
    failed = QtCore.Signal(str)
    cancelled_ = QtCore.Signal()

    def __init__(self, fn, parent=None) -> None:
        super().__init__(parent)
        self.fn = fn
        self._cancel = False

    def cancel(self) -> None:
        self._cancel = True

    def run(self) -> None:
        try:
            out = self.fn(lambda done, total: self.progressed.emit(done, total),
                          lambda: self._cancel)
        except Cancelled:
            self.cancelled_.emit()
        except user_errors() as exc:
            self.failed.emit(one_line(exc))
        except (ValueError, OSError) as exc:
            self.failed.emit(one_line(exc))
        except Exception as exc:  # a bug: say so in one line, the details go to stderr
            traceback.print_exc()
            self.failed.emit("unexpected error: %s: %s" % (type(exc).__name__, one_line(exc)))
        else:
            self.succeeded.emit(out)


def _item(text, align_right: bool = False, tip: str = "") -> QtWidgets.QTableWidgetItem:
    it = QtWidgets.QTableWidgetItem(text)
    it.setFlags(it.flags() & ~QtCore.Qt.ItemFlag.ItemIsEditable)
    if align_right:
        it.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight
                            | QtCore.Qt.AlignmentFlag.AlignVCenter)
    if tip:
        it.setToolTip(tip)
    return it


def _pct(x) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else "%.1f%%" % (100 * x)


def _count(n) -> str:
    """A frame count short enough for a confusion cell (12345 -> 12.3k)."""
    return "%d" % n if n < 10000 else "%.1fk" % (n / 1000) if n < 1e6 else "%.1fM" % (n / 1e6)


def _num(x, fmt="%.3f") -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt % x


class ParamForm(QtWidgets.QWidget):
    """A recognizer's settings, generated from its parameter constraints."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.form = QtWidgets.QFormLayout(self)
        self.form.setContentsMargins(0, 0, 0, 0)
        self.kind = None
        self.fields = []
        self.editors = {}

    def set_kind(self, kind: str) -> None:
        while self.form.rowCount():
            self.form.removeRow(0)
        self.kind = kind
        self.fields = param_fields(kind)
        self.editors = {}
        for f in self.fields:
            if f.widget == "choice":
                ed = QtWidgets.QComboBox()
                for opt in f.options:
                    ed.addItem("auto" if opt is None else str(opt), opt)
                ed.setCurrentIndex(max(0, ed.findData(f.default)))
            elif f.widget == "bool":
                ed = QtWidgets.QCheckBox()
                ed.setChecked(bool(f.default))
            else:
                ed = QtWidgets.QLineEdit(format_value(f.default))
                if f.optional:
                    ed.setPlaceholderText("auto")
            ed.setToolTip("%s: %s (default %s)" % (f.name, f.hint, f.default))
            self.editors[f.name] = ed
            self.form.addRow(f.name, ed)

    def values(self) -> dict:
        """Every setting as typed (UserError naming a bad one)."""
        out = {}
        for f in self.fields:
            ed = self.editors[f.name]
            if f.widget == "choice":
                out[f.name] = ed.currentData()
            elif f.widget == "bool":
                out[f.name] = ed.isChecked()
            else:
                out[f.name] = parse_value(f, ed.text())
        return out

    def set_values(self, params: dict) -> None:
        for f in self.fields:
            if f.name not in params:
                continue
            ed, v = self.editors[f.name], params[f.name]
            if f.widget == "choice":
                ed.setCurrentIndex(max(0, ed.findData(v)))
            elif f.widget == "bool":
                ed.setChecked(bool(v))
            else:
                ed.setText(format_value(v))


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
        self.plots[0].addLegend(offset=(-5, -5), labelTextSize="8pt")
        self.set_theme(theme)

    def set_theme(self, theme) -> None:
        self.setBackground(theme.background)
        for p in self.plots:
            for axis in ("left", "bottom"):
                p.getAxis(axis).setPen(theme.muted)
                p.getAxis(axis).setTextPen(theme.foreground)
            p.setTitle(p.titleLabel.text, color=theme.foreground)

    def show_runs(self, runs: list[tuple[Run, str]]) -> None:
        for p in self.plots:
            p.clear()
            if p.legend is not None:
                p.legend.clear()
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


class WorkbenchWindow(QtWidgets.QMainWindow):
    """The workbench; ``monitor``: the live monitor window it was opened from, if any."""

    def __init__(self, files=(), models_dir=None, settings=None, monitor=None,
                 persist: bool = True, restore_layout: bool = True) -> None:
        super().__init__()
        self.setWindowTitle("WalkerLab — training and evaluation workbench")
        self.settings = settings if settings is not None else open_settings()
        self.persist = persist
        self.monitor = monitor
        self.theme = apply_application_theme(QtWidgets.QApplication.instance())
        self.recordings: list[catalog.RecordingInfo] = []
        self._checked: set[str] = set()  # ticked recordings (paths), filtered or not
        self.runs: list[Run] = []
        self.run_checked: dict[int, bool] = {}
        self.thread: TaskThread | None = None
        self.task_name = ""
        self.errors_shown: list[str] = []
        self.last_error: str | None = None
        self._error_box = None
        self._monitor_windows = []  # monitors we opened (kept alive)
        self.last_saved_model: str | None = None
        self._run_number = 0
        self._build()
        self._build_actions()
        self.resize(*DEFAULT_SIZE)
        if restore_layout:
            geometry = self.settings.value("workbench/geometry")
            if geometry is not None:
                self.restoreGeometry(geometry)
        folder = models_dir or (value(self.settings, "workbench/models_dir", "", str)
                                if restore_layout else "")
        if not folder:
            from host.models import default_models_dir

            folder = str(default_models_dir())
        self.models_folder.setText(str(folder))
        self.kind_combo.setCurrentIndex(max(0, self.kind_combo.findText("hmm")))
        self._kind_changed()
        if files:
            self.add_files(files)
        self.refresh_models()
        self._update_buttons()

    # ---- construction ---------------------------------------------------------------
    def _build(self) -> None:
        self.tabs = QtWidgets.QTabWidget()
        self.setCentralWidget(self.tabs)
        self.tabs.addTab(self._build_evaluate(), "Evaluate")
        self.tabs.addTab(self._build_models(), "Models")
        from host.workbench.latent_view import LatentMapView
        self.latent_view = LatentMapView(lambda: [r.path for r in self.selected_recordings()])
        self.tabs.addTab(self.latent_view, "Latent map")
        from host.workbench.topics_view import TopicsView
        self.topics_view = TopicsView(lambda: [r.path for r in self.selected_recordings()])
        self.tabs.addTab(self.topics_view, "Topics")
        from host.workbench.regimes_view import RegimesView
        self.regimes_view = RegimesView()
        self.tabs.addTab(self.regimes_view, "Regimes")
        from host.workbench.hidden_states_view import HiddenStatesView
        self.hidden_states_view = HiddenStatesView()
        self.tabs.addTab(self.hidden_states_view, "Hidden states")
        self.progress = QtWidgets.QProgressBar()
        self.progress.setMaximumWidth(260)
        self.progress.setVisible(False)
        self.statusBar().addPermanentWidget(self.progress)

    def _build_evaluate(self) -> QtWidgets.QWidget:
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        split.addWidget(self._build_setup())
        split.addWidget(self._build_results())
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        split.setSizes([640, 960])
        self.eval_split = split
        return split

    def _build_setup(self) -> QtWidgets.QWidget:
        left = QtWidgets.QWidget()
        lv = QtWidgets.QVBoxLayout(left)
        lv.setContentsMargins(6, 6, 6, 6)

        rec_box = QtWidgets.QGroupBox("Recordings")
        rv = QtWidgets.QVBoxLayout(rec_box)
        row = QtWidgets.QHBoxLayout()
        self.add_files_button = QtWidgets.QPushButton("Add files…")
        self.add_files_button.clicked.connect(self.add_files_dialog)
        self.add_folder_button = QtWidgets.QPushButton("Add folder…")
        self.add_folder_button.clicked.connect(self.add_folder_dialog)
        self.remove_button = QtWidgets.QPushButton("Remove")
        self.remove_button.setToolTip("Take the highlighted recordings off the list")
        self.remove_button.clicked.connect(self.remove_selected_recordings)
        for b in (self.add_files_button, self.add_folder_button, self.remove_button):
            row.addWidget(b)
        row.addStretch(1)
        rv.addLayout(row)
        filt = QtWidgets.QGridLayout()
        self.filters = {}
        for i, (key, label) in enumerate((("subject", "Subject"), ("walker", "Walker"),
                                          ("annotator", "Annotator"),
                                          ("label_set", "Label set"))):
            combo = QtWidgets.QComboBox()
            combo.addItem("all", catalog.ANY)
            combo.currentIndexChanged.connect(self._filters_changed)
            self.filters[key] = combo
            filt.addWidget(QtWidgets.QLabel(label), i // 2, 2 * (i % 2))
            filt.addWidget(combo, i // 2, 2 * (i % 2) + 1)
        filt.setColumnStretch(1, 1)
        filt.setColumnStretch(3, 1)
        rv.addLayout(filt)
        self.table = QtWidgets.QTableWidget(0, 6)
        self.table.setHorizontalHeaderLabels(["Recording", "Subject", "Walker",
                                              "Labels (annotator)", "Label set",
                                              "Duration"])
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        hh.setStretchLastSection(True)
        self.table.itemChanged.connect(self._table_item_changed)
        self.table.setToolTip("Tick the recordings to use; the filters above narrow the list")
        rv.addWidget(self.table, 1)
        self.selection_label = QtWidgets.QLabel()
        rv.addWidget(self.selection_label)
        lv.addWidget(rec_box, 3)

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
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop after the fold in progress (Esc)")
        self.cancel_button.clicked.connect(self.cancel)
        self.train_button = QtWidgets.QPushButton("Train and save")
        self.train_button.setToolTip("Train the selected run's settings (or, with no run "
                                     "selected, the form's) on all its recordings and save "
                                     "the model into the registry with the run's metrics")
        self.train_button.clicked.connect(self.train_selected)
        row.addWidget(self.run_button, 2)
        row.addWidget(self.cancel_button)
        row.addWidget(self.train_button, 1)
        lv.addLayout(row)
        return left

    def _build_results(self) -> QtWidgets.QWidget:
        right = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        runs_box = QtWidgets.QGroupBox("Runs (ticked ones are compared)")
        rv = QtWidgets.QVBoxLayout(runs_box)
        self.runs_table = QtWidgets.QTableWidget(0, 0)
        self.runs_table.verticalHeader().setVisible(False)
        self.runs_table.setSelectionBehavior(
            QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.runs_table.setSelectionMode(
            QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        hh = self.runs_table.horizontalHeader()
        hh.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        hh.setStretchLastSection(True)
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

        self.window_plots = WindowPlots(self.theme)
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

    def _build_models(self) -> QtWidgets.QWidget:
        w = QtWidgets.QWidget()
        v = QtWidgets.QVBoxLayout(w)
        row = QtWidgets.QHBoxLayout()
        row.addWidget(QtWidgets.QLabel("Model folder"))
        self.models_folder = QtWidgets.QLineEdit()
        self.models_folder.editingFinished.connect(self.refresh_models)
        browse = QtWidgets.QPushButton("Change…")
        browse.clicked.connect(self.choose_models_folder)
        refresh = QtWidgets.QPushButton("Refresh")
        refresh.clicked.connect(self.refresh_models)
        row.addWidget(self.models_folder, 1)
        row.addWidget(browse)
        row.addWidget(refresh)
        v.addLayout(row)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        self.models_table = QtWidgets.QTableWidget(0, 10)
        self.models_table.setHorizontalHeaderLabels(
            ["Model", "Kind", "Features", "Classes", "Recordings", "LOSO w0", "LOSO w25",
             "Trained at", "App version", "On walker"])
        self.models_table.verticalHeader().setVisible(False)
        self.models_table.setSelectionBehavior(
            QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.models_table.setSelectionMode(
            QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.models_table.setEditTriggers(
            QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        hh = self.models_table.horizontalHeader()
        hh.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        hh.setSectionResizeMode(3, QtWidgets.QHeaderView.ResizeMode.Stretch)  # classes
        self.models_table.itemSelectionChanged.connect(self._model_selected)
        self.models_table.doubleClicked.connect(lambda *_: self.open_in_monitor())
        split.addWidget(self.models_table)
        self.model_details = QtWidgets.QPlainTextEdit()
        self.model_details.setReadOnly(True)
        self.model_details.setPlaceholderText("Select a model to see where it came from")
        font = QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont)
        self.model_details.setFont(font)
        split.addWidget(self.model_details)
        split.setSizes([320, 580])
        v.addWidget(split, 1)
        row = QtWidgets.QHBoxLayout()
        self.open_monitor_button = QtWidgets.QPushButton("Open in live monitor")
        self.open_monitor_button.setToolTip("Run the selected model live")
        self.open_monitor_button.clicked.connect(self.open_in_monitor)
        self.deploy_button = QtWidgets.QPushButton("Deploy to walker…")
        self.deploy_button.setToolTip("Upload the selected HMM to a walker's on-device "
                                      "recognizer")
        self.deploy_button.clicked.connect(self.deploy_dialog)
        self.models_problems = QtWidgets.QLabel()
        self.models_problems.setWordWrap(True)
        row.addWidget(self.open_monitor_button)
        row.addWidget(self.deploy_button)
        row.addWidget(self.models_problems, 1)
        v.addLayout(row)
        self.model_entries = []
        return w

    def _build_actions(self) -> None:
        mb = self.menuBar()
        fm = mb.addMenu("&File")
        rm = mb.addMenu("&Run")
        self.actions_by_name = a = {}

        def act(name, text, shortcut, slot, menu):
            action = QtGui.QAction(text, self)
            if shortcut:
                action.setShortcut(QtGui.QKeySequence(shortcut))
            action.triggered.connect(lambda *_: slot())
            menu.addAction(action)
            self.addAction(action)
            a[name] = action

        act("add_files", "&Add recordings…", "Ctrl+O", self.add_files_dialog, fm)
        act("add_folder", "Add &folder…", "Ctrl+Shift+O", self.add_folder_dialog, fm)
        act("report", "&Export report…", "Ctrl+E", self.export_report_dialog, fm)
        fm.addSeparator()
        act("close", "&Close", "Ctrl+Q", self.close, fm)
        act("run", "&Run leave-one-subject-out", "Ctrl+R", self.start_run, rm)
        act("cancel", "&Cancel", "Esc", self.cancel, rm)
        act("train", "&Train and save", "Ctrl+T", self.train_selected, rm)

    # ---- errors ---------------------------------------------------------------------
    def show_error(self, title: str, message: str) -> None:
        """A one-line message in a non-blocking dialog; never a traceback."""
        message = message.strip().splitlines()[0] if message.strip() else title
        self.last_error = message
        self.errors_shown.append(message)
        self.statusBar().showMessage(message, 8000)
        open_error_box(self, title, message)

    def _guard(self, title: str, fn, *args):
        """fn(*args), or None after showing a user error as a dialog."""
        return guarded(self.show_error, title, fn, *args)

    # ---- recordings -----------------------------------------------------------------
    def add_files_dialog(self) -> None:
        start = value(self.settings, "workbench/recordings_folder", "", str)
        paths, _ = QtWidgets.QFileDialog.getOpenFileNames(
            self, "Add recordings", start, "WalkerLab recordings (*.h5 *.hdf5);;All files (*)")
        if paths:
            self.add_files(paths)

    def add_folder_dialog(self) -> None:
        start = value(self.settings, "workbench/recordings_folder", "", str)
        folder = QtWidgets.QFileDialog.getExistingDirectory(self, "Add a folder of "
                                                            "recordings", start)
        if folder:
            self.add_folder(folder)

    def add_folder(self, folder) -> int:
        paths = self._guard("Cannot add folder", catalog.recordings_in, folder)
        if paths is None:
            return 0
        if not paths:
            self.show_error("No recordings", "%s holds no recordings (.h5)" % folder)
            return 0
        return self.add_files(paths)

    def add_files(self, paths) -> int:
        """Describe and list the files (skipping ones listed); errors in one dialog."""
        known = {r.path for r in self.recordings}
        added, problems = 0, []
        QtWidgets.QApplication.setOverrideCursor(QtCore.Qt.CursorShape.WaitCursor)
        try:
            for p in paths:
                p = os.path.abspath(os.fspath(p))
                if p in known:
                    continue
                try:
                    info = catalog.describe_recording(p)
                except user_errors() as exc:
                    problems.append(one_line(exc))
                    continue
                self.recordings.append(info)
                known.add(p)
                added += 1
        finally:
            QtWidgets.QApplication.restoreOverrideCursor()
        if added and self.persist:
            self.settings.setValue("workbench/recordings_folder", os.path.dirname(p))
        self._refresh_recordings(check_new={r.path for r in self.recordings[-added:]}
                                 if added else set())
        if problems:
            more = " (and %d more)" % (len(problems) - 1) if len(problems) > 1 else ""
            self.show_error("Not a recording", problems[0] + more)
        return added

    def remove_selected_recordings(self) -> None:
        rows = sorted({i.row() for i in self.table.selectedIndexes()})
        paths = {self.table.item(r, 0).data(QtCore.Qt.ItemDataRole.UserRole) for r in rows}
        self.recordings = [r for r in self.recordings if r.path not in paths]
        self._refresh_recordings()

    def _filters(self) -> catalog.Filters:
        return catalog.Filters(**{k: c.currentData() or catalog.ANY
                                  for k, c in self.filters.items()})

    def set_filter(self, key: str, text: str) -> None:
        combo = self.filters[key]
        i = combo.findData(text)
        if i < 0:
            raise UserError("no %s %r among the recordings" % (key, text))
        combo.setCurrentIndex(i)

    def _refresh_recordings(self, check_new=frozenset()) -> None:
        checked = self.checked_paths(visible_only=False) | set(check_new)
        choices = catalog.filter_values(self.recordings)
        for key, combo in self.filters.items():
            current = combo.currentData()
            combo.blockSignals(True)
            combo.clear()
            combo.addItem("all", catalog.ANY)
            for v in choices[key]:
                combo.addItem(v or "(none)", v)
            combo.setCurrentIndex(max(0, combo.findData(current)))
            combo.blockSignals(False)
        tracks = sorted({t.name for r in self.recordings for t in r.tracks})
        current = self.track_combo.currentData()
        self.track_combo.clear()
        self.track_combo.addItem(AUTO_TRACK, None)
        for t in tracks:
            self.track_combo.addItem(t, t)
        self.track_combo.setCurrentIndex(max(0, self.track_combo.findData(current)))
        self._checked = checked
        self._fill_table()

    def _fill_table(self) -> None:
        filters = self._filters()
        shown = [r for r in self.recordings if filters.accepts(r)]
        self.table.blockSignals(True)
        self.table.setRowCount(len(shown))
        for row, info in enumerate(shown):
            name = _item(os.path.basename(info.path), tip=info.path)
            name.setFlags(name.flags() | QtCore.Qt.ItemFlag.ItemIsUserCheckable)
            name.setCheckState(QtCore.Qt.CheckState.Checked if info.path in self._checked
                               else QtCore.Qt.CheckState.Unchecked)
            name.setData(QtCore.Qt.ItemDataRole.UserRole, info.path)
            labels = ", ".join("%s (%s)" % (t.name, t.annotator or t.source)
                               if t.annotator and t.annotator != t.name else t.name
                               for t in info.tracks) or "none"
            self.table.setItem(row, 0, name)
            self.table.setItem(row, 1, _item(info.subject or "—"))
            self.table.setItem(row, 2, _item(info.walker or "—"))
            self.table.setItem(row, 3, _item(labels, tip=" ".join(info.classes)))
            self.table.setItem(row, 4, _item(info.label_set, tip=" ".join(info.classes)))
            self.table.setItem(row, 5, _item("%.0f s" % info.duration_s, True))
        self.table.blockSignals(False)
        self._update_selection_label()

    def _filters_changed(self, *_) -> None:
        self._checked = self.checked_paths(visible_only=False)
        self._fill_table()
        track = catalog.track_for_annotator(self.visible_recordings(),
                                            self.filters["annotator"].currentData())
        if track is not None:
            self.track_combo.setCurrentIndex(max(0, self.track_combo.findData(track)))

    def _table_item_changed(self, item) -> None:
        if item.column() != 0:
            return
        path = item.data(QtCore.Qt.ItemDataRole.UserRole)
        if item.checkState() == QtCore.Qt.CheckState.Checked:
            self._checked.add(path)
        else:
            self._checked.discard(path)
        self._update_selection_label()

    def visible_recordings(self) -> list[catalog.RecordingInfo]:
        f = self._filters()
        return [r for r in self.recordings if f.accepts(r)]

    def checked_paths(self, visible_only: bool = True) -> set[str]:
        checked = set(self._checked)
        if visible_only:
            visible = {r.path for r in self.visible_recordings()}
            checked &= visible
        return checked

    def selected_recordings(self) -> list[catalog.RecordingInfo]:
        """The recordings a run uses: ticked and passing the filters, in list order."""
        checked = self.checked_paths()
        return [r for r in self.visible_recordings() if r.path in checked]

    def set_all_checked(self, on: bool = True) -> None:
        self._checked = {r.path for r in self.recordings} if on else set()
        self._fill_table()

    def _update_selection_label(self) -> None:
        sel = self.selected_recordings()
        subjects = {r.subject for r in sel}
        self.selection_label.setText(
            "%d of %d recordings ticked for the run, %d subject(s), %.1f min"
            % (len(sel), len(self.recordings), len(subjects),
               sum(r.duration_s for r in sel) / 60))

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

    # ---- background tasks -----------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.thread is not None

    def _start_task(self, name: str, fn, on_done) -> bool:
        if self.busy:
            self.show_error("Busy", "%s is still running: wait or cancel it" % self.task_name)
            return False
        self.task_name = name
        self.thread = TaskThread(fn, self)
        self.thread.progressed.connect(self._task_progress)
        self.thread.succeeded.connect(on_done)
        self.thread.failed.connect(lambda msg: self.show_error("%s failed" % name, msg))
        self.thread.cancelled_.connect(
            lambda: self.statusBar().showMessage("%s cancelled" % name, 6000))
        self.thread.finished.connect(self._task_finished)
        self.progress.setRange(0, 0)  # busy until the first fold reports
        self.progress.setFormat("%s: %%v of %%m" % name)
        self.progress.setVisible(True)
        self.statusBar().showMessage("%s…" % name)
        self.thread.start()
        self._update_buttons()
        return True

    def _task_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, total)
        self.progress.setValue(done)
        self.statusBar().showMessage("%s: %d of %d folds done" % (self.task_name, done, total))

    def _task_finished(self) -> None:
        thread, self.thread = self.thread, None
        if thread is not None:
            thread.deleteLater()
        self.progress.setVisible(False)
        self._update_buttons()

    def cancel(self) -> None:
        if self.thread is not None:
            self.thread.cancel()
            self.statusBar().showMessage("Cancelling after the fold in progress…")
            self.cancel_button.setEnabled(False)

    def wait_idle(self, timeout_ms: int = 600000) -> bool:
        """Block until the background task ends (for scripts and --screenshot)."""
        t_end = time.monotonic() + timeout_ms / 1000
        while self.thread is not None and time.monotonic() < t_end:
            QtWidgets.QApplication.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents,
                                                 50)
            if self.thread is not None:
                self.thread.wait(20)
        QtWidgets.QApplication.processEvents()
        return self.thread is None

    def _update_buttons(self) -> None:
        busy = self.busy
        self.run_button.setEnabled(not busy)
        self.train_button.setEnabled(not busy)
        self.cancel_button.setEnabled(busy)
        has_runs = bool(self.runs)
        self.report_button.setEnabled(has_runs)
        self.use_button.setEnabled(self.selected_run() is not None)
        self.remove_run_button.setEnabled(self.selected_run() is not None and not busy)

    # ---- runs -----------------------------------------------------------------------
    def start_run(self) -> bool:
        """Start LOSO for the form's settings in the background (False: refused)."""
        if self.busy:
            self.show_error("Busy", "%s is still running: wait or cancel it" % self.task_name)
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
            self.show_error("Cannot run", one_line(exc))
            return False
        self._run_number += 1
        number = self._run_number
        return self._start_task("Evaluation #%d (%s)" % (number, config.kind),
                                lambda progress, cancelled: execute(
                                    config, number, progress, cancelled),
                                self.add_run)

    def add_run(self, run: Run) -> None:
        """Keep a finished run, ticked for comparison and selected."""
        self.runs.append(run)
        self.run_checked[run.number] = True
        self._refresh_runs(select=len(self.runs) - 1)
        self.statusBar().showMessage("%s: accuracy %s at window 0, %s at window 25 (%.1f s)"
                                     % (run.name, _pct(run.accuracy(0)),
                                        _pct(run.result["accuracy_by_window"].get(25)),
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
                    text, right = _pct(v), True
                elif key.startswith("transition"):
                    text, right = _num(v), True
                elif key == "time (s)":
                    text, right = "%.1f" % v, True
                else:
                    text, right = str(v), isinstance(v, (int, float))
                it = _item(text, right)
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
                t.setItem(i, j, _item(_pct(per.get(c)), True, tip=r.name))
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
                it = _item(_count(m[i, j]), True,
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
            self.show_error("Nothing to report", "tick at least one finished run")
            return
        folder = QtWidgets.QFileDialog.getExistingDirectory(
            self, "Folder for the report",
            value(self.settings, "workbench/report_folder", "", str))
        if folder:
            self.export_report(folder)

    def export_report(self, folder) -> str | None:
        """Write the ticked runs' report into folder; returns the index page."""
        from host.report import write_report

        runs = self.checked_runs()
        if not runs:
            self.show_error("Nothing to report", "tick at least one finished run")
            return None
        index = self._guard("Cannot write report", write_report, folder,
                            report_summary(runs))
        if index is None:
            return None
        if self.persist:
            self.settings.setValue("workbench/report_folder", str(folder))
        self.statusBar().showMessage("Report written to %s" % index, 10000)
        return str(index)

    def train_selected(self) -> bool:
        """Train the selected run's settings (with its metrics), else the form's."""
        run = self.selected_run()
        try:
            config = run.config if run is not None else self.current_config()
            config.check()
        except user_errors() as exc:
            self.show_error("Cannot train", one_line(exc))
            return False
        folder = self.models_folder.text().strip()
        if not folder:
            self.show_error("Cannot train", "choose a model folder on the Models tab")
            return False
        return self._start_task("Training %s" % config.kind,
                                lambda progress, cancelled: train_and_save(config, folder,
                                                                           run),
                                self._trained)

    def _trained(self, path) -> None:
        self.last_saved_model = str(path)
        self.statusBar().showMessage("Saved model %s" % path, 10000)
        self.refresh_models(select=str(path))

    # ---- models ---------------------------------------------------------------------
    def choose_models_folder(self) -> None:
        folder = QtWidgets.QFileDialog.getExistingDirectory(self, "Model folder",
                                                            self.models_folder.text())
        if folder:
            self.models_folder.setText(folder)
            self.refresh_models()

    def refresh_models(self, select: str | None = None) -> None:
        from host.models import list_models

        folder = self.models_folder.text().strip()
        got = self._guard("Cannot list models", list_models, folder or None)
        entries, problems = got if got is not None else ([], [])
        if self.persist and folder:
            self.settings.setValue("workbench/models_dir", folder)
        self.model_entries = entries
        t = self.models_table
        t.setRowCount(len(entries))
        for i, e in enumerate(entries):
            acc = e.accuracy
            meta = e.metadata
            cells = [os.path.basename(e.path), e.kind, e.feature_set or "?",
                     "%d: %s" % (len(e.classes), " ".join(e.classes)), str(e.n_recordings),
                     _pct(acc.get("0")), _pct(acc.get("25")),
                     e.trained_at.replace("T", " ") or "?",
                     str(meta.get("app_version", "?")), "yes" if e.runs_on_device else "no"]
            for j, text in enumerate(cells):
                t.setItem(i, j, _item(text, j in (4, 5, 6), tip=e.path if j == 0 else text))
        self.models_problems.setText(
            ("%d model(s); %d broken file(s): %s" % (len(entries), len(problems),
                                                     problems[0])) if problems else
            ("No models in this folder yet: Train and save on the Evaluate tab adds one"
             if not entries else "%d model(s)" % len(entries)))
        if select is not None:
            for i, e in enumerate(entries):
                if os.path.abspath(e.path) == os.path.abspath(select):
                    t.selectRow(i)
        self._model_selected()

    def selected_model(self):
        rows = {i.row() for i in self.models_table.selectedIndexes()}
        if len(rows) != 1:
            return None
        row = rows.pop()
        return self.model_entries[row] if row < len(self.model_entries) else None

    def _model_selected(self) -> None:
        e = self.selected_model()
        self.open_monitor_button.setEnabled(e is not None)
        self.deploy_button.setEnabled(e is not None and e.runs_on_device)
        if e is None:
            self.model_details.setPlainText("")
            return
        if e.kind == "hcrf-dpm":  # its hidden states per activity, in their tab
            self.hidden_states_view.path.setText(str(e.path))
            self.hidden_states_view.run()
        meta = dict(e.metadata)
        metrics = meta.pop("metrics", None)
        lines = ["%s" % e.path, "kind %s, %s features, classes %s"
                 % (e.kind, e.feature_set, " ".join(e.classes)), ""]
        for key in ("trained_at", "app_version", "recognizer", "params", "feature_set",
                    "label_track", "label_set", "command"):
            if key in meta:
                lines.append("%-14s %s" % (key, json.dumps(meta.pop(key))))
        recs = meta.pop("training_recordings", [])
        lines.append("training recordings (%d):" % len(recs))
        lines += ["    " + r for r in recs]
        if metrics:
            acc = metrics.get("accuracy_by_window", {})
            lines.append("LOSO accuracy by window: " + "  ".join(
                "%s: %s" % (w, _pct(a)) for w, a in acc.items()))
            tr = metrics.get("transitions_by_window", {}).get(str(TRANSITION_WINDOW), {})
            if tr:
                lines.append("transitions (window %d): precision %s, recall %s"
                             % (TRANSITION_WINDOW, _num(tr.get("precision")),
                                _num(tr.get("recall"))))
        else:
            lines.append("not evaluated when trained")
        for key, v in meta.items():
            lines.append("%-14s %s" % (key, json.dumps(v)))
        self.model_details.setPlainText("\n".join(lines))

    def open_in_monitor(self, path: str | None = None):
        """Load the model in the monitor this workbench came from, else a new monitor."""
        if path is None:
            e = self.selected_model()
            if e is None:
                self.show_error("No model", "select a model in the list first")
                return None
            path = e.path
        monitor = self.monitor
        if monitor is None or not monitor.isVisible():
            from host.gui.app import MainWindow

            monitor = MainWindow(persist=self.persist,
                                 workbench_opener=lambda monitor: self._adopt(monitor))
            monitor.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
            self._monitor_windows.append(monitor)
            monitor.destroyed.connect(lambda *_, m=monitor: self._forget_monitor(m))
            self.monitor = monitor
        if not monitor.load_model(path):
            return None
        monitor.show()
        monitor.raise_()
        monitor.activateWindow()
        return monitor

    def _adopt(self, monitor):
        """A monitor opened from here asks for a workbench: this one."""
        self.monitor = monitor
        return self

    def _forget_monitor(self, monitor) -> None:
        if monitor in self._monitor_windows:
            self._monitor_windows.remove(monitor)
        if self.monitor is monitor:
            self.monitor = None

    def deploy_dialog(self) -> None:
        from host.gui.ports import list_port_choices

        e = self.selected_model()
        if e is None or not e.runs_on_device:
            self.show_error("Cannot deploy", "select a model that runs on the walker "
                            "(an hmm)")
            return
        ports = [c.device for c in list_port_choices() if not c.is_virtual]
        port, ok = QtWidgets.QInputDialog.getItem(
            self, "Deploy to walker", "Serial port of the walker (a virtual walker's "
            "pseudo-terminal path works too):", ports, 0, True)
        if ok and port.strip():
            self.deploy(e.path, port.strip())

    def deploy(self, path: str, port: str) -> dict | None:
        from host.deploy import deploy_model

        QtWidgets.QApplication.setOverrideCursor(QtCore.Qt.CursorShape.WaitCursor)
        try:
            result = self._guard("Cannot deploy", deploy_model, path, port, None, False)
        finally:
            QtWidgets.QApplication.restoreOverrideCursor()
        if result is not None:
            text = ("Deployed %s to walker %s: %d bytes, classes %s"
                    % (os.path.basename(path), result["walker_id"], result["bytes"],
                       " ".join(result["classes"])))
            self.statusBar().showMessage(text, 10000)
            box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Information, "Deployed",
                                        text, QtWidgets.QMessageBox.StandardButton.Ok, self)
            box.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
            box.open()  # not exec(): nothing waits on it
        return result

    # ---- closing --------------------------------------------------------------------
    def closeEvent(self, event: QtGui.QCloseEvent) -> None:
        if self.thread is not None:
            self.thread.cancel()
            self.thread.wait()
        if self.persist:
            self.settings.setValue("workbench/geometry", self.saveGeometry())
            self.settings.sync()
        super().closeEvent(event)
