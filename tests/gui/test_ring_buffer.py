import numpy as np
import pytest

from host.gui.ring_buffer import RingBuffer


def test_view_is_chronological_contiguous_and_keeps_only_the_newest_rows():
    ring = RingBuffer(5, 2)
    rows = np.column_stack([np.arange(13.0), -np.arange(13.0)])
    for start in range(0, 13, 3):  # blocks that straddle the wrap-around
        ring.append(rows[start:start + 3])
    view = ring.view()
    assert len(ring) == 5 and ring.total == 13
    np.testing.assert_array_equal(view, rows[-5:])
    assert view[:, 0].flags["C_CONTIGUOUS"] and view[:, 1].flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(ring.view(2), rows[-2:])
    np.testing.assert_array_equal(ring.last_row(), rows[-1])


def test_a_block_longer_than_the_ring_keeps_its_tail():
    ring = RingBuffer(4, 1)
    ring.append(np.arange(10.0)[:, None])
    np.testing.assert_array_equal(ring.view()[:, 0], [6, 7, 8, 9])


def test_memory_is_fixed_whatever_is_appended():
    ring = RingBuffer(1000, 12)
    before = ring.nbytes
    for _ in range(500):
        ring.append(np.random.default_rng(0).normal(size=(37, 12)))
    assert ring.nbytes == before and len(ring) == 1000


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError):
        RingBuffer(0, 3)
    with pytest.raises(ValueError):
        RingBuffer(4, 3).append(np.zeros((2, 2)))
