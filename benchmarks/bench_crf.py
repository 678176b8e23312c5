"""Linear-chain CRF vs CRFsuite (python-crfsuite) on the same features (issue 8).

    .venv/bin/python benchmarks/bench_crf.py [--iterations 500] [--walker-c2 1000]
                                             [--dense-c2 1] [--walker-subjects 7]
                                             [--folds 1] [--markdown]

Tasks:

* ``walker``: simulated experiment-1 walker data (``--walker-subjects``
  subjects, COP features, 7 sensors, 7 activities); train on every subject but
  the first, test on the first (``--folds N``: each of the first N subjects in
  turn, figures summed and accuracy pooled).  Features: bias, the standardised sensors and
  the thesis's threshold features (one threshold per pair of activities and
  sensor, chosen from the training data, weights above / below), i.e. the CRF's
  defaults.
* ``dense``: a synthetic dense-feature task: a sticky 6-label Markov chain,
  30 correlated Gaussian features whose means depend on the label (plus
  squared terms so the classes are not linearly separable frame by frame),
  120 training and 40 test sequences of 300 frames.  Features: bias and the
  standardised raw features (no thresholds).

Both libraries get exactly the same feature values: ours computes them
(:func:`recognizers.modelling.crf.linear_chain_core.featurize`) and CRFsuite receives them as
``{name: value}`` attributes (threshold features as the one indicator that
fires per threshold), with ``feature.possible_states`` and
``feature.possible_transitions`` on so both have the same weights.  Both train by
L-BFGS with the same L2 penalty (CRFsuite's ``c2``: ``c2 ||w||^2``; 1000 on the
walker data, the walker recognizer's default, 1 on the dense task, CRFsuite's
default) until the same stopping rule (ours: relative decrease below 1e-7;
CRFsuite is given the same rule: ``period=1, delta=1e-7``, 10 memories, and
``feature.minfreq`` below every feature sum so it keeps all features, see
:func:`crfsuite_params`) or ``--iterations``.  The
optimum is unique (strictly convex), so equal objectives mean both found it.
Timed: our whole ``fit`` (threshold selection and feature computation
included) vs CRFsuite's ``train`` only (building its attribute dicts and
``append`` are not counted).  "objective" is the final ``-log-likelihood +
c2 ||w||^2`` each reports; "CRFsuite weights in ours" is CRFsuite's solution
scored by our objective (equal to its own figure: the same function); "acc" the
test frame accuracy of Viterbi labels.  Times are CPU seconds of this process
(robust on a shared machine; both libraries compute single-threaded here) with the
ratio of elapsed times beside; one run each after a warm-up fit (Numba
compilation excluded).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

try:
    import pycrfsuite
except ImportError:  # pragma: no cover
    sys.exit("bench_crf needs python-crfsuite (pip install python-crfsuite, or `make bench`)")

from recognizers.modelling.crf import LinearChainCRF  # noqa: E402
from recognizers.modelling.crf.features import fit_feature_spec  # noqa: E402
from recognizers.modelling.crf.linear_chain_core import featurize  # noqa: E402


# --------------------------------------------------------------------------- data


def walker_tasks(subjects, folds, seconds=None):
    """One task per test subject (the first ``folds`` subjects), training on the rest."""
    from host.datasets import load_sessions
    from host.simulate import simulate_to_files

    with tempfile.TemporaryDirectory() as tmp:
        paths = simulate_to_files("exp1", subjects, 1, tmp, progress=False,
                                  duration_s=seconds)
        sessions = load_sessions([str(p) for p in paths], "cop")
    tasks = []
    for f in range(min(folds, subjects)):
        train = [s for i, s in enumerate(sessions) if i != f]
        tasks.append(([s.X for s in train], [s.y for s in train], [sessions[f].X],
                      [sessions[f].y], dict(thresholds="ks", raw=True)))
    return tasks


def dense_task(seed=0, n_train=120, n_test=40, length=300, K=6, F=30):
    rng = np.random.default_rng(seed)
    A = np.full((K, K), 0.04 / (K - 1))
    np.fill_diagonal(A, 0.96)
    means = rng.normal(scale=0.3, size=(K, F))
    mix = rng.normal(scale=0.5, size=(F, F)) / np.sqrt(F)
    spread = rng.uniform(0.5, 1.5, size=(K, F))

    def sequence():
        y = np.empty(length, dtype=np.int64)
        y[0] = rng.integers(K)
        u = rng.random(length)
        cum = np.cumsum(A, axis=1)
        for t in range(1, length):
            y[t] = min(int(np.searchsorted(cum[y[t - 1]], u[t])), K - 1)
        noise = rng.normal(size=(length, F)) * spread[y]
        X = means[y] + noise + noise @ mix
        X[:, : F // 3] = X[:, : F // 3] ** 2  # not linear in the label
        return X, np.array(["L%d" % k for k in y])

    data = [sequence() for _ in range(n_train + n_test)]
    Xs, ys = [d[0] for d in data], [d[1] for d in data]
    return (Xs[:n_train], ys[:n_train], Xs[n_train:], ys[n_train:],
            dict(thresholds=None, raw=True))


# --------------------------------------------------------------------------- CRFsuite


def crfsuite_items(spec, X):
    """The CRF's features of one sequence as CRFsuite attribute dicts."""
    dense, _ = featurize(spec, X)
    names = ["d%d" % i for i in range(dense.shape[1])]
    above = []
    for s in range(X.shape[1]):
        a, b = spec.cut_offsets[s], spec.cut_offsets[s + 1]
        if b > a:
            x = X[:, s][:, None]
            cuts = spec.cuts[a:b][None, :]
            above.append((a, x >= cuts, x < cuts))
    items = []
    for t in range(X.shape[0]):
        d = {n: float(v) for n, v in zip(names, dense[t]) if v != 0.0}
        for a, ge, lt in above:
            for p in np.flatnonzero(ge[t]):
                d["t%da" % (a + p)] = 1.0
            for p in np.flatnonzero(lt[t]):
                d["t%db" % (a + p)] = 1.0
        items.append(d)
    return pycrfsuite.ItemSequence(items)


