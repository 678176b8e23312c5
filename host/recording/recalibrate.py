"""`walkerlab recalibrate`: a recording's physical values under another calibration.

A recording keeps raw counts (the byte log and the sample columns) and, as the root
attribute `calibration`, the calibration it was recorded with; physical values (N, g,
m/s) are always derived from the two (host/features.py; the per-channel
`channel_offset_counts`/`channel_conversion` attributes of /samples say the same for
other tools). Recalibrating replaces the calibration and those attributes, keeps the
replaced calibration in `calibration_history`, and copies every dataset byte for byte:
raw data is never rewritten. The edit is copy-on-write like a label save
(host/recording/labels.py): the original or the new file, never a half-edited one.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from host.errors import UserError
from host.outputs import exclusive_output
from host.recording.labels import _edit
from host.recording.reader import open_h5, text
from host.recording.writer import iso_time, set_sample_attrs


def recalibrate(path, calibration, out=None, overwrite: bool = False,
                any_walker: bool = False) -> Path:
    """Give the recording at `path` (or a copy at `out`) the WalkerCalibration
    `calibration`; returns the path written. A calibration of another walker is refused
    unless any_walker."""
    path = Path(os.fspath(path))
    with open_h5(path, live_ok=False) as f:
        walker_id = text(f.attrs.get("walker_id", ""))
    if walker_id and calibration.walker_id != walker_id and not any_walker:
        raise UserError("%s was recorded on walker %s, the calibration is of walker %s "
                        "(--any-walker to use it anyway)"
                        % (path, walker_id, calibration.walker_id))
    target = path if out is None else Path(os.fspath(out))
    if target.exists() and target.resolve() == path.resolve():
        if out is not None and not overwrite:
            raise UserError("%s already exists (use --overwrite to replace it)" % target)
        _set_calibration(path, calibration)
        return path
    # The copy is recalibrated under a temporary name and published whole, never
    # over another command's output (host/outputs.py).
    with exclusive_output(target, overwrite=overwrite) as tmp:
        shutil.copyfile(path, tmp)
        _set_calibration(tmp, calibration)
    return target


def _set_calibration(target, calibration) -> None:
    """Replace ``target``'s calibration, keeping the old one in its history."""
    new_json = calibration.to_json()
    with _edit(target) as f:
        old = text(f.attrs.get("calibration", ""))
        history = json.loads(text(f.attrs.get("calibration_history", "")) or "[]")
        if old:
            history.append({"replaced_at": iso_time(), "calibration": json.loads(old)})
        f.attrs["calibration"] = new_json
        f.attrs["calibration_history"] = json.dumps(history)
        if not text(f.attrs.get("walker_id", "")):
            f.attrs["walker_id"] = calibration.walker_id
        set_sample_attrs(f)
