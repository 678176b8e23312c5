"""HMM suite vs hmmlearn: forward-backward, Viterbi and one EM iteration (issue 4).

    .venv/bin/python benchmarks/bench_hmm.py [--repeats 7] [--sequences 50] [--length 2000]
                                             [--states 6 12] [--features 7] [--symbols 20]
                                             [--walker-subjects 6] [--markdown]

Models, on ``--sequences`` sequences of ``--length`` frames sampled from the model:

* Gaussian HMM, ``--features`` dimensions, for each of ``--covariance-types``
  (diagonal, spherical and tied by default; ``full`` on request);
* categorical HMM (one symbol per frame, ``--symbols`` values);
* the thesis's discrete multi-sensor HMM on simulated walker data (experiment-1
  course, ``--walker-subjects`` subjects, COP features, 20 equal-frequency bins,
  7 sensors, 7 activities; parameters from supervised counts), twice: with the
  default walker model's persistence-structured transitions (eq 6.13, what
  ``walkerlab train`` makes; our kernels take O(K) steps on it) and with counted,
  dense transitions.  hmmlearn has no
  multi-sensor model: the reference is an hmmlearn ``BaseHMM`` subclass with the
  same emission model (sum of per-sensor log tables, ``np.add.at`` statistics,
  exactly as hmmlearn's ``CategoricalHMM`` does for one sensor), so both compute
  the same numbers.

Operations: ``score`` (log-likelihood), ``posteriors`` (``predict_proba``:
forward-backward), ``viterbi`` (``decode``) and one EM iteration (``fit`` with
``n_iter=1`` and ``init_params=""`` from identical parameters; ours also scores
the updated parameters once more for ``lower_bound_``, hmmlearn does not).
Both libraries run single-threaded in this process; each timing is the best of
``--repeats`` interleaved runs after a warm-up (Numba compilation excluded).
Ratios are hmmlearn time / our time for hmmlearn's default
``implementation="log"`` and for its ``"scaling"`` variant.  ``rel. diff``
compares log-likelihoods (for EM: the E-step log-likelihood of the first
iteration; ours minus its log-prior term).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

try:
    from hmmlearn import hmm as hl
    from hmmlearn.base import BaseHMM as _HLBaseHMM
    import hmmlearn
except ImportError:  # pragma: no cover
    sys.exit("bench_hmm needs hmmlearn (pip install hmmlearn, or `make bench`)")

from recognizers.modelling.hmm import (  # noqa: E402
    CategoricalEmissions,
    CategoricalHMM,
    GaussianHMM,
    MultiCategoricalHMM,
    count_supervised,
)


# --------------------------------------------------------------------------- reference


class HMMLearnMultiSensor(_HLBaseHMM):
    """hmmlearn's machinery with the multi-sensor categorical emission model."""

    def __init__(self, n_components, n_values, implementation="log", **kw):
        super().__init__(n_components, params="ste", init_params="",
                         implementation=implementation, **kw)
        self.n_values = np.asarray(n_values)

    def _get_n_fit_scalars_per_param(self):
        K = self.n_components
        return {"s": K - 1, "t": K * (K - 1), "e": int(K * (self.n_values - 1).sum())}

    def _check(self):
        super()._check()
        self._log_tables = []
        for s, n in enumerate(self.n_values):
            with np.errstate(divide="ignore"):
                t = np.log(self.emissionprob_[s][:, :n])
            self._log_tables.append(np.concatenate([t, np.zeros((len(t), 1))], axis=1))

    def _compute_log_likelihood(self, X):
        out = np.zeros((len(X), self.n_components))
        for s, table in enumerate(self._log_tables):
            out += table[:, X[:, s]].T
        return out

    def _initialize_sufficient_statistics(self):
        stats = super()._initialize_sufficient_statistics()
        stats["obs"] = [np.zeros((self.n_components, n + 1)) for n in self.n_values]
        return stats

    def _accumulate_sufficient_statistics(self, stats, X, lattice, posteriors, fwdlattice,
                                          bwdlattice):
        super()._accumulate_sufficient_statistics(stats, X, lattice, posteriors, fwdlattice,
                                                  bwdlattice)
        for s in range(len(self.n_values)):
            np.add.at(stats["obs"][s].T, X[:, s], posteriors)

    def _do_mstep(self, stats):
        super()._do_mstep(stats)
        for s, n in enumerate(self.n_values):
            B = stats["obs"][s][:, :n]
            self.emissionprob_[s][:, :n] = B / B.sum(axis=1, keepdims=True)

    def _generate_sample_from_state(self, state, random_state=None):  # pragma: no cover
        raise NotImplementedError


# --------------------------------------------------------------------------- helpers


