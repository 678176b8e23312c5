"""Write every kind of frame and event through RecordingWriter, read it back, compare."""
import json

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from calibration import GRAVITY, WalkerCalibration
from device.protocol import wire
from host.recording import (
    FORMAT_VERSION, RecordingWriter, open_recording, recover, truth_segments,
)
from host.recording import layout as L
from recording_synth import Synth, check_samples, decode_reads

HOST_T0 = 1_700_000_000.0


def _stream():
    """A byte stream with every frame type, a 2**32 clock wrap, a CRC error, a
    sequence gap, bad payloads and an unknown frame type."""
    s = Synth(rate_hz=100, t0_us=2**32 - 1_500_000)  # wraps after 150 samples
    out = [s.info(),
           s.frame(wire.ACK, wire.pack_ack(wire.CMD_START, 2, 0)),
           s.frame(wire.NAK, wire.pack_ack(wire.CMD_SET_RATE, 1, wire.NAK_BAD_ARGUMENT)),
           s.frame(wire.LOG, wire.pack_log(wire.LOG_WARNING, "tare done é"))]
    for i in range(400):
        frame = s.sample()
        if i == 50:  # one flipped payload bit: a CRC error, so the frame is lost
            frame = bytearray(frame)
            frame[20] ^= 0x10
            frame = bytes(frame)
        out.append(frame)
        if i % 40 == 0:
            out.append(s.frame(wire.ACTIVITY, wire.pack_activity(i % 5, 0.25 + i / 1000,
                                                                 "A%d" % (i % 5))))
        if i == 220:
            s.seq += 3  # three frames never arrive
        if i == 300:
            out.append(s.frame(0x30, b"\x01\x02"))  # unknown type
            out.append(s.frame(wire.ACTIVITY, b"abc"))  # wrong length
            out.append(s.frame(wire.LOG, b""))  # empty LOG
            out.append(s.info())  # a second INFO
    return b"".join(out)


def _reads(data, sizes):
    reads, pos, k = [], 0, 0
    while pos < len(data):
        n = sizes[k % len(sizes)]
        reads.append((data[pos:pos + n], HOST_T0 + 0.01 * k))
        pos += n
        k += 1
    return reads


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    path = tmp_path_factory.mktemp("rt") / "session.h5"
    reads = _reads(_stream(), [1, 7, 42, 300, 13, 1000, 2])
    cal = WalkerCalibration(walker_id="WL-TEST", source="test")
    with RecordingWriter(path, subject_id="S07", calibration=cal, notes="round trip",
                         host="bench-pc", app_version="9.9.9") as w:
        w.write_event("connected", "/dev/ttyACM0", 0, HOST_T0 - 1)
        for data, t in reads:
            w.write_serial(data, t)
        w.write_event("reconnected", "/dev/ttyACM0", 1, HOST_T0 + 5)
        w.write_event("stalled", "no frames for 2 s", 0, HOST_T0 + 6)
        w.write_labels("alice", [(0.0, 1.0, "sit"), (1.0, 2.5, "walk")],
                       annotator="alice", source="human")
        w.write_labels("hmm", [(0.5, 3.0, "walk")], annotator="", source="model",
                       model="hmm 1.2 (sha 1234)")
    return path, reads, cal


def test_samples_round_trip_exactly(written):
    path, reads, _ = written
    ref, _, _ = decode_reads(reads)
    rec = open_recording(path)
    for name in ref.__dataclass_fields__:
        got, exp = getattr(rec.samples, name), getattr(ref, name)
        assert got.dtype == exp.dtype, name
        np.testing.assert_array_equal(got, exp, err_msg=name)
    assert len(rec.samples) == 399  # 400 sent, one lost to the CRC error
    check_samples(rec.samples.slice(0, 50))
    check_samples(rec.samples.slice(50, 399), first=51)


def test_device_time_is_unwrapped_and_relative_to_the_first_frame(written):
    path, reads, _ = written
    rec = open_recording(path)
    t_first = 2**32 - 1_500_000  # the INFO frame, before any sample
    assert rec.attrs["timestamps_reference_device_us"] == t_first
    assert rec.samples.t_us[-1] > 2**32  # past the wrap
    np.testing.assert_array_equal(rec.time_s, (rec.samples.t_us - t_first) / 1e6)
    assert np.all(np.diff(rec.time_s) > 0)


