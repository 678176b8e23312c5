"""Synthetic data for the estimators (tests and benchmarks): LDA corpora (thesis
5.4.4) and topic-recovery scores, multi-sensor categorical HMMs (thesis 7.4) and
labelled sequence tasks."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from recognizers.modelling.em import check_random_state

__all__ = ["make_lda_corpus", "make_labelled_bars", "topic_recovery", "hellinger",
           "sample_hmm", "make_separable_hmm", "make_two_hmm_task"]


def make_lda_corpus(n_topics: int = 5, n_words: int = 1000, n_docs: int = 20,
                    doc_length=(2000, 5000), doc_topic_prior: float = 0.5,
                    topic_word_prior: float = 0.1, random_state=0):
    """Draw a corpus from LDA: ``(X, doc_topic, topic_word)``.

    Thesis set-up (5.4.4): T = 5 topics, W = 1000 words, 20 documents whose
    lengths are uniform on ``doc_length`` (inclusive).  ``X`` is a CSR (n_docs,
    n_words) int64 count matrix; ``doc_topic`` (n_docs, T) and ``topic_word``
    (T, W) are the true parameters (rows sum to 1).  The thesis does not give
    its alpha and beta; the defaults (0.5, 0.1) give sparse, distinct topics.
    """
    if n_topics < 1 or n_words < 1 or n_docs < 1:
        raise ValueError("n_topics, n_words and n_docs must be positive")
    lo, hi = (doc_length, doc_length) if np.isscalar(doc_length) else doc_length
    if not 0 <= lo <= hi:
        raise ValueError("doc_length must be an int or a (low, high) pair with 0 <= low <= high")
    if doc_topic_prior <= 0 or topic_word_prior <= 0:
        raise ValueError("priors must be positive")
    rng = np.random.default_rng(random_state)
    topic_word = rng.dirichlet(np.full(n_words, float(topic_word_prior)), size=n_topics)
    doc_topic = rng.dirichlet(np.full(n_topics, float(doc_topic_prior)), size=n_docs)
    lengths = rng.integers(lo, hi + 1, size=n_docs)
    rows = []
    for d in range(n_docs):
        # word counts of a document: multinomial over the mixture of its topics
        rows.append(rng.multinomial(lengths[d], doc_topic[d] @ topic_word))
    X = sp.csr_matrix(np.asarray(rows, dtype=np.int64))
    return X, doc_topic, topic_word


def hellinger(p, q) -> np.ndarray:
    """Pairwise Hellinger distances between the rows of ``p`` (A, W) and ``q`` (B, W)."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    p = p / p.sum(1, keepdims=True)
    q = q / q.sum(1, keepdims=True)
    bc = np.sqrt(p) @ np.sqrt(q).T  # Bhattacharyya coefficients
    return np.sqrt(np.clip(1.0 - bc, 0.0, 1.0))


def topic_recovery(learned_topic_word, true_topic_word):
    """Hungarian-matched Hellinger distance between learned and true topics.

    Returns ``(mean_hellinger, per_topic, matching)``: ``matching[i]`` is the
    learned topic matched to true topic ``i`` and ``per_topic[i]`` its distance
    (``nan`` for true topics left unmatched when fewer topics were learned).
    """
    L = np.asarray(learned_topic_word, dtype=np.float64)
    T = np.asarray(true_topic_word, dtype=np.float64)
    if L.ndim != 2 or T.ndim != 2 or L.shape[1] != T.shape[1]:
        raise ValueError("topic-word matrices must be 2-D with the same number of words")
    H = hellinger(T, L)
    rows, cols = linear_sum_assignment(H)
    per = np.full(T.shape[0], np.nan)
    match = np.full(T.shape[0], -1, dtype=np.int64)
    per[rows] = H[rows, cols]
    match[rows] = cols
    return float(np.nanmean(per)), per, match


def make_labelled_bars(n_docs: int = 600, doc_length: int = 100, n_words: int = 50,
                       n_topics: int = 6, n_classes: int = 3, doc_concentration: float = 1.0,
                       label_scale: float = 10.0, random_state=0):
    """Planted topics with labels (digest 002-6): ``(X, y, thetabar, topic_word, mu)``.

    ``n_topics`` "bar" topics, each uniform over one of ``n_topics`` contiguous,
    disjoint blocks of the ``n_words`` words (``numpy.array_split``: 9, 9, 8, 8, 8, 8
    for 50 words).  Documents come from an HDP whose base measure has the bars as
    equally weighted atoms: ``pi_d ~ DP(alpha_0, G_0)``, i.e. ``Dir(alpha_0 / n_topics)``,
    then ``doc_length`` words.  ``thetabar`` (n_docs, n_topics) is each document's
    empirical topic frequency of its words, and the label ``y_d ~ softmax(mu thetabar_d)``
    (paper 002's eqs. 4-5) with ``mu[l, k] = label_scale`` when ``k % n_classes == l``
    (class l loads on topics l, l + C, ...).  ``X`` is a dense int64 count matrix.
    """
    if n_topics < 1 or n_words < n_topics or n_docs < 1 or n_classes < 2:
        raise ValueError("need n_words >= n_topics >= 1, n_docs >= 1 and n_classes >= 2")
    rng = np.random.default_rng(random_state)
    blocks = np.array_split(np.arange(n_words), n_topics)
    topic_word = np.zeros((n_topics, n_words))
    for k, b in enumerate(blocks):
        topic_word[k, b] = 1.0 / len(b)
    mu = np.zeros((n_classes, n_topics))
    mu[np.arange(n_topics) % n_classes, np.arange(n_topics)] = label_scale
    pi = rng.dirichlet(np.full(n_topics, doc_concentration / n_topics), size=n_docs)
    X = np.zeros((n_docs, n_words), dtype=np.int64)
    thetabar = np.zeros((n_docs, n_topics))
    y = np.zeros(n_docs, dtype=np.int64)
    for d in range(n_docs):
        z = rng.choice(n_topics, doc_length, p=pi[d])
        thetabar[d] = np.bincount(z, minlength=n_topics) / max(doc_length, 1)
        for k in np.unique(z):
            np.add.at(X[d], rng.choice(blocks[k], int(np.sum(z == k))), 1)
        s = mu @ thetabar[d]
        p = np.exp(s - s.max())
        y[d] = rng.choice(n_classes, p=p / p.sum())
    return X, y, thetabar, topic_word, mu


