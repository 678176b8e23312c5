"""Issue 35: nothing a host sends bricks the walker. Damaged models are refused before
flash (and flash keeps the previous model), a model that fails twice at boot is
skipped, an exception in the recognizer is safe mode, the encoder history is bounded,
and the same holds on MicroPython's unix port in a 192 KB heap."""
import bisect
import math
import pathlib
import random
import struct
import subprocess

import pytest
from micropython_port import micropython_exe
from hypothesis import HealthCheck, given, settings, strategies as st

from device.firmware import core, model_format
from device.firmware.core import BOOT_FILE, HEALTHY_STEPS, MODEL_FILE, WalkerFirmware
from device.firmware.features import DeviceFeatures
from device.firmware.hmm_filter import DeviceHMM
from device.firmware.model_format import CONST_NAMES, ModelError, unpack_model
from device.firmware.storage import MemoryStorage
from device.protocol import wire
from device.sim.firmware_fuzz import GOOD_CONSTANTS, FuzzBoard, Fuzzer, _Rng, make_model

ROOT = pathlib.Path(__file__).resolve().parents[2]
FUZZ = ROOT / "device" / "sim" / "firmware_fuzz.py"
GOOD = make_model(3, 5)
OTHER = make_model(2, 4)  # a second valid model, to tell the two apart in flash


def _with_constants(**values):
    c = list(GOOD_CONSTANTS)
    for name, v in values.items():
        c[CONST_NAMES.index(name)] = v
    return make_model(3, 5, constants=c)


class Walker:
    """A firmware on a fuzz board, with its output decoded."""

    def __init__(self, storage=None, **board_attrs):
        self.storage = storage if storage is not None else MemoryStorage()
        self.board = FuzzBoard(_Rng(7), self.storage)
        for k, v in board_attrs.items():
            setattr(self.board, k, v)
        self.out = bytearray()
        self.fw = WalkerFirmware(self.board, self.out.extend)
        self.t_us = 0
        self.seq = 0

    def frames(self):
        frames = wire.FrameDecoder(track_sequence=False).feed(bytes(self.out))
        self.out.clear()
        return frames

    def command(self, kind, payload=b""):
        """(ACK/NAK code, LOG texts) of one command."""
        self.fw.handle_bytes(wire.encode_frame(kind, self.seq, 0, payload), self.t_us)
        self.seq += 1
        frames = self.frames()
        acks = [wire.unpack_ack(f.payload) for f in frames
                if f.frame_type in (wire.ACK, wire.NAK)]
        assert len(acks) == 1 and acks[0][:2] == (kind, self.seq - 1)
        logs = [wire.unpack_log(f.payload)[1] for f in frames if f.frame_type == wire.LOG]
        return acks[0][2], logs

    def upload(self, data):
        """NAK code of the first refused step (0: the model was taken), LOG texts."""
        code, logs = self.command(wire.CMD_MODEL_BEGIN,
                                  wire.pack_model_begin(len(data), wire.crc16(data)))
        if code:
            return code, logs
        step = wire.MODEL_CHUNK_MAX
        for off in range(0, len(data), step):
            code, more = self.command(wire.CMD_MODEL_CHUNK,
                                      wire.pack_model_chunk(off, data[off:off + step]))
            assert code == 0
        code, more = self.command(wire.CMD_MODEL_COMMIT)
        return code, logs + more

    def run(self, n):
        """Sample n times at 50 Hz; the frames sent."""
        for _ in range(n):
            self.t_us += 20000
            self.fw.sample(self.t_us)
        return self.frames()

    def reboot(self):
        self.out.clear()
        self.fw = WalkerFirmware(self.board, self.out.extend)
        return self.fw


def _samples(frames):
    return [wire.unpack_sample(f.payload) for f in frames if f.frame_type == wire.SAMPLE]


def _activities(frames):
    return [f for f in frames if f.frame_type == wire.ACTIVITY]


HOSTILE_MODELS = {
    "window -1 s": _with_constants(speed_window_s=-1.0),
    "window inf": _with_constants(speed_window_s=math.inf),
    "window 1e9 s": _with_constants(speed_window_s=1e9),
    "window nan": _with_constants(speed_window_s=math.nan),
    "window 0.01 s": _with_constants(speed_window_s=0.01),
    "load scales 0, least load 0": _with_constants(
        load_scale_fr=0.0, load_scale_fl=0.0, load_scale_rl=0.0, load_scale_rr=0.0,
        min_total_load_n=0.0),
    "least load 0": _with_constants(min_total_load_n=0.0),
    "half width 0": _with_constants(front_half_width_m=0.0),
    "offset 1e300": _with_constants(load_offset_fr=1e300),
    "accel scale 0": _with_constants(accel_scale_z=0.0),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_MODELS))
