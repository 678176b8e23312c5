"""What every analysis tab shares: the Evaluate tab's selection and a one-line hint
instead of an empty canvas (legends and colours: each tab's own test)."""
import os

from PySide6 import QtCore

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
