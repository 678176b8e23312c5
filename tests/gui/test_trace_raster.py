"""The live curves' per-pixel-column min/max rings and their rasterisation, against
brute force."""
import math

import numpy as np
import pytest

from host.gui.trace_raster import ColumnRing, raster_columns, reduce_columns


def brute_columns(t, y, inv_dt, c_first, c_last):
    """Min and max of the polyline through the finite samples (NaN breaks it) over
    each column [c / inv_dt, (c + 1) / inv_dt]: the samples in the column, and the
    line's value where it crosses the column's edges."""
    out = {c: [] for c in range(c_first, c_last + 1)}
    for ti, yi in zip(t, y):
        c = math.floor(ti * inv_dt)
        if np.isfinite(yi) and c in out:
            out[c].append(yi)
    for c in range(c_first, c_last + 2):  # edge c: left of column c, right of c - 1
        edge = c / inv_dt
        i = int(np.searchsorted(t, edge, side="left")) - 1  # t[i] < edge <= t[i + 1]
        if i < 0 or i + 1 >= len(t) or not (np.isfinite(y[i]) and np.isfinite(y[i + 1])):
            continue
        v = y[i] + (y[i + 1] - y[i]) * (edge - t[i]) / (t[i + 1] - t[i])
        for col in (c - 1, c):
            if col in out:
                out[col].append(v)
    lo = np.array([min(v) if v else np.inf for v in out.values()])
    hi = np.array([max(v) if v else -np.inf for v in out.values()])
    return lo, hi


def _samples(rng, n, rate, jitter=0.3, gaps=2):
    t = 3.0 + np.cumsum(rng.uniform(1 - jitter, 1 + jitter, n)) / rate
    data = np.column_stack([t, rng.normal(size=(n, 3)) * [1, 10, 0.1]])
    data[rng.choice(n, gaps, replace=False), 1:] = np.nan  # gap rows break the lines
    return data


@pytest.mark.parametrize("rate,inv_dt", [(200.0, 34.0), (100.0, 33.3), (50.0, 100.0),
                                         (10.0, 333.0)])
def test_column_min_max_is_the_polyline_envelope_and_keeps_every_sample(rate, inv_dt):
    """From 6 samples per column down to one sample every 33 columns (lines between
    samples still drawn): lo/hi equal brute force, and every sample lies in its
    column's [lo, hi] (peaks are never lost)."""
    rng = np.random.default_rng(int(rate))
    data = _samples(rng, 600, rate)
    t = data[:, 0]
    c_a, c_b = math.floor(t[0] * inv_dt), math.floor(t[-1] * inv_dt)
    R = c_b - c_a + 5
    lo, hi = np.full((3, R), np.inf), np.full((3, R), -np.inf)
    reduce_columns(t, data, np.array([1, 2, 3]), 0, c_a, c_b, inv_dt, lo, hi)
    slots = np.arange(c_a, c_b + 1) % R
    for k in range(3):
        want_lo, want_hi = brute_columns(t, data[:, 1 + k], inv_dt, c_a, c_b)
        np.testing.assert_allclose(lo[k, slots], want_lo, rtol=0, atol=1e-12)
        np.testing.assert_allclose(hi[k, slots], want_hi, rtol=0, atol=1e-12)
        ok = np.isfinite(data[:, 1 + k])
        cols = (np.floor(t[ok] * inv_dt).astype(int)) % R
        assert np.all(lo[k, cols] <= data[ok, 1 + k])
        assert np.all(hi[k, cols] >= data[ok, 1 + k])


def test_the_ring_built_frame_by_frame_equals_one_full_reduction():
    """Samples arriving in chunks of 0-40 rows (columns recomputed only from the newest
    one on, old ones emptied as they scroll out) give the same columns as reducing the
    final window at once, and the arrays are never reallocated."""
    rng = np.random.default_rng(5)
    data = _samples(rng, 5000, 100.0, gaps=20)
    window = 8.0
    ring = ColumnRing(3)
    ring.configure(271.3, 50, window, 1.0)
    lo_id, hi_id, img_id = id(ring.lo), id(ring.hi), id(ring.image)
    cols = np.array([1, 2, 3])
    end = 1
    while end < len(data):
        end = min(len(data), end + int(rng.integers(0, 41)))
        tail = data[max(0, np.searchsorted(data[:end, 0], data[end - 1, 0] - window - 1)):end]
        ring.reduce(tail[:, 0], tail, cols, float(tail[-1, 0]))
    assert (id(ring.lo), id(ring.hi), id(ring.image)) == (lo_id, hi_id, img_id)
    t_inc, lo_inc, hi_inc = ring.columns()
    fresh = ColumnRing(3)
    fresh.configure(271.3, 50, window, 1.0)
    fresh.reduce(tail[:, 0], tail, cols, float(tail[-1, 0]))
    t_full, lo_full, hi_full = fresh.columns()
    np.testing.assert_array_equal(t_inc, t_full)
    np.testing.assert_array_equal(lo_inc, lo_full)
    np.testing.assert_array_equal(hi_inc, hi_full)
    c_first = fresh.column(tail[-1, 0] - window)
    c_last = fresh.column(tail[-1, 0])
    assert (fresh.oldest, fresh.newest) == (c_first, c_last)
    for k in range(3):
        want_lo, want_hi = brute_columns(tail[:, 0], tail[:, 1 + k], fresh.inv_dt, c_first,
                                         c_last)
        np.testing.assert_allclose(lo_full[k], want_lo, rtol=0, atol=1e-12)
        np.testing.assert_allclose(hi_full[k], want_hi, rtol=0, atol=1e-12)


