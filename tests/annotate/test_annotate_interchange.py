"""ELAN .eaf and CSV: round trips to the sample, EAF 3.0 structure, bad files."""
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import pytest

from host.annotate.interchange import (
    export_labels, import_csv, import_eaf, import_labels,
)
from host.annotate.labels import SampleGrid
from host.cli import main
from host.errors import UserError
from host.recording import LabelTrack, open_recording
from host.recording import layout as Lay
from host.recording.labels import (
    ANCHOR_DTYPE, STAGING, LabelFormatError, SyncRecord, read_tracks, save_tracks,
    write_sync,
)


def tmp_path_of(path):
    import pathlib
    return pathlib.Path(path).parent


@pytest.fixture
def labelled(session_files):
    """The session with two human tracks on sample boundaries and a synced video."""
    path, video, clock = session_files
    rec = open_recording(path)
    t = rec.time_s
    rng = np.random.default_rng(0)
    tracks = []
    for name in ("alice", "bob"):
        cuts = np.sort(rng.choice(len(t), 40, replace=False))
        segs = [(float(t[a]), float(t[b]), str(rng.choice(["ST", "WF", "TL", "TR"])))
                for a, b in zip(cuts[:-1:2], cuts[1::2])]
        tracks.append(LabelTrack.from_segments(name, segs, annotator=name))
    save_tracks(path, tracks)
    write_sync(path, SyncRecord("rear.mp4", video, np.zeros(0, ANCHOR_DTYPE), clock.a,
                                clock.b, 0.0))
    return path, video, clock, {tr.name: tr.segments() for tr in tracks}


def test_csv_round_trip_is_exact(labelled, tmp_path):
    path, _, _, segs = labelled
    out = tmp_path / "l.csv"
    assert export_labels(path, "csv", out) == sum(len(s) for s in segs.values()) + \
        len(read_tracks(path)["simulator"])
    for name in ("alice", "bob"):
        assert import_csv(out, name) == segs[name]
    import_labels(path, out, "carol", track="alice")
    assert read_tracks(path)["carol"].segments() == segs["alice"]


def test_eaf_round_trip_preserves_every_segment_to_the_sample(labelled, tmp_path):
    path, _, _, segs = labelled
    out = tmp_path / "l.eaf"
    export_labels(path, "eaf", out, ["alice", "bob"])
    tiers = import_eaf(out)
    grid = SampleGrid(open_recording(path).time_s)
    for name in ("alice", "bob"):
        assert grid.snap_segments(tiers[name]) == segs[name]
    name, n = import_labels(path, out, "dave", track="bob")
    assert read_tracks(path)[name].segments() == segs["bob"]


def test_eaf_has_elan_3_structure_and_links_the_media_aligned(labelled, tmp_path):
    path, video, clock, segs = labelled
    out = tmp_path / "sub" / "l.eaf"
    out.parent.mkdir()
    export_labels(path, "eaf", out)
    root = ET.parse(out).getroot()
    assert root.tag == "ANNOTATION_DOCUMENT"
    for attr in ("AUTHOR", "DATE", "FORMAT", "VERSION"):
        assert attr in root.attrib
    assert root.get("FORMAT") == "3.0" and root.get("VERSION") == "3.0"
    assert root.get("{http://www.w3.org/2001/XMLSchema-instance}noNamespaceSchemaLocation") \
        == "http://www.mpi.nl/tools/elan/EAFv3.0.xsd"
    # Children in the order of the EAF 3.0 schema.
    order = ["HEADER", "TIME_ORDER", "TIER", "LINGUISTIC_TYPE", "LOCALE", "LANGUAGE",
             "CONSTRAINT", "CONTROLLED_VOCABULARY", "LEXICON_REF", "EXTERNAL_REF"]
    tags = [c.tag for c in root]
    assert tags[0] == "HEADER" and tags[1] == "TIME_ORDER"
    assert [order.index(t) for t in tags] == sorted(order.index(t) for t in tags)
    header = root.find("HEADER")
    assert header.get("TIME_UNITS") == "milliseconds"
    media = header.findall("MEDIA_DESCRIPTOR")
    assert len(media) == 1
    m = media[0]
    assert m.get("MEDIA_URL").startswith("file:///") and m.get("MEDIA_URL").endswith("rear.mp4")
    assert m.get("MIME_TYPE") == "video/mp4"
    assert int(m.get("TIME_ORIGIN")) == round(-clock.b / clock.a * 1000)  # 1499 ms
    assert m.get("RELATIVE_MEDIA_URL").startswith("./")
    assert [c.tag for c in header][:1] == ["MEDIA_DESCRIPTOR"]  # descriptors first
    slots = {s.get("TIME_SLOT_ID"): int(s.get("TIME_VALUE"))
             for s in root.find("TIME_ORDER").findall("TIME_SLOT")}
    values = list(slots.values())
    assert values == sorted(values) and all(v >= 0 for v in values)
    types = {lt.get("LINGUISTIC_TYPE_ID"): lt for lt in root.findall("LINGUISTIC_TYPE")}
    ids = set()
    tiers = root.findall("TIER")
    assert {t.get("TIER_ID") for t in tiers} == {"alice", "bob", "simulator"}
    for tier in tiers:
        lt = types[tier.get("LINGUISTIC_TYPE_REF")]
        assert lt.get("TIME_ALIGNABLE") == "true"
        for ann in tier.findall("ANNOTATION"):
            (al,) = list(ann)
            assert al.tag == "ALIGNABLE_ANNOTATION"
            assert slots[al.get("TIME_SLOT_REF1")] < slots[al.get("TIME_SLOT_REF2")]
            assert al.find("ANNOTATION_VALUE").text
            ids.add(al.get("ANNOTATION_ID"))
    assert len(ids) == sum(len(t.findall("ANNOTATION")) for t in tiers)
    last = [p for p in header.findall("PROPERTY") if p.get("NAME") == "lastUsedAnnotationId"]
    assert int(last[0].text) == len(ids)
    stereotypes = {c.get("STEREOTYPE") for c in root.findall("CONSTRAINT")}
    assert stereotypes == {"Time_Subdivision", "Symbolic_Subdivision",
                           "Symbolic_Association", "Included_In"}


