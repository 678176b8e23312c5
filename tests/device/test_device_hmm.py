"""The on-device recognizer: model file, features and filter against the host's."""
import struct

import numpy as np
import pytest

from calibration import calibration_for
from device.firmware import model_format
from device.firmware.core import WalkerFirmware
from device.firmware.features import DeviceFeatures
from device.firmware.hmm_filter import DeviceHMM
from device.firmware.status_led import PATTERNS, led_level, pattern_for
from device.firmware.storage import FileStorage, MemoryStorage
from device.protocol import wire
from device.sim.board import SimulatedBoard
from device.sim.sensors import SimulatedSensors
from host.deploy import feature_constants, model_bytes
from host.errors import UserError
from host.features import FeatureExtractor
from host.recording import open_recording


def _device(model, calibration):
    m = model_format.unpack_model(model_bytes(model, calibration))
    return m, DeviceHMM(m)


@pytest.mark.parametrize("fs, transitions", [("cop", "persistence"),
                                             ("loadcells", "persistence"),
                                             ("cop", "counts")])
def test_device_filter_matches_host_filter(trained_hmms, sim_sessions, fs, transitions):
    from host.datasets import load_sessions
    from recognizers.hmm_recognizer import HMMRecognizer

    model = trained_hmms[fs]
    if transitions == "counts":  # dense transitions: the K x K path of the filter
        train = load_sessions(sim_sessions[:1], feature_set=fs)
        model = HMMRecognizer(transitions="counts").fit([x.X for x in train],
                                                        [x.y for x in train], feature_set=fs)
    X = load_sessions(sim_sessions[1:], feature_set=fs)[0].X[:3000]
    host = model.filter(X)
    m, dev = _device(model, calibration_for("SIM-0"))
    assert m.classes == [str(c) for c in model.classes_] and m.feature_set == fs
    assert (dev.persistence is None) == (transitions == "counts")
    # the same symbols as the host's discretiser, frame by frame
    sym = model.discretizer_.transform(X)
    posts = np.empty_like(host)
    for t in range(len(X)):
        assert dev.bin(X[t]) == sym[t].tolist()
        posts[t] = dev.step(X[t])
    assert np.abs(posts - host).max() < 1e-9
    assert np.allclose(posts.sum(axis=1), 1.0)
    assert (posts.argmax(axis=1) != host.argmax(axis=1)).sum() == 0


def test_float32_tables_stay_within_documented_tolerance(trained_hmms, sim_sessions,
                                                         monkeypatch):
    """The board holds tables in float32: measure that error against the host."""
    from host.datasets import load_sessions

    model = trained_hmms["cop"]
    X = load_sessions(sim_sessions[1:], feature_set="cop")[0].X[:3000]
    host = model.filter(X)
    monkeypatch.setattr(model_format, "FLOAT_CODE", "f")
    monkeypatch.setattr("device.firmware.hmm_filter.FLOAT_CODE", "f")
    m, dev = _device(model, calibration_for("SIM-0"))
    assert m.edges.typecode == "f"
    posts = np.array([list(dev.step(x)) for x in X])
    err = np.abs(posts - host).max()
    assert err < 1e-4  # docs/firmware.md: float32 tables, posteriors within 1e-4
    assert (posts.argmax(axis=1) == host.argmax(axis=1)).all()


def test_device_features_equal_host_features_bit_for_bit(sim_sessions):
    rec = open_recording(sim_sessions[1])
    cal = calibration_for("SIM-0")
    for fs in ("cop", "loadcells"):
        host = FeatureExtractor(cal, fs).process(rec.samples).X
        dev = DeviceFeatures(fs, feature_constants(cal))
        b = rec.samples
        tared = (b.status & wire.STATUS_TARED) != 0
        got = np.array([dev.features(int(b.t_us[i]), b.accel[i].tolist(), b.loads[i].tolist(),
                                     bool(tared[i]), int(b.encoder[i]))
                        for i in range(len(b))])
        assert np.array_equal(got, host)
        assert np.isfinite(got).all()


