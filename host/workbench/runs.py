"""Workbench runs: one leave-one-subject-out evaluation, kept to compare, report, train.

A :class:`RunConfig` is everything the form chose; :func:`execute` evaluates it with
``host.evaluate.evaluate_recordings`` (so a run's metrics are exactly the library's);
:func:`train_and_save` fits the same configuration on all its recordings and saves it
into the model registry with the run's metrics; :func:`evaluate_command` is the
``walkerlab evaluate`` command line that reproduces runs (for reports).
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import pathlib
import shlex
import time
from dataclasses import dataclass, field

from host.errors import UserError
from host.report import json_safe

TRANSITION_WINDOW = 25  # the headline tolerance, as `walkerlab evaluate` uses
HEADLINE_WINDOWS = (0, 25, 50)


class Cancelled(Exception):
    """Raised from the progress callback to stop a run."""


@dataclass(frozen=True)
class RunConfig:
    paths: tuple[str, ...]
    kind: str
    params: dict = field(default_factory=dict)
    feature_set: str = "cop"
    track: str | None = None
    decoder: str = "predict"
    own_sessions: int = 0
    scheduler: str = "serial"
    n_workers: int | None = None

    def spec(self):
        from host.evaluate import ModelSpec

        return ModelSpec(self.kind, dict(self.params))

    def check(self) -> None:
        """UserError before any work for what cannot run."""
        if not self.paths:
            raise UserError("no recordings selected: add recordings and tick them")
        from host.workbench.params import validate_params

        self.spec().check()
        validate_params(self.kind, self.params)


@dataclass
class Run:
    """A finished run: its configuration, the evaluation result, and how long it took."""

    number: int
    config: RunConfig
    result: dict
    elapsed_s: float

    @property
    def name(self) -> str:
        from host.workbench.params import changed_params

        changed = changed_params(self.config.kind, self.config.params)
        extra = ", ".join("%s=%s" % kv for kv in sorted(changed.items()))
        return "#%d %s (%s%s)" % (self.number, self.config.kind, self.config.feature_set,
                                  "; " + extra if extra else "")

    def accuracy(self, window: int) -> float:
        return float(self.result["accuracy_by_window"][window])

    def summary_row(self) -> dict:
        """The comparison table's row."""
        r = self.result
        row = {"run": self.name, "subjects": len(r["per_subject"]),
               "decoder": r["decoder"]}
        for w in HEADLINE_WINDOWS:
            row["accuracy w%d" % w] = r["accuracy_by_window"].get(w, math.nan)
        tw = r["transitions_by_window"].get(TRANSITION_WINDOW, {})
        row["transition precision"] = tw.get("precision", math.nan)
        row["transition recall"] = tw.get("recall", math.nan)
        # Unsupervised runs: the other state mapping (majority / one-to-one) from the
        # same fits; a dash for recognizers that have none.
        other = next(iter(r.get("variants", {}).values()), None)
        row["accuracy w25, other mapping"] = (
            other["accuracy_by_window"].get(25, math.nan) if other else math.nan)
        row["time (s)"] = self.elapsed_s
        return row


def execute(config: RunConfig, number: int = 1, progress=None, cancelled=None) -> Run:
    """Evaluate a configuration leave-one-subject-out.

    progress(done, total) is told as folds finish; cancelled() -> True stops the run
    after the fold in progress (raises Cancelled).
    """
    from host.evaluate import evaluate_recordings

    config.check()

    def report(done, total):
        if progress is not None:
            progress(done, total)
        if cancelled is not None and cancelled():
            raise Cancelled()

    if cancelled is not None and cancelled():
        raise Cancelled()
    t0 = time.perf_counter()
    result, *variants = evaluate_recordings(
        list(config.paths), [config.spec()], feature_set=config.feature_set,
        track=config.track, decoder=config.decoder, own_sessions=config.own_sessions,
        transition_window=TRANSITION_WINDOW, scheduler=config.scheduler,
        n_workers=config.n_workers, progress=report)
    if variants:  # the other state mapping of an unsupervised recognizer, same fits
        result = dict(result, variants={_variant_name(result, v): v for v in variants})
    return Run(number, config, result, time.perf_counter() - t0)


