# The on-device model file ("WLM1"): a trained discrete HMM plus what the firmware
# needs to compute its features from raw counts. Written by the host (walkerlab
# deploy-model), uploaded over the walker protocol, kept on the board's flash.
# Plain struct layout, little-endian, no pickle; docs/firmware.md has the table.
#
#   magic "WLM1", then "<BBBB": format version, classes K, sensors S, feature set
#   K class codes (4 B ASCII each, NUL padded)
#   feature constants, N_CONST float64 (CONST_NAMES order)
#   S bytes: number of bin edges of each sensor (n_bins = edges + 1)
#   the edges, float64, sensor by sensor
#   start probabilities (K float64), transition matrix (K x K float64, row = from)
#   log emission table: sensor by sensor, bin by bin, K float64 (log P(bin | class))
import struct

MAGIC = b"WLM1"
FORMAT_VERSION = 1
FEATURE_SETS = ("cop", "loadcells")  # index = the header byte
N_FEATURES = {"cop": 7, "loadcells": 8}
CONST_NAMES = ("load_offset_fr", "load_offset_fl", "load_offset_rl", "load_offset_rr",
               "load_scale_fr", "load_scale_fl", "load_scale_rl", "load_scale_rr",
               "accel_bias_x", "accel_bias_y", "accel_bias_z",
               "accel_scale_x", "accel_scale_y", "accel_scale_z",
               "metres_per_tick", "front_half_width_m", "rear_half_width_m",
               "min_total_load_n", "speed_window_s")
N_CONST = len(CONST_NAMES)
MAX_CLASSES = 32
MAX_BYTES = 65536  # larger uploads are refused before any memory is taken
# Physical ranges a model's feature constants must lie in (check_constants): a value
# outside them would crash or stall the walker on every sample, and again after every
# reboot, so the firmware refuses the model before it reaches flash.
MIN_WINDOW_S = 0.05
MAX_WINDOW_S = 10.0
MAX_MAGNITUDE = 1e9  # offsets and biases are counts (24-bit HX711: < 1.7e7)
MAX_HALF_WIDTH_M = 10.0

try:
    from array import array
except ImportError:  # pragma: no cover
    array = None

# Tables are held at the interpreter's float precision: 'd' under CPython (and
# double-precision MicroPython builds), 'f' on the RP2040/ESP32 ports.
FLOAT_CODE = "d" if 1.0 + 1e-12 != 1.0 else "f"
# Edges are training values, so test values often equal one exactly (counts are
# discrete) and belong to the upper bin. In float32 the edge and the value round
# differently; lowering each edge by a few float32 ulps keeps such values above it.
EDGE_SLACK = 4e-7


class ModelError(ValueError):
    pass


def pack_model(classes, feature_set, constants, edges, startprob, transmat, log_emission):
    """Model file bytes. edges: S lists; log_emission: S lists of n_bins lists of K."""
    K = len(classes)
    S = len(edges)
    if feature_set not in FEATURE_SETS:
        raise ModelError("unknown feature set %r" % (feature_set,))
    if S != N_FEATURES[feature_set]:
        raise ModelError("feature set %s has %d features, got %d sensors"
                         % (feature_set, N_FEATURES[feature_set], S))
    if not 1 <= K <= MAX_CLASSES:
        raise ModelError("1..%d classes supported, got %d" % (MAX_CLASSES, K))
    if len(constants) != N_CONST:
        raise ModelError("need %d feature constants" % N_CONST)
    parts = [MAGIC, struct.pack("<BBBB", FORMAT_VERSION, K, S, FEATURE_SETS.index(feature_set))]
    for c in classes:
        code = c.encode() if isinstance(c, str) else bytes(c)
        if not 1 <= len(code) <= 4:
            raise ModelError("class codes must be 1-4 ASCII characters, got %r" % (c,))
        parts.append(struct.pack("4s", code))
    parts.append(struct.pack("<%dd" % N_CONST, *constants))
    for e in edges:
        if len(e) > 254:
            raise ModelError("at most 255 bins per sensor")
    parts.append(bytes([len(e) for e in edges]))
    for e in edges:
        parts.append(struct.pack("<%dd" % len(e), *e))
    parts.append(struct.pack("<%dd" % K, *startprob))
    for row in transmat:
        parts.append(struct.pack("<%dd" % K, *row))
    for s in range(S):
        table = log_emission[s]
        if len(table) != len(edges[s]) + 1:
            raise ModelError("sensor %d: %d emission rows for %d bins"
                             % (s, len(table), len(edges[s]) + 1))
        for row in table:
            parts.append(struct.pack("<%dd" % K, *row))
    return b"".join(parts)


class Model:
    """A parsed model: flat arrays the filter reads (see hmm_filter.DeviceHMM)."""

    def __init__(self):
        self.classes = []
        self.feature_set = ""
        self.constants = None
        self.n_edges = None
        self.edge_offsets = None  # sensor s: edges[edge_offsets[s]:edge_offsets[s + 1]]
        self.edges = None
        self.startprob = None
        self.transmat = None  # flat K*K, [i * K + j] = P(j | i)
        self.table_offsets = None  # sensor s, bin b, class k: [table_offsets[s] + b*K + k]
        self.log_emission = None

    @property
    def n_classes(self):
        return len(self.classes)

    @property
    def n_sensors(self):
        return len(self.n_edges)

    def table_bytes(self):
        """RAM held by the tables (edges, start, transitions, emissions)."""
        item = 4 if FLOAT_CODE == "f" else 8
        return item * (len(self.edges) + len(self.startprob) + len(self.transmat)
                       + len(self.log_emission))


