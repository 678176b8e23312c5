"""Leave-one-subject-out evaluation of recordings, in this process or on a Dask cluster.

The folds of every model are independent tasks: ``evaluate_recordings`` plans them
(``recognizers.evaluation.loso_folds``), runs each one (``run_fold``) either here or
on Dask workers, and pools them (``summarize_folds``), so the metrics are the same
whichever way they ran.

Fleet scale (issue 22): first each recording's labelled features are computed once,
as one task per recording, into the feature cache (``host.feature_cache``: ``.npz``
per recording, keyed by the file's content and the feature settings); then each fold
reads the cached features of its recordings, one recording at a time where the
recognizer learns that way (``fit_streamed``, e.g. the HMM), so no process holds more
than one fold's features and the client holds none.  On Dask a task carries only file
paths and settings: workers read recordings and cache entries from storage they share
with the client (a worker that cannot see an entry recomputes it), nothing bulky goes
through the scheduler.

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
AUTO = "auto"
# A local Dask cluster costs seconds to start (a process per core, each importing and
# compiling the numba kernels) and competes with this process for the cores: it pays
# only with cores to spare and a few folds for each worker (docs/benchmarks.md).
CLUSTER_MIN_CORES = 4
CLUSTER_MIN_TASKS_PER_WORKER = 2


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


def _cache_task(path, feature_set, track, label_map=None, cache_dir=None):
    """One recording's labelled features into the feature cache; its (small) entry."""
    from host.feature_cache import cached_features

    return cached_features(path, feature_set, track, label_map, cache_dir)


def _fold_task(spec: ModelSpec, train_entries, test_entries, decoder):
    """One fold: fit on the cached features of the training recordings (streamed
    where the recognizer can), decode the test recordings one by one."""
    from host.feature_cache import CachedSessions
    from recognizers.evaluation import run_fold_variants

    return run_fold_variants(spec.make, CachedSessions(train_entries),
                             CachedSessions(test_entries), decoder)


def cache_recordings(paths, feature_set: str = "cop", track: str | None = None,
                     label_map: dict | None = None, cache_dir=None, client=None,
                     progress: Callable[[int, int], Any] | None = None):
    """Cache entries of every recording (computed here, or as Dask tasks on ``client``),
    after refusing a damaged recording (reader.check_structures) or one given twice,
    and checking that they share one label set (unless ``label_map``) and one sample
    rate."""
    from host.datasets import check_distinct
    from host.feature_cache import check_entries
    from host.recording import check_structures

    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise UserError("no recordings given")
    for p in paths:
        if not os.path.exists(p):
            raise UserError("%s: no such file" % p)
    # The user's recordings may be damaged or hostile: a damaged size field makes
    # libhdf5 allocate gigabytes, so each file's structure is first read in a child
    # under a memory limit (once per file version; here, before any worker reads
    # them from the storage they share). A damaged file stops the command: metrics
    # or a model silently missing a recording would mislead.
    check_structures(paths)
    check_distinct(paths)
    cache_dir = os.fspath(cache_dir) if cache_dir is not None else None
    entries: list = [None] * len(paths)
    if client is None:
        for i, p in enumerate(paths):
            entries[i] = _cache_task(p, feature_set, track, label_map, cache_dir)
            if progress is not None:
                progress(i + 1, len(paths))
    else:
        from distributed import as_completed

        futures = {client.submit(_cache_task, p, feature_set, track, label_map, cache_dir,
                                 pure=False): i for i, p in enumerate(paths)}
        try:
            for done, fut in enumerate(as_completed(list(futures)), start=1):
                entries[futures[fut]] = fut.result()
                if progress is not None:
                    progress(done, len(paths))
        except BaseException:
            client.cancel(list(futures))
            raise
    check_entries(entries, label_map)
    return entries


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def choose_scheduler(scheduler: str, n_tasks: int, n_workers: int | None = None,
                     cores: int | None = None) -> tuple[str, str]:
    """``(scheduler, why)``: ``"auto"`` resolved from the work and the machine.

    Parameters
    ----------
    scheduler : str
        ``"auto"``, ``"serial"``, ``"local"`` or a Dask scheduler address; all but
        ``"auto"`` are returned as given.
    n_tasks : int
        Folds to run (times the recognizers compared).
    n_workers : int, optional
        Processes a local cluster would start (default: one per core).
    cores : int, optional
        Cores available (default :func:`available_cores`).

    Returns
    -------
    tuple of str
        The scheduler and a short reason, for the user.
    """
    if scheduler != AUTO:
        return scheduler, "as asked"
    cores = cores or available_cores()
    workers = min(n_workers or cores, cores)
    if cores < CLUSTER_MIN_CORES:
        return SERIAL, ("%d core(s): a local Dask cluster pays from %d"
                        % (cores, CLUSTER_MIN_CORES))
    if n_tasks < CLUSTER_MIN_TASKS_PER_WORKER * workers:
        return SERIAL, ("%d fold(s) for %d workers: a local Dask cluster pays from %d"
                        % (n_tasks, workers, CLUSTER_MIN_TASKS_PER_WORKER * workers))
    return LOCAL, "%d fold(s) on %d workers" % (n_tasks, workers)


