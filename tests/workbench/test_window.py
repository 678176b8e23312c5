"""The Workbench window, driven as a user would (pytest-qt, offscreen)."""
import json
import os

import pytest
from PySide6 import QtCore

from host.evaluate import ModelSpec, evaluate_recordings
from host.workbench.runs import json_safe
from host.workbench.tables import frame_count as _count


@pytest.fixture
def make_bench(qtbot, tmp_path):
    from host.workbench.window import WorkbenchWindow

    made = []

    def make(files=(), **kwargs):
        kwargs.setdefault("models_dir", str(tmp_path / "registry"))
        window = WorkbenchWindow(files, **kwargs)
        qtbot.addWidget(window)
        window.show()
        made.append(window)
        return window

    yield make
    for window in made:
        window.close()


def _run(qtbot, bench, timeout=600_000):  # a ceiling against hangs only
    assert bench.evaluate.start_run(), bench.errors_shown
    qtbot.waitUntil(lambda: not bench.evaluate.busy, timeout=timeout)
    return bench.evaluate.runs[-1]


def _table_column(table, col):
    return [table.item(r, col).text() for r in range(table.rowCount())]


def test_lists_recordings_with_subjects_and_filters(make_bench, varied_paths):
    bench = make_bench(varied_paths)
    assert _table_column(bench.evaluate.recordings.table, 1) == ["S000", "S001", "S002"]
    assert _table_column(bench.evaluate.recordings.table, 2) == ["SIM-0", "SIM-0", "W2"]
    assert "alice" in bench.evaluate.recordings.table.item(0, 3).text()
    assert [r.subject for r in bench.evaluate.selected_recordings()] == ["S000", "S001", "S002"]
    bench.evaluate.recordings.set_filter("walker", "SIM-0")
    assert _table_column(bench.evaluate.recordings.table, 1) == ["S000", "S001"]
    assert [r.subject for r in bench.evaluate.selected_recordings()] == ["S000", "S001"]
    bench.evaluate.recordings.set_filter("annotator", "alice")
    assert _table_column(bench.evaluate.recordings.table, 1) == ["S000"]
    assert bench.evaluate.track_combo.currentData() == "alice"  # learn from alice's labels
    bench.evaluate.recordings.set_filter("walker", "")
    bench.evaluate.recordings.set_filter("annotator", "")
    bench.evaluate.recordings.set_filter("subject", "S001")
    assert _table_column(bench.evaluate.recordings.table, 1) == ["S001"]
    bench.evaluate.recordings.set_filter("subject", "")
    # Unticking a recording takes it out of the run, filters or not.
    bench.evaluate.recordings.table.item(1, 0).setCheckState(QtCore.Qt.CheckState.Unchecked)
    assert [r.subject for r in bench.evaluate.selected_recordings()] == ["S000", "S002"]
    assert "2 of 3 recordings" in bench.evaluate.recordings.selection_label.text()
    # Adding the folder again lists nothing twice.
    assert bench.evaluate.add_folder(os.path.dirname(varied_paths[0])) == 0
    assert bench.evaluate.recordings.table.rowCount() == 3


def test_run_from_the_window_gives_exactly_the_library_metrics(qtbot, make_bench,
                                                               exp2_paths):
    bench = make_bench(exp2_paths)
    bench.evaluate.kind_combo.setCurrentText("hmm")
    bench.evaluate.param_form.editors["n_bins"].setText("12")
    run = _run(qtbot, bench)
    direct = evaluate_recordings(exp2_paths, [ModelSpec("hmm", {"n_bins": 12})],
                                 feature_set="cop", transition_window=25)[0]
    assert json_safe(run.result) == json_safe(direct)
    assert run.config.params["n_bins"] == 12
    assert bench.evaluate.runs_table.rowCount() == 1
    assert bench.evaluate.runs_table.item(0, 3).text() == "%.1f%%" % (
        100 * direct["accuracy_by_window"][0])
    # The confusion matrix shown is the run's, cell for cell.
    classes = [str(c) for c in direct["classes"]]
    t = bench.evaluate.confusion_table
    assert [t.horizontalHeaderItem(j).text() for j in range(t.columnCount())] == classes
    shown = [[t.item(i, j).text() for j in range(len(classes))] for i in range(len(classes))]
    assert shown == [[_count(n) for n in row] for row in direct["confusion"]]
    assert _count(9999) == "9999" and _count(12345) == "12.3k"
    assert all("%d frames" % n in t.item(i, j).toolTip()  # exact counts in the tooltips
               for i, row in enumerate(direct["confusion"]) for j, n in enumerate(row))
    assert bench.errors_shown == []