@pytest.mark.parametrize("content, message", [
    ("a,b,c\n1,2,3\n", "header lacks start_s, stop_s, activity"),
    ("start_s,stop_s,activity\n1,x,WF\n", "line 2: expected numbers"),
    ("start_s,stop_s,activity\n2,1,WF\n", "line 2: stop_s must be after start_s"),
    ("start_s,stop_s,activity\n1,2,\n", "line 2: empty activity"),
    ("", "empty file"),
])
def test_foreign_csv_files_give_a_clear_error(tmp_path, content, message):
    f = tmp_path / "x.csv"
    f.write_text(content)
    with pytest.raises(UserError, match=message):
        import_csv(f)


def test_several_tracks_need_a_choice(tmp_path, labelled):
    path, *_ = labelled
    out = tmp_path / "l.csv"
    export_labels(path, "csv", out)
    with pytest.raises(UserError, match="several tracks"):
        import_csv(out)
    with pytest.raises(UserError, match="already has a label track 'alice'"):
        import_labels(path, out, "alice", track="bob")


def test_corrupt_or_foreign_label_tracks_in_the_recording_give_a_clear_error(
        session_files, capsys):
    path, _, _ = session_files
    with h5py.File(path, "r+") as f:
        f.create_dataset(Lay.ANNOTATIONS + "/weird", data=np.arange(5.0))
    with pytest.raises(LabelFormatError, match="'weird' is not a WalkerLab label table"):
        read_tracks(path)
    with h5py.File(path, "r+") as f:
        del f[Lay.ANNOTATIONS + "/weird"]
        dt = np.dtype([("start_s", "<f8"), ("stop_s", "<f8"), ("activity", "S4")])
        f.create_dataset(Lay.ANNOTATIONS + "/bad", data=np.array([(2.0, 1.0, b"WF")], dt))
    with pytest.raises(LabelFormatError, match="'bad' is damaged.*stop_s <= start_s"):
        read_tracks(path)
    shot = str(tmp_path_of(path) / "x.png")
    assert main(["annotate", path, "--screenshot", shot]) == 2  # the window never opens
    err = capsys.readouterr().err
    assert "'bad' is damaged" in err and "Traceback" not in err


def test_an_interrupted_save_is_completed_and_raw_data_never_changes(session_files):
    path, _, _ = session_files
    save_tracks(path, [LabelTrack.from_segments("eve", [(0.0, 1.0, "ST")])])
    # A crash between deleting the old track and moving the new one in:
    with h5py.File(path, "r+") as f:
        f.require_group(STAGING)
        f.copy(f[Lay.ANNOTATIONS + "/eve"], f[STAGING], name="eve")
        f[STAGING + "/eve"][0] = (0.0, 2.0, "WF")
        del f[Lay.ANNOTATIONS + "/eve"]
    assert "eve" not in open_recording(path).labels  # staged: invisible, not lost
    save_tracks(path, [])  # the next save completes the move
    assert read_tracks(path)["eve"].segments() == [(0.0, 2.0, "WF")]


def test_cli_export_and_import(labelled, tmp_path, capsys):
    path, *_ = labelled
    out = tmp_path / "l.csv"
    assert main(["labels", "export", path, "--format", "csv", "--out", str(out),
                 "--track", "alice"]) == 0
    assert main(["labels", "export", path, "--format", "csv", "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["labels", "import", path, str(out), "--annotator", "zoe"]) == 0
    assert read_tracks(path)["zoe"].segments() == read_tracks(path)["alice"].segments()
    assert main(["labels", "export", path, "--format", "eaf", "--out",
                 str(tmp_path / "a.eaf"), "--track", "nope"]) == 2
    assert "no label track 'nope'" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("time,label\n1,WF\n")
    assert main(["labels", "import", path, str(bad), "--annotator", "x"]) == 2
    err = capsys.readouterr().err
    assert "not a label CSV" in err and "Traceback" not in err
