"""Issue 35, case 3: whatever bytes the walker puts in a LOG frame (a NUL, invalid
UTF-8), the recording keeps every sample, closes cleanly, stores the text so the exact
bytes come back, and recover() rebuilds it; host-side strings are stored too."""
import time
import warnings

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from device.protocol import wire
from host.recording import RecordingWriter, open_recording, recover
from host.recording.layout import escape_wire_text, storable_text, unescape_wire_text
from recording_synth import Synth

T0 = 1_700_000_000.0
NASTY = b"boot\x00ed \xff\xfe \\x00 \xc3"  # NUL, invalid UTF-8, a literal escape


def _session(path, log_texts, n=300, close=True, **writer_kwargs):
    """Samples with LOG frames spread among them, each read its own chunk."""
    s = Synth(rate_hz=100)
    w = RecordingWriter(path, overwrite=True, **writer_kwargs)
    w.write_serial(s.info(), T0)
    every = max(1, n // (len(log_texts) + 1))
    k = 0
    for i in range(n):
        w.write_serial(s.sample(), T0 + i / 100)
        if i % every == every - 1 and k < len(log_texts):
            w.write_serial(s.frame(wire.LOG, bytes((wire.LOG_ERROR,)) + log_texts[k]),
                           T0 + i / 100)
            k += 1
    if close:
        w.close()
    else:  # a crash after the last flush
        w.flush()
        w.abort()
    return path


def _open(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return open_recording(path)


def test_a_log_frame_with_a_nul_does_not_lose_the_recording(tmp_path):
    path = _session(tmp_path / "s.h5", [NASTY, b"tare done", NASTY[:5]])
    rec = _open(path)
    assert rec.closed_cleanly and len(rec.samples) == 300
    assert [unescape_wire_text(t) for t in rec.log["text"]] == [NASTY, b"tare done",
                                                                NASTY[:5]]
    assert list(rec.log["level"]) == [wire.LOG_ERROR] * 3
    out = recover(path, tmp_path / "r.h5")
    again = _open(tmp_path / "r.h5")
    assert out.samples == 300 and list(again.log["text"]) == list(rec.log["text"])


def test_recover_rebuilds_a_crashed_recording_with_such_a_log(tmp_path):
    path = _session(tmp_path / "s.h5", [NASTY] * 4, close=False)
    live = _open(path)
    assert not live.closed_cleanly and len(live.samples) == 300
    report = recover(path, tmp_path / "r.h5")
    rec = _open(tmp_path / "r.h5")
    assert report.samples == 300 and len(rec.samples) == 300
    assert [unescape_wire_text(t) for t in rec.log["text"]] == [NASTY] * 4


def test_host_side_strings_with_a_nul_or_a_surrogate_are_stored(tmp_path):
    w = RecordingWriter(tmp_path / "s.h5", subject_id="S\x00 1", notes="caf\udce9")
    w.write_event("stall", "no bytes\x00 for 2 s", 1, T0)
    w.set_session(notes="x\x00y")
    w.close()
    rec = _open(tmp_path / "s.h5")
    assert rec.closed_cleanly
    assert rec.attrs["subject_id"] == "S\\x00 1" and rec.attrs["notes"] == "x\\x00y"
    assert "no bytes\\x00 for 2 s" in list(rec.link_events["detail"])


# ---- properties -----------------------------------------------------------------------
@settings(max_examples=500, derandomize=True)
@given(st.binary(max_size=300))
def test_escaping_wire_text_is_exact_and_storable(raw):
    text = escape_wire_text(raw)
    assert "\x00" not in text
    text.encode("utf-8")  # no surrogates: HDF5 can hold it
    assert unescape_wire_text(text) == raw
    if b"\\" not in raw and b"\x00" not in raw:
        try:
            assert text == raw.decode("utf-8")  # plain text stays readable as it is
        except UnicodeDecodeError:
            pass


@settings(max_examples=200, derandomize=True)
@given(st.text())
def test_storable_text_holds_any_string(text):
    out = storable_text(text)
    assert "\x00" not in out
    out.encode("utf-8")
    if "\x00" not in text and "\\" not in text:
        try:
            text.encode("utf-8")
            assert out == text
        except UnicodeEncodeError:
            pass


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=wire.MAX_PAYLOAD - 1), min_size=1, max_size=5),
       st.text(max_size=20))
def test_any_log_bytes_and_event_text_round_trip(tmp_path, texts, detail):
    path = tmp_path / "p.h5"
    s = Synth(rate_hz=100)
    with RecordingWriter(path, overwrite=True) as w:
        w.write_serial(s.info(), T0)
        for i, raw in enumerate(texts):
            w.write_serial(s.sample() + s.frame(wire.LOG, bytes((20,)) + raw), T0 + i)
            w.write_event("note", detail, i, T0 + i)
    rec = _open(path)
    assert rec.closed_cleanly and len(rec.samples) == len(texts)
    assert [unescape_wire_text(t) for t in rec.log["text"]] == texts
    assert list(rec.link_events["detail"]) == [storable_text(detail)] * len(texts)


def test_recover_copies_a_root_attribute_that_is_not_utf8(tmp_path):
    """Found by the loader fuzzing: a damaged string attribute (invalid UTF-8 under a
    UTF-8 type) made recover(path, out) fail while copying the attributes."""
    import h5py

    path = _session(tmp_path / "s.h5", [b"hello"], n=50)
    with h5py.File(path, "r+") as f:
        f.attrs.create("notes", data=b"caf\xe9 \xff", dtype=h5py.string_dtype("utf-8"))
    report = recover(path, tmp_path / "r.h5")
    rec = _open(tmp_path / "r.h5")
    assert report.samples == 50 and len(rec.samples) == 50
    assert rec.attrs["notes"] == "caf\\xe9 \\xff"
