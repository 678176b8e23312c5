"""The thesis 6.6 protocol on hand-worked examples with exact numbers."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recognizers import (
    HMMRecognizer,
    Recognizer,
    accuracy_by_window,
    confusion_matrix,
    leave_one_subject_out,
    transition_counts,
    window_accuracy,
    window_correct,
)

TRUE = np.array(list("AAABBBCC"))
PRED = np.array(list("AABBBCCC"))  # every change one frame early


def test_window_accuracy_hand_worked():
    np.testing.assert_array_equal(window_correct(TRUE, PRED, 0),
                                  [1, 1, 0, 1, 1, 0, 1, 1])
    assert window_accuracy(TRUE, PRED, 0) == 6 / 8
    # Frame 2 (true A): predicted frames 1..3 are A B B, so A is found.
    assert window_accuracy(TRUE, PRED, 1) == 1.0
    assert accuracy_by_window(TRUE, PRED, windows=[0, 1, 5]) == {0: 0.75, 1: 1.0, 5: 1.0}


def test_window_rule_looks_for_the_true_label_in_the_predictions():
    # Direction matters: true B at frame 0 is in predictions 0..1 = (A, B);
    # true A at frame 1 is in predictions 0..2 = (A, B, B).
    y_true = np.array(["B", "A", "A"])
    y_pred = np.array(["A", "B", "B"])
    np.testing.assert_array_equal(window_correct(y_true, y_pred, 1), [True, True, False])


def test_transitions_hand_worked():
    tc = transition_counts(TRUE, PRED, 0)
    assert (tc.actual, tc.predicted, tc.correct) == (2, 2, 0)
    assert tc.precision == 0.0 and tc.recall == 0.0
    tc = transition_counts(TRUE, PRED, 1)  # both one frame early: both match
    assert (tc.actual, tc.predicted, tc.correct) == (2, 2, 2)
    assert tc.precision == 1.0 and tc.recall == 1.0


def test_transitions_must_match_in_type_and_only_once():
    y_true = np.array(list("AAAABBBB"))  # A->B at 4
    y_pred = np.array(list("AAABABBB"))  # A->B at 3, B->A at 4, A->B at 5
    assert transition_counts(y_true, y_pred, 0) == (1, 3, 0)
    tc = transition_counts(y_true, y_pred, 2)
    assert tc == (1, 3, 1)  # two candidate A->B, one true transition
    assert tc.precision == pytest.approx(1 / 3) and tc.recall == 1.0
    # Right time, wrong type: A->C predicted where A->B happened.
    assert transition_counts(list("AABB"), list("AACC"), 3).correct == 0


def test_exact_transition_at_window_zero():
    y_true = np.array(list("AABBCCA"))
    y_pred = np.array(list("AABBACA"))
    # true: A->B@2, B->C@4, C->A@6; predicted: A->B@2, B->A@4, A->C@5, C->A@6
    assert transition_counts(y_true, y_pred, 0) == (3, 4, 2)


def test_no_transitions_give_nan_precision_and_recall():
    tc = transition_counts(list("AAA"), list("AAA"))
    assert tc == (0, 0, 0)
    assert np.isnan(tc.precision) and np.isnan(tc.recall)


def test_sequences_are_pooled_without_crossing_boundaries():
    y_true = [np.array(["A"]), np.array(["B"])]
    y_pred = [np.array(["B"]), np.array(["A"])]
    assert window_accuracy(y_true, y_pred, 1) == 0.0  # concatenated it would be 1.0
    assert window_accuracy(np.array(["A", "B"]), np.array(["B", "A"]), 1) == 1.0
    assert transition_counts([np.array(["A"]), np.array(["B"])],
                             [np.array(["A"]), np.array(["B"])]) == (0, 0, 0)
    both = transition_counts([TRUE, TRUE], [PRED, PRED], 1)
    assert both == (4, 4, 4)


def test_confusion_matrix_hand_worked():
    cm = confusion_matrix(TRUE, PRED, ["A", "B", "C"])
    np.testing.assert_array_equal(cm, [[2, 1, 0], [0, 2, 1], [0, 0, 2]])
    np.testing.assert_array_equal(confusion_matrix(TRUE, PRED, ["A", "B", "C"], window=1),
                                  np.diag([3, 3, 2]))
    # The order of classes sets the order of rows and columns.
    np.testing.assert_array_equal(confusion_matrix(TRUE, PRED, ["C", "A", "B"]),
                                  [[2, 0, 0], [0, 2, 1], [1, 0, 2]])
    with pytest.raises(ValueError, match="not in classes"):
        confusion_matrix(TRUE, PRED, ["A", "B"])


labels = st.lists(st.sampled_from("ABC"), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(st.data(), labels, st.integers(0, 6))
def test_metrics_match_their_literal_definitions(data, y_true, w):
    y_pred = data.draw(st.lists(st.sampled_from("ABC"), min_size=len(y_true),
                                max_size=len(y_true)))
    T = len(y_true)
    # Window rule, straight from the text.
    expected = [y_true[t] in y_pred[max(0, t - w):t + w + 1] for t in range(T)]
    np.testing.assert_array_equal(window_correct(y_true, y_pred, w), expected)
    # CPT at window 0, straight from the printed formula.
    cpt = sum(y_pred[t] != y_pred[t - 1] and y_true[t] == y_pred[t]
              and y_true[t - 1] == y_pred[t - 1] for t in range(1, T))
    tc0 = transition_counts(y_true, y_pred, 0)
    assert tc0.correct == cpt
    tc = transition_counts(y_true, y_pred, w)
    assert tc.correct <= min(tc.actual, tc.predicted)
    assert tc.correct >= tc0.correct  # a wider window never loses matches
    assert window_accuracy(y_true, y_pred, w) >= window_accuracy(y_true, y_pred, 0)
    cm = confusion_matrix(y_true, y_pred, list("ABC"), window=w)
    assert cm.sum() == T and np.trace(cm) == sum(expected)


# --------------------------------------------------------------------------- LOSO


class MajorityRecognizer(Recognizer):
    """Predicts the most frequent training label (ties: first in sorted order)."""

    def __init__(self, *, tag="x"):
        self.tag = tag

    def fit(self, sequences, labels=None, *, feature_set=None):
        Xs, ys = self._validate_fit_data(sequences, labels)
        y = np.concatenate(ys)
        counts = np.array([np.sum(y == c) for c in self.classes_])
        self.majority_ = self.classes_[np.argmax(counts)]
        self.seen_sizes_ = sorted(len(v) for v in ys)
        return self

    def predict_proba(self, X):
        X = self._validate_X(X, reset=False)
        P = np.zeros((X.shape[0], len(self.classes_)))
        P[:, list(self.classes_).index(self.majority_)] = 1.0
        return P

    filter = predict_proba

    def reset(self):
        pass

    def step(self, x):
        return self.filter(np.asarray(x)[None])[0]

    def _get_state(self):
        return {}

    def _set_state(self, arrays):
        pass


def majority_sessions():
    def s(subj, y):
        return {"subject": subj, "X": np.zeros((len(y), 2)), "y": np.array(list(y))}
    return [s("s1", "AAAB"), s("s2", "ABBB"), s("s3", "BBBB")]


def test_loso_with_a_majority_recognizer_hand_worked():
    calls = []
    res = leave_one_subject_out(MajorityRecognizer, majority_sessions(), windows=[0, 1],
                                progress=lambda *a: calls.append(a))
    # Folds: s1 <- trained on s2+s3 (1 A, 7 B) predicts B: 1/4 correct;
    #        s2 <- s1+s3 (3 A, 5 B) predicts B: 3/4;  s3 <- s1+s2 (4 A, 4 B) tie -> A: 0/4.
    assert res["accuracy_by_window"] == {0: 4 / 12, 1: 4 / 12}
    assert res["classes"] == ["A", "B"]
    assert res["confusion"] == [[0, 4], [4, 4]]
    assert res["transition_counts"] == {"actual": 2, "predicted": 0, "correct": 0}
    assert np.isnan(res["transition_precision"]) and res["transition_recall"] == 0.0
    assert res["per_subject"]["s1"]["accuracy_by_window"][0] == 0.25
    assert res["per_subject"]["s2"]["accuracy_by_window"][0] == 0.75
    assert res["per_subject"]["s3"]["accuracy_by_window"][0] == 0.0
    assert res["per_subject"]["s3"]["n_frames"] == 4
    assert calls == [(1, 3, "s1"), (2, 3, "s2"), (3, 3, "s3")]


def test_loso_training_sets_exclude_the_test_subject():
    def s(subj, y):
        return {"subject": subj, "X": np.zeros((len(y), 2)), "y": np.array(list(y))}
    # Session lengths identify the sessions: s1 -> 4, 2; s2 -> 4, 3; s3 -> 4, 1.
    sessions = [s("s1", "AAAB"), s("s2", "ABBB"), s("s3", "BBBB"),
                s("s1", "AA"), s("s2", "BBA"), s("s3", "B")]
    seen = []

    def factory():
        rec = MajorityRecognizer()
        orig = rec.fit

        def fit(X, y, **kw):
            seen.append(sorted(len(v) for v in y))
            return orig(X, y, **kw)
        rec.fit = fit
        return rec

    res = leave_one_subject_out(factory, sessions, windows=[0])
    assert seen == [[1, 3, 4, 4], [1, 2, 4, 4], [2, 3, 4, 4]]
    assert res["per_subject"]["s1"]["n_frames"] == 6
    seen.clear()
    res = leave_one_subject_out(factory, sessions, windows=[0], n_own_sessions_in_training=1)
    # Experiment-1 style: the subject's first session joins the training set.
    assert seen == [[1, 3, 4, 4, 4], [1, 2, 4, 4, 4], [2, 3, 4, 4, 4]]
    assert res["per_subject"]["s1"]["n_frames"] == 2
    assert res["per_subject"]["s1"]["n_sessions"] == 1


def test_loso_errors():
    one = [{"subject": "a", "X": np.zeros((2, 1)), "y": np.array(["A", "A"])}]
    with pytest.raises(ValueError, match="at least two subjects"):
        leave_one_subject_out(MajorityRecognizer, one)
    with pytest.raises(ValueError, match="none left"):
        leave_one_subject_out(MajorityRecognizer, majority_sessions(),
                              n_own_sessions_in_training=1)
    with pytest.raises(ValueError, match="decoder"):
        leave_one_subject_out(MajorityRecognizer, majority_sessions(), decoder="best")


def test_loso_with_the_hmm_on_synthetic_subjects(make_sessions):
    sessions = make_sessions(n_subjects=3, sessions_per_subject=2, seed=3)
    for decoder in ("predict", "filter", "smooth"):
        res = leave_one_subject_out(HMMRecognizer(n_bins=10), sessions, decoder=decoder)
        acc = res["accuracy_by_window"]
        assert list(acc) == list(range(0, 51, 5))
        assert acc[0] > 0.9
        assert all(acc[a] <= acc[b] for a, b in zip(list(acc)[:-1], list(acc)[1:]))
        cm = np.array(res["confusion"])
        assert cm.sum() == sum(len(s["y"]) for s in sessions)
        assert np.trace(cm) / cm.sum() == pytest.approx(acc[0])
        assert set(res["per_subject"]) == {"S0", "S1", "S2"}
        assert 0 <= res["transition_recall"] <= 1
        assert res["transitions_by_window"][25]["correct"] >= \
            res["transitions_by_window"][0]["correct"]