def crfsuite_params(iterations, c2):
    """CRFsuite's settings for the same problem and the same stopping rule as ours.

    ``feature.minfreq`` must sit below every feature's summed value: at its default
    (0) CRFsuite silently drops each feature whose values sum below zero, i.e. half
    of the standardised sensors, and then solves a different (smaller) problem.
    The stopping rule is ours (scipy L-BFGS-B: relative decrease of the objective
    below 1e-7 in one iteration, 10 memories) instead of CRFsuite's default (1e-5
    over 10 iterations, 6 memories), so both stop at the same precision.
    """
    return {"c1": 0.0, "c2": c2, "max_iterations": iterations,
            "feature.possible_states": True, "feature.possible_transitions": True,
            "feature.minfreq": -1e300, "num_memories": 10, "period": 1, "delta": 1e-7,
            "epsilon": 1e-10}


def run_crfsuite(spec, Xtr, ytr, Xte, iterations, c2):
    trainer = pycrfsuite.Trainer(verbose=False)
    for X, y in zip(Xtr, ytr):
        trainer.append(crfsuite_items(spec, X), [str(v) for v in y])
    trainer.select("lbfgs")
    trainer.set_params(crfsuite_params(iterations, c2))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.crfsuite")
        c0, t0 = time.process_time(), time.perf_counter()
        trainer.train(path)
        elapsed = (time.process_time() - c0, time.perf_counter() - t0)
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        pred = [np.array(tagger.tag(crfsuite_items(spec, X))) for X in Xte]
        info = tagger.info()
        tagger.close()
    its = trainer.logparser.iterations
    evals = 1 + sum(int(it.get("linesearch_trials", 1)) for it in its)
    return elapsed, pred, len(its), evals, float(its[-1]["loss"]), info


