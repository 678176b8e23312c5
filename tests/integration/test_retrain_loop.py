"""The whole retraining loop: annotate -> train -> evaluate -> save -> live pipeline.

Recordings are annotated programmatically (a human track written with the same
function the annotator saves through), a model is evaluated leave-one-subject-out
with the causal filter, and every fold is then redone the way a user would use it:
`walkerlab train` on the other subjects, the saved file reloaded, and the held-out
recording's raw bytes replayed through the live pipeline.  The live posteriors must
give exactly the evaluation's metrics.
"""
import json

import numpy as np
import pytest

from host.cli import main as walkerlab
from host.recording import open_recording, write_labels
from host.replay import replay_recording
from host.simulate import simulate_to_files
from recognizers import load_recognizer
from recognizers.evaluation import summarize_folds


@pytest.fixture(scope="module")
def annotated(tmp_path_factory):
    out = tmp_path_factory.mktemp("annotated")
    paths = [str(p) for p in simulate_to_files("exp2", 3, 81, out, duration_s=60,
                                               progress=False)]
    for path in paths:
        rec = open_recording(path)
        truth = rec.labels["simulator"]
        segments = list(zip(truth.start_s, truth.stop_s, truth.activity))
        # The annotator labels the whole session: stretch the first and last segment.
        first, last = segments[0], segments[-1]
        segments[0] = (min(first[0], rec.time_s[0]) - 1.0, first[1], first[2])
        segments[-1] = (last[0], max(last[1], rec.time_s[-1]) + 1.0, last[2])
        write_labels(path, "alice", segments, annotator="alice")
    return paths


@pytest.mark.parametrize("kind", ["hmm", "bmm"])
def test_live_pipeline_reproduces_the_evaluation_exactly(annotated, tmp_path, capsys, kind):
    params = ["--param", "n_init=1"] if kind == "bmm" else []
    capsys.readouterr()
    assert walkerlab(["evaluate", "--quiet", "--json", "--recognizer", kind, *params,
                      "--labels", "alice", "--decoder", "filter", "--scheduler", "serial",
                      *annotated]) == 0
    evaluation = json.loads(capsys.readouterr().out)["models"][0]

    folds = []
    for test in annotated:
        model_path = str(tmp_path / ("%s-without-%s.npz" % (kind, test[-6:-3])))
        train = [p for p in annotated if p != test]
        assert walkerlab(["train", "--quiet", "--recognizer", kind, *params, "--labels",
                          "alice", "--out", model_path, *train]) == 0
        model = load_recognizer(model_path)
        assert model.metadata_["label_track"] == ["alice"]
        rec, live = replay_recording(test, model)  # raw bytes -> decoder -> pipeline
        truth = rec.labels_per_sample("alice")
        assert len(live.predicted()) == len(truth) and np.all(truth != "")
        folds.append((rec.attrs["subject_id"], [truth.astype(str)], [live.predicted()]))
    replayed = summarize_folds(folds, transition_window=25, decoder="filter")
    for key in ("accuracy_by_window", "transitions_by_window", "confusion", "classes",
                "class_accuracy_by_window"):
        assert json.loads(json.dumps(replayed[key])) == evaluation[key], key  # str keys
