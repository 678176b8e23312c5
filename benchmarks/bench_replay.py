"""Replay throughput: raw serial bytes -> decoder -> features -> HMM filter.

    .venv/bin/python benchmarks/bench_replay.py [--minutes 60] [--rate 100]

Simulates a free-living session (not timed), trains the thesis HMM on another one,
then times replay_bytes() over the session's bytes in 64 KiB reads, on one core.
Goal (issue 3): >= 300,000 frames/s, i.e. an hour of 100 Hz data in about a second.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from calibration import calibration_for
from device.sim.virtual_walker import simulate_session_bytes
from host.features import FeatureExtractor
from host.replay import replay_bytes
from host.samples import StreamDecoder
from recognizers.hmm import HMMRecognizer


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--rate", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
        help="small sizes, runs in seconds (CI)")
    args = parser.parse_args()
    if args.quick:
        args.minutes = 0.5
        args.repeats = 1
    calibration = calibration_for("SIM-0")
    print("simulating %.0f min at %d Hz ..." % (args.minutes, args.rate), flush=True)
    raw = session_bytes(args.minutes, args.rate, seed=1)
    model = train_model(session_bytes(10, args.rate, seed=2), calibration)
    chunks = [(0.0, raw[i:i + 65536]) for i in range(0, len(raw), 65536)]
    replay_bytes(chunks[:4], calibration, model)  # warm up numba
    best = None
    for _ in range(args.repeats):
        t = time.perf_counter()
        result = replay_bytes(chunks, calibration, model)
        elapsed = time.perf_counter() - t
        best = elapsed if best is None else min(best, elapsed)
    frames = result.frames
    print("frames %d (%.0f min at %d Hz), %.1f MB" % (frames, args.minutes, args.rate,
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