def test_raw_log_and_read_table_round_trip(written):
    path, reads, _ = written
    rec = open_recording(path)
    assert rec.raw_bytes() == b"".join(d for d, _ in reads)
    assert rec.raw_bytes(10, 20) == b"".join(d for d, _ in reads)[10:20]
    np.testing.assert_array_equal(rec.raw_chunks["host_time"], [t for _, t in reads])
    np.testing.assert_array_equal(rec.raw_chunks["length"], [len(d) for d, _ in reads])
    np.testing.assert_array_equal(rec.raw_chunks["offset"],
                                  np.cumsum([0] + [len(d) for d, _ in reads])[:-1])


def test_info_log_activity_truth_tables_match_the_frames(written):
    path, reads, _ = written
    _, others, _ = decode_reads(reads)
    rec = open_recording(path)
    by_type = {}
    for t_us, frame in others:
        by_type.setdefault(frame.frame_type, []).append((t_us, frame))

    infos = [wire.unpack_info(f.payload) for _, f in by_type[wire.INFO]]
    assert len(rec.info_table) == 2
    for row, d in zip(rec.info_table, infos):
        # the table keeps every INFO field but the "a CALIBRATION frame follows" flag;
        # the recording keeps that calibration itself (and the flag in its attributes)
        assert set(d) - set(row.dtype.names) == {"calibrated", "model_skipped"}
        for k in set(d) & set(row.dtype.names):
            assert row[k] == d[k], k
    assert rec.info == {**infos[-1], "t_us": by_type[wire.INFO][-1][0],
                        "timestamps": rec.info_table["timestamps"][-1],
                        "host_time": rec.info_table["host_time"][-1]}

    logs = [(t, f) for t, f in by_type[wire.LOG] if f.payload]
    assert rec.log["text"].tolist() == [wire.unpack_log(f.payload)[1] for _, f in logs]
    assert rec.log["level"].tolist() == [wire.LOG_WARNING]
    np.testing.assert_array_equal(rec.log["t_us"], [t for t, _ in logs])

    acts = [(t, f) for t, f in by_type[wire.ACTIVITY] if len(f.payload) == wire.ACTIVITY_LEN]
    exp = [wire.unpack_activity(f.payload) for _, f in acts]
    assert rec.device_activity["class_index"].tolist() == [e[0] for e in exp]
    np.testing.assert_array_equal(rec.device_activity["confidence"],
                                  np.array([e[1] for e in exp], np.float32))
    assert rec.device_activity["code"].tolist() == [e[2] for e in exp]
    assert rec.device_activity["seq"].tolist() == [f.seq for _, f in acts]

    truth = by_type[wire.TRUTH]
    assert rec.truth["code"].tolist() == [wire.unpack_truth(f.payload) for _, f in truth]
    first = rec.attrs["timestamps_reference_device_us"]
    np.testing.assert_array_equal(rec.truth["timestamps"],
                                  [(t - first) / 1e6 for t, _ in truth])


def test_decoder_events_and_counters(written):
    path, reads, _ = written
    _, _, counters = decode_reads(reads)
    rec = open_recording(path)
    assert rec.counters == counters
    kinds = rec.decoder_events["kind"].tolist()
    assert kinds.count("ack") == 1 and kinds.count("nak") == 1
    nak = rec.decoder_events[rec.decoder_events["kind"] == "nak"][0]
    assert nak["detail"] == "SET_RATE seq 1" and nak["value"] == wire.NAK_BAD_ARGUMENT
    assert sum(rec.decoder_events[rec.decoder_events["kind"] == "crc_error"]["value"]) \
        == counters["crc_errors"] >= 1
    gaps = rec.decoder_events[rec.decoder_events["kind"] == "seq_gap"]
    # The gap, the CRC loss and the two frames whose length does not fit their type.
    assert sum(gaps["value"]) == counters["frames_lost"] == 3 + 1 + 2
    resyncs = rec.decoder_events[rec.decoder_events["kind"] == "resync"]
    assert resyncs["value"].sum() == counters["resyncs"]
    assert sum(int(d.split()[0]) for d in resyncs["detail"]) <= counters["bytes_skipped"]
    assert kinds.count("unknown_frame") == 1
    bad = rec.decoder_events[rec.decoder_events["kind"] == "bad_length"]
    assert bad["value"].sum() == counters["bad_lengths"] == 2  # ACTIVITY "abc", empty LOG


