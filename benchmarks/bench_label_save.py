"""Crash-safe label saves: kill trials and what one save costs.

    .venv/bin/python benchmarks/bench_label_save.py [--kills 100] [--minutes 10 60]
    .venv/bin/python benchmarks/bench_label_save.py --quick

Kill trials: a process saves one label track over and over, alternating two versions,
and is killed (SIGKILL) at a random instant; after each kill the recording is read and
must hold one of the two versions with its sensor data unchanged. Save cost: a label
save copies the recording (copy-on-write, see host/recording/labels.py), so its time
grows with the recording; the median of 5 saves (the annotator's autosave) is printed
per recording length, on simulated 100 Hz recordings.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import h5py  # noqa: E402
import numpy as np  # noqa: E402

from host.recording import LabelTrack  # noqa: E402
from host.recording.labels import read_tracks, save_tracks  # noqa: E402
from host.simulate import simulate_to_files  # noqa: E402

OLD = [(0.0, 1.0, "ST"), (1.0, 2.0, "W")]
NEW = [(0.0, 1.5, "W"), (1.5, 2.0, "ST"), (2.0, 3.0, "TL")]
SAVER = """
import sys
from host.recording import LabelTrack
from host.recording.labels import save_tracks
print("ready", flush=True)
i = 0
while True:
    i += 1
    save_tracks(sys.argv[1], [LabelTrack.from_segments("alice", %r if i %% 2 else %r)])
""" % (NEW, OLD)


def sensor_digest(path) -> str:
    h = hashlib.sha256()
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and not name.startswith("annotations"):
                data = obj[()]
                h.update(repr(data.tolist()).encode() if obj.dtype.hasobject
                         else np.ascontiguousarray(data).tobytes())
        f.visititems(visit)
    return h.hexdigest()


def kill_trials(rec: pathlib.Path, n: int, seed: int = 0) -> dict:
    save_tracks(rec, [LabelTrack.from_segments("alice", OLD)])
    digest = sensor_digest(rec)
    rng = np.random.default_rng(seed)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    counts = {"old": 0, "new": 0, "lost": 0, "unreadable": 0, "sensor_changed": 0}
    for _ in range(n):
        proc = subprocess.Popen([sys.executable, "-c", SAVER, str(rec)],
                                stdout=subprocess.PIPE, env=env)
        proc.stdout.readline()
        time.sleep(rng.uniform(0.0, 0.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        try:
            got = read_tracks(rec).get("alice")
        except Exception:  # noqa: BLE001 - counting every way a file can be lost
            counts["unreadable"] += 1
            continue
        segs = got.segments() if got is not None else None
        key = "old" if segs == OLD else "new" if segs == NEW else "lost"
        counts[key] += 1
        if sensor_digest(rec) != digest:
            counts["sensor_changed"] += 1
    return counts


def save_seconds(rec: pathlib.Path, repeats: int = 5) -> float:
    times = []
    for i in range(repeats):
        track = LabelTrack.from_segments("alice", NEW if i % 2 else OLD)
        t0 = time.perf_counter()
        save_tracks(rec, [track])
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--minutes", type=float, nargs="+", default=[10.0, 60.0])
    ap.add_argument("--quick", action="store_true", help="5 kills, a 1-minute recording")
    args = ap.parse_args(argv)
    if args.quick:
        args.kills, args.minutes = 5, [1.0]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        recs = {}
        for minutes in args.minutes:
            folder = tmp / ("m%g" % minutes)
            folder.mkdir()
            recs[minutes] = simulate_to_files("free", 1, 5, folder, rate_hz=100,
                                              duration_s=minutes * 60, progress=False)[0]
        print("save cost (copy-on-write), median of 5 saves:")
        print("  %10s %10s %10s" % ("minutes", "file MB", "save s"))
        for minutes, rec in recs.items():
            mb = os.path.getsize(rec) / 1e6
            print("  %10g %10.1f %10.3f" % (minutes, mb, save_seconds(rec)))
        rec = recs[min(recs)]
        counts = kill_trials(rec, args.kills)
        failures = counts["lost"] + counts["unreadable"] + counts["sensor_changed"]
        print("kill trials on a %g-minute recording: %d kills -> %s"
              % (min(recs), args.kills, ", ".join("%s %d" % kv for kv in counts.items())))
    print("RESULT: %s" % ("every kill left the old or the new labels" if not failures
                          else "%d kills lost labels or data" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
