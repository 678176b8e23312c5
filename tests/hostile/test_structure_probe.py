"""A damaged size field makes libhdf5 allocate gigabytes: files from outside are probed
in a child process under a memory limit (host/recording/structure_probe.py)."""
from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from host.recording import layout as L
from host.recording import open_recording, recover
from host.recording.reader import RecordingFormatError
from host.recording import structure_probe
from host.recording.structure_probe import probe_structure, probe_structures

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "recordings" / "samples" / "exp1-run1_subject001.h5"
HUGE = 0x50000000  # 1.25 GB: what the damaged string says it holds
OTHER_SESSION = ROOT / "recordings" / "samples" / "exp2_subject101.h5"


def damage_a_string(path: Path, table: str, dtype: np.dtype, field: str) -> None:
    """Rewrite ``table`` with three strings and make the last one claim HUGE bytes.

    A string in a table is stored as (length u32, global heap collection address u64,
    index u32); the table's strings go into the newest heap collection, so its "ccc"
    (length 3) is the one entry of length 3 pointing there."""
    with h5py.File(path, "r+") as f:
        if table in f:
            del f[table]
        rows = np.zeros(3, dtype=dtype)
        rows[field] = ["a", "bb", "ccc"]
        f.create_dataset(table, data=rows)
    blob = bytearray(path.read_bytes())
    newest = [m.start() for m in re.finditer(b"GCOL", blob)][-1]
    refs = [m.start() for m in re.finditer(re.escape(struct.pack("<IQ", 3, newest)), blob)]
    assert len(refs) == 1
    struct.pack_into("<I", blob, refs[0], HUGE)
    path.write_bytes(bytes(blob))


def hostile_recording(path: Path) -> Path:
    """The sample recording with one string of /acquisition/log claiming HUGE bytes:
    the fuzzer's case (file 66, seed 1), where reading it made libhdf5 allocate 1.3 GB."""
    shutil.copy(SAMPLE, path)
    damage_a_string(path, L.LOG, L.LOG_DTYPE, "text")
    return path


# A child's own peak RSS, for the code strings below: VmHWM, not ru_maxrss, which in a
# process that pytest started begins at pytest's own peak (Linux keeps it across exec),
# and a full run makes that large.
OWN_PEAK_KB = ("def own_peak_kb():\n"
               "    with open('/proc/self/status') as f:\n"
               "        return int([l for l in f if l.startswith('VmHWM')][0].split()[1])\n")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    return hostile_recording(tmp_path_factory.mktemp("probe") / "hostile.h5")


def test_the_probe_names_the_object_that_needs_more_than_the_limit(hostile):
    result = probe_structure(hostile, limit_bytes=structure_probe.probe_limit(hostile))
    assert result.too_big == [L.LOG] and result.failed is None and not result.ok
    assert result.unreadable(L.LOG) and not result.unreadable(L.SERIAL_BYTES)
    clean = probe_structure(SAMPLE)
    assert clean.ok and not clean.unreadable("/")


def test_one_child_probes_file_by_file_and_is_replaced_after_a_damaged_one(hostile):
    results = probe_structures([SAMPLE, hostile, hostile.with_name("missing.h5"), hostile,
                                SAMPLE], limit_bytes=256 * 1024**2)
    assert [r.ok for r in results] == [True, False, True, False, True]
    assert results[1].too_big == results[3].too_big == [L.LOG]


def test_open_untrusted_is_one_line_and_no_process_grows(hostile, tmp_path):
    """In a fresh interpreter, so that its own and its children's peak RSS are the
    probe's and the parent's alone (not the test session's)."""
    code = OWN_PEAK_KB + (
        "import json, resource, sys\n"
        "from host.recording import open_recording\n"
        "ru = resource.getrusage\n"
        "before_kb = own_peak_kb()\n"
        "try:\n"
        "    open_recording(sys.argv[1], untrusted=True)\n"
        "    msg = None\n"
        "except Exception as exc:\n"
        "    msg = '%s: %s' % (type(exc).__name__, exc)\n"
        "print(json.dumps({'msg': msg,\n"
        "                  'self_kb': own_peak_kb() - before_kb,\n"
        "                  'children_kb': ru(resource.RUSAGE_CHILDREN).ru_maxrss}))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(hostile)], capture_output=True,
                          text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT),
                                                   "PATH": "/usr/bin:/bin"}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["msg"].startswith("RecordingFormatError: cannot read %s: reading its "
                                 "structure (%s) needed more than" % (hostile, L.LOG))
    assert "\n" not in out["msg"] and "damaged" in out["msg"]
    # Reading the string in-process would take HUGE bytes; neither process came near.
    # (The parent's figure is its growth during the open: what importing the stack
    # costs depends on the caches a run has warmed, and is not the probe's business.)
    limit_kb = structure_probe.probe_limit(hostile) // 1024
    assert out["children_kb"] < limit_kb
    assert out["self_kb"] < HUGE // 1024 // 2


