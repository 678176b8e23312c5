"""One message style (issue 34, item 4), through the real CLI: no reprs, no KeyError
text, the --param help's own examples work, --list-params types read as types, a
closed pipe is silent, `models` tells model kinds apart, `discover` says the count it
writes in natural order; and the scheduler choice (item 3) is said, with variants
only when asked for."""
import json
import os
import re
import subprocess
import sys

import pytest

from host.cli import build_parser, main as walkerlab
from host.cli.common import model_specs
from host.evaluate import choose_scheduler
from host.simulate import simulate_to_files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cli(*argv, **kwargs):
    return subprocess.run([sys.executable, "-m", "host.cli", *map(str, argv)], cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True,
                          text=True, timeout=600, **kwargs)


def _one_line(err):
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err.strip()


@pytest.fixture(scope="module")
def recs(tmp_path_factory):
    out = tmp_path_factory.mktemp("msg")
    return [str(p) for p in simulate_to_files("exp2", 3, 21, out, duration_s=40,
                                              progress=False)]


@pytest.fixture(scope="module")
def hmm_model(recs, tmp_path_factory):
    out = tmp_path_factory.mktemp("models") / "hmm.npz"
    assert walkerlab(["train", "--quiet", "--scheduler", "serial", "--out", str(out),
                      *recs]) == 0
    return out


def test_recover_says_what_it_did_in_words(recs, tmp_path):
    res = _cli("recover", recs[0], "--out", tmp_path / "r.h5")
    assert res.returncode == 0, res.stderr
    assert "RecoverReport" not in res.stdout and "=" not in res.stdout
    assert re.search(r"r\.h5: \d+ samples \(\d+ before\) in \d+ frames, rebuilt from \d+ "
                     r"bytes of raw log", res.stdout), res.stdout


