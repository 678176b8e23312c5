"""Chain kernels on persistence-structured vs dense transitions, against hmmlearn.

The default walker model's transitions stay with probability p and otherwise
move uniformly; recognizers.modelling.chain detects that and runs O(K) steps.
Both libraries get the same per-frame log-likelihoods (emission cost excluded,
so this isolates the recursions) and the same sequences; hmmlearn's compiled
kernels (``_hmmc.viterbi``, ``forward_log``, ``forward_scaling``,
``backward_scaling``, ``compute_scaling_xi_sum`` and their log versions) are
called per sequence exactly as ``GaussianHMM.decode`` / ``score`` / one EM
E-step call them, and we report the faster of its log and scaling variants.
hmmlearn's scaling variants take likelihoods: the ``exp`` of the log-likelihoods
(which ``GaussianHMM._compute_likelihood`` does) is timed with them, as ours does
it inside its kernels.  Forward-backward = posteriors plus expected transition
counts.  Timing: best of --repeats wall-clock runs after one warm-up.
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

    def hl_vit():
        return [_hmmc.viterbi(pi, A, p) for p in parts]

    def hl_log():
        return sum(_hmmc.forward_log(pi, A, p)[0] for p in parts)

    def hl_scal():
        return sum(_hmmc.forward_scaling(pi, A, np.exp(p))[0] for p in parts)

    def hl_fb_scal():
        out = []
        for p in parts:
            q = np.exp(p)
            ll, fwd, scale = _hmmc.forward_scaling(pi, A, q)
            bwd = _hmmc.backward_scaling(pi, A, q, scale)
            post = fwd * bwd
            post /= post.sum(axis=1, keepdims=True)
            out.append((post, _hmmc.compute_scaling_xi_sum(fwd, A, bwd, q)))
        return out

    def hl_fb_log():
        out = []
        for p in parts:
            ll, fwd = _hmmc.forward_log(pi, A, p)
            bwd = _hmmc.backward_log(pi, A, p)
            lp = fwd + bwd
            lp -= np.logaddexp.reduce(lp, axis=1, keepdims=True)
            out.append((np.exp(lp), np.exp(_hmmc.compute_log_xi_sum(fwd, A, bwd, p))))
        return out

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
    sm = chain.smooth(log_pi, log_A, log_lik, lengths)
    ref = hl_fb_scal()
    post_diff = float(np.abs(sm.posterior - np.concatenate([r[0] for r in ref])).max())
    xi_rel = float(np.abs(sm.trans_counts - sum(r[1] for r in ref)).max()
                   / sm.trans_counts.max())
    o = best_of(lambda: chain.smooth(log_pi, log_A, log_lik, lengths), args.repeats)
    h = min(best_of(hl_fb_log, args.repeats), best_of(hl_fb_scal, args.repeats))
    rows.append((kind, K, "forward-backward", o, h, "max |post diff| %.0e, counts rel. %.0e"
                 % (post_diff, xi_rel)))
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
