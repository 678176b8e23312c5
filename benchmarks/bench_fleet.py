"""Evaluation and training at fleet scale: N recordings of 10 minutes (issue 22, item 5).

    .venv/bin/python benchmarks/bench_fleet.py [--recordings 25 100] [--duration 600]
        [--workers 2] [--recognizer hmm] [--quick]

Simulates N experiment-2 subjects of ``--duration`` seconds (``walkerlab simulate``,
cached under /tmp/walkerlab-bench-fleet), then runs, as a user runs them, each as its
own process with an empty feature cache (so feature computation is timed too):

* ``walkerlab evaluate --scheduler serial`` (one process),
* ``walkerlab evaluate --scheduler local --workers W`` (a Dask cluster of W
  single-threaded worker processes, started inside the timing),
* ``walkerlab train --scheduler serial`` (one fit on all N recordings, streamed),
* for contrast, the same fit as before this change: every recording's features
  loaded (``host.datasets.load_sessions``) and ``fit`` on the lists,

timing the wall clock and sampling (psutil, every 50 ms) the resident memory of the
client process and of its descendants (the Dask nannies and workers), and the CPU
seconds of the whole process tree (on a machine shared with other jobs the wall-clock
speed-up says little; CPU seconds show the work the cluster adds).  It checks that
the serial and the cluster metrics are identical and prints the speed-up, with the
size of the features of all N recordings beside the peaks: one fold's features are
(N-1)/N of it, and the HMM (``fit_streamed``) holds one recording and one feature
column of them at a time.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import resource
import shutil
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MB = 1 << 20


def _sample(pid: int, stop: threading.Event, peaks: dict) -> None:
    import psutil

    try:
        proc = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    while not stop.is_set():
        try:
            client = proc.memory_info().rss
            kids = []
            for c in proc.children(recursive=True):
                try:
                    kids.append(c.memory_info().rss)
                except psutil.NoSuchProcess:
                    pass
        except psutil.NoSuchProcess:
            return
        peaks["client"] = max(peaks["client"], client)
        if kids:
            peaks["worker"] = max(peaks["worker"], max(kids))
            peaks["workers_sum"] = max(peaks["workers_sum"], sum(kids))
        stop.wait(0.05)


IN_MEMORY_TRAIN = """
import sys
from host.datasets import load_sessions
from recognizers import get_recognizer_class
sessions = load_sessions(sys.argv[2:], "cop")
get_recognizer_class(sys.argv[1])().fit([s.X for s in sessions], [s.y for s in sessions])
"""


def run_cli(args, cache: pathlib.Path, command=None):
    """(seconds, peaks, stdout) of ``walkerlab ARGS`` in a fresh process, empty cache."""
    shutil.rmtree(cache, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), WALKERLAB_FEATURE_CACHE=str(cache))
    peaks = {"client": 0, "worker": 0, "workers_sum": 0}
    stop = threading.Event()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    command = command or [sys.executable, "-m", "host.cli"]
    proc = subprocess.Popen([*command, *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = threading.Thread(target=_sample, args=(proc.pid, stop, peaks), daemon=True)
    sampler.start()
    out, err = proc.communicate()
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds of the whole process tree (the workers are reaped by the client).
    peaks["cpu"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    stop.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit("walkerlab %s failed:\n%s" % (" ".join(args[:4]), err[-3000:]))
    return seconds, peaks, out


def feature_bytes(cache: pathlib.Path) -> int:
    import numpy as np

    total = 0
    for f in cache.glob("*.npz"):
        with np.load(f, allow_pickle=False) as z:
            total += sum(z[k].nbytes for k in z.files if k.startswith("col"))
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recordings", type=int, nargs="+", default=[25, 100])
    ap.add_argument("--duration", type=float, default=600.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--recognizer", default="hmm")
    ap.add_argument("--data", default="/tmp/walkerlab-bench-fleet")
    ap.add_argument("--no-serial", action="store_true",
                    help="skip the serial evaluation (no speed-up, no equality check)")
    ap.add_argument("--quick", action="store_true",
                    help="2 recordings of 10 s, a cluster of 1 worker (CI)")
    args = ap.parse_args(argv)
    try:
        import psutil
    except ImportError:
        print("bench_fleet needs psutil: pip install psutil", file=sys.stderr)
        return 1
    if args.quick:
        args.recordings, args.duration, args.workers = [2], 10.0, 1
        args.data = args.data + "-quick"
    from host.simulate import simulate_to_files

    data = pathlib.Path(args.data) / ("%ds" % args.duration)
    n_max = max(args.recordings)
    paths = sorted(data.glob("exp2_subject*.h5"))
    if len(paths) < n_max:
        paths = simulate_to_files("exp2", n_max, 0, data, duration_s=args.duration,
                                  overwrite=True, progress=not args.quick)
    cache = pathlib.Path(args.data) / "feature-cache"
    print("walkerlab evaluate/train --recognizer %s, exp2 recordings of %.0f s; Python %s, "
          "%s, %d cores, load %.1f, psutil %s" % (
              args.recognizer, args.duration, platform.python_version(),
              platform.processor() or platform.machine(), os.cpu_count() or 1,
              os.getloadavg()[0], psutil.__version__))
    print("| recordings | run | wall s | CPU s | speed-up | client peak RSS MB | worker peak "
          "RSS MB (sum) | features of all recordings MB | identical |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in args.recordings:
        files = [str(p) for p in paths[:n]]
        common = ["--quiet", "--recognizer", args.recognizer, *files]
        serial = None
        if not args.no_serial:
            t_s, p_s, out_s = run_cli(["evaluate", "--json", "--scheduler", "serial",
                                       *common], cache)
            serial = json.loads(out_s)["models"]
            size = feature_bytes(cache)
            print("| %d | evaluate serial | %.1f | %.1f | 1.00x | %.0f | - | %.1f | |" % (
                n, t_s, p_s["cpu"], p_s["client"] / MB, size / MB), flush=True)
        t_l, p_l, out_l = run_cli(["evaluate", "--json", "--scheduler", "local", "--workers",
                                   str(args.workers), *common], cache)
        local = json.loads(out_l)["models"]
        size = feature_bytes(cache)
        same = "" if serial is None else str(local == serial)
        speed = "" if serial is None else "%.2fx" % (t_s / t_l)
        print("| %d | evaluate local, %d workers | %.1f | %.1f | %s | %.0f | %.0f (%.0f) | %.1f "
              "| %s |" % (n, args.workers, t_l, p_l["cpu"], speed, p_l["client"] / MB,
                          p_l["worker"] / MB,
                 p_l["workers_sum"] / MB, size / MB, same), flush=True)
        out_model = pathlib.Path(args.data) / "model.npz"
        t_t, p_t, _ = run_cli(["train", "--scheduler", "serial", "--overwrite", "--out",
                               str(out_model), *common], cache)
        print("| %d | train serial | %.1f | %.1f | | %.0f | - | %.1f | |" % (
            n, t_t, p_t["cpu"], p_t["client"] / MB, feature_bytes(cache) / MB), flush=True)
        t_m, p_m, _ = run_cli([args.recognizer, *files], cache,
                              command=[sys.executable, "-c", IN_MEMORY_TRAIN])
        print("| %d | train in memory (all features loaded, `fit`: the path before) | %.1f | "
              "%.1f | | %.0f | - | | |" % (n, t_m, p_m["cpu"], p_m["client"] / MB), flush=True)
        if serial is not None and local != serial:
            print("Dask and serial metrics differ", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