def test_walkerlab_replay_of_the_file_is_one_line_and_exit_2(hostile, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "host.cli", "replay", str(hostile)],
                          capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot read %s" % hostile in lines[0]


def test_recover_salvages_around_the_damaged_object(hostile, tmp_path):
    before = hostile.read_bytes()
    with pytest.raises(RecordingFormatError, match="--out NEW.h5") as info:
        recover(hostile)  # in place: refused, the file is kept as it is
    assert "\n" not in str(info.value)
    assert hostile.read_bytes() == before
    out = tmp_path / "recovered.h5"
    report = recover(hostile, out)
    assert hostile.read_bytes() == before
    # The log is derived (rebuilt from the raw log), so nothing is lost.
    assert report.left_out == []
    original, recovered = open_recording(SAMPLE), open_recording(out)
    assert len(recovered.time_s) == len(original.time_s) > 0
    np.testing.assert_array_equal(recovered.samples.loads, original.samples.loads)
    assert recovered.raw_bytes() == original.raw_bytes()
    assert recovered.attrs["subject_id"] == original.attrs["subject_id"]


def test_recover_leaves_out_a_damaged_label_track(tmp_path):
    """A label track is not derived: it is left out (and said so), the rest kept."""
    path = tmp_path / "track.h5"
    shutil.copy(SAMPLE, path)
    damage_a_string(path, L.ANNOTATIONS + "/alice", L.LABEL_DTYPE, "activity")
    report = recover(path, tmp_path / "out.h5")
    assert report.left_out == [L.ANNOTATIONS + "/alice"]
    rec, original = open_recording(tmp_path / "out.h5"), open_recording(SAMPLE)
    assert "alice" not in rec.labels and set(rec.labels) == set(original.labels)
    assert len(rec.time_s) == len(original.time_s)


def test_a_child_that_does_not_finish_is_reported_as_hung(monkeypatch, hostile):
    monkeypatch.setattr(structure_probe, "PROBE_TIMEOUT_S", 1e-3)
    result = probe_structures([hostile], limit_bytes=1 << 30)[0]
    assert result.failed == "/" and result.why == "hung"
    assert "did not finish" in result.message(hostile)


@pytest.mark.parametrize("argv", [
    ["train", "--quiet", "--scheduler", "serial", "--out", "{tmp}/model.npz", "{other}",
     "{hostile}"],
    ["evaluate", "--quiet", "--scheduler", "local", "--workers", "1", "{other}",
     "{hostile}"],  # the Dask path
    ["topics", "fit", "--quiet", "--out", "{tmp}/model.npz", "{other}", "{hostile}"],
    ["latent", "fit", "--quiet", "--out", "{tmp}/model.npz", "{other}", "{hostile}"],
    ["discover", "--quiet", "--dry-run", "{hostile}"],
], ids=["train-serial", "evaluate-dask", "topics", "latent", "discover"])
def test_commands_on_many_recordings_refuse_the_file_in_one_line_and_exit_2(
        hostile, tmp_path, argv):
    """Training, evaluation and discovery probe the user's recordings too (train and
    evaluate in host.evaluate cache_recordings, before any worker reads them): one line
    naming the file, and neither the command nor the probe's child grows by what the
    damaged string says."""
    argv = [a.format(tmp=tmp_path, other=OTHER_SESSION, hostile=hostile) for a in argv]
    code = OWN_PEAK_KB + (
        "import resource, sys\n"
        "from host.cli import main\n"
        "try:\n"
        "    status = main(sys.argv[1:])\n"
        "except SystemExit as exc:\n"
        "    status = exc.code\n"
        "print('status', status, own_peak_kb(),\n"
        "      resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    proc = subprocess.run([sys.executable, "-c", code, *argv],
                          capture_output=True, text=True, cwd=ROOT, timeout=900,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "HOME": str(tmp_path),
                               "WALKERLAB_FEATURE_CACHE": str(tmp_path / "cache")})
    status, self_kb, children_kb = proc.stdout.split()[-3:]
    assert int(status) == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("walkerlab")
    assert "cannot read %s: reading its structure (%s)" % (hostile, L.LOG) in lines[0]
    assert int(self_kb) < HUGE // 1024 // 2 and int(children_kb) < HUGE // 1024 // 2
    assert not (tmp_path / "model.npz").exists()


