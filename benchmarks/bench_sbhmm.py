"""StickBreakingHMM (max_states=20, defaults) against hmmlearn told the true K (issue 32).

Sticky Gaussian HMMs with K = 3, 5 and 8 true states in 2-D: means on a circle with
neighbours 2.5 apart, random full covariances (variance about 0.5-1), so neighbouring
emissions overlap; self-transition 0.95, the rest uniform; T = 2,000 frames.  Error =
Hungarian-matched segmentation error over all frames (frames of extra states count as
errors); states used = states holding at least 1 % of the frames; seconds = fit wall time.

    python benchmarks/bench_sbhmm.py [--quick] [--seeds N] [--restarts R]

Peer: hmmlearn GaussianHMM(K, "full") told the true K, n_iter=500, tol=1e-4 (absolute
log-likelihood change; ours stops at a 1e-6 relative ELBO change, about 1e-2 absolute
here, so the peer's rule is the stricter one), best of R restarts (default 10) by
log-likelihood.  Goals: states used within +/-1 of K, error within 2 points of the peer.
"""
import argparse
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from recognizers.modelling.matching import hungarian_error  # noqa: E402
from recognizers.modelling.hmm.sbhmm import StickBreakingHMM  # noqa: E402


def task(K, seed, T, stay=0.95, spacing=2.5):
    """Sticky K-state HMM with overlapping 2-D Gaussian emissions: (X, true states)."""
    rng = np.random.default_rng(seed)
    A = np.full((K, K), (1 - stay) / (K - 1)) + np.eye(K) * (stay - (1 - stay) / (K - 1))
    angle = 2 * np.pi * np.arange(K) / K
    means = spacing * K / (2 * np.pi) * np.c_[np.cos(angle), np.sin(angle)]
    z = np.zeros(T, int)
    z[0] = rng.integers(K)
    for t in range(1, T):
        z[t] = rng.choice(K, p=A[z[t - 1]])
    chol = []
    for _ in range(K):
        u = rng.standard_normal(2)
        chol.append(np.linalg.cholesky(0.5 * np.eye(2) + 0.25 * np.outer(u, u)))
    X = means[z] + np.einsum("tde,te->td", np.array(chol)[z], rng.standard_normal((T, 2)))
    return X, z


def run_hmmlearn(X, K, seed, restarts):
    try:
        from hmmlearn.hmm import GaussianHMM
    except ImportError:
        sys.exit("bench_sbhmm needs hmmlearn: pip install hmmlearn")
    best = None
    for r in range(restarts):
        m = GaussianHMM(K, covariance_type="full", n_iter=500, tol=1e-4,
                        random_state=seed * 100 + r).fit(X)
        s = m.score(X)
        if best is None or s > best[0]:
            best = (s, m)
    return best[1].predict(X)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="K = 3 only, T = 500, 1 seed")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--restarts", type=int, default=None, help="hmmlearn restarts")
    a = ap.parse_args()
    T = 500 if a.quick else 2000
    Ks = (3,) if a.quick else (3, 5, 8)
    seeds = a.seeds or (1 if a.quick else 3)
    restarts = a.restarts or (3 if a.quick else 10)
    ours = StickBreakingHMM(max_states=20)
    print("sticky Gaussian HMMs: T=%d, D=2, K in %s, %d seed(s)" % (T, Ks, seeds))
    print("ours: %r (defaults: %s)" % (ours, ", ".join(
        "%s=%r" % kv for kv in sorted(ours.get_params().items()))))
    print("hmmlearn: GaussianHMM(K, 'full', n_iter=500, tol=1e-4), best of %d restarts"
          % restarts)
    # The defaults rule (docs/benchmarks.md): max_states=20 is not the default (10),
    # so the same task at the defaults is printed beside it.
    print("| K | seed | ours: states used | ours: error % | hmmlearn (K given): error % "
          "| ours s | hmmlearn s | kappa learnt | moves kept "
          "| StickBreakingHMM() defaults: states used | defaults: error % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for K in Ks:
        for seed in range(seeds):
            X, z = task(K, seed, T)
            t0 = time.perf_counter()
            m = StickBreakingHMM(max_states=20, random_state=seed).fit(X)
            t_ours = time.perf_counter() - t0
            t0 = time.perf_counter()
            pred = run_hmmlearn(X, K, seed, restarts)
            t_peer = time.perf_counter() - t0
            e_ours, e_peer = hungarian_error(m.labels_, z), hungarian_error(pred, z)
            rows.append((K, m.n_states_used_, e_ours, e_peer))
            at_defaults = StickBreakingHMM(random_state=seed).fit(X)
            print("| %d | %d | %d | %.2f | %.2f | %.1f | %.1f | %.1f | %d | %d | %.2f |" % (
                K, seed, m.n_states_used_, 100 * e_ours, 100 * e_peer, t_ours, t_peer,
                m.kappa_, len(m.moves_), at_defaults.n_states_used_,
                100 * hungarian_error(at_defaults.labels_, z)), flush=True)
    ok_states = sum(abs(u - K) <= 1 for K, u, _, _ in rows)
    ok_err = sum(eo <= ep + 0.02 for _, _, eo, ep in rows)
    print("states within +/-1: %d of %d runs; error within 2 points of hmmlearn: %d of %d"
          % (ok_states, len(rows), ok_err, len(rows)))


if __name__ == "__main__":
    main()
