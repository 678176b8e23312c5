"""`walkerlab export` tables, and recordings/README's h5py recipe gives the same units."""
import csv
import pathlib
import re

import numpy as np
import pytest

from host.cli import main as walkerlab
from host.export import recording_table
from host.features import FeatureExtractor
from host.recording import open_recording
from host.replay import recording_calibration
from host.simulate import simulate_to_files

README = pathlib.Path(__file__).resolve().parents[2] / "recordings" / "README.md"


@pytest.fixture(scope="module")
def rec(tmp_path_factory):
    d = tmp_path_factory.mktemp("export")
    return str(simulate_to_files("exp2", 1, 7, d, duration_s=20, progress=False)[0])


def test_the_recording_stores_the_calibration_it_was_recorded_with(rec):
    r = open_recording(rec)
    cal = r.calibration
    assert cal["walker_id"] == r.attrs["walker_id"]
    assert any(abs(o) > 100 for o in cal["load_offsets_counts"])  # real offsets
    import h5py
    with h5py.File(rec) as f:
        loads = f["acquisition/samples/loads"]
        np.testing.assert_array_equal(loads.attrs["channel_offset_counts"],
                                      cal["load_offsets_counts"])
        assert loads.attrs["calibration_walker_id"] == cal["walker_id"]


def test_readme_recipe_gives_the_newtons_and_m_s2_of_the_features_and_export(rec, capsys):
    section = README.read_text().split("## Reading a file with plain h5py", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    scope: dict = {}
    exec(compile(code.replace('"session.h5"', repr(rec)), "README", "exec"), scope)
    capsys.readouterr()
    r = open_recording(rec)
    fx = FeatureExtractor(recording_calibration(r), "cop")
    np.testing.assert_array_equal(scope["loads_n"], fx.loads_newton(r.samples))
    np.testing.assert_array_equal(scope["accel"], fx.accel_mps2(r.samples))
    table = recording_table(rec)
    np.testing.assert_array_equal(scope["loads_n"][:, 1], table["load_FL_n"])
    np.testing.assert_array_equal(scope["accel"][:, 2], table["accel_z_mps2"])
    # The nominal conversion alone (the old recipe) is off by the offsets: 8-30 N.
    import h5py
    with h5py.File(rec) as f:
        naive = f["acquisition/samples/loads"][:] * f["acquisition/samples/loads"].attrs[
            "conversion"]
    assert np.abs(naive - scope["loads_n"]).max() > 5


@pytest.mark.parametrize("fmt", ["csv", "parquet", "mat"])
def test_export_round_trips_with_labels_as_a_column(rec, tmp_path, fmt, capsys):
    out = tmp_path / ("x." + fmt)
    assert walkerlab(["export", rec, "--format", fmt, "--out", str(out)]) == 0
    want = recording_table(rec)
    if fmt == "csv":
        with open(out, newline="") as fh:
            rows = list(csv.reader(fh))
        header, body = rows[0], rows[1:]
        got = {name: [r[i] for r in body] for i, name in enumerate(header)}
        np.testing.assert_array_equal(
            np.array([float(v) if v else np.nan for v in got["load_RR_n"]]),
            want["load_RR_n"])
    elif fmt == "parquet":
        import pyarrow.parquet as pq
        got = {k: np.asarray(v) for k, v in pq.read_table(out).to_pydict().items()}
        np.testing.assert_array_equal(got["load_RR_n"], want["load_RR_n"])
    else:
        from scipy.io import loadmat
        m = loadmat(out)
        got = {k: v.ravel() for k, v in m.items() if not k.startswith("__")}
        got["label_simulator"] = [str(np.ravel(x)[0]) if np.size(x) else ""
                                  for x in got["label_simulator"]]
        np.testing.assert_array_equal(got["load_RR_n"], want["load_RR_n"])
    assert list(got["label_simulator"]) == want["label_simulator"].tolist()
    assert set(want["label_simulator"].tolist()) >= {"WF", "ST"}
    capsys.readouterr()
    assert walkerlab(["export", rec, "--format", fmt, "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert walkerlab(["export", rec, "--format", fmt, "--out", str(out), "--track",
                      "nobody", "--overwrite"]) == 2
    assert "no label track 'nobody'" in capsys.readouterr().err
