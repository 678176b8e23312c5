"""`walkerlab labels import` and `labels export` at scale: rows per second.

    .venv/bin/python benchmarks/bench_label_import.py [--rows 10000 40000 1000000]
    .venv/bin/python benchmarks/bench_label_import.py --quick

A one-hour simulated recording (100 Hz) receives a CSV of N overlapping segments
(random starts over the hour, 0.5-3 s long, later rows win where they overlap), imported
and exported by the command a user runs (`python -m host.cli labels import/export`, so
start-up is included; it is measured alone on a 1-row file and printed beside).
"""
from __future__ import annotations

import argparse
import csv
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from host.simulate import simulate_to_files  # noqa: E402


def write_csv(path: pathlib.Path, n: int, duration_s: float, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    start = rng.uniform(0, duration_s - 3.0, n)
    stop = start + rng.uniform(0.5, 3.0, n)
    act = rng.choice(["W", "ST", "TL", "TR", "SIT"], n)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["start_s", "stop_s", "activity"])
        w.writerows(zip(np.round(start, 4), np.round(stop, 4), act))


def timed(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "host.cli", *args], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[10_000, 40_000, 1_000_000])
    ap.add_argument("--duration", type=float, default=3600.0, help="recording length (s)")
    ap.add_argument("--quick", action="store_true", help="10,000 rows on 10 minutes (CI)")
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.duration = [10_000], 600.0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        rec = simulate_to_files("free", 1, 5, tmp, rate_hz=100, duration_s=args.duration,
                                progress=False)[0]
        one = tmp / "one.csv"
        write_csv(one, 1, args.duration)
        startup = timed(["labels", "import", str(rec), one.as_posix(), "--annotator", "x",
                         "--name", "startup"])
        print("recording: %.0f s at 100 Hz; start-up of one import (1 row): %.2f s"
              % (args.duration, startup))
        print("%10s %12s %14s %12s %14s" % ("rows", "import s", "import rows/s",
                                           "export s", "export rows/s"))
        for n in args.rows:
            src = tmp / ("labels%d.csv" % n)
            write_csv(src, n, args.duration, seed=n)
            # the rows overlap on purpose (later rows win): --lenient trims instead of refusing
            t_imp = timed(["labels", "import", str(rec), src.as_posix(), "--annotator", "x",
                           "--name", "t%d" % n, "--lenient"])
            out = tmp / ("out%d.csv" % n)
            t_exp = timed(["labels", "export", str(rec), "--format", "csv", "--out",
                           out.as_posix(), "--track", "t%d" % n])
            print("%10d %12.2f %14.0f %12.2f %14.0f" % (n, t_imp, n / t_imp, t_exp,
                                                        n / t_exp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
