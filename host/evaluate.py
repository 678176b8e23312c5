"""Leave-one-subject-out evaluation of recordings, in this process or on a Dask cluster.

The folds of every model are independent tasks: ``evaluate_recordings`` plans them
(``recognizers.evaluation.loso_folds``), runs each one (``run_fold``) either here or
on Dask workers, and pools them (``summarize_folds``), so the metrics are the same
whichever way they ran.  On Dask a task carries only file paths and settings: each
worker reads the recordings it needs from storage they share with the client,
nothing bulky goes through the scheduler.

    specs = [ModelSpec("hmm"), ModelSpec("bmm", {"n_init": 2})]
    results = evaluate_recordings(paths, specs, feature_set="cop", scheduler="local")
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any, Callable

from host.errors import UserError

SERIAL = "serial"
LOCAL = "local"


@dataclass(frozen=True)
class ModelSpec:
    """A recognizer kind and its constructor parameters (what a fold task needs)."""

    kind: str
    params: dict = field(default_factory=dict)

    def make(self):
        from recognizers import get_recognizer_class

        return get_recognizer_class(self.kind)(**self.params)

    def check(self) -> None:
        """UserError now, rather than on a worker, for an unknown kind or parameter."""
        from recognizers import get_recognizer_class

        try:
            get_recognizer_class(self.kind)(**self.params)
        except (ValueError, TypeError) as exc:
            raise UserError("recognizer %s: %s" % (self.kind, exc)) from None


def _load(paths, feature_set, track, label_map=None, check=True):
    from host.datasets import load_sessions

    return load_sessions(list(paths), feature_set, track, label_map=label_map, check=check)


def _fold_task(spec: ModelSpec, train_paths, test_paths, feature_set, track, decoder,
               label_map=None):
    """One fold on a worker: read the recordings, fit, decode the test sessions."""
    from recognizers.evaluation import run_fold_variants

    return run_fold_variants(spec.make, _load(train_paths, feature_set, track, label_map, False),
                    _load(test_paths, feature_set, track, label_map, False), decoder)


@contextlib.contextmanager
def dask_client(scheduler: str, n_workers: int | None = None):
    """A distributed Client: a new local cluster ("local") or the scheduler at an address."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - a dependency, but say what is missing
        raise UserError("--scheduler needs dask.distributed: pip install 'dask[distributed]'"
                        ) from None
    if scheduler == LOCAL:
        workers = n_workers or os.cpu_count() or 1
        # Processes, one thread each: the folds are CPU-bound numba/numpy work.
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            yield client
    else:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise UserError("cannot reach the Dask scheduler at %s: %s" % (scheduler, exc)
                            ) from None
        with client:
            yield client


def evaluate_recordings(paths, specs: list[ModelSpec], *, feature_set: str = "cop",
                        track: str | None = None, decoder: str = "predict",
                        own_sessions: int = 0, windows=None, transition_window: int = 0,
                        confusion_window: int = 0, scheduler: str = SERIAL,
                        n_workers: int | None = None,
                        progress: Callable[[int, int], Any] | None = None,
                        label_map: dict | None = None) -> list[dict]:
    """Leave-one-subject-out of every model in ``specs`` over the recordings ``paths``.

    ``scheduler``: ``"serial"`` (this process), ``"local"`` (a Dask cluster on this
    machine, ``n_workers`` processes) or a Dask scheduler address.  Returns one
    result dict per spec (see ``recognizers.evaluation.leave_one_subject_out``).
    An unsupervised recognizer gives two results from the same fits: its own state
mapping and the other one (majority and one-to-one Hungarian), the second with
``state_mapping`` in its ``params``.  ``progress(done, total)`` is called as folds finish.  A recording given twice,
    or recordings of different label sets without a ``label_map`` (old code -> new
    code) to merge them, are refused (``host.datasets.load_sessions``).
    """
    from recognizers.evaluation import (
        DEFAULT_WINDOWS,
        loso_folds,
        run_fold_variants,
        summarize_folds,
    )

    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise UserError("no recordings given")
    for spec in specs:
        spec.check()
    windows = DEFAULT_WINDOWS if windows is None else windows
    if scheduler == SERIAL:
        sessions = _load(paths, feature_set, track, label_map)
        subjects = [s.subject for s in sessions]
    else:
        from host.datasets import check_distinct
        from host.recording import read_attrs

        check_distinct(paths)
        sessions = None
        subjects = []
        for p in paths:
            if not os.path.exists(p):
                raise UserError("%s: no such file" % p)
            subjects.append(read_attrs(p).get("subject_id") or p)
    try:
        folds = loso_folds(subjects, own_sessions)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    total = len(specs) * len(folds)
    outputs: dict[tuple[int, int], tuple] = {}
    if scheduler == SERIAL:
        for m, spec in enumerate(specs):
            for f, fold in enumerate(folds):
                outputs[m, f] = run_fold_variants(spec.make, [sessions[i] for i in fold.train],
                                         [sessions[i] for i in fold.test], decoder)
                if progress is not None:
                    progress(len(outputs), total)
    else:
        from distributed import as_completed

        with dask_client(scheduler, n_workers) as client:
            futures = {}
            for m, spec in enumerate(specs):
                for f, fold in enumerate(folds):
                    fut = client.submit(_fold_task, spec, [paths[i] for i in fold.train],
                                        [paths[i] for i in fold.test], feature_set, track,
                                        decoder, label_map, pure=False)
                    futures[fut] = (m, f)
            try:
                for fut in as_completed(list(futures)):
                    outputs[futures[fut]] = fut.result()
                    if progress is not None:
                        progress(len(outputs), total)
            except BaseException:
                client.cancel(list(futures))
                raise
    # One result per spec, then one per evaluation variant of that spec (e.g. the
    # other state mapping of an unsupervised recognizer), each a model of its own
    # in the printout, the report and the workbench, from the same fits.
    results = []
    for m, spec in enumerate(specs):
        for key in outputs[m, 0][1]:
            fold_results = [(fold.subject, outputs[m, f][0], outputs[m, f][1][key])
                            for f, fold in enumerate(folds)]
            result = summarize_folds(fold_results, windows=windows,
                                     transition_window=transition_window,
                                     confusion_window=confusion_window, decoder=decoder)
            params = dict(spec.params)
            if key:
                params[key[0]] = key[1]
            result.update(recognizer=spec.kind, params=params, feature_set=feature_set,
                          own_sessions=own_sessions)
            results.append(result)
    return results
