"""A seeded fuzzer of the walker firmware: random bytes, random commands, uploads of
damaged models, samples and reboots, against one WalkerFirmware and its flash.

Runs on CPython (tests/device/test_firmware_fuzz.py, benchmarks/fuzz.py) and on
MicroPython's unix port (`micropython -X heapsize=192K firmware_fuzz.py ...`), so the
firmware is fuzzed in a heap the size of the RP2040's. Kept MicroPython-compatible: no
numpy, no f-strings, a linear congruential generator instead of `random`.

Every operation is wrapped: an exception that escapes the firmware is a crash (the
board would reset). After every model commit the flash must hold a model the firmware
accepts (a rejected model never reaches flash), and a reboot must never raise.

usage: <python> firmware_fuzz.py REPO_ROOT MODEL_FILE SEED N_OPS [STORAGE_DIR|-] [trace]
Prints "ops=.. crashes=.. violations=.. commits_ok=.. naks=.. min_free=.. heap=..";
N_OPS 0 runs the issue's cases instead (run_issue_cases), a "CASE ..." line each;
"trace" (CPython) reports the Python heap's peak (tracemalloc; several times slower).
"""
import struct
import sys

try:
    import gc
except ImportError:  # pragma: no cover
    gc = None

HOSTILE = (float("nan"), float("inf"), float("-inf"), -1.0, 0.0, 1e9, 1e300, -1e300,
           5e-324, 1e-9, 0.01, 11.0, 1e6, -0.0)

# Constants a sample divides by (load and accel scales, the least total load) or loops
# over (the speed window): the ones that bricked firmware 0.1.
SENSITIVE = (4, 5, 6, 7, 11, 12, 13, 17, 18, 18, 18)


GOOD_CONSTANTS = (0.0, 0.0, 0.0, 0.0, 1e-4, 1e-4, 1e-4, 1e-4, 0.0, 0.0, 0.0,
                  0.038, 0.038, 0.038, 0.0025, 0.25, 0.25, 20.0, 0.2)


def make_model(n_classes=4, n_edges=9, feature_set="cop", constants=GOOD_CONSTANTS):
    """A valid model file (uniform emissions, a persistent chain) of a chosen size:
    8 * (S * n_edges + K + K * K + S * (n_edges + 1) * K) bytes of tables, S = 7 or 8."""
    from math import log

    from device.firmware.model_format import N_FEATURES, pack_model

    K = n_classes
    S = N_FEATURES[feature_set]
    edges = [[float(i) for i in range(n_edges)] for _ in range(S)]
    stay = 0.9 if K > 1 else 1.0
    trans = [[stay if i == j else (1 - stay) / (K - 1) for j in range(K)] for i in range(K)]
    emit = [[[log(1.0 / (n_edges + 1))] * K for _ in range(n_edges + 1)] for _ in range(S)]
    classes = ["C%d" % k for k in range(K)]
    return pack_model(classes, feature_set, list(constants), edges, [1.0 / K] * K, trans,
                      emit)


class _Rng:
    """x -> (1103515245 x + 12345) mod 2^31, the same on every port."""

    def __init__(self, seed):
        self.x = (seed * 2654435761 + 1) & 0x7FFFFFFF

    def below(self, n):
        self.x = (1103515245 * self.x + 12345) & 0x7FFFFFFF
        return (self.x >> 4) % n

    def bytes(self, n):
        return bytes([self.below(256) for _ in range(n)])


class _Cell:
    def __init__(self, rng, i):
        self.rng = rng
        self.i = i

    def is_ready(self):
        return self.rng.below(4) != 0

    def read(self):
        r = self.rng.below(1000)
        if r == 0:
            return (1 << 23) - 1  # full scale
        if r == 1:
            return -(1 << 23)
        return 100000 * (self.i + 1) + self.rng.below(200001) - 100000


class _Accel:
    def __init__(self, rng):
        self.rng = rng

    def read(self):
        if self.rng.below(200) == 0:
            raise OSError(19)  # the I2C device did not answer
        return (self.rng.below(8192) - 4096, self.rng.below(8192) - 4096,
                self.rng.below(8192) - 4096)


class _Encoder:
    def __init__(self, rng):
        self.rng = rng
        self.n = 0

    def count(self):
        r = self.rng.below(500)
        if r == 0:
            self.n = self.rng.below(1 << 31) - (1 << 30)  # a wild jump
        else:
            self.n += self.rng.below(21) - 10
        return self.n