_BIG = 3e38 if FLOAT_CODE == "f" else 1.7e308  # beyond: inf at this precision


def _finite(x):
    """x is a finite number at this precision (not every port has math.isfinite)."""
    return -_BIG < x < _BIG  # False for NaN too


def check_constants(c):
    """ModelError naming the first feature constant outside its physical range."""
    def bad(i, why):
        return ModelError("constant %s = %r %s" % (CONST_NAMES[i], c[i], why))

    for i in range(N_CONST):
        if not _finite(c[i]) or not -MAX_MAGNITUDE <= c[i] <= MAX_MAGNITUDE:
            raise bad(i, "is not a finite number of sane size")
    for i in (4, 5, 6, 7, 11, 12, 13, 14):  # load and accel scales, metres per tick
        if c[i] == 0:
            raise bad(i, "must not be zero")
    for i in (15, 16):
        if not 0 < c[i] <= MAX_HALF_WIDTH_M:
            raise bad(i, "must lie in (0, %g] m" % MAX_HALF_WIDTH_M)
    if not c[17] > 0:
        raise bad(17, "must be > 0 (a COP needs some load)")
    if not MIN_WINDOW_S <= c[18] <= MAX_WINDOW_S:
        raise bad(18, "must lie in [%g, %g] s" % (MIN_WINDOW_S, MAX_WINDOW_S))


def _floats(data, pos, n, slack=0.0):
    # array(code, range(n)) is allocated once at its final size; array(code, bytes(..))
    # would hold a second copy of the table while it is built (MemoryError at COMMIT on
    # a 192 KB heap for models of 16-48 KB).
    out = array(FLOAT_CODE, range(n))
    for i in range(n):
        v = struct.unpack_from("<d", data, pos + 8 * i)[0]
        if not v < _BIG:  # NaN or +inf; -inf is log(0), an impossible bin
            raise ModelError("table value %r at byte %d is not finite" % (v, pos + 8 * i))
        out[i] = v - abs(v) * slack
    return out, pos + 8 * n


def _check_tables(m):
    """Edges ascending per sensor; probabilities finite, >= 0, rows with mass; log
    emissions <= 0 (log of a probability; -inf for an impossible bin)."""
    K = m.n_classes
    e = m.edges
    for s in range(m.n_sensors):
        for i in range(m.edge_offsets[s] + 1, m.edge_offsets[s + 1]):
            if not e[i - 1] <= e[i]:
                raise ModelError("sensor %d: bin edges are not ascending" % s)
    total = 0.0
    for i in range(K):
        if not m.startprob[i] >= 0:
            raise ModelError("start probabilities must be >= 0")
        total += m.startprob[i]
    if not total > 0:
        raise ModelError("start probabilities sum to 0")
    A = m.transmat
    for i in range(K):
        row = 0.0
        for j in range(K):
            if not A[i * K + j] >= 0:
                raise ModelError("transition probabilities must be >= 0")
            row += A[i * K + j]
        if not row > 0:
            raise ModelError("transition row %d sums to 0" % i)
    for v in m.log_emission:
        if not v <= 1e-6:  # also NaN
            raise ModelError("log emission probabilities must be <= 0")


def unpack_model(data):
    """Parse and check a model file; ModelError if it is not one this firmware runs."""
    if len(data) < 8 or bytes(data[:4]) != MAGIC:
        raise ModelError("not a WalkerLab model file")
    version, K, S, fs = struct.unpack_from("<BBBB", data, 4)
    if version != FORMAT_VERSION:
        raise ModelError("model format %d, this firmware reads %d" % (version, FORMAT_VERSION))
    if fs >= len(FEATURE_SETS) or S != N_FEATURES[FEATURE_SETS[fs]] or not 1 <= K <= MAX_CLASSES:
        raise ModelError("bad model header")
    m = Model()
    m.feature_set = FEATURE_SETS[fs]
    pos = 8
    need = pos + 4 * K + 8 * N_CONST + S
    if len(data) < need:
        raise ModelError("model file truncated")
    for k in range(K):
        raw = bytes(data[pos:pos + 4])
        end = raw.find(b"\x00")
        try:
            m.classes.append((raw if end < 0 else raw[:end]).decode())
        except Exception:  # UnicodeError (MicroPython) / UnicodeDecodeError
            raise ModelError("class code %d is not text" % k)
        pos += 4
    m.constants = struct.unpack_from("<%dd" % N_CONST, data, pos)
    check_constants(m.constants)
    pos += 8 * N_CONST
    m.n_edges = bytes(data[pos:pos + S])
    pos += S
    offsets = [0]
    for n in m.n_edges:
        offsets.append(offsets[-1] + n)
    table_offsets = [0]
    for n in m.n_edges:
        table_offsets.append(table_offsets[-1] + (n + 1) * K)
    total = pos + 8 * (offsets[-1] + K + K * K + table_offsets[-1])
    if len(data) != total:
        raise ModelError("model file has %d bytes, its header says %d" % (len(data), total))
    m.edge_offsets = offsets
    m.table_offsets = table_offsets
    m.edges, pos = _floats(data, pos, offsets[-1], EDGE_SLACK if FLOAT_CODE == "f" else 0.0)
    m.startprob, pos = _floats(data, pos, K)
    m.transmat, pos = _floats(data, pos, K * K)
    m.log_emission, pos = _floats(data, pos, table_offsets[-1])
    _check_tables(m)
    return m
