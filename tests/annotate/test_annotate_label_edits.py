"""Label edits against a brute-force model: a label per sample of a fine grid."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host.annotate import labels as L
from host.annotate.agreement import agreement, cohen_kappa
from host.errors import UserError

GRID = np.arange(0, 101) * 0.5  # boundaries live on this grid (0 .. 50 s)
MID = GRID[:-1] + 0.25  # one probe per cell


def per_cell(segments):
    return L.labels_on(segments, MID)


def check_invariants(segments):
    for a, b, _ in segments:
        assert b > a
    for (a0, b0, _), (a1, b1, _) in zip(segments, segments[1:]):
        assert b0 <= a1  # sorted, no overlap


@pytest.mark.parametrize("seed", range(8))
def test_random_edit_sequences_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    segs, model = [], np.full(len(MID), "", dtype=object)
    for _ in range(60):
        op = rng.choice(["paint", "erase", "split", "merge", "move", "relabel"])
        i, j = sorted(rng.integers(0, len(GRID), 2))
        a, b = float(GRID[i]), float(GRID[j])
        act = str(rng.choice(["ST", "WF", "TL"]))
        if op == "paint":
            segs = L.paint(segs, a, b, act)
            model[i:j] = act
        elif op == "erase":
            segs = L.erase(segs, a, b)
            model[i:j] = ""
        elif op == "split":
            n = len(segs)
            k = L.index_at(segs, a)
            cuts = k >= 0 and segs[k][0] != a
            segs = L.split(segs, a)  # labels unchanged (checked below), one more piece
            assert len(segs) == n + cuts
        elif op == "merge":
            k = L.index_at(segs, a)
            before = list(segs)
            segs = L.merge(segs, a)
            if k >= 0 and k + 1 < len(before):
                s0, s1 = before[k], before[k + 1]
                lo = int(round(s0[0] / 0.5))
                hi = int(round(s1[1] / 0.5))
                model[lo:hi] = s0[2]
        elif op == "move":
            bs = L.boundaries(segs)
            if bs:
                old = bs[rng.integers(len(bs))]
                before = list(segs)
                segs = L.move_boundary(segs, old, b)
                if segs != before:  # allowed move: every cell between follows the edge
                    assert b in L.boundaries(segs) and old not in L.boundaries(segs)
                model = per_cell(segs)  # checked against the rules below instead
        elif op == "relabel":
            k = L.index_at(segs, a)
            segs = L.relabel(segs, a, act)
            if k >= 0:
                lo, hi = (int(round(x / 0.5)) for x in segs[k][:2])
                model[lo:hi] = act
        check_invariants(segs)
        assert per_cell(segs).tolist() == model.tolist(), op


def test_split_keeps_labels_and_merge_undoes_it():
    segs = [(0.0, 4.0, "WF"), (4.0, 6.0, "TL")]
    s2 = L.split(segs, 2.0)
    assert s2 == [(0.0, 2.0, "WF"), (2.0, 4.0, "WF"), (4.0, 6.0, "TL")]
    assert L.merge(s2, 1.0) == segs
    assert L.merge(segs, 1.0) == [(0.0, 6.0, "WF")]  # joined, label of the one at t
    assert L.split(segs, 4.0) == segs and L.split(segs, 9.0) == segs


def test_boundary_moves_stay_between_neighbours():
    segs = [(0.0, 2.0, "ST"), (2.0, 5.0, "WF"), (5.0, 8.0, "TL")]
    assert L.move_boundary(segs, 2.0, 3.0) == [(0.0, 3.0, "ST"), (3.0, 5.0, "WF"),
                                               (5.0, 8.0, "TL")]
    assert L.move_boundary(segs, 2.0, 5.0) == segs  # would swallow WF: refused
    assert L.move_boundary(segs, 2.0, -1.0) == segs
    assert L.move_boundary(segs, 8.0, 9.5)[-1] == (5.0, 9.5, "TL")


def test_sample_grid_snaps_to_samples_and_the_end_of_the_last_one():
    g = L.SampleGrid(np.arange(10) * 0.02 + 0.5)
    assert g.snap(0.5149) == pytest.approx(0.52) and g.snap(-3) == 0.5
    assert g.end == pytest.approx(0.7) and g.snap(99) == pytest.approx(0.7)
    snapped = g.snap_segments([(0.501, 0.509, "x"), (0.511, 0.689, "y")])
    assert snapped == [(g.points[1], g.points[9], "y")]  # "x" shrank to nothing


def test_label_sets_presets_and_user_defined(tmp_path):
    assert L.PRESETS["exp1"].classes == ("NTW", "ST", "WF", "TL", "TR", "WB", "TRS")
    assert len(L.PRESETS["exp2"].classes) == 12
    assert L.PRESETS["exp2"].keys["Q"] == "GUC"
    custom = L.label_set_from_text("sit, stand ,walk")
    assert custom.classes == ("sit", "stand", "walk") and custom.key_of("walk") == "3"
    f = tmp_path / "set.json"
    f.write_text('{"name": "mine", "classes": ["a", "b"]}')
    assert L.label_set_from_text(str(f)).name == "mine"
    f.write_text("not json")
    with pytest.raises(UserError, match="not a label-set file"):
        L.label_set_from_text(str(f))
    with pytest.raises(UserError, match="twice"):
        L.label_set_from_text("a,a")


def _kappa_brute(a, b):
    classes = sorted(set(a) | set(b))
    n = len(a)
    po = sum(x == y for x, y in zip(a, b)) / n
    pe = sum((a.count(c) / n) * (b.count(c) / n) for c in classes)
    return (po - pe) / (1 - pe)


def test_cohen_kappa_against_its_definition():
    rng = np.random.default_rng(1)
    for _ in range(20):
        a = list(rng.choice(["x", "y", "z"], 50))
        b = [v if rng.random() < 0.7 else str(rng.choice(["x", "y", "z"])) for v in a]
        assert cohen_kappa(a, b) == pytest.approx(_kappa_brute(a, b))
    assert cohen_kappa(["x"] * 5, ["x"] * 5) == 1.0
    assert np.isnan(cohen_kappa([], []))


def test_agreement_counts_only_samples_both_label_and_uses_the_window():
    t = np.arange(100) * 0.02
    a = [(0.0, 1.0, "ST"), (1.0, 2.0, "WF")]
    b = [(0.0, 1.1, "ST"), (1.1, 1.8, "WF")]  # boundary 5 samples late; ends 10 early
    r = agreement(a, b, t, window=5)
    assert r.n_samples == 90
    assert r.accuracy == pytest.approx(85 / 90)
    assert r.windowed_accuracy == 1.0
    assert agreement(a, [], t).n_samples == 0


def _normalise_by_painting(segments):
    """The definition: paint the segments one after another."""
    out = []
    for a, b, c in segments:
        out = L.paint(out, float(a), float(b), str(c))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30),
                          st.sampled_from(["a", "b", "c", ""])), max_size=25))
def test_fast_normalise_equals_painting_one_after_another(rows):
    segments = [(a / 4, b / 4, c) for a, b, c in rows]  # many shared boundaries
    assert L.normalise(segments) == _normalise_by_painting(segments)


def test_normalise_is_not_quadratic():
    # 200,000 overlapping rows would take hours painted one by one; here, seconds.
    rng = np.random.default_rng(0)
    a = np.sort(rng.uniform(0, 1e5, 200_000))
    rows = list(zip(a.tolist(), (a + rng.uniform(0.1, 3, a.size)).tolist(),
                    rng.choice(["a", "b"], a.size).tolist()))
    out = L.normalise(rows)
    starts = np.array([s for s, _, _ in out])
    stops = np.array([e for _, e, _ in out])
    assert np.all(stops > starts) and np.all(starts[1:] >= stops[:-1])
    assert out[-1][1] == max(b for _, b, _ in rows)
