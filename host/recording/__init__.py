"""WalkerLab recordings: one HDF5 file per session, documented in recordings/README.md.

    with RecorderThread("session.h5", subject_id="S01") as rec:   # writer thread
        link.add_sink(rec)                     # host.link batches: raw bytes + events
    rec = open_recording("session.h5")         # -> Recording
    write_labels("session.h5", "alice", [(0.0, 4.2, "walk")], annotator="alice")
    recover("crashed.h5")                      # rebuild derived data from the raw log
"""
from host.recording.layout import FORMAT_VERSION
from host.recording.reader import (
    LabelTrack, LabelTrackExistsError, Recording, RecordingFormatError, RecordingWarning,
    can_read, check_structures, open_recording, read_attrs,
)
from host.recording.recover import RecoverReport, recover
from host.recording.writer import (
    RecorderThread, RecordingWriter, truth_segments, write_labels,
)

__all__ = [
    "FORMAT_VERSION", "LabelTrack", "LabelTrackExistsError", "Recording",
    "RecordingFormatError", "RecordingWarning", "RecorderThread", "RecordingWriter",
    "RecoverReport", "can_read", "check_structures", "open_recording", "read_attrs", "recover", "truth_segments",
    "write_labels",
]
