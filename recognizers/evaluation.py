"""The evaluation protocol of the thesis (Omar 2016, section 6.6).

Labels are activity codes (str).  Every metric takes either one sequence (a 1-D
array) or a list of sequences; lists are pooled frame by frame, and windows and
transitions never reach across a sequence boundary.

Window accuracy (6.6, our reading).  The thesis: "If the window size is x, then
for the activity at time t, if we find the same activity in the window between
time t - x and time t + x in the predicted sequence, we count it as a correct
prediction."  So frame t is correct when the *true* activity at t occurs
anywhere in the *predicted* sequence within ``[t - x, t + x]`` (clipped to the
sequence).  The tolerance absorbs labelling delays at activity boundaries;
``x = 0`` is plain frame accuracy (eq 6.27).  The thesis uses x = 0..50 in steps
of 5 at 50 Hz (x = 25 is half a second); windows here are in frames.

Transitions (6.6).  With true labels ``h`` and predictions ``p``::

    AT  = #{t : h_t != h_{t-1}}            actual transitions
    PT  = #{t : p_t != p_{t-1}}            predicted transitions
    CPT = #{t : p_t != p_{t-1}, h_t = p_t, h_{t-1} = p_{t-1}}
    precision = CPT / PT,  recall = CPT / AT

(``t`` runs from the second frame: the thesis's sums start at t = 1, where
``t - 1`` does not exist.)  So at window 0 a predicted transition is correct
when the truth makes the same transition (same from- and to-activity) at the
same frame.  The thesis plots precision and recall against the window size
(Fig. 6.5) without writing the windowed formula; we read it as: a predicted
transition ``a -> b`` at frame t is correct if a true transition ``a -> b``
lies within ``[t - x, t + x]``, each true transition matching at most one
predicted one (so CPT <= min(AT, PT)); the matching is a maximum matching,
found greedily in time order per transition type.  At x = 0 this is exactly
the printed CPT.  Precision (recall) is NaN when PT (AT) is 0.

Confusion matrix: rows are true activities, columns predicted ones (the
thesis's "entry at row i and column j indicates how many times activity i was
predicted as activity j").  With a window, a frame counted correct by the
window rule goes on the diagonal, any other frame at (true, predicted).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "DEFAULT_WINDOWS",
    "TransitionCounts",
    "window_correct",
    "window_accuracy",
    "accuracy_by_window",
    "transition_counts",
    "confusion_matrix",
    "leave_one_subject_out",
    "Fold",
    "loso_folds",
    "run_fold",
    "run_fold_variants",
    "summarize_folds",
]

#: The thesis's window sizes: 0 to 50 in steps of 5 (frames).
DEFAULT_WINDOWS = tuple(range(0, 51, 5))


def _is_sequence_list(y) -> bool:
    if isinstance(y, np.ndarray):
        return y.dtype == object and y.ndim == 1 and all(np.ndim(e) == 1 for e in y)
    if isinstance(y, (list, tuple)):
        return len(y) > 0 and all(isinstance(e, (np.ndarray, list, tuple)) for e in y)
    return False


def _pairs(y_true, y_pred) -> list[tuple[np.ndarray, np.ndarray]]:
    """Matching (true, predicted) str arrays per sequence."""
    if _is_sequence_list(y_true) or _is_sequence_list(y_pred):
        if not (_is_sequence_list(y_true) and _is_sequence_list(y_pred)):
            raise ValueError("y_true and y_pred must both be one sequence or both lists "
                             "of sequences")
        ts, ps = list(y_true), list(y_pred)
    else:
        ts, ps = [y_true], [y_pred]
    if len(ts) != len(ps):
        raise ValueError("got %d true and %d predicted sequences" % (len(ts), len(ps)))
    out = []
    for i, (t, p) in enumerate(zip(ts, ps)):
        t = np.asarray(t).astype(str)
        p = np.asarray(p).astype(str)
        if t.ndim != 1 or t.shape != p.shape:
            raise ValueError("sequence %d: y_true %s and y_pred %s must be 1-D of equal "
                             "length" % (i, t.shape, p.shape))
        out.append((t, p))
    return out


def _check_window(window) -> int:
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 0:
        raise ValueError("window must be an int >= 0, got %r" % (window,))
    return int(window)


def _window_correct_one(t: np.ndarray, p: np.ndarray, w: int) -> np.ndarray:
    if w == 0 or t.size == 0:
        return t == p
    n = t.size
    out = np.zeros(n, dtype=bool)
    idx = np.arange(n)
    lo = np.maximum(idx - w, 0)
    hi = np.minimum(idx + w + 1, n)
    for c in np.unique(t):
        where = np.nonzero(t == c)[0]
        cs = np.concatenate(([0], np.cumsum(p == c)))
        out[where] = (cs[hi[where]] - cs[lo[where]]) > 0
    return out


def window_correct(y_true, y_pred, window: int = 0) -> np.ndarray:
    """Per-frame correctness under the window rule, (total frames,) bool.

    Frame t is correct if ``y_true[t]`` occurs in ``y_pred[t - window : t + window + 1]``.
    """
    w = _check_window(window)
    pairs = _pairs(y_true, y_pred)
    if not pairs:
        return np.zeros(0, dtype=bool)
    return np.concatenate([_window_correct_one(t, p, w) for t, p in pairs])


def window_accuracy(y_true, y_pred, window: int = 0) -> float:
    """Fraction of frames correct under the window rule (NaN with no frames)."""
    c = window_correct(y_true, y_pred, window)
    return float(c.mean()) if c.size else float("nan")


def accuracy_by_window(y_true, y_pred, windows: Iterable[int] = DEFAULT_WINDOWS
                       ) -> dict[int, float]:
    """``{window: accuracy}`` for each window (the thesis's accuracy curve)."""
    return {int(w): window_accuracy(y_true, y_pred, w) for w in windows}


class TransitionCounts(NamedTuple):
    """Transition counts of section 6.6 (see the module docstring)."""

    actual: int  #: AT
    predicted: int  #: PT
    correct: int  #: CPT

    @property
    def precision(self) -> float:
        """CPT / PT (NaN when there are no predicted transitions)."""
        return self.correct / self.predicted if self.predicted else float("nan")

    @property
    def recall(self) -> float:
        """CPT / AT (NaN when there are no actual transitions)."""
        return self.correct / self.actual if self.actual else float("nan")

    def __add__(self, other):  # pooling over sequences
        if not isinstance(other, TransitionCounts):
            return NotImplemented
        return TransitionCounts(self.actual + other.actual, self.predicted + other.predicted,
                                self.correct + other.correct)


def _transitions(y: np.ndarray):
    """Positions (frame index of the new activity), from-codes and to-codes."""
    pos = np.nonzero(y[1:] != y[:-1])[0] + 1
    return pos, y[pos - 1], y[pos]


def _transition_counts_one(t: np.ndarray, p: np.ndarray, w: int) -> TransitionCounts:
    labels, codes = np.unique(np.concatenate((t, p)), return_inverse=True)
    C = labels.size
    tpos, tfrom, tto = _transitions(codes[:t.size])
    ppos, pfrom, pto = _transitions(codes[t.size:])
    tkey = tfrom * C + tto  # transition type a -> b as one integer
    pkey = pfrom * C + pto
    correct = 0
    for key in np.intersect1d(tkey, pkey):
        a = tpos[tkey == key]
        b = ppos[pkey == key]
        # Greedy matching in time order is a maximum matching for equal windows.
        i = j = 0
        while i < a.size and j < b.size:
            if b[j] < a[i] - w:
                j += 1
            elif b[j] > a[i] + w:
                i += 1
            else:
                correct += 1
                i += 1
                j += 1
    return TransitionCounts(int(tpos.size), int(ppos.size), correct)


def transition_counts(y_true, y_pred, window: int = 0) -> TransitionCounts:
    """AT, PT and CPT (``.precision``, ``.recall``), pooled over sequences."""
    w = _check_window(window)
    total = TransitionCounts(0, 0, 0)
    for t, p in _pairs(y_true, y_pred):
        total = total + _transition_counts_one(t, p, w)
    return total


def confusion_matrix(y_true, y_pred, classes, window: int = 0) -> np.ndarray:
    """Counts (n_classes, n_classes) int64: row = true activity, column = predicted.

    Every label must be in ``classes`` (``ValueError`` otherwise).  With
    ``window > 0`` frames correct by the window rule count on the diagonal.
    """
    w = _check_window(window)
    classes = np.asarray(classes).astype(str)
    if classes.ndim != 1 or np.unique(classes).size != classes.size:
        raise ValueError("classes must be distinct labels, got %s" % classes.tolist())
    order = np.argsort(classes)
    sorted_classes = classes[order]
    C = classes.size
    cm = np.zeros((C, C), dtype=np.int64)
    for t, p in _pairs(y_true, y_pred):
        for name, y in (("y_true", t), ("y_pred", p)):
            unknown = np.setdiff1d(y, classes)
            if unknown.size:
                raise ValueError("%s has labels not in classes: %s" % (name, unknown.tolist()))
        if t.size == 0:
            continue
        ti = order[np.searchsorted(sorted_classes, t)]
        pi = order[np.searchsorted(sorted_classes, p)]
        if w:
            ok = _window_correct_one(t, p, w)
            pi = np.where(ok, ti, pi)
        np.add.at(cm, (ti, pi), 1)
    return cm


# --------------------------------------------------------------------------- LOSO


def _field(session, name):
    if isinstance(session, Mapping):
        try:
            return session[name]
        except KeyError:
            raise ValueError("session has no %r (keys: %s)"
                             % (name, sorted(map(str, session)))) from None
    try:
        return getattr(session, name)
    except AttributeError:
        raise ValueError("session %r has no attribute %r" % (type(session).__name__, name)
                         ) from None


def _decode(recognizer, X, decoder: str) -> np.ndarray:
    if decoder == "predict":
        return np.asarray(recognizer.predict(X)).astype(str)
    if decoder == "filter":
        post = recognizer.filter(X)
    else:  # "smooth"
        post = recognizer.predict_proba(X)
    return np.asarray(recognizer.classes_).astype(str)[np.argmax(post, axis=1)]


def _metrics(y_true, y_pred, windows, transition_window):
    tc = transition_counts(y_true, y_pred, transition_window)
    return {
        "accuracy_by_window": accuracy_by_window(y_true, y_pred, windows),
        "transition_precision": tc.precision,
        "transition_recall": tc.recall,
        "transition_counts": {"actual": tc.actual, "predicted": tc.predicted,
                              "correct": tc.correct},
        "n_frames": int(sum(len(y) for y in y_true)),
    }


@dataclass(frozen=True)
class Fold:
    """One leave-one-subject-out fold: indices into the session list."""

    subject: Any
    train: tuple[int, ...]
    test: tuple[int, ...]


def loso_folds(subjects: Sequence, n_own_sessions_in_training: int = 0) -> list[Fold]:
    """The folds of leave-one-subject-out for sessions of the given subjects (in order).

    Each subject is tested on its sessions after its first
    ``n_own_sessions_in_training``, which join every other subject's sessions in
    training.  Subjects keep their order of first appearance.
    """
    n_own = _check_window(n_own_sessions_in_training)
    order: list = []
    by_subject: dict = {}
    for i, subj in enumerate(subjects):
        if subj not in by_subject:
            order.append(subj)
            by_subject[subj] = []
        by_subject[subj].append(i)
    if len(order) < 2:
        raise ValueError("leave-one-subject-out needs sessions of at least two subjects, "
                         "got %d" % len(order))
    folds = []
    for subj in order:
        own = by_subject[subj]
        if len(own) <= n_own:
            raise ValueError("subject %r has %d session(s); %d go to training, none left "
                             "to test" % (subj, len(own), n_own))
        train = [i for other in order if other != subj for i in by_subject[other]]
        folds.append(Fold(subj, tuple(train + own[:n_own]), tuple(own[n_own:])))
    return folds


def run_fold(make_recognizer: Callable[[], Any], train_sessions, test_sessions,
             decoder: str = "predict") -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Fit a fresh recognizer on ``train_sessions``; (true, decoded) label sequences of the test."""
    ys_true, by_variant = run_fold_variants(make_recognizer, train_sessions, test_sessions,
                                            decoder)
    return ys_true, by_variant[()]


def run_fold_variants(make_recognizer: Callable[[], Any], train_sessions, test_sessions,
                      decoder: str = "predict"):
    """As :func:`run_fold`, decoding also the recognizer's ``evaluation_variants``.

    Returns ``(ys_true, {variant: ys_pred})`` with ``()`` the recognizer as made and
    ``(param, value)`` each variant (one fit for all).  ``train_sessions`` and
    ``test_sessions`` may be sources (``recognizers.sources``) read one session at a
    time; a recognizer with ``fit_streamed`` then never holds all training data.
    """
    if decoder not in ("predict", "filter", "smooth"):
        raise ValueError("decoder must be 'predict', 'filter' or 'smooth', got %r" % (decoder,))
    rec = make_recognizer()
    if hasattr(train_sessions, "column"):  # a source (recognizers.sources): read on demand
        from recognizers.sources import fit_source

        fit_source(rec, train_sessions)
    else:
        rec.fit([_field(s, "X") for s in train_sessions],
                [_field(s, "y") for s in train_sessions])
    variants = {(): rec}
    if hasattr(rec, "evaluation_variants"):
        variants.update(rec.evaluation_variants())
    ys_true = []
    preds: dict = {key: [] for key in variants}
    for i in range(len(test_sessions)):  # one test session in memory at a time
        s = test_sessions[i]
        ys_true.append(np.asarray(_field(s, "y")).astype(str))
        for key, r in variants.items():
            preds[key].append(_decode(r, _field(s, "X"), decoder))
    return ys_true, preds


def summarize_folds(fold_results, *, windows: Iterable[int] = DEFAULT_WINDOWS,
                    transition_window: int = 0, confusion_window: int = 0,
                    decoder: str = "predict") -> dict[str, Any]:
    """Pool ``[(subject, ys_true, ys_pred), ...]`` into :func:`leave_one_subject_out`'s dict."""
    windows = [_check_window(w) for w in windows]
    transition_window = _check_window(transition_window)
    confusion_window = _check_window(confusion_window)
    all_true: list[np.ndarray] = []
    all_pred: list[np.ndarray] = []
    per_subject: dict[str, dict] = {}
    for subj, ys_true, ys_pred in fold_results:
        all_true += list(ys_true)
        all_pred += list(ys_pred)
        m = _metrics(ys_true, ys_pred, windows, transition_window)
        m["n_sessions"] = len(ys_true)
        per_subject[str(subj)] = m
    pooled = _metrics(all_true, all_pred, windows, transition_window)
    classes = np.unique(np.concatenate(all_true + all_pred))
    by_window = {}
    for w in windows:
        tc = transition_counts(all_true, all_pred, w)
        by_window[w] = {"actual": tc.actual, "predicted": tc.predicted, "correct": tc.correct,
                        "precision": tc.precision, "recall": tc.recall}
    class_accuracy = {}
    for w in windows:
        cm = confusion_matrix(all_true, all_pred, classes, w)
        totals = cm.sum(1)
        # Classes that are only ever predicted have no true frames: no accuracy.
        class_accuracy[w] = {str(c): (float(cm[i, i] / totals[i]) if totals[i] else None)
                             for i, c in enumerate(classes)}
    return {
        "accuracy_by_window": pooled["accuracy_by_window"],
        "class_accuracy_by_window": class_accuracy,
        "transition_precision": pooled["transition_precision"],
        "transition_recall": pooled["transition_recall"],
        "transition_counts": pooled["transition_counts"],
        "transitions_by_window": by_window,
        "confusion": confusion_matrix(all_true, all_pred, classes,
                                      confusion_window).tolist(),
        "confusion_window": confusion_window,
        "classes": classes.tolist(),
        "decoder": decoder,
        "per_subject": per_subject,
    }


def as_factory(recognizer_factory) -> Callable[[], Any]:
    """A callable making fresh recognizers, from a factory or a template recognizer."""
    if (not isinstance(recognizer_factory, type) and hasattr(recognizer_factory, "get_params")
            and hasattr(recognizer_factory, "fit")):
        from recognizers.base import clone

        template = recognizer_factory

        def make():
            return clone(template)
        return make
    if callable(recognizer_factory):
        return recognizer_factory
    raise TypeError("recognizer_factory must be callable or a recognizer")


def leave_one_subject_out(recognizer_factory, sessions, *,
                          windows: Iterable[int] = DEFAULT_WINDOWS,
                          transition_window: int = 0,
                          confusion_window: int = 0,
                          decoder: str = "predict",
                          n_own_sessions_in_training: int = 0,
                          progress: Callable[[int, int, Any], None] | None = None
                          ) -> dict[str, Any]:
    """Leave-one-subject-out evaluation (thesis 6.6).

    For each subject: fit a fresh recognizer on every other subject's sessions
    (plus the subject's own first ``n_own_sessions_in_training`` sessions: the
    thesis's experiment 1 uses 1, experiment 2 uses 0), decode the subject's
    remaining sessions, and pool all decoded frames for the metrics.

    Parameters
    ----------
    recognizer_factory : callable returning an unfitted recognizer, or a
        recognizer (cloned for every fold)
    sessions : sequence of dicts or objects with ``subject``, ``X`` (T, F),
        ``y`` (T,) str; order is kept within a subject
    windows : window sizes for the accuracy curve (frames)
    transition_window : window for the headline transition precision / recall
        (0 = the thesis's printed formula)
    confusion_window : window used for the confusion matrix
    decoder : ``"predict"`` (the recognizer's best sequence, Viterbi for the
        HMM), ``"filter"`` (argmax of the causal filter, as in the thesis's
        confusion tables) or ``"smooth"`` (argmax of forward-backward)
    progress : called as ``progress(done, n_subjects, subject)`` after each fold

    Returns
    -------
    dict with ``accuracy_by_window`` ``{window: accuracy}``,
    ``class_accuracy_by_window`` ``{window: {class: accuracy or None}}`` (per true
    activity, the thesis's Tables 6.12/6.13),
    ``transition_precision``, ``transition_recall``, ``transition_counts``,
    ``transitions_by_window`` ``{window: {actual, predicted, correct,
    precision, recall}}``, ``confusion`` (list of lists, rows true),
    ``confusion_window``, ``classes`` (list of str, sorted union of true and
    predicted labels), ``decoder``, and ``per_subject`` ``{str(subject):
    {accuracy_by_window, transition_precision, transition_recall,
    transition_counts, n_frames, n_sessions}}``.
    """
    if decoder not in ("predict", "filter", "smooth"):
        raise ValueError("decoder must be 'predict', 'filter' or 'smooth', got %r" % (decoder,))
    windows = [_check_window(w) for w in windows]
    sessions = list(sessions)
    folds = loso_folds([_field(s, "subject") for s in sessions], n_own_sessions_in_training)
    make = as_factory(recognizer_factory)
    by_variant: dict[tuple, list] = {}
    for done, fold in enumerate(folds, start=1):
        ys_true, preds = run_fold_variants(make, [sessions[i] for i in fold.train],
                                           [sessions[i] for i in fold.test], decoder)
        for key, ys_pred in preds.items():
            by_variant.setdefault(key, []).append((fold.subject, ys_true, ys_pred))
        if progress is not None:
            progress(done, len(folds), fold.subject)
    summaries = {key: summarize_folds(results, windows=windows,
                                      transition_window=transition_window,
                                      confusion_window=confusion_window, decoder=decoder)
                 for key, results in by_variant.items()}
    out = summaries.pop(())
    if summaries:
        out["variants"] = {variant_name(key): res for key, res in summaries.items()}
    return out


def variant_name(key: tuple) -> str:
    """``("state_mapping", "hungarian")`` -> ``"state_mapping=hungarian"``."""
    return "%s=%s" % key
