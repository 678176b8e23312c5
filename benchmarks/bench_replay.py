"""Replay throughput: raw serial bytes -> decoder -> features -> HMM filter.

    .venv/bin/python benchmarks/bench_replay.py [--minutes 60] [--rate 100] [--cli-repeats 3]

1. As the user runs it (issue 22): `walkerlab replay FILE --speed 0` with the shipped
   default model, as a fresh process, on a simulated recording of --minutes and on one
   of 5 s (the start-up: imports, model load, file open); the best of --cli-repeats
   wall times of each. Throughput beyond start-up = (frames of the long file - frames
   of the short one) / (its wall time - the short one's). Goal >= 300,000 frames/s.
2. In process: simulates a free-living session (not timed), trains the thesis HMM on
   another one, then times replay_bytes() over the session's bytes in 64 KiB reads, on
   one core, and where the time goes. Goal (issue 3): >= 300,000 frames/s.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from calibration import calibration_for
from device.sim.virtual_walker import simulate_session_bytes
from host.features import FeatureExtractor
from host.replay import replay_bytes
from host.samples import StreamDecoder
from recognizers.hmm_recognizer import HMMRecognizer


def session_bytes(minutes: float, rate: int, seed: int) -> bytes:
    return b"".join(data for _, data in simulate_session_bytes(
        "free", seed, rate, duration_s=minutes * 60))


def train_model(raw: bytes, calibration) -> HMMRecognizer:
    decoder = StreamDecoder()
    block, _ = decoder.feed(raw, 0.0)
    truth = np.zeros(len(block), dtype="U4")  # labels from TRUTH frames are not needed:
    X = FeatureExtractor(calibration).process(block).X  # any labelling exercises speed
    truth[:] = np.where(X[:, 6] > 20, np.where(np.abs(X[:, 3]) > 0.1, "WF", "ST"), "NTW")
    return HMMRecognizer().fit([X], [truth], feature_set="cop")


def cli_replay(minutes: float, rate: int, repeats: int) -> None:
    from host.models import DEFAULT_MODEL
    from host.simulate import simulate_to_files

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root, NUMBA_NUM_THREADS="1")
    with tempfile.TemporaryDirectory(prefix="walkerlab-bench-replay-") as tmp:
        long_path = simulate_to_files("free", 1, 7, os.path.join(tmp, "long"), rate,
                                      duration_s=minutes * 60, progress=False)[0]
        short_path = simulate_to_files("free", 1, 8, os.path.join(tmp, "short"), rate,
                                       duration_s=5.0, progress=False)[0]
        def replay(path):
            t = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "host.cli", "replay", str(path),
                                  "--speed", "0", "--model", str(DEFAULT_MODEL), "--json"],
                                 env=env, cwd=root, check=True, capture_output=True,
                                 text=True).stdout
            return time.perf_counter() - t, json.loads(out)

        replay(short_path)  # untimed: the first run may compile numba's cache
        results = {}
        for name, path in (("5 s", short_path), ("long", long_path)):
            results[name] = min((replay(path) for _ in range(repeats)),
                                key=lambda run: run[0])
    (w0, s0), (w1, s1) = results["5 s"], results["long"]
    frames = s1["frames"] - s0["frames"]
    print("walkerlab replay --speed 0 (default model, fresh process, best of %d):" % repeats)
    print("  5 s file: %d frames, %.2f s wall (start-up)" % (s0["frames"], w0))
    print("  %g min file: %d frames, %.2f s wall; replay loop alone %.2f s" % (
        minutes, s1["frames"], w1, s1["elapsed_s"]))
    beyond = ("%.0f frames/s" % (frames / (w1 - w0)) if w1 - w0 > 0.05 * w0
              else "within the noise of start-up (use a longer file)")
    print("  beyond start-up: %s (goal >= 300,000); replay loop alone %.0f frames/s"
          % (beyond, s1["frames"] / s1["elapsed_s"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--rate", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
        help="small sizes, runs in seconds (CI)")
    parser.add_argument("--cli-repeats", type=int, default=3)
    parser.add_argument("--train-minutes", type=float, default=10.0,
                        help="length of the session the model is trained on")
    args = parser.parse_args()
    if args.quick:
        args.minutes = 0.5
        args.repeats = 1
        args.cli_repeats = 1
        args.train_minutes = 1.0
    cli_replay(args.minutes, args.rate, args.cli_repeats)
    calibration = calibration_for("SIM-0")
    print("simulating %g min at %d Hz ..." % (args.minutes, args.rate), flush=True)
    raw = session_bytes(args.minutes, args.rate, seed=1)
    model = train_model(session_bytes(args.train_minutes, args.rate, seed=2), calibration)
    chunks = [(0.0, raw[i:i + 65536]) for i in range(0, len(raw), 65536)]
    replay_bytes(chunks[:4], calibration, model)  # warm up numba
    best = None
    for _ in range(args.repeats):
        t = time.perf_counter()
        result = replay_bytes(chunks, calibration, model)
        elapsed = time.perf_counter() - t
        best = elapsed if best is None else min(best, elapsed)
    frames = result.frames
    print("frames %d (%g min at %d Hz), %.1f MB" % (frames, args.minutes, args.rate,
                                                     len(raw) / 1e6))
    print("replay (decode + features + HMM filter): %.3f s best of %d = %.0f frames/s"
          % (best, args.repeats, frames / best))
    # Where the time goes.
    t = time.perf_counter()
    decoder = StreamDecoder()
    blocks = [decoder.feed(data, 0.0)[0] for _, data in chunks]
    t_decode = time.perf_counter() - t
    fx = FeatureExtractor(calibration)
    t = time.perf_counter()
    feats = [fx.process(b).X for b in blocks if len(b)]
    t_feat = time.perf_counter() - t
    model.reset()
    t = time.perf_counter()
    for X in feats:
        model.step_block(X)
    t_hmm = time.perf_counter() - t
    print("  decode %.3f s, features %.3f s, HMM filter %.3f s" % (t_decode, t_feat, t_hmm))


if __name__ == "__main__":
    main()
