"""Label tracks being edited: label sets, sample snapping and the edit operations.

A track under edit is a sorted list of non-overlapping segments (start_s, stop_s,
activity), half-open, in the recording's time base. Every edit is a pure function
from one segment list to the next, so the window's undo stack only has to swap whole
lists (one mechanism for every kind of edit), and tests can check edits without Qt.

Boundaries snap to the sample grid: the time of a sample, or the end of the last
sample (its time plus one period), so a segment holds whole samples.
"""
from __future__ import annotations

import heapq

import json
import os
from dataclasses import dataclass, field

import numpy as np

from domain.activities import ACTIVITY_NAMES, EXP1_CLASSES, EXP2_CLASSES
from host.errors import UserError

Segment = tuple[float, float, str]

KEYS = "1234567890QWERTYUIOP"  # a key per activity, in label-set order


@dataclass(frozen=True)
class LabelSet:
    """The activities an annotator chooses from, each with its key."""

    name: str
    classes: tuple[str, ...]
    descriptions: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.classes:
            raise UserError("label set %r has no classes" % self.name)
        if len(set(self.classes)) != len(self.classes):
            raise UserError("label set %r names a class twice" % self.name)
        if len(self.classes) > len(KEYS):
            raise UserError("label set %r has %d classes; at most %d have keys"
                            % (self.name, len(self.classes), len(KEYS)))
        for c in self.classes:
            if not isinstance(c, str) or not c.strip():
                raise UserError("label set %r: class names must be non-empty text"
                                % self.name)

    @property
    def keys(self) -> dict[str, str]:
        """key character -> activity code."""
        return {KEYS[i]: c for i, c in enumerate(self.classes)}

    def key_of(self, code: str) -> str:
        return KEYS[self.classes.index(code)] if code in self.classes else ""


PRESETS = {
    "exp1": LabelSet("exp1", EXP1_CLASSES, {c: ACTIVITY_NAMES[c] for c in EXP1_CLASSES}),
    "exp2": LabelSet("exp2", EXP2_CLASSES, {c: ACTIVITY_NAMES[c] for c in EXP2_CLASSES}),
}


def label_set_from_text(spec: str) -> LabelSet:
    """A preset name (exp1, exp2), comma-separated codes, or a JSON file
    {"name": ..., "classes": [...], "descriptions": {...}}."""
    if spec in PRESETS:
        return PRESETS[spec]
    if os.path.isfile(spec):
        try:
            with open(spec, encoding="utf-8") as fh:
                data = json.load(fh)
            return LabelSet(str(data.get("name", os.path.basename(spec))),
                            tuple(str(c) for c in data["classes"]),
                            dict(data.get("descriptions", {})))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise UserError("%s: not a label-set file (JSON with a 'classes' list): %s"
                            % (spec, exc)) from None
    if spec.lower().endswith(".json"):
        raise UserError("%s: no such label-set file" % spec)
    classes = tuple(c.strip() for c in spec.split(",") if c.strip())
    if not classes:
        raise UserError("empty label set %r" % spec)
    return LabelSet("custom", classes)


# ---- the sample grid ---------------------------------------------------------------
class SampleGrid:
    """Where boundaries may lie: each sample's time and the end of the last one."""

    def __init__(self, time_s: np.ndarray) -> None:
        t = np.asarray(time_s, dtype=np.float64)
        if t.size == 0:
            self.points = np.array([0.0])
        else:
            period = float(np.median(np.diff(t))) if t.size > 1 else 0.02
            self.points = np.append(t, t[-1] + period)

    def snap(self, t: float) -> float:
        p = self.points
        i = int(np.searchsorted(p, t))
        if i <= 0:
            return float(p[0])
        if i >= len(p):
            return float(p[-1])
        return float(p[i] if p[i] - t < t - p[i - 1] else p[i - 1])

    def snap_segments(self, segments) -> list[Segment]:
        """Snap every boundary; segments that shrink to nothing are dropped."""
        out = []
        for a, b, c in segments:
            a, b = self.snap(a), self.snap(b)
            if b > a:
                out.append((a, b, c))
        return out

    @property
    def start(self) -> float:
        return float(self.points[0])

    @property
    def end(self) -> float:
        return float(self.points[-1])


