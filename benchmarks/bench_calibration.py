"""Calibration accuracy against the virtual walkers' hidden constants (issue 24).

For each virtual walker SIM-0 .. SIM-(n-1), the three guided procedures of
`walkerlab calibrate` (host/calibrate.py: the same runner, link and checks as the CLI)
run over a pseudo-terminal against the walker on a calibration bench
(device/sim/bench.py), its virtual technician doing each step as the procedure asks.
The constants found are compared with the walker's hidden hardware truth
(device/sim/sensors.py default_truth), and the worst error over walkers, cells and
axes is printed beside the issue's goals. There is no peer library for this: the
comparison is with the truth and the goals.

    python benchmarks/bench_calibration.py            # 5 walkers
    python benchmarks/bench_calibration.py --quick    # 1 walker
"""
from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from host.calibrate import CalibrationStore, run_calibration  # noqa: E402
from host.virtual_port import bench_walker  # noqa: E402

GOALS = {"load gain %": 0.5, "load offset N": 0.2, "accel bias g": 0.01,
         "accel scale %": 0.5, "encoder %": 0.5}


class ScriptedUI:
    """Answers every prompt with its default (Enter), like a technician who does as told."""

    def say(self, text):
        pass

    def ask(self, prompt, default=""):
        return default

    def live(self, text):
        pass


def calibrate_walker(seed: int, speed: float, masses, distance_m: float) -> dict:
    walker, technician, truth = bench_walker(seed, speed=speed)
    store = CalibrationStore(tempfile.mkdtemp(prefix="bench-cal-"))
    t0 = time.perf_counter()
    with walker:
        for procedure in ("load", "accel", "encoder"):
            cal, _ = run_calibration(walker.path, procedure, ScriptedUI(), store,
                                     technician=technician, masses_kg=masses,
                                     distance_m=distance_m, save=True)
    wall = time.perf_counter() - t0
    gains = np.array(cal.load_gains_counts_per_n)
    return {
        "walker": truth.walker_id,
        "load gain %": float(np.max(np.abs(100 * (gains / truth.load_gains_counts_per_n - 1)))),
        "load offset N": float(np.max(np.abs((np.array(cal.load_offsets_counts)
                                              - truth.load_offsets_counts)
                                             / truth.load_gains_counts_per_n))),
        "accel bias g": float(np.max(np.abs((np.array(cal.accel_bias_counts)
                                             - truth.accel_bias_counts)
                                            / truth.accel_counts_per_g))),
        "accel scale %": float(np.max(np.abs(100 * (np.array(cal.accel_counts_per_g)
                                                    / truth.accel_counts_per_g - 1)))),
        "encoder %": abs(100 * (cal.metres_per_tick / truth.metres_per_tick - 1)),
        "wall s": wall,
        "history": len(store.history(truth.walker_id)),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one walker")
    ap.add_argument("--walkers", type=int, default=5)
    ap.add_argument("--speed", type=float, default=8.0,
                    help="walker device seconds per real second (default 8)")
    ap.add_argument("--masses", default="10,20", help="kg over each leg (default 10,20)")
    ap.add_argument("--distance", type=float, default=5.0, help="roll distance, m")
    args = ap.parse_args(argv)
    n = 1 if args.quick else args.walkers
    masses = [float(m) for m in args.masses.split(",")]
    print("# calibration against the hidden truth: %d virtual walker(s), masses %s kg per "
          "leg, rolls 2 x %g m, walker speed x%g" % (n, args.masses, args.distance, args.speed))
    print("# python %s, numpy %s, %s" % (platform.python_version(), np.__version__,
                                        platform.processor() or platform.machine()))
    cols = list(GOALS)
    print("| walker | " + " | ".join(cols) + " | wall s |")
    print("|---|" + "---:|" * (len(cols) + 1))
    rows = []
    for seed in range(n):
        r = calibrate_walker(seed, args.speed, masses, args.distance)
        assert r["history"] == 3, r
        rows.append(r)
        print("| %s | " % r["walker"] + " | ".join("%.4f" % r[c] for c in cols)
              + " | %.1f |" % r["wall s"], flush=True)
    worst = {c: max(r[c] for r in rows) for c in cols}
    print("| **worst** | " + " | ".join("%.4f" % worst[c] for c in cols) + " | |")
    print("| goal (issue 24) | " + " | ".join("%g" % GOALS[c] for c in cols) + " | |")
    missed = [c for c in cols if worst[c] > GOALS[c]]
    print("goals missed: %s" % (", ".join(missed) if missed else "none"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