def _variant_name(result: dict, variant: dict) -> str:
    changed = {k: v for k, v in variant["params"].items() if result["params"].get(k) != v}
    return ", ".join("%s=%s" % kv for kv in sorted(changed.items()))


def _quote_all(args) -> str:
    return " ".join(shlex.quote(str(a)) for a in args)


def _config_args(config: RunConfig, kinds: list[str], per_kind: list[tuple]) -> list[str]:
    args = ["walkerlab", "evaluate", *config.paths, "--recognizer", ",".join(kinds),
            "--feature-set", config.feature_set, "--decoder", config.decoder,
            "--own-sessions", str(config.own_sessions),
            "--transition-window", str(TRANSITION_WINDOW),
            "--scheduler", config.scheduler]
    if config.track:
        args += ["--labels", config.track]
    for kind, params in per_kind:
        for key, value in sorted(params.items()):
            args += ["--param", "%s:%s=%s" % (kind, key, json.dumps(value)
                                              if not isinstance(value, str) else value)]
    return args


def evaluate_command(runs: list[Run]) -> str:
    """The `walkerlab evaluate` command(s) that reproduce these runs' metrics: one line
    when the runs differ only in their recognizer kinds, else one line per run."""
    from host.workbench.params import changed_params

    if not runs:
        return ""
    first = runs[0].config
    kinds = [r.config.kind for r in runs]
    same = all(r.config.paths == first.paths and r.config.feature_set == first.feature_set
               and r.config.decoder == first.decoder and r.config.track == first.track
               and r.config.own_sessions == first.own_sessions for r in runs)
    per = [(r.config.kind, changed_params(r.config.kind, r.config.params)) for r in runs]
    if same and len(set(kinds)) == len(kinds):
        return _quote_all(_config_args(first, kinds, per))
    return "\n".join(_quote_all(_config_args(r.config, [r.config.kind], [p]))
                     for r, p in zip(runs, per))


def report_summary(runs: list[Run]) -> dict:
    """What host.report.write_report takes, for these runs."""
    files = sorted({p for r in runs for p in r.config.paths})
    return {"command": evaluate_command(runs), "files": files,
            "models": [r.result for r in runs]}


def train_and_save(config: RunConfig, models_dir, run: Run | None = None,
                   out=None, progress=None) -> pathlib.Path:
    """Fit the configuration on all its recordings and save it into models_dir.

    The model's metadata is host.models.training_metadata, with the run's LOSO
    metrics when a run of this configuration is given. progress(done, 3) is told
    before loading, fitting and saving (and may raise Cancelled to stop there:
    nothing is saved then).
    """
    if progress is None:
        def progress(done, total):
            return None
    from host.datasets import check_rates, load_sessions
    from host.models import training_metadata

    config.check()
    if run is not None and run.config != config:
        raise UserError("the run's settings differ from the ones to train")
    progress(0, 3)
    sessions = load_sessions(list(config.paths), config.feature_set, config.track)
    progress(1, 3)
    model = config.spec().make()
    try:
        model.fit([s.X for s in sessions], [s.y for s in sessions],
                  feature_set=config.feature_set)
    except ValueError as exc:
        raise UserError("cannot train: %s" % exc) from None
    progress(2, 3)
    metrics = json_safe(run.result) if run is not None else None
    command = evaluate_command([run]) if run is not None else ""
    model.sample_rate_hz_ = check_rates(sessions)
    model.metadata_ = training_metadata(
        files=config.paths, label_track=sorted({s.track for s in sessions}),
        label_set=model.classes_, feature_set=config.feature_set, kind=config.kind,
        params=config.params, command=command or "workbench: Train and save",
        metrics=metrics, sample_rate_hz=model.sample_rate_hz_)
    if out is None:
        folder = pathlib.Path(models_dir)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError("cannot create the model folder %s: %s" % (folder, exc)) from None
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = folder / ("%s-%s-%s.npz" % (config.kind, config.feature_set, stamp))
        n = 1
        while out.exists():  # two saves within a second
            n += 1
            out = folder / ("%s-%s-%s-%d.npz" % (config.kind, config.feature_set, stamp, n))
    try:
        saved = pathlib.Path(model.save(out))
    except OSError as exc:
        raise UserError("cannot save the model to %s: %s" % (out, exc)) from None
    return saved
