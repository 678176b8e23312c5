"""Property tests (hypothesis, seeded, a few seconds each) of every file loader: a
valid model, calibration or recording with random damage (byte edits, truncation, a
header or field replaced by any JSON) is read or refused with one line naming the
file; nothing else escapes. The long run is benchmarks/fuzz.py."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from calibration import WalkerCalibration
from calibration.walker_calibration import CalibrationError
from host.errors import UserError
from host.recording import open_recording, recover
from host.recording.reader import RecordingFormatError
from recognizers.base import ModelFormatError, load_recognizer, read_model_header

from corpus import tiny_model, with_model_header

# What a loader may raise for a bad file: errors the CLI prints as one line.
REFUSALS = (RecordingFormatError, ModelFormatError, CalibrationError, UserError)
FAST = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
    | st.integers(min_value=10**300, max_value=10**400),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=12)
EDITS = st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)),
                 min_size=1, max_size=12)


def _damaged(blob: bytes, edits, cut) -> bytes:
    data = bytearray(blob)
    for where, value in edits:
        data[int(where * len(data))] = value
    return bytes(data[:max(1, int(cut * len(data)))]) if cut is not None else bytes(data)


def read_or_refuse(reader, path: Path) -> str:
    """'ok' or 'refused' (one line naming the file); any other exception propagates."""
    try:
        reader(path)
    except REFUSALS as exc:
        text = str(exc)
        assert "\n" not in text and path.name in text, text
        return "refused"
    return "ok"


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    from host.simulate import simulate_to_files

    root = tmp_path_factory.mktemp("good")
    model = tiny_model(root / "model.npz", np.random.default_rng(0))
    cal = root / "cal.json"
    WalkerCalibration(walker_id="WL-1").save(cal)
    rec = simulate_to_files("free", 1, 3, root / "rec", duration_s=1, progress=False)[0]
    return Good(model=model.read_bytes(), calibration=cal.read_bytes(),
                recording=rec.read_bytes())


class Good(dict):
    """The valid files' bytes; a short repr for hypothesis' failure reports."""

    def __repr__(self) -> str:
        return "Good(%s)" % ", ".join("%s: %d bytes" % kv for kv in
                                      ((k, len(v)) for k, v in self.items()))


@FAST
@given(EDITS, st.none() | st.floats(0, 1))
def test_model_readers_with_damaged_bytes(good, tmp_path, edits, cut):
    path = tmp_path / "m.npz"
    path.write_bytes(_damaged(good["model"], edits, cut))
    read_or_refuse(read_model_header, path)
    read_or_refuse(load_recognizer, path)


HEADER_FIELDS = ["format", "kind", "format_version", "params", "n_features_in",
                 "feature_set", "metadata", "sample_rate_hz", "time_constants_s"]


@FAST
@given(st.sampled_from(HEADER_FIELDS), JSON, st.integers(0, 3000))
def test_model_readers_with_any_json_in_a_header_field(good, tmp_path, field, value, depth):
    def edit(text):
        header = json.loads(text)
        header[field] = value
        return json.dumps(header).replace('"@deep"', "[" * depth + "]" * depth)

    path = tmp_path / "h.npz"
    path.write_bytes(with_model_header(good["model"], edit))
    if read_or_refuse(read_model_header, path) == "refused":
        assert read_or_refuse(load_recognizer, path) == "refused"
    else:
        read_or_refuse(load_recognizer, path)


@FAST
@given(st.sampled_from(sorted(json.loads(WalkerCalibration().to_json()))), JSON)
def test_calibration_loader_with_any_json_in_a_field(good, tmp_path, field, value):
    data = json.loads(good["calibration"])
    data[field] = value
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    read_or_refuse(WalkerCalibration.load, path)


@FAST
@given(EDITS, st.none() | st.floats(0, 1))
def test_calibration_loader_with_damaged_bytes(good, tmp_path, edits, cut):
    path = tmp_path / "c.json"
    path.write_bytes(_damaged(good["calibration"], edits, cut))
    read_or_refuse(WalkerCalibration.load, path)


@settings(FAST, max_examples=15)
@given(st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)),
                min_size=1, max_size=6),
       st.booleans(), st.none() | st.floats(0.3, 1))
def test_recording_readers_with_damaged_bytes(good, tmp_path, edits, in_metadata, cut):
    """Edits land anywhere, or in the first 8 KB where HDF5 keeps its superblock and
    the object headers it reads first."""
    blob = good["recording"]
    if in_metadata:
        edits = [(w * 8192 / len(blob), v) for w, v in edits]
    path = tmp_path / "r.h5"
    path.write_bytes(_damaged(blob, edits, cut))
    read_or_refuse(open_recording, path)
    out = tmp_path / "r-recovered.h5"
    out.unlink(missing_ok=True)
    read_or_refuse(lambda p: recover(p, out), path)


def test_recording_readers_with_each_metadata_block_damaged(good, tmp_path):
    """Deterministic sweep over the first 8 KB (superblock, object headers, B-trees):
    a damaged checksum or heap pointer made h5py raise KeyError / OSError, which
    escaped open_recording and recover (found by benchmarks/fuzz.py)."""
    blob = good["recording"]
    outcomes = []
    for offset in range(0, 8192, 127):
        path = tmp_path / ("d%d.h5" % offset)
        path.write_bytes(blob[:offset] + bytes([blob[offset] ^ 0xA5]) + blob[offset + 1:])
        outcomes.append(read_or_refuse(open_recording, path))
        out = tmp_path / "out.h5"
        out.unlink(missing_ok=True)
        read_or_refuse(lambda p: recover(p, out), path)
        path.unlink()
    assert outcomes.count("refused") >= 5, outcomes  # the sweep does hit the structure


@pytest.mark.parametrize("offset, value", [(6, 253), (8, 0x20), (8, 0x01), (10, 99)],
                         ids=["zip-version", "patched-data-flag", "encrypted-flag",
                              "unknown-compression"])
def test_model_readers_with_a_damaged_zip_header(good, tmp_path, offset, value):
    """Found by benchmarks/fuzz.py: zipfile raises NotImplementedError ("zip file
    version 25.3", "compressed patched data") or RuntimeError (encrypted) for a
    damaged local header, which escaped both model readers."""
    data = bytearray(good["model"])
    data[data.find(b"PK\x01\x02") + offset] = value  # the first central directory entry
    path = tmp_path / "z.npz"
    path.write_bytes(bytes(data))
    assert read_or_refuse(read_model_header, path) == "refused"
    assert read_or_refuse(load_recognizer, path) == "refused"
