"""`walkerlab simulate`: labelled sessions from the virtual walker, straight to files.

The bytes are those the virtual walker would send over the serial link after a
recorder's hello/rate/start, written through the same RecordingWriter as a live
recording, so simulated and recorded sessions are the same kind of file.
"""
from __future__ import annotations

import pathlib
import time

from tqdm import tqdm

from device.sim.factory_calibration import calibration_from_truth
from device.sim.sensors import default_truth
from device.sim.virtual_walker import simulate_session_bytes
from host.errors import UserError
from host.outputs import exclusive_outputs
from host.recording import RecordingWriter


SYNC_TAP_EVENT = "sync_tap"  # link event of a simulated sync tap (value: device us)


def _resolved_taps(course, seed, duration_s, sync_taps_s) -> list[float]:
    """Session times of the taps (negative ones counted back from the course's end)."""
    if not len(sync_taps_s):
        return []
    from device.sim.sensors import SimulatedSensors
    sensors = SimulatedSensors(course, seed, duration_s=duration_s, sync_taps_s=sync_taps_s)
    return [float(t) for t in sensors.sync_taps_s]


def session_filename(course: str, seed: int) -> str:
    return "%s_subject%03d.h5" % (course, seed)


def simulate_to_files(course: str, subjects: int, seed: int, out_dir,
                      rate_hz: int = 50, duration_s: float | None = None,
                      label_jitter_s: float = 0.0, overwrite: bool = False,
                      progress: bool = True, sync_taps_s=()) -> list[pathlib.Path]:
    """Write `subjects` sessions (subject seeds seed, seed+1, ...) into out_dir.

    sync_taps_s: knocks on the frame at these session times (negative: from the end),
    for aligning video; each is also logged as a 'sync_tap' link event whose value is
    its device time in us (the ground truth of host/annotate/sync.py).
    """
    if subjects < 1:
        raise UserError("--subjects must be at least 1")
    if course == "free" and duration_s is None:
        raise UserError("the free-living course is endless: give --duration SECONDS")
    if duration_s is not None and duration_s <= 0:
        raise UserError("--duration must be positive")
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / session_filename(course, seed + i) for i in range(subjects)]
    truth = default_truth()
    calibration = calibration_from_truth(truth)
    # Sessions are written under temporary names and published together at the end:
    # a half-written session never takes its final name, and of two commands writing
    # the same sessions one publishes them and the other refuses in one line.
    with exclusive_outputs(paths, overwrite=overwrite) as temps:
        for i, tmp in enumerate(tqdm(temps, desc="simulating %s" % course, unit="subject",
                                     disable=not progress)):
            _simulate_one(tmp, course, seed + i, rate_hz, duration_s, label_jitter_s,
                          sync_taps_s, truth, calibration)
    return paths


def _simulate_one(path, course, subject_seed, rate_hz, duration_s, label_jitter_s,
                  sync_taps_s, truth, calibration) -> None:
    """Write one simulated session to ``path`` (a new file)."""
    t0 = time.time()
    writer = RecordingWriter(path, subject_id="S%03d" % subject_seed,
                             walker_id=truth.walker_id, calibration=calibration,
                             notes="simulated: course %s, subject seed %d, %d Hz"
                             % (course, subject_seed, rate_hz),
                             session_start_time=t0)
    try:
        for device_s, data in simulate_session_bytes(
                course, subject_seed, rate_hz, duration_s=duration_s,
                label_jitter_s=label_jitter_s, sync_taps_s=sync_taps_s):
            writer.write_serial(data, t0 + device_s)
        for tap_s in _resolved_taps(course, subject_seed, duration_s, sync_taps_s):
            writer.write_event(SYNC_TAP_EVENT, "simulated knock on the frame at "
                               "device time %.6f s" % tap_s, int(round(tap_s * 1e6)),
                               t0 + tap_s)
    except BaseException:
        writer.abort()
        raise
    writer.close()
