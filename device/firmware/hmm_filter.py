# The on-device recognizer: the filtered discrete HMM of the host's HMMRecognizer
# (recognizers/hmm_recognizer.py), one frame at a time, in a scaled recursion:
#   symbols: per sensor, the number of bin edges <= the feature (bisection)
#   ll[k] = sum_s log P(symbol_s | k)              (log table, sensor order)
#   w[k] = exp(ll[k] - max ll)                      (shift: no underflow)
#   alpha[k] ~ w[k] * pi[k]        (first frame)
#   alpha[k] ~ w[k] * sum_i alpha_prev[i] A[i, k]   (then), normalised to sum 1
# which is the host's log-space filter exactly, up to rounding. Work per frame for K
# classes and S sensors: S bisections, S*K adds, K exps, K*K multiply-adds. A
# transition matrix with one value on the diagonal and one off it (the thesis's
# persistence model, eq 6.13, the host's default) needs only K: since alpha sums to
# 1, sum_i alpha[i] A[i, j] = off + (diag - off) alpha[j].
from math import exp

from device.firmware.model_format import FLOAT_CODE

try:
    from array import array
except ImportError:  # pragma: no cover
    array = None


class DeviceHMM:
    """step(features) -> posterior (array of K floats, sums to 1); reset()."""

    def __init__(self, model):
        self.model = model
        K = model.n_classes
        self.K = K
        self.S = model.n_sensors
        self.alpha = array(FLOAT_CODE, [0.0] * K)
        self._pred = array(FLOAT_CODE, [0.0] * K)
        self._ll = array(FLOAT_CODE, [0.0] * K)
        self.symbols = [0] * self.S
        self.started = False
        self.persistence = _persistence(model.transmat, K)  # (diag, off) or None

    def reset(self):
        self.started = False

    def bin(self, x):
        """Symbols of one feature vector (bin b holds edges[b-1] <= v < edges[b])."""
        m = self.model
        edges = m.edges
        offs = m.edge_offsets
        sym = self.symbols
        for s in range(self.S):
            lo = offs[s]
            a = lo
            b = offs[s + 1]
            v = x[s]
            while a < b:
                mid = (a + b) >> 1
                if edges[mid] <= v:
                    a = mid + 1
                else:
                    b = mid
            sym[s] = a - lo
        return sym

    def step_symbols(self, sym):
        m = self.model
        K = self.K
        table = m.log_emission
        toff = m.table_offsets
        ll = self._ll
        for k in range(K):
            ll[k] = 0.0
        for s in range(self.S):
            base = toff[s] + sym[s] * K
            for k in range(K):
                ll[k] += table[base + k]
        top = ll[0]
        for k in range(1, K):
            if ll[k] > top:
                top = ll[k]
        alpha = self.alpha
        pred = self._pred
        if self.started and self.persistence is not None:
            diag, off = self.persistence
            gain = diag - off
            for j in range(K):
                pred[j] = off + gain * alpha[j]
        elif self.started:
            A = m.transmat
            for j in range(K):
                pred[j] = 0.0
            for i in range(K):
                a = alpha[i]
                if a == 0.0:
                    continue
                row = i * K
                for j in range(K):
                    pred[j] += a * A[row + j]
        else:
            for j in range(K):
                pred[j] = m.startprob[j]
        total = 0.0
        if top > -1e300:  # some class can emit these symbols
            for k in range(K):
                w = pred[k] * exp(ll[k] - top)
                pred[k] = w
                total += w
        if total > 0.0:
            inv = 1.0 / total
            for k in range(K):
                alpha[k] = pred[k] * inv
        else:  # impossible evidence: start over from the prior, never NaN
            total = 0.0
            for k in range(K):
                total += m.startprob[k]
            for k in range(K):
                alpha[k] = m.startprob[k] / total if total > 0 else 1.0 / K
        self.started = True
        return alpha

    def step(self, x):
        return self.step_symbols(self.bin(x))

    def best(self):
        """(class index, its posterior) of the current filtered posterior."""
        alpha = self.alpha
        k_best = 0
        for k in range(1, self.K):
            if alpha[k] > alpha[k_best]:
                k_best = k
        return k_best, alpha[k_best]


def _persistence(A, K):
    """(diag, off) if A[i, i] == diag and A[i, j] == off for all i != j, else None."""
    diag = A[0]
    off = A[1] if K > 1 else 0.0
    for i in range(K):
        for j in range(K):
            if A[i * K + j] != (diag if i == j else off):
                return None
    return diag, off
