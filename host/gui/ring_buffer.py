"""A preallocated ring of float rows with a contiguous, chronological view.

Every row is written twice, at i and i + capacity (a "mirrored" ring), so the last
n rows are always one slice: plots get ``view()`` without a copy and memory never
grows, however long the session. Storage is column-major, so each column of a view
(what a curve's setData gets) is contiguous.
"""
from __future__ import annotations

import numpy as np


class RingBuffer:
    """``capacity`` rows of ``n_columns`` float64 values; oldest rows are overwritten.

    Single-threaded: the GUI thread appends and reads.
    """

    def __init__(self, capacity: int, n_columns: int) -> None:
        if capacity <= 0 or n_columns <= 0:
            raise ValueError("capacity and n_columns must be positive")
        self.capacity = int(capacity)
        self.n_columns = int(n_columns)
        self._data = np.full((self.n_columns, 2 * self.capacity), np.nan)
        self.total = 0  # rows ever appended (ring position = total % capacity)

    def __len__(self) -> int:
        return min(self.total, self.capacity)

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def clear(self) -> None:
        self.total = 0

    def append(self, rows: np.ndarray) -> None:
        """Append (n, n_columns) rows (a 1-D array is one row)."""
        rows = np.asarray(rows, dtype=np.float64)
        if rows.ndim == 1:
            rows = rows[None, :]
        n = len(rows)
        if not n:
            return
        if rows.shape[1] != self.n_columns:
            raise ValueError("rows have %d columns, the ring has %d"
                             % (rows.shape[1], self.n_columns))
        cap = self.capacity
        if n > cap:  # only the newest `capacity` rows survive anyway
            self.total += n - cap
            rows = rows[-cap:]
            n = cap
        w = self.total % cap
        k = min(n, cap - w)
        d = self._data
        head = rows[:k].T
        d[:, w:w + k] = head
        d[:, w + cap:w + cap + k] = head
        if k < n:
            rest = rows[k:].T
            d[:, 0:n - k] = rest
            d[:, cap:cap + n - k] = rest
        self.total += n

    def view(self, last: int | None = None) -> np.ndarray:
        """The newest ``last`` rows (all by default), oldest first: a view, not a copy.

        The view's contents change with the next append; copy it to keep it.
        """
        size = len(self)
        n = size if last is None else max(0, min(int(last), size))
        start = (self.total - n) % self.capacity
        return self._data[:, start:start + n].T

    def last_row(self) -> np.ndarray | None:
        return self.view(1)[0] if self.total else None
