"""Back-compat fixture generator: small recordings of each case, named
<format_version>_<case>.h5, with what a reader must report when it opens them.

    python tests/recording/recording_fixtures.py OUT_DIR   # write them all

Files written by an older WalkerLab must keep opening: commit the output of each
format version (e.g. to tests/fixtures/recordings/) and test_recording_fixtures.py
opens every committed file with the expectations below.
"""
from __future__ import annotations

import os
import pathlib
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from device.protocol import wire  # noqa: E402
from host.recording import FORMAT_VERSION, RecordingWriter  # noqa: E402
from host.recording import layout as L  # noqa: E402
from recording_synth import Synth  # noqa: E402

T0 = 1_700_000_000.0


def _clean(path):
    s = Synth(rate_hz=50, truth_every=50)
    with RecordingWriter(path, subject_id="S01", notes="fixture", host="fixture",
                         app_version="fixture", session_start_time=T0) as w:
        w.write_event("connected", "/dev/ttyACM0", 0, T0)
        w.write_serial(s.info() + s.frame(wire.LOG, wire.pack_log(20, "hello")), T0 + 0.1)
        for k in range(8):
            data = b"".join(s.sample() for _ in range(25))
            data += s.frame(wire.ACTIVITY, wire.pack_activity(1, 0.5, "WLK"))
            w.write_serial(data, T0 + 0.5 * (k + 1))
        w.write_labels("alice", [(0.0, 2.0, "SIT"), (2.0, 4.0, "WLK")], annotator="alice")


def _crashed(path):
    s = Synth(rate_hz=50, truth_every=50)
    w = RecordingWriter(path, subject_id="S02", host="fixture", app_version="fixture",
                        session_start_time=T0)
    w.write_serial(s.info() + b"".join(s.sample() for _ in range(100)), T0 + 1)
    w.flush()
    w.write_serial(b"".join(s.sample() for _ in range(10)), T0 + 2)  # never flushed
    w.abort()  # the file as a kill -9 after a flush leaves it


def _empty(path):
    with RecordingWriter(path, host="fixture", app_version="fixture",
                         session_start_time=T0):
        pass


def _minimal_h5py(path):
    """What another tool following recordings/README.md minimally writes."""
    with h5py.File(path, "w") as f:
        f.attrs["format"] = np.bytes_(L.FORMAT_NAME)  # bytes, as some tools store them
        f.attrs["format_version"] = np.bytes_(FORMAT_VERSION)
        f.attrs["closed_cleanly"] = 1
        f["acquisition/serial/bytes"] = np.zeros(0, np.uint8)
        f["acquisition/serial/chunks"] = np.zeros(0, L.CHUNK_DTYPE)
        g = f.create_group("acquisition/samples")
        n = 5
        for name, (dtype, shape) in L.SAMPLE_COLUMNS.items():
            g[name] = np.ones((n,) + shape, dtype)
        g["timestamps"][...] = np.arange(n) * 0.01
        g["t_us"][...] = np.arange(n) * 10_000


# case -> (writer, expected warnings (substrings), expected figures)
CASES = {
    "clean": (_clean, [], {"samples": 200, "label_tracks": ["alice", "simulator"],
                           "closed_cleanly": True}),
    "crashed": (_crashed, ["not closed cleanly"], {"samples": 100, "label_tracks": [],
                                                    "closed_cleanly": False}),
    "empty": (_empty, [], {"samples": 0, "frames": 0, "closed_cleanly": True}),
    "minimal_h5py": (_minimal_h5py, [], {"samples": 5, "rate_hz": 100.0}),
}


def fixture_name(case: str, version: str = FORMAT_VERSION) -> str:
    return "%s_%s.h5" % (version, case)


def write_all(out_dir) -> list[pathlib.Path]:
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for case, (make, _, _) in CASES.items():
        path = out_dir / fixture_name(case)
        if path.exists():
            path.unlink()
        make(path)
        paths.append(path)
    return paths


if __name__ == "__main__":
    for p in write_all(sys.argv[1] if len(sys.argv) > 1 else "."):
        print(p)
