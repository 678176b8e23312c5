"""The workbench's list of recordings: add, filter, tick.

The ticked recordings that pass the filters are *the selection*: what a
leave-one-subject-out run uses, and what every analysis tab (latent map, topics,
regimes, hidden states) works on.

Files added are checked off the GUI thread (each one's structure is probed in a child
process, catalog.describe_recording), with progress and Cancel; files that are not
readable recordings are listed as broken, with the reason, below the good ones.
"""
from __future__ import annotations

import os

from PySide6 import QtCore, QtWidgets

from host.errors import UserError, user_errors
from host.gui.processing import one_line
from host.gui.settings import value
from host.workbench import catalog
from host.workbench.context import TabContext
from host.workbench.tables import table_item
from host.workbench.tasks import TaskBar, TaskRunner

FILTERS = (("subject", "Subject"), ("walker", "Walker"), ("annotator", "Annotator"),
           ("label_set", "Label set"))


class RecordingsPanel(QtWidgets.QGroupBox):
    """Recordings with their subject, walker, labels and duration; filters; ticks.

    Signals: ``listed()`` when recordings are added or removed, ``selection_changed()``
    when the selection (ticks or filters) may have changed, ``annotator_track(str)``
    when an annotator filter picks the label track to learn from.

    ``broken``: the files added that are not readable recordings (path -> the one-line
    reason), listed below the recordings and never part of the selection.
    """

    listed = QtCore.Signal()
    selection_changed = QtCore.Signal()
    annotator_track = QtCore.Signal(str)

    def __init__(self, context: TabContext, parent=None) -> None:
        super().__init__("Recordings", parent)
        self.context = context
        self.recordings: list[catalog.RecordingInfo] = []
        self.broken: dict[str, str] = {}
        self._checked: set[str] = set()  # ticked recordings (paths), filtered or not
        self.runner = TaskRunner(self)  # checks added files off the GUI thread
        self.runner.progressed.connect(lambda done, total: self.context.show_status(
            "Checking recordings: %d of %d files checked" % (done, total), 0))
        rv = QtWidgets.QVBoxLayout(self)
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
        self.task_bar = TaskBar(self.runner)
        self.task_bar.cancel_button.setToolTip("Stop checking after the file in progress; "
                                               "the files checked so far are listed")
        row.addWidget(self.task_bar)
        rv.addLayout(row)
        filt = QtWidgets.QGridLayout()
        self.filters = {}
        for i, (key, label) in enumerate(FILTERS):
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

    # ---- adding and removing --------------------------------------------------------
    def add_files_dialog(self) -> None:
        start = value(self.context.settings, "workbench/recordings_folder", "", str)
        paths, _ = QtWidgets.QFileDialog.getOpenFileNames(
            self, "Add recordings", start, "WalkerLab recordings (*.h5 *.hdf5);;All files (*)")
        if paths:
            self.add_files(paths)

    def add_folder_dialog(self) -> None:
        start = value(self.context.settings, "workbench/recordings_folder", "", str)
        folder = QtWidgets.QFileDialog.getExistingDirectory(self, "Add a folder of "
                                                            "recordings", start)
        if folder:
            self.add_folder(folder)

    def add_folder(self, folder, background: bool = True) -> int:
        """add_files of the recordings (.h5) in ``folder`` and its subfolders."""
        paths = self.context.guard("Cannot add folder", catalog.recordings_in, folder)
        if paths is None:
            return 0
        if not paths:
            self.context.show_error("No recordings", "%s holds no recordings (.h5)" % folder)
            return 0
        return self.add_files(paths, background)

    @property
    def checking(self) -> bool:
        """Whether added files are being checked."""
        return self.runner.busy

    def add_files(self, paths, background: bool = True) -> int:
        """Check the files not listed yet and list them: recordings, or broken ones
        with the reason (one dialog says what was wrong). Returns how many files are
        checked.

        ``background``: check them in the task runner, off the GUI thread, with
        progress and Cancel (the files checked before a Cancel are listed); else here
        (files already probed, e.g. the command line's, which the workbench command
        checked before opening the window).
        """
        known = {r.path for r in self.recordings}
        new = list(dict.fromkeys(os.path.abspath(os.fspath(p)) for p in paths))
        new = [p for p in new if p not in known]
        if not new:
            return 0
        if not background:
            self._list_checked(catalog.describe_recordings(new))
            return len(new)
        if self.runner.busy:
            self.context.show_error("Busy", "%s is still running: wait or cancel it"
                                    % self.runner.name)
            return 0
        results: list = []  # filled by the task as it goes; listed however it ends

        def failed(message: str) -> None:
            self._list_checked(results)
            self.context.show_error("Checking recordings failed", message)

        self.runner.start(
            "Checking %d files" % len(new),
            lambda progress, cancelled: catalog.describe_recordings(new, progress, results),
            on_done=self._list_checked, on_cancelled=lambda: self._list_checked(results),
            on_failed=failed, unit="files checked")
        return len(new)

    def wait_idle(self, timeout_ms: int | None = None) -> bool:
        """Block until the files added are checked (scripts and --screenshot)."""
        return self.runner.wait_idle(timeout_ms)

    def _list_checked(self, results) -> None:
        """List what describe_recordings found; one dialog names the broken files."""
        known = {r.path for r in self.recordings}
        added, problems = [], []
        for item in results:
            if isinstance(item, catalog.BrokenFile):
                self.broken[item.path] = item.reason
                problems.append(item.reason)
            elif item.path not in known:
                self.broken.pop(item.path, None)
                self.recordings.append(item)
                known.add(item.path)
                added.append(item.path)
        if added and self.context.persist:
            self.context.settings.setValue("workbench/recordings_folder",
                                           os.path.dirname(added[-1]))
        self._refresh(check_new=set(added))
        if problems:
            more = (" (and %d more, listed as broken)" % (len(problems) - 1)
                    if len(problems) > 1 else "")
            self.context.show_error("Not a recording", problems[0] + more)

    def remove_selected_recordings(self) -> None:
        rows = sorted({i.row() for i in self.table.selectedIndexes()})
        paths = {self.table.item(r, 0).data(QtCore.Qt.ItemDataRole.UserRole) for r in rows}
        self.recordings = [r for r in self.recordings if r.path not in paths]
        for p in paths:
            self.broken.pop(p, None)
        self._refresh()

    # ---- filters and ticks ----------------------------------------------------------
    def _filters(self) -> catalog.Filters:
        return catalog.Filters(**{k: c.currentData() or catalog.ANY
                                  for k, c in self.filters.items()})

    def set_filter(self, key: str, text: str) -> None:
        combo = self.filters[key]
        i = combo.findData(text)
        if i < 0:
            raise UserError("no %s %r among the recordings" % (key, text))
        combo.setCurrentIndex(i)

    def track_names(self) -> list[str]:
        """Every label track name among the listed recordings."""
        return sorted({t.name for r in self.recordings for t in r.tracks})

    def _refresh(self, check_new=frozenset()) -> None:
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
        self._checked = checked
        self.listed.emit()
        self._fill_table()

    def _fill_table(self) -> None:
        filters = self._filters()
        shown = [r for r in self.recordings if filters.accepts(r)]
        self.table.blockSignals(True)
        self.table.clearSpans()
        self.table.setRowCount(len(shown) + len(self.broken))
        for row, info in enumerate(shown):
            name = table_item(os.path.basename(info.path), tip=info.path)
            name.setFlags(name.flags() | QtCore.Qt.ItemFlag.ItemIsUserCheckable)
            name.setCheckState(QtCore.Qt.CheckState.Checked if info.path in self._checked
                               else QtCore.Qt.CheckState.Unchecked)
            name.setData(QtCore.Qt.ItemDataRole.UserRole, info.path)
            labels = ", ".join("%s (%s)" % (t.name, t.annotator or t.source)
                               if t.annotator and t.annotator != t.name else t.name
                               for t in info.tracks) or "none"
            self.table.setItem(row, 0, name)
            self.table.setItem(row, 1, table_item(info.subject or "—"))
            self.table.setItem(row, 2, table_item(info.walker or "—"))
            self.table.setItem(row, 3, table_item(labels, tip=" ".join(info.classes)))
            self.table.setItem(row, 4, table_item(info.label_set, tip=" ".join(info.classes)))
            self.table.setItem(row, 5, table_item("%.0f s" % info.duration_s, True))
        for row, (path, reason) in enumerate(sorted(self.broken.items()), len(shown)):
            name = table_item(os.path.basename(path), tip=path)
            name.setData(QtCore.Qt.ItemDataRole.UserRole, path)
            self.table.setItem(row, 0, name)  # not tickable
            self.table.setItem(row, 1, table_item("broken: " + reason, tip=reason))
            self.table.setSpan(row, 1, 1, self.table.columnCount() - 1)
        self.table.blockSignals(False)
        self._selection_changed()

    def _filters_changed(self, *_) -> None:
        self._checked = self.checked_paths(visible_only=False)
        self._fill_table()
        track = catalog.track_for_annotator(self.visible_recordings(),
                                            self.filters["annotator"].currentData())
        if track is not None:
            self.annotator_track.emit(track)

    def _table_item_changed(self, item) -> None:
        if item.column() != 0:
            return
        path = item.data(QtCore.Qt.ItemDataRole.UserRole)
        if item.checkState() == QtCore.Qt.CheckState.Checked:
            self._checked.add(path)
        else:
            self._checked.discard(path)
        self._selection_changed()

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
        """The selection: ticked and passing the filters, in list order."""
        checked = self.checked_paths()
        return [r for r in self.visible_recordings() if r.path in checked]

    def selected_paths(self) -> list[str]:
        return [r.path for r in self.selected_recordings()]

    def set_all_checked(self, on: bool = True) -> None:
        self._checked = {r.path for r in self.recordings} if on else set()
        self._fill_table()

    def _selection_changed(self) -> None:
        sel = self.selected_recordings()
        subjects = {r.subject for r in sel}
        self.selection_label.setText(
            "%d of %d recordings ticked, %d subject(s), %.1f min"
            % (len(sel), len(self.recordings), len(subjects),
               sum(r.duration_s for r in sel) / 60))
        self.selection_changed.emit()
