"""Latent-HMM recovery (issue 21, digest 001-6): LM2GP against its baselines.

A 3-state sticky HMM in 2-D mapped to 10-D by a random RBF network plus noise.
Everything fits the same data; error = Hungarian-matched segmentation error over
all frames (extra states count as errors); seconds = wall time of fit + predict.

    python benchmarks/bench_lm2gp.py [--quick] [--seeds N]

Peers: hmmlearn GaussianHMM told the true number of states (full covariance,
n_iter=200, tol=1e-4, best of 5 restarts by log-likelihood), our
StickBreakingHMM on the raw data, and PCA(2) + StickBreakingHMM standing in for
the paper's GPLVM + SB-HMM baseline (GPy is not installed here).
"""
import argparse
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from recognizers.modelling.gp.lm2gp import LM2GP  # noqa: E402
from recognizers.modelling.matching import hungarian_error  # noqa: E402
from recognizers.modelling.hmm.sbhmm import StickBreakingHMM  # noqa: E402


def task(seed, T, D=10):
    rng = np.random.default_rng(seed)
    A = np.full((3, 3), 0.01) + np.eye(3) * 0.97
    centres = np.array([[0, 0], [3, 0], [0, 3]], float)
    z = np.zeros(T, int)
    for t in range(1, T):
        z[t] = rng.choice(3, p=A[z[t - 1]])
    x = centres[z] + 0.3 * rng.standard_normal((T, 2))
    basis = rng.uniform(-1, 4, (20, 2))
    Phi = np.exp(-0.5 * ((x[:, None] - basis[None]) ** 2).sum(-1))
    return Phi @ rng.standard_normal((20, D)) + 0.05 * rng.standard_normal((T, D)), z


def run_hmmlearn(Y, seed):
    from hmmlearn.hmm import GaussianHMM
    best = None
    for r in range(5):
        m = GaussianHMM(3, covariance_type="full", n_iter=200, tol=1e-4,
                        random_state=seed * 10 + r).fit(Y)
        s = m.score(Y)
        if best is None or s > best[0]:
            best = (s, m)
    return best[1].predict(Y), 3


def run_sbhmm(Y, seed):
    m = StickBreakingHMM(max_states=10, n_init=2, random_state=seed).fit(Y)
    return m.labels_, m.n_states_used_


def run_pca_sbhmm(Y, seed):
    Yc = Y - Y.mean(0)
    U, S, _ = np.linalg.svd(Yc, full_matrices=False)
    m = StickBreakingHMM(max_states=10, n_init=2, random_state=seed).fit(U[:, :2] * S[:2])
    return m.labels_, m.n_states_used_


def run_lm2gp(Y, seed, max_points):
    m = LM2GP(n_latent=2, max_states=10, n_outer=5, lbfgs_iter=30, max_points=max_points,
              random_state=seed).fit(Y)
    return m.predict(Y), m.n_states_used_


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    ap.add_argument("--seeds", type=int, default=None)
    a = ap.parse_args()
    T = 300 if a.quick else 2000
    seeds = a.seeds or (1 if a.quick else 3)
    max_points = 300 if a.quick else 600
    methods = {
        "LM2GP (C=10, Q=2)": lambda Y, s: run_lm2gp(Y, s, max_points),
        "PCA(2) + StickBreakingHMM (C=10)": run_pca_sbhmm,
        "StickBreakingHMM raw (C=10)": run_sbhmm,
        "hmmlearn GaussianHMM (K=3 given)": run_hmmlearn,
    }
    print("latent-HMM recovery: T=%d frames, 10-D, %d seed(s); LM2GP fits %d points, "
          "n_outer=5, lbfgs_iter=30" % (T, seeds, max_points))
    rows = {k: [] for k in methods}
    for s in range(seeds):
        Y, z = task(s, T)
        for name, fn in methods.items():
            t0 = time.perf_counter()
            pred, k = fn(Y, s)
            rows[name].append((hungarian_error(pred, z), k, time.perf_counter() - t0))
    base = np.mean([r[2] for r in rows["hmmlearn GaussianHMM (K=3 given)"]])
    print("| method | error % (mean) | states found | seconds | time / hmmlearn |")
    print("|---|---|---|---|---|")
    for name, r in rows.items():
        r = np.array(r)
        print("| %s | %.2f | %s | %.2f | %.2f |" % (
            name, 100 * r[:, 0].mean(), ",".join(str(int(v)) for v in r[:, 1]),
            r[:, 2].mean(), r[:, 2].mean() / base))


if __name__ == "__main__":
    main()