def test_a_hostile_model_is_refused_and_flash_keeps_the_previous_one(name):
    w = Walker()
    assert w.upload(GOOD)[0] == 0
    w.command(wire.CMD_START)
    code, logs = w.upload(HOSTILE_MODELS[name])
    assert code == wire.NAK_BAD_MODEL
    assert any(t.startswith("model rejected: ModelError: constant ") for t in logs), logs
    assert w.storage.read(MODEL_FILE) == GOOD
    frames = w.run(300)  # the previous model runs on
    assert len(_samples(frames)) == 300 and _activities(frames)
    assert all(s[9] & wire.STATUS_MODEL_ACTIVE for s in _samples(frames))
    w.reboot()  # and comes back from flash
    assert w.fw.recognizer is not None and w.fw.recognizer.model.n_classes == 3
    assert len(_samples(w.run(50))) == 0 and not w.fw.model_skipped  # not streaming


def test_a_damaged_table_is_refused():
    for offset_from_end, value in ((8, math.nan), (8, math.inf), (8, 1.0)):
        data = bytearray(GOOD)
        struct.pack_into("<d", data, len(data) - offset_from_end, value)
        w = Walker()
        code, logs = w.upload(bytes(data))
        assert code == wire.NAK_BAD_MODEL and w.storage.read(MODEL_FILE) is None, logs


def test_a_commit_that_runs_out_of_memory_is_a_nak_and_keeps_the_model(monkeypatch):
    w = Walker()
    assert w.upload(GOOD)[0] == 0

    def no_memory(data):
        raise MemoryError("memory allocation failed, allocating 38977 bytes")

    monkeypatch.setattr(core, "unpack_model", no_memory)
    code, logs = w.upload(OTHER)
    assert code == wire.NAK_BAD_MODEL and "MemoryError" in logs[-1]
    assert w.storage.read(MODEL_FILE) == GOOD and w.fw.recognizer.model.n_classes == 3


def test_a_flash_write_error_at_commit_keeps_the_running_model():
    w = Walker()
    assert w.upload(GOOD)[0] == 0

    def full(name, data):
        raise OSError(28)  # ENOSPC

    w.storage.write = full
    code, logs = w.upload(OTHER)
    assert code == wire.NAK_BAD_MODEL and "OSError" in logs[-1]
    assert w.fw.recognizer.model.n_classes == 3


def test_model_begin_checks_the_free_heap():
    free = [20000]
    w = Walker(mem_free=lambda: free[0])
    code, logs = w.command(wire.CMD_MODEL_BEGIN, wire.pack_model_begin(16000, 0))
    assert code == wire.NAK_NO_MEMORY
    assert logs == ["model of 16000 bytes needs %d bytes of heap, 20000 free"
                    % (16000 * 2 + core.HEAP_HEADROOM)]
    free[0] = 16000 * 2 + core.HEAP_HEADROOM
    assert w.command(wire.CMD_MODEL_BEGIN, wire.pack_model_begin(16000, 0))[0] == 0


def test_an_exception_in_the_recognizer_is_safe_mode(monkeypatch):
    w = Walker()
    assert w.upload(GOOD)[0] == 0
    w.command(wire.CMD_START)
    assert _activities(w.run(20))
    calls = [0]
    real = DeviceHMM.step_symbols

    def fails_later(self, sym):
        calls[0] += 1
        if calls[0] > 5:
            raise ZeroDivisionError("float division by zero")
        return real(self, sym)

    monkeypatch.setattr(DeviceHMM, "step_symbols", fails_later)
    frames = w.run(100)
    status = [s[9] for s in _samples(frames)]
    assert len(status) == 100  # streaming never stopped
    assert all(s & wire.STATUS_MODEL_ACTIVE and not s & wire.STATUS_RECOGNIZER_FAULT
               for s in status[:6])
    assert all(s & wire.STATUS_RECOGNIZER_FAULT and not s & wire.STATUS_MODEL_ACTIVE
               for s in status[6:])
    logs = [wire.unpack_log(f.payload) for f in frames if f.frame_type == wire.LOG]
    assert logs == [(wire.LOG_ERROR, "recognizer disabled (safe mode): "
                     "ZeroDivisionError: float division by zero")]
    first_fault = next(i for i, f in enumerate(frames) if f.frame_type == wire.LOG)
    assert not _activities(frames[first_fault:]) and not _activities(w.run(100))
    assert calls[0] == 6  # switched off: never called again
    monkeypatch.setattr(DeviceHMM, "step_symbols", real)
    assert w.upload(GOOD)[0] == 0  # a new upload clears the fault
    assert not w.fw.status & wire.STATUS_RECOGNIZER_FAULT


