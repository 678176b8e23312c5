"""The processing worker without Qt: LinkBatches in, display chunks out."""
import time

import numpy as np

from device.sim.virtual_walker import simulate_session_bytes
from host.gui.controller import recording_filename
from host.gui.display_state import DisplayState
from host.gui.ports import PortChoice, default_choice, list_port_choices
from host.gui.processing import V, ProcessingWorker
from host.link import LinkBatch, QueueSink
from host.samples import StreamDecoder


def _batches(seconds=6, seed=21, chunk_s=0.1):
    decoder = StreamDecoder()
    out = []
    # A walker that reports its (factory) calibration after INFO, as served ones do:
    # the worker takes the walker's constants from the walker.
    for t, data in simulate_session_bytes("free", seed, 50, duration_s=seconds,
                                          chunk_s=chunk_s, factory_flash=True):
        block, others = decoder.feed(data, t)
        out.append(LinkBatch(time.time(), data, block, others, []))
    return out


def test_worker_turns_batches_into_display_rows_in_physical_units():
    worker = ProcessingWorker(QueueSink())
    chunks = [worker.process([b]) for b in _batches()]
    chunks = [c for c in chunks if c is not None]
    rows = np.concatenate([c.values for c in chunks])
    t = np.concatenate([c.t for c in chunks])
    assert len(t) == 301 and np.all(np.diff(t) > 0) and t[0] == 0.0
    assert 9 < np.median(rows[:, V["accel_z"]]) < 10.5  # gravity in m/s^2
    valid = np.isfinite(rows[:, V["cop_x"]])
    total = rows[:, V["total_load"]]
    assert np.all(total[valid] >= 20) and np.all(np.isnan(rows[~valid, V["cop_y"]]))
    assert any(c.truth for c in chunks) and chunks[0].info["walker_id"] == "SIM-0"


def test_lost_frames_become_a_nan_gap_row():
    worker = ProcessingWorker(QueueSink())
    batches = _batches(seconds=4)
    kept = batches[:15] + batches[25:]  # one second of reads lost
    chunks = [c for c in (worker.process([b]) for b in kept) if c is not None]
    rows = np.concatenate([c.values for c in chunks])
    t = np.concatenate([c.t for c in chunks])
    gaps = np.flatnonzero(np.isnan(rows[:, 0]))
    assert len(gaps) == 1 and np.all(np.diff(t) > 0)
    assert t[gaps[0] + 1] - t[gaps[0] - 1] > 0.9


def test_display_state_tracks_the_current_activity_and_its_start():
    state = DisplayState(history_rows=64)
    from host.gui.processing import DisplayChunk, N_VALUES
    t = np.arange(10) * 0.1
    P = np.zeros((10, 2))
    P[:6, 0] = 1
    P[6:, 1] = 1
    state.append(DisplayChunk(t, np.zeros((10, N_VALUES)), P, ("ST", "WF"), time.time(),
                              n_samples=10))
    assert state.current() == ("WF", 1.0)
    assert state.current_since == t[6]
    np.testing.assert_array_equal(state.latest_posterior(), [0.0, 1.0])


def test_ports_prefer_a_usb_walker_and_fall_back_to_the_virtual_one():
    class Port:
        def __init__(self, device, description, vid=None):
            self.device, self.description, self.vid = device, description, vid

    builtin = [Port("/dev/ttyS0", "n/a")]
    choices = list_port_choices(builtin)
    assert [c.device for c in choices] == ["/dev/ttyS0", "virtual"]
    assert default_choice(choices).is_virtual
    usb = list_port_choices(builtin + [Port("/dev/ttyUSB0", "FT232R USB UART", 0x0403)])
    assert default_choice(usb).device == "/dev/ttyUSB0"
    assert default_choice(usb, preferred="virtual").is_virtual
    assert PortChoice("/dev/ttyUSB0", "FT232R USB UART", True).label == \
        "/dev/ttyUSB0  (FT232R USB UART)"


def test_recording_names_are_safe_and_dated(tmp_path):
    import os
    import re

    name = recording_filename(str(tmp_path), " S 01/x ", when=0)
    assert os.path.dirname(name) == str(tmp_path)
    assert re.fullmatch(r"S_01_x-\d{8}-\d{6}\.h5", os.path.basename(name))
    assert os.path.basename(recording_filename(str(tmp_path), "")).startswith("session-")
