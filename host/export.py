"""`walkerlab export`: a recording as one table for pandas, R or MATLAB.

One row per sample: time, the sensors in physical units (the same numbers the
features use: the calibration stored in the recording, load counts the firmware
already tared taking no offset), the features (speed, COP, total load) and one label
column per label track (``label_<track>``, empty where unlabelled).  Written by
well-kept writers: the csv module, pyarrow (Parquet) and scipy.io.savemat (MATLAB).
"""
from __future__ import annotations

import csv
import os

import numpy as np

from host.errors import UserError
from host.outputs import check_free, exclusive_output

FORMATS = ("csv", "parquet", "mat")


def recording_table(path, track: str | None = None) -> dict[str, np.ndarray]:
    """Columns (name -> (n,) array) of a recording; str label columns, float the rest."""
    from host.features import FeatureExtractor, cop_features
    from host.recording import open_recording
    from host.replay import recording_calibration

    rec = open_recording(path, untrusted=True)  # a FILE from the user
    cal = recording_calibration(rec)
    fx = FeatureExtractor(cal, "cop")
    block = rec.samples
    loads = fx.loads_newton(block)
    accel = fx.accel_mps2(block)
    speed = fx.speed_mps(block)
    total, cop_sp, cop_fp, valid = cop_features(loads, cal)
    cols: dict[str, np.ndarray] = {
        "time_s": rec.time_s,
        "t_us": block.t_us.astype(np.int64),
        "accel_x_mps2": accel[:, 0], "accel_y_mps2": accel[:, 1],
        "accel_z_mps2": accel[:, 2],
        "load_FR_n": loads[:, 0], "load_FL_n": loads[:, 1],
        "load_RL_n": loads[:, 2], "load_RR_n": loads[:, 3],
        "total_load_n": total,
        "cop_fp_m": np.where(valid, cop_fp, np.nan),
        "cop_sp": np.where(valid, cop_sp, np.nan),
        "encoder_ticks": block.encoder.astype(np.int64),
        "speed_mps": speed,
        "status": block.status.astype(np.int64),
    }
    names = sorted(rec.labels)
    if track is not None:
        if track not in rec.labels:
            raise UserError("%s has no label track %r (tracks: %s)"
                            % (path, track, ", ".join(names) or "none"))
        names = [track]
    for name in names:
        cols["label_" + name] = rec.labels_per_sample(name).astype(str)
    return cols


def export_recording(path, fmt: str, out, track: str | None = None,
                     overwrite: bool = False) -> int:
    """Write the recording's table as csv, parquet or mat; returns the rows written."""
    if fmt not in FORMATS:
        raise UserError("--format must be one of %s, not %r" % (", ".join(FORMATS), fmt))
    check_free(out, overwrite)  # before reading the recording
    cols = recording_table(path, track)
    n = len(cols["time_s"])
    with exclusive_output(out, overwrite=overwrite) as part:
        tmp = os.fspath(part)
        if fmt == "csv":
            _write_csv(cols, tmp)
        elif fmt == "parquet":
            _write_parquet(cols, tmp)
        else:
            _write_mat(cols, tmp)
    return n


def _write_csv(cols, out) -> None:
    names = list(cols)
    with open(out, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        # repr of float64 round-trips exactly; NaN is written as an empty field
        columns = [[("" if v != v else repr(float(v))) if c.dtype.kind == "f"
                    else str(v) for v in c.tolist()] for c in cols.values()]
        w.writerows(zip(*columns))


def _write_parquet(cols, out) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError("--format parquet needs pyarrow: pip install pyarrow") from None
    table = pa.table({k: pa.array(v.tolist() if v.dtype.kind == "U" else v)
                      for k, v in cols.items()})
    pq.write_table(table, out)


def _write_mat(cols, out) -> None:
    from scipy.io import savemat

    # MATLAB names: letters, digits, underscores; label columns become cell arrays
    data = {}
    for k, v in cols.items():
        key = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in k)[:63]
        data[key] = np.array(v.tolist(), dtype=object).reshape(-1, 1) \
            if v.dtype.kind == "U" else v.reshape(-1, 1)
    with open(out, "wb") as fh:
        savemat(fh, data, do_compression=True, oned_as="column")