@contextlib.contextmanager
def _quiet_distributed():
    """Silence Dask's loggers: once the results are in, closing the cluster may log
    nanny warnings and CommClosedError tracebacks that mean nothing to the user."""
    import logging

    names = ("distributed", "tornado", "asyncio")
    levels = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for n, level in levels.items():
            logging.getLogger(n).setLevel(level)


@contextlib.contextmanager
def dask_client(scheduler: str, n_workers: int | None = None):
    """A distributed Client: a new local cluster ("local") or the scheduler at an address."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - a dependency, but say what is missing
        raise UserError("--scheduler needs dask.distributed: pip install 'dask[distributed]'"
                        ) from None
    if scheduler == LOCAL:
        import logging

        workers = n_workers or available_cores()
        # Processes, one thread each: the folds are CPU-bound numba/numpy work. Task
        # errors reach us through the futures; the cluster's own logs stay quiet.
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.CRITICAL)
        client = Client(cluster)
    else:
        try:
            client, cluster = Client(scheduler, timeout="10s"), None
        except (OSError, TimeoutError) as exc:
            raise UserError("cannot reach the Dask scheduler at %s: %s" % (scheduler, exc)
                            ) from None
    try:
        yield client
    finally:
        with _quiet_distributed():
            client.close()
            if cluster is not None:
                cluster.close()


def evaluate_recordings(paths, specs: list[ModelSpec], *, feature_set: str = "cop",
                        track: str | None = None, decoder: str = "predict",
                        own_sessions: int = 0, windows=None, transition_window: int = 0,
                        confusion_window: int = 0, scheduler: str = SERIAL,
                        n_workers: int | None = None,
                        progress: Callable[[int, int], Any] | None = None,
                        label_map: dict | None = None, cache_dir=None,
                        variants: bool = True) -> list[dict]:
    """Leave-one-subject-out of every model in ``specs`` over the recordings ``paths``.

    ``scheduler``: ``"serial"`` (this process), ``"local"`` (a Dask cluster on this
    machine, ``n_workers`` processes, default one per core) or a Dask scheduler
    address.  Features go through the feature cache in ``cache_dir`` (default
    ``host.feature_cache.default_cache_dir()``).  Returns one result dict per spec
    (see ``recognizers.evaluation.leave_one_subject_out``).
    With ``variants``, an unsupervised recognizer gives two results from the same
    fits: its own state mapping and the other one (majority and one-to-one
    Hungarian), the second with ``state_mapping`` in its ``params`` and
    ``variant`` (``"state_mapping=hungarian"``) saying it is a variant.  ``progress(done, total)`` is called as folds
    finish.  A recording given twice, or recordings of different label sets without a
    ``label_map`` (old code -> new code) to merge them, are refused.
    """
    from recognizers.evaluation import DEFAULT_WINDOWS

    if not paths:
        raise UserError("no recordings given")
    for spec in specs:
        spec.check()
    windows = DEFAULT_WINDOWS if windows is None else windows
    if scheduler == SERIAL:
        entries = cache_recordings(paths, feature_set, track, label_map, cache_dir)
        outputs = _run_folds(entries, specs, own_sessions, decoder, None, progress)
    else:
        with dask_client(scheduler, n_workers) as client:
            entries = cache_recordings(paths, feature_set, track, label_map, cache_dir,
                                       client=client)
            outputs = _run_folds(entries, specs, own_sessions, decoder, client, progress)
    folds, outputs = outputs
    # One result per spec, then one per evaluation variant of that spec (e.g. the
    # other state mapping of an unsupervised recognizer), each a model of its own
    # in the printout, the report and the workbench, from the same fits.
    from recognizers.evaluation import summarize_folds

    results = []
    for m, spec in enumerate(specs):
        for key in outputs[m, 0][1]:
            if key and not variants:
                continue
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
            if key:
                result["variant"] = "%s=%s" % key
            results.append(result)
    return results


def _run_folds(entries, specs, own_sessions, decoder, client, progress):
    """``(folds, {(model, fold): run_fold_variants output})``, here or on ``client``."""
    from recognizers.evaluation import loso_folds

    try:
        folds = loso_folds([e.subject for e in entries], own_sessions)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    total = len(specs) * len(folds)
    outputs: dict[tuple[int, int], tuple] = {}
    if client is None:
        for m, spec in enumerate(specs):
            for f, fold in enumerate(folds):
                outputs[m, f] = _fold_task(spec, [entries[i] for i in fold.train],
                                           [entries[i] for i in fold.test], decoder)
                if progress is not None:
                    progress(len(outputs), total)
        return folds, outputs
    from distributed import as_completed

    futures = {}
    for m, spec in enumerate(specs):
        for f, fold in enumerate(folds):
            fut = client.submit(_fold_task, spec, [entries[i] for i in fold.train],
                                [entries[i] for i in fold.test], decoder, pure=False)
            futures[fut] = (m, f)
    try:
        for fut in as_completed(list(futures)):
            outputs[futures[fut]] = fut.result()
            if progress is not None:
                progress(len(outputs), total)
    except BaseException:
        client.cancel(list(futures))
        raise
    return folds, outputs
