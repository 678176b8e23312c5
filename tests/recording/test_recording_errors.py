"""Files we must refuse, and files we must never overwrite silently."""
import hashlib

import h5py
import pytest

from host.errors import user_errors
from host.recording import (
    RecorderThread, RecordingFormatError, RecordingWarning, RecordingWriter, can_read,
    open_recording, recover,
)
from recording_synth import Synth


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def recording(tmp_path):
    path = tmp_path / "good.h5"
    s = Synth()
    with RecordingWriter(path, subject_id="S1") as w:
        w.write_serial(s.info() + b"".join(s.sample() for _ in range(50)), 1e9)
    return path


def test_writer_refuses_an_existing_file_and_leaves_it_alone(recording):
    before = _digest(recording)
    with pytest.raises(FileExistsError, match="already exists"):
        RecordingWriter(recording)
    with pytest.raises(FileExistsError):
        RecorderThread(recording)
    assert _digest(recording) == before
    assert open_recording(recording).attrs["subject_id"] == "S1"


def test_writer_overwrites_only_when_asked(recording):
    with RecordingWriter(recording, overwrite=True, subject_id="S2"):
        pass
    rec = open_recording(recording)
    assert rec.attrs["subject_id"] == "S2" and len(rec.samples) == 0


def test_writer_refuses_a_directory(tmp_path):
    with pytest.raises(IsADirectoryError):
        RecordingWriter(tmp_path, overwrite=True)


def test_recover_refuses_to_overwrite_its_output(recording, tmp_path):
    other = tmp_path / "other.h5"
    other.write_bytes(b"precious")
    with pytest.raises(FileExistsError):
        recover(recording, other)
    assert other.read_bytes() == b"precious"
    recover(recording, other, overwrite=True)
    assert len(open_recording(other).samples) == 50


def test_not_hdf5_is_a_format_error(tmp_path):
    path = tmp_path / "notes.h5"
    path.write_text("hello, not HDF5\n")
    with pytest.raises(RecordingFormatError, match="not an HDF5 file") as exc:
        open_recording(path)
    assert "\n" not in str(exc.value)
    assert not can_read(path)


def test_truncated_file_is_a_format_error(recording, tmp_path, monkeypatch):
    import sys
    # HDF5 spins on this file's metadata (cut inside it): recover gives up on HDF5
    # after STRUCTURE_TIMEOUT_S and finds no frame in the bytes either.
    monkeypatch.setattr(sys.modules["host.recording.recover"], "STRUCTURE_TIMEOUT_S", 3.0)
    cut = tmp_path / "cut.h5"
    cut.write_bytes(recording.read_bytes()[:3000])
    with pytest.raises(RecordingFormatError, match="truncated") as exc:
        open_recording(cut)
    assert "\n" not in str(exc.value)
    with pytest.raises(RecordingFormatError):
        recover(cut, tmp_path / "out.h5")
    assert not (tmp_path / "out.h5").exists()


def test_foreign_hdf5_is_a_format_error(tmp_path):
    path = tmp_path / "foreign.h5"
    with h5py.File(path, "w") as f:
        f["data"] = [1, 2, 3]
    with pytest.raises(RecordingFormatError, match="not a WalkerLab recording"):
        open_recording(path)
    with pytest.raises(RecordingFormatError, match="not a WalkerLab recording"):
        recover(path)
    assert not can_read(path)


def test_unknown_major_version_is_a_format_error(recording):
    with h5py.File(recording, "r+") as f:
        f.attrs["format_version"] = "2.0.0"
    with pytest.raises(RecordingFormatError, match="2.0.0 is not supported.*1.x") as exc:
        open_recording(recording)
    assert "\n" not in str(exc.value)
    assert not can_read(recording)


def test_newer_minor_version_reads_with_a_warning(recording):
    with h5py.File(recording, "r+") as f:
        f.attrs["format_version"] = "1.7.0"
        f.create_group("future_things")
    with pytest.warns(RecordingWarning, match="newer format"):
        rec = open_recording(recording)
    assert len(rec.samples) == 50


def test_bytes_attributes_from_other_tools_are_read(recording):
    with h5py.File(recording, "r+") as f:
        for key in ("format", "format_version", "subject_id"):
            value = f.attrs[key]
            del f.attrs[key]
            f.attrs.create(key, value.encode(), dtype="S%d" % len(value.encode()))
    assert can_read(recording)
    assert open_recording(recording).attrs["subject_id"] == "S1"


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        open_recording(tmp_path / "nope.h5")
    assert not can_read(tmp_path / "nope.h5")


def test_the_cli_reports_format_errors_as_one_line():
    assert RecordingFormatError in user_errors()
    assert issubclass(RecordingFormatError, ValueError)
