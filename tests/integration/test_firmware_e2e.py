"""End to end over a real pseudo-terminal: the virtual walker runs the firmware on
simulated electronics; the host deploys a model, records, tares, changes the rate,
and finds the on-device recognizer's ACTIVITY frames, equal to its own filter."""
import time

import numpy as np
import pytest

from calibration import calibration_for
from device.protocol import wire
from host.cli import main as walkerlab
from host.link import QueueSink, SerialLink
from host.pipeline import RecognitionPipeline
from host.recording import RecorderThread, open_recording
from host.simulate import simulate_to_files

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def hmm_file(tmp_path_factory):
    from host.datasets import load_sessions
    from recognizers.hmm_recognizer import HMMRecognizer

    out = tmp_path_factory.mktemp("fw-model")
    paths = simulate_to_files("free", 1, 31, out, duration_s=300, progress=False)
    s = load_sessions(paths, feature_set="cop")
    model = HMMRecognizer().fit([x.X for x in s], [x.y for x in s], feature_set="cop")
    return model, model.save(out / "hmm.npz")


def test_deploy_record_tare_rate_and_on_device_activity(served_walker, tmp_path, capsys,
                                                        hmm_file):
    model, model_path = hmm_file
    served = served_walker(course="free", seed=5)
    assert walkerlab(["deploy-model", str(model_path), "--port", served.path, "--quiet"]) == 0
    assert "deployed" in capsys.readouterr().err
    assert served.walker.firmware.recognizer is not None

    out = tmp_path / "fw.h5"
    recorder = RecorderThread(out).start()
    raw = QueueSink(maxsize=100_000)
    link = SerialLink(served.path, rate_hz=100)
    link.add_sink(recorder)
    link.add_sink(raw)
    link.open()
    seen, decoder = [], wire.FrameDecoder(track_sequence=False)
    raw_batches = []

    def wait_for(condition):
        """Collect frames until condition(frames) holds: the walker streams in real
        time, so a busy machine takes longer (the ceiling only guards against a hang)."""
        deadline = time.monotonic() + 120
        while not condition(seen):
            assert time.monotonic() < deadline, "the walker never got there"
            time.sleep(0.05)
            for batch in raw.drain():
                raw_batches.append(batch)
                seen.extend(decoder.feed(batch.raw))

    def n_after(kind, index):
        return sum(f.frame_type == kind for f in seen[index:])

    def index_of(match, start=0):
        return next((i for i, f in enumerate(seen) if i >= start and match(f)), None)

    try:
        deadline = time.monotonic() + 120  # a ceiling against a hang
        while link.info is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert link.info is not None
        # The calibration deploy-model took: the one the walker reports from its flash.
        walker_cal = calibration_for(link.info["walker_id"], link.info.get("calibration"),
                                     use_sources=False)
        recorder.put_session(walker_id=link.info["walker_id"],
                             firmware_version=link.info["firmware_version"],
                             calibration=walker_cal.to_json())
        wait_for(lambda fr: n_after(wire.SAMPLE, 0) >= 100)
        link.send_command(wire.CMD_TARE)

        def tare_done(f):
            return f.frame_type == wire.LOG and b"tare done" in f.payload

        wait_for(lambda fr: index_of(tare_done) is not None
                 and n_after(wire.SAMPLE, index_of(tare_done)) >= 50)
        link.send_command(wire.CMD_SET_RATE, wire.pack_set_rate(50))

        def rate_acked(f):
            return f.frame_type == wire.ACK and f.payload[0] == wire.CMD_SET_RATE

        def new_rate_ack():  # the link's own SET_RATE at open is acknowledged too
            return index_of(rate_acked, start=index_of(tare_done))

        wait_for(lambda fr: new_rate_ack() is not None
                 and n_after(wire.SAMPLE, new_rate_ack()) >= 50
                 and n_after(wire.ACTIVITY, 0) >= 5)
    finally:
        link.close()
        recorder.close()

    frames = wire.FrameDecoder(track_sequence=False).feed(
        b"".join(batch.raw for batch in raw_batches + raw.drain()))
    kinds = [f.frame_type for f in frames]
    acks = [i for i, f in enumerate(frames) if f.frame_type == wire.ACK]
    tare_ack = next(i for i in acks if frames[i].payload[0] == wire.CMD_TARE)
    rate_ack = next(i for i in acks if frames[i].payload[0] == wire.CMD_SET_RATE
                    and i > tare_ack)
    samples = [(i, f.t_us, wire.unpack_sample(f.payload)) for i, f in enumerate(frames)
               if f.frame_type == wire.SAMPLE]

    # SET_RATE took effect: 100 Hz before the ACK, 50 Hz after it.
    dt_before = np.diff([t for i, t, _ in samples if tare_ack < i < rate_ack])
    dt_after = np.diff([t for i, t, _ in samples if i > rate_ack])
    assert set(dt_before.tolist()) == {10_000} and set(dt_after.tolist()) == {20_000}

    # TARE took effect: status bit from one sample on, loads shifted by the tare.
    tared = [k for k, (i, _, s) in enumerate(samples) if s[9] & wire.STATUS_TARED]
    assert tared and all(s[9] & wire.STATUS_TARED for _, _, s in samples[tared[0]:])
    assert not any(s[9] & wire.STATUS_TARED for i, _, s in samples if i < tare_ack)
    assert any(f.frame_type == wire.LOG and b"tare done" in f.payload for f in frames)
    first = tared[0]
    during = [s for i, _, s in samples[:first] if i > tare_ack]
    before, after = samples[first - 1][2], samples[first][2]
    tare = served.walker.firmware._tare  # what the firmware subtracts
    conv = [[s[3 + c] for s in during if s[8] & (1 << c)] for c in range(4)]
    fresh = [bool(after[8] & (1 << c)) for c in range(4)]
    # The tare completes while the first tared sample reads its cells in order: at
    # the last cell whose 16th conversion arrives there. Fresh cells up to it are in
    # the tare (their sent value is raw - T); later ones are not.
    done_at = max(c for c in range(4) if fresh[c] and len(conv[c]) == 15)
    for c in range(4):
        t = tare[c]
        assert len(conv[c]) >= 15
        if fresh[c] and c <= done_at:
            assert (sum(conv[c]) + after[3 + c] + t) // (len(conv[c]) + 1) == t
        else:
            assert t == sum(conv[c]) // len(conv[c])
        if not fresh[c]:  # the held conversion, now minus the tare
            assert before[3 + c] - after[3 + c] == t

    # On-device ACTIVITY frames are in the recording and equal the host's filter.
    rec = open_recording(out)
    assert wire.ACTIVITY in kinds and len(rec.device_activity) >= 5  # >= 1 a second
    pipe = RecognitionPipeline(walker_cal, model)
    post = pipe.process(rec.samples).posterior
    index = {int(t): k for k, t in enumerate(rec.samples.t_us)}
    classes = [str(c) for c in model.classes_]
    for row in rec.device_activity:
        k = index[int(row["t_us"])]
        assert row["class_index"] == int(np.argmax(post[k]))
        assert row["code"] == classes[row["class_index"]]
        assert abs(float(row["confidence"]) - post[k].max()) < 1e-6
    assert ((rec.samples.status & wire.STATUS_MODEL_ACTIVE) != 0).all()


