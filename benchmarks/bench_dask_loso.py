"""Leave-one-subject-out on Dask vs in one process (issue 10).

    .venv/bin/python benchmarks/bench_dask_loso.py [--subjects 8 16 32] [--recognizer hmm-em]
        [--workers 2] [--duration 300] [--n-init 5]

Simulates experiment-2 subjects (``--duration`` seconds each, cached under
/tmp/walkerlab-bench-dask), then times ``evaluate_recordings`` with
``scheduler="serial"`` and ``scheduler="local"`` (a LocalCluster of ``--workers``
single-threaded processes, started inside the timing) for each subject count, checks
that both give identical metrics, and prints the speed-up.  The default recognizer,
EM with 5 restarts, makes folds heavy enough for the cluster to pay off.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from host.evaluate import ModelSpec, evaluate_recordings  # noqa: E402
from host.simulate import simulate_to_files  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--subjects", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--recognizer", default="hmm-em")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--duration", type=float, default=300.0)
    ap.add_argument("--data", default="/tmp/walkerlab-bench-dask")
    ap.add_argument("--n-init", type=int, default=5, help="hmm-em: EM restarts per fit")
    ap.add_argument("--quick", action="store_true",
                    help="3 subjects of 15 s, 2 EM restarts (CI)")
    args = ap.parse_args(argv)
    if args.quick:
        args.subjects, args.duration, args.n_init = [3], 15.0, 2
    params = {"n_init": args.n_init} if args.recognizer == "hmm-em" else {}
    spec = [ModelSpec(args.recognizer, params)]
    data = pathlib.Path(args.data) / ("%ds" % args.duration)
    n_max = max(args.subjects)
    paths = sorted(data.glob("exp2_subject*.h5"))
    if len(paths) < n_max:
        paths = simulate_to_files("exp2", n_max, 1, data, duration_s=args.duration,
                                  overwrite=True, progress=True)
    print("%s %s, %d workers, exp2 subjects of %.0f s" % (
        args.recognizer, params, args.workers, args.duration))
    print("| subjects (folds) | serial s | Dask local s | speed-up | identical |")
    print("|---|---|---|---|---|")
    for n in args.subjects:
        files = paths[:n]
        t0 = time.perf_counter()
        serial = evaluate_recordings(files, spec, scheduler="serial")
        t1 = time.perf_counter()
        dask = evaluate_recordings(files, spec, scheduler="local", n_workers=args.workers)
        t2 = time.perf_counter()
        same = serial == dask
        print("| %d | %.1f | %.1f | %.2fx | %s |" % (n, t1 - t0, t2 - t1, (t1 - t0) / (t2 - t1),
                                                     same), flush=True)
        if not same:
            print("Dask and serial metrics differ", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
