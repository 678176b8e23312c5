"""A corpus of hostile files: what a reader of files from outside must survive.

Each maker writes one file into a folder and returns its path. The corpus covers
recordings (truncated at every section, wrong dtypes, huge declared shapes, missing or
misplaced groups, wrong attribute types, compression bombs, non-HDF5 bytes with an .h5
name), model files (zip bombs, huge declared shapes, pickled objects, bad headers),
calibration JSON, label CSV and ELAN .eaf files (including an XML entity bomb) and
videos. Every file is under 10 MB.
"""
from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "recordings" / "samples" / "exp1-run1_subject001.h5"
MODEL_SAMPLE_KIND = "hmm"


# ---- recordings ------------------------------------------------------------------------
def _copy(folder: Path, name: str) -> Path:
    out = folder / name
    shutil.copyfile(SAMPLE, out)
    return out


def _edit(folder: Path, name: str, edit) -> Path:
    out = _copy(folder, name)
    with h5py.File(out, "r+") as f:
        edit(f)
    return out


def _replace(f: h5py.File, path: str, **create) -> None:
    del f[path]
    f.create_dataset(path, **create)


def recordings(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    data = SAMPLE.read_bytes()
    for frac in (0.0005, 0.002, 0.01, 0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 0.9999):
        p = folder / ("truncated-%g.h5" % frac)
        p.write_bytes(data[:max(1, int(len(data) * frac))])
        out.append(p)
    for name, blob in (("empty.h5", b""), ("text.h5", b"start_s,stop_s,activity\n"),
                       ("random.h5", np.random.default_rng(0).bytes(50_000)),
                       ("hdf5-magic-only.h5", b"\x89HDF\r\n\x1a\n" + b"\0" * 100)):
        (folder / name).write_bytes(blob)
        out.append(folder / name)
    S = "acquisition/samples/"
    edits = {
        "loads-float-strings.h5": lambda f: _replace(f, S + "loads", data=np.array(
            [["x"] * 4] * f[S + "seq"].shape[0], dtype="S8")),
        "seq-is-a-group.h5": lambda f: (f.__delitem__(S + "seq"), f.create_group(S + "seq")),
        "timestamps-2d.h5": lambda f: _replace(f, S + "timestamps", data=np.zeros((5, 5, 5))),
        "samples-missing.h5": lambda f: f.__delitem__("acquisition/samples"),
        "acquisition-missing.h5": lambda f: f.__delitem__("acquisition"),
        "samples-is-a-dataset.h5": lambda f: (f.__delitem__("acquisition/samples"),
                                              f.create_dataset("acquisition/samples",
                                                               data=[1, 2, 3])),
        # 10^12 rows declared, none written: reading would allocate 8 TB
        "huge-declared-shape.h5": lambda f: _replace(
            f, S + "t_us", shape=(10**12,), dtype="<i8", chunks=(1 << 16,),
            maxshape=(None,)),
        # 400 MB of zeros, gzip-compressed to a few hundred KB
        "compression-bomb.h5": lambda f: _replace(
            f, S + "timestamps", shape=(50_000_000,), dtype="<f8", chunks=(1 << 20,),
            compression="gzip", compression_opts=9, fillvalue=0.0,
            data=None) or f[S + "timestamps"].__setitem__(slice(0, 1 << 20), 1.0),
        "info-wrong-fields.h5": lambda f: _replace(f, "acquisition/info",
                                                   data=np.arange(10.0)),
        "log-is-a-group.h5": lambda f: (f.__delitem__("acquisition/log"),
                                        f.create_group("acquisition/log")),
        "track-wrong-fields.h5": lambda f: f.create_dataset(
            "annotations/bad", data=np.zeros(3, dtype=[("a", "<i4"), ("b", "<i4")])),
        "track-huge-shape.h5": lambda f: f.create_dataset(
            "annotations/huge", shape=(10**11,), chunks=(1 << 12,),
            dtype=[("start_s", "<f8"), ("stop_s", "<f8"), ("activity", "S4")]),
        "track-nan-times.h5": lambda f: f.create_dataset(
            "annotations/nan", data=np.array([(np.nan, 1.0, b"W")], dtype=[
                ("start_s", "<f8"), ("stop_s", "<f8"), ("activity", "S4")])),
        "annotations-is-a-dataset.h5": lambda f: (f.__delitem__("annotations"),
                                                  f.create_dataset("annotations", data=[1])),
        "sync-garbage.h5": lambda f: f.create_dataset("annotations/_sync/v.mp4",
                                                      data=np.arange(4.0)),
        "chunks-wrong-dtype.h5": lambda f: _replace(f, "acquisition/serial/chunks",
                                                    data=np.array([b"abc"])),
        "bytes-huge-shape.h5": lambda f: _replace(
            f, "acquisition/serial/bytes", shape=(10**13,), dtype="u1", chunks=(1 << 20,),
            maxshape=(None,)),
        "attr-closed-cleanly-text.h5": lambda f: f.attrs.__setitem__("closed_cleanly",
                                                                     "yes"),
        "attr-calibration-not-json.h5": lambda f: f.attrs.__setitem__("calibration",
                                                                      "{not json"),
        "attr-calibration-wrong-types.h5": lambda f: f.attrs.__setitem__(
            "calibration", json.dumps({"format": "walkerlab-calibration", "version": 1,
                                       "load_gains_counts_per_n": "heavy"})),
        "attr-format-version-int.h5": lambda f: f.attrs.__setitem__("format_version", 7),
        "attr-format-bytes.h5": lambda f: f.attrs.__setitem__("format", np.arange(3)),
        "counters-text.h5": lambda f: f["events/decoder"].attrs.__setitem__("frames_ok",
                                                                            "many"),
        "columns-unequal.h5": lambda f: (f[S + "loads"].resize((10, 4))),
    }
    for name, edit in edits.items():
        out.append(_edit(folder, name, edit))
    return out


# ---- model files -------------------------------------------------------------------------
def with_model_header(blob: bytes, edit) -> bytes:
    """A model file's bytes with its JSON header replaced by edit(header text)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(blob)) as src, zipfile.ZipFile(out, "w") as z:
        for name in src.namelist():
            data = src.read(name)
            if name.startswith("__header__"):
                text = edit(np.load(io.BytesIO(data)).tobytes().decode())
                buf = io.BytesIO()
                np.save(buf, np.frombuffer(text.encode("utf-8", "surrogatepass"),
                                           dtype=np.uint8))
                data = buf.getvalue()
            z.writestr(name, data)
    return out.getvalue()


def tiny_model(path: Path, rng) -> Path:
    """A valid model file: an "hmm" recognizer fitted on 400 random frames."""
    import recognizers.hmm  # noqa: F401 - registers the "hmm" kind
    from recognizers.base import RECOGNIZERS

    X = rng.normal(size=(400, 3))
    y = np.repeat(np.array(["W", "ST"]), 200)
    RECOGNIZERS["hmm"]().fit(X, y).save(path)
    return path



def _npy_header(shape, descr="<f8") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False,
                                              "shape": shape})
    return buf.getvalue()


def models(folder: Path, real_model: Path) -> list[Path]:
    """Hostile .npz model files; `real_model` is a valid model file to damage."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    good = real_model.read_bytes()
    for frac in (0.01, 0.3, 0.7, 0.99):
        p = folder / ("model-truncated-%g.npz" % frac)
        p.write_bytes(good[:int(len(good) * frac)])
        out.append(p)
    (folder / "model-random.npz").write_bytes(np.random.default_rng(1).bytes(20_000))
    out.append(folder / "model-random.npz")
    # A zip bomb: a member of 2 GB of zeros compressed to about 2 MB.
    p = folder / "model-zip-bomb.npz"
    with zipfile.ZipFile(real_model) as src, zipfile.ZipFile(p, "w",
                                                             zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            z.writestr(info.filename, src.read(info.filename))
        with z.open("bomb.npy", "w", force_zip64=True) as fh:
            fh.write(_npy_header((2 * 1024**3,), "|u1"))
            zeros = bytes(1 << 24)
            for _ in range(128):
                fh.write(zeros)
    out.append(p)
    # Huge declared shape, tiny data.
    p = folder / "model-huge-shape.npz"
    with zipfile.ZipFile(real_model) as src, zipfile.ZipFile(p, "w") as z:
        for info in src.infolist():
            z.writestr(info.filename, src.read(info.filename))
        z.writestr("huge.npy", _npy_header((10**12,)) + bytes(64))
    out.append(p)
    # An object array (a pickle inside the npy).
    p = folder / "model-pickle.npz"
    with zipfile.ZipFile(real_model) as src, zipfile.ZipFile(p, "w") as z:
        for info in src.infolist():
            z.writestr(info.filename, src.read(info.filename))
        buf = io.BytesIO()
        np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        z.writestr("obj.npy", buf.getvalue())
    out.append(p)
    # Header that is not JSON, and a header that is JSON of the wrong shape.
    headers = [("model-header-garbage.npz", b"\xff\xfe not json"),
               ("model-header-list.npz", b"[1, 2, 3]"),
               ("model-header-wrong-types.npz", json.dumps(
                   {"format": "walkerlab-model", "format_version": "one",
                    "kind": 5}).encode())]
    # The real header with one field made hostile (issue 35): deep nesting, NaN, lists
    # where numbers belong, a number where a name belongs, a 400-digit integer.
    with zipfile.ZipFile(real_model) as src:
        member = next(n for n in src.namelist() if n.startswith("__header__"))
        real = json.loads(np.load(io.BytesIO(src.read(member))).tobytes())
    for field, value in (("metadata", "NaN"), ("n_features_in", "[7]"),
                         ("sample_rate_hz", "[50, 100]"), ("feature_set", "1"),
                         ("params", "[[[" * 5000 + "]]]" * 5000),
                         ("metadata", "[" * 5000 + "]" * 5000),
                         ("n_features_in", "1" + "0" * 400),
                         ("sample_rate_hz", "1" + "0" * 400), ("sample_rate_hz", "-50"),
                         ("time_constants_s", "7")):
        text = json.dumps({**real, field: "@@"}).replace('"@@"', value)
        headers.append(("model-header-%s-%d.npz" % (field, len(headers)), text.encode()))
    headers.append(("model-header-deep.npz", b"[" * 5000 + b"]" * 5000))
    for name, header in headers:
        p = folder / name
        with zipfile.ZipFile(real_model) as src, zipfile.ZipFile(p, "w") as z:
            for info in src.infolist():
                if info.filename.startswith("__header__") or info.filename.startswith(
                        "header"):
                    buf = io.BytesIO()
                    np.save(buf, np.frombuffer(header, dtype=np.uint8))
                    z.writestr(info.filename, buf.getvalue())
                else:
                    z.writestr(info.filename, src.read(info.filename))
        out.append(p)
    return out


# ---- calibration, labels, EAF, video -----------------------------------------------------
def small_files(folder: Path) -> dict[str, list[Path]]:
    folder.mkdir(parents=True, exist_ok=True)

    def write(name, blob):
        p = folder / name
        p.write_bytes(blob if isinstance(blob, bytes) else blob.encode())
        return p

    calibrations = [
        write("cal-not-json.json", "{{{"),
        write("cal-list.json", "[1, 2]"),
        write("cal-deep.json", "[" * 100_000 + "]" * 100_000),
        write("cal-wrong-types.json", json.dumps(
            {"format": "walkerlab-calibration", "version": 1, "walker_id": 5,
             "load_offsets_counts": "zero", "load_gains_counts_per_n": [1, 2]})),
        write("cal-nan.json", '{"format": "walkerlab-calibration", "version": 1, '
              '"load_gains_counts_per_n": [NaN, 1, 1, 1]}'),
        write("cal-binary.json", np.random.default_rng(2).bytes(4096)),
    ]
    # A valid calibration with one number made hostile (issue 35): 400 and 5000 digits.
    from calibration import WalkerCalibration

    good = WalkerCalibration().to_dict()
    for i, (field, value) in enumerate((
            ("load_gains_counts_per_n", "[1%s, 1, 1, 1]" % ("0" * 400)),
            ("wheelbase_m", "1" + "0" * 400), ("encoder_ticks_per_rev", "1" + "0" * 400),
            ("accel_counts_per_g", "[1e999, 1, 1]"), ("front_half_width_m", "1" * 5000),
            ("load_offsets_counts", "[true, 0, 0, 0]"))):
        text = json.dumps({**good, field: "@@"}).replace('"@@"', value)
        calibrations.append(write("cal-hostile-%d-%s.json" % (i, field), text))
    csvs = [
        write("labels-binary.csv", np.random.default_rng(3).bytes(4096)),
        write("labels-no-header.csv", "1,2,W\n"),
        write("labels-nan.csv", "start_s,stop_s,activity\nnan,1,W\n"),
        write("labels-inf.csv", "start_s,stop_s,activity\n0,inf,W\n"),
        write("labels-huge-field.csv", "start_s,stop_s,activity\n0,1," + "W" * 5_000_000
              + "\n"),
        write("labels-short-rows.csv", "start_s,stop_s,activity\n0\n"),
        write("labels-empty.csv", ""),
    ]
    eafs = [
        write("bomb.eaf", '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
              + "".join('<!ENTITY lol%d "%s">' % (i, ("&lol%d;" % (i - 1) if i else "&lol;")
                                                   * 10) for i in range(10))
              + ']>\n<ANNOTATION_DOCUMENT>&lol9;</ANNOTATION_DOCUMENT>'),
        write("not-xml.eaf", "hello"),
        write("wrong-root.eaf", "<html></html>"),
        write("bad-times.eaf", '<ANNOTATION_DOCUMENT><TIME_ORDER><TIME_SLOT TIME_SLOT_ID="a" '
              'TIME_VALUE="soon"/></TIME_ORDER></ANNOTATION_DOCUMENT>'),
        write("external-entity.eaf", '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM '
              '"file:///etc/passwd">]><ANNOTATION_DOCUMENT>&x;</ANNOTATION_DOCUMENT>'),
    ]
    videos = [write("video-random.mp4", np.random.default_rng(4).bytes(100_000)),
              write("video-empty.mp4", b""),
              write("video-text.mp4", "not a video")]
    return {"calibration": calibrations, "csv": csvs, "eaf": eafs, "video": videos}