def best_of(fns, repeats):
    """Best wall time of each function, runs interleaved (after one warm-up each)."""
    for f in fns:
        f()
    best = [np.inf] * len(fns)
    for _ in range(repeats):
        for i, f in enumerate(fns):
            t0 = time.perf_counter()
            f()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def sticky(K, rng, stay=0.95):
    A = rng.dirichlet(np.ones(K), size=K) * (1 - stay) + stay * np.eye(K)
    return A / A.sum(axis=1, keepdims=True)


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def quiet():
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("ignore")
    return ctx


def compare(rows, label, K, X, lengths, ours, refs, em_ours, em_refs, repeats, log_prior=0.0):
    """Time score / posteriors / viterbi / EM for ours and each reference."""
    ops = [
        ("score", lambda m: m.score(X, lengths)),
        ("posteriors", lambda m: m.predict_proba(X, lengths)),
        ("viterbi", lambda m: m.decode(X, lengths)),
    ]
    ll_ours = ours.score(X, lengths)
    for name, op in ops:
        times = best_of([lambda: op(ours)] + [lambda r=r: op(r) for r in refs], repeats)
        diff = max(rel(ll_ours, r.score(X, lengths)) for r in refs) if name == "score" else None
        if name == "posteriors":
            diff = max(np.abs(ours.predict_proba(X, lengths) - r.predict_proba(X, lengths)).max()
                       for r in refs)
        if name == "viterbi":
            diff = max(rel(ours.decode(X, lengths)[0], r.decode(X, lengths)[0]) for r in refs)
        rows.append((label, K, name, times, diff))
    ctx = quiet()
    try:
        fitted = []

        def run_ours():
            fitted.append(em_ours().fit(X, lengths))

        ref_fitted = {}

        def make_ref(i):
            def run():
                ref_fitted[i] = em_refs[i]().fit(X, lengths)
            return run

        times = best_of([run_ours] + [make_ref(i) for i in range(len(em_refs))], repeats)
    finally:
        ctx.__exit__(None, None, None)
    ll0 = fitted[-1].history_[0] - log_prior
    diff = max(rel(ll0, ref_fitted[i].monitor_.history[0]) for i in ref_fitted)
    rows.append((label, K, "EM iteration", times, diff))


# --------------------------------------------------------------------------- models


def random_covars(cov, K, D, rng):
    """Covariances in the hmmlearn shape of each covariance_type."""
    if cov == "spherical":
        return rng.uniform(0.5, 2.0, size=K)
    if cov == "diag":
        return rng.uniform(0.5, 2.0, size=(K, D))
    A = rng.normal(size=(K, D, D)) / np.sqrt(D)
    full = A @ A.transpose(0, 2, 1) + np.eye(D)
    return full[0] if cov == "tied" else full


def bench_gaussian(rows, K, args, rng, cov="diag"):
    D = args.features
    truth = GaussianHMM(K, cov, random_state=0)
    truth.startprob_ = np.full(K, 1.0 / K)
    truth.transmat_ = sticky(K, rng)
    truth.means_ = 3.0 * rng.normal(size=(K, D))
    truth.covars_ = random_covars(cov, K, D, rng)
    X, _ = truth.sample(args.sequences * args.length, random_state=1)
    lengths = [args.length] * args.sequences
    params = (truth.startprob_, truth.transmat_, truth.means_, truth._covars_)

    def setp(m):
        m.startprob_, m.transmat_, m.means_, m.covars_ = params
        return m

    refs = [setp(hl.GaussianHMM(K, cov, implementation=i)) for i in ("log", "scaling")]
    prior = truth._log_prior_emissions(truth._emissions())
    compare(rows, "Gaussian %s (D=%d)" % (cov, D), K, X, lengths, setp(GaussianHMM(K, cov)),
            refs, lambda: setp(GaussianHMM(K, cov, n_iter=1, init_params="")),
            [lambda i=i: setp(hl.GaussianHMM(K, cov, n_iter=1, init_params="",
                                              implementation=i)) for i in ("log", "scaling")],
            args.repeats, log_prior=prior)


def bench_categorical(rows, K, args, rng):
    M = args.symbols
    B = rng.dirichlet(0.5 * np.ones(M), size=K)
    params = (np.full(K, 1.0 / K), sticky(K, rng), B)

    def setp(m):
        m.startprob_, m.transmat_, m.emissionprob_ = params
        return m

    truth = setp(CategoricalHMM(K))
    X, _ = truth.sample(args.sequences * args.length, random_state=2)
    lengths = [args.length] * args.sequences
    refs = [setp(hl.CategoricalHMM(K, n_features=M, implementation=i))
            for i in ("log", "scaling")]
    compare(rows, "Categorical (M=%d)" % M, K, X, lengths, setp(CategoricalHMM(K)), refs,
            lambda: setp(CategoricalHMM(K, n_iter=1, init_params="")),
            [lambda i=i: setp(hl.CategoricalHMM(K, n_features=M, n_iter=1, init_params="",
                                                implementation=i)) for i in ("log", "scaling")],
            args.repeats)


