"""The calibration wizard against a virtual walker on a calibration bench: every step
through the window's buttons, a wrong step refused with its reason, the fit and its
residuals shown, the saved constants within issue 24's goals of the hidden truth."""
import numpy as np
import pytest

from calibration import WalkerCalibration
from host.calibrate import CalibrationStore
from host.gui.calibration_wizard import CalibrationWizard
from host.virtual_port import bench_walker

from gui_helpers import HANG_GUARD_MS


def _drive(qtbot, wizard, seen, timeout_ms=120_000):
    """Press the enabled button of each step until the procedure ends."""
    wizard.start()
    waited = 0
    while wizard._thread.is_alive() and waited < timeout_ms:
        if wizard.next_button.isEnabled():
            seen.append((wizard.instruction.text(), wizard.message.text(),
                         wizard.next_button.text(), wizard.live.text()))
            if wizard.next_button.text() == "Save":
                assert wizard.plot.isVisible() and wizard.results.isVisible()
                seen.append(("results", wizard.results.toPlainText(), "", ""))
            wizard.next_button.click()
        qtbot.wait(20)
        waited += 20
    # the worker's last word (done) is queued to the GUI thread
    qtbot.waitUntil(lambda: wizard.finished_ok or wizard.error is not None, timeout=HANG_GUARD_MS)


@pytest.mark.parametrize("procedure", ["load", "accel"])
def test_wizard_calibrates_a_virtual_walker_and_refuses_a_wrong_step(qtbot, tmp_path,
                                                                     procedure):
    mistakes = {"load": {2: lambda b: b.place_mass(10.0, cell=1)},
                "accel": {3: lambda b: b.orient(1, -1)}}[procedure]
    walker, technician, truth = bench_walker(walker_seed=4, speed=4.0, mistakes=mistakes)
    store = CalibrationStore(tmp_path)
    with walker:
        wizard = CalibrationWizard(procedure, walker.path, store, technician,
                                   masses_kg=(10.0, 20.0))
        qtbot.addWidget(wizard)
        wizard.show()
        seen = []
        _drive(qtbot, wizard, seen)
    assert wizard.finished_ok, (wizard.error, seen[-3:], wizard.instruction.text(),
                                wizard.message.text(), wizard.live.text())
    refused = [m for _, m, button, _ in seen if button == "Redo"]
    assert len(refused) == 1
    assert refused[0].startswith({
        "load": "Step refused: cell 0, 10 kg: cell 1 rose more; is the mass over the "
                "right cell?",
        "accel": "Step refused: position 3: the y axis should point up"}[procedure])
    # Live readings were shown while waiting for a steady one.
    assert any(live.startswith("Live reading") for *_, live in seen)
    results = [m for kind, m, _, _ in seen if kind == "results"][0]
    assert "largest residual" in results and "residuals (" in results
    cal = WalkerCalibration.load(store.current_path(truth.walker_id))
    if procedure == "load":
        gains = np.array(cal.load_gains_counts_per_n)
        assert np.all(np.abs(gains / truth.load_gains_counts_per_n - 1) < 0.005)
        assert np.all(np.abs(np.array(cal.load_offsets_counts) - truth.load_offsets_counts)
                      / truth.load_gains_counts_per_n < 0.2)
    else:
        assert np.all(np.abs(np.array(cal.accel_bias_counts) - truth.accel_bias_counts)
                      / truth.accel_counts_per_g < 0.01)
        assert np.all(np.abs(np.array(cal.accel_counts_per_g) / truth.accel_counts_per_g - 1)
                      < 0.005)
    assert len(store.history(truth.walker_id)) == 1


def test_giving_up_in_the_wizard_saves_nothing(qtbot, tmp_path):
    walker, technician, truth = bench_walker(walker_seed=4, speed=4.0,
                                             mistakes={1: lambda b: b.orient(2, 1)})
    store = CalibrationStore(tmp_path)
    with walker:
        wizard = CalibrationWizard("accel", walker.path, store, technician)
        qtbot.addWidget(wizard)
        wizard.show()
        wizard.start()
        qtbot.waitUntil(wizard.next_button.isEnabled, timeout=HANG_GUARD_MS)
        wizard.next_button.click()  # position 1 done (wrongly: left upright)
        qtbot.waitUntil(lambda: wizard.next_button.text() == "Redo", timeout=HANG_GUARD_MS)
        assert "the x axis should point up" in wizard.message.text()
        wizard.give_up.click()
        qtbot.waitUntil(lambda: wizard.error is not None, timeout=HANG_GUARD_MS)
    assert not wizard.finished_ok and "abandoned" in wizard.error
    assert not store.current_path(truth.walker_id).exists()


def test_the_monitors_walker_menu_opens_the_wizard_and_reconnects_after(
        qtbot, make_window, tmp_path, monkeypatch):
    monkeypatch.setenv("WALKERLAB_CALIBRATION_DIR", str(tmp_path))
    window = make_window()
    window.calibration_speed = 4.0
    window.connect_to("virtual")
    qtbot.waitUntil(lambda: window.controller.connected, timeout=HANG_GUARD_MS)
    window.actions_by_name["calibrate_encoder"].trigger()
    wizard = window.calibration_wizard
    assert window.controller.mode == "idle"  # the monitor let go of the walker
    seen = []
    wizard._thread.join(0)  # already started by the menu
    waited = 0
    while wizard._thread.is_alive() and waited < 120_000:
        if wizard.next_button.isEnabled():
            seen.append(wizard.instruction.text())
            wizard.next_button.click()
        qtbot.wait(20)
        waited += 20
    qtbot.waitUntil(lambda: wizard.finished_ok or wizard.error is not None, timeout=HANG_GUARD_MS)
    assert wizard.finished_ok, wizard.error
    assert any(text.startswith("Roll 2/2") for text in seen)
    assert (tmp_path / "SIM-0.json").exists()
    wizard.give_up.click()  # "Close"
    qtbot.waitUntil(lambda: window.controller.connected, timeout=HANG_GUARD_MS)
    assert window.controller.port == "virtual"
