"""The batch HDP's move search: which document restarts, merges, deletes, purifies,
splits, births and reorders to try (the estimator's ``moves`` selects the kinds), in
what order, and whether to keep them (Hughes, Kim & Sudderth,
"Reliable and scalable variational inference for the hierarchical Dirichlet process",
AISTATS 2015).

``MoveSearch`` is a mixin of ``hdp.HDP`` (and so of ``shdp.SupervisedHDP``): it uses the
model's E-step, corpus update and bound, and the proposals of ``hdp_moves``.  Every
proposal edits the document factors, sweeps the documents it moved (the others keep
their memoized statistics), and is kept only if the exact whole-corpus bound rises, so
``bound_`` never decreases; a refused proposal restores the state exactly.
"""
from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

from recognizers.modelling import dirichlet
from recognizers.modelling.topics.hdp_core import corpus_statistics as corpus_statistics_kernel
from recognizers.modelling.topics.hdp_core import doc_topic_mass, entry_topic_shares
from recognizers.modelling.topics.hdp_moves import (MergeScores, join_document_topics,
                                                    move_off_topic_words, off_topic_words,
                                                    split_document_topics, split_proposal,
                                                    stick_term, varphi_without_topic)
from recognizers.modelling.topics.perplexity import entry_documents

__all__ = ["MoveSearch", "corpus_statistics", "moved_documents", "DocumentSubset"]


def corpus_statistics(M, varphi, zeta) -> tuple[np.ndarray, np.ndarray]:
    """``(sstats (K, W), counts (K,))`` of the corpus update from the document factors:
    ``sum_e n_e sum_t zeta_et varphi_tk [w_e = w]`` and ``sum_d sum_t varphi_dtk``
    (:func:`hdp_core.corpus_statistics`)."""
    K = varphi.shape[2]
    sstats = np.empty((K, M.shape[1]))
    counts = np.empty(K)
    corpus_statistics_kernel(M.indptr, M.indices, M.data.astype(np.float64), varphi, zeta,
                             sstats, counts)
    return sstats, counts


def moved_documents(M, varphi_before, zeta_before, varphi, zeta, min_words) -> np.ndarray:
    """Indices of the documents in which a proposal moved at least ``min_words`` words:
    between corpus topics (``sum_k |m_dk - m'_dk|``, ``m_dk`` the document's words on
    topic k, :func:`hdp_core.doc_topic_mass`) or between document topics
    (``sum_e n_e sum_t |zeta_et - zeta'_et|``)."""
    n = M.data.astype(np.float64)
    D, _, K = varphi.shape
    before, after = np.empty((D, K)), np.empty((D, K))
    doc_topic_mass(M.indptr, n, varphi_before, zeta_before, before)
    doc_topic_mass(M.indptr, n, varphi, zeta, after)
    rows = entry_documents(M)
    within = np.bincount(rows, n * np.abs(zeta - zeta_before).sum(1), minlength=D)
    moved = np.abs(after - before).sum(1) + within
    return np.flatnonzero(moved >= min_words)


class DocumentSubset:
    """Some documents ``docs`` of a CSR corpus: ``M`` their rows (int64 indices, as the
    kernels want), ``entries`` the positions of their word entries in the whole corpus
    (the rows of zeta), ``words`` the distinct words they have, sorted, and
    ``columns`` each entry's position in ``words``."""

    def __init__(self, M, docs):
        self.docs = docs
        lengths = np.diff(M.indptr)[docs]
        indptr = np.zeros(docs.size + 1, np.int64)
        np.cumsum(lengths, out=indptr[1:])
        self.entries = (np.repeat(M.indptr[docs] - indptr[:-1], lengths)
                        + np.arange(indptr[-1]))
        self.M = sp.csr_matrix((M.data[self.entries], M.indices[self.entries], indptr),
                               shape=(docs.size, M.shape[1]))
        self.M.indptr = indptr
        self.M.indices = M.indices[self.entries].astype(np.int64)
        self.words, self.columns = np.unique(self.M.indices, return_inverse=True)

    def statistics(self, varphi, zeta) -> tuple[np.ndarray, np.ndarray]:
        """:func:`corpus_statistics` of these documents' factors (``varphi`` their rows,
        ``zeta`` their entries'), in the columns ``words`` only: ``(K, len(words))``
        and ``(K,)``."""
        K = varphi.shape[2]
        sstats, counts = np.empty((K, self.words.size)), np.empty(K)
        corpus_statistics_kernel(self.M.indptr, self.columns.astype(np.int64),
                                 self.M.data.astype(np.float64), varphi, zeta, sstats,
                                 counts)
        return sstats, counts