def crfsuite_theta(info, classes, n_dense, n_cuts):
    """CRFsuite's learned weights laid out as our weight vector (full transitions)."""
    K = len(classes)
    index = {c: k for k, c in enumerate(classes)}
    W = np.zeros((n_dense, K))
    Wt = np.zeros((2 * n_cuts, K))
    A = np.zeros((K, K))
    for (attr, label), w in info.state_features.items():
        k = index[label]
        if attr[0] == "d":
            W[int(attr[1:]), k] = w
        else:
            Wt[2 * int(attr[1:-1]) + (attr[-1] == "b"), k] = w
    for (a, b), w in info.transitions.items():
        A[index[a], index[b]] = w
    return np.concatenate((W.ravel(), Wt.ravel(), A.ravel()))


# --------------------------------------------------------------------------- main


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:  # pragma: no cover
        return "?"


def accuracy(y_true, y_pred) -> float:
    t = np.concatenate([np.asarray(v).astype(str) for v in y_true])
    p = np.concatenate([np.asarray(v).astype(str) for v in y_pred])
    return float(np.mean(t == p))


def bench(name, task, c2, args):
    Xtr, ytr, Xte, yte, feat = task
    kw = dict(feat, c2=c2, max_iterations=args.iterations)
    LinearChainCRF(**dict(kw, max_iterations=2)).fit(Xtr[:2], ytr[:2])  # compile
    c0, t0 = time.process_time(), time.perf_counter()
    crf = LinearChainCRF(**kw).fit(Xtr, ytr)
    ours_t = (time.process_time() - c0, time.perf_counter() - t0)
    ours_acc = accuracy(yte, crf.predict(Xte))
    # The defaults rule (docs/benchmarks.md): the comparison needs CRFsuite's c2 and
    # stopping rule; a user gets LinearChainCRF(), scored beside it (not timed).
    defaults_acc = accuracy(yte, LinearChainCRF().fit(Xtr, ytr).predict(Xte))
    classes = np.unique(np.concatenate(ytr))
    yi = [np.searchsorted(classes, y) for y in ytr]
    spec = fit_feature_spec(Xtr, yi, len(classes), thresholds=feat["thresholds"],
                            raw=feat["raw"])
    cs_t, cs_pred, cs_it, cs_ev, cs_loss, info = run_crfsuite(spec, Xtr, ytr, Xte,
                                                              args.iterations, c2)
    # CRFsuite's weights scored by our objective: equal to its own loss if both
    # define the same objective on the same features.
    problem = LinearChainCRF(**kw)._problem(Xtr, ytr)
    cs_in_ours = problem.objective(crfsuite_theta(info, classes, spec.n_dense,
                                                  spec.cuts.size))[0]
    cs_acc = accuracy(yte, cs_pred)
    n_frames = sum(len(y) for y in ytr)
    n_weights = crf.theta_.size
    return {"task": name, "frames": n_frames, "weights": n_weights, "c2": c2,
            "ours_s": ours_t[0], "crfsuite_s": cs_t[0], "ratio": cs_t[0] / ours_t[0],
            "wall_ratio": cs_t[1] / ours_t[1], "ours_wall": ours_t[1], "crfsuite_wall": cs_t[1],
            "test_frames": sum(len(y) for y in yte),
            "ours_it": "%d / %d" % (crf.n_iter_, crf.n_evaluations_),
            "crfsuite_it": "%d / %d" % (cs_it, cs_ev),
            "ours_obj": crf.objective_, "crfsuite_obj": cs_loss, "cs_in_ours": cs_in_ours,
            "ours_acc": ours_acc, "crfsuite_acc": cs_acc, "defaults_acc": defaults_acc}


