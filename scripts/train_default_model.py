"""Train the model WalkerLab ships with (host/data/default-model.npz), deterministically.

The monitor runs this model when the user has not chosen one, so that a fresh
install recognises activities at once.  It is the thesis's supervised HMM
(default settings) trained on simulated virtual-walker sessions of the free-living
course; the subjects' seeds (100-105) differ from the monitor's virtual walker's
(device.sim.activities.DEMO_SEED), which is kept aside to measure it.

    python scripts/train_default_model.py            # rewrite host/data/default-model.npz
    python scripts/train_default_model.py --check    # exit 1 unless the shipped file
                                                     # equals a fresh training

The arrays are a function of the seeds alone; the zip container's timestamps and
the history's date are not.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COURSE = "free"
FIRST_SEED = 100
SUBJECTS = 6
DURATION_S = 600.0
RATE_HZ = 50
HELD_OUT_SEED = 21  # device.sim.activities.DEMO_SEED: what `make run` shows
HELD_OUT_S = 300.0
COMMAND = "python scripts/train_default_model.py"


def train(progress: bool = False):
    """The default model, fitted (nothing written)."""
    from host.datasets import load_sessions
    from host.models import history_entry
    from host.simulate import simulate_to_files
    from recognizers import HMMRecognizer

    with tempfile.TemporaryDirectory() as tmp:
        paths = simulate_to_files(COURSE, SUBJECTS, FIRST_SEED, tmp, rate_hz=RATE_HZ,
                                  duration_s=DURATION_S, progress=progress)
        sessions = load_sessions([str(p) for p in paths], "cop", "simulator")
        held = simulate_to_files(COURSE, 1, HELD_OUT_SEED, pathlib.Path(tmp) / "held",
                                 rate_hz=RATE_HZ, duration_s=HELD_OUT_S, progress=False)
        test = load_sessions([str(held[0])], "cop", "simulator")[0]
    model = HMMRecognizer().fit([s.X for s in sessions], [s.y for s in sessions],
                                feature_set="cop")
    model.sample_rate_hz_ = float(RATE_HZ)
    accuracy = float(np.mean(model.classes_[model.filter(test.X).argmax(axis=1)] == test.y))
    recordings = ["simulated: course %s, subject seed %d, %g s, %d Hz"
                  % (COURSE, FIRST_SEED + i, DURATION_S, RATE_HZ) for i in range(SUBJECTS)]
    model.metadata_ = {
        "description": "shipped default: supervised HMM trained on %d simulated %g-min "
                       "free-living sessions at %d Hz (%s)"
                       % (SUBJECTS, DURATION_S / 60, RATE_HZ, COMMAND),
        "recognizer": "hmm",
        "params": {},
        "feature_set": "cop",
        "label_track": ["simulator"],
        "label_set": sorted(str(c) for c in model.classes_),
        "training_recordings": recordings,
        "sample_rate_hz": float(RATE_HZ),
        "command": COMMAND,
        "held_out": {"recording": "simulated: course %s, subject seed %d, %g s"
                     % (COURSE, HELD_OUT_SEED, HELD_OUT_S),
                     "filter_accuracy": accuracy},
        "history": [history_entry("train", command=COMMAND, recordings=SUBJECTS)],
    }
    model.metadata_["trained_at"] = model.metadata_["history"][0]["at"]
    return model


def same_model(a, b) -> bool:
    sa, sb = a._get_state(), b._get_state()
    return (a.get_params() == b.get_params() and list(a.classes_) == list(b.classes_)
            and sa.keys() == sb.keys() and all(np.array_equal(sa[k], sb[k]) for k in sa))


def main(argv=None) -> int:
    from host.models import DEFAULT_MODEL, load_model, save_model

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(DEFAULT_MODEL), help="where to write the model")
    parser.add_argument("--check", action="store_true",
                        help="compare a fresh training with --out instead of writing it")
    args = parser.parse_args(argv)
    model = train(progress=not args.check)
    if args.check:
        if same_model(model, load_model(args.out)):
            print("%s matches a fresh training" % args.out)
            return 0
        print("%s differs from a fresh training: run %s" % (args.out, COMMAND),
              file=sys.stderr)
        return 1
    path = save_model(model, args.out, overwrite=True)
    print("%s: %s, %d classes, held-out filter accuracy %.1f%% (%d bytes)"
          % (path, model.kind, len(model.classes_),
             100 * model.metadata_["held_out"]["filter_accuracy"], path.stat().st_size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