# ---- edits: pure functions on sorted non-overlapping segment lists ---------------
def normalise(segments) -> list[Segment]:
    """Sorted, non-overlapping (later segments win where they overlap).

    The same result as painting the segments one after another (``paint``), in
    O(n log n): a sweep over the sorted boundaries keeps the covering segments in a
    max-heap by row, so each elementary interval goes to the latest segment over it.
    """
    rows = []
    for a, b, c in segments:
        a, b, c = float(a), float(b), str(c)
        if b < a:
            a, b = b, a
        if b > a and c:
            rows.append((a, b, c))
    if not rows:
        return []
    starts = sorted(range(len(rows)), key=lambda i: rows[i][0])
    bounds = sorted({x for a, b, _ in rows for x in (a, b)})
    heap: list[int] = []  # -row index of segments started so far (lazy deletion)
    out: list[Segment] = []
    nxt = 0
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        while nxt < len(starts) and rows[starts[nxt]][0] <= lo:
            heapq.heappush(heap, -starts[nxt])
            nxt += 1
        while heap and rows[-heap[0]][1] <= lo:
            heapq.heappop(heap)  # ended: no later interval can need it
        if not heap:
            continue
        i = -heap[0]
        if out and out[-1][1] == lo and out[-1][3] == i:
            out[-1] = (out[-1][0], hi, out[-1][2], i)  # the same segment goes on
        else:
            out.append((lo, hi, rows[i][2], i))
    return [(a, b, c) for a, b, c, _ in out]


def _cut(segments, start: float, stop: float) -> list[Segment]:
    out = []
    for a, b, c in segments:
        if b <= start or a >= stop:
            out.append((a, b, c))
            continue
        if a < start:
            out.append((a, start, c))
        if b > stop:
            out.append((stop, b, c))
    return out


def paint(segments, start: float, stop: float, activity: str) -> list[Segment]:
    """Label [start, stop) with activity, overwriting whatever was there."""
    if stop < start:
        start, stop = stop, start
    if stop <= start or not activity:
        return list(segments)
    out = _cut(segments, start, stop) + [(start, stop, activity)]
    return sorted(out)


def erase(segments, start: float, stop: float) -> list[Segment]:
    if stop < start:
        start, stop = stop, start
    return _cut(segments, start, stop)


def index_at(segments, t: float) -> int:
    """Index of the segment covering t, -1 if none."""
    for i, (a, b, _) in enumerate(segments):
        if a <= t < b:
            return i
    return -1


def relabel(segments, t: float, activity: str) -> list[Segment]:
    i = index_at(segments, t)
    if i < 0:
        return list(segments)
    out = list(segments)
    a, b, _ = out[i]
    out[i] = (a, b, activity)
    return out


def split(segments, t: float) -> list[Segment]:
    """Cut the segment covering t into [a, t) and [t, b) with the same label."""
    i = index_at(segments, t)
    if i < 0 or segments[i][0] == t:
        return list(segments)
    a, b, c = segments[i]
    return list(segments[:i]) + [(a, t, c), (t, b, c)] + list(segments[i + 1:])


def merge(segments, t: float) -> list[Segment]:
    """Join the segment covering t with the next one (across any gap); the joined
    segment keeps the label of the one at t."""
    i = index_at(segments, t)
    if i < 0 or i + 1 >= len(segments):
        return list(segments)
    a, _, c = segments[i]
    _, b, _ = segments[i + 1]
    return list(segments[:i]) + [(a, b, c)] + list(segments[i + 2:])


def boundaries(segments) -> list[float]:
    """Every distinct start and stop time, sorted."""
    return sorted({x for a, b, _ in segments for x in (a, b)})


def move_boundary(segments, old: float, new: float) -> list[Segment]:
    """Move every start/stop at `old` to `new`, kept inside the neighbouring
    boundaries so no segment vanishes or overlaps another."""
    bs = boundaries(segments)
    if old not in bs:
        return list(segments)
    i = bs.index(old)
    lo = bs[i - 1] if i > 0 else -np.inf
    hi = bs[i + 1] if i + 1 < len(bs) else np.inf
    if not lo < new < hi:
        return list(segments)
    return [(new if a == old else a, new if b == old else b, c) for a, b, c in segments]


def nearest_boundary(segments, t: float, tolerance: float) -> float | None:
    bs = boundaries(segments)
    if not bs:
        return None
    d = np.abs(np.asarray(bs) - t)
    j = int(d.argmin())
    return bs[j] if d[j] <= tolerance else None


def labels_on(segments, time_s) -> np.ndarray:
    """Activity at each time ('' where unlabelled), as an object array."""
    t = np.asarray(time_s, dtype=np.float64)
    out = np.full(t.shape, "", dtype=object)
    for a, b, c in segments:
        lo, hi = np.searchsorted(t, a, side="left"), np.searchsorted(t, b, side="left")
        out[lo:hi] = c
    return out
