"""`walkerlab evaluate --scheduler ADDRESS` against a real cluster: a `dask scheduler`
and two `dask worker ADDRESS` processes started here, as docs/evaluation-cluster.md
tells users to start them on their machines (issue 22, item 5)."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from host.cli import main as walkerlab
from host.simulate import simulate_to_files

ROOT = Path(__file__).resolve().parents[2]


def _dask(*args, env):
    return subprocess.Popen([sys.executable, "-m", "dask", *args], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.fixture()
def cluster(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_NUM_THREADS="1",
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    info = tmp_path / "scheduler.json"
    procs = [_dask("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                   "--scheduler-file", str(info), env=env)]
    try:
        deadline = time.monotonic() + 60
        while not info.exists() or not info.read_text().strip():
            assert procs[0].poll() is None, procs[0].stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.2)
        address = json.loads(info.read_text())["address"]
        for i in range(2):
            procs.append(_dask("worker", address, "--nthreads", "1", "--no-dashboard",
                               "--name", "w%d" % i, "--local-directory",
                               str(tmp_path / ("w%d" % i)), env=env))
        from distributed import Client

        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.mark.slow
def test_evaluate_on_a_scheduler_and_two_worker_processes_equals_serial(cluster, tmp_path,
                                                                        capsys):
    files = [str(p) for p in simulate_to_files("exp2", 3, 5, tmp_path / "rec", duration_s=40,
                                               progress=False)]

    def evaluate(*args):
        capsys.readouterr()
        assert walkerlab(["evaluate", "--quiet", "--json", "--recognizer", "hmm,hmm-em",
                          "--param", "hmm-em:n_init=1", "--param", "n_bins=8", *args,
                          *files]) == 0
        return json.loads(capsys.readouterr().out)["models"]

    # The workers compute the features into a cache of their own (this test's
    # folder), the serial run into another: equal metrics from separate caches.
    remote = evaluate("--scheduler", cluster, "--feature-cache", str(tmp_path / "c1"))
    serial = evaluate("--scheduler", "serial", "--feature-cache", str(tmp_path / "c2"))
    assert remote == serial
    assert len(list((tmp_path / "c1").glob("*.npz"))) == 3


def test_an_unreachable_scheduler_is_a_user_error(tmp_path, capsys):
    files = [str(p) for p in simulate_to_files("exp2", 2, 5, tmp_path, duration_s=10,
                                               progress=False)]
    assert walkerlab(["evaluate", "--quiet", "--scheduler", "tcp://127.0.0.1:9",
                      *files]) == 2
    assert "cannot reach the Dask scheduler" in capsys.readouterr().err