def test_model_file_round_trip_and_sizes(trained_hmms):
    model = trained_hmms["cop"]
    data = model_bytes(model, calibration_for("SIM-0"))
    m = model_format.unpack_model(data)
    K, S = len(model.classes_), model.n_features_in_
    assert np.allclose(np.array(m.startprob), model.startprob_, rtol=0, atol=0)
    assert np.array_equal(np.array(m.transmat).reshape(K, K), model.transmat_)
    for s in range(S):
        n = model.discretizer_.n_bins_[s]
        block = np.array(m.log_emission[m.table_offsets[s]:m.table_offsets[s + 1]])
        assert np.array_equal(block.reshape(n, K), model.model_.emissions_.log_table[s, :n])
        assert np.array_equal(np.array(m.edges[m.edge_offsets[s]:m.edge_offsets[s + 1]]),
                              model.discretizer_.edges_[s])
    n_edges = sum(len(e) for e in model.discretizer_.edges_)
    n_bins = n_edges + S
    assert len(data) == 8 + 4 * K + 8 * model_format.N_CONST + S + 8 * (
        n_edges + K + K * K + n_bins * K)
    assert m.table_bytes() == 8 * (n_edges + K + K * K + n_bins * K)


@pytest.mark.parametrize("damage", ["magic", "version", "truncate", "extra", "negative"])
def test_damaged_model_files_are_rejected(trained_hmms, damage):
    data = bytearray(model_bytes(trained_hmms["cop"], calibration_for("SIM-0")))
    if damage == "magic":
        data[0:4] = b"XXXX"
    elif damage == "version":
        data[4] = 9
    elif damage == "truncate":
        data = data[:-3]
    elif damage == "extra":
        data += b"\0"
    else:  # a negative start probability
        K = data[5]
        S = data[6]
        n_edges = sum(data[8 + 4 * K + 8 * model_format.N_CONST:][:S])
        pos = 8 + 4 * K + 8 * model_format.N_CONST + S + 8 * n_edges
        data[pos:pos + 8] = struct.pack("<d", -0.5)
    with pytest.raises(model_format.ModelError):
        model_format.unpack_model(bytes(data))


def test_model_bytes_refuses_other_recognizers():
    with pytest.raises(UserError, match="only the discrete HMM"):
        model_bytes(object(), calibration_for("SIM-0"))


def test_impossible_evidence_restarts_from_the_prior_without_nan(trained_hmms):
    m, dev = _device(trained_hmms["cop"], calibration_for("SIM-0"))
    for i in range(len(m.log_emission)):
        m.log_emission[i] = float("-inf")
    post = dev.step([0.0] * 7)
    assert all(p == p for p in post) and abs(sum(post) - 1) < 1e-12
    assert list(post) == pytest.approx(list(np.array(m.startprob) / sum(m.startprob)))


# ---- model upload through the firmware's command handler ------------------------

class _Fw:
    def __init__(self, storage=MemoryStorage()):
        sensors = SimulatedSensors("free", seed=1, duration_s=30)
        self.board = SimulatedBoard(sensors, storage=storage)
        self.out = bytearray()
        self.fw = WalkerFirmware(self.board, self.out.extend)
        self.dec = wire.FrameDecoder(track_sequence=False)
        self.seq = 0

    def cmd(self, kind, payload=b""):
        self.seq += 1
        self.fw.handle_bytes(wire.encode_frame(kind, self.seq, 0, payload), 0)
        frames = self.dec.feed(bytes(self.out))
        self.out.clear()
        replies = [f for f in frames if f.frame_type in (wire.ACK, wire.NAK)]
        assert len(replies) == 1 and wire.unpack_ack(replies[0].payload)[:2] == (kind, self.seq)
        return 0 if replies[0].frame_type == wire.ACK else wire.unpack_ack(replies[0].payload)[2]

    def upload(self, data, crc=None, chunk=200):
        assert self.cmd(wire.CMD_MODEL_BEGIN, wire.pack_model_begin(
            len(data), wire.crc16(data) if crc is None else crc)) == 0
        for off in range(0, len(data), chunk):
            assert self.cmd(wire.CMD_MODEL_CHUNK,
                            wire.pack_model_chunk(off, data[off:off + chunk])) == 0
        return self.cmd(wire.CMD_MODEL_COMMIT)


