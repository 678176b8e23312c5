"""Back-compat fixtures open with their expected warnings; the README matches the code."""
import pathlib
import re
import warnings

import pytest

from host.recording import RecordingWarning, open_recording, recover
from host.recording import layout as L
from recording_fixtures import CASES, fixture_name, write_all

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
README = ROOT / "recordings" / "README.md"
# Committed fixtures of earlier format versions, wherever they were put.
COMMITTED = sorted(list((ROOT / "tests" / "fixtures" / "recordings").glob("*.h5"))
                   + list((HERE / "fixtures").glob("*.h5")))


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return write_all(tmp_path_factory.mktemp("fixtures"))


def _check(path, case):
    _, expected_warnings, figures = CASES[case]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rec = open_recording(path)
    got = [str(w.message) for w in caught if issubclass(w.category, RecordingWarning)]
    assert len(got) == len(expected_warnings), got
    for text, expected in zip(got, expected_warnings):
        assert expected in text
    summary = rec.summary()
    for key, value in figures.items():
        assert summary[key] == value, key
    return rec


@pytest.mark.parametrize("case", sorted(CASES))
def test_generated_fixture_opens_as_expected(generated, case):
    path = next(p for p in generated if p.name == fixture_name(case))
    _check(path, case)


if COMMITTED:  # none are committed yet: see recording_fixtures.py
    @pytest.mark.parametrize("path", COMMITTED, ids=[p.name for p in COMMITTED])
    def test_committed_fixture_opens_as_expected(path):
        case = path.stem.split("_", 1)[1]
        _check(path, case)


def test_crashed_fixture_recovers_the_unflushed_tail_only_if_logged(generated, tmp_path):
    path = next(p for p in generated if p.name == fixture_name("crashed"))
    report = recover(path, tmp_path / "fixed.h5")
    assert report.samples == 100  # the unflushed reads never reached the raw log
    rec = open_recording(tmp_path / "fixed.h5")
    assert list(rec.labels) == ["simulator"] and rec.labels["simulator"].segments()


def test_readme_documents_every_object_and_root_attribute():
    doc = README.read_text()
    for path, *_ in L.LAYOUT:
        assert "`%s`" % path in doc, path
    for name in L.ROOT_ATTRS:
        assert "`%s`" % name in doc, name
    for name in L.DECODER_COUNTERS:
        assert "`%s`" % name in doc, name
    assert "`%s`" % L.FORMAT_VERSION in doc and L.FORMAT_VERSION in doc.splitlines()[0]


def test_readme_plain_h5py_example_runs_and_is_a_dozen_lines(generated, capsys):
    doc = README.read_text()
    section = doc.split("## Reading a file with plain h5py", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) <= 12  # with per-channel calibration
    path = next(p for p in generated if p.name == fixture_name("clean"))
    exec(compile(code.replace('"session.h5"', repr(str(path))), "README", "exec"), {})
    out = capsys.readouterr().out
    assert "alice human [(0.0, 2.0, 'SIT'), (2.0, 4.0, 'WLK')]" in out
    assert "simulator simulator" in out
