"""The parameter-recovery experiment of Guo & Xing, "Bayesian Exponential Family
Harmoniums", CMU-ML-06-103, 2006 (section 5.1, Fig. 5).

A GB-EFH with M = 100 binary units, J = 10 hidden units and theta = 0; W from the
top-J eigenpairs of a symmetrised U[0, 0.1] matrix (V = W W^T >= 0).  Training
sets of N = 25..200 exact-in-the-limit samples (long block-Gibbs chains: the
paper's perfect sampler is not implemented).  ML is
full-batch CD-1 gradient ascent (the paper's baseline); the Bayesian estimate is
the posterior mean of V from ``BayesianHarmonium`` at its defaults (prior learnt by
MCEM, pooled over the coupling), told only theta = 0 as ML is.  ``--paper-prior`` adds
the paper's per-row MCEM prior (eqs. 24-25) as a third column.  Errors mae / mre of V
(eqs. 29-30), averaged over runs.

    PYTHONPATH=$PWD python benchmarks/harmonium_recovery.py            # 10 runs
    PYTHONPATH=$PWD python benchmarks/harmonium_recovery.py --quick    # seconds
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from recognizers.modelling import BayesianHarmonium, Harmonium  # noqa: E402
from recognizers.modelling.harmonium import harmonium_core as core  # noqa: E402

ML_SETTINGS = dict(learning_rate=0.01, n_iter=1000, batch_size=None, fit_visible_bias=False)
# the defaults, told theta = 0 (the paper's synthetic model) as ML is
BAYES_SETTINGS = dict(fit_visible_bias=False)
PAPER_PRIOR = dict(fit_visible_bias=False, prior_sharing="row")


def draw_data(W, n, rng, sweeps):
    """n samples of the GB-EFH with theta = 0: independent block-Gibbs chains."""
    X0 = (rng.random((n, W.shape[0])) < 0.5).astype(float)
    return core.gibbs_chain(X0, W, np.zeros(W.shape[0]), None, sweeps, rng)


def run(sizes, runs, M, J, sweeps, ml_settings, bayes_settings, seed=0, extra=None):
    rows = []
    for r in range(runs):
        rng = np.random.default_rng(seed + r)
        W = core.recovery_problem(M, J, rng=rng)
        V = W @ W.T
        X_all = draw_data(W, max(sizes), rng, sweeps)
        for N in sizes:
            X = X_all[:N]
            t0 = time.perf_counter()
            ml = Harmonium(J, random_state=seed + r, **ml_settings).fit(X)
            t_ml = time.perf_counter() - t0
            t0 = time.perf_counter()
            by = BayesianHarmonium(J, random_state=seed + r, **bayes_settings).fit(X)
            t_by = time.perf_counter() - t0
            fits = [("ML", ml, t_ml), ("Langevin", by, t_by)]
            if extra is not None:
                t0 = time.perf_counter()
                pp = BayesianHarmonium(J, random_state=seed + r, **extra).fit(X)
                fits.append(("Langevin, per-row prior", pp, time.perf_counter() - t0))
            for name, est, t in fits:
                Vh = est.coupling_gram_
                rows.append(dict(run=r, N=N, method=name, mae=core.mae(V, Vh), mre=core.mre(V, Vh), seconds=t))
            print(f"run {r} N={N:4d}  " + " | ".join(
                f"{row['method']} mae {row['mae']:.4f} mre {row['mre']:.3f}" for row in rows[-len(fits):]),
                flush=True)
    return rows


def cd_bias_table(runs=200, n=100, seed=5):
    """Paper Fig. 4 on an enumerable model (M = 10, J = 2): the brief-sampling estimate of
    d log Z / dW_11 after l = 1..5 Gibbs sweeps, from exact model samples and from data
    away from the model (independent fair coins); 'runs' estimates of 'n' chains each."""
    rng = np.random.default_rng(seed)
    W = 0.7 * rng.standard_normal((10, 2))
    theta = 0.5 * rng.standard_normal(10)
    exact = core.exact_grad_log_partition(W, theta)[0][0, 0]
    S = core.enumerate_binary(10)
    p = np.exp(core.exact_log_prob(S, W, theta))
    p /= p.sum()
    print(f"\nFig. 4 analogue: d log Z / dW_11 = {exact:.4f} exactly; {runs} runs x {n} chains; "
          "95% band = 1.64 standard errors")
    print("| data | l | mean | bias | sd | 95% band |")
    print("|---|---|---|---|---|---|")
    for name in ("exact model samples", "independent coins"):
        for l in range(1, 6):
            est = []
            for _ in range(runs):
                X = S[rng.choice(len(S), size=n, p=p)] if name.startswith("exact") else \
                    (rng.random((n, 10)) < 0.5).astype(float)
                est.append(core.cd_negative_phase(X, W, theta, None, l, rng)[0][0, 0] / n)
            est = np.asarray(est)
            print(f"| {name} | {l} | {est.mean():.4f} | {est.mean() - exact:+.4f} | {est.std():.4f} | "
                  f"±{1.64 * est.std() / np.sqrt(runs):.4f} |")


def summarise(rows, sizes):
    out = {}
    for method in dict.fromkeys(r["method"] for r in rows):
        for N in sizes:
            sel = [r for r in rows if r["method"] == method and r["N"] == N]
            out[(method, N)] = {k: (float(np.mean([s[k] for s in sel])),
                                    float(np.std([s[k] for s in sel], ddof=1) / np.sqrt(len(sel))) if len(sel) > 1
                                    else 0.0) for k in ("mae", "mre", "seconds")}
    return out


def plot(summary, sizes, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, key, title in zip(axes, ("mae", "mre"), ("(a) mean absolute error", "(b) mean relative error")):
        for method, style in (("ML", "s--"), ("Langevin", "o-"), ("Langevin, per-row prior", "^:")):
            if (method, sizes[0]) not in summary:
                continue
            m = [summary[(method, N)][key][0] for N in sizes]
            e = [summary[(method, N)][key][1] for N in sizes]
            ax.errorbar(sizes, m, yerr=e, fmt=style, capsize=3, label=method)
        ax.set_xlabel("training size N")
        ax.set_ylabel(key)
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("V = W W^T recovery, M = 100, J = 10 (Guo & Xing 2006, Fig. 5)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 runs, N = 25 and 100, short chains")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--plot", default=None, help="write the Fig. 5 style plot here (PNG)")
    ap.add_argument("--json", default=None, help="write the summary as JSON here")
    ap.add_argument("--paper-prior", action="store_true",
                    help="also the paper's per-row MCEM prior (prior_sharing='row')")
    ap.add_argument("--sizes", default="25,50,100,200", help="training sizes N")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="override a BayesianHarmonium setting (repeatable), e.g. "
                         "n_gibbs_steps=5; without it the defaults run")
    args = ap.parse_args(argv)
    sizes = [int(n) for n in args.sizes.split(",")]
    runs, sweeps = args.runs, 1000
    ml, by = dict(ML_SETTINGS), dict(BAYES_SETTINGS)
    if args.quick:
        sizes, runs, sweeps = [25, 100], 2, 200
        ml.update(n_iter=200)
        by.update(ml_n_iter=200, n_burn_in=100, n_samples=20, n_em_iter=3)
    for item in args.set:
        name, _, value = item.partition("=")
        by[name] = json.loads(value) if value[:1] in "0123456789-.[{tfn" else value
    print("settings: M=100 J=10 theta=0 sizes", sizes, "runs", runs, "Gibbs sweeps per datum", sweeps)
    print("ML:", ml)
    print("Langevin:", by)
    cd_bias_table(runs=40 if args.quick else 200)
    extra = dict(PAPER_PRIOR, **{k: v for k, v in by.items() if k != "fit_visible_bias"}) \
        if args.paper_prior else None
    if extra:
        print("Langevin, per-row prior:", extra)
    rows = run(sizes, runs, 100, 10, sweeps, ml, by, extra=extra)
    summary = summarise(rows, sizes)
    print("\n| N | ML mae | Langevin mae | ratio | ML mre | Langevin mre | ratio | s ML | s Langevin |")
    print("|---|---|---|---|---|---|---|---|---|")
    for N in sizes:
        a, b = summary[("ML", N)], summary[("Langevin", N)]
        print(f"| {N} | {a['mae'][0]:.4f} ± {a['mae'][1]:.4f} | {b['mae'][0]:.4f} ± {b['mae'][1]:.4f} | "
              f"{b['mae'][0] / a['mae'][0]:.2f} | {a['mre'][0]:.3f} ± {a['mre'][1]:.3f} | "
              f"{b['mre'][0]:.3f} ± {b['mre'][1]:.3f} | {b['mre'][0] / a['mre'][0]:.2f} | "
              f"{a['seconds'][0]:.2f} | {b['seconds'][0]:.2f} |")
    if extra:
        print("\n| N | per-row prior mae | ratio to ML | per-row prior mre | s |")
        print("|---|---|---|---|---|")
        for N in sizes:
            a, c = summary[("ML", N)], summary[("Langevin, per-row prior", N)]
            print(f"| {N} | {c['mae'][0]:.4f} ± {c['mae'][1]:.4f} | {c['mae'][0] / a['mae'][0]:.2f} | "
                  f"{c['mre'][0]:.3f} ± {c['mre'][1]:.3f} | {c['seconds'][0]:.2f} |")
    if args.plot:
        plot(summary, sizes, args.plot)
        print("plot:", args.plot)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({f"{m}/{N}": v for (m, N), v in summary.items()}, fh, indent=1)
    return summary


if __name__ == "__main__":
    main()
