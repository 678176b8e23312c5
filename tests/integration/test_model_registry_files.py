"""The registry survives bad files; --out never overwrites silently; files are 0644;
every operation is in the model's history."""
import json
import os
import stat

import numpy as np
import pytest

from host.cli import main as walkerlab
from host.models import list_models, load_model
from host.simulate import simulate_to_files
from recognizers import ModelFormatError, load_recognizer
from recognizers.base import read_model_header


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    out = tmp_path_factory.mktemp("sessions")
    return [str(p) for p in simulate_to_files("exp2", 2, 81, out, duration_s=40,
                                              progress=False)]


def _broken_files(folder):
    (folder / "empty.npz").write_bytes(b"")
    (folder / "garbage.npz").write_bytes(b"\x00\x01 definitely not a zip" * 10)
    np.save(folder / "bare.npy", np.arange(3))
    os.replace(folder / "bare.npy", folder / "bare.npz")
    np.savez(folder / "noheader.npz", a=np.arange(3))
    header = np.frombuffer(json.dumps({"format": "other"}).encode(), dtype=np.uint8)
    np.savez(folder / "wrongheader.npz", __header__=header)
    bad_json = np.frombuffer(b"{not json", dtype=np.uint8)
    np.savez(folder / "badjson.npz", __header__=bad_json)
    odd = {"format": "walkerlab-recognizer", "kind": "hmm", "format_version": 1,
           "metadata": {"metrics": [1, 2], "training_recordings": 7}}
    np.savez(folder / "badmeta.npz",
             __header__=np.frombuffer(json.dumps(odd).encode(), dtype=np.uint8))
    return ["empty", "garbage", "bare", "noheader", "wrongheader", "badjson", "badmeta"]


def test_unreadable_files_are_listed_as_broken_with_a_reason(tmp_path, capsys):
    names = _broken_files(tmp_path)
    entries, problems = list_models(tmp_path)
    assert entries == [] and len(problems) == len(names)
    text = "\n".join(problems)
    assert "the file is empty (0 bytes)" in text
    assert "not an .npz archive" in text and "no header" in text
    assert "pickle" not in text  # numpy's misleading allow_pickle advice is gone
    assert "malformed metadata" in text
    for name in names:
        if name != "badmeta":  # its header reads; only its metadata is wrong
            with pytest.raises(ModelFormatError):
                read_model_header(tmp_path / (name + ".npz"))
        with pytest.raises(ModelFormatError) as err:
            load_recognizer(tmp_path / (name + ".npz"))
        assert "pickle" not in str(err.value)
    assert walkerlab(["models", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("broken: ") == len(names)
    assert walkerlab(["models", str(tmp_path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [e for e in listed if "broken" in e] and len(listed) == len(names)
    assert walkerlab(["learn", str(tmp_path / "empty.npz"), "x.h5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is empty" in err and "Traceback" not in err


def test_the_workbench_lists_broken_files_without_failing(tmp_path, qtbot):
    from host.workbench.window import WorkbenchWindow

    _broken_files(tmp_path)
    window = WorkbenchWindow([], models_dir=str(tmp_path), persist=False)
    qtbot.addWidget(window)
    window.models.refresh_models()
    assert "7 broken file(s)" in window.models.models_problems.text()


def test_out_refuses_to_overwrite_and_files_are_0644_with_history(recordings, tmp_path,
                                                                  capsys):
    out = tmp_path / "m.npz"
    assert walkerlab(["train", "--quiet", "--out", str(out), *recordings]) == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o644
    first = out.read_bytes()
    capsys.readouterr()
    assert walkerlab(["train", "--quiet", "--out", str(out), *recordings]) == 2
    assert "already exists (use --overwrite" in capsys.readouterr().err
    assert out.read_bytes() == first
    assert walkerlab(["train", "--quiet", "--overwrite", "--out", str(out), *recordings]) == 0
    model = load_model(out)
    assert model.sample_rate_hz_ == 50.0
    (train,) = model.metadata_["history"]
    assert train["operation"] == "train" and "--overwrite" in train["command"]
    # learn: an online model; --out refuses too, and learning is in the history
    bmm = tmp_path / "bmm.npz"
    assert walkerlab(["train", "--quiet", "--recognizer", "bmm", "--param", "n_init=1",
                      "--out", str(bmm), *recordings]) == 0
    capsys.readouterr()
    assert walkerlab(["learn", str(bmm), recordings[0], "--quiet", "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert walkerlab(["learn", str(bmm), recordings[0], "--quiet"]) == 0
    history = load_model(bmm).metadata_["history"]
    assert [h["operation"] for h in history] == ["train", "learn"]
    assert history[1]["recordings"] == [os.path.abspath(recordings[0])]
    assert stat.S_IMODE(os.stat(bmm).st_mode) == 0o644


def test_saving_a_model_that_kept_learning_live_adds_to_its_history(recordings, tmp_path):
    from host.gui.controller import MonitorController

    bmm = tmp_path / "bmm.npz"
    assert walkerlab(["train", "--quiet", "--recognizer", "bmm", "--param", "n_init=1",
                      "--out", str(bmm), *recordings]) == 0
    controller = MonitorController()
    controller.load_model(str(bmm))
    saved = controller.save_model(str(tmp_path / "more.npz"))
    history = load_recognizer(saved).metadata_["history"]
    assert [h["operation"] for h in history] == ["train", "keep-learning"]
    assert history[1]["from_model"] == str(bmm)


def test_deploy_adds_to_the_history(recordings, tmp_path, served_walker):
    from host.deploy import deploy_model

    out = tmp_path / "hmm.npz"
    assert walkerlab(["train", "--quiet", "--out", str(out), *recordings]) == 0
    walker = served_walker()
    result = deploy_model(str(out), walker.path, progress=False)
    history = load_model(out).metadata_["history"]
    assert [h["operation"] for h in history] == ["train", "deploy"]
    assert history[1]["walker_id"] == result["walker_id"]
