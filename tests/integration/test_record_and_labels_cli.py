"""`walkerlab record` over a real pseudo-terminal: a failed start leaves no file, a busy
port says "in use", Ctrl-C keeps what was recorded and exits 130; and hand-made labels
of that live recording (whose time base starts one frame in) import (issue 34)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from host.cli import main as walkerlab
from host.recording import open_recording
from host.recording.reader import open_h5, writer_alive

pytestmark = pytest.mark.integration
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _record(port, out, seconds, *extra):
    return subprocess.Popen([sys.executable, "-m", "host.cli", "record", "--port", port,
                             "--duration", str(seconds), "--out", str(out), "--quiet",
                             *extra], stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=ROOT))


def _wait_for_samples(path, proc, n, timeout=60.0):
    """Wait (a hang guard, not a timing check) until the live file holds n samples."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        if os.path.exists(path) and writer_alive(path):
            with open_h5(path) as f:
                if f["acquisition/samples/seq"].shape[0] >= n:
                    return
        time.sleep(0.1)
    pytest.fail("no %d samples within %s s" % (n, timeout))


def test_a_record_that_cannot_open_its_port_leaves_no_file(tmp_path, capsys):
    out = tmp_path / "x.h5"
    assert walkerlab(["record", "--port", os.devnull, "--out", str(out), "--duration",
                      "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a serial port" in err
    assert not [f for f in os.listdir(tmp_path) if "x.h5" in f]
    # the retry is not told "already exists"
    assert walkerlab(["record", "--port", os.devnull, "--out", str(out), "--duration",
                      "2", "--quiet"]) == 2
    assert "already exists" not in capsys.readouterr().err


def test_busy_port_and_ctrl_c_during_record(served_walker, tmp_path):
    served = served_walker()
    out = tmp_path / "a.h5"
    first = _record(served.path, out, 600)
    try:
        _wait_for_samples(out, first, 100)
        second = _record(served.path, tmp_path / "b.h5", 5)
        _, err = second.communicate(timeout=120)
        assert second.returncode == 2 and "in use" in err and err.count("\n") == 1, err
        assert "Errno" not in err and not (tmp_path / "b.h5").exists()
        first.send_signal(signal.SIGINT)
        _, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 130, err
    assert "interrupted: kept" in err and str(out) in err
    kept_s = float(err.split("kept ")[1].split(" s")[0])
    rec = open_recording(out)  # closed cleanly, readable, holds what it said
    assert rec.summary()["closed_cleanly"]
    assert len(rec.time_s) >= 100
    assert abs((rec.time_s[-1] - rec.time_s[0]) - kept_s) < 1.0


@pytest.fixture(scope="module")
def live_recording(tmp_path_factory):
    """A short recording made over a pseudo-terminal, as a user makes one."""
    from tests.integration.conftest import ServedWalker

    tmp = tmp_path_factory.mktemp("live")
    served = ServedWalker(tmp, course="free", seed=3)
    try:
        out = tmp / "live.h5"
        proc = _record(served.path, out, 4)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    finally:
        served.stop()
    return out


def _csv(path, rows):
    path.write_text("start_s,stop_s,activity\n" + "".join("%s,%s,%s\n" % r for r in rows))
    return str(path)


def test_labels_from_zero_to_the_rounded_end_import_strictly(live_recording, tmp_path,
                                                             capsys):
    rec = open_recording(live_recording)
    period = float(rec.time_s[1] - rec.time_s[0])
    assert rec.time_s[0] > 0  # the live time base starts at the first frame, not a sample
    assert walkerlab(["info", str(live_recording), "--json"]) == 0
    duration = json.loads(capsys.readouterr().out)["duration_s"]
    end = float(rec.time_s[-1]) + period
    copy = tmp_path / "r.h5"
    # to the length `info` shows (last sample minus first), or to the end of the last
    # sample rounded to 10 ms
    for stop in ["%.3f" % duration, "%.2f" % end]:
        copy.write_bytes(live_recording.read_bytes())
        labels = _csv(tmp_path / "l.csv", [(0, 1, "ST"), (1, stop, "WF")])
        assert walkerlab(["labels", "import", str(copy), labels, "--annotator", "bo"]) == 0, \
            capsys.readouterr().err
        segs = open_recording(copy).labels["bo"].segments()
        assert segs[0][0] == pytest.approx(rec.time_s[0])  # snapped to the first sample
        labelled = open_recording(copy).labels_per_sample("bo")
        if stop == "%.2f" % end:
            assert (labelled != "").all()  # every sample got a label
    capsys.readouterr()
    # One period of tolerance at each end, and no more.
    for rows, ok in [([(-period, 1, "ST")], True), ([(-2.5 * period, 1, "ST")], False),
                     ([(1, end + period, "ST")], True), ([(1, end + 2.5 * period, "ST")],
                                                          False)]:
        copy.write_bytes(live_recording.read_bytes())
        code = walkerlab(["labels", "import", str(copy), _csv(tmp_path / "l.csv", rows),
                          "--annotator", "bo"])
        err = capsys.readouterr().err
        assert code == (0 if ok else 2), (rows, err)
        if not ok:
            assert "is outside the recording (0-%g s)" % end in err


def test_lenient_says_what_was_done_to_each_line(live_recording, tmp_path, capsys):
    copy = tmp_path / "r.h5"
    copy.write_bytes(live_recording.read_bytes())
    end = float(open_recording(copy).time_s[-1]) + 0.02
    rows = [(0, 2, "ST"), (1.5, 3, "WF"), (3.5, end + 5, "TL"), (end + 10, end + 12, "ST"),
            (3, 3.5, "XYZ")]
    assert walkerlab(["labels", "import", str(copy), _csv(tmp_path / "l.csv", rows),
                      "--annotator", "bo", "--lenient"]) == 0
    lines = capsys.readouterr().err.strip().splitlines()
    said = {line.split(": ", 1)[1].split(": line")[0]: line for line in lines}
    assert "trimmed (the later segment wins where they overlap)" in said
    assert "line 3 (1.5-3 s WF) overlaps line 2" in said[
        "trimmed (the later segment wins where they overlap)"]
    assert "line 4" in said["clipped to the recording"]
    assert "line 5" in said["dropped (nothing of it is in the recording)"]
    assert "line 6" in said["kept the unknown code"]
    assert len(lines) == 4  # one line per problem, each naming what was done
    segs = open_recording(copy).labels["bo"].segments()
    assert [c for _, _, c in segs] == ["ST", "WF", "XYZ", "TL"]
    # boundaries snap to the sample grid: within half a period
    assert segs[0][1] == pytest.approx(1.5, abs=0.011) and segs[-1][1] == pytest.approx(end)
