"""Issue 35, case 4: device time stepping back (a walker reset, a damaged clock) is a
gap and a reset for the speed estimate, inside a block or between blocks, never an
IndexError; block boundaries never change the features."""
import numpy as np
from hypothesis import given, settings, strategies as st

from calibration import WalkerCalibration
from host.features import SPEED_WINDOW_S, FeatureExtractor
from host.samples import SampleBlock

CAL = WalkerCalibration()
WINDOW_US = int(SPEED_WINDOW_S * 1e6)


def _block(t_us, ticks):
    n = len(t_us)
    return SampleBlock(seq=np.arange(n, dtype=np.uint16), t_us=np.asarray(t_us, np.int64),
                       host_time=np.zeros(n), accel=np.zeros((n, 3), np.int16),
                       loads=np.full((n, 4), 1000, np.int32),
                       encoder=np.asarray(ticks, np.int32), fresh=np.full(n, 15, np.uint8),
                       status=np.zeros(n, np.uint8))


def _brute_force(t_us, ticks):
    """Segments split where time goes back; in each, the earliest sample of the
    segment within the window, as for a fresh extractor."""
    out = np.zeros(len(t_us))
    start = 0
    for i in range(len(t_us)):
        if i and t_us[i] < t_us[i - 1]:
            start = i  # a reset: nothing before it counts
        j = next(j for j in range(start, i + 1) if t_us[j] >= t_us[i] - WINDOW_US)
        dt = (t_us[i] - t_us[j]) * 1e-6
        out[i] = (ticks[i] - ticks[j]) * CAL.metres_per_tick / dt if dt > 0 else 0.0
    return out


def test_time_going_back_inside_one_block_is_a_reset():
    t = [0, 20_000, 40_000, 60_000, 10_000, 30_000, 50_000, 70_000]  # back at index 4
    k = [0, 10, 20, 30, 500, 510, 520, 530]
    speed = FeatureExtractor(CAL).speed_mps(_block(t, k))
    np.testing.assert_array_equal(speed, _brute_force(t, k))
    assert speed[4] == 0.0 and speed[5] > 0  # no speed across the step


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(-400_000, 300_000), st.integers(-50, 50)),
                min_size=1, max_size=60),
       st.lists(st.integers(1, 20), max_size=8))
def test_any_clock_in_any_blocks_matches_brute_force(steps, cuts):
    t = np.cumsum([s[0] for s in steps]) + 10**9
    k = np.cumsum([s[1] for s in steps])
    want = _brute_force(t, k)
    fx = FeatureExtractor(CAL)
    got, pos = [], 0
    for c in cuts + [len(t)]:
        got.append(fx.process(_block(t[pos:pos + c], k[pos:pos + c])).X[:, 3])
        pos += c
        if pos >= len(t):
            break
    got = np.concatenate(got)
    np.testing.assert_array_equal(got, want)
    assert np.isfinite(got).all()
