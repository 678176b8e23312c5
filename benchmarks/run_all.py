"""Run every benchmark (benchmarks/bench_*.py) in turn; `make bench` calls this.

    .venv/bin/python benchmarks/run_all.py [--only hmm,crf] [--list] [--quick]

Each benchmark is its own script with its own options (see its docstring); this
runs them with their defaults, one after another so they do not compete for the
cores, and exits non-zero if any failed.  Figures go to docs/benchmarks.md by hand,
with the command that produced them.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent


def benchmarks() -> dict[str, pathlib.Path]:
    return {p.stem[len("bench_"):]: p for p in sorted(HERE.glob("bench_*.py"))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated names (default: all)")
    ap.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    ap.add_argument("--quick", action="store_true",
                    help="run each with --quick (small sizes, seconds each)")
    args = ap.parse_args(argv)
    found = benchmarks()
    if args.list:
        print("\n".join(found))
        return 0
    names = [n for n in args.only.split(",") if n] or list(found)
    unknown = [n for n in names if n not in found]
    if unknown:
        ap.error("unknown benchmarks %s; choose among %s" % (unknown, ", ".join(found)))
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    failed = []
    for name in names:
        print("\n=== %s (%s)" % (name, found[name].relative_to(HERE.parent)), flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, str(found[name])]
                             + (["--quick"] if args.quick else []), env=env)
        print("=== %s: %s in %.0f s" % (name, "ok" if rc == 0 else "FAILED (%d)" % rc,
                                       time.perf_counter() - t0), flush=True)
        if rc:
            failed.append(name)
    if failed:
        print("failed: %s" % ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
