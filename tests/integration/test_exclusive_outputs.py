"""Two commands writing one output: exactly one succeeds, the other exits 2 in one line,
and the success message describes the file on disk (issue 34, item 1).

Each race runs two real `walkerlab` processes. They import everything first, then
wait for a start file to appear, so both run their command at the same moment; and
the mechanism itself (host/outputs.py) is raced with both processes held at a barrier
inside the write, past every up-front check, so the publication step alone decides.
"""
import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
import time

import h5py
import numpy as np
import pytest

from host.errors import UserError
from host.outputs import OutputExistsError, exclusive_output, exclusive_outputs
from host.simulate import simulate_to_files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Imports the CLI, says it is ready, waits for the start file, then runs the command.
STARTER = textwrap.dedent("""
    import os, sys, time
    from host.cli import main
    import host.cli.data, host.cli.models, host.cli.analysis, host.export, host.simulate
    go, ready = sys.argv[1], sys.argv[2]
    open(ready, "w").close()
    while not os.path.exists(go):
        time.sleep(0.001)
    sys.exit(main(sys.argv[3:]))
""")


def race(tmp_path, *argvs):
    """Run each argv as `walkerlab ARGV` in its own process, started together:
    [(exit status, stdout, stderr)] in the order of ``argvs``."""
    go = tmp_path / "go"
    go.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=ROOT)
    procs, readies = [], []
    for i, argv in enumerate(argvs):
        ready = tmp_path / ("ready%d" % i)
        ready.unlink(missing_ok=True)
        readies.append(ready)
        procs.append(subprocess.Popen(
            [sys.executable, "-c", STARTER, str(go), str(ready), *map(str, argv)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for ready, proc in zip(readies, procs):
        while not ready.exists():  # every process has imported and waits for the start
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.01)
    go.touch()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        results.append((proc.returncode, out, err))
    for f in [go, *readies]:
        f.unlink()
    return results


def one_winner(results):
    """(index of the winner, its stdout+stderr): exactly one exit 0, the other exit 2
    with one line saying the output is taken, and no traceback."""
    codes = sorted(r[0] for r in results)
    assert codes == [0, 2], results
    win = next(i for i, r in enumerate(results) if r[0] == 0)
    lose = results[1 - win]
    assert "Traceback" not in lose[2]
    assert len(lose[2].strip().splitlines()) == 1, lose[2]
    assert "already exists" in lose[2] or "another command" in lose[2], lose[2]
    return win, results[win][1] + results[win][2]


@pytest.fixture(scope="module")
def two_recordings(tmp_path_factory):
    out = tmp_path_factory.mktemp("rec")
    a = simulate_to_files("exp2", 1, 3, out, duration_s=12, progress=False)[0]
    b = simulate_to_files("exp2", 1, 4, out, duration_s=20, progress=False)[0]
    return str(a), str(b)


# ---- the mechanism --------------------------------------------------------------------
def _write_at_barrier(path, text, barrier, results):
    try:
        with exclusive_output(path) as tmp:
            tmp.write_text(text)
            barrier.wait(timeout=120)  # both are past every check before either publishes
        results.put(("ok", text))
    except OutputExistsError as exc:
        results.put(("refused", str(exc)))


def test_of_two_processes_past_the_check_exactly_one_publishes(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    path = tmp_path / "out.txt"
    procs = [ctx.Process(target=_write_at_barrier, args=(path, text, barrier, results))
             for text in ("first writer\n", "second writer\n")]
    for p in procs:
        p.start()
    got = sorted(results.get(timeout=300) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert [g[0] for g in got] == ["ok", "refused"], got
    assert path.read_text() == got[0][1]  # the file is the winner's, whole
    assert "another command" in got[1][1]
    assert sorted(os.listdir(tmp_path)) == ["out.txt"]  # no temporary left behind


def test_a_group_is_published_whole_or_not_at_all(tmp_path):
    taken = tmp_path / "b.txt"
    with pytest.raises(OutputExistsError):
        with exclusive_outputs([tmp_path / "a.txt", taken]) as (ta, tb):
            ta.write_text("a")
            tb.write_text("b")
            taken.write_text("someone else's")  # appears while we write
    assert taken.read_text() == "someone else's"
    assert sorted(os.listdir(tmp_path)) == ["b.txt"]  # a.txt rolled back, no temporaries


def test_a_failed_writer_leaves_nothing_and_overwrite_replaces_whole(tmp_path):
    path = tmp_path / "x.bin"
    with pytest.raises(RuntimeError):
        with exclusive_output(path) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("writer crashed")
    assert os.listdir(tmp_path) == []
    path.write_bytes(b"old")
    with pytest.raises(UserError, match="already exists"):
        with exclusive_output(path):
            pass
    with exclusive_output(path, overwrite=True) as tmp:
        tmp.write_bytes(b"new")
    assert path.read_bytes() == b"new" and os.listdir(tmp_path) == ["x.bin"]


def test_a_folder_is_published_no_replace(tmp_path):
    final = tmp_path / "report"
    with exclusive_output(final) as tmp:
        tmp.mkdir()
        (tmp / "index.html").write_text("one")
    with pytest.raises(OutputExistsError):
        with exclusive_output(final, overwrite=False) as tmp:
            pass
    with exclusive_output(final, overwrite=True) as tmp:
        tmp.mkdir()
        (tmp / "index.html").write_text("two")
    assert (final / "index.html").read_text() == "two"
    assert os.listdir(tmp_path) == ["report"]


# ---- the commands ----------------------------------------------------------------------
def test_two_exports_to_one_file(two_recordings, tmp_path):
    out = tmp_path / "same.csv"
    win, said = one_winner(race(tmp_path, *[["export", f, "--format", "csv", "--out", out]
                                            for f in two_recordings]))
    from host.export import recording_table

    rows = sum(1 for _ in open(out)) - 1
    assert "%s: %d rows" % (out, rows) in said  # the message describes the file on disk
    lengths = [len(recording_table(f)["time_s"]) for f in two_recordings]
    assert lengths[0] != lengths[1] and rows == lengths[win]  # the winner's data
    assert os.listdir(tmp_path) == ["same.csv"]  # no temporary left behind


def test_two_simulates_into_one_folder(tmp_path):
    out = tmp_path / "sim"
    argv = ["simulate", "--course", "exp2", "--duration", "5", "--quiet", "--out", out]
    # The same sessions: one writes them, the other refuses in one line.
    _, said = one_winner(race(tmp_path, argv + ["--seed", "1", "--subjects", "2"],
                              argv + ["--seed", "1", "--subjects", "2"]))
    files = sorted(os.listdir(out))
    assert files == ["exp2_subject001.h5", "exp2_subject002.h5"]
    assert all(str(out / f) in said for f in files)
    # Different sessions into the same folder: distinct files, both succeed.
    results = race(tmp_path, argv + ["--seed", "10"], argv + ["--seed", "11"])
    assert [r[0] for r in results] == [0, 0], results
    assert sorted(os.listdir(out)) == files + ["exp2_subject010.h5", "exp2_subject011.h5"]
    for f in os.listdir(out):
        with h5py.File(out / f, "r") as h:
            assert h.attrs["closed_cleanly"]


def test_two_label_exports_to_one_file(two_recordings, tmp_path):
    out = tmp_path / "labels.csv"
    _, said = one_winner(race(tmp_path, *[["labels", "export", f, "--format", "csv",
                                           "--out", out] for f in two_recordings]))
    n = sum(1 for _ in open(out)) - 1
    assert "%s: %d segment(s)" % (out, n) in said


def test_two_trains_to_one_model_and_two_to_the_registry(two_recordings, tmp_path):
    from host.models import default_models_dir, load_model

    out = tmp_path / "m.npz"
    argv = ["train", "--recognizer", "hmm", "--scheduler", "serial", "--quiet"]
    win, said = one_winner(race(tmp_path, *[argv + ["--out", out, f]
                                            for f in two_recordings]))
    assert "to %s" % out in said
    assert load_model(out).metadata_["training_recordings"] == [
        os.path.abspath(two_recordings[win])]  # the file is the winner's model
    # Without --out, each gets a new file in the registry; neither replaces the other.
    results = race(tmp_path, *[argv + [f] for f in two_recordings])
    assert [r[0] for r in results] == [0, 0], results
    saved = sorted(default_models_dir().glob("*.npz"))
    assert len(saved) == 2
    assert sorted(load_model(p).metadata_["training_recordings"][0] for p in saved) == \
        sorted(os.path.abspath(f) for f in two_recordings)


def test_two_reports_to_one_folder(two_recordings, tmp_path):
    report = tmp_path / "report"
    argv = ["evaluate", "--recognizer", "hmm", "--scheduler", "serial", "--quiet",
            "--report", report, *two_recordings]
    _, said = one_winner(race(tmp_path, argv, argv))
    assert "report written to %s" % (report / "index.html") in said
    assert (report / "metrics.json").stat().st_size > 0
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".")]


def test_two_topic_fits_to_one_file(two_recordings, tmp_path):
    out = tmp_path / "topics.npz"
    argv = ["topics", "fit", *two_recordings, "--topics", "2", "--words", "8", "--quiet",
            "--out", out]
    _, said = one_winner(race(tmp_path, argv, argv + ["--topics", "3"]))
    with np.load(out) as z:
        header = json.loads(bytes(z["header"]).decode())
    assert "%s: %d topics" % (out, header["n_topics"]) in said
