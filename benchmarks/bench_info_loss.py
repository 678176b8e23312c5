"""How many recordings lose the walker's identity and calibration on a noisy link.

    .venv/bin/python benchmarks/bench_info_loss.py [--recordings 50] [--corrupt-rate 0.01]
    .venv/bin/python benchmarks/bench_info_loss.py --quick

Each recording is made exactly as `walkerlab record` makes it (host.record.record_session)
from a virtual walker on a pseudo-terminal whose bytes are corrupted at random
(`--corrupt-rate` per byte). A recording "has calibration" when the walker's INFO
arrived and its id and calibration were written into the file. The same number of
recordings is made with INFO requested only once per connection (the behaviour before
issue 16), in the same run, for comparison.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from device.sim.virtual_walker import FaultConfig, PtyServer, VirtualWalker  # noqa: E402
from host import link as link_module  # noqa: E402
from host.record import record_session  # noqa: E402
from host.recording import open_recording  # noqa: E402


def one_recording(folder: pathlib.Path, seed: int, corrupt_rate: float, duration: float):
    walker = VirtualWalker("free", seed, 50, repeat=True)
    server = PtyServer(walker, FaultConfig(corrupt_rate=corrupt_rate, seed=seed),
                       path=str(folder / ("port%d" % seed)))
    stop = threading.Event()
    path = server.open()
    thread = threading.Thread(target=server.serve, kwargs={"should_stop": stop.is_set},
                              daemon=True)
    thread.start()
    out = folder / ("rec%d.h5" % seed)
    try:
        health = record_session(path, out, duration, progress=False)
    finally:
        stop.set()
        thread.join(5)
        server.close()
    rec = open_recording(out)
    cal = rec.attrs.get("calibration", "")
    ok = bool(rec.attrs.get("walker_id", "")) and bool(cal) and bool(json.loads(cal))
    return ok, health["info_requests"]


def run(n: int, corrupt_rate: float, duration: float, retry: bool) -> tuple[int, int]:
    saved = link_module.INFO_RETRY_S
    link_module.INFO_RETRY_S = saved if retry else float("inf")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            results = [one_recording(pathlib.Path(tmp), 1000 + i, corrupt_rate, duration)
                       for i in range(n)]
    finally:
        link_module.INFO_RETRY_S = saved
    return sum(ok for ok, _ in results), sum(req for _, req in results)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recordings", type=int, default=50)
    ap.add_argument("--corrupt-rate", type=float, default=0.01)
    ap.add_argument("--duration", type=float, default=2.0, help="seconds per recording")
    ap.add_argument("--quick", action="store_true", help="3 recordings of 1 s (CI)")
    args = ap.parse_args(argv)
    if args.quick:
        args.recordings, args.duration = 3, 1.0
    print("settings: %d recordings of %.1f s at 50 Hz, %.3g byte corruption rate, "
          "INFO retry every %.2f s" % (args.recordings, args.duration, args.corrupt_rate,
                                       link_module.INFO_RETRY_S))
    for retry in (True, False):
        t0 = time.perf_counter()
        ok, requests = run(args.recordings, args.corrupt_rate, args.duration, retry)
        print("%-28s %d/%d recordings with walker id and calibration (%.0f %%), "
              "%d HELLOs sent, %.0f s" % (
                  "INFO requested until it comes" if retry else "INFO requested once",
                  ok, args.recordings, 100.0 * ok / args.recordings, requests,
                  time.perf_counter() - t0))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
