"""Record from the virtual walker over a pseudo-terminal, inspect, replay, recover."""
import json
import os
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

from calibration import calibration_for
from device.protocol import wire
from device.sim.virtual_walker import FaultConfig
from host.cli import main as walkerlab
from host.link import QueueSink
from host.pipeline import RecognitionPipeline
from host.record import record_session
from host.recording import open_recording, recover
from host.replay import replay_recording
from host.simulate import simulate_to_files

pytestmark = pytest.mark.integration


def _info(path, capsys):
    assert walkerlab(["info", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def trained_model(tmp_path_factory):
    from recognizers.hmm_recognizer import HMMRecognizer
    from host.datasets import load_sessions

    out = tmp_path_factory.mktemp("model")
    paths = simulate_to_files("free", 1, 11, out, duration_s=600, progress=False)
    sessions = load_sessions(paths, feature_set="cop")
    model = HMMRecognizer().fit([s.X for s in sessions], [s.y for s in sessions],
                                feature_set="cop")
    return model


def test_record_20_s_then_info_and_replay_reproduce_live_exactly(served_walker, tmp_path,
                                                                  capsys, trained_model):
    served = served_walker(rate_hz=50, seed=3)
    live = QueueSink(maxsize=100_000)
    out = tmp_path / "session.h5"
    record_session(served.path, out, 20.0, subject_id="S1", progress=False,
                   extra_sinks=[live])
    info = _info(out, capsys)
    t_us = open_recording(out).samples.t_us
    assert info["samples"] == (t_us[-1] - t_us[0]) // 20_000 + 1  # none missing
    # rate x duration, within one frame plus how much the delay between the walker's
    # clock and the host's arrival times varied (a busy machine starts and reads late)
    delay = open_recording(out).samples.host_time - t_us / 1e6
    assert abs(info["samples"] / 50 - 20.0) <= 0.02 + delay.max() - delay.min()
    assert info["seq_gaps"] == 0 and info["crc_errors"] == 0 and info["rate_hz"] == 50.0
    assert info["walker_id"] == "SIM-0" and info["subject_id"] == "S1"
    assert sum(info["labels"].values()) >= 990  # the simulator's truth track

    # The live pipeline, run on the batches the link delivered during the recording.
    # Its calibration is the one a live path takes: what the walker reports from its
    # flash (the virtual walker's factory calibration, in float32).
    from device.protocol import wire
    from device.sim.factory_calibration import factory_calibration_payload
    from device.sim.sensors import default_truth
    reported = wire.unpack_calibration(factory_calibration_payload(default_truth(0)))
    pipeline = RecognitionPipeline(calibration_for("SIM-0", reported, use_sources=False),
                                   trained_model)
    feats, posts = [], []
    for batch in live.drain():
        if len(batch.block):
            result = pipeline.process(batch.block)
            feats.append(result.features.X)
            posts.append(result.posterior)
    rec, replayed = replay_recording(out, trained_model)
    assert np.array_equal(replayed.features, np.concatenate(feats))
    assert np.array_equal(replayed.posterior, np.concatenate(posts))
    assert len(replayed.t_s) == info["samples"]


def _frames_with_offsets(stream: bytes):
    """(offset, length, Frame) of every frame in an uncorrupted byte stream."""
    out = []
    pos = 0
    decoder = wire.FrameDecoder(track_sequence=False)
    while pos + wire.HEADER_LEN <= len(stream):
        length = int.from_bytes(stream[pos + 4:pos + 6], "little")
        size = wire.HEADER_LEN + length + wire.CRC_LEN
        frames = decoder.feed(stream[pos:pos + size])
        if len(frames) != 1:
            break
        out.append((pos, size, frames[0]))
        pos += size
    return out


def test_corrupted_link_keeps_every_intact_frame_and_counts_crc_errors(served_walker,
                                                                       tmp_path, capsys):
    served = served_walker(rate_hz=100, keep_log=True,
                           faults=FaultConfig(corrupt_rate=0.001, seed=5))
    out = tmp_path / "noisy.h5"
    record_session(served.path, out, 8.0, progress=False)
    served.stop()
    clean = bytes(served.server.injector.clean_log)
    touched = np.frombuffer(bytes(served.server.injector.touched_log), np.uint8)
    rec = open_recording(out)
    recorded_seqs = set(rec.samples.seq.tolist())
    last_t = rec.samples.t_us.max()
    intact = hit = 0
    for offset, size, frame in _frames_with_offsets(clean):
        if frame.frame_type != wire.SAMPLE or frame.t_us > last_t:
            continue
        if touched[offset:offset + size].any():
            hit += 1
        else:
            intact += 1
            assert frame.seq in recorded_seqs
    assert intact > 700 and hit > 5
    info = _info(out, capsys)
    assert info["crc_errors"] >= 1 and info["samples"] >= intact


def _wait_until_recorded(path, samples, proc, timeout_s=120.0):
    """Poll the live (SWMR) file until it holds ``samples`` samples: the recorder's
    start-up takes from one to many seconds depending on the machine's load."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()
        if path.exists():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if len(open_recording(path).samples) >= samples:
                        return
            except Exception:  # noqa: BLE001 - not yet readable: the writer is starting
                pass
        time.sleep(0.2)
    pytest.fail("the recorder wrote fewer than %d samples in %.0f s" % (samples, timeout_s))


def test_sigkill_of_the_recorder_loses_at_most_a_second_and_recover_restores_all(
        served_walker, tmp_path, capsys):
    served = served_walker(rate_hz=50)
    out = tmp_path / "killed.h5"
    proc = subprocess.Popen([sys.executable, "-m", "host.cli", "record", "--port",
                             served.path, "--duration", "60", "--out", str(out),
                             "--quiet"], stderr=subprocess.PIPE)
    _wait_until_recorded(out, samples=150, proc=proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    rec = open_recording(out)  # opens although the writer died mid-session
    assert not rec.closed_cleanly
    n_recorded = len(rec.samples)
    raw_frames = wire.FrameDecoder()
    raw_frames.feed(rec.raw_bytes())
    raw_frames.finish()
    recovered = tmp_path / "recovered.h5"
    recover(out, recovered)
    rec2 = open_recording(recovered)
    n_raw_samples = len(rec2.samples)
    assert n_raw_samples >= n_recorded > 100
    assert rec2.counters["frames_ok"] == raw_frames.frames_ok
    # At most one second (50 samples) of decoded data was behind the raw log, and the
    # raw log itself is within one second of what the walker had sent.
    assert n_raw_samples - n_recorded <= 50
    assert np.array_equal(rec2.samples.seq[:n_recorded], rec.samples.seq)


def test_cli_rejects_bad_input_with_one_line_and_exit_2(tmp_path, capsys):
    foreign = tmp_path / "foreign.h5"
    import h5py
    with h5py.File(foreign, "w") as f:
        f["x"] = [1, 2, 3]
    truncated = tmp_path / "trunc.h5"
    truncated.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\x00" * 50)
    cases = [
        ["info", str(foreign)],
        ["info", str(truncated)],
        ["info", str(tmp_path / "missing.h5")],
        ["record", "--port", "/dev/walkerlab-nope", "--duration", "1", "--out",
         str(tmp_path / "x.h5")],
        ["replay", str(foreign)],
    ]
    for argv in cases:
        assert walkerlab(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("walkerlab %s: error:" % argv[0]) and "\n" not in err, err


def test_record_refuses_to_overwrite_an_existing_recording(served_walker, tmp_path, capsys):
    out = tmp_path / "keep.h5"
    out.write_bytes(b"precious")
    served = served_walker()
    assert walkerlab(["record", "--port", served.path, "--duration", "1", "--out",
                      str(out), "--quiet"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert out.read_bytes() == b"precious"


def test_identity_and_calibration_survive_corrupted_info_frames(served_walker, tmp_path,
                                                                 capsys):
    # The walker's first three INFO answers are corrupted: the link keeps asking.
    served = served_walker(rate_hz=50, faults=FaultConfig(corrupt_first_info=3, seed=2))
    out = tmp_path / "info.h5"
    health = record_session(served.path, out, 4.0, progress=False)
    assert served.server.injector.infos_corrupted == 3
    assert health["info_received"] and health["info_requests"] >= 4
    info = _info(out, capsys)
    assert info["walker_id"] == "SIM-0" and not info["walker_info_missing"]
    assert json.loads(open_recording(out).attrs["calibration"])["walker_id"] == "SIM-0"


def test_a_recording_without_info_says_so_and_recover_attaches_a_calibration(
        served_walker, tmp_path, capsys):
    served = served_walker(rate_hz=50, faults=FaultConfig(corrupt_first_info=10 ** 6))
    out = tmp_path / "noinfo.h5"
    health = record_session(served.path, out, 1.5, progress=False)
    assert not health["info_received"]
    assert walkerlab(["info", str(out)]) == 0
    assert "WARNING: no walker INFO frame" in capsys.readouterr().out
    cal = tmp_path / "SIM-0.json"
    cal.write_text(calibration_for("SIM-0").to_json())
    assert walkerlab(["recover", str(out), "--calibration", str(cal)]) == 0
    capsys.readouterr()
    info = _info(out, capsys)
    assert info["walker_id"] == "SIM-0" and not info["walker_info_missing"]


def test_a_record_that_fails_before_any_frame_leaves_nothing_behind(tmp_path, capsys):
    import pty

    master, slave = pty.openpty()  # a port that exists but never answers
    out = tmp_path / "never.h5"
    try:
        assert walkerlab(["record", "--port", os.ttyname(slave), "--duration", "5",
                          "--out", str(out), "--quiet"]) == 2
    finally:
        os.close(master)
        os.close(slave)
    assert "no frames" in capsys.readouterr().err
    assert not out.exists()  # a retry is not blocked by an empty file


def test_a_silent_port_is_given_up_after_the_answer_timeout_and_leaves_nothing(tmp_path,
                                                                             capsys):
    import pty
    import re

    master, slave = pty.openpty()  # a port that exists but never answers
    out = tmp_path / "silent.h5"
    try:
        # The duration is long: only the answer timeout can end this record early.
        assert walkerlab(["record", "--port", os.ttyname(slave), "--duration", "600",
                          "--answer-timeout", "0.5", "--out", str(out), "--quiet"]) == 2
    finally:
        os.close(master)
        os.close(slave)
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not one byte" in err, err
    waited = float(re.search(r"in ([0-9.]+) s", err).group(1))
    assert 0.5 <= waited < 600
    assert not out.exists()


def test_a_walker_that_answers_but_is_slow_to_stream_is_recorded(tmp_path):
    """A walker still booting prints a banner and ignores HELLO for a while: it is alive,
    so record waits for it however long the answer timeout is."""
    import select
    import threading

    from device.sim.virtual_walker import PtyServer, VirtualWalker

    server = PtyServer(VirtualWalker("free", 0, 50, repeat=True, factory_flash=True),
                       path=str(tmp_path / "booting-walker"))
    port = server.open()
    stop = threading.Event()
    seen = {"hellos": 0}

    def boot_then_serve():
        # Boot messages once the host has opened the port (its first HELLO), then the
        # link's HELLOs (repeated every INFO_RETRY_S) are ignored until ten have come,
        # far longer than the 0.3 s answer timeout below; then it answers them.
        commands, decoder = b"", wire.FrameDecoder(track_sequence=False)
        while seen["hellos"] < 10 and not stop.is_set():
            if select.select([server._master], [], [], 0.05)[0]:
                data = os.read(server._master, 4096)
                commands += data
                hellos = sum(f.frame_type == wire.CMD_HELLO for f in decoder.feed(data))
                if hellos and not seen["hellos"]:
                    os.write(server._master, b"MPY: soft reboot\r\n")
                seen["hellos"] += hellos
        server.walker.receive(commands)
        server.serve(should_stop=stop.is_set)

    thread = threading.Thread(target=boot_then_serve, daemon=True)
    thread.start()
    out = tmp_path / "slow.h5"
    try:
        health = record_session(port, out, 8.0, progress=False, answer_timeout_s=0.3)
    finally:
        stop.set()
        thread.join(5)
        server.close()
    assert seen["hellos"] >= 10
    assert health["bytes_received"] > 0 and health["info_received"]
    rec = open_recording(out)
    assert len(rec.samples) > 0 and rec.attrs["walker_id"] == "SIM-0"


def test_reconnect_loses_no_more_than_the_time_the_walker_was_unplugged(served_walker,
                                                                         tmp_path):
    """Each gap in the file is what could not be delivered, by the walker's own record
    of each unplug (device time) and the link's own reconnect event in the file: the
    samples still in the cable when it was pulled, those taken while unplugged, and
    those taken before the host had the port open again. A slow machine (a late
    replug, a late reopen) widens the allowance, never the verdict; a link that loses
    anything it could have read fails exactly."""
    import math

    served = served_walker(rate_hz=100, faults=FaultConfig(
        disconnect_every_s=2.0, disconnect_duration_s=0.5, seed=1))
    out = tmp_path / "unplugged.h5"
    health = record_session(served.path, out, 7.0, progress=False)
    served.stop()
    assert health["reconnects"] >= 2
    rec = open_recording(out)
    t_us = rec.samples.t_us
    period_us = 10_000
    assert np.all(np.diff(t_us) >= period_us)
    ends = np.flatnonzero(np.diff(t_us) > period_us)  # the last sample before each gap
    reopened = rec.link_events["host_time"][rec.link_events["kind"] == "reconnected"]
    assert len(reopened) == health["reconnects"]
    # A reconnect after the last sample (the duration ran out before the walker's next
    # frame arrived: a slow machine starts late) leaves no gap inside the file.
    reopened = reopened[reopened < rec.samples.host_time[-1]]
    assert len(ends) == len(reopened)
    unplugs = [u for u in served.server.unplugs  # those while the host recorded
               if t_us[0] <= u.last_sent_us and u.back_us <= t_us[-1]]
    assert len(unplugs) == len(ends)
    frame_bytes = wire.HEADER_LEN + wire.SAMPLE_LEN + wire.CRC_LEN
    for end, unplug, reopen_time in zip(ends, unplugs, reopened):
        # Before the unplug, only what was still in the cable (a part-read frame too).
        in_cable = math.ceil(unplug.unread_bytes / frame_bytes)
        assert unplug.last_sent_us - in_cable * period_us <= t_us[end] \
            <= unplug.last_sent_us, (t_us[end], unplug)
        # After it, only what the walker sent before the link had reopened the port
        # (opening a serial port flushes its input), and not one sample more.
        assert reopen_time >= unplug.back_host_time
        reopen_us = unplug.back_us + (reopen_time - unplug.back_host_time) * 1e6
        assert unplug.back_us <= t_us[end + 1] <= reopen_us + period_us, (
            t_us[end + 1], reopen_us, unplug)


@pytest.mark.parametrize("fraction", [0.35, 0.6, 0.85])
def test_a_truncated_recording_is_diagnosed_and_recover_keeps_every_complete_chunk(
        served_walker, tmp_path, capsys, fraction):
    served = served_walker(rate_hz=100)
    full = tmp_path / "full.h5"
    record_session(served.path, full, 6.0, progress=False)
    data = full.read_bytes()
    cut = tmp_path / "cut.h5"
    cut.write_bytes(data[:int(len(data) * fraction)])
    assert walkerlab(["info", str(cut)]) == 2
    err = capsys.readouterr().err
    assert "truncated" in err and "open for writing" not in err
    out = tmp_path / "salvaged.h5"
    assert walkerlab(["recover", str(cut), "--out", str(out)]) == 0
    whole, part = open_recording(full), open_recording(out)
    n = len(part.samples)
    # Exactly a prefix of the recording: same samples, nothing invented past the cut.
    assert 0 < n <= len(whole.samples)
    np.testing.assert_array_equal(part.samples.seq, whole.samples.seq[:n])
    np.testing.assert_array_equal(part.samples.loads, whole.samples.loads[:n])
    assert part.attrs["walker_id"] == "SIM-0"


def test_when_hdf5_cannot_read_a_truncated_file_its_frames_are_salvaged_from_its_bytes(
        served_walker, tmp_path, monkeypatch):
    """HDF5 may hang on metadata past the cut; recover then decodes the file's bytes."""
    import sys

    from calibration import WalkerCalibration
    from host.recording.reader import TruncatedRecordingError
    recover_module = sys.modules["host.recording.recover"]

    served = served_walker(rate_hz=100)
    full = tmp_path / "full.h5"
    record_session(served.path, full, 4.0, progress=False)
    data = full.read_bytes()
    cut = tmp_path / "cut.h5"
    cut.write_bytes(data[:int(len(data) * 0.7)])
    out = tmp_path / "bytes.h5"
    calib = WalkerCalibration.from_json(open_recording(full).attrs["calibration"])
    report = recover_module._salvage_bytes(
        TruncatedRecordingError(cut, len(data) * 7 // 10, len(data)), str(out), calib)
    whole, part = open_recording(full), open_recording(out)
    n = len(part.samples)
    assert report.samples == n > 0.5 * len(whole.samples)
    # every salvaged sample is one the walker sent, in order, none invented
    pos = np.searchsorted(whole.samples.t_us, part.samples.t_us)
    np.testing.assert_array_equal(whole.samples.t_us[pos], part.samples.t_us)
    np.testing.assert_array_equal(whole.samples.loads[pos], part.samples.loads)
    assert part.attrs["walker_id"] == "SIM-0"  # from --calibration
    assert "salvaged" in part.attrs["notes"]

