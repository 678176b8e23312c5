"""LDA: BMM projections against exact posteriors, Gibbs against enumeration, the VB
bound, held-out perplexity by hand, the estimator API and bad input."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import gammaln
from sklearn.base import clone
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import Pipeline

from recognizers.modelling import LDA, heldout_perplexity
from recognizers.modelling.topics import lda_core as core
from recognizers.modelling.dirichlet import project_mixture
from recognizers.modelling.topics.perplexity import split_documents
from recognizers.modelling.datasets import make_lda_corpus, topic_recovery


def csr(rows):
    M = sp.csr_matrix(np.asarray(rows, dtype=np.int64))
    M.indptr = M.indptr.astype(np.int64)
    M.indices = M.indices.astype(np.int64)
    return M


# ---- Algorithm 3: theta with the topics known ---------------------------------------
def test_algorithm3_one_word_is_the_projection_of_the_exact_posterior():
    phi = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.3, 0.3, 0.4]])
    alpha = np.array([0.5, 1.0, 2.0])
    M = csr([[0, 0, 1]])  # one token of word 2
    mean = core.bmm_fold_in(M.indptr, M.indices, M.data, phi, alpha,
                            np.zeros(1, np.int64), 1)[0]
    # exact posterior: sum_t c_t Dir(alpha + e_t), c_t ∝ alpha_t phi_t2
    c = alpha * phi[:, 2]
    c /= c.sum()
    exact_mean = sum(c[t] * (alpha + np.eye(3)[t]) / (alpha.sum() + 1) for t in range(3))
    np.testing.assert_allclose(mean, exact_mean, rtol=1e-12)
    projected = project_mixture(c, alpha + np.eye(3))
    np.testing.assert_allclose(mean, projected / projected.sum(), rtol=1e-12)


def test_algorithm3_keeps_first_moments_exactly_at_every_word():
    """Each update's mean equals the mean of the exact one-step mixture of the previous
    (projected) Dirichlet: the projection preserves first moments."""
    rng = np.random.default_rng(1)
    phi = rng.dirichlet(np.ones(4), size=3)
    alpha0 = np.array([0.3, 0.7, 1.1])
    a = alpha0.copy()
    for n in range(1, 6):  # the same word n times: token order cannot matter
        c = a * phi[:, 1]
        c /= c.sum()
        expected = sum(c[t] * (a + np.eye(3)[t]) / (a.sum() + 1) for t in range(3))
        a = project_mixture(c, a + np.eye(3))
        M = csr([[0, n, 0, 0]])
        got = core.bmm_fold_in(M.indptr, M.indices, M.data, phi, alpha0,
                               np.zeros(1, np.int64), 1)[0]
        np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_bmm_phi_update_matches_the_projection_of_the_two_component_mixture():
    beta = np.array([0.4, 1.3, 0.2, 2.0])
    w, c = 2, 0.35
    f, nbw, nB, nS2 = core.bmm_phi_update(beta.sum(), (beta ** 2).sum(), beta[w], c)
    new = beta * f
    new[w] = nbw
    exact = project_mixture([c, 1 - c], np.stack([beta + np.eye(4)[w], beta]))
    np.testing.assert_allclose(new, exact, rtol=1e-10)
    assert nB == pytest.approx(new.sum()) and nS2 == pytest.approx((new ** 2).sum())


# ---- collapsed Gibbs against enumeration ---------------------------------------------
def collapsed_posterior(words, K, W, alpha, beta):
    """p(z | w) for one document by enumerating every assignment."""
    probs = {}
    for z in itertools.product(range(K), repeat=len(words)):
        ndk = np.bincount(z, minlength=K)
        nkw = np.zeros((K, W))
        for t, w in zip(z, words):
            nkw[t, w] += 1
        lp = np.sum(gammaln(ndk + alpha))
        lp += np.sum(gammaln(nkw + beta)) - np.sum(gammaln(nkw.sum(1) + W * beta))
        probs[z] = lp
    top = max(probs.values())
    total = sum(np.exp(v - top) for v in probs.values())
    return {z: np.exp(v - top) / total for z, v in probs.items()}


def test_gibbs_sampler_visits_assignments_with_their_exact_posterior_probability():
    words = np.array([0, 1, 1, 2])
    K, W, alpha, beta = 2, 3, 0.7, 0.4
    exact = collapsed_posterior(words, K, W, alpha, beta)
    doc = np.zeros(len(words), np.int64)
    rng = np.random.default_rng(0)
    z = rng.integers(0, K, len(words))
    ndk, nkw, nk = np.zeros((1, K), np.int64), np.zeros((K, W), np.int64), np.zeros(K, np.int64)
    core.gibbs_init_counts(doc, words, z, ndk, nkw, nk)
    a, b = np.full(K, alpha), np.full((K, W), beta)
    counts = {}
    n = 40_000
    for _ in range(n):
        core.gibbs_sweep(doc, words, z, ndk, nkw, nk, a, b, b.sum(1), rng.random(len(words)))
        counts[tuple(z)] = counts.get(tuple(z), 0) + 1
    for assignment, p in exact.items():
        assert counts.get(assignment, 0) / n == pytest.approx(p, abs=0.012), assignment


# ---- VB --------------------------------------------------------------------------------
def test_vb_bound_never_decreases():
    X, _, _ = make_lda_corpus(n_topics=3, n_words=60, n_docs=15, doc_length=(50, 120),
                              random_state=2)
    lda = LDA(3, method="vb", max_iter=40, tol=0.0, random_state=0).fit(X)
    b = lda.bound_
    assert len(b) == 40
    assert np.all(np.diff(b) >= -1e-9 * np.abs(b[:-1])), np.diff(b).min()


# ---- held-out perplexity ---------------------------------------------------------------
def test_heldout_perplexity_with_one_topic_is_the_unigram_perplexity_of_the_second_half():
    rng = np.random.default_rng(3)
    phi = rng.dirichlet(np.ones(8))[None]
    X = csr(rng.integers(0, 5, size=(6, 8)))
    _, second = split_documents(X, random_state=0)
    expected = np.exp(-(second.multiply(np.log(phi))).sum() / second.sum())
    assert heldout_perplexity(phi, 0.3, X, random_state=0) == pytest.approx(expected, rel=1e-12)


def test_heldout_perplexity_with_disjoint_topics_uses_the_exact_posterior_mean():
    phi = np.array([[0.5, 0.5, 0, 0], [0, 0, 0.25, 0.75]])
    alpha = np.array([0.4, 0.9])
    X = csr([[3, 1, 2, 2], [0, 4, 1, 3]])
    first, second = split_documents(X, random_state=0)
    ll = 0.0
    for d in range(2):
        n = np.array([first[d, :2].sum(), first[d, 2:].sum()])
        theta = (alpha + n) / (alpha.sum() + n.sum())
        p = theta @ phi
        ll += float(second[d].toarray()[0] @ np.log(np.where(p > 0, p, 1)))
    expected = np.exp(-ll / second.sum())
    assert heldout_perplexity(phi, alpha, X, random_state=0) == pytest.approx(expected,
                                                                             rel=1e-9)


# ---- the estimator ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def thesis_corpus():
    X, doc_topic, topic_word = make_lda_corpus(random_state=0)  # T=5, W=1000, 20 docs
    rng = np.random.default_rng(5)
    theta = rng.dirichlet(np.full(5, 0.5), size=10)
    X_test = csr([rng.multinomial(3000, th @ topic_word) for th in theta])
    return X, X_test, topic_word


@pytest.mark.parametrize("method,kw,max_h", [("bmm", {}, 0.45), ("gibbs", {"max_iter": 200},
                                                                    0.25),
                                               ("vb", {"random_state": 2}, 0.25)])
def test_each_learner_recovers_the_thesis_synthetic_topics(thesis_corpus, method, kw, max_h):
    X, X_test, topic_word = thesis_corpus
    params = dict(doc_topic_prior=0.5, topic_word_prior=0.1, random_state=0)
    params.update(kw)
    lda = LDA(5, method=method, **params).fit(X)
    h, _, _ = topic_recovery(lda.topic_word_, topic_word)
    assert h < max_h
    true = heldout_perplexity(topic_word, 0.5, X_test)
    assert true <= lda.completion_perplexity(X_test) < 1.2 * true
    theta = lda.transform(X)
    np.testing.assert_allclose(theta.sum(1), 1.0)
    np.testing.assert_allclose(lda.topic_word_.sum(1), 1.0)


def test_bmm_in_batches_equals_one_fit_and_streams_from_a_generator(thesis_corpus):
    X, _, _ = thesis_corpus
    whole = LDA(5, random_state=4).fit(X)
    streamed = LDA(5, random_state=4)
    batches = (X[i:i + 6] for i in range(0, X.shape[0], 6))
    for batch in batches:
        streamed.partial_fit(batch)
    np.testing.assert_allclose(streamed.components_, whole.components_, rtol=1e-9)
    assert streamed.n_documents_seen_ == X.shape[0] == whole.n_documents_seen_
    assert streamed.n_tokens_seen_ == X.sum()


def test_parallel_bmm_on_dask_threads_merges_the_shards(thesis_corpus):
    X, X_test, topic_word = thesis_corpus
    params = dict(doc_topic_prior=0.5, topic_word_prior=0.1, random_state=0)
    parallel = LDA(5, **params).fit_parallel(X, n_shards=2)
    serial = LDA(5, **params).fit(X)
    assert parallel.n_tokens_seen_ == serial.n_tokens_seen_ == X.sum()
    assert parallel.components_.shape == serial.components_.shape
    assert np.all(parallel.components_ > 0)
    true = heldout_perplexity(topic_word, 0.5, X_test)
    assert parallel.completion_perplexity(X_test) < 1.25 * true
    with pytest.raises(ValueError, match="BMM"):
        LDA(5, method="vb").fit_parallel(X)


def test_clone_pipeline_and_npz_round_trip(tmp_path):
    docs = ["walk walk turn stand", "sit stand stand", "walk turn turn walk", "sit sit"] * 3
    pipe = Pipeline([("counts", CountVectorizer()), ("lda", LDA(2, method="vb",
                                                                 random_state=0))])
    theta = pipe.fit_transform(docs)
    assert theta.shape == (12, 2)
    np.testing.assert_allclose(theta.sum(1), 1.0)
    lda = clone(pipe.named_steps["lda"])
    assert not hasattr(lda, "components_") and lda.get_params()["method"] == "vb"
    fitted = pipe.named_steps["lda"]
    np.savez(tmp_path / "lda.npz", **fitted.to_arrays())
    with np.load(tmp_path / "lda.npz", allow_pickle=False) as z:
        back = LDA.from_arrays(dict(z))
    np.testing.assert_array_equal(back.components_, fitted.components_)
    assert back.get_params() == fitted.get_params()
    X = pipe.named_steps["counts"].transform(docs)
    np.testing.assert_array_equal(back.transform(X), fitted.transform(X))


@pytest.mark.parametrize("X,match", [
    # scikit-learn's own wording where it has one (check_array, check_non_negative)
    (np.array([[1, -1]]), "Negative values in data passed to X. X must hold word counts"),
    (np.array([[1.5, 1]]), "fractional"),
    (np.array([[np.nan, 1]]), "NaN"),
    (np.array([[np.inf, 1]]), "infinity"),
    (np.array([[1 + 1j, 1]]), "Complex data not supported"),
    (np.zeros((0, 3)), r"0 sample\(s\)"),
    (np.zeros((2, 0)), r"0 feature\(s\) \(shape=\(2, 0\)\) while a minimum of 1 is required"),
    (np.array([1, 2, 3]), "Expected 2D array"),
    (sp.csr_matrix(np.array([[1.0, -2.0]])), "Negative values in data"),
])
def test_bad_input_is_a_clear_value_error(X, match):
    with pytest.raises(ValueError, match=match):
        LDA(2).fit(X)


def test_empty_documents_get_the_prior_and_vocabulary_must_match():
    X = np.array([[2, 0, 1], [0, 0, 0], [1, 3, 0]])
    lda = LDA(2, random_state=0).fit(X)
    theta = lda.transform(X)
    np.testing.assert_allclose(theta[1], lda.doc_topic_prior_ / lda.doc_topic_prior_.sum())
    assert np.isfinite(theta).all()
    with pytest.raises(ValueError, match="same vocabulary"):
        lda.partial_fit(np.ones((2, 4), dtype=int))
    with pytest.raises(ValueError, match="same vocabulary"):
        lda.transform(np.ones((2, 5), dtype=int))
    with pytest.raises(ValueError):
        LDA(2, method="nope").fit(X)


def test_merge_of_one_shard_is_that_shard_and_of_equal_shards_keeps_their_mean():
    from recognizers.modelling.topics.lda import merge_shards

    rng = np.random.default_rng(0)
    prior = np.full((3, 5), 0.1)
    a = prior + rng.gamma(1.0, 2.0, (3, 5))
    np.testing.assert_allclose(merge_shards(prior, [a]), a)
    merged = merge_shards(prior, [a, a])
    np.testing.assert_allclose(merged / merged.sum(1, keepdims=True),
                               a / a.sum(1, keepdims=True))
    # both shards' evidence counts: precision = prior's + twice the gain
    np.testing.assert_allclose(merged.sum(1), prior.sum(1) + 2 * (a.sum(1) - prior.sum(1)))


def test_score_is_the_mean_completion_log_likelihood_and_perplexity_a_deprecated_alias():
    X, _, topic_word = make_lda_corpus(n_topics=2, n_words=40, n_docs=12, doc_length=(60, 80),
                                       random_state=3)
    lda = LDA(n_components=2, random_state=0).fit(X)
    completion = lda.completion_perplexity(X)
    assert completion == heldout_perplexity(lda.topic_word_, lda.doc_topic_prior_, X,
                                            random_state=0)
    assert lda.score(X) == -np.log(completion)
    with pytest.warns(FutureWarning, match="completion_perplexity"):
        assert lda.perplexity(X) == completion
