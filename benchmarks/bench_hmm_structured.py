"""Chain kernels on persistence-structured vs dense transitions, against hmmlearn.

The default walker model's transitions stay with probability p and otherwise
move uniformly; recognizers.modelling.chain detects that and runs O(K) steps.
Both libraries get the same per-frame log-likelihoods (emission cost excluded,
so this isolates the recursions) and the same sequences; hmmlearn's compiled
kernels (``_hmmc.viterbi``, ``forward_log``, ``forward_scaling``) are called per
sequence exactly as ``GaussianHMM.decode`` / ``score`` call them, and we report
the faster of its log and scaling forward.  Timing: best of --repeats wall-clock
runs after one warm-up.
"""
import argparse
import time

import hmmlearn
import numpy as np
from hmmlearn import _hmmc

from recognizers.modelling import chain


def best_of(fn, repeats):
    fn()
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run(K, kind, args, rng):
    if kind == "persistence":
        A = np.full((K, K), (1 - args.stay) / (K - 1))
        np.fill_diagonal(A, args.stay)
    else:
        A = rng.dirichlet(np.ones(K), size=K)
    pi = rng.dirichlet(np.ones(K))
    T = args.sequences * args.length
    log_lik = rng.normal(scale=2.0, size=(T, K))
    lengths = [args.length] * args.sequences
    log_A, log_pi = np.log(A), np.log(pi)
    assert (chain.persistence_structure(log_A) is not None) == (kind == "persistence")
    bounds = np.cumsum([0] + lengths)
    parts = [log_lik[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    likes = [np.exp(p) for p in parts]

    def hl_vit():
        return [_hmmc.viterbi(pi, A, p) for p in parts]

    def hl_log():
        return sum(_hmmc.forward_log(pi, A, p)[0] for p in parts)

    def hl_scal():
        return sum(_hmmc.forward_scaling(pi, A, q)[0] for q in likes)

    ours_v = chain.viterbi(log_pi, log_A, log_lik, lengths)
    theirs_v = np.concatenate([r[1] for r in hl_vit()])
    same = bool(np.array_equal(ours_v.path, theirs_v))
    ll = chain.log_likelihood(log_pi, log_A, log_lik, lengths)
    rel = abs(ll - hl_log()) / abs(ll)
    rows = []
    o = best_of(lambda: chain.viterbi(log_pi, log_A, log_lik, lengths), args.repeats)
    h = best_of(hl_vit, args.repeats)
    rows.append((kind, K, "viterbi", o, h, "same path" if same else "PATH DIFFERS"))
    o = best_of(lambda: chain.log_likelihood(log_pi, log_A, log_lik, lengths), args.repeats)
    h = min(best_of(hl_log, args.repeats), best_of(hl_scal, args.repeats))
    rows.append((kind, K, "score", o, h, "rel. diff %.1e" % rel))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--states", type=int, nargs="+", default=[6, 12, 24])
    p.add_argument("--sequences", type=int, default=50)
    p.add_argument("--length", type=int, default=2000)
    p.add_argument("--stay", type=float, default=0.95)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="small sizes, runs in seconds (CI)")
    args = p.parse_args()
    if args.quick:
        args.states, args.sequences, args.length, args.repeats = [6], 3, 300, 1
    print("# hmmlearn %s; %d sequences x %d frames; stay=%.2f; best of %d"
          % (hmmlearn.__version__, args.sequences, args.length, args.stay, args.repeats))
    print("| transitions | K | operation | ours ms | hmmlearn ms | speed-up | check |")
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for K in args.states:
        for kind in ("persistence", "dense"):
            for kind_, k, op, o, h, note in run(K, kind, args, rng):
                print("| %s | %d | %s | %.2f | %.2f | %.1fx | %s |"
                      % (kind_, k, op, o * 1e3, h * 1e3, h / o, note))


if __name__ == "__main__":
    main()