def test_the_annotator_probes_the_file_it_opens(hostile):
    """`walkerlab annotate FILE` opens a file from outside: its structure is read in the
    probe's child first, so the damaged string is one line, not a 1.3 GB allocation."""
    from host.annotate.session import AnnotationSession

    with pytest.raises(RecordingFormatError) as info:
        AnnotationSession(hostile)
    message = str(info.value)
    assert "\n" not in message
    assert "cannot read %s: reading its structure (%s)" % (hostile, L.LOG) in message


# ---- what lies past a table's last row --------------------------------------------
def damage_past_the_last_row(path: Path, table: str, swmr: bool = False) -> None:
    """Overwrite the rest of ``table``'s one chunk, past its last row, with 0xA5 bytes:
    the strings there then claim 0xA5A5A5A5 bytes each (fuzz file 1669 of seed 1, an
    overwritten block). No read of the table's rows touches those bytes."""
    with h5py.File(path, "r", swmr=swmr) as f:
        ds = f[table]
        rows, (chunk_rows,) = ds.shape[0], ds.chunks
        assert 0 < rows < chunk_rows and ds.id.get_num_chunks() == 1
        info = ds.id.get_chunk_info(0)
    row_bytes = info.size // chunk_rows
    blob = bytearray(path.read_bytes())
    start = info.byte_offset + rows * row_bytes
    blob[start:info.byte_offset + info.size] = b"\xa5" * (info.size - rows * row_bytes)
    path.write_bytes(bytes(blob))


def crashed_recording(path: Path) -> Path:
    """The sample's raw log written by a RecordingWriter whose process died after a
    flush: SWMR, unsealed (recover in place seals it, copying every object, first)."""
    code = ("import os, sys\n"
            "from host.recording import RecordingWriter, open_recording\n"
            "raw = open_recording(sys.argv[2]).raw_bytes()\n"
            "w = RecordingWriter(sys.argv[1])\n"
            "for i in range(0, len(raw), 4096):\n"
            "    w.write_serial(raw[i:i + 4096], 1.7e9 + i / 1e4)\n"
            "w.flush()\n"
            "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", code, str(path), str(SAMPLE)], check=True,
                   cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                   timeout=600)
    with pytest.raises(OSError, match="already open for write"):
        h5py.File(path, "r").close()
    return path


@pytest.mark.parametrize("case", ["label track, recovered into NEW",
                                  "decoder events of a crashed writer, in place"])
def test_recover_reads_only_the_rows_a_table_holds(tmp_path, case):
    """Copying a table whose last chunk holds garbage past its last row: h5py's copy
    (H5Ocopy) converted the whole chunk's strings and allocated 1.9 GB in recover's own
    process; recover must stay within what the probe allows a structure read and keep
    every row."""
    path = tmp_path / "damaged.h5"
    if case.startswith("label"):
        shutil.copy(SAMPLE, path)
        table, out, original = L.ANNOTATIONS + "/simulator", tmp_path / "out.h5", SAMPLE
        damage_past_the_last_row(path, table)
    else:
        crashed_recording(path)
        shutil.copy(path, tmp_path / "undamaged.h5")
        recover(tmp_path / "undamaged.h5")
        table, out, original = L.DECODER_EVENTS, None, tmp_path / "undamaged.h5"
        damage_past_the_last_row(path, table, swmr=True)
    code = OWN_PEAK_KB + (
        "import json, sys\n"
        "from host.recording import recover\n"
        "before_kb = own_peak_kb()\n"
        "try:\n"
        "    recover(sys.argv[1], sys.argv[2] or None)\n"
        "    msg = None\n"
        "except Exception as exc:\n"
        "    msg = '%s: %s' % (type(exc).__name__, exc)\n"
        "print(json.dumps({'msg': msg, 'self_kb': own_peak_kb() - before_kb}))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(path), str(out or "")],
                          capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["self_kb"] < structure_probe.probe_limit(path) // 1024
    assert result["msg"] is None
    got, want = open_recording(out or path), open_recording(original)
    assert len(got.time_s) == len(want.time_s) > 0
    assert got.raw_bytes() == want.raw_bytes()
    assert got.labels.keys() == want.labels.keys()
    for name, track in want.labels.items():
        assert got.labels[name].segments() == track.segments()
    np.testing.assert_array_equal(got.decoder_events, want.decoder_events)
    np.testing.assert_array_equal(got.link_events, want.link_events)