def walker_symbols(subjects, seconds=None):
    from host.datasets import load_sessions
    from host.simulate import simulate_to_files
    from recognizers.discretize import EqualFrequencyDiscretizer

    with tempfile.TemporaryDirectory() as tmp:
        paths = simulate_to_files("exp1", subjects, 1, tmp, progress=False,
                                  duration_s=seconds)
        sessions = load_sessions([str(p) for p in paths], "cop")
    disc = EqualFrequencyDiscretizer(20).fit(np.concatenate([s.X for s in sessions]))
    symbols = [disc.transform(s.X) for s in sessions]
    classes = np.unique(np.concatenate([s.y for s in sessions]))
    states = [np.searchsorted(classes, s.y) for s in sessions]
    return symbols, states, disc.n_bins_, len(classes)


def bench_walker(rows, args):
    """The walker model twice: its default transitions (thesis eq 6.13, persistence:
    stay with p, else move uniformly; our kernels detect the structure and take O(K)
    steps) and counted (dense) transitions, same emissions, same data."""
    symbols, states, nv, K = walker_symbols(args.walker_subjects, args.walker_seconds)
    counts = count_supervised(symbols, states, K, nv)
    for transitions, name in (("persistence", "default, persistence"),
                              ("counts", "dense, counted")):
        model = MultiCategoricalHMM.from_counts(counts, pseudocount=1.0,
                                                transitions=transitions, missing="sentinel")
        _bench_walker_model(rows, args, symbols, nv, K, model, name)


def _bench_walker_model(rows, args, symbols, nv, K, model, name):
    X = np.concatenate(symbols)
    lengths = [len(s) for s in symbols]
    tables = [model.emissionprob_[s].copy() for s in range(len(nv))]

    def setp_ref(m):
        m.startprob_, m.transmat_ = model.startprob_, model.transmat_
        m.emissionprob_ = [t.copy() for t in tables]
        return m

    def ours_em():
        m = MultiCategoricalHMM(n_components=K, n_values=nv, missing="sentinel", n_iter=1,
                                init_params="")
        m.startprob_, m.transmat_, m.emissions_ = model.startprob_, model.transmat_, \
            CategoricalEmissions(model.emissionprob_, nv)
        return m

    refs = [setp_ref(HMMLearnMultiSensor(K, nv, implementation=i)) for i in ("log", "scaling")]
    compare(rows, "Walker %s (%d frames, S=%d)" % (name, len(X), len(nv)), K, X, lengths,
            model, refs, ours_em,
            [lambda i=i: setp_ref(HMMLearnMultiSensor(K, nv, n_iter=1, implementation=i))
             for i in ("log", "scaling")], args.repeats)


# --------------------------------------------------------------------------- main


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--sequences", type=int, default=50)
    p.add_argument("--length", type=int, default=2000)
    p.add_argument("--states", type=int, nargs="+", default=[6, 12])
    p.add_argument("--features", type=int, default=7)
    p.add_argument("--covariance-types", nargs="+", default=["diag", "spherical", "tied"],
                   choices=["spherical", "diag", "full", "tied"])
    p.add_argument("--symbols", type=int, default=20)
    p.add_argument("--walker-subjects", type=int, default=6)
    p.add_argument("--walker-seconds", type=float, default=None,
                   help="simulate only this much of each exp1 session (default: all)")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--walker-only", action="store_true",
                   help="only the walker model (default and dense transitions)")
    p.add_argument("--quick", action="store_true",
        help="small sizes, runs in seconds (CI)")
    args = p.parse_args()
    if args.quick:
        args.repeats = 1
        args.sequences = 3
        args.length = 300
        args.states = [4]
        args.walker_subjects, args.walker_seconds = 1, 60.0
        args.covariance_types = ["diag"]
    rng = np.random.default_rng(0)
    rows = []
    for K in ([] if args.walker_only else args.states):
        for cov in args.covariance_types:
            bench_gaussian(rows, K, args, rng, cov)
        bench_categorical(rows, K, args, rng)
    if args.walker_subjects > 0:
        bench_walker(rows, args)
    head = ("model", "K", "operation", "ours ms", "hmmlearn log ms", "ratio",
            "hmmlearn scaling ms", "ratio", "rel. diff")
    print("# hmmlearn %s, numpy %s, python %s, %s" % (hmmlearn.__version__, np.__version__,
                                                     platform.python_version(),
                                                     platform.machine()))
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    for label, K, op, (o, rl, rs), diff in rows:
        cells = (label, str(K), op, "%.1f" % (1e3 * o), "%.1f" % (1e3 * rl), "%.1fx" % (rl / o),
                 "%.1f" % (1e3 * rs), "%.1fx" % (rs / o), "%.1e" % diff)
        if args.markdown:
            print("| " + " | ".join(cells) + " |")
        else:
            print("%-40s %3s %-13s %9s %9s %7s %9s %7s %9s" % cells)


if __name__ == "__main__":
    main()
