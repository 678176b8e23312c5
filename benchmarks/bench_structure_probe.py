"""What probing a recording from outside costs (host/recording/structure_probe.py).

Run: .venv/bin/python benchmarks/bench_structure_probe.py [--quick] [--repeats 7]

For each sample recording: open_recording as the code opens its own files, the same
with untrusted=True (the probe first, its cache emptied so that every open pays for
it), and the probe alone; medians of --repeats, after one warm-up open. Also the first
probe of a process, which starts the child (Python with numpy and h5py). The peer is
the plain open, measured in the same run.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import platform
import statistics
import sys
import time
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SAMPLES = sorted((ROOT / "recordings" / "samples").glob("*.h5"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 repeats (CI)")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    repeats = 2 if args.quick else args.repeats
    warnings.simplefilter("ignore")
    from host.recording import open_recording
    from host.recording import structure_probe as probe

    print("bench_structure_probe.py: %d repeats; Python %s, %d CPUs, load %.1f"
          % (repeats, platform.python_version(), os.cpu_count(), os.getloadavg()[0]))
    t0 = time.perf_counter()
    probe.probe_structure(SAMPLES[0])
    print("first probe of a process (starts the child): %.2f s\n"
          % (time.perf_counter() - t0))
    print("| recording | size | open | open untrusted | probe alone | untrusted / open |")
    print("|---|---:|---:|---:|---:|---:|")
    for path in SAMPLES:
        open_recording(path)
        plain, untrusted, alone = [], [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            open_recording(path)
            plain.append(time.perf_counter() - t0)
            probe._SEEN.clear()
            t0 = time.perf_counter()
            open_recording(path, untrusted=True)
            untrusted.append(time.perf_counter() - t0)
            probe._SEEN.clear()
            t0 = time.perf_counter()
            probe.probe_structure(path)
            alone.append(time.perf_counter() - t0)
        p, u, a = (statistics.median(x) for x in (plain, untrusted, alone))
        print("| %s | %.0f KB | %.3f s | %.3f s | %.3f s | %.1fx |"
              % (path.name, path.stat().st_size / 1024, p, u, a, u / p))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