def test_link_events_round_trip_and_merge_with_decoder_events(written):
    path, _, _ = written
    rec = open_recording(path)
    assert rec.link_events.tolist() == [
        (HOST_T0 - 1, "connected", "/dev/ttyACM0", 0),
        (HOST_T0 + 5, "reconnected", "/dev/ttyACM0", 1),
        (HOST_T0 + 6, "stalled", "no frames for 2 s", 0)]
    ev = rec.events
    assert len(ev) == len(rec.link_events) + len(rec.decoder_events)
    assert np.all(np.diff(ev["host_time"]) >= 0)
    assert set(ev["source"]) == {"link", "decoder"}


def test_session_attributes(written):
    path, _, cal = written
    rec = open_recording(path)
    a = rec.attrs
    assert a["format"] == "walkerlab-recording" and a["format_version"] == FORMAT_VERSION
    assert a["subject_id"] == "S07" and a["notes"] == "round trip" and a["host"] == "bench-pc"
    assert a["app_version"] == "9.9.9" and a["writer_version"]
    assert a["walker_id"] == "WL-TEST" and a["firmware_version"] == "0.1.0"  # from INFO
    assert a["protocol_version"] == wire.PROTOCOL_VERSION
    for key in ("session_start_time", "session_end_time", "timestamps_reference_time"):
        assert a[key][-6] in "+-" and a[key][-3] == ":", key  # ISO 8601 with an offset
    assert rec.calibration == cal.to_dict()
    assert rec.closed_cleanly
    layout = json.loads(a["layout"])
    assert {o["path"] for o in layout["objects"]} == {p for p, *_ in L.LAYOUT}
    assert len(a["layout"]) < 64 * 1024


def test_nwb_attributes_of_the_sample_columns(written):
    path, _, _ = written
    with h5py.File(path) as f:
        accel = f[L.SAMPLES + "/accel"].attrs
        assert accel["unit"] == "m/s^2" and accel["columns"] == "x,y,z"
        assert accel["conversion"] == pytest.approx(GRAVITY / 256)
        assert accel["conversion_source"] == "calibration"
        loads = f[L.SAMPLES + "/loads"].attrs
        assert loads["unit"] == "N" and loads["columns"] == "FR,FL,RL,RR"
        assert loads["continuity"] == "step"
        assert f[L.SAMPLES + "/timestamps"].attrs["unit"] == "s"
        assert f[L.SAMPLES].attrs["rate"] == 100


def test_label_tracks_round_trip(written):
    path, _, _ = written
    rec = open_recording(path)
    assert set(rec.labels) == {"alice", "hmm", "simulator"}
    alice = rec.labels["alice"]
    assert alice.segments() == [(0.0, 1.0, "sit"), (1.0, 2.5, "walk")]
    assert (alice.annotator, alice.source, alice.model) == ("alice", "human", "")
    assert alice.created and alice.modified
    hmm = rec.labels["hmm"]
    assert (hmm.source, hmm.model) == ("model", "hmm 1.2 (sha 1234)")


def test_truth_frames_become_the_simulator_track(written):
    path, _, _ = written
    rec = open_recording(path)
    sim = rec.labels["simulator"]
    assert (sim.source, sim.annotator) == ("simulator", "simulator")
    # Synth: SIT for samples 0-299, STD from 300 (TRUTH every 100 samples).
    assert [s[2] for s in sim.segments()] == ["SIT", "STD"]
    per_sample = rec.labels_per_sample("simulator")
    t_std = rec.truth["timestamps"][rec.truth["code"] == "STD"][0]
    assert np.all(per_sample[rec.time_s < t_std] == "SIT")
    assert np.all(per_sample[rec.time_s >= t_std] == "STD")  # up to the last sample
    counts = rec.label_sample_counts("simulator")
    assert counts == {"SIT": int((rec.time_s < t_std).sum()),
                      "STD": int((rec.time_s >= t_std).sum())}
    assert sum(counts.values()) == len(rec.samples)


