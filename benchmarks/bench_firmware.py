"""On-device HMM cost per step, and the virtual walker's simulation speed.

Run: .venv/bin/python benchmarks/bench_firmware.py [--no-sim] [--repeat 5]

For K classes x 8 sensors x 20 bins, with dense transitions and with the thesis's
persistence transitions (eq 6.13): the firmware filter's time per step under CPython
and under MicroPython's unix port (the interpreter the board runs, here on x86), the
host's numba filter (HMMRecognizer.step, the peer, measured in the same run) and the
ratios, the inner-loop operation count, the RAM of the tables (float32 on a board,
float64 under CPython) and the model file size. Then the time to simulate one exp1
session with the fast and the bit-level board. Times are the best of --repeat runs.
"""
from __future__ import annotations

import argparse
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from device.firmware import model_format
from device.firmware.hmm_filter import DeviceHMM
from device.sim.virtual_walker import simulate_session_bytes
from recognizers.discretize import EqualFrequencyDiscretizer
from recognizers.hmm_recognizer import HMMRecognizer
from recognizers.modelling.hmm import (
    CategoricalEmissions,
    MultiCategoricalHMM,
    persistence_transmat,
)

ROOT = pathlib.Path(__file__).resolve().parents[1]
N_STEPS = 2000
MPY_SCRIPT = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from device.firmware import model_format
from device.firmware.hmm_filter import DeviceHMM
rows = []
with open(sys.argv[3]) as f:
    for line in f:
        rows.append([float(v) for v in line.split()])
with open(sys.argv[2], 'rb') as f:
    dev = DeviceHMM(model_format.unpack_model(f.read()))
best = 1e30
for r in range(int(sys.argv[4])):
    dev.reset()
    t0 = time.ticks_us()
    for x in rows:
        dev.step(x)
    best = min(best, time.ticks_diff(time.ticks_us(), t0) / len(rows))
print(best)
"""


def synthetic(K, S, M, rng, dense):
    """An HMMRecognizer with random tables (the cost does not depend on the values)."""
    X = rng.standard_normal((5000, S))
    disc = EqualFrequencyDiscretizer(M).fit(X)
    B = rng.dirichlet(np.ones(M), size=(S, K))
    A = rng.dirichlet(np.ones(K), size=K) if dense else persistence_transmat(K, 4000.0)
    rec = HMMRecognizer(n_bins=M)
    rec.classes_ = np.array(["C%d" % k for k in range(K)])
    rec.n_features_in_ = S
    rec.feature_set_ = None
    rec.discretizer_ = disc
    rec.model_ = MultiCategoricalHMM.from_params(np.full(K, 1 / K), A,
                                                 CategoricalEmissions(B, disc.n_bins_),
                                                 missing="sentinel")
    rec._build_runtime()
    return rec, X[:N_STEPS]


def n_ops(K, S, M, dense):
    """Inner-loop operations per step: bisection steps, table adds, exps, prediction
    (K*K multiply-adds dense, K with persistence transitions), normalisation."""
    return S * int(np.ceil(np.log2(M))) + S * K + K + (K * K if dense else K) + 2 * K


def _best(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def micropython_us(data, X, repeat):
    exe = shutil.which("micropython") or str(pathlib.Path(sys.executable).with_name("micropython"))
    if not pathlib.Path(exe).exists():
        return float("nan")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "m.wlm").write_bytes(data)
        np.savetxt(tmp / "x.txt", X)
        (tmp / "b.py").write_text(MPY_SCRIPT)
        out = subprocess.run([exe, "-X", "heapsize=32M", str(tmp / "b.py"), str(ROOT),
                              str(tmp / "m.wlm"), str(tmp / "x.txt"), str(repeat)],
                             capture_output=True, text=True, check=True)
    return float(out.stdout)


def bench_step(K, S, M, dense, repeat):
    rec, X = synthetic(K, S, M, np.random.default_rng(K), dense)
    edges = [list(map(float, e)) for e in rec.discretizer_.edges_]
    table = rec.model_.emissions_.log_table
    data = model_format.pack_model(
        list(rec.classes_), "loadcells" if S == 8 else "cop", [1.0] * model_format.N_CONST,
        edges, rec.model_.startprob_.tolist(), rec.model_.transmat_.tolist(),
        [table[s, :len(edges[s]) + 1].tolist() for s in range(S)])
    m = model_format.unpack_model(data)
    dev = DeviceHMM(m)
    assert (dev.persistence is None) == dense
    rows = [list(map(float, x)) for x in X]

    def fw():
        dev.reset()
        for x in rows:
            dev.step(x)

    def host():
        rec.reset()
        for x in X:
            rec.step(x)

    host()  # compile
    fw_us = _best(fw, repeat) / len(X) * 1e6
    host_us = _best(host, repeat) / len(X) * 1e6
    mpy = micropython_us(data, X, repeat)
    n_floats = m.table_bytes() // 8
    return {"K": K, "dense": dense, "cpython_us": fw_us, "mpy_us": mpy,
            "numba_us": host_us, "ops": n_ops(K, S, M, dense), "ram_f32": 4 * n_floats,
            "ram_f64": 8 * n_floats, "file_bytes": len(data)}


def bench_sim(repeat, duration_s=None):
    out = {}
    for hw in ("fast", "bits"):
        def run():
            n = 0
            for _, b in simulate_session_bytes("exp1", 0, hardware=hw,
                                               duration_s=duration_s):
                n += len(b)
            out[hw + "_bytes"] = n
        out[hw] = _best(run, repeat)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--no-sim", action="store_true", help="skip the simulation timing")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--states", type=int, nargs="+", default=[7, 9, 13])
    p.add_argument("--sim-seconds", type=float, default=None,
                   help="simulate only this much of exp1 (default: the whole session)")
    p.add_argument("--quick", action="store_true",
                   help="K = 7 only, one repetition, 20 s of simulation (CI)")
    args = p.parse_args()
    if args.quick:
        args.repeat, args.states, args.sim_seconds = 1, [7], 20.0
    print("%3s %-11s %9s %9s %9s %9s %9s %5s %8s %8s %7s" % (
        "K", "transitions", "CPy us", "MPy us", "numba us", "CPy/nb", "MPy/nb", "ops",
        "RAM f32", "RAM f64", "file B"))
    for K in args.states:
        for dense in (True, False):
            r = bench_step(K, 8, 20, dense, args.repeat)
            print("%3d %-11s %9.1f %9.1f %9.2f %9.1f %9.1f %5d %8d %8d %7d" % (
                K, "dense" if dense else "persistence", r["cpython_us"], r["mpy_us"],
                r["numba_us"], r["cpython_us"] / r["numba_us"], r["mpy_us"] / r["numba_us"],
                r["ops"], r["ram_f32"], r["ram_f64"], r["file_bytes"]))
    if not args.no_sim:
        res = bench_sim(min(args.repeat, 3), args.sim_seconds)
        print("simulate exp1 (%d bytes): fast board %.2f s, bit-level board %.2f s, "
              "bit-level / fast %.2f" % (res["fast_bytes"], res["fast"], res["bits"],
                                         res["bits"] / res["fast"]))


if __name__ == "__main__":
    main()
