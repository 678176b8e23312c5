"""Harmoniums (Guo & Xing, "Bayesian Exponential Family Harmoniums", CMU-ML-06-103,
2006) against their packaged peers.

1. Held-out exact log-likelihood with M = 16 binary units (every model's
   partition function by enumerating the 2^16 visible states): our CD-1
   ``Harmonium`` (ML) and ``BayesianHarmonium`` (posterior predictive) against
   scikit-learn's ``BernoulliRBM`` with the same number of hidden units, on
   scikit-learn's digits pooled to 4x4 and binarised, and on the 16 most
   frequent words of gensim's ``mini_newsgroup`` (binary occurrence).
2. The paper's classification protocol (section 5.2): fit every model on all
   documents without labels, project, split at random into equal halves, 1-NN;
   on ``mini_newsgroup`` (200 posts, alt.atheism / sci.space) as binary word
   occurrences, against LSI (``TruncatedSVD``), LDA (scikit-learn's
   ``LatentDirichletAllocation``, and ours by BMM) and ``BernoulliRBM``, at 4-32 components.
   Accuracy is the mean over 20 random splits; seconds are the fit's wall time.

    PYTHONPATH=$PWD python benchmarks/bench_harmonium.py [--quick] [--plot PNG]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scipy.special import logsumexp  # noqa: E402
from sklearn.decomposition import LatentDirichletAllocation, TruncatedSVD  # noqa: E402
from sklearn.feature_extraction.text import CountVectorizer  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402
from sklearn.neural_network import BernoulliRBM  # noqa: E402

from recognizers.modelling import BayesianHarmonium, Harmonium  # noqa: E402
from recognizers.modelling.harmonium import harmonium_core as core  # noqa: E402

from recognizers.modelling import LDA  # noqa: E402

from benchmarks.bench_hdp import load_mini_newsgroup  # noqa: E402 - one reader of gensim's file


def rbm_exact_log_prob(rbm, X):
    """Exact log p(v) of a fitted BernoulliRBM (binary hidden units summed out,
    the 2^M visible states enumerated)."""
    W, b, c = rbm.components_, rbm.intercept_visible_, rbm.intercept_hidden_

    def neg_free_energy(V):
        return V @ b + np.logaddexp(0, V @ W.T + c).sum(axis=1)

    logZ = logsumexp(neg_free_energy(core.enumerate_binary(W.shape[1])))
    return neg_free_energy(X) - logZ


def digits_4x4():
    """scikit-learn's 8x8 digits (1797 images, shipped with the package) pooled to 4x4 and
    binarised at half intensity: a real 16-unit binary data set with structure."""
    from sklearn.datasets import load_digits
    img = load_digits().images.reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4))
    return (img.reshape(-1, 16) > 8.0).astype(float)


LR_GRID = (0.01, 0.03, 0.1)


def likelihood_table(datasets, J_list, seeds, quick):
    """Held-out exact log-likelihood: 50/25/25 train/validation/test split; each model
    family's learning rate is picked from LR_GRID on the validation half (same budget:
    n_iter passes, mini-batches of 10)."""
    rows = []
    n_iter = 30 if quick else 100
    grid = LR_GRID[1:2] if quick else LR_GRID
    for dname, X in datasets.items():
        for seed in seeds:
            perm = np.random.default_rng(seed).permutation(len(X))
            a, b = len(X) // 2, 3 * len(X) // 4
            tr, va, te = X[perm[:a]], X[perm[a:b]], X[perm[b:]]
            p = np.clip(tr.mean(axis=0), 1e-3, 1 - 1e-3)
            indep = float(np.mean((te * np.log(p) + (1 - te) * np.log(1 - p)).sum(axis=1)))
            for J in J_list:
                def ours(lr):
                    return Harmonium(J, learning_rate=lr, n_iter=n_iter, batch_size=10, random_state=seed)

                def rbm(lr):
                    return BernoulliRBM(n_components=J, learning_rate=lr, batch_size=10, n_iter=n_iter,
                                        random_state=seed)

                chosen = {}
                for name, make, score in (("Harmonium (ML, CD-1)", ours, lambda e, Z: e.score_samples(Z)),
                                          ("BernoulliRBM", rbm, rbm_exact_log_prob)):
                    best = None
                    for lr in grid:
                        t0 = time.perf_counter()
                        est = make(lr).fit(tr)
                        sec = time.perf_counter() - t0
                        v = float(np.mean(score(est, va)))
                        if best is None or v > best[0]:
                            best = (v, lr, est, sec)
                    _, lr, est, sec = best
                    chosen[name] = lr
                    rows.append(dict(data=dname, seed=seed, J=J, model=name, lr=lr,
                                     ll=float(np.mean(score(est, te))), indep=indep, seconds=sec))
                # the defaults (issue 32's figure rule); --quick shortens the chain only
                short = dict(n_burn_in=100, n_samples=20, n_em_iter=3, em_samples=5, ml_n_iter=n_iter) \
                    if quick else {}
                for name, extra in (("BayesianHarmonium() defaults", {}),
                                    ("BayesianHarmonium (sigma = 1)", dict(fit_prior=False, prior_std=1.0))):
                    t0 = time.perf_counter()
                    by = BayesianHarmonium(J, random_state=seed, **short, **extra).fit(tr)
                    rows.append(dict(data=dname, seed=seed, J=J, model=name, lr=None,
                                     ll=float(np.mean(by.score_samples(te))), indep=indep,
                                     seconds=time.perf_counter() - t0))
    return rows


def classification_table(X, y, J_list, quick, n_splits=20):
    models = {
        "LSI (TruncatedSVD)": lambda k, s: TruncatedSVD(k, random_state=s),
        "LDA (ours, BMM one pass)": lambda k, s: LDA(k, method="bmm", random_state=s),
        "LDA (scikit-learn)": lambda k, s: LatentDirichletAllocation(k, learning_method="batch", max_iter=10 if quick
                                                                     else 50, random_state=s),
        # scikit-learn's default learning rate (0.1) is also the best of 0.001-0.1 here
        "BernoulliRBM": lambda k, s: BernoulliRBM(n_components=k, learning_rate=0.1, batch_size=10,
                                                  n_iter=20 if quick else 100, random_state=s),
        "Harmonium (ML)": lambda k, s: Harmonium(k, learning_rate=0.002, n_iter=30 if quick else 150,
                                                 batch_size=10, random_state=s),
        "BayesianHarmonium() defaults": lambda k, s: BayesianHarmonium(
            k, random_state=s, **(dict(n_burn_in=50, n_samples=10, n_em_iter=2, em_samples=5, ml_n_iter=30)
                                  if quick else {})),
    }
    if not quick:  # the earlier table's setting: the ML start of the Harmonium row, shorter burn-in
        models["BayesianHarmonium (ML start lr 0.002, 150 passes; 300 burn-in)"] = lambda k, s: BayesianHarmonium(
            k, n_burn_in=300, n_samples=200, thinning=5, n_em_iter=10, em_samples=5, ml_learning_rate=0.002,
            ml_n_iter=150, random_state=s)
    rows = []
    for name, make in models.items():
        for k in J_list:
            t0 = time.perf_counter()
            Z = make(k, 0).fit(X).transform(X)
            sec = time.perf_counter() - t0
            accs = []
            for s in range(n_splits):
                perm = np.random.default_rng(1000 + s).permutation(len(X))
                tr, te = perm[: len(X) // 2], perm[len(X) // 2:]
                knn = KNeighborsClassifier(1).fit(Z[tr], y[tr])
                accs.append(knn.score(Z[te], y[te]))
            rows.append(dict(model=name, k=k, acc=float(np.mean(accs)), se=float(np.std(accs) / np.sqrt(n_splits)),
                             seconds=sec))
            print(f"  {name:22s} k={k:2d} acc {rows[-1]['acc']:.3f} ± {rows[-1]['se']:.3f}  {sec:.2f} s", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, seconds")
    ap.add_argument("--plot", default=None, help="write the accuracy-vs-components plot here")
    args = ap.parse_args(argv)
    docs, y = load_mini_newsgroup()
    vec = CountVectorizer(binary=True, stop_words="english", min_df=3, token_pattern=r"(?u)\b[a-zA-Z]{3,}\b")
    X = vec.fit_transform(docs).toarray().astype(float)
    print(f"mini_newsgroup: {X.shape[0]} documents, {X.shape[1]} binary word features (min_df=3, English stop words)")
    J_lik = [4] if args.quick else [4, 16]
    seeds = [0] if args.quick else [0, 1]
    freq = X.sum(axis=0)
    datasets = {"digits 4x4": digits_4x4(), "newsgroup top-16 words": X[:, np.argsort(freq)[::-1][:16]]}
    print("\n1. held-out exact log-likelihood per example (nats), M = 16; 50/25/25 split, seeds", seeds,
          "; learning rate from", LR_GRID if not args.quick else LR_GRID[1:2], "on validation")
    lrows = likelihood_table(datasets, J_lik, seeds, args.quick)
    print("| data | J | model | held-out log-lik | vs independent units | vs BernoulliRBM | lr | fit s |")
    print("|---|---|---|---|---|---|---|---|")
    for dname in datasets:
        for J in J_lik:
            rbm = np.mean([r["ll"] for r in lrows if r["data"] == dname and r["J"] == J and r["model"] == "BernoulliRBM"])
            for name in ("Harmonium (ML, CD-1)", "BayesianHarmonium() defaults", "BayesianHarmonium (sigma = 1)",
                         "BernoulliRBM"):
                sel = [r for r in lrows if r["data"] == dname and r["J"] == J and r["model"] == name]
                ll = np.mean([r["ll"] for r in sel])
                ind = np.mean([r["indep"] for r in sel])
                lrs = sorted({r["lr"] for r in sel if r["lr"] is not None})
                print(f"| {dname} | {J} | {name} | {ll:.3f} | {ll - ind:+.3f} | {ll - rbm:+.3f} | "
                      f"{','.join(map(str, lrs)) or '-'} | {np.mean([r['seconds'] for r in sel]):.2f} |")

    J_cls = [4] if args.quick else [4, 8, 16, 32]  # quick: one column, every model still runs
    print("\n2. 1-NN accuracy on projections (fit on all 200 docs unsupervised; 20 random half splits)")
    crows = classification_table(X, y, J_cls, args.quick, n_splits=5 if args.quick else 20)
    names = list(dict.fromkeys(r["model"] for r in crows))
    print("| model | " + " | ".join(f"k={k}" for k in J_cls) + " | fit s (k=" + str(J_cls[-1]) + ") |")
    print("|---|" + "---|" * (len(J_cls) + 1))
    for name in names:
        sel = {r["k"]: r for r in crows if r["model"] == name}
        print(f"| {name} | " + " | ".join(f"{sel[k]['acc']:.3f}" for k in J_cls) + f" | {sel[J_cls[-1]]['seconds']:.2f} |")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 3.8))
        for name in names:
            sel = [r for r in crows if r["model"] == name]
            ax.errorbar([r["k"] for r in sel], [r["acc"] for r in sel], yerr=[r["se"] for r in sel], marker="o",
                        capsize=3, label=name)
        ax.set_xscale("log", base=2)
        ax.set_xticks(J_cls, [str(k) for k in J_cls])
        ax.set_xlabel("components / topics")
        ax.set_ylabel("1-NN accuracy")
        ax.set_title("mini_newsgroup, binary words (Guo & Xing 2006, Fig. 7 protocol)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print("plot:", args.plot)


if __name__ == "__main__":
    main()
