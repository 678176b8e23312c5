"""Workbench runs against the library: same metrics, cancel, commands, training."""
import json
import math
import shlex

import pytest

from host.errors import UserError
from host.evaluate import ModelSpec, evaluate_recordings
from host.report import json_safe
from host.workbench.runs import (Cancelled, RunConfig, evaluate_command, execute,
                                 train_and_save)


def test_execute_gives_exactly_the_library_metrics(exp2_paths):
    config = RunConfig(tuple(exp2_paths), "hmm", {"n_bins": 12}, "cop")
    seen = []
    run = execute(config, 3, progress=lambda d, t: seen.append((d, t)))
    direct = evaluate_recordings(exp2_paths, [ModelSpec("hmm", {"n_bins": 12})],
                                 feature_set="cop", transition_window=25)[0]
    assert json_safe(run.result) == json_safe(direct)
    assert seen == [(1, 3), (2, 3), (3, 3)]
    assert run.name == "#3 hmm (cop; n_bins=12)"
    row = run.summary_row()
    assert row["accuracy w0"] == direct["accuracy_by_window"][0]
    assert row["transition recall"] == direct["transitions_by_window"][25]["recall"]
    assert math.isnan(row["accuracy w25, other mapping"])  # supervised: no other mapping


def test_unsupervised_run_shows_the_other_state_mapping(exp2_paths):
    config = RunConfig(tuple(exp2_paths), "hmm-em", {"n_init": 1, "n_bins": 8}, "cop")
    run = execute(config)
    majority, one_to_one = evaluate_recordings(
        exp2_paths, [ModelSpec("hmm-em", {"n_init": 1, "n_bins": 8})], feature_set="cop",
        transition_window=25)
    variant = run.result["variants"]["state_mapping=hungarian"]
    assert json_safe(variant) == json_safe(one_to_one)
    assert run.summary_row()["accuracy w25, other mapping"] == \
        one_to_one["accuracy_by_window"][25]


def test_cancel_stops_after_the_fold_in_progress(exp2_paths):
    seen = []
    with pytest.raises(Cancelled):
        execute(RunConfig(tuple(exp2_paths), "hmm"), progress=lambda d, t: seen.append(d),
                cancelled=lambda: bool(seen))
    assert seen == [1]
    with pytest.raises(Cancelled):  # cancelled before it started: no fold runs
        execute(RunConfig(tuple(exp2_paths), "hmm"), progress=lambda d, t: seen.append(d),
                cancelled=lambda: True)
    assert seen == [1]


def test_bad_configurations_are_user_errors(exp2_paths):
    with pytest.raises(UserError, match="no recordings"):
        execute(RunConfig((), "hmm"))
    with pytest.raises(UserError, match="at least two subjects"):
        execute(RunConfig(tuple(exp2_paths[:1]), "hmm"))
    with pytest.raises(UserError, match="n_bins"):
        execute(RunConfig(tuple(exp2_paths), "hmm", {"n_bins": 0}))


def test_the_report_command_reproduces_the_runs(exp2_paths, capsys):
    from host.cli import main

    runs = [execute(RunConfig(tuple(exp2_paths), "hmm", {"n_bins": 12, "tau": 4000.0}), 1),
            execute(RunConfig(tuple(exp2_paths), "hmm-em", {"n_init": 1, "n_iter": 5}), 2)]
    command = evaluate_command(runs)
    assert "\n" not in command  # same data and settings: one command
    argv = shlex.split(command)
    assert argv[:2] == ["walkerlab", "evaluate"]
    capsys.readouterr()
    assert main(argv[1:] + ["--json", "--quiet"]) == 0
    printed = json.loads(capsys.readouterr().out)
    for run, model in zip(runs, printed["models"]):
        assert model["accuracy_by_window"] == json_safe(run.result)["accuracy_by_window"]
        assert model["confusion"] == json_safe(run.result)["confusion"]
    # The same kind twice with different settings cannot share one command line.
    twice = runs[:1] + [execute(RunConfig(tuple(exp2_paths), "hmm", {"n_bins": 8}), 3)]
    assert len(evaluate_command(twice).splitlines()) == 2


def test_train_and_save_stores_the_run_metrics(exp2_paths, tmp_path):
    from host.models import list_models
    from recognizers import load_recognizer

    config = RunConfig(tuple(exp2_paths), "hmm", {"n_bins": 12})
    run = execute(config)
    path = train_and_save(config, tmp_path / "models", run)
    model = load_recognizer(path)
    meta = model.metadata_
    assert meta["metrics"] == json.loads(json.dumps(json_safe(run.result)))
    assert meta["training_recordings"] == list(exp2_paths)
    assert meta["recognizer"] == "hmm" and meta["params"] == {"n_bins": 12}
    assert meta["label_set"] == sorted(str(c) for c in run.result["classes"])
    entries, problems = list_models(tmp_path / "models")
    assert [e.path for e in entries] == [str(path)] and not problems
    second = train_and_save(config, tmp_path / "models", run)  # same second: a new name
    assert second != path and second.exists()
    with pytest.raises(UserError, match="differ"):
        train_and_save(RunConfig(tuple(exp2_paths), "hmm"), tmp_path / "models", run)