def test_upload_installs_and_persists_the_model(trained_hmms, tmp_path):
    data = model_bytes(trained_hmms["cop"], calibration_for("SIM-0"))
    w = _Fw(FileStorage(str(tmp_path)))
    assert w.fw.recognizer is None
    assert w.upload(data) == 0
    assert w.fw.recognizer is not None and w.fw.status & wire.STATUS_MODEL_ACTIVE
    assert (tmp_path / "model.wlm").read_bytes() == data
    again = _Fw(FileStorage(str(tmp_path)))  # a reboot: loaded from flash
    assert again.fw.recognizer is not None
    assert again.cmd(wire.CMD_MODEL_CLEAR) == 0
    assert again.fw.recognizer is None and not (tmp_path / "model.wlm").exists()
    assert not again.fw.status & wire.STATUS_MODEL_ACTIVE


def test_upload_errors_are_naks_and_keep_the_old_model(trained_hmms):
    data = model_bytes(trained_hmms["cop"], calibration_for("SIM-0"))
    w = _Fw(MemoryStorage())
    assert w.upload(data) == 0
    old = w.fw.recognizer
    assert w.upload(data, crc=wire.crc16(data) ^ 1) == wire.NAK_BAD_MODEL
    assert w.upload(b"WLM1" + bytes(40)) == wire.NAK_BAD_MODEL
    assert w.fw.recognizer is old
    assert w.cmd(wire.CMD_MODEL_BEGIN, wire.pack_model_begin(100, 0)) == 0
    assert w.cmd(wire.CMD_MODEL_CHUNK, wire.pack_model_chunk(50, b"x" * 10)) \
        == wire.NAK_BAD_ARGUMENT  # a hole
    assert w.cmd(wire.CMD_MODEL_CHUNK, wire.pack_model_chunk(0, b"x" * 60)) == 0
    assert w.cmd(wire.CMD_MODEL_CHUNK, wire.pack_model_chunk(0, b"x" * 60)) == 0  # repeat
    assert w.cmd(wire.CMD_MODEL_COMMIT) == wire.NAK_BAD_ARGUMENT  # incomplete
    assert w.cmd(wire.CMD_MODEL_BEGIN, wire.pack_model_begin(10 ** 6, 0)) \
        == wire.NAK_BAD_ARGUMENT  # too big
    assert w.cmd(wire.CMD_MODEL_CHUNK, b"\0") == wire.NAK_BAD_ARGUMENT


def test_upload_without_storage_is_unsupported():
    w = _Fw(MemoryStorage())
    w.fw.storage = None
    assert w.cmd(wire.CMD_MODEL_BEGIN, wire.pack_model_begin(10, 0)) == wire.NAK_UNSUPPORTED


def test_status_led_patterns():
    fault = wire.STATUS_LOADCELL_FAULT | wire.STATUS_ACCEL_FAULT
    model = wire.STATUS_MODEL_ACTIVE
    assert pattern_for(wire.STATUS_ACCEL_FAULT, True, fault, model) == "fault"
    assert pattern_for(0, True, fault, model) == "streaming"
    assert pattern_for(model, False, fault, model) == "idle_model"
    assert pattern_for(0, False, fault, model) == "idle"
    for name, steps in PATTERNS.items():
        period = sum(steps)
        on_ms = sum(1 for t in range(period) if led_level(name, t))
        assert on_ms == sum(steps[0::2])  # even steps are on-times
        assert [led_level(name, t) for t in range(period)] == \
            [led_level(name, t + 7 * period) for t in range(period)]


def test_model_command_payloads_round_trip_and_reject_bad_lengths():
    assert wire.unpack_model_begin(wire.pack_model_begin(70000, 0xBEEF)) == (70000, 0xBEEF)
    data = bytes(range(200))
    assert wire.unpack_model_chunk(wire.pack_model_chunk(123456, data)) == (123456, data)
    with pytest.raises(ValueError):
        wire.pack_model_chunk(0, bytes(wire.MODEL_CHUNK_MAX + 1))
    with pytest.raises(ValueError):
        wire.unpack_model_begin(b"\0" * 5)
    frame = wire.encode_frame(wire.CMD_MODEL_CHUNK, 1, 0,
                              wire.pack_model_chunk(0, bytes(wire.MODEL_CHUNK_MAX)))
    assert len(frame) == wire.HEADER_LEN + wire.MAX_PAYLOAD + wire.CRC_LEN
