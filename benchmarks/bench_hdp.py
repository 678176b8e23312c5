"""Variational HDP against gensim's HdpModel (online VB) and tomotopy's HDPModel
(collapsed Gibbs) on planted "bar" topics (digest 002-6): topics found (carrying at
least 1 % of the words), Hungarian-free bar recovery, held-out perplexity (all through
``heldout_perplexity``, document completion) and seconds.

    PYTHONPATH=$PWD python benchmarks/bench_hdp.py [--quick]

Same data, same hyper-parameters for all three (gamma = 1, alpha_0 = 1, eta = 0.01,
corpus truncation 30 where the peer has one, document truncation 10); gensim gets as
many passes over the corpus as our batch fit may take (max_iter), tomotopy its usual
1,000 Gibbs sweeps.  Each model is fitted once per seed; the table gives each seed.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from recognizers.modelling.hdp import HDP
from recognizers.modelling.perplexity import heldout_perplexity


def bars(n_docs, n_words, n_topics=6, block=8, concentration=0.3, seed=0):
    rng = np.random.default_rng(seed)
    V = n_topics * block
    theta = rng.dirichlet(np.full(n_topics, concentration), size=n_docs)
    X = np.zeros((n_docs, V), dtype=np.int64)
    for d in range(n_docs):
        z = rng.choice(n_topics, n_words, p=theta[d])
        np.add.at(X[d], block * z + rng.integers(0, block, n_words), 1)
    return X


def n_used(share):
    share = np.asarray(share, float)
    return int(np.count_nonzero(share / share.sum() >= 0.01))


def recovery(topic_word, share, block=8, n_topics=6):
    """Worst bar's best mass on one of the used topics (1 = every bar found purely)."""
    used = np.flatnonzero(np.asarray(share) / np.sum(share) >= 0.01)
    tw = topic_word[used]
    return float(min(tw[:, block * k:block * (k + 1)].sum(1).max() for k in range(n_topics)))


def run_ours(X, Xte, K, T, max_iter, seed):
    t = time.perf_counter()
    m = HDP(K, doc_truncation=T, max_iter=max_iter, random_state=seed).fit(X)
    secs = time.perf_counter() - t
    return m.n_topics_used_, recovery(m.topic_word_, m.topic_counts_), m.perplexity(Xte), secs


def run_gensim(X, Xte, K, T, passes, seed):
    from gensim.corpora import Dictionary
    from gensim.models import HdpModel
    vocab = [str(i) for i in range(X.shape[1])]
    d = Dictionary([vocab])
    corpus = [[(j, int(c)) for j, c in enumerate(row) if c] for row in X]
    chunks = passes * int(np.ceil(len(corpus) / 256))
    t = time.perf_counter()
    m = HdpModel(corpus, d, T=K, K=T, alpha=1, gamma=1, eta=0.01, max_chunks=chunks,
                 random_state=seed)
    secs = time.perf_counter() - t
    alpha, beta = m.hdp_to_lda()
    order = [d.token2id[w] for w in vocab]
    beta = beta[:, order]
    share = m.m_lambda_sum
    ppl = heldout_perplexity(beta, np.maximum(alpha, 1e-10), Xte)
    return n_used(share), recovery(beta, share), ppl, secs


def run_tomotopy(X, Xte, iters, seed):
    import tomotopy as tp
    m = tp.HDPModel(initial_k=2, alpha=1.0, eta=0.01, gamma=1.0, seed=seed)
    for row in X:
        m.add_doc([str(j) for j, c in enumerate(row) for _ in range(int(c))])
    t = time.perf_counter()
    m.train(iters, workers=1)
    secs = time.perf_counter() - t
    vocab = list(m.used_vocabs)
    cols = np.array([int(w) for w in vocab])
    live = [k for k in range(m.k) if m.is_live_topic(k)]
    tw = np.full((len(live), X.shape[1]), 1e-12)
    for i, k in enumerate(live):
        tw[i, cols] = m.get_topic_word_dist(k)
    counts = np.asarray(m.get_count_by_topics(), float)[live]
    prior = np.maximum(counts / counts.sum(), 1e-10)  # alpha_0 E[beta], alpha_0 = 1
    return n_used(counts), recovery(tw, counts), heldout_perplexity(tw, prior, Xte), secs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small corpus, one seed (seconds)")
    args = ap.parse_args(argv)
    if args.quick:
        n_docs, n_words, seeds, K, T, max_iter, gibbs = 150, 50, [0], 15, 6, 30, 200
    else:
        n_docs, n_words, seeds, K, T, max_iter, gibbs = 600, 100, [0, 1], 30, 10, 100, 1000
    print(f"planted bars: 6 topics over 48 words, {n_docs} train + {n_docs // 4} test documents "
          f"of {n_words} words, Dirichlet(0.3) proportions")
    print(f"settings: gamma=1 alpha0=1 eta=0.01, K={K} T={T}; ours batch max_iter={max_iter} "
          f"(tol 1e-5, merge moves); gensim {max_iter} passes (chunksize 256, kappa 1, "
          f"tau 64: its defaults); tomotopy {gibbs} Gibbs sweeps, 1 worker")
    print(f"{'seed':>4} {'model':<18} {'topics':>6} {'worst bar':>9} {'perplexity':>10} {'s':>7}")
    for seed in seeds:
        X = bars(n_docs + n_docs // 4, n_words, seed=seed)
        Xtr, Xte = X[:n_docs], X[n_docs:]
        rows = [("HDP (ours)", run_ours(Xtr, Xte, K, T, max_iter, seed)),
                ("gensim HdpModel", run_gensim(Xtr, Xte, K, T, max_iter, seed)),
                ("tomotopy HDPModel", run_tomotopy(Xtr, Xte, gibbs, seed))]
        for name, (k, rec, ppl, s) in rows:
            print(f"{seed:>4} {name:<18} {k:>6} {rec:>9.2f} {ppl:>10.2f} {s:>7.2f}")
        ours = rows[0][1]
        for name, r in rows[1:]:
            print(f"     ours/{name}: perplexity ratio {ours[2] / r[2]:.3f}, time ratio "
                  f"{ours[3] / r[3]:.2f}")


if __name__ == "__main__":
    main()