def test_cancel_stops_a_run(qtbot, make_bench, exp2_paths):
    bench = make_bench(exp2_paths)
    assert bench.evaluate.start_run()
    assert bench.evaluate.cancel_button.isEnabled() and not bench.evaluate.run_button.isEnabled()
    with qtbot.waitSignal(bench.evaluate.runner.thread.cancelled_, timeout=600_000):
        bench.evaluate.cancel()
    qtbot.waitUntil(lambda: not bench.evaluate.busy, timeout=600_000)
    assert bench.evaluate.runs == [] and bench.errors_shown == []
    assert bench.evaluate.run_button.isEnabled() and not bench.evaluate.cancel_button.isEnabled()
    run = _run(qtbot, bench)  # and the next run works
    assert len(bench.evaluate.runs) == 1 and run.number == 2


def test_two_runs_side_by_side_and_report(qtbot, make_bench, exp2_paths, tmp_path):
    bench = make_bench(exp2_paths)
    first = _run(qtbot, bench)
    combo = bench.evaluate.feature_combo
    combo.setCurrentIndex(combo.findData("loadcells"))
    second = _run(qtbot, bench)
    assert second.config.feature_set == "loadcells"
    assert bench.evaluate.runs_table.rowCount() == 2
    assert [bench.evaluate.runs_table.item(i, 0).text() for i in range(2)] == [first.name,
                                                                               second.name]
    # The runs' legend, beside the plots: no curve under it.
    plots = bench.evaluate.window_plots
    assert [label.text for _, label in plots.legend.items] == [first.name, second.name]
    qtbot.waitUntil(lambda: not any(  # once laid out
        plots.legend.sceneBoundingRect().intersects(p.getViewBox().sceneBoundingRect())
        for p in plots.plots), timeout=60_000)
    # Three plots with one curve per run; per-activity accuracy with a column per run.
    for plot in bench.evaluate.window_plots.plots:
        assert len(plot.listDataItems()) == 2
    acc_curve = bench.evaluate.window_plots.plots[0].listDataItems()[1]
    windows = sorted(second.result["accuracy_by_window"])
    assert list(acc_curve.xData) == windows
    assert list(acc_curve.yData) == pytest.approx(
        [100 * second.result["accuracy_by_window"][w] for w in windows])
    assert bench.evaluate.class_table.columnCount() == 2
    cls = bench.evaluate.class_table.verticalHeaderItem(0).text()
    want = first.result["class_accuracy_by_window"][0][cls]
    assert bench.evaluate.class_table.item(0, 0).text() == ("—" if want is None
                                                   else "%.1f%%" % (100 * want))
    # Unticking a run takes it out of the comparison.
    bench.evaluate.set_run_checked(0, False)
    assert len(bench.evaluate.window_plots.plots[0].listDataItems()) == 1
    assert bench.evaluate.class_table.columnCount() == 1
    bench.evaluate.set_run_checked(0, True)
    index = bench.evaluate.export_report(tmp_path / "report")
    metrics = json.loads((tmp_path / "report" / "metrics.json").read_text())
    assert len(metrics["models"]) == 2 and os.path.exists(index)
    assert metrics["models"][1]["accuracy_by_window"] == json_safe(
        second.result)["accuracy_by_window"]
    assert metrics["command"].count("walkerlab evaluate") == 2  # feature sets differ


def test_train_and_save_into_the_registry_and_list_it(qtbot, make_bench, exp2_paths,
                                                     tmp_path):
    from recognizers import load_recognizer

    registry = tmp_path / "registry"
    bench = make_bench(exp2_paths, models_dir=str(registry))
    assert bench.models.models_table.rowCount() == 0
    run = _run(qtbot, bench)
    bench.evaluate.select_run(0)
    assert bench.evaluate.train_selected()
    qtbot.waitUntil(lambda: not bench.evaluate.busy, timeout=600_000)
    assert bench.errors_shown == []
    saved = bench.evaluate.last_saved_model
    assert os.path.dirname(saved) == str(registry)
    meta = load_recognizer(saved).metadata_
    assert meta["metrics"] == json.loads(json.dumps(json_safe(run.result)))
    assert meta["training_recordings"] == exp2_paths
    # The models list shows it, selected, with its metrics.
    assert bench.models.models_table.rowCount() == 1
    row = [bench.models.models_table.item(0, j).text() for j in range(10)]
    assert row[0] == os.path.basename(saved) and row[1] == "hmm" and row[2] == "cop"
    assert row[4] == "3"
    assert row[5] == "%.1f%%" % (100 * run.result["accuracy_by_window"][0])
    assert row[9] == "yes"  # an hmm runs on the walker
    assert bench.models.selected_model().path == saved
    assert "LOSO accuracy by window" in bench.models.model_details.toPlainText()
    assert bench.models.deploy_button.isEnabled()


