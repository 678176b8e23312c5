"""The ``"shdp"`` walker recognizer: a supervised HDP (Zhang et al., ICCV-W 2013) over motion words.

Frames are standardised (NaN, a missing reading, set to the mean) and cut into
consecutive sub-windows of ``subwindow`` frames (0.5 s at 50 Hz); each sub-window's
per-feature mean and standard deviation (:func:`~recognizers.motion_words.subwindow_stats`)
is turned into a *motion word* by a k-means codebook of ``n_words`` words
(:mod:`recognizers.motion_words`, shared with ``walkerlab topics``).  A *document*
is the bag of the last ``window`` words (4 s by default), one document ending at
every sub-window; in training its label is the majority activity of its frames.
:class:`~recognizers.modelling.SupervisedHDP` learns the topics (their number below
the truncation ``n_components``) and the per-activity weights on them.

Streaming (``filter``/``step``/``step_block``): when a sub-window completes, the
document of the last ``window`` words is classified and the posterior smoothed,
``p <- (1 - smoothing) p + smoothing q``; between completions the last posterior is
held, and before the first one the activities' training frequencies are output.  The
latency is at most one sub-window plus one document's inference.  ``predict_proba``
(offline) averages, for each frame, the posteriors of every document covering it.
Every document is inferred on its own (the supervised HDP's ``transform``: a seeded
random start drawn per call and a start from the words' best topics, the better by the
bound kept), so streaming and offline use identical document posteriors.

Online learning: ``partial_fit(sequences, labels)`` makes one online step of the
supervised HDP on the documents of a new user's labelled sessions (codebook and
standardisation kept); without labels the step updates the topics only (the label
terms dropped, as at test time).  ``learn_block`` does the unlabelled form live.
"""
from __future__ import annotations

import numbers
from collections import deque

import numpy as np

from recognizers.base import (Interval, Recognizer, RecognizerTags,
                              StreamRunMixin, check_is_fitted, register_recognizer)
from recognizers.modelling.topics.hdp import HDP
from recognizers.modelling.topics.shdp import SupervisedHDP
from recognizers.motion_words import MotionCodebook, fit_codebook, subwindow_stats

__all__ = ["SHDPRecognizer", "document_counts"]

_CACHE_SIZE = 4096  # documents whose posterior is remembered (cleared when the model changes)


def document_counts(words: np.ndarray, window: int, n_words: int) -> np.ndarray:
    """(n, n_words) bags of words of the documents ending at each word: document k
    holds words ``max(0, k - window + 1) .. k``."""
    words = np.asarray(words, dtype=np.int64)
    n = len(words)
    cum = np.zeros((n + 1, n_words), dtype=np.int64)
    if n:
        np.add.at(cum, (np.arange(1, n + 1), words), 1)
        np.cumsum(cum, axis=0, out=cum)
    k = np.arange(n)
    return cum[k + 1] - cum[np.maximum(k - window + 1, 0)]


WALKER_TOPIC_WORD_PRIOR = 0.01  # eta of the motion-word topics
WALKER_LABEL_WEIGHT = 1.0  # Zhang et al.'s weight of the label term