def test_labels_per_sample_marks_unlabelled_samples_with_empty_string(written):
    path, _, _ = written
    rec = open_recording(path)
    alice = rec.labels_per_sample("alice")
    assert alice.shape == (len(rec.samples),)
    assert np.all(alice[rec.time_s < 1.0] == "sit")
    assert np.all(alice[(rec.time_s >= 1.0) & (rec.time_s < 2.5)] == "walk")
    assert np.all(alice[rec.time_s >= 2.5] == "")
    assert rec.label_sample_counts("alice") == {
        "sit": int((rec.time_s < 1.0).sum()),
        "walk": int(((rec.time_s >= 1.0) & (rec.time_s < 2.5)).sum())}
    with pytest.raises(KeyError, match="no label track 'bob'"):
        rec.labels_per_sample("bob")


def test_summary_figures(written):
    path, reads, _ = written
    _, _, counters = decode_reads(reads)
    s = open_recording(path).summary()
    assert s["frames"] == counters["frames_ok"]
    assert s["samples"] == 399
    assert s["duration_s"] == pytest.approx(3.99)
    assert s["rate_hz"] == pytest.approx(100.0)
    assert s["seq_gaps"] == counters["seq_gaps"] >= 1
    assert s["crc_errors"] == counters["crc_errors"]
    assert s["resyncs"] == counters["resyncs"] >= 1
    assert s["dropped"] == 0 and s["reconnects"] == 1 and s["stalls"] == 1
    assert s["closed_cleanly"] is True


def test_recover_of_a_clean_file_reproduces_every_derived_dataset(written, tmp_path):
    path, _, _ = written
    report = recover(path, tmp_path / "again.h5")
    assert report.ignored_reads == 0 and report.trailing_bytes == 0
    with h5py.File(path) as a, h5py.File(tmp_path / "again.h5") as b:
        def walk(f):
            out = {}
            f.visititems(lambda n, o: out.__setitem__(n, o[()])
                         if isinstance(o, h5py.Dataset) else None)
            return out
        da, db = walk(a), walk(b)
        assert da.keys() == db.keys()
        for name in da:
            np.testing.assert_array_equal(da[name], db[name], err_msg=name)
        for p in L.DERIVED_PATHS[1:] + tuple(L.SAMPLES + "/" + c for c in L.SAMPLE_COLUMNS):
            assert {k: str(v) for k, v in a[p].attrs.items()} == \
                {k: str(v) for k, v in b[p].attrs.items()}, p
        for key in ("walker_id", "firmware_version", "timestamps_reference_time",
                    "timestamps_reference_device_us"):
            assert a.attrs[key] == b.attrs[key], key
        assert b.attrs["recovered_at"]


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(1, 400), min_size=1, max_size=8),
       flips=st.lists(st.integers(0, 20_000), max_size=4))
def test_any_chunking_and_corruption_decodes_like_the_stream_decoder(tmp_path, sizes, flips):
    data = bytearray(_stream())
    for pos in flips:
        data[pos % len(data)] ^= 0x04
    reads = _reads(bytes(data), sizes)
    path = tmp_path / ("h%d.h5" % abs(hash((tuple(sizes), tuple(flips)))))
    with RecordingWriter(path, overwrite=True) as w:
        for d, t in reads:
            w.write_serial(d, t)
    ref, others, counters = decode_reads(reads)
    rec = open_recording(path)
    for name in ref.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(rec.samples, name), getattr(ref, name))
    assert rec.counters == counters
    n_truth = sum(f.frame_type == wire.TRUTH and len(f.payload) == 4 for _, f in others)
    assert len(rec.truth) == n_truth


def test_truth_segments_hold_for_at_most_one_and_a_half_seconds():
    samples = np.arange(0, 10, 0.01)
    segs = truth_segments([0.0, 1.0, 2.0, 2.5, 6.0], ["A", "A", "B", "", "C"], samples)
    # A merges; B ends at the '' frame; the C frame after a silence starts anew and
    # holds until just after the last sample, capped at 1.5 s.
    assert segs == [(0.0, 2.0, "A"), (2.0, 2.5, "B"), (6.0, 7.5, "C")]
    assert truth_segments([], [], samples) == []
    end = truth_segments([9.5], ["D"], samples)
    assert end[0][1] == pytest.approx(9.99 + 0.01)
