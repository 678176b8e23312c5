"""Read while recording: how far behind the writer a second reader is, and what SWMR
costs the recorder.

    .venv/bin/python benchmarks/bench_live_read.py [--quick]

1. Latency: a child process records 100 Hz SAMPLE frames in real time (one serial
   read every 20 ms, RecorderThread, default 0.5 s flush), as `walkerlab record`
   does; this process opens the live file every 0.25 s with open_recording (a new
   SWMR reader each time, as `walkerlab info` does) and takes
   now - host_time of the newest sample it sees.
2. Cost: RecordingWriter fed N seconds of 100 Hz data as fast as it takes it, in SWMR
   mode (now) and as a plain HDF5 file (before, swmr=False); CPU seconds per hour of
   data, best of 3.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from device.protocol import wire  # noqa: E402
from host.recording import RecordingWriter, open_recording  # noqa: E402
from host.recording.reader import writer_alive  # noqa: E402

RATE_HZ = 100
READ_EVERY = 2  # frames per serial read (20 ms at 100 Hz)


def frames(n: int, rate_hz: int = RATE_HZ) -> list[bytes]:
    """INFO then n SAMPLE frames, READ_EVERY to a serial read."""
    period = 1_000_000 // rate_hz
    info = wire.encode_frame(wire.INFO, 0, 0, wire.pack_info(
        (0, 1, 0), rate_hz, "WL-BENCH", flags=wire.INFO_FLAG_SIMULATED))
    out, buf = [info], b""
    for i in range(n):
        buf += wire.encode_frame(wire.SAMPLE, (i + 1) & 0xFFFF, (i + 1) * period,
                                 wire.pack_sample((i % 100, 0, 256), (i, -i, 7, 9),
                                                  i // 2, 0x0F, wire.STATUS_SIMULATED))
        if (i + 1) % READ_EVERY == 0:
            out.append(buf)
            buf = b""
    return out + ([buf] if buf else [])


CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
sys.argv[1:2] = []
from benchmarks.bench_live_read import frames, RATE_HZ, READ_EVERY
from host.recording import RecorderThread
seconds = float(sys.argv[2])
reads = frames(int(seconds * RATE_HZ))
rec = RecorderThread(sys.argv[1]).start()
start = time.monotonic()
for k, data in enumerate(reads):
    delay = start + k * READ_EVERY / RATE_HZ - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    rec.put_serial(data, time.time())
rec.close()
"""


def latency(folder: str, seconds: float) -> dict:
    path = os.path.join(folder, "live.h5")
    child = subprocess.Popen([sys.executable, "-c", CHILD, ROOT, path, str(seconds)],
                             cwd=ROOT)
    lags, opens = [], []
    try:
        while not (os.path.exists(path) and writer_alive(path)):
            time.sleep(0.05)
        time.sleep(1.0)
        while child.poll() is None:
            t0 = time.time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    rec = open_recording(path)
                except Exception:  # the writer closed under us
                    break
            now = time.time()
            if not writer_alive(path):
                break
            opens.append(now - t0)
            if len(rec.samples):
                lags.append(now - float(rec.samples.host_time[-1]))
            time.sleep(0.25)
    finally:
        child.wait(60)
    final = open_recording(path)
    lags = np.array(lags)
    if not len(lags):  # a busy machine: the recording ended before the first live read
        return {"reads": 0, "final_samples": len(final.samples),
                "closed_cleanly": final.closed_cleanly}
    return {"reads": len(lags), "lag_median_s": float(np.median(lags)),
            "lag_p95_s": float(np.percentile(lags, 95)), "lag_max_s": float(lags.max()),
            "open_read_median_s": float(np.median(opens)),
            "final_samples": len(final.samples), "closed_cleanly": final.closed_cleanly}


def cost(folder: str, seconds: float, swmr: bool, repeats: int = 3) -> float:
    """CPU seconds the writer spends per hour of 100 Hz data."""
    reads = frames(int(seconds * RATE_HZ))
    best = np.inf
    for r in range(repeats):
        path = os.path.join(folder, "cost-%s-%d.h5" % (swmr, r))
        t0 = time.process_time()
        w = RecordingWriter(path, swmr=swmr)
        host_time = 1.7e9
        for data in reads:  # the writer flushes every 0.5 s of *its* clock: do the same
            host_time += READ_EVERY / RATE_HZ
            w.write_serial(data, host_time)
            if int(host_time * 2) != int((host_time - READ_EVERY / RATE_HZ) * 2):
                w.flush()
        w.close()
        best = min(best, time.process_time() - t0)
        os.unlink(path)
    return best / seconds * 3600


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="seconds, for CI")
    args = ap.parse_args(argv)
    live_s, data_s = (4.0, 30.0) if args.quick else (30.0, 600.0)
    print("settings: %d Hz, %d frames per read, flush every 0.5 s; latency over %.0f s "
          "of live recording; cost over %.0f s of data, best of 3"
          % (RATE_HZ, READ_EVERY, live_s, data_s))
    with tempfile.TemporaryDirectory() as folder:
        lat = latency(folder, live_s)
        if lat["reads"]:
            print("latency: %(reads)d live reads, lag median %(lag_median_s).2f s, "
                  "95th percentile %(lag_p95_s).2f s, max %(lag_max_s).2f s; "
                  "open+read median %(open_read_median_s).3f s; final file "
                  "%(final_samples)d samples, closed cleanly %(closed_cleanly)s" % lat)
        else:
            print("latency: not measured: the machine was too busy to read the file "
                  "while its %.0f s recording lasted; final file %d samples, closed "
                  "cleanly %s" % (live_s, lat["final_samples"], lat["closed_cleanly"]))
        plain = cost(folder, data_s, swmr=False)
        live = cost(folder, data_s, swmr=True)
        print("writer CPU per hour of data: plain HDF5 (before) %.2f s, SWMR (now) "
              "%.2f s, ratio %.2f" % (plain, live, live / plain))
    return 0


if __name__ == "__main__":
    sys.exit(main())
