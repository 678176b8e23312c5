"""`walkerlab evaluate`: several models, Dask == serial, HTML reports, bad input."""
import json
import shlex
import sys

import pytest

from host.cli import main as walkerlab
from host.simulate import simulate_to_files


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    out = tmp_path_factory.mktemp("sessions")
    return [str(p) for p in simulate_to_files("exp2", 3, 61, out, duration_s=60,
                                              progress=False)]


def _evaluate(capsys, *args):
    capsys.readouterr()
    assert walkerlab(["evaluate", "--quiet", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_several_models_side_by_side(recordings, capsys):
    out = _evaluate(capsys, "--recognizer", "hmm,hmm-em", "--param", "hmm-em:n_init=2",
                    "--param", "hmm:tau=100", "--param", "n_bins=10", "--scheduler", "serial",
                    "--variants", *recordings)
    hmm, em, em_one_to_one = out["models"]
    assert (hmm["recognizer"], em["recognizer"]) == ("hmm", "hmm-em")
    # A bare --param goes to every model, a prefixed one to its kind only.
    assert hmm["params"] == {"tau": 100, "n_bins": 10}
    assert em["params"] == {"n_init": 2, "n_bins": 10}
    # With --variants, an unsupervised model is reported under both state mappings
    # (same fits): majority (its default, the thesis) and one-to-one, labelled so.
    assert em_one_to_one["recognizer"] == "hmm-em"
    assert em_one_to_one["variant"] == "state_mapping=hungarian" and "variant" not in em
    assert em_one_to_one["params"] == {"n_init": 2, "n_bins": 10,
                                       "state_mapping": "hungarian"}
    for m in out["models"]:
        assert len(m["per_subject"]) == 3
        acc = m["accuracy_by_window"]
        assert sorted(map(int, acc)) == list(range(0, 51, 5))
        assert all(0 <= v <= 1 for v in acc.values())
        assert acc["50"] >= acc["0"]  # a wider window never hurts
        per_class = m["class_accuracy_by_window"]["25"]
        assert set(per_class) == set(m["classes"])


def test_dask_local_cluster_gives_the_serial_metrics(recordings, capsys):
    args = ["--recognizer", "hmm,bmm", "--param", "bmm:n_init=1", "--feature-set",
            "loadcells", *recordings]
    serial = _evaluate(capsys, "--scheduler", "serial", *args)
    local = _evaluate(capsys, "--scheduler", "local", "--workers", "2", *args)
    assert local["models"] == serial["models"]


def test_report_is_written_and_reproducible_from_its_command(recordings, tmp_path, capsys,
                                                              monkeypatch):
    report = tmp_path / "report"
    argv = ["evaluate", "--quiet", "--scheduler", "serial", "--report", str(report),
            *recordings]
    monkeypatch.setattr(sys, "argv", ["walkerlab", *argv])
    assert walkerlab(argv) == 0
    for name in ("index.html", "metrics.json", "accuracy_by_window.png", "per_activity.png",
                 "confusion_0.png"):
        assert (report / name).stat().st_size > 0
        if name.endswith(".png"):
            assert (report / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    metrics = json.loads((report / "metrics.json").read_text())
    html = (report / "index.html").read_text()
    assert metrics["command"] in html.replace("&#x27;", "'").replace("&quot;", '"')
    # The recorded command reproduces the numbers (replacing its own report folder,
    # which it would otherwise refuse).
    again = _evaluate(capsys, *shlex.split(metrics["command"])[2:], "--overwrite")
    assert again["models"][0]["accuracy_by_window"] == metrics["models"][0][
        "accuracy_by_window"]


@pytest.mark.parametrize("args,message", [
    (["--recognizer", "nope"], "unknown recognizer 'nope'"),
    (["--recognizer", "hmm", "--param", "crf:c2=1"], "not among --recognizer"),
    (["--param", "tau"], "KEY=VALUE"),
    (["--param", "bogus=1"], "recognizer hmm"),
    (["--recognizer", "hmm,hmm-em", "--param", "tau=5"], "recognizer hmm-em"),
])
def test_bad_settings_are_one_line_errors(recordings, capsys, args, message):
    assert walkerlab(["evaluate", "--quiet", "--scheduler", "serial", *args,
                      *recordings]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_one_subject_cannot_be_cross_validated(recordings, capsys):
    assert walkerlab(["evaluate", "--quiet", "--scheduler", "serial", recordings[0]]) == 2
    assert "at least two subjects" in capsys.readouterr().err