def test_two_failed_boots_with_the_stored_model_boot_without_it():
    w = Walker()
    assert w.upload(GOOD)[0] == 0
    w.reboot()  # boot 1: dies before the model proved itself
    assert w.fw.recognizer is not None and w.storage.read(BOOT_FILE) == b"\x01"
    w.reboot()  # boot 2: the same
    assert w.fw.recognizer is not None and w.storage.read(BOOT_FILE) == b"\x02"
    w.reboot()  # boot 3: without it, and it says so
    assert w.fw.recognizer is None and w.fw.model_skipped
    w.fw.handle_bytes(wire.encode_frame(wire.CMD_HELLO, 1, 0), 0)
    frames = w.frames()
    info = wire.unpack_info(frames[0].payload)
    assert info["model_skipped"] and info["firmware_version"] == "0.2.0"
    logs = [wire.unpack_log(f.payload) for f in frames if f.frame_type == wire.LOG]
    assert logs == [(wire.LOG_WARNING, "stored model skipped: 2 boots with it failed; "
                     "upload a model or clear it")]
    w.command(wire.CMD_START)
    assert len(_samples(w.run(30))) == 30
    assert w.storage.read(MODEL_FILE) == GOOD  # kept for the user to look at
    assert w.upload(GOOD)[0] == 0  # a new upload is trusted again
    assert w.storage.read(BOOT_FILE) is None and not w.fw.model_skipped
    w.reboot()
    assert w.fw.recognizer is not None
    w.fw.handle_bytes(wire.encode_frame(wire.CMD_HELLO, 1, 0), 0)
    assert not wire.unpack_info(w.frames()[0].payload)["model_skipped"]


def test_a_boot_that_runs_the_model_long_enough_clears_the_counter():
    w = Walker()
    assert w.upload(GOOD)[0] == 0
    for _ in range(5):
        w.reboot()
        w.run(HEALTHY_STEPS - 1)
        assert w.storage.read(BOOT_FILE) == b"\x01"
        w.run(1)
        assert w.storage.read(BOOT_FILE) is None
    assert w.fw.recognizer is not None


def test_a_model_that_no_longer_loads_boots_without_it():
    storage = MemoryStorage()
    storage.write(MODEL_FILE, HOSTILE_MODELS["window -1 s"])  # stored by firmware 0.1
    w = Walker(storage)
    assert w.fw.recognizer is None and w.fw.model_skipped
    assert w.fw.model_error.startswith("stored model not loaded: ModelError: constant "
                                       "speed_window_s = -1.0")
    w.command(wire.CMD_START)
    assert len(_samples(w.run(50))) == 50