def test_raster_paints_each_column_span_in_channel_order_over_the_grid():
    rng = np.random.default_rng(2)
    H, R, nch = 40, 30, 3
    lo = rng.normal(size=(nch, R)) * 3
    hi = lo + rng.uniform(0, 4, size=(nch, R))
    lo[1, 4], hi[1, 4] = np.inf, -np.inf  # an empty column
    lo[0, 7], hi[0, 7] = 50.0, 60.0  # above the view: not drawn
    lo[2, 9], hi[2, 9] = -60.0, 60.0  # taller than the view: clipped
    img = np.zeros((H, R), np.uint32)
    colours = np.array([0xFF0000FF, 0xFF00FF00, 0xFFFF0000], np.uint32)
    order = np.array([0, 2, 0])  # channel 1 hidden
    grid_rows = np.array([5, 20, 0, 0])
    y0, y1 = -8.0, 8.0
    scale = H / (y1 - y0)
    bg, grid = np.uint32(0xFFFFFFFF), np.uint32(0xFFDDDDDD)
    x_tick, inv_dt = 0.25, 20.0  # a vertical grid line every 5 columns
    raster_columns(img, lo, hi, order, 2, colours, 100, 100 + R - 1, y1, scale, bg, grid,
                   grid_rows, 2, x_tick, inv_dt)
    want = np.empty((H, R), np.uint32)
    for c in range(100, 100 + R):
        s = c % R
        col = np.full(H, bg)
        col[[5, 20]] = grid
        if any(math.floor(k * x_tick * inv_dt) == c for k in range(0, 200)):
            col[:] = grid
        for k in (0, 2):
            if lo[k, s] > hi[k, s]:
                continue
            r0 = math.floor((y1 - hi[k, s]) * scale)
            r1 = math.floor((y1 - lo[k, s]) * scale)
            rows = [r for r in range(r0, r1 + 1) if 0 <= r < H]
            col[rows] = colours[k]
        want[:, s] = col
    np.testing.assert_array_equal(img, want)
    assert (img == colours[1]).sum() == 0
    assert np.all(img[:, 9] == colours[2])  # clipped to the full height
    assert (img[:, 7] == colours[0]).sum() == 0


def test_live_ribbon_columns_equal_the_paused_rasterisation():
    """The ribbon ring's stacked area and label strip, column by column, are what
    rasterise_stack / rasterise_labels draw for the same columns (the paused view)."""
    from host.gui.posterior_ribbon import (raster_label_columns, raster_stack_columns,
                                           rasterise_labels, rasterise_stack)

    rng = np.random.default_rng(4)
    t = np.sort(rng.uniform(0, 20, 700))
    t = t[np.diff(t, prepend=-1) > 1e-6]
    t[300:] += 2.0  # a 2 s hole: columns in it stay empty
    P = rng.dirichlet(np.ones(5) * 0.5, size=len(t))
    P[50] = np.nan  # a gap row
    inv_dt, rows, R = 9.7, 37, 260
    c_a, c_b = 5, 5 + R - 1
    sentinel = np.uint32(0xFF123456)
    img = np.full((50, R), sentinel, np.uint32)
    lut = np.arange(5, dtype=np.uint32) + 0xFF000000
    grid_lut = lut + 100
    raster_stack_columns(img, t, P, c_a, c_b, inv_dt, 0.5, 3, rows, lut, grid_lut, 0.0,
                         np.zeros(5))
    ref_lut = np.array([[k, 0, 0, 255] for k in range(5)], np.uint8)
    ref = rasterise_stack(t, P, ref_lut, c_a / inv_dt, (c_b + 1) / inv_dt, R, rows=rows)
    slots = np.arange(c_a, c_b + 1) % R
    for j, s in enumerate(slots):
        column = img[3:3 + rows, s][::-1]  # bottom first, as rasterise_stack
        if ref[j, 0, 3] == 0:
            assert np.all(img[:, s] == sentinel)
        else:
            np.testing.assert_array_equal(column, lut[ref[j, :, 0]])
    assert (ref[:, 0, 3] == 0).sum() > 10 and (ref[:, 0, 3] > 0).sum() > 100
    # a label strip: labels every ~3 s held 1.5 s
    lt = np.array([0.5, 3.0, 7.5, 9.0, 15.0])
    codes = np.array([0.0, 2.0, 1.0, 2.0, 0.0])
    img[:] = sentinel
    raster_label_columns(img, lt, codes, c_a, c_b, inv_dt, 1.5, 40, 44, lut, grid_lut, 0.0)
    ref = rasterise_labels(lt, codes, ref_lut, c_a / inv_dt, (c_b + 1) / inv_dt, R)
    for j, s in enumerate(slots):
        if ref[j, 0, 3] == 0:
            assert np.all(img[:, s] == sentinel)
        else:
            assert np.all(img[40:44, s] == lut[ref[j, 0, 0]])
            assert np.all(img[:40, s] == sentinel) and np.all(img[44:, s] == sentinel)