class MoveSearch:
    """Batch moves of the variational HDP (mixed into :class:`hdp.HDP`).

    Moves run when the bound's relative change falls below ``_MOVE_TOL``, at most every
    ``_MOVE_GAP`` iterations, and at convergence; each is kept only if the bound rises.
    The estimator's ``moves`` names the kinds a round tries (:meth:`_move_kinds`).
    """

    #: Every kind of move, in a round's order (``moves`` may name any of them).
    MOVE_KINDS = ("restart", "merge", "delete", "purify", "split", "birth", "sort")
    #: ``moves=True``.  Splits are left out: none was kept in any benchmark fit (planted
    #: bars, five seeds; NewsArticles from starts of 5, 30 and 100; SupervisedHDP on the
    #: planted set and mini_newsgroup), for up to 15 % of a fit's time (docs/benchmarks.md).
    DEFAULT_MOVES = ("restart", "merge", "delete", "purify", "birth", "sort")

    _MOVE_TOL = 1e-3
    _MOVE_GAP = 3
    _DELETE_SHARE = (1e-3, 0.2)   # delete candidates: topics with this share of words
    _DELETE_TRIES = 3
    _DELETE_SWEEPS = 2
    _BIRTH_TRIES = 48             # births tried per round, worst-explained seeds first
    _BIRTH_GROUP = 8              # a birth's documents: its seed and its nearest ...
    _BIRTH_SIMILARITY = 0.2       # ... with this cosine of their excess words at least
    _BIRTH_SWEEPS = 3
    _JOIN_TRIES = 5               # merges tried with joined document topics and sweeps
    _MERGE_SWEEPS = 3
    _PURIFY_TRIES = 3             # purifies tried per round, most off-topic words first
    _PURIFY_SWEEPS = 3
    _SPLIT_TRIES = 4              # splits tried per round, best proposal first
    _SPLIT_SWEEPS = 3
    _RESTART_GAIN = 1e-4          # a restart gaining less is not retried until topics change
    _RETRY_CHANGE = 0.05          # a failed move is retried once its topics change this much
    _SWEEP_MASS = 0.5             # a proposal's sweeps: documents it moved this many words in

    def _move_kinds(self) -> tuple:
        """The kinds of move ``moves`` selects, in :attr:`MOVE_KINDS` order: True is
        :attr:`DEFAULT_MOVES`, False none, or a collection of names."""
        if isinstance(self.moves, (bool, np.bool_)):
            return self.DEFAULT_MOVES if self.moves else ()
        chosen = list(self.moves)
        unknown = sorted(set(map(str, chosen)) - set(self.MOVE_KINDS))
        if unknown:
            raise ValueError(f"moves: unknown kind(s) {unknown}; choose from "
                             f"{list(self.MOVE_KINDS)}, or True ({list(self.DEFAULT_MOVES)})"
                             f" or False")
        return tuple(k for k in self.MOVE_KINDS if k in chosen)

    def _moves(self, M, varphi, zeta, bounds, labels, doc_bounds) -> bool:
        """One round of the selected moves (:meth:`_move_kinds`): a document restart,
        merges, deletes, purifies, splits, births and a reorder (Hughes, Kim & Sudderth
        2015), each kept only if the whole-corpus bound rises; every kept kind of move
        appends its bound to ``bounds``.  Returns whether any move was kept."""
        kept = False
        methods = {"restart": self._restart_move, "merge": self._merge_moves,
                   "delete": self._delete_moves, "purify": self._purify_moves,
                   "split": self._split_moves, "birth": self._birth_moves,
                   "sort": self._sort_move}
        for kind in self._move_kinds():
            new = methods[kind](M, varphi, zeta, bounds[-1], labels, doc_bounds)
            if new is not None:
                bounds.append(new)
                kept = True
        return kept

    def _free_slots(self) -> list:
        """The topics a birth or split may take: those with under ``_DELETE_SHARE[0]``
        of the words (empty slots, or leftovers a new topic may overwrite)."""
        share = self.topic_counts_ / max(self.topic_counts_.sum(), 1e-300)
        return [int(k) for k in np.flatnonzero(share < self._DELETE_SHARE[0])]

    def _forget_failed_moves(self) -> None:
        """A new fit starts with no failed moves."""
        self._failures = {}

    def _remember_failure(self, key, topics) -> None:
        """Move ``key`` failed; it depends on ``topics``, as they are now."""
        topics = np.asarray(topics, dtype=np.int64)
        self._failures[key] = (topics, self.components_[topics].copy())

    def _may_try(self, key) -> bool:
        """Whether the move ``key`` (e.g. ``("delete", j)``) is worth (re)trying: it never
        failed, or one of the topics its proposal touched has since changed its word
        counts by more than ``_RETRY_CHANGE`` of their size (a kept move touching it, or
        the sweeps between rounds).  Retrying after every kept move anywhere, as before,
        cost most of a fit's time: nearly all of those retries fail again."""
        failure = self._failures.get(key)
        if failure is None:
            return True
        topics, before = failure
        now = self.components_[topics]
        eta_total = float(self.topic_word_prior_) * now.shape[1]
        size = np.maximum(np.maximum(now.sum(1), before.sum(1)) - eta_total, 1.0)
        if np.any(np.abs(now - before).sum(1) > self._RETRY_CHANGE * size):
            del self._failures[key]
            return True
        return False

    _PRIORS = ("corpus_concentration_", "doc_concentration_", "topic_word_prior_")

    def _snapshot(self, varphi, zeta):
        names = [n for n in ("components_", "stick_counts_", "topic_counts_", "stick_a_",
                             "stick_b_", "coef_") + self._PRIORS if hasattr(self, n)]
        return varphi.copy(), zeta.copy(), {n: copy.copy(getattr(self, n)) for n in names}

    def _restore(self, snapshot, varphi, zeta) -> None:
        varphi[...], zeta[...] = snapshot[0], snapshot[1]
        for n, v in snapshot[2].items():
            setattr(self, n, v)

    def _globals_from_locals(self, M, varphi, zeta, labels) -> float:
        """Corpus factors (and with ``learn_priors`` the priors) at their optimum given
        the document factors; the bound.  A proposal is judged by the bound maximised
        over the priors too, as the fit's iterations judge their state: priors learnt
        for the old topics would charge a proposal for their mismatch.  The corpus
        factors being the optimum of the statistics, the bound is the documents' local
        terms plus :meth:`HDP._collapsed_corpus_bound` (a tenth of a doc_bound pass)."""
        self._update_corpus(M, varphi, zeta, *self._corpus_statistics(M, varphi, zeta),
                            labels)
        return (self._local_bounds(M, varphi, zeta).sum() + self._collapsed_corpus_bound()
                + self._label_bound(M, varphi, zeta, labels))

    def _restart_move(self, M, varphi, zeta, bound, labels, doc_bounds=None):
        """Restart the documents that a fresh start from their words' best topics
        (:meth:`HDP._take_better_start`) explains better than their warm-started
        factors, then the corpus factors; kept only if the whole-corpus bound rises.

        Warm-started coordinate ascent keeps a document's minority theme on its
        majority theme's document topic once the topics are sharp: no small step
        gives the minority words a document topic of their own.  A corpus topic that
        catches such documents' blends then survives every delete and merge, though
        the state without it has a higher bound (planted bars, seed 4: 9 topics at
        -195,486 nats; 6 clean ones at -193,284 with this move).  A restart that gains
        less than ``_RESTART_GAIN`` of the bound is kept but then waits, as a failed
        one does, until a topic changes (late in a fit on text it kept gaining a few
        nats every round: mini_newsgroup ran to ``max_iter``, 196 s against 69 s).
        Returns the new bound, or None (state unchanged).
        """
        if not self._may_try(("restart",)):
            return None
        every_topic = np.arange(self.components_.shape[0])
        snapshot = self._snapshot(varphi, zeta)
        current = self._estep(M, varphi, zeta, False, labels)[2]  # their bounds, now
        if self._take_better_start(M, varphi, zeta, current, labels).any():
            new = self._globals_from_locals(M, varphi, zeta, labels)
            if new > bound:
                if new - bound < self._RESTART_GAIN * abs(bound):
                    self._remember_failure(("restart",), every_topic)
                return new
        self._restore(snapshot, varphi, zeta)
        self._remember_failure(("restart",), every_topic)
        return None

    def _merge_moves(self, M, varphi, zeta, bound, labels, doc_bounds=None):
        """Merge every pair of topics whose merge raises the bound, best first.

        The change of each merge is exact from the corpus statistics
        (:class:`hdp_moves.MergeScores`); after each merge the pairs of the two topics
        are re-scored, until no merge gains.  The merged state's bound is then
        recomputed from scratch (with the label term, and ``coef_`` refitted, for the
        supervised model) and kept only if it beats ``bound``.  Returns the new bound
        or None.
        """
        eta = float(self.topic_word_prior_)
        K = self.components_.shape[0]
        scores = MergeScores(self.components_ - eta, self.stick_counts_,
                             varphi.reshape(-1, K), eta, self.corpus_concentration_)
        merges = []
        while True:
            best = scores.best(above=1e-9 * abs(bound))
            if best is None:
                break
            merges.append(best)
            scores.merge(*best[:2])
        new = None
        if merges:
            new = self._merge(M, varphi, zeta, bound, labels, [(i, j) for i, j, _ in merges])
            if new is None and len(merges) > 1:  # (the label term can disagree)
                new = self._merge(M, varphi, zeta, bound, labels, [merges[0][:2]])
        # Pairs the statistics call (slightly) bad may still gain once each document
        # joins its two document topics (join_document_topics): try the best few.
        if new is None and not merges:
            used = self.topic_counts_ >= self._DELETE_SHARE[0] * self.topic_counts_.sum()
            allowed = np.triu(used[:, None] & used[None, :], 1)
            for i, j in zip(*np.nonzero(allowed)):
                if not self._may_try(("merge", int(i), int(j))):
                    allowed[i, j] = False
            for _ in range(self._JOIN_TRIES):
                best = scores.best(allowed)
                if best is None:
                    break
                i, j, _ = best
                tried = self._merge(M, varphi, zeta, bound if new is None else new, labels,
                                    [(i, j)], join=True)
                if tried is not None:
                    new = tried
                    break  # indices changed; the next round re-scores
                allowed[i, j] = False
        return new

    def _merge(self, M, varphi, zeta, bound, labels, pairs, join=False):
        """Merge topic j into topic i for each ``(i, j)`` of ``pairs`` in turn; keep the
        result if its bound, recomputed from scratch, beats ``bound``.  With ``join``,
        each document joins its document topics on i and the documents take
        ``_MERGE_SWEEPS`` sweeps first (a merge of two halves of one theme often pays
        only once the documents' words settle).  Returns the new bound, or None (state
        unchanged)."""
        snapshot = self._snapshot(varphi, zeta)
        for i, j in pairs:
            varphi[:, :, i] += varphi[:, :, j]
            varphi[:, :, j] = 0.0
            if hasattr(self, "coef_"):  # the merged topic's label weights: the mean
                w = self.stick_counts_[[i, j]] + 1e-12
                self.coef_[:, i] = (self.coef_[:, [i, j]] @ w) / w.sum()
                self.coef_[:, j] = 0.0
            if join:
                join_document_topics(M.indptr, M.data.astype(np.float64), varphi, zeta, i)
        if join:
            return self._resweep_and_keep(M, varphi, zeta, labels, bound, snapshot,
                                          self._MERGE_SWEEPS, key=("merge", *pairs[0]))
        new = self._globals_from_locals(M, varphi, zeta, labels)
        if new > bound:
            return new
        self._restore(snapshot, varphi, zeta)
        return None

    def _delete_moves(self, M, varphi, zeta, bound, labels, doc_bounds=None):
        """Try deleting the smallest topics (words share in ``_DELETE_SHARE``), smallest
        first; returns the bound after the kept deletes, or None."""
        share = self.topic_counts_ / max(self.topic_counts_.sum(), 1e-300)
        lo, hi = self._DELETE_SHARE
        candidates = [int(k) for k in np.argsort(share) if lo <= share[k] < hi
                      and self._may_try(("delete", int(k)))]
        new_bound = None
        for j in candidates[:self._DELETE_TRIES]:
            new = self._delete_move(M, varphi, zeta, bound, labels, j)
            if new is not None:
                bound = new_bound = new
        return new_bound

    def _delete_move(self, M, varphi, zeta, bound, labels, j):
        """Delete topic j: every document topic mapped to it moves to its best other
        topics (:func:`hdp_moves.varphi_without_topic`), the corpus factors follow and
        the documents take ``_DELETE_SWEEPS`` sweeps without topic j.
        Kept only if the bound rises: returns the new bound, or None (state unchanged;
        deleting an empty topic changes nothing)."""
        snapshot = self._snapshot(varphi, zeta)
        elog_phi, elog_beta = self._elogs()
        if varphi_without_topic(M.indptr, M.indices, M.data.astype(np.float64), elog_phi,
                                elog_beta, zeta, varphi, j) == 0:
            return None
        if hasattr(self, "coef_"):
            self.coef_[:, j] = 0.0
        # the words of the document topics that mapped to j find their new places
        return self._resweep_and_keep(M, varphi, zeta, labels, bound, snapshot,
                                      self._DELETE_SWEEPS, forbid=j, key=("delete", j))

    def _purify_moves(self, M, varphi, zeta, bound, labels, doc_bounds=None):
        """Try purifying the used topics with the most words that another used topic
        explains better (:func:`hdp_moves.move_off_topic_words`), most first: those
        words move to the documents' topics of their themes, the documents take
        ``_PURIFY_SWEEPS`` sweeps, and each purify is kept only if the whole-corpus
        bound rises.  Returns the bound after the kept purifies, or None."""
        share = self.topic_counts_ / max(self.topic_counts_.sum(), 1e-300)
        used = share >= 0.01
        if used.sum() < 2:
            return None
        elog_phi = self._elogs()[0]
        owned = np.empty((M.nnz, self.components_.shape[0]))
        entry_topic_shares(M.indptr, varphi, zeta, owned)
        owned *= M.data[:, None]
        off = off_topic_words(owned, elog_phi[:, M.indices].T, used)
        order = [k for k in np.argsort(-off) if off[k] >= 1.0 and used[k]
                 and self._may_try(("purify", int(k)))]
        new_bound = None
        n = M.data.astype(np.float64)
        for k in order[:self._PURIFY_TRIES]:
            snapshot = self._snapshot(varphi, zeta)
            move_off_topic_words(M.indptr, M.indices, n, self._elogs()[0], zeta, varphi,
                                 int(k), used)
            new = self._resweep_and_keep(M, varphi, zeta, labels, bound, snapshot,
                                         self._PURIFY_SWEEPS, key=("purify", int(k)))
            if new is not None:
                bound = new_bound = new
        return new_bound

    def _split_moves(self, M, varphi, zeta, bound, labels, doc_bounds=None):
        """Try splitting the used topics whose words a two-topic model explains best
        (:func:`hdp_moves.split_proposal`'s gain), best first, into free slots; returns
        the bound after the kept splits, or None.  A topic whose split failed is not
        tried again until its topics change (:meth:`_may_try`)."""
        share = self.topic_counts_ / max(self.topic_counts_.sum(), 1e-300)
        free = self._free_slots()
        candidates = [int(k) for k in np.flatnonzero(share >= 0.01)
                      if self._may_try(("split", int(k)))]
        if not free or not candidates:
            return None
        D, W = M.shape
        rows = entry_documents(M)
        n = M.data.astype(np.float64)
        proposals = []
        for k in candidates:
            owned = n * np.einsum("et,et->e", zeta, varphi[rows, :, k])
            keep = np.flatnonzero(owned > 1e-8)
            part, gain = split_proposal(rows[keep], M.indices[keep], owned[keep], D, W,
                                        float(self.topic_word_prior_),
                                        0.5 * float(self.doc_concentration_),
                                        self.seed_ + int(k))
            if gain > 0:
                full = np.zeros(M.nnz)
                full[keep] = part
                proposals.append((gain, int(k), full))
            else:  # (no proposal until the topic changes)
                self._remember_failure(("split", int(k)), [k])
        proposals.sort(key=lambda p: -p[0])
        new_bound = None
        for gain, k, part in proposals[:self._SPLIT_TRIES]:
            if not free:
                break
            new = self._split_move(M, varphi, zeta, bound, labels, k, int(free[0]), part)
            if new is not None:
                bound = new_bound = new
                free.pop(0)
        return new_bound

    def _split_move(self, M, varphi, zeta, bound, labels, k, k2, part):
        """Split topic k into k and the empty topic k2: each document topic on k hands
        the ``part`` (nnz,) share of its words to a free document topic mapped to k2
        (:func:`hdp_moves.split_document_topics`), the corpus factors follow and the
        documents take ``_SPLIT_SWEEPS`` sweeps.  Kept only if the bound rises:
        returns the new bound, or None (state unchanged)."""
        snapshot = self._snapshot(varphi, zeta)
        if split_document_topics(M.indptr, M.data.astype(np.float64), varphi, zeta, k, k2,
                                 part) == 0:
            return None
        if hasattr(self, "coef_"):  # both halves start with the topic's label weights
            self.coef_[:, k2] = self.coef_[:, k]
        return self._resweep_and_keep(M, varphi, zeta, labels, bound, snapshot,
                                      self._SPLIT_SWEEPS, key=("split", k))

    def _resweep_and_keep(self, M, varphi, zeta, labels, bound, snapshot, n_sweeps,
                          forbid=None, key=None, edited=None, totals=None):
        """Finish a proposal: globals from the edited document factors, up to
        ``n_sweeps`` sweeps of the documents the proposal moved (topic ``forbid`` kept
        empty), then keep it if the whole-corpus bound rose (returns the new bound) or
        restore ``snapshot`` (returns None; a failure is remembered under ``key`` with
        the statistics of the topics the proposal touched, for :meth:`_may_try`).

        Only the documents in which the proposal moved at least ``_SWEEP_MASS`` words
        (:func:`moved_documents`) are swept; the corpus statistics are the others'
        memoized contributions plus theirs (Hughes, Kim & Sudderth's memoized
        inference).  The exact whole-corpus bound after each sweep decides: the
        proposal is kept as soon as it beats ``bound`` (the fit's next sweeps go on
        from there), and given up when even the last sweep's gain, repeated for every
        sweep left, would not reach it (coordinate ascent's gains shrink).

        ``edited`` (the documents whose factors the proposal changed, all of them)
        screens the proposal first (:meth:`_screened_bound`): the sweeps run at the
        snapshot's priors from its memoized statistics, with no whole-corpus pass, and
        the exact check with the priors relearnt runs only if that bound beats
        ``bound`` (relearning can only raise it).  A proposal that wins only once the
        priors move is lost; births, most of which fail, take it (unlabelled model).
        ``totals`` (a dict, filled on first use) memoizes the snapshot's whole-corpus
        sums for the next proposals from the same state (:meth:`_state_totals`)."""
        before = snapshot[2]["components_"]
        if edited is not None and labels is None:
            new = self._screened_bound(M, varphi, zeta, bound, snapshot, edited, n_sweeps,
                                       {} if totals is None else totals)
        else:
            new = self._globals_from_locals(M, varphi, zeta, labels)
            docs = moved_documents(M, snapshot[0], snapshot[1], varphi, zeta,
                                   self._SWEEP_MASS)
            if docs.size and n_sweeps and not new > bound:
                part = DocumentSubset(M, docs)
                rest = self._memoized_rest(part, varphi, zeta, vars(self),
                                           self._state_totals(M, varphi, zeta, vars(self)))
                new = self._memoized_sweeps(M, varphi, zeta, labels, bound, part, rest,
                                            n_sweeps, new, forbid)
        if new > bound:  # decide on the exact optimum (no memoized round-off)
            new = self._globals_from_locals(M, varphi, zeta, labels)
        if new > bound:
            return new
        touched = np.flatnonzero(np.abs(self.components_ - before).sum(1) >= 1.0)
        self._restore(snapshot, varphi, zeta)
        if key is not None:
            self._remember_failure(key, touched)
        return None

    def _state_totals(self, M, varphi, zeta, corpus) -> dict:
        """A state's whole-corpus sums that a proposal's memoized bound needs (document
        factors ``varphi``, ``zeta``; ``corpus`` holds its ``components_``): the local
        terms of the bound of all documents, ``"local"``, and each topic's ``sum_w log
        Gamma(lambda_kw)``, ``"log_gamma"``.  The births of one round share them until
        one is kept: each proposal from the same state paid both, a tenth of a
        default fit on NewsArticles."""
        return {"local": float(self._local_bounds(M, varphi, zeta).sum()),
                "log_gamma": dirichlet.log_gamma_row_sums(corpus["components_"],
                                                          corpus["topic_word_prior_"])}

    def _memoized_rest(self, part, varphi, zeta, corpus, totals) -> tuple:
        """What the documents other than ``part`` (a :class:`DocumentSubset`) contribute
        to a state whose corpus factors are the optimum of its statistics: ``(word
        statistics in the columns part.words (K, len(words)), topic counts (K,), local
        terms of the bound, sum_w log Gamma(lambda_kw) over the words part's documents
        do not have (K,))``, the state's (document factors ``varphi``, ``zeta``;
        ``corpus`` holds its ``components_``, ``topic_word_prior_`` and
        ``stick_counts_``; ``totals`` its :meth:`_state_totals`) minus the documents'
        own.  A proposal's sweeps leave the other words' columns of the topics as they
        are."""
        v, z = varphi[part.docs], zeta[part.entries]
        s, c = part.statistics(v, z)
        local = totals["local"] - self._local_bounds(part.M, v, z).sum()
        lam, eta = corpus["components_"], corpus["topic_word_prior_"]
        other = totals["log_gamma"] - dirichlet.log_gamma_row_sums(lam, eta, part.words)
        return lam[:, part.words] - eta - s, corpus["stick_counts_"] - c, local, other

    def _memoized_sweeps(self, M, varphi, zeta, labels, bound, part, rest, n_sweeps,
                         new=None, forbid=None) -> float:
        """Up to ``n_sweeps`` sweeps of the documents ``part`` (a :class:`DocumentSubset`
        of the corpus ``M``) at the current priors; ``rest`` holds the other
        documents' memoized word statistics, topic counts and local terms of the bound.
        After each sweep the corpus factors are the optimum of the statistics and the
        bound is ``rest``'s local terms plus the documents' plus the collapsed corpus
        terms (:meth:`HDP._collapsed_corpus_bound`).  Stops once the bound beats
        ``bound``, or when the last sweep's gain, repeated for every sweep left, would
        not reach it.  ``new`` is the bound before the sweeps (None: the current state's,
        which must be the optimum of ``rest`` and the documents' statistics).  Returns
        the last bound."""
        rest_words, rest_c, rest_local, other = rest
        docs = part.docs
        v, z = varphi[docs], zeta[part.entries]
        sub_labels = None if labels is None else labels[docs]
        # The sweeps change the topics' words only where these documents have words:
        # those columns of the statistics are updated, and the other words' log Gamma
        # terms of the collapsed bound stay as they are (rest's).
        words = part.words

        def memoized_bound():
            return (rest_local + self._local_bounds(part.M, v, z).sum()
                    + self._collapsed_corpus_bound(words, other)
                    + self._label_bound(M, varphi, zeta, labels))

        if new is None:
            new = memoized_bound()
        if new > bound:
            return new
        for left in range(n_sweeps - 1, -1, -1):
            _, s, c, _ = self._estep_words(part.M, v, z, False, sub_labels, forbid=forbid)
            varphi[docs], zeta[part.entries] = v, z
            self._set_word_globals(words, np.maximum(rest_words + s, 0.0),
                                   np.maximum(rest_c + c, 0.0))
            self._update_label_weights(M, varphi, zeta, labels)
            last, new = new, memoized_bound()
            if new > bound or new + left * max(new - last, 0.0) <= bound:
                break
        return new

    def _screened_bound(self, M, varphi, zeta, bound, snapshot, edited, n_sweeps,
                        totals) -> float:
        """A proposal's bound at the priors of ``snapshot`` after up to ``n_sweeps``
        sweeps of the documents ``edited`` (every document whose factors it changed),
        from statistics memoized from the snapshot: the corpus' minus the documents'
        old ones.  Costs the documents' work only; with the priors fixed it is the
        bound from scratch (up to round-off; unlabelled model).  A birth's screen on
        NewsArticles skips the whole-corpus statistics, the priors' searches and the
        local terms that were 18 ms of its 42 (docs/benchmarks.md)."""
        docs = np.sort(np.asarray(edited, dtype=np.int64))
        part = DocumentSubset(M, docs)
        if not totals:  # (the snapshot's priors are the current ones)
            totals.update(self._state_totals(M, snapshot[0], snapshot[1], snapshot[2]))
        rest = self._memoized_rest(part, snapshot[0], snapshot[1], snapshot[2], totals)
        s, c = part.statistics(varphi[docs], zeta[part.entries])
        # the snapshot's topics, with the documents' words' columns from their factors
        self.components_ = snapshot[2]["components_"].copy()
        self._set_word_globals(part.words, np.maximum(rest[0] + s, 0.0),
                               np.maximum(rest[1] + c, 0.0))
        return self._memoized_sweeps(M, varphi, zeta, None, bound, part, rest, n_sweeps)

    def _birth_moves(self, M, varphi, zeta, bound, labels, doc_bounds):
        """Propose new topics, one at a time and each in an empty slot, from the stories
        the topics miss; returns the bound after the kept births, or None.

        A birth's seed is a document the model explains worst (lowest bound per word,
        up to ``_BIRTH_TRIES`` seeds a round, none in the documents of a birth already
        kept this round).  Its group is the seed and up to ``_BIRTH_GROUP - 1`` other
        documents whose excess words (:meth:`_excess_words`) have cosine at least
        ``_BIRTH_SIMILARITY`` with the seed's: the same story told again, as news
        outlets do.  The new topic is ``eta`` plus the group's excess words
        (:meth:`_birth_move`).  A seed whose birth failed is retried once the topics
        it touched change (:meth:`_may_try`).

        A topic proposed from a large blend of documents (k-means of the 30 % worst,
        up to 4 topics a proposal, as this move did before) was 640-1,500 nats under
        the bound on NewsArticles from every state tried.  One story at a time gains
        up to about 90 nats a birth there, and with 48 seeds a round a start of 5
        topics at K = 100 grows from the 2-topic mode to 81 topics holding at least
        0.1 % of the words, at a higher bound (docs/benchmarks.md, "births from one
        story at a time")."""
        free = self._free_slots()
        if not free:
            return None
        D = M.shape[0]
        lengths = np.bincount(entry_documents(M), M.data, minlength=D)
        excess = self._excess_words(M, varphi, zeta)
        E = sp.csr_matrix((excess, M.indices, M.indptr), shape=M.shape)
        norms = np.sqrt(np.asarray(E.multiply(E).sum(1)).ravel())
        unit = sp.csr_matrix(sp.diags(1.0 / np.maximum(norms, 1e-300)) @ E)
        seeds = np.flatnonzero((lengths > 0) & (norms > 0))
        seeds = seeds[np.argsort(doc_bounds[seeds] / lengths[seeds], kind="stable")]
        taken = np.zeros(D, bool)
        tries, new_bound = 0, None
        totals = {}  # the current state's, for the screens (emptied when a birth is kept)
        for d in seeds:
            if tries >= self._BIRTH_TRIES or not free:
                break
            if taken[d] or not self._may_try(("birth", int(d))):
                continue
            tries += 1
            similarity = (unit @ unit[d].T).toarray().ravel()
            similarity[d] = np.inf  # (the seed first, whatever its round-off)
            group = np.argsort(-similarity, kind="stable")[:self._BIRTH_GROUP]
            group = group[(similarity[group] >= self._BIRTH_SIMILARITY) & ~taken[group]]
            new = self._birth_move(M, varphi, zeta, bound, labels, group, int(free[0]),
                                   excess, key=("birth", int(d)), totals=totals)
            if new is not None:
                bound = new_bound = new
                free.pop(0)
                taken[group] = True
                totals.clear()
        return new_bound

    def _grow_move(self, M, varphi, zeta, bounds, labels, doc_bounds):
        """When the births find no free slot, grow the truncation by half (at most to
        ``max_components``) and try the births in the new empty slots.  The larger
        truncation frees the last topic's stick, which costs the bound a little
        (``-log E[v^c]`` for its ``c`` documents' topics), so the growth is kept only
        with births that beat the bound before it; otherwise the state is restored
        exactly, and the growth waits, as a failed move does, until a topic changes.
        Returns the grown ``varphi`` (``bounds`` extended) or None.

        With a fixed truncation of 30 the NewsArticles corpus filled every slot and
        lost 10-23 % in held-out perplexity to tomotopy's HDPModel, which has no
        truncation (docs/benchmarks.md)."""
        K = self.components_.shape[0]
        cap = max(K, self._max_truncation())
        if K >= cap or self._free_slots() or not self._may_try(("grow",)):
            return None
        n_new = min(cap, K + (K + 1) // 2) - K
        snapshot = self._snapshot(varphi, zeta)
        failures = dict(self._failures)
        self._add_empty_topics(n_new)
        grown = np.concatenate([varphi, np.zeros(varphi.shape[:2] + (n_new,))], axis=2)
        new = self._birth_moves(M, grown, zeta, bounds[-1], labels, doc_bounds)
        if new is not None:
            bounds.append(new)
            return grown
        self._restore(snapshot, varphi, zeta)
        # failed births remember the old topics they touched (the new slots are gone)
        self._failures = failures | {
            key: (topics[topics < K], before[topics < K])
            for key, (topics, before) in self._failures.items() if key not in failures}
        self._remember_failure(("grow",), np.arange(K))
        return None

    def _excess_words(self, M, varphi, zeta) -> np.ndarray:
        """Each word entry's count above the model's prediction for its document,
        ``max(n_e - sum_k m_dk phi_kw, 0)`` (nnz,), ``m_dk`` the document's words on
        corpus topic k (:func:`hdp_core.doc_topic_mass`) and ``phi`` the topics'
        means: the words no topic of the document accounts for."""
        n = M.data.astype(np.float64)
        D, _, K = varphi.shape
        mass = np.empty((D, K))
        doc_topic_mass(M.indptr, n, varphi, zeta, mass)
        rows, phi = entry_documents(M), self.topic_word_
        predicted = np.empty(M.nnz)
        for lo in range(0, M.nnz, 1 << 16):  # (blocks: (entries, K) at a time)
            hi = min(lo + (1 << 16), M.nnz)
            predicted[lo:hi] = np.einsum("ek,ke->e", mass[rows[lo:hi]],
                                         phi[:, M.indices[lo:hi]])
        return np.maximum(n - predicted, 0.0)

    def _birth_move(self, M, varphi, zeta, bound, labels, group, j, excess, key=None,
                    totals=None):
        """One birth: the empty topic ``j`` becomes ``eta`` plus the ``excess`` (nnz,)
        words of the documents ``group``; each of them hands those words to its least
        used document topic, which is mapped to ``j``.  The group then takes
        ``_BIRTH_SWEEPS`` sweeps, and the birth is kept only if the whole-corpus bound
        beats ``bound``: returns the new bound, or None (state unchanged).  ``totals``:
        the current state's memoized sums (:meth:`_resweep_and_keep`)."""
        snapshot = self._snapshot(varphi, zeta)
        self.components_ = self.components_.copy()
        self.components_[j] = self.topic_word_prior_
        for d in group:
            lo, hi = M.indptr[d], M.indptr[d + 1]
            n = M.data[lo:hi].astype(np.float64)
            self.components_[j, M.indices[lo:hi]] += excess[lo:hi]
            t = int(np.argmin(n @ zeta[lo:hi]))
            moved = np.divide(excess[lo:hi], n, out=np.zeros_like(n), where=n > 0)[:, None]
            zeta[lo:hi] *= 1.0 - moved
            zeta[lo:hi, t] += moved[:, 0]
            varphi[d, t] = 0.0
            varphi[d, t, j] = 1.0
        return self._resweep_and_keep(M, varphi, zeta, labels, bound, snapshot,
                                      self._BIRTH_SWEEPS, key=key, edited=group,
                                      totals=totals)

    def _sort_move(self, M, varphi, zeta, bound, labels, doc_bounds=None):
        """Reorder the topics by their stick counts, largest first, if that raises the
        corpus sticks' part of the bound (the only part an order changes)."""
        c = self.stick_counts_
        order = np.argsort(-c, kind="stable")
        if np.array_equal(order, np.arange(c.size)):
            return None
        gain = stick_term(c[order], float(self.corpus_concentration_)) - stick_term(
            c, float(self.corpus_concentration_))
        if not gain > 1e-12 * abs(bound):
            return None
        self._permute_topics(order)
        varphi[...] = varphi[:, :, order]
        # The failed moves' topics are the same topics under their new numbers.
        new_index = np.empty_like(order)
        new_index[order] = np.arange(order.size)
        self._failures = {key: (new_index[topics], before)
                          for key, (topics, before) in self._failures.items()}
        return bound + gain
