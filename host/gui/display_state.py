"""What the views draw: preallocated ring buffers filled from DisplayChunks.

Lives on the GUI thread. ``append(chunk)`` copies a chunk's rows into the rings (a few
slice assignments); the views read contiguous ``view()``s. Memory is fixed by the
capacities, whatever the session length.
"""
from __future__ import annotations

import numpy as np

from host.gui.processing import N_VALUES, DisplayChunk
from host.gui.ring_buffer import RingBuffer

HISTORY_ROWS = 1 << 16  # 21 min at 50 Hz, 5.5 min at 200 Hz: what pause/scroll can reach
LABEL_ROWS = 1 << 12  # TRUTH/ACTIVITY frames (about one a second)
T = 0  # the time column of every ring


class LabelTrack:
    """Sparse labels over time (simulator truth, on-device estimate) in a ring."""

    def __init__(self, capacity: int = LABEL_ROWS) -> None:
        self.ring = RingBuffer(capacity, 3)  # t, code index, confidence
        self.codes: list[str] = []
        self._index: dict[str, int] = {}

    def append(self, t: float, code: str, confidence: float = np.nan) -> None:
        i = self._index.get(code)
        if i is None:
            i = self._index[code] = len(self.codes)
            self.codes.append(code)
        self.ring.append(np.array([t, i, confidence]))

    def latest(self) -> tuple[float, str, float] | None:
        row = self.ring.last_row()
        if row is None:
            return None
        return float(row[0]), self.codes[int(row[1])], float(row[2])

    def clear(self) -> None:
        self.ring.clear()


class DisplayState:
    """Rings of samples and posteriors, plus the newest labels, for one session."""

    def __init__(self, history_rows: int = HISTORY_ROWS) -> None:
        self.history_rows = history_rows
        self.samples = RingBuffer(history_rows, 1 + N_VALUES)
        self.posterior: RingBuffer | None = None
        self.classes: tuple[str, ...] = ()
        self.truth = LabelTrack()
        self.device = LabelTrack()
        self.newest_arrival = 0.0  # wall time the newest appended data left the reader
        self.generation = 0  # bumps on every append that changes what is drawn
        self.samples_seen = 0
        self._current: tuple[str, float] | None = None
        self.current_since: float | None = None  # display time the current class began

    def clear(self) -> None:
        self.samples.clear()
        if self.posterior is not None:
            self.posterior.clear()
        self.truth.clear()
        self.device.clear()
        self._current = None
        self.current_since = None
        self.samples_seen = 0
        self.generation += 1

    def set_classes(self, classes: tuple[str, ...]) -> None:
        if tuple(classes) == self.classes:
            return
        self.classes = tuple(classes)
        self.posterior = RingBuffer(self.history_rows, 1 + len(classes)) if classes else None
        self._current = None
        self.current_since = None
        self.generation += 1

    def append(self, chunk: DisplayChunk) -> None:
        for t, index, conf, code in chunk.device_activity:
            self.device.append(t, code, conf)
        for t, code in chunk.truth:
            self.truth.append(t, code)
        n = len(chunk.t)
        if chunk.classes != self.classes and (n or chunk.classes):
            self.set_classes(chunk.classes)
        if n:
            rows = np.empty((n, 1 + N_VALUES))
            rows[:, T] = chunk.t
            rows[:, 1:] = chunk.values
            self.samples.append(rows)
            if chunk.posterior is not None and self.posterior is not None:
                prow = np.empty((n, 1 + len(self.classes)))
                prow[:, T] = chunk.t
                prow[:, 1:] = chunk.posterior
                self.posterior.append(prow)
                self._track_current(chunk.t, chunk.posterior)
            self.samples_seen += chunk.n_samples
            self.newest_arrival = max(self.newest_arrival, chunk.arrival)
        if n or chunk.device_activity or chunk.truth:
            self.generation += 1

    def _track_current(self, t: np.ndarray, posterior: np.ndarray) -> None:
        ok = np.isfinite(posterior[:, 0])
        if not ok.any():
            return
        k = np.argmax(posterior[ok], axis=1)
        tk = t[ok]
        code_prev = self._current[0] if self._current else None
        changes = np.flatnonzero(k[1:] != k[:-1]) + 1
        if code_prev is None or self.classes[k[0]] != code_prev:
            self.current_since = float(tk[0])
        if len(changes):
            self.current_since = float(tk[changes[-1]])
        last = posterior[ok][-1]
        self._current = (self.classes[k[-1]], float(last[k[-1]]))

    # ---- what the views ask -----------------------------------------------------------
    def current(self) -> tuple[str, float] | None:
        """The most probable activity now and its probability (None without a model)."""
        return self._current

    def latest_posterior(self) -> np.ndarray | None:
        if self.posterior is None or not len(self.posterior):
            return None
        view = self.posterior.view(64)
        ok = np.isfinite(view[:, 1])
        return view[ok][-1, 1:] if ok.any() else None

    def latest_time(self) -> float | None:
        row = self.samples.last_row()
        return None if row is None else float(row[T])

    def latest_values(self) -> np.ndarray | None:
        """The newest sample row with data (skipping gap rows), without the time."""
        view = self.samples.view(8)
        ok = np.isfinite(view[:, 1])
        return view[ok][-1, 1:] if ok.any() else None

    def tail(self, ring: RingBuffer, seconds: float, t_end: float | None = None
             ) -> np.ndarray:
        """Rows of `ring` from t_end - seconds on (one row earlier, so lines reach the
        left edge): a view."""
        view = ring.view()
        if not len(view):
            return view
        t_end = float(view[-1, T]) if t_end is None else t_end
        start = int(np.searchsorted(view[:, T], t_end - seconds, side="left"))
        return view[max(0, start - 1):]
