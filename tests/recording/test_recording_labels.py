"""Label tracks written after the session: append or replace, raw data untouched."""
import hashlib

import h5py
import numpy as np
import pytest

from host.recording import (
    LabelTrack, LabelTrackExistsError, RecordingWriter, open_recording, write_labels,
)
from host.recording import layout as L
from recording_synth import Synth


def _fingerprint(path):
    """sha256 of every dataset outside /annotations, and of their attributes."""
    out = {}
    with h5py.File(path) as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and not name.startswith("annotations"):
                data = obj[()]
                raw = repr(data.tolist()).encode() if data.dtype.hasobject else data.tobytes()
                out[name] = (hashlib.sha256(raw).hexdigest(), obj.dtype.str, obj.shape,
                             obj.chunks,
                             repr(sorted((k, str(v)) for k, v in obj.attrs.items())))
        f.visititems(visit)
    return out


@pytest.fixture
def recording(tmp_path):
    path = tmp_path / "s.h5"
    s = Synth(rate_hz=50)
    with RecordingWriter(path) as w:
        w.write_serial(s.info(), 1e9)
        for k in range(10):
            w.write_serial(b"".join(s.sample() for _ in range(50)), 1e9 + k)
        w.write_event("reconnected", "x", 1, 1e9 + 3)
    return path


def test_labels_added_later_leave_every_other_dataset_bit_identical(recording):
    before = _fingerprint(recording)
    assert L.SERIAL_BYTES.lstrip("/") in before and L.SAMPLES.lstrip("/") + "/loads" in before
    write_labels(recording, "alice", [(0.0, 2.0, "sit"), (2.0, 4.0, "walk")],
                 annotator="alice")
    write_labels(recording, "alice", [(4.0, 6.0, "turn")], annotator="alice", mode="append")
    write_labels(recording, "crf", [(0.0, 9.0, "walk")], source="model",
                 model="crf 0.3", mode="replace")
    write_labels(recording, "crf", [(0.0, 5.0, "sit")], source="model",
                 model="crf 0.4", mode="replace")
    assert _fingerprint(recording) == before
    rec = open_recording(recording)
    assert rec.labels["alice"].segments() == [(0.0, 2.0, "sit"), (2.0, 4.0, "walk"),
                                              (4.0, 6.0, "turn")]
    assert rec.labels["crf"].segments() == [(0.0, 5.0, "sit")]
    assert rec.labels["crf"].model == "crf 0.4"
    assert "simulator" in rec.labels  # untouched by all of the above


def test_a_new_track_never_replaces_an_existing_one_silently(recording):
    write_labels(recording, "bob", [(0.0, 1.0, "sit")], annotator="bob")
    with pytest.raises(LabelTrackExistsError, match="already exists"):
        write_labels(recording, "bob", [(5.0, 6.0, "walk")], annotator="bob")
    assert open_recording(recording).labels["bob"].segments() == [(0.0, 1.0, "sit")]


def test_append_keeps_the_source_of_a_track(recording):
    write_labels(recording, "bob", [(0.0, 1.0, "sit")])
    with pytest.raises(ValueError, match="source 'human'"):
        write_labels(recording, "bob", [(1.0, 2.0, "sit")], source="model", mode="append")


@pytest.mark.parametrize("segments, message", [
    ([(1.0, 1.0, "sit")], "stop_s <= start_s"),
    ([(2.0, 1.0, "sit")], "stop_s <= start_s"),
    ([(0.0, float("nan"), "sit")], "finite"),
    ([(0.0, 1.0, "")], "empty activity"),
    ([(0.0, 1.0)], "start_s, stop_s, activity"),
])
def test_bad_segments_are_refused(recording, segments, message):
    with pytest.raises(ValueError, match=message):
        write_labels(recording, "bad", segments)
    assert "bad" not in open_recording(recording).labels


def test_bad_source_mode_and_name_are_refused(recording):
    with pytest.raises(ValueError, match="source"):
        write_labels(recording, "x", [(0, 1, "sit")], source="oracle")
    with pytest.raises(ValueError, match="mode"):
        write_labels(recording, "x", [(0, 1, "sit")], mode="merge")
    with pytest.raises(ValueError, match="without '/'"):
        write_labels(recording, "a/b", [(0, 1, "sit")])


def test_label_tracks_copy_between_recordings(recording, tmp_path):
    write_labels(recording, "alice", [(0.0, 2.0, "sit"), (1.0, 3.0, "walk")])
    track = open_recording(recording).labels["alice"]
    out = write_labels(recording, "alice2", track, annotator="copy")
    assert out.segments() == track.segments() and out.annotator == "copy"
    out = write_labels(recording, "alice3", track.to_array())
    assert out.segments() == track.segments()


def test_overlapping_segments_later_wins_and_gaps_are_empty():
    track = LabelTrack.from_segments("t", [(0.0, 1.0, "sit"), (0.5, 2.0, "stand_up")])
    labels = track.labels_at(np.array([0.2, 0.5, 1.9, 2.0, -1.0]))
    assert labels.tolist() == ["sit", "stand_up", "stand_up", "", ""]
    assert LabelTrack.from_segments("e", []).labels_at([0.0, 1.0]).tolist() == ["", ""]