def pool(rows):
    """Rows of several walker folds as one: sums, and accuracy over all test frames."""
    out = dict(rows[0], task="walker exp1, %d folds" % len(rows))
    for key in ("frames", "ours_s", "crfsuite_s", "ours_obj", "crfsuite_obj", "cs_in_ours"):
        out[key] = sum(r[key] for r in rows)
    for key in ("ours_acc", "crfsuite_acc", "defaults_acc"):
        out[key] = sum(r[key] * r["test_frames"] for r in rows) / sum(r["test_frames"]
                                                                      for r in rows)
    out["ratio"] = out["crfsuite_s"] / out["ours_s"]
    out["wall_ratio"] = sum(r["crfsuite_wall"] for r in rows) / sum(r["ours_wall"]
                                                                    for r in rows)
    for key in ("ours_it", "crfsuite_it"):
        it = [tuple(map(int, r[key].split(" / "))) for r in rows]
        out[key] = "%d / %d" % (sum(a for a, _ in it), sum(b for _, b in it))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=500)
    p.add_argument("--walker-c2", type=float, default=1000.0)
    p.add_argument("--dense-c2", type=float, default=1.0)
    p.add_argument("--walker-subjects", type=int, default=7)
    p.add_argument("--walker-seconds", type=float, default=None,
                   help="simulate only this much of each exp1 session (default: all)")
    p.add_argument("--folds", type=int, default=1,
                   help="walker: test on each of the first FOLDS subjects in turn; "
                   "times, objectives and test frames are summed")
    p.add_argument("--dense-sequences", type=int, default=120,
                   help="dense task: training sequences (a third as many to test)")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--quick", action="store_true",
                   help="small sizes (2 walker subjects of 60 s, 12 dense sequences, 10 "
                   "iterations): checks the benchmark runs, not a measurement")
    args = p.parse_args(argv)
    if args.quick:
        args.walker_subjects, args.folds, args.iterations = 2, 1, 10
        args.walker_seconds = 60.0
        args.dense_sequences = 12
    rows = []
    if args.walker_subjects > 1:
        folds = [bench("walker exp1", task, args.walker_c2, args)
                 for task in walker_tasks(args.walker_subjects, args.folds, args.walker_seconds)]
        rows.append(pool(folds) if len(folds) > 1 else folds[0])
    n = args.dense_sequences
    rows.append(bench("dense synthetic", dense_task(n_train=n, n_test=max(1, n // 3)),
                      args.dense_c2, args))
    print("python %s, numpy %s, python-crfsuite %s, %s" % (
        platform.python_version(), np.__version__,
        _version("python-crfsuite"), platform.machine()))
    print("L-BFGS, at most %d iterations; ours: LinearChainCRF(tol=1e-7) (scipy L-BFGS-B, "
          "10 memories); CRFsuite: %s" % (args.iterations, crfsuite_params(args.iterations,
                                                                         "<c2>")))
    head = ("task", "frames", "weights", "c2", "ours CPU s", "CRFsuite CPU s", "ratio",
            "wall ratio", "ours it / evals", "CRFsuite it / evals", "ours objective",
            "CRFsuite objective", "CRFsuite weights in ours", "ours acc", "CRFsuite acc",
            "LinearChainCRF() defaults acc")
    fmt = [lambda r: r["task"], lambda r: "%d" % r["frames"], lambda r: "%d" % r["weights"],
           lambda r: "%g" % r["c2"],
           lambda r: "%.2f" % r["ours_s"], lambda r: "%.2f" % r["crfsuite_s"],
           lambda r: "%.1fx" % r["ratio"], lambda r: "%.1fx" % r["wall_ratio"],
           lambda r: r["ours_it"],
           lambda r: r["crfsuite_it"], lambda r: "%.1f" % r["ours_obj"],
           lambda r: "%.1f" % r["crfsuite_obj"], lambda r: "%.1f" % r["cs_in_ours"],
           lambda r: "%.4f" % r["ours_acc"],
           lambda r: "%.4f" % r["crfsuite_acc"], lambda r: "%.4f" % r["defaults_acc"]]
    table = [[f(r) for f in fmt] for r in rows]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for line in table:
            print("| " + " | ".join(line) + " |")
    else:
        widths = [max(len(h), *(len(line[i]) for line in table)) for i, h in enumerate(head)]
        print("  ".join(h.rjust(w) for h, w in zip(head, widths)))
        for line in table:
            print("  ".join(v.rjust(w) for v, w in zip(line, widths)))
    print("ratio = CRFsuite training CPU time / ours (> 1: ours is faster); wall ratio the "
          "same for elapsed time")


if __name__ == "__main__":
    main()