def test_deploy_model_clear_errors(tmp_path, capsys, hmm_file, served_walker):
    _, model_path = hmm_file
    assert walkerlab(["deploy-model", str(model_path), "--port", str(tmp_path / "none")]) == 2
    assert "does not exist" in capsys.readouterr().err
    bogus = tmp_path / "bogus.npz"
    bogus.write_bytes(b"not a model")
    served = served_walker()
    assert walkerlab(["deploy-model", str(bogus), "--port", served.path, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("walkerlab deploy-model: error:") and "Traceback" not in err
    served.walker.firmware.storage = None  # a walker that cannot keep a model
    assert walkerlab(["deploy-model", str(model_path), "--port", served.path, "--quiet"]) == 2
    assert "refused the model: it has no storage" in capsys.readouterr().err
    assert served.walker.firmware.recognizer is None


def test_flash_refuses_a_port_that_is_not_micropython(served_walker, capsys, monkeypatch):
    import host.flash as flash

    monkeypatch.setattr(flash, "PROBE_TIMEOUT_S", 0.5)
    monkeypatch.setattr(flash, "REBOOT_WAIT_S", 0.1)
    served = served_walker()
    assert walkerlab(["flash", "--port", served.path]) == 2
    err = capsys.readouterr().err
    assert "does not answer as a MicroPython board" in err


def test_flash_dry_run_lists_every_firmware_module(capsys):
    import pathlib

    assert walkerlab(["flash", "--port", "/dev/null", "--dry-run"]) == 0
    listed = capsys.readouterr().out.split()
    root = pathlib.Path(__file__).resolve().parents[2] / "device"
    expected = {"device/firmware/%s" % p.name for p in (root / "firmware").glob("*.py")
                if p.name != "main.py"}
    assert expected <= set(listed) and "main.py" in listed
    assert "device/protocol/wire.py" in listed


def _serve(tmp_path, flash_dir):
    import subprocess
    import sys

    link = tmp_path / "vw-port"
    proc = subprocess.Popen([sys.executable, "-m", "host.cli", "virtual-walker", "--link",
                             str(link), "--flash-dir", str(flash_dir), "--duration", "30"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == str(link)
    return proc, str(link)


def _stream_frames(port_name, until):
    """Frames streamed until ``until(frames)`` holds (the ceiling guards against a hang;
    a busy machine only takes longer)."""
    import serial

    decoder = wire.FrameDecoder(track_sequence=False)
    frames = []
    with serial.Serial(port_name, 921600, timeout=0.05) as port:
        port.write(wire.encode_frame(wire.CMD_START, 1, 0))
        deadline = time.monotonic() + 120
        while not until(frames):
            assert time.monotonic() < deadline, "the walker stopped sending"
            frames += decoder.feed(port.read(4096))
        port.write(wire.encode_frame(wire.CMD_STOP, 2, 0))
    return frames


def _n_samples(frames):
    return sum(f.frame_type == wire.SAMPLE for f in frames)


def test_virtual_walker_keeps_a_deployed_model_on_its_flash_dir(tmp_path, hmm_file):
    _, model_path = hmm_file
    flash = tmp_path / "flash"
    proc, port = _serve(tmp_path, flash)
    try:
        frames = _stream_frames(port, lambda fr: _n_samples(fr) >= 20)
        assert frames and not any(f.frame_type == wire.ACTIVITY for f in frames)
        assert walkerlab(["deploy-model", str(model_path), "--port", port, "--quiet"]) == 0
    finally:
        proc.terminate()
        proc.wait(10)
    assert (flash / "model.wlm").exists()
    proc, port = _serve(tmp_path, flash)  # "power cycle": the model comes back
    try:
        frames = _stream_frames(port, lambda fr: _n_samples(fr) >= 20 and any(
            f.frame_type == wire.ACTIVITY for f in fr))
    finally:
        proc.terminate()
        proc.wait(10)
    samples = [wire.unpack_sample(f.payload) for f in frames if f.frame_type == wire.SAMPLE]
    assert samples and all(s[9] & wire.STATUS_MODEL_ACTIVE for s in samples)
    assert any(f.frame_type == wire.ACTIVITY for f in frames)


def test_flash_stages_every_file_and_runs_mpremote(tmp_path, monkeypatch, capsys):
    """The copy itself, with mpremote replaced by a stand-in that checks the stage."""
    import pathlib
    import subprocess

    import host.flash as flash

    port = tmp_path / "ttyACM0"
    port.write_text("")
    monkeypatch.setattr(flash, "_probe_repl", lambda name: True)
    seen = {}

    def fake_run(cmd, **kwargs):
        i = cmd.index("cp")
        stage = pathlib.Path(cmd[i + 2]).parent
        for local, remote in flash.firmware_files():
            assert (stage / remote).read_bytes() == local.read_bytes()
        seen["cmd"] = cmd
        return subprocess.CompletedProcess(cmd, seen.get("rc", 0), "", "mpremote: no device")

    monkeypatch.setattr(flash.subprocess, "run", fake_run)
    assert walkerlab(["flash", "--port", str(port)]) == 0
    cmd = seen["cmd"]
    assert cmd[1:3] == ["connect", str(port)] and cmd[-1] == "reset"
    assert ":main.py" in cmd
    seen["rc"] = 1
    assert walkerlab(["flash", "--port", str(port)]) == 2
    assert "mpremote failed: mpremote: no device" in capsys.readouterr().err
