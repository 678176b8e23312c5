"""Held-out perplexity of a topic model by document completion (thesis eq 5.46).

One estimator for every model (ours and the peers'), so their numbers compare:

1. each test document's tokens are split in two halves at random (seeded): the
   first ``floor(N_d / 2)`` tokens of a random permutation, and the rest;
2. the document's topic proportions are folded in on the first half with the
   topic-word matrix fixed: the fixed point ``theta_t ∝ alpha_t + sum_n r_nt``,
   ``r_nt ∝ theta_t phi_t,w_n`` (Dirichlet-smoothed mixture weights; with no
   observed tokens it is the prior mean ``alpha / sum alpha``);
3. ``perplexity = exp(-sum_d log p(second half_d | theta_d) / sum_d N_d^(2))``
   with ``log p(second half) = sum_n log sum_t theta_t phi_t,w_n``.

Where the proportions are known exactly (one topic, or topics with disjoint
vocabularies, where every responsibility is 0 or 1) step 2 is the exact
posterior mean ``(alpha_t + n_t) / (alpha_. + N)``.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array
from sklearn.utils.validation import check_non_negative

from recognizers.modelling.topics.lda_core import completion_loglik, fold_in_theta

__all__ = ["heldout_perplexity", "split_documents", "check_counts", "check_vocabulary",
           "entry_documents"]


def check_vocabulary(M: sp.csr_matrix, n_words: int) -> sp.csr_matrix:
    """``M`` if it has the ``n_words`` columns a topic model was fitted with."""
    if M.shape[1] != n_words:
        raise ValueError("X has %d words but the model was fitted with %d; use the same "
                         "vocabulary" % (M.shape[1], n_words))
    return M


def entry_documents(M) -> np.ndarray:
    """The document (row) of each stored word entry of the CSR matrix ``M``, shape (nnz,)."""
    return np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))


def check_counts(X, name: str = "X") -> sp.csr_matrix:
    """A document-term count matrix as CSR int64 after checking it.

    scikit-learn's :func:`~sklearn.utils.check_array` and
    :func:`~sklearn.utils.validation.check_non_negative` refuse, in their own words,
    NaN/inf, complex or non-numeric values, a wrong number of axes, no documents, an
    empty vocabulary and negative counts; fractional counts are refused here (the
    moment-matching and Gibbs learners draw whole tokens).  Empty documents are
    allowed.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_docs, n_words)
        Word counts, in any scipy.sparse format or dense.
    name : str, default "X"
        The argument's name in messages.

    Returns
    -------
    scipy.sparse.csr_matrix of int64, shape (n_docs, n_words)
        Explicit zeros dropped, duplicates summed, int64 indices.
    """
    A = check_array(X, accept_sparse="csr", dtype="numeric", input_name=name)
    data = A.data if sp.issparse(A) else A
    try:
        check_non_negative(A, name)
    except ValueError as exc:  # scikit-learn's words, then what the model needs
        raise ValueError(f"{exc} {name} must hold word counts.") from None
    if np.any(data != np.round(data)):
        raise ValueError(f"{name} contains fractional counts; LDA needs integer word counts")
    M = sp.csr_matrix(A)
    M = sp.csr_matrix((np.asarray(M.data, dtype=np.int64), M.indices, M.indptr), shape=M.shape)
    M.eliminate_zeros()
    M.sum_duplicates()
    M.indptr = M.indptr.astype(np.int64)
    M.indices = M.indices.astype(np.int64)
    return M


def split_documents(X, random_state=0) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Split each document's tokens in two random halves: ``(first, second)``.

    ``first`` holds ``floor(N_d / 2)`` tokens of each document, ``second`` the rest.
    """
    M = check_counts(X)
    rng = np.random.default_rng(random_state)
    D, W = M.shape
    tok_doc = np.repeat(entry_documents(M), M.data)
    tok_word = np.repeat(M.indices, M.data)
    n_tok = np.bincount(tok_doc, minlength=D)
    order = np.lexsort((rng.random(tok_doc.size), tok_doc))
    starts = np.concatenate(([0], np.cumsum(n_tok)[:-1]))
    rank = np.arange(tok_doc.size) - np.repeat(starts, n_tok)  # position within the doc
    first = rank < np.repeat(n_tok // 2, n_tok)
    d_sorted, w_sorted = tok_doc[order], tok_word[order]
    ones = np.ones(tok_doc.size, dtype=np.int64)

    def build(mask):
        m = sp.csr_matrix((ones[mask], (d_sorted[mask], w_sorted[mask])), shape=(D, W))
        return check_counts(m)

    return build(first), build(~first)


def heldout_perplexity(topic_word, doc_topic_prior, X_test, random_state=0, n_iter=100,
                       tol=1e-6) -> float:
    """Document-completion perplexity of ``X_test`` under ``topic_word`` (eq 5.46).

    ``topic_word``: (K, W) rows summing to 1 (rows are renormalised; zeros are
    allowed but a held-out word that no topic can emit gives ``inf``).
    ``doc_topic_prior``: scalar or (K,) Dirichlet parameter of the proportions.
    ``n_iter``/``tol``: the fold-in fixed point's iterations and L1 tolerance.
    """
    phi = np.asarray(topic_word, dtype=np.float64)
    if phi.ndim != 2 or phi.shape[0] < 1 or phi.shape[1] < 1:
        raise ValueError(f"topic_word must be a non-empty (K, W) matrix, got shape {phi.shape}")
    if not np.all(np.isfinite(phi)) or np.any(phi < 0):
        raise ValueError("topic_word must be finite and non-negative")
    rs = phi.sum(1, keepdims=True)
    if np.any(rs <= 0):
        raise ValueError("every topic_word row needs positive mass")
    phi = phi / rs
    K, W = phi.shape
    alpha = np.broadcast_to(np.asarray(doc_topic_prior, dtype=np.float64), (K,)).copy()
    if not np.all(np.isfinite(alpha)) or np.any(alpha <= 0):
        raise ValueError("doc_topic_prior must be positive and finite")
    M = check_counts(X_test, "X_test")
    if M.shape[1] != W:
        raise ValueError(
            f"X_test has {M.shape[1]} words but topic_word has {W}; use the same vocabulary")
    if int(n_iter) < 1:
        raise ValueError("n_iter must be at least 1")
    first, second = split_documents(M, random_state)
    n2 = int(second.data.sum())
    if n2 == 0:
        raise ValueError("X_test has no tokens to hold out")
    theta = fold_in_theta(first.indptr, first.indices, first.data, phi, alpha, int(n_iter),
                          float(tol))
    ll = completion_loglik(second.indptr, second.indices, second.data, phi, theta)
    return float(np.exp(-ll / n2))