class FuzzBoard:
    simulated = True
    walker_id = "FUZZ"

    def __init__(self, rng, storage):
        self.load_cells = [_Cell(rng, i) for i in range(4)]
        self.accel = _Accel(rng)
        self.encoder = _Encoder(rng)
        self.storage = storage


class Fuzzer:
    """fuzz(n) runs n operations; counters in .ops, .crashes, .violations, ...

    model_path: a valid model file, sent as it is and damaged (_mutation)."""

    def __init__(self, model_path, seed, storage, firmware_cls, wire, unpack_model,
                 model_file="model.wlm"):
        self.model_path = model_path
        self._file = None  # the base model, open during an upload
        with open(model_path, "rb") as f:
            self.model_len = len(f.read())
        self.rng = _Rng(seed)
        self.storage = storage
        self.firmware_cls = firmware_cls
        self.wire = wire
        self.unpack_model = unpack_model
        self.model_file = model_file
        self.board = FuzzBoard(self.rng, storage)
        self.t_us = 0
        self.seq = 0
        self.ops = 0
        self.crashes = 0
        self.violations = 0
        self.commits_ok = 0
        self.naks = 0
        self.safe_modes = 0
        self.unchecked = 0  # commits whose flash could not be parsed in the fuzzer's heap
        self.first_errors = []
        self.min_free = None
        self.fw = None
        self._guard("boot", self._boot)

    # ---- bookkeeping ------------------------------------------------------------
    def _guard(self, what, fn, *args):
        self.ops += 1
        try:
            fn(*args)
        except Exception as exc:  # the board would reset: a crash
            self.crashes += 1
            if len(self.first_errors) < 10:
                self.first_errors.append("%s: %s: %s%s" % (what, type(exc).__name__, exc,
                                                           _where(exc)))
        self._account()

    def _violation(self, text):
        self.violations += 1
        if len(self.first_errors) < 10:
            self.first_errors.append("violation: " + text)

    def _account(self):
        if gc is not None and hasattr(gc, "mem_free") and self.ops % 64 == 0:
            gc.collect()  # what is alive, not what awaits collection
            free = gc.mem_free()
            if self.min_free is None or free < self.min_free:
                self.min_free = free

    # ---- operations -------------------------------------------------------------
    def _boot(self):
        self.fw = None
        if gc is not None and hasattr(gc, "mem_free"):  # MicroPython: a board's fresh heap
            gc.collect()
        self.fw = self.firmware_cls(self.board, self._write)

    def _write(self, data):
        # The board's USB output, one frame per call: counted, not kept.
        if data[3] == self.wire.NAK:
            self.naks += 1
        elif data[3] == self.wire.LOG and b"safe mode" in data:
            self.safe_modes += 1

    def _cmd(self, kind, payload=b""):
        self.fw.handle_bytes(self.wire.encode_frame(kind, self.seq & 0xFFFF, self.t_us,
                                                    payload), self.t_us)
        self.seq += 1

    def _samples(self, n):
        for _ in range(n):
            r = self.rng.below(100)
            if r == 0:
                self.t_us += self.rng.below(1 << 31)  # a long stall
            else:
                self.t_us += 5000 + self.rng.below(20000)
            self.fw.sample(self.t_us)

    # A model is sent the way a host sends it, chunk by chunk: the fuzzer holds the
    # base model's path and a mutation (a length and byte patches), never a copy of a
    # model, so on MicroPython the heap is the firmware's alone.
    def _mutation(self):
        """(length, {offset: byte}) of a damaged copy of the base model."""
        n = self.model_len
        patches = {}
        how = self.rng.below(5)
        K = self._base(5, 1)[0] if n > 5 else 1

        def put(off, value):
            raw = struct.pack("<d", value)
            for i in range(8):
                patches[off + i] = raw[i]

        if how == 0:  # feature constants, the ones a sample divides by or loops on first
            for _ in range(1 + self.rng.below(3)):
                i = SENSITIVE[self.rng.below(len(SENSITIVE))] if self.rng.below(2) \
                    else self.rng.below(19)
                if 8 + 4 * K + 8 * i + 8 <= n:
                    put(8 + 4 * K + 8 * i, HOSTILE[self.rng.below(len(HOSTILE))])
        elif how == 1:  # one table value
            start = 8 + 4 * K + 8 * 19 + 7
            if n - start >= 8:
                put(start + 8 * self.rng.below((n - start) // 8),
                    HOSTILE[self.rng.below(len(HOSTILE))])
        elif how == 2:  # a few random bytes anywhere, the header included
            for _ in range(1 + self.rng.below(8)):
                patches[self.rng.below(n)] = self.rng.below(256)
        elif how == 3:  # truncated
            n = self.rng.below(n) + 1
        else:  # longer: bytes past the end are (offset * 131 + salt) & 0xFF
            n += 1 + self.rng.below(64)
            patches[-1] = self.rng.below(256)  # the salt
        return n, patches

    def _base(self, off, n):
        f = self._file
        if f is None:
            with open(self.model_path, "rb") as f:
                f.seek(off)
                return f.read(n)
        f.seek(off)
        return f.read(n)

    def _piece(self, mutation, off, n):
        length, patches = mutation
        n = max(0, min(n, length - off))
        data = bytearray(self._base(off, n))
        salt = patches.get(-1, 0)
        for i in range(len(data), n):
            data.append(((off + i) * 131 + salt) & 0xFF)
        for i in range(n):
            if off + i in patches:
                data[i] = patches[off + i]
        return data

    def _upload_plain(self, mutation):
        """Upload with the right CRC, every chunk in order."""
        self._upload(mutation, plain=True)

    def _upload(self, mutation, plain=False):
        self._file = open(self.model_path, "rb")
        try:
            self._send_model(mutation, plain)
        finally:
            self._file.close()
            self._file = None

    def _send_model(self, mutation, plain):
        wire = self.wire
        length = mutation[0]
        step = wire.MODEL_CHUNK_MAX
        crc = 0xFFFF
        for off in range(0, length, step):
            crc = wire.crc16(self._piece(mutation, off, step), crc)
        if not plain and self.rng.below(20) == 0:
            crc ^= 1 + self.rng.below(0xFFFF)
        self._cmd(wire.CMD_MODEL_BEGIN, wire.pack_model_begin(length, crc))
        off = 0
        while off < length:
            if not plain and self.rng.below(50) == 0:
                off = self.rng.below(length)  # out of step
            self._cmd(wire.CMD_MODEL_CHUNK,
                      wire.pack_model_chunk(off, self._piece(mutation, off, step)))
            self.ops += 1
            off += step
        before = self._flash_crc()
        self._cmd(wire.CMD_MODEL_COMMIT)
        after = self._flash_crc()
        if after is not None and after != before:
            self.commits_ok += 1
            self._check_flash()

    # The fuzzer's own look at flash must not take the firmware's heap: a CRC read in
    # small pieces, and a full parse only where it fits (else it is skipped).
    def _flash_crc(self):
        st = self.storage
        if hasattr(st, "files"):  # MemoryStorage
            data = st.files.get(self.model_file)
            return None if data is None else self.wire.crc16(data)
        try:
            f = open(st._path(self.model_file), "rb")
        except OSError:
            return None
        crc = 0xFFFF
        with f:
            while True:
                piece = f.read(256)
                if not piece:
                    return crc
                crc = self.wire.crc16(piece, crc)

    def _check_flash(self):
        try:
            self.unpack_model(self.storage.read(self.model_file))
        except MemoryError:  # this check's own copy did not fit: not the firmware's
            self.unchecked += 1
        except Exception as exc:
            self._violation("a model the firmware refuses reached flash (%s)" % exc)

    def _random_frame(self):
        wire = self.wire
        kinds = (wire.CMD_HELLO, wire.CMD_START, wire.CMD_STOP, wire.CMD_SET_RATE,
                 wire.CMD_TARE, wire.CMD_MODEL_BEGIN, wire.CMD_MODEL_CHUNK,
                 wire.CMD_MODEL_COMMIT, wire.CMD_MODEL_CLEAR, wire.CMD_CAL_WRITE,
                 wire.CMD_CAL_READ)
        r = self.rng.below(4)
        kind = kinds[self.rng.below(len(kinds))] if r else self.rng.below(256)
        payload = self.rng.bytes(self.rng.below(wire.MAX_PAYLOAD + 1))
        if kind == wire.CMD_SET_RATE and self.rng.below(2):
            payload = wire.pack_set_rate(self.rng.below(300))
        self._cmd(kind, payload)

    def step(self):
        """One operation, chosen at random."""
        r = self.rng.below(100)
        if r < 40:
            self._guard("sample", self._samples, 1 + self.rng.below(20))
        elif r < 55:
            self._guard("bytes", self.fw.handle_bytes,
                        self.rng.bytes(self.rng.below(300)), self.t_us)
        elif r < 75:
            self._guard("command", self._random_frame)
        elif r < 85:
            self._guard("bad model", self._upload, self._mutation())
        elif r < 88:
            self._guard("good model", self._upload, (self.model_len, {}))
        elif r < 93:
            self._guard("start", self._cmd, self.wire.CMD_START)
        else:
            self._guard("reboot", self._boot)

    def fuzz(self, n_ops):
        while self.ops < n_ops:
            self.step()
        return self

    def summary(self):
        heap = None
        if gc is not None and hasattr(gc, "mem_alloc"):
            heap = gc.mem_free() + gc.mem_alloc()
        peak = None
        try:  # CPython: the Python heap's peak (tracemalloc, started by main)
            import tracemalloc

            if tracemalloc.is_tracing():
                peak = tracemalloc.get_traced_memory()[1]
        except ImportError:
            pass
        return ("ops=%d crashes=%d violations=%d commits_ok=%d unchecked=%d naks=%d "
                "safe_modes=%d min_free=%s heap=%s peak=%s"
                % (self.ops, self.crashes, self.violations, self.commits_ok,
                   self.unchecked, self.naks, self.safe_modes, self.min_free, heap, peak))


# The models that bricked firmware 0.1 (issue 35): {constant index: value} patches.
ISSUE_CASES = (
    ("window -1 s", {18: -1.0}),
    ("window inf", {18: float("inf")}),
    ("window 1e9 s", {18: 1e9}),
    ("window nan", {18: float("nan")}),
    ("load scales 0, least load 0", {4: 0.0, 5: 0.0, 6: 0.0, 7: 0.0, 17: 0.0}),
)


def run_issue_cases(fz, n_samples=300):
    """Each case: upload the good model, then the damaged one, sample, reboot, sample.
    Yields one line per case: its name, the NAK code of the damaged COMMIT, whether
    flash still holds the good model and whether it runs after the reboot."""
    wire = fz.wire
    for name, consts in ISSUE_CASES:
        K = fz._base(5, 1)[0]
        patches = {}
        for i, value in consts.items():
            raw = struct.pack("<d", value)
            for j in range(8):
                patches[8 + 4 * K + 8 * i + j] = raw[j]
        crashes = fz.crashes
        fz._guard("good model", fz._upload_plain, (fz.model_len, {}))
        good = fz._flash_crc()
        naks = fz.naks
        fz._guard("case " + name, fz._upload_plain, (fz.model_len, patches))
        code = fz.naks - naks
        kept = fz._flash_crc() == good
        fz._guard("start", fz._cmd, wire.CMD_START)
        fz._guard("sample", fz._samples, n_samples)
        fz._guard("reboot", fz._boot)
        runs = fz.fw is not None and fz.fw.recognizer is not None
        fz._guard("sample", fz._samples, n_samples)
        yield "CASE %s: naks=%d kept=%d runs_after_reboot=%d crashes=%d" % (
            name, code, kept, runs, fz.crashes - crashes)


def _where(exc):
    """' at file:line' of the innermost frame, where the port can tell."""
    try:
        import io

        buf = io.StringIO()
        if hasattr(sys, "print_exception"):  # MicroPython
            sys.print_exception(exc, buf)
            lines = [x.strip() for x in buf.getvalue().split("\n") if "File" in x]
        else:
            import traceback

            lines = [x.strip() for x in traceback.format_exception(exc) if "File" in x]
        return " at " + lines[-1].replace("\n", " ") if lines else ""
    except Exception:
        return ""


def main(argv):
    root, model_path, seed, n_ops = argv[1], argv[2], int(argv[3]), int(argv[4])
    sys.path.insert(0, root)
    from device.firmware.core import MODEL_FILE, WalkerFirmware
    from device.firmware.model_format import unpack_model
    from device.firmware.storage import FileStorage, MemoryStorage
    from device.protocol import wire

    storage = FileStorage(argv[5]) if len(argv) > 5 and argv[5] != "-" else MemoryStorage()
    if len(argv) > 6 and argv[6] == "trace":  # CPython: the Python heap's peak, slowly
        import tracemalloc

        tracemalloc.start()
    fz = Fuzzer(model_path, seed, storage, WalkerFirmware, wire, unpack_model, MODEL_FILE)
    if n_ops == 0:  # the issue's cases, one by one
        for line in run_issue_cases(fz):
            print(line)
    fz.fuzz(n_ops)
    print(fz.summary())
    for line in fz.first_errors:
        print("ERROR " + line)


if __name__ == "__main__":
    main(sys.argv)