# --------------------------------------------------------------------------- HMMs


def sample_hmm(startprob, transmat, emissionprob, lengths, random_state=None):
    """Sample ``(X, Z)`` from a multi-sensor categorical HMM.

    ``emissionprob`` is ``(S, N, M)``; returns ``X`` ``(T, S)`` int64 and the
    hidden states ``Z`` ``(T,)``.
    """
    rng = check_random_state(random_state)
    pi = np.asarray(startprob, float)
    A = np.asarray(transmat, float)
    B = np.asarray(emissionprob, float)
    S, N, M = B.shape
    lengths = np.atleast_1d(np.asarray(lengths, dtype=np.int64))
    T = int(lengths.sum())
    Z = np.empty(T, dtype=np.int64)
    cumA = np.cumsum(A, axis=1)
    pos = 0
    for L in lengths:
        u = rng.random(L)
        z = int(np.searchsorted(np.cumsum(pi), u[0] * pi.sum()))
        Z[pos] = min(z, N - 1)
        for t in range(1, L):
            prev = Z[pos + t - 1]
            Z[pos + t] = min(int(np.searchsorted(cumA[prev], u[t] * cumA[prev, -1])), N - 1)
        pos += L
    X = np.empty((T, S), dtype=np.int64)
    cumB = np.cumsum(B, axis=2)
    for s in range(S):
        u = rng.random(T) * cumB[s, Z, -1]
        rows = cumB[s, Z]  # (T, M)
        X[:, s] = np.minimum((rows < u[:, None]).sum(1), M - 1)
    return X, Z


def make_separable_hmm(
    n_states=8,
    n_sensors=6,
    n_symbols=15,
    *,
    self_transition=0.95,
    peak=0.2,
    noise_concentration=20.0,
    random_state=None,
):
    """An HMM in the style of thesis 7.4: on sensor 0 every state ``y`` has its
    own most likely symbol (the observation matrix is "full rank": for each ``y``
    there is a symbol ``e`` with ``P(e | y) > P(e | y')`` for all ``y' != y``).

    Emission rows are ``peak * 1_{e_y} + (1 - peak) * Dirichlet(noise_concentration)``
    with distinct peak symbols ``e_y`` per sensor for sensor 0 and random
    peaks on the other sensors; transitions stay in the same state with
    probability ``self_transition``.  Returns ``(startprob, transmat, emissionprob)``.
    """
    rng = check_random_state(random_state)
    N, S, M = n_states, n_sensors, n_symbols
    if M < N:
        raise ValueError("need n_symbols >= n_states for a separating sensor")
    pi = rng.dirichlet(np.ones(N))
    off = rng.dirichlet(np.ones(N - 1), size=N)
    A = np.zeros((N, N))
    for i in range(N):
        A[i, i] = self_transition
        A[i, np.arange(N) != i] = (1 - self_transition) * off[i]
    B = np.empty((S, N, M))
    for s in range(S):
        peaks = rng.permutation(M)[:N] if s == 0 else rng.integers(0, M, size=N)
        noise = rng.dirichlet(np.full(M, noise_concentration), size=N)
        B[s] = (1 - peak) * noise
        B[s, np.arange(N), peaks] += peak
    # enforce the separating property on sensor 0 exactly
    B0 = B[0]
    for y in range(N):
        e = int(np.argmax(B0[y]))
        others = np.delete(B0[:, e], y)
        if not np.all(B0[y, e] > others):
            B0[y, e] = others.max() + 0.05
            B0[y] /= B0[y].sum()
    return pi, A, B


# --------------------------------------------------------------------------- labelled sequences


def make_two_hmm_task(rng, n: int, T: int = 30):
    """Paper 000's synthetic task (digest 000-6): ``n`` sequences of ``T`` frames, labels
    alternating 0/1, drawn from two 1-D Gaussian HMMs of four states each that share two
    of their states (means 0..10, sd 0.5, stay 0.7). Returns ``(X, y)``: a list of
    (T, 1) arrays scaled to about [-1, 1] (signed: encode with ``encode_signed``) and
    an int array of labels.
    """
    means = np.array([0, 2, 4, 6, 8, 10.0])
    A = np.full((4, 4), 0.1)
    np.fill_diagonal(A, 0.7)
    X, y = [], []
    for i in range(n):
        c = i % 2
        states = [0, 1, 2, 3] if c == 0 else [2, 3, 4, 5]
        s, xs = rng.integers(4), []
        for _ in range(T):
            xs.append(rng.normal(means[states[s]], 0.5))
            s = rng.choice(4, p=A[s])
        X.append((np.array(xs)[:, None] - 5.0) / 5.0)
        y.append(c)
    return X, np.array(y)
