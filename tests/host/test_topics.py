"""`walkerlab topics`: motion words, documents and LDA topics of simulated recordings."""
from __future__ import annotations

import json

import numpy as np
import pytest

from host.cli import main
from host.simulate import simulate_to_files
from host.topics import TopicModel, bag_of_words, majority


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    folder = tmp_path_factory.mktemp("topics")
    return [str(p) for p in simulate_to_files("exp1", 2, 1, folder, progress=False)]


def test_bag_of_words_and_majority_by_hand():
    words = np.array([0, 2, 2, 1, 1, 1, 0])
    doc = np.array([0, 0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(bag_of_words(words, doc, 3),
                                  [[1, 0, 2], [0, 2, 0], [1, 1, 0]])
    labels = np.array(["W", "ST", "ST", "", "", "", "W"])
    assert majority(labels, doc).tolist() == ["ST", "", "W"]


def test_fit_show_and_the_model_file_round_trip(recordings, tmp_path, capsys):
    out = tmp_path / "topics.npz"
    assert main(["topics", "fit", *recordings, "--topics", "4", "--words", "20",
                 "--out", str(out), "--quiet"]) == 0
    model = TopicModel.load(out)
    h = model.header
    assert h["n_topics"] == 4 and h["n_words"] == 20 and h["n_documents"] > 10
    # every labelled activity gets a distribution over the topics
    assert set(h["association"]) >= {"WF", "NTW"}
    for row in h["association"].values():
        assert sum(row) == pytest.approx(1.0, abs=1e-3)
    # the topics tell standing away from the walker from walking forward
    gap = np.abs(np.array(h["association"]["WF"]) - np.array(h["association"]["NTW"])).sum()
    assert gap > 0.8
    t, theta, acts = model.session_topics(recordings[0])
    assert theta.shape == (len(t), 4) and len(acts) == len(t)
    np.testing.assert_allclose(theta.sum(1), 1.0)
    capsys.readouterr()
    assert main(["topics", "show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert shown.count("topic ") >= 4 and "m/s" in shown and "WF" in shown
    # exact round trip: the same words and the same proportions after loading
    again = TopicModel.load(out)
    F = np.random.default_rng(0).normal(size=(30, 10)) * model.scale + model.mean
    np.testing.assert_array_equal(again.words(F), model.words(F))
    np.testing.assert_array_equal(again.lda.components_, model.lda.components_)


def test_fit_auto_lets_the_hdp_choose_the_count_and_saves_it(recordings, tmp_path, capsys):
    out = tmp_path / "auto.npz"
    assert main(["topics", "fit", *recordings, "--topics", "auto", "--words", "20",
                 "--out", str(out)]) == 0
    captured = capsys.readouterr()
    said = captured.out.strip().splitlines()[-1]
    model = TopicModel.load(out)
    hdp = model.lda
    # the fit showed its progress (the HDP's iterations, its bound, topics and
    # truncation); the saved model does not keep the bar switched on
    assert "HDP:" in captured.err and "topics, K %d" % hdp.n_components in captured.err
    assert hdp.verbose == 0
    # the printed count is the saved HDP's count of used topics, below its truncation
    assert said.startswith("%s: %d topics over " % (out, hdp.n_topics_used_)), said
    assert model.header["method"] == "hdp" and model.header["n_topics"] == hdp.n_topics_used_
    share = hdp.topic_counts_ / hdp.topic_counts_.sum()
    assert model.topics.tolist() == np.flatnonzero(share >= 0.01).tolist()
    assert 1 <= hdp.n_topics_used_ < hdp.n_components
    t, theta, acts = model.session_topics(recordings[0])
    assert theta.shape == (len(t), hdp.n_topics_used_)
    np.testing.assert_allclose(theta.sum(1), 1.0)
    # the topics tell standing away from the walker from walking forward
    h = model.header
    gap = np.abs(np.array(h["association"]["WF"]) - np.array(h["association"]["NTW"])).sum()
    assert gap > 0.8
    assert main(["topics", "show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("%d topics over 20 motion words" % hdp.n_topics_used_)
    assert shown.count("topic ") >= hdp.n_topics_used_ and "m/s" in shown
    # exact round trip of the HDP: the same proportions after loading
    again = TopicModel.load(out)
    counts = bag_of_words(np.arange(40) % 20, np.arange(40) // 10, 20)
    np.testing.assert_array_equal(again.proportions(counts), model.proportions(counts))
    # a hand-edited or hostile header is one line, never a traceback
    with np.load(out, allow_pickle=False) as z:
        arrays = dict(z)
    header = json.loads(bytes(arrays["header"]).decode())
    damaged = [
        dict(header, hdp_params=dict(header["hdp_params"], shell="rm -rf")),
        dict(header, hdp_params=dict(header["hdp_params"], n_components="many")),
        dict(header, hdp_params=[1, 2]),
        dict(header, topics=[0.5, 1.5]),
        dict(header, topics=[[0], [1]]),
    ]
    for i, bad in enumerate(damaged + ["[" * 5000 + "]" * 5000]):
        path = tmp_path / ("damaged%d.npz" % i)
        text = bad if isinstance(bad, str) else json.dumps(bad)
        np.savez(path, **dict(arrays, header=np.frombuffer(text.encode(), np.uint8)))
        assert main(["topics", "show", str(path)]) == 2, bad
        err = capsys.readouterr().err
        assert "cannot read topic model" in err and len(err.strip().splitlines()) == 1, err


def test_clear_errors(recordings, tmp_path, capsys):
    out = tmp_path / "m.npz"
    out.write_bytes(b"not a model")
    cases = [
        (["topics", "fit", recordings[0]], "needs --out"),
        (["topics", "fit", recordings[0], "--out", str(tmp_path / "m.txt")], "must end in .npz"),
        (["topics", "fit", recordings[0], "--out", str(out)], "exists"),
        (["topics", "fit", recordings[0], "--out", str(tmp_path / "n.npz"), "--topics", "0"],
         "--topics must be"),
        (["topics", "fit", recordings[0], "--out", str(tmp_path / "n.npz"), "--topics", "many"],
         "--topics must be a whole number >= 1 or 'auto'"),
        (["topics", "fit", recordings[0], "--out", str(tmp_path / "n.npz"), "--topics", "2.5"],
         "--topics must be"),
        (["topics", "show", str(out)], "cannot read topic model"),
        (["topics", "show", str(tmp_path / "none.npz")], "no such"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, (argv, err)
        assert len(err.strip().splitlines()) == 1, err


def test_describe_shdp_lists_each_activity_and_its_topics():
    from host.topics import describe_shdp
    from recognizers import SHDPRecognizer
    from tests.recognizers.conftest import synthetic_sessions

    s = synthetic_sessions(n_subjects=2, seed=3, segment=(40, 100), n_features=8)
    rec = SHDPRecognizer(subwindow=5, window=4, n_words=12, n_components=8, max_iter=10,
                         train_hop=1).fit([x["X"] for x in s], [x["y"] for x in s],
                                          feature_set="loadcells")
    lines = describe_shdp(rec)
    assert lines[0].startswith("shdp: %d of 8 topics used, 12 motion words"
                               % rec.model_.n_topics_used_)
    for act in rec.classes_:
        assert any(line.startswith("  %-4s " % act) for line in lines), act
    assert any("load_FR" in line or "speed" in line or "accel" in line for line in lines)