def test_topics_show_of_a_recognizer_names_what_it_is(hmm_model, capsys):
    assert walkerlab(["topics", "show", str(hmm_model)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "is a hmm recognizer, not a topic model" in line and "'header'" not in line


def test_the_param_help_examples_work_and_a_wrong_key_names_the_settings(capsys):
    train = next(a for a in build_parser()._actions if hasattr(a, "choices")
                 and a.choices and "train" in a.choices).choices["train"]
    text = next(a.help for a in train._actions if "--param" in a.option_strings)
    examples = re.findall(r"(\w+=\S+) for ([\w-]+)", text)
    prefixed = re.findall(r"\b([\w-]+):(\w+=\w+)", text)
    assert len(examples) >= 2 and prefixed  # the help does give examples
    for setting, kind in examples:
        (spec,) = model_specs(kind, [setting.rstrip(",")])
        spec.make()
    for kind, setting in prefixed:
        model_specs(kind, ["%s:%s" % (kind, setting)])[0].make()
    assert walkerlab(["train", "--recognizer", "crf", "--param", "tau=4000",
                      "x.h5"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "crf has no setting 'tau'" in line and "c2" in line and "__init__" not in line


def test_list_params_shows_readable_types_for_every_recognizer(capsys):
    from recognizers.base import RECOGNIZERS

    readable = {"int", "float", "str", "bool", "None", "int | RandomState", "array-like",
                "callable", "dict", "list", "tuple", "any"}
    for kind in sorted(RECOGNIZERS):
        with pytest.raises(SystemExit) as done:
            walkerlab(["train", "--list-params", kind])
        assert done.value.code == 0
        out = capsys.readouterr().out
        header = out.splitlines()[1]
        col = header.index("type")
        for line in out.splitlines()[2:]:
            types = line[col:].split("  ")[0].strip()
            assert set(types.split(" | ")) <= readable, (kind, line)


def test_a_closed_pipe_is_silent(recs):
    # The reader closes its end before the command writes: no BrokenPipeError text.
    for argv in (["info", recs[0]], ["train", "--list-params", "crf"]):
        proc = subprocess.Popen([sys.executable, "-m", "host.cli", *argv], cwd=ROOT,
                                env=dict(os.environ, PYTHONPATH=ROOT),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.close()
        err = proc.stderr.read().decode()
        proc.wait(timeout=120)
        assert err == "", err
        assert proc.returncode in (0, 141)


def test_models_tells_recognizers_topic_models_and_broken_files_apart(recs, hmm_model,
                                                                       tmp_path, capsys):
    import shutil

    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(hmm_model, folder / "hmm.npz")
    assert walkerlab(["topics", "fit", *recs, "--topics", "2", "--words", "8", "--quiet",
                      "--out", str(folder / "topics.npz")]) == 0
    (folder / "junk.npz").write_bytes(b"not a zip")
    capsys.readouterr()
    assert walkerlab(["models", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "hmm recognizer" in out
    topic_line = out.split(str(folder / "topics.npz"))[1].splitlines()[1]
    assert "topic model" in topic_line and "not a recognizer" in topic_line
    broken = [line for line in out.splitlines() if line.startswith("broken:")]
    assert len(broken) == 1 and "junk.npz" in broken[0]
    assert walkerlab(["models", str(folder), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {"path": str(folder / "topics.npz"), "analysis_model": "walker-topics"} in listed


def test_discover_says_the_count_it_writes_in_natural_order(tmp_path, capsys):
    from host.recording import open_recording

    path = simulate_to_files("exp2", 1, 5, tmp_path, duration_s=120, progress=False)[0]
    assert walkerlab(["discover", str(path), "--max-regimes", "10", "--quiet"]) == 0
    said = int(re.search(r"(\d+) regime\(s\)", capsys.readouterr().out).group(1))
    codes = set(open_recording(path).labels["discovered"].activity)
    assert said == len(codes)
    assert codes == {"R%d" % i for i in range(1, said + 1)}
    assert walkerlab(["info", str(path), "--track", "discovered"]) == 0
    out = capsys.readouterr().out
    listed = [line.split()[0] for line in out.split("labels (discovered track")[1]
              .splitlines()[1:]]
    assert listed == ["R%d" % i for i in range(1, said + 1)]  # R2 before R10


def test_auto_scheduler_is_serial_on_small_machines_and_jobs():
    assert choose_scheduler("auto", 40, cores=2)[0] == "serial"
    assert choose_scheduler("auto", 3, cores=8)[0] == "serial"  # too few folds
    assert choose_scheduler("auto", 15, cores=8)[0] == "serial"  # 2 per worker needed
    assert choose_scheduler("auto", 16, cores=8)[0] == "local"
    assert choose_scheduler("auto", 16, n_workers=4, cores=8)[0] == "local"
    assert choose_scheduler("auto", 40, cores=8)[0] == "local"
    assert choose_scheduler("serial", 40, cores=64)[0] == "serial"
    assert choose_scheduler("tcp://h:8786", 1, cores=1)[0] == "tcp://h:8786"


def test_evaluate_says_its_scheduler_and_adds_variants_only_when_asked(recs, capsys):
    from host.evaluate import available_cores

    assert walkerlab(["evaluate", "--quiet", "--recognizer", "hmm-em", "--param",
                      "n_init=1", "--json", *recs]) == 0
    captured = capsys.readouterr()
    expected, _ = choose_scheduler("auto", len(recs), cores=available_cores())
    said = [line for line in captured.err.splitlines() if "walkerlab evaluate:" in line]
    assert len(said) == 1 and ("ran serially" if expected == "serial" else "Dask") in said[0]
    models = json.loads(captured.out)["models"]
    assert len(models) == 1 and "variant" not in models[0]
    assert walkerlab(["evaluate", "--quiet", "--recognizer", "hmm-em", "--param",
                      "n_init=1", "--scheduler", "serial", "--variants", *recs]) == 0
    out = capsys.readouterr().out
    headers = [line for line in out.splitlines() if line.startswith("hmm-em")]
    assert len(headers) == 2 and "variant" not in headers[0]
    assert "variant state_mapping=hungarian" in headers[1]


def test_a_local_cluster_run_ends_without_warnings_or_tracebacks(recs):
    res = _cli("evaluate", "--quiet", "--recognizer", "hmm", "--scheduler", "local",
               "--workers", "2", *recs)
    assert res.returncode == 0, res.stderr
    for noise in ("Traceback", "WARNING", "CommClosedError", "distributed."):
        assert noise not in res.stderr, res.stderr