def test_the_encoder_history_is_bounded_and_exact():
    """Against brute force over the whole history: the earliest sample within the
    window, at any spacing down to the highest rate; ticks and times past 2^30."""
    c = list(GOOD_CONSTANTS)
    c[18] = 10.0
    f = DeviceFeatures("cop", c)
    assert f.capacity == 10 * wire.MAX_RATE_HZ + 2
    rng = random.Random(3)
    t, k = (1 << 30) - 3_000_000, (1 << 29) - 500
    ts, ks = [], []
    for i in range(6000):
        t += rng.randrange(1_000_000 // wire.MAX_RATE_HZ, 20_000)
        k += rng.randrange(-40, 60) if i % 1000 else -(1 << 28)  # a jump (< 2^29)
        ts.append(t)
        ks.append(k)
        got = f.speed(t, k)
        j = bisect.bisect_left(ts, t - f.window_us)
        dt = (t - ts[j]) * 1e-6
        want = (k - ks[j]) * c[14] / dt if dt > 0 else 0.0
        assert got == want, i
    assert len(f._t) == len(f._ticks) == f.capacity
    for _ in range(10_000):  # faster than any rate: still bounded
        t += 100
        f.speed(t, k)
    assert len(f._t) == f.capacity and f._n <= f.capacity


# ---- properties (hypothesis), seeded and bounded ------------------------------------
FRAMES = st.lists(st.tuples(
    st.one_of(st.sampled_from(sorted(wire.FRAME_TYPE_NAMES)), st.integers(0, 255)),
    st.binary(max_size=wire.MAX_PAYLOAD)), max_size=30)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(FRAMES, st.booleans())
def test_every_command_gets_one_answer_and_never_raises(frames, with_model):
    w = Walker()
    if with_model:
        assert w.upload(GOOD)[0] == 0
    for i, (kind, payload) in enumerate(frames):
        w.fw.handle_command(wire.Frame(kind, i, 0, payload), 0)
        answers = [f for f in w.frames() if f.frame_type in (wire.ACK, wire.NAK)]
        assert len(answers) == 1 and wire.unpack_ack(answers[0].payload)[:2] == (kind, i)
        stored = w.storage.read(MODEL_FILE)
        if stored is not None:
            unpack_model(stored)  # only models the firmware takes reach flash
    w.fw.streaming = True
    assert len(_samples(w.run(20))) == 20


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.binary(max_size=600))
def test_the_model_parser_takes_any_bytes(data):
    try:
        unpack_model(data)
    except ModelError:
        pass


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, len(GOOD) - 1), st.integers(0, 255)),
                min_size=1, max_size=8),
       st.lists(st.tuples(st.integers(0, len(GOOD) // 8 - 1),
                          st.floats(allow_nan=True, allow_infinity=True)), max_size=3))
def test_a_model_the_parser_takes_runs_without_an_exception(byte_edits, float_edits):
    data = bytearray(GOOD)
    for off, v in float_edits:
        struct.pack_into("<d", data, 8 * off, v)
    for off, b in byte_edits:
        data[off] = b
    try:
        m = unpack_model(bytes(data))
    except ModelError:
        return
    features = DeviceFeatures(m.feature_set, m.constants)
    hmm = DeviceHMM(m)
    rng = random.Random(0)
    for i in range(300):
        x = features.features(i * 20000, (rng.randrange(-4096, 4096),) * 3,
                              [rng.randrange(-1 << 23, 1 << 23) for _ in range(4)],
                              i % 2, rng.randrange(-1000, 1000))
        post = hmm.step(x)
        assert all(p == p for p in post)  # never NaN
        hmm.best()


# ---- the same on MicroPython, in a heap the RP2040's size ---------------------------


def _fuzz_on(exe, model, tmp_path, seed, n_ops, *args):
    model_path = tmp_path / "base.wlm"
    model_path.write_bytes(model)
    flash = tmp_path / ("flash-%d" % seed)
    flash.mkdir()
    result = subprocess.run([exe, *args, str(FUZZ), str(ROOT), str(model_path), str(seed),
                             str(n_ops), str(flash)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return result.stdout.splitlines()


def test_the_issue_cases_on_micropython_with_a_192k_heap(tmp_path):
    lines = _fuzz_on(micropython_exe(), GOOD, tmp_path, 1, 0, "-X", "heapsize=192K")
    cases = [x for x in lines if x.startswith("CASE ")]
    assert len(cases) == 5
    for line in cases:  # refused with a reason, flash kept, nothing escaped
        assert line.endswith("naks=1 kept=1 runs_after_reboot=1 crashes=0"), line
    assert "crashes=0 violations=0" in lines[len(cases)], lines


@pytest.mark.parametrize("n_edges", [5, 40, 86], ids=["3KB", "21KB", "45KB"])
def test_fuzzing_on_micropython_with_a_192k_heap(tmp_path, n_edges):
    """Models of 3-45 KB, damaged and whole: taken or refused, never a crash."""
    model = make_model(8 if n_edges > 5 else 3, n_edges)
    lines = _fuzz_on(micropython_exe(), model, tmp_path, 11, 1500, "-X", "heapsize=192K")
    assert lines[0].startswith("ops=") and " crashes=0 violations=0 " in lines[0], lines


def test_fuzzing_under_cpython_finds_nothing(tmp_path):
    path = tmp_path / "base.wlm"
    path.write_bytes(GOOD)
    fz = Fuzzer(str(path), 5, MemoryStorage(), WalkerFirmware, wire, unpack_model,
                MODEL_FILE).fuzz(3000)
    assert (fz.crashes, fz.violations) == (0, 0), fz.first_errors
    assert fz.commits_ok > 0 and fz.naks > 0  # it did reach both outcomes