def test_open_in_live_monitor_and_from_the_monitor(qtbot, make_bench, exp2_paths,
                                                   tmp_path):
    from host.gui.app import MainWindow
    from host.workbench.runs import RunConfig, train_and_save

    registry = tmp_path / "registry"
    path = str(train_and_save(RunConfig(tuple(exp2_paths), "hmm"), registry))
    bench = make_bench(models_dir=str(registry))
    bench.models.models_table.selectRow(0)
    monitor = bench.models.open_in_monitor()  # deletes itself on close
    try:
        assert monitor.controller.model_path == path and monitor.isVisible()
        # A workbench opened from a monitor loads models into that monitor.
        monitor.actions_by_name["workbench"].trigger()
        child = monitor.workbench
        qtbot.addWidget(child)
        child.models.models_folder.setText(str(registry))
        child.models.refresh_models()
        child.models.models_table.selectRow(0)
        monitor.unload_model()
        assert monitor.controller.model_path is None
        assert child.models.open_in_monitor() is monitor
        assert monitor.controller.model_path == path
        assert isinstance(monitor, MainWindow)
    finally:
        monitor.close()


def test_bad_input_shows_a_clear_error_and_no_traceback(qtbot, make_bench, exp2_paths,
                                                       tmp_path, capsys):
    bench = make_bench()
    assert not bench.evaluate.start_run()  # no recordings
    assert "no recordings selected" in bench.errors_shown[-1]
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"this is not HDF5")
    panel = bench.evaluate.recordings
    assert bench.evaluate.add_files([str(junk)]) == 1  # checked in the background
    qtbot.waitUntil(lambda: not panel.checking, timeout=600_000)
    assert "junk.h5" in bench.errors_shown[-1] and panel.recordings == []
    assert list(panel.broken) == [str(junk)]  # listed as broken, never ticked
    assert panel.table.item(0, 1).text().startswith("broken: ") and panel.checked_paths() == set()
    bench.evaluate.add_files(exp2_paths[:1], background=False)
    assert not bench.evaluate.start_run()  # one subject
    assert "at least two subjects" in bench.errors_shown[-1]
    bench.evaluate.add_files(exp2_paths[1:], background=False)
    bench.evaluate.param_form.editors["n_bins"].setText("many")
    assert not bench.evaluate.start_run()
    assert "n_bins must be a whole number" in bench.errors_shown[-1]
    bench.evaluate.param_form.editors["n_bins"].setText("0")
    assert not bench.evaluate.start_run()
    assert "n_bins must be an int in the range [1, inf)" in bench.errors_shown[-1]
    empty = tmp_path / "empty-folder"
    empty.mkdir()
    assert bench.evaluate.add_folder(str(empty)) == 0
    assert "holds no recordings" in bench.errors_shown[-1]
    assert all("\n" not in m for m in bench.errors_shown)
    assert bench.evaluate.runs == []
    assert "Traceback" not in capsys.readouterr().err


def test_local_dask_cluster_from_the_window_gives_the_serial_metrics(qtbot, make_bench,
                                                                     exp2_paths):
    bench = make_bench(exp2_paths)
    serial = _run(qtbot, bench)
    combo = bench.evaluate.scheduler_combo
    combo.setCurrentIndex(combo.findData("local"))
    assert bench.evaluate.workers_spin.isEnabled()
    bench.evaluate.workers_spin.setValue(1)
    dask = _run(qtbot, bench, timeout=600_000)
    assert bench.errors_shown == []
    assert dask.config.scheduler == "local" and dask.config.n_workers == 1
    assert json_safe(dask.result) == json_safe(serial.result)


def test_deploy_to_a_virtual_walker_over_a_pseudo_terminal(qtbot, make_bench, exp2_paths,
                                                           tmp_path):
    from host.virtual_port import BackgroundVirtualWalker
    from host.workbench.runs import RunConfig, train_and_save

    registry = tmp_path / "registry"
    train_and_save(RunConfig(tuple(exp2_paths), "hmm-em", {"n_init": 1, "n_iter": 3}),
                   registry)
    path = str(train_and_save(RunConfig(tuple(exp2_paths), "hmm"), registry))
    bench = make_bench(models_dir=str(registry))
    kinds = [bench.models.models_table.item(i, 1).text() for i in range(2)]
    bench.models.models_table.selectRow(kinds.index("hmm-em"))
    assert not bench.models.deploy_button.isEnabled()  # the firmware runs discrete HMMs only
    bench.models.models_table.selectRow(kinds.index("hmm"))
    assert bench.models.deploy_button.isEnabled()
    with BackgroundVirtualWalker(course="free", seed=3) as served:
        result = bench.models.deploy(path, served.path)
        assert result is not None, bench.errors_shown
        assert served.walker.firmware.recognizer is not None
    assert result["classes"] == [str(c) for c in
                                 json.loads(bench.models.model_details.toPlainText().split(
                                     "label_set", 1)[1].splitlines()[0])]
    assert bench.models.deploy(path, str(tmp_path / "no-such-port")) is None
    assert "no-such-port" in bench.errors_shown[-1]


