"""Strict label import, and evaluate/train refusing duplicate recordings and mixed
label sets unless --label-map says how to merge them."""
import json
import shutil

import numpy as np
import pytest

from host.cli import main as walkerlab
from host.recording import open_recording
from host.simulate import simulate_to_files


@pytest.fixture(scope="module")
def recs(tmp_path_factory):
    d = tmp_path_factory.mktemp("labels")
    return [str(p) for p in simulate_to_files("exp2", 2, 11, d, duration_s=20,
                                              progress=False)]


def _copy(src, tmp_path, name="r.h5"):
    dst = tmp_path / name
    shutil.copy(src, dst)
    return str(dst)


def _csv(tmp_path, rows):
    path = tmp_path / "labels.csv"
    path.write_text("start_s,stop_s,activity\n" + "".join("%s,%s,%s\n" % r for r in rows))
    return str(path)


def test_import_refuses_overlaps_out_of_range_and_unknown_codes_with_line_numbers(
        recs, tmp_path, capsys):
    rec = _copy(recs[0], tmp_path)
    cases = [
        ([(0, 5, "ST"), (4, 8, "WF")], "line 3 (4-8 s WF) overlaps line 2 (0-5 s ST)"),
        ([(0, 5, "ST"), (15, 25, "WF")], "line 3 (15-25 s WF) is outside the recording"),
        ([(0, 5, "ST"), (5, 8, "XYZ")], "line 3: unknown activity code 'XYZ'"),
    ]
    for rows, message in cases:
        assert walkerlab(["labels", "import", rec, _csv(tmp_path, rows),
                          "--annotator", "bo"]) == 2
        err = capsys.readouterr().err
        assert message in err and "--lenient" in err and err.count("\n") == 1
        assert "bo" not in open_recording(rec).labels  # nothing imported
    good = _csv(tmp_path, [(0, 5, "ST"), (5, 8, "WF")])
    assert walkerlab(["labels", "import", rec, good, "--annotator", "bo"]) == 0
    assert open_recording(rec).labels["bo"].segments()[0][2] == "ST"
    # a label set of the user's own makes XYZ known
    odd = _csv(tmp_path, [(0, 5, "XYZ")])
    assert walkerlab(["labels", "import", rec, odd, "--annotator", "cy",
                      "--label-set", "XYZ,ST"]) == 0


def test_lenient_trims_clips_and_reports(recs, tmp_path, capsys):
    rec = _copy(recs[0], tmp_path)
    rows = [(0, 5, "ST"), (4, 8, "WF"), (18, 30, "TL"), (8, 9, "XYZ")]
    assert walkerlab(["labels", "import", rec, _csv(tmp_path, rows), "--annotator", "bo",
                      "--lenient"]) == 0
    err = capsys.readouterr().err
    # each line says what was done to it: one overlap trimmed, one segment clipped,
    # one unknown code kept
    assert err.count("trimmed (the later segment wins where they overlap): line 3") == 1
    assert err.count("clipped to the recording: line 4") == 1
    assert err.count("kept the unknown code: line 5") == 1
    assert err.count("\n") == 3
    segs = open_recording(rec).labels["bo"].segments()
    end = float(open_recording(rec).time_s.max())
    assert [c for _, _, c in segs] == ["ST", "WF", "XYZ", "TL"]
    assert segs[0][1] == pytest.approx(4.0) and segs[-1][1] <= end + 0.02 + 1e-9
    assert all(b <= a2 for (_, b, _), (a2, _, _) in zip(segs, segs[1:]))  # no overlap


def test_the_same_recording_twice_is_refused(recs, tmp_path, capsys):
    copy = _copy(recs[0], tmp_path, "copy.h5")
    for argv in (["train", "--quiet", "--out", str(tmp_path / "m.npz"), recs[0], recs[0]],
                 ["evaluate", "--quiet", "--scheduler", "serial", recs[0], recs[1], copy],
                 ["evaluate", "--quiet", "--scheduler", "local", recs[0], copy]):
        assert walkerlab(argv) == 2
        err = capsys.readouterr().err
        assert "twice" in err or "same session" in err, err


def test_different_label_sets_need_a_label_map(recs, tmp_path, capsys):
    from host.recording import LabelTrack
    from host.recording.labels import save_tracks

    other = _copy(recs[1], tmp_path, "other.h5")
    r = open_recording(other)
    renamed = [(a, b, {"WF": "WALK", "ST": "STAND"}.get(c, c))
               for a, b, c in r.labels["simulator"].segments()]
    save_tracks(other, [LabelTrack.from_segments("alice", renamed, annotator="alice",
                                                 source="human")])
    out = tmp_path / "m.npz"
    assert walkerlab(["train", "--quiet", "--out", str(out), recs[0], other]) == 2
    assert "different label sets" in capsys.readouterr().err
    label_map = tmp_path / "map.json"
    label_map.write_text(json.dumps({"WALK": "WF", "STAND": "ST"}))
    assert walkerlab(["train", "--quiet", "--out", str(out), recs[0], other,
                      "--label-map", str(label_map)]) == 0
    from host.models import load_model
    model = load_model(out)
    assert "WALK" not in model.classes_ and "WF" in model.classes_
    assert model.metadata_["label_map"] == {"WALK": "WF", "STAND": "ST"}
    assert walkerlab(["evaluate", "--quiet", "--scheduler", "serial", recs[0], other,
                      "--label-map", str(label_map), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["models"][0]
    assert "WALK" not in result["classes"]
