"""The workbench's *Models* tab: the registry folder's models and where each came from.

Open in live monitor (the window decides which monitor) and Deploy to walker….
"""
from __future__ import annotations

import json
import os

from PySide6 import QtCore, QtGui, QtWidgets

from host.workbench.context import TabContext
from host.workbench.runs import TRANSITION_WINDOW
from host.workbench.tables import number, percent, row_table, table_item


class ModelsTab(QtWidgets.QWidget):
    """The models of a registry folder, one selected, with its provenance below.

    ``open_model(path)``: what Open in live monitor does (the window's). Signals:
    ``model_selected(entry)`` (a ``host.models`` entry, or None), ``listed(entries)``
    after the folder is read.
    """

    model_selected = QtCore.Signal(object)
    listed = QtCore.Signal(list)

    def __init__(self, context: TabContext, open_model=lambda path: None,
                 parent=None) -> None:
        super().__init__(parent)
        self.context = context
        self.open_model = open_model
        self.model_entries = []
        v = QtWidgets.QVBoxLayout(self)
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
        self.models_table = row_table(10)
        self.models_table.setHorizontalHeaderLabels(
            ["Model", "Kind", "Features", "Classes", "Recordings", "LOSO w0", "LOSO w25",
             "Trained at", "App version", "On walker"])
        self.models_table.setEditTriggers(
            QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.models_table.horizontalHeader().setSectionResizeMode(
            3, QtWidgets.QHeaderView.ResizeMode.Stretch)  # classes
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

    def choose_models_folder(self) -> None:
        folder = QtWidgets.QFileDialog.getExistingDirectory(self, "Model folder",
                                                            self.models_folder.text())
        if folder:
            self.models_folder.setText(folder)
            self.refresh_models()

    def refresh_models(self, select: str | None = None) -> None:
        from host.models import list_models

        folder = self.models_folder.text().strip()
        got = self.context.guard("Cannot list models", list_models, folder or None)
        entries, problems = got if got is not None else ([], [])
        if self.context.persist and folder:
            self.context.settings.setValue("workbench/models_dir", folder)
        self.model_entries = entries
        self.listed.emit(list(entries))
        t = self.models_table
        t.setRowCount(len(entries))
        for i, e in enumerate(entries):
            acc = e.accuracy
            meta = e.metadata
            cells = [os.path.basename(e.path), e.kind, e.feature_set or "?",
                     "%d: %s" % (len(e.classes), " ".join(e.classes)), str(e.n_recordings),
                     percent(acc.get("0")), percent(acc.get("25")),
                     e.trained_at.replace("T", " ") or "?",
                     str(meta.get("app_version", "?")), "yes" if e.runs_on_device else "no"]
            for j, text in enumerate(cells):
                t.setItem(i, j, table_item(text, j in (4, 5, 6), tip=e.path if j == 0 else text))
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
        self.model_selected.emit(e)
        if e is None:
            self.model_details.setPlainText("")
            return
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
                "%s: %s" % (w, percent(a)) for w, a in acc.items()))
            tr = metrics.get("transitions_by_window", {}).get(str(TRANSITION_WINDOW), {})
            if tr:
                lines.append("transitions (window %d): precision %s, recall %s"
                             % (TRANSITION_WINDOW, number(tr.get("precision")),
                                number(tr.get("recall"))))
        else:
            lines.append("not evaluated when trained")
        for key, v in meta.items():
            lines.append("%-14s %s" % (key, json.dumps(v)))
        self.model_details.setPlainText("\n".join(lines))


    def open_in_monitor(self):
        """Open the selected model in the live monitor (None: no model selected)."""
        e = self.selected_model()
        if e is None:
            self.context.show_error("No model", "select a model in the list first")
            return None
        return self.open_model(e.path)

    def deploy_dialog(self) -> None:
        from host.gui.ports import list_port_choices

        e = self.selected_model()
        if e is None or not e.runs_on_device:
            self.context.show_error("Cannot deploy", "select a model that runs on the walker "
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
            result = self.context.guard("Cannot deploy", deploy_model, path, port, None, False)
        finally:
            QtWidgets.QApplication.restoreOverrideCursor()
        if result is not None:
            text = ("Deployed %s to walker %s: %d bytes, classes %s"
                    % (os.path.basename(path), result["walker_id"], result["bytes"],
                       " ".join(result["classes"])))
            self.context.show_status(text, 10000)
            box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Information, "Deployed",
                                        text, QtWidgets.QMessageBox.StandardButton.Ok, self)
            box.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
            box.open()  # not exec(): nothing waits on it
        return result