@pytest.fixture
def gated_checks(monkeypatch):
    """Each file's check (catalog.describe_recording) waits until ``gate`` is set, and
    notes the thread it ran on: the test decides what happens before files finish."""
    import threading

    from host.workbench import catalog

    real, gate, threads = catalog.describe_recording, threading.Event(), []

    def describe(path):
        threads.append(threading.current_thread())
        if not gate.wait(600):  # a ceiling against hangs only
            raise RuntimeError("the gate was never opened")
        return real(path)

    monkeypatch.setattr(catalog, "describe_recording", describe)
    return gate, threads


def test_a_folder_is_checked_off_the_gui_thread_with_broken_files_listed(
        qtbot, make_bench, exp2_paths, tmp_path, gated_checks):
    import shutil
    import threading

    gate, threads = gated_checks
    folder = tmp_path / "mixed"
    folder.mkdir()
    good = [str(shutil.copy(p, folder / os.path.basename(p))) for p in exp2_paths[:2]]
    (folder / "junk.h5").write_bytes(b"this is not HDF5")
    whole = open(exp2_paths[2], "rb").read()
    (folder / "cut.h5").write_bytes(whole[:len(whole) // 3])  # a copy that stopped
    bench = make_bench(persist=False, restore_layout=False)
    panel = bench.evaluate.recordings
    progress = []
    panel.runner.progressed.connect(lambda done, total: progress.append((done, total)))
    # The checks wait for a tick of a timer of the GUI thread: it can only come if
    # that thread handles events while the files are checked.
    tick = QtCore.QTimer()
    tick.timeout.connect(lambda: panel.checking and gate.set())
    tick.start(10)
    assert bench.evaluate.add_folder(str(folder)) == 4
    assert panel.checking and panel.task_bar.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: not panel.checking, timeout=600_000)
    tick.stop()
    assert gate.is_set() and len(threads) == 4
    assert all(t is not threading.main_thread() for t in threads)
    assert progress == [(i, 4) for i in range(5)]  # "n of 4 files checked"
    assert sorted(r.path for r in panel.recordings) == sorted(good)
    assert sorted(panel.broken) == sorted(str(folder / n) for n in ("cut.h5", "junk.h5"))
    for path, reason in panel.broken.items():
        assert os.path.basename(path) in reason and "\n" not in reason
    # The good ones ticked, the broken ones listed below them with the reason.
    assert panel.checked_paths() == set(good)
    assert _table_column(panel.table, 0)[2:] == ["cut.h5", "junk.h5"]
    assert _table_column(panel.table, 1)[2:] == ["broken: " + panel.broken[str(folder / n)]
                                                 for n in ("cut.h5", "junk.h5")]
    assert "(and 1 more, listed as broken)" in bench.errors_shown[-1]
    assert not panel.task_bar.cancel_button.isEnabled()
    # Removing a broken file takes it off the list.
    panel.table.selectRow(3)
    panel.remove_selected_recordings()
    assert sorted(panel.broken) == [str(folder / "cut.h5")] and panel.table.rowCount() == 3


def test_cancel_stops_checking_and_lists_the_files_checked(qtbot, make_bench, exp2_paths,
                                                          tmp_path, gated_checks):
    gate, threads = gated_checks
    bench = make_bench(persist=False, restore_layout=False)
    panel = bench.evaluate.recordings
    assert bench.evaluate.add_files(exp2_paths) == 3
    qtbot.waitUntil(lambda: len(threads) == 1, timeout=600_000)  # the first file's check
    panel.task_bar.cancel_button.click()
    gate.set()
    qtbot.waitUntil(lambda: not panel.checking, timeout=600_000)
    assert panel.runner.outcome == "cancelled" and len(threads) == 1
    assert [r.path for r in panel.recordings] == exp2_paths[:1]
    assert panel.checked_paths() == set(exp2_paths[:1]) and bench.errors_shown == []
    # The rest can be added again, and the first is not checked twice.
    assert bench.evaluate.add_files(exp2_paths) == 2
    qtbot.waitUntil(lambda: not panel.checking, timeout=600_000)
    assert [r.path for r in panel.recordings] == exp2_paths and len(threads) == 3