@register_recognizer
class SHDPRecognizer(StreamRunMixin, Recognizer):
    """Supervised HDP over documents of motion words: topics shared by activities,
    their number learnt.

    Parameters
    ----------
    subwindow : frames per motion word (default 25: 0.5 s at 50 Hz).
    window : words per document (default 8: 4 s at 50 Hz).
    n_words : codebook size (fewer if training has fewer sub-windows).
    smoothing : weight of a new document's posterior in the streamed output.
    n_components : the supervised HDP's corpus truncation K (most topics it can use).
    doc_truncation : its document truncation T.
    corpus_concentration : its gamma (larger: more topics; 5 keeps the activities'
        motion words apart better than 1).
    label_penalty : L2 penalty of the label weights (``SupervisedHDP.label_penalty``).
    moves : the supervised HDP's moves in ``fit`` (document restarts, merges, deletes,
        births: ``SupervisedHDP.moves``; off by default, unlike the estimator:
        docs/benchmarks.md compares both on the walker experiments).
    max_iter : batch iterations of the supervised HDP; max_label_iter : L-BFGS
        iterations of each of its label-weight M-steps.
    train_hop : sub-windows between the documents fitted (documents ending at every
        ``train_hop``-th word; 2 halves the fitting time, the neighbours share 7 of 8
        words).
    learning_offset, learning_decay : tau0 and kappa of the online steps of
        ``partial_fit``/``learn_block``: a step moves the model by
        ``rho = (tau0 + t)^-kappa`` towards the estimate from the new documents
        scaled to the training corpus' size.
    learn_batch : documents gathered by ``learn_block`` per online step.
    verbose : a progress bar over the supervised HDP's batch iterations
        (``walkerlab train`` shows it unless ``--quiet``).
    random_state : seed of the codebook and the supervised HDP.

    Attributes
    ----------
    model_ : the fitted :class:`~recognizers.modelling.SupervisedHDP`
        (``n_topics_used_``, ``topic_word_`` (K, n_words), ``coef_``).
    codebook_ : the :class:`~recognizers.motion_words.MotionCodebook`.
    doc_classes_ : indices into ``classes_`` of the model's labels (an activity that is
        never the majority of a document gets probability 0).
    prior_ : (n_classes,) training frequencies of the documents' activities.
    topic_usage_ : (n_classes, K) mean topic proportions of the documents of each
        activity (training and labelled ``partial_fit`` documents); ``class_docs_``
        their counts.
    """

    kind = "shdp"
    format_version = 1
    _frame_params = ("subwindow",)
    _tags = RecognizerTags(supports_streaming=True, supports_partial_fit=True,
                           requires_labels=True)
    _parameter_constraints = {
        "subwindow": [Interval(numbers.Integral, 1, None, closed="left")],
        "window": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_words": [Interval(numbers.Integral, 2, None, closed="left")],
        "smoothing": [Interval(numbers.Real, 0, 1, closed="right")],
        "n_components": [Interval(numbers.Integral, 2, None, closed="left")],
        "doc_truncation": [Interval(numbers.Integral, 2, None, closed="left")],
        "corpus_concentration": [Interval(numbers.Real, 0, None, closed="neither")],
        "label_penalty": [Interval(numbers.Real, 0, None, closed="neither")],
        "moves": ["boolean"],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_label_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "train_hop": [Interval(numbers.Integral, 1, None, closed="left")],
        "learning_offset": [Interval(numbers.Real, 0, None, closed="left")],
        "learning_decay": [Interval(numbers.Real, 0.5, 1, closed="both")],
        "learn_batch": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": [Interval(numbers.Integral, 0, None, closed="left")],
    }

    def __init__(self, *, subwindow=25, window=8, n_words=32, smoothing=0.5,
                 n_components=40, doc_truncation=4, corpus_concentration=5.0,
                 label_penalty=0.1, moves=False, max_iter=30,
                 max_label_iter=10, train_hop=2, learning_offset=16.0, learning_decay=0.7,
                 learn_batch=20, verbose=False, random_state=0):
        self.subwindow = subwindow
        self.window = window
        self.n_words = n_words
        self.smoothing = smoothing
        self.n_components = n_components
        self.doc_truncation = doc_truncation
        self.corpus_concentration = corpus_concentration
        self.label_penalty = label_penalty
        self.moves = moves
        self.max_iter = max_iter
        self.max_label_iter = max_label_iter
        self.train_hop = train_hop
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.learn_batch = learn_batch
        self.verbose = verbose
        self.random_state = random_state

    def __sklearn_is_fitted__(self) -> bool:
        return "model_" in self.__dict__

    def _model(self, total_samples: float) -> SupervisedHDP:
        # Topics are not re-sorted after online steps, so topic_usage_ keeps its columns;
        # moves off by default: with gamma = 1 and 30 topics, merging look-alike topics
        # cost the classifier its distinctions (walker exp1 fold 1: 9 topics, 18 % of
        # documents right, against 27 topics and 76 % without merges and with gamma =
        # 5); at this class's settings they tie the pin on exp1 and exp2 at 3.3-3.8
        # times the CPU (docs/benchmarks.md, issue 31).
        # eta and the label weight are the values the walker figures in
        # docs/benchmarks.md were measured with (SupervisedHDP's defaults again since
        # issue 31's second round), pinned so a change of defaults cannot move them;
        # so are the fixed priors (learn_priors came after those figures) and the
        # truncation (n_components is the most topics it can use: no growth).
        return SupervisedHDP(
            n_components=int(self.n_components), max_components=int(self.n_components),
            doc_truncation=int(self.doc_truncation),
            corpus_concentration=float(self.corpus_concentration), moves=bool(self.moves),
            topic_word_prior=WALKER_TOPIC_WORD_PRIOR, label_weight=WALKER_LABEL_WEIGHT,
            label_penalty=float(self.label_penalty), max_iter=int(self.max_iter),
            max_label_iter=int(self.max_label_iter),
            learning_offset=float(self.learning_offset),
            learning_decay=float(self.learning_decay), total_samples=float(total_samples),
            sort_topics=False, learn_priors=False, verbose=int(self.verbose),
            random_state=int(self.random_state))

    # -- words and documents ------------------------------------------------------------
    def _standardise(self, X) -> np.ndarray:
        Z = (X - self.mean_) / self.scale_
        return np.where(np.isnan(Z), 0.0, Z)

    def _session_words(self, Z) -> np.ndarray:
        """Motion words of the complete sub-windows of standardised frames."""
        F = subwindow_stats(Z, int(self.subwindow))
        return self.codebook_.words(F) if len(F) else np.zeros(0, dtype=np.int64)

    def _documents(self, Xs, ys=None):
        """(counts (n_docs, n_words), label indices into classes_ or None) of the documents
        to learn from: those ending at every ``train_hop``-th word of each sequence."""
        S, W, V = int(self.subwindow), int(self.window), self.codebook_.n_words
        docs, labs = [], []
        for i, X in enumerate(Xs):
            words = self._session_words(self._standardise(X))
            if not len(words):
                continue
            keep = slice(None, None, int(self.train_hop))
            docs.append(document_counts(words, W, V)[keep])
            if ys is not None:
                yi = np.searchsorted(self.classes_, ys[i])
                labs.append(_majority(yi, len(words), S, W, len(self.classes_))[keep])
        if not docs:
            return np.zeros((0, V), dtype=np.int64), (None if ys is None else
                                                      np.zeros(0, dtype=np.int64))
        return np.vstack(docs), (None if ys is None else np.concatenate(labs))

    # -- fitting --------------------------------------------------------------------------
    def fit(self, sequences, labels=None, *, feature_set=None):
        """Learn the codebook from the sequences' sub-windows, then the supervised HDP on
        their documents labelled by majority activity; returns ``self``."""
        self._validate_params()
        Xs, ys = self._validate_fit_data(sequences, labels)
        for i, X in enumerate(Xs):
            if np.isinf(X).any():
                raise ValueError("sequences[%d] contains infinite values (NaN marks a "
                                 "missing reading)" % i)
        allX = np.vstack(Xs)
        mean = np.nanmean(allX, axis=0) if np.isfinite(allX).any() else np.zeros(allX.shape[1])
        mean = np.where(np.isnan(mean), 0.0, mean)
        scale = np.nanstd(allX, axis=0)
        self.mean_, self.scale_ = mean, np.where(~(scale > 0), 1.0, scale)
        S = int(self.subwindow)
        F = [subwindow_stats(self._standardise(X), S) for X in Xs]
        rows = np.vstack(F)
        if len(rows) < 2:
            raise ValueError("shdp needs at least two sub-windows of %d frames; give longer "
                             "recordings or a shorter subwindow" % S)
        n_words = min(int(self.n_words), len(np.unique(rows, axis=0)))
        if n_words < 2:
            raise ValueError("shdp needs sub-windows that differ: all %d are identical"
                             % len(rows))
        self.codebook_ = fit_codebook(rows, n_words, random_state=int(self.random_state),
                                      n_init=2)
        D, y = self._documents(Xs, ys)
        C = len(self.classes_)
        present = np.unique(y)
        if len(present) < 2:
            raise ValueError("shdp needs documents of at least two activities; give longer "
                             "recordings or a shorter window")
        self.model_ = self._model(len(D)).fit(D, y)
        self.doc_classes_ = self.model_.classes_.astype(np.int64)
        self.prior_ = np.bincount(y, minlength=C) / len(y)
        self.class_docs_ = np.zeros(C)
        self.topic_usage_ = np.zeros((C, self.model_.n_components))
        self._add_usage(D, y)
        self.feature_set_ = feature_set
        self._changed()
        return self

    def _add_usage(self, D, y) -> None:
        """Fold the topic proportions of labelled documents into ``topic_usage_``."""
        if not len(D):
            return
        theta = self.model_.transform(D)
        C = len(self.classes_)
        n = np.bincount(y, minlength=C).astype(float)
        sums = np.zeros_like(self.topic_usage_)
        np.add.at(sums, y, theta)
        total = self.class_docs_ + n
        seen = total > 0
        self.topic_usage_[seen] = ((self.topic_usage_[seen] * self.class_docs_[seen, None]
                                    + sums[seen]) / total[seen, None])
        self.class_docs_ = total

    def partial_fit(self, sequences, labels=None):
        """One online step of the supervised HDP on the documents of ``sequences`` (each a
        new stream, e.g. a new user's sessions); returns ``self``.

        With ``labels`` (one (T,) array per sequence, activities among ``classes_``) the
        step is supervised: topics and label weights move.  Without, only the topics
        move (the label terms dropped, as at test time).  Documents whose majority is
        an activity the model never saw as a majority are left out of a labelled step.
        The codebook and the standardisation stay as fitted.
        """
        check_is_fitted(self, "model_")
        if isinstance(sequences, np.ndarray) and sequences.ndim == 2:
            sequences = [sequences]
            if labels is not None:
                labels = [labels]
        Xs = [self._X(X) for X in sequences]
        ys = None
        if labels is not None:
            if isinstance(labels, np.ndarray) and labels.ndim == 1 and len(Xs) == 1:
                labels = [labels]
            if len(labels) != len(Xs):
                raise ValueError("got %d sequences but %d label sequences"
                                 % (len(Xs), len(labels)))
            ys = []
            for i, (X, y) in enumerate(zip(Xs, labels)):
                y = np.asarray(y).astype(str)
                if y.shape != (len(X),):
                    raise ValueError("labels[%d] has shape %s but sequences[%d] has %d frames"
                                     % (i, y.shape, i, len(X)))
                unknown = np.setdiff1d(y, self.classes_)
                if len(unknown):
                    raise ValueError("labels[%d] holds activities this model was not trained "
                                     "on: %s (it knows %s)" % (i, ", ".join(unknown[:5]),
                                                               ", ".join(self.classes_)))
                ys.append(y)
        D, y = self._documents(Xs, ys)
        if ys is not None:
            keep = np.isin(y, self.doc_classes_)
            D, y = D[keep], y[keep]
        if not len(D):
            return self
        if ys is None:
            HDP.partial_fit(self.model_, D)  # the unlabelled step: label terms dropped
        else:
            self.model_.partial_fit(D, y)
            self._add_usage(D, y)
        self._changed()
        return self

    # -- inference ------------------------------------------------------------------------
    def _changed(self) -> None:
        """The model moved: forget remembered document posteriors and restart the stream."""
        self._cache = {}
        self.reset()

    def _doc_proba(self, counts) -> np.ndarray:
        """Posterior over ``classes_`` of one document (n_words,) of counts."""
        key = counts.tobytes()
        cache = self.__dict__.setdefault("_cache", {})
        hit = cache.get(key)
        if hit is None:
            hit = np.zeros(len(self.classes_))
            hit[self.doc_classes_] = self.model_.predict_proba(counts[None, :])[0]
            if len(cache) >= _CACHE_SIZE:
                cache.clear()
            cache[key] = hit
        return hit

    def predict_proba(self, X) -> np.ndarray:
        """Per-frame average of the posteriors of all documents covering the frame, (T, C).

        Frames after the last complete sub-window take the last document's posterior;
        a sequence shorter than one sub-window gets the training frequencies."""
        check_is_fitted(self, "model_")
        X = self._X(X)
        T, S, W = len(X), int(self.subwindow), int(self.window)
        words = self._session_words(self._standardise(X))
        n = len(words)
        if n == 0:
            return np.tile(self.prior_, (T, 1))
        D = document_counts(words, W, self.codebook_.n_words)
        post = np.array([self._doc_proba(d) for d in D])
        # sub-window j is covered by the documents ending at j .. min(j + W, n) - 1
        cum = np.vstack([np.zeros((1, post.shape[1])), np.cumsum(post, axis=0)])
        j = np.arange(n)
        hi = np.minimum(j + W, n)
        per_sub = (cum[hi] - cum[j]) / (hi - j)[:, None]
        out = np.empty((T, len(self.classes_)))
        out[:n * S] = np.repeat(per_sub, S, axis=0)
        out[n * S:] = post[-1]
        return out

    # -- streaming ------------------------------------------------------------------------
    def _new_stream(self) -> dict:
        return {"buf": np.zeros((int(self.subwindow), self.n_features_in_)), "fill": 0,
                "words": deque(), "counts": np.zeros(self.codebook_.n_words, dtype=np.int64),
                "p": None, "pending": []}

    def _run(self, stream, X, learn: bool = False) -> np.ndarray:
        Z = self._standardise(X)
        S, W, s = int(self.subwindow), int(self.window), float(self.smoothing)
        out = np.empty((len(X), len(self.classes_)))
        buf, i, n = stream["buf"], 0, len(X)
        while i < n:
            take = min(S - stream["fill"], n - i)
            buf[stream["fill"]:stream["fill"] + take] = Z[i:i + take]
            stream["fill"] += take
            held = self.prior_ if stream["p"] is None else stream["p"]
            if stream["fill"] < S:
                out[i:i + take] = held
            else:
                out[i:i + take - 1] = held
                word = int(self.codebook_.words(subwindow_stats(buf, S))[0])
                stream["words"].append(word)
                stream["counts"][word] += 1
                if len(stream["words"]) > W:
                    stream["counts"][stream["words"].popleft()] -= 1
                q = self._doc_proba(stream["counts"])
                stream["p"] = q if stream["p"] is None else (1 - s) * stream["p"] + s * q
                out[i + take - 1] = stream["p"]
                stream["fill"] = 0
                if learn:
                    stream["pending"].append(stream["counts"].copy())
            i += take
        return out

    def learn_block(self, X) -> np.ndarray:
        """Continue the stream like :meth:`step_block` while learning from it: every
        ``learn_batch`` completed documents make one unlabelled online step (the
        posteriors returned are those of the model before the step)."""
        check_is_fitted(self, "model_")
        out = self._run(self._stream, self._X(X), learn=True)
        if len(self._stream["pending"]) >= int(self.learn_batch):
            self._learn_pending()
        return out

    def _learn_pending(self) -> None:
        pending = self._stream["pending"]
        if pending:
            HDP.partial_fit(self.model_, np.vstack(pending))
            self._cache = {}
            pending.clear()

    def sync_model(self) -> None:
        """Learn from the documents ``learn_block`` still holds (the stream goes on)."""
        check_is_fitted(self, "model_")
        self._learn_pending()

    # -- sample rate ------------------------------------------------------------------------
    def _rate_dependent_seconds(self, rate_hz: float) -> dict:
        return {"document": int(self.window) * int(self.subwindow) / rate_hz}

    def _convert_rate(self, factor: float) -> None:
        frames = int(self.subwindow) * factor
        if abs(frames - round(frames)) > 1e-9 or round(frames) < 1:
            raise NotImplementedError("its %d-frame sub-window is not a whole number of "
                                      "frames at the new rate" % int(self.subwindow))
        self.subwindow = int(round(frames))
        self._stream = None

    # -- persistence ----------------------------------------------------------------------
    def _get_state(self) -> dict:
        m = self.model_
        state = {"mean": self.mean_, "scale": self.scale_,
                 **self.codebook_.to_arrays("codebook_"),
                 "doc_classes": self.doc_classes_, "prior": self.prior_,
                 "topic_usage": self.topic_usage_, "class_docs": self.class_docs_,
                 "shdp_total_samples": np.asarray(m.total_samples, dtype=np.float64)}
        for name in m._learned_attributes:
            state["shdp_" + name] = np.asarray(getattr(m, name))
        return state

    def _set_state(self, arrays) -> None:
        self.mean_ = np.asarray(arrays["mean"], dtype=np.float64)
        self.scale_ = np.asarray(arrays["scale"], dtype=np.float64)
        if self.mean_.shape != (self.n_features_in_,) or self.scale_.shape != self.mean_.shape:
            raise ValueError("standardisation does not match the header's feature count")
        self.codebook_ = MotionCodebook.from_arrays(arrays, "codebook_")
        if self.codebook_.centres.shape[1] != 2 * self.n_features_in_:
            raise ValueError("the codebook does not match the header's feature count")
        m = self._model(float(arrays["shdp_total_samples"]))
        m.set_learned_state(arrays, "shdp_")
        C, K, V = len(self.classes_), int(self.n_components), self.codebook_.n_words
        doc_classes = np.asarray(arrays["doc_classes"], dtype=np.int64)
        if (m.components_.shape != (K, V) or m.coef_.shape != (len(doc_classes), K)
                or len(doc_classes) < 2 or doc_classes.min() < 0 or doc_classes.max() >= C
                or not np.array_equal(np.asarray(m.classes_, dtype=np.int64), doc_classes)):
            raise ValueError("supervised HDP arrays have inconsistent shapes")
        self.model_ = m
        self.doc_classes_ = doc_classes
        self.prior_ = np.asarray(arrays["prior"], dtype=np.float64)
        self.topic_usage_ = np.asarray(arrays["topic_usage"], dtype=np.float64)
        self.class_docs_ = np.asarray(arrays["class_docs"], dtype=np.float64)
        if (self.prior_.shape != (C,) or self.topic_usage_.shape != (C, K)
                or self.class_docs_.shape != (C,)):
            raise ValueError("prior or topic usage arrays have inconsistent shapes")
        self._changed()


def _majority(yi: np.ndarray, n_words: int, S: int, W: int, C: int) -> np.ndarray:
    """Majority class index of the frames of each document (document k covers frames
    ``max(0, k - W + 1) * S .. (k + 1) * S``); ties go to the lower index."""
    onehot = np.zeros((n_words * S + 1, C), dtype=np.int64)
    onehot[np.arange(1, n_words * S + 1), yi[:n_words * S]] = 1
    cum = np.cumsum(onehot, axis=0)
    k = np.arange(n_words)
    return np.argmax(cum[(k + 1) * S] - cum[np.maximum(k - W + 1, 0) * S], axis=1)
