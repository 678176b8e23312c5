"""The unsupervised walker recognizers "hmm-em" / "hmm-gibbs" and state-to-activity mapping."""
import warnings

import numpy as np
import pytest

from recognizers import (
    ConvergenceWarning,
    EMHMMRecognizer,
    GibbsHMMRecognizer,
    get_recognizer_class,
    load_recognizer,
)
from recognizers.modelling.matching import (
    cooccurrence,
    hungarian_mapping,
    majority_mapping,
    map_states,
    mapping_matrix,
)


def test_cooccurrence_hard_and_soft():
    states = np.array([0, 0, 1, 2, 2, 2])
    labels = np.array([1, 1, 0, 0, 1, 1])
    C = cooccurrence(states, labels, 3, 2)
    np.testing.assert_array_equal(C, [[0, 2], [1, 0], [1, 2]])
    np.testing.assert_array_equal(cooccurrence(np.eye(3)[states], labels, 3, 2), C)
    with pytest.raises(ValueError):
        cooccurrence(states, labels[:3], 3, 2)
    with pytest.raises(ValueError):
        cooccurrence(states, labels + 5, 3, 2)


def test_majority_and_hungarian_mappings_hand_worked():
    # states 0 and 1 both co-occur most with class 0; state 3 never occurs.
    C = np.array([[50.0, 10.0, 0.0],
                  [40.0, 0.0, 30.0],
                  [0.0, 5.0, 1.0],
                  [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(majority_mapping(C), [0, 0, 1, 0])  # empty -> most frequent
    # one-to-one: 0->0, 1->2, 2->1; the extra state 3 falls back to the majority.
    np.testing.assert_array_equal(hungarian_mapping(C), [0, 2, 1, 0])
    np.testing.assert_array_equal(map_states(C, "hungarian"), hungarian_mapping(C))
    with pytest.raises(ValueError, match="majority"):
        map_states(C, "vote")
    M = mapping_matrix([0, 2, 1, 0], 3)
    np.testing.assert_array_equal(M.sum(axis=1), 1.0)
    np.testing.assert_array_equal(np.array([[0.1, 0.2, 0.3, 0.4]]) @ M, [[0.5, 0.3, 0.2]])


def sessions_xy(make_sessions, **kw):
    s = make_sessions(**kw)
    return [x["X"] for x in s], [x["y"] for x in s]


@pytest.mark.parametrize("kind,params", [
    ("hmm-em", dict(n_init=3)),
    ("hmm-em", dict(n_init=3, n_states=8, state_mapping="hungarian")),
    ("hmm-gibbs", dict(n_sweeps=60)),
    ("hmm-gibbs", dict(n_sweeps=60, n_states=7, self_transition_prior=10.0)),
])
def test_unsupervised_recognizers_find_well_separated_activities(kind, params,
                                                                 make_sessions):
    X, y = sessions_xy(make_sessions, n_subjects=3, seed=1)
    Xt, yt = sessions_xy(make_sessions, n_subjects=1, seed=1)  # fresh draw, same means
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        rec = get_recognizer_class(kind)(**params).fit(X, y, feature_set="cop")
    assert rec.model_.n_components == params.get("n_states", len(rec.classes_))
    assert np.mean(rec.predict(Xt[0]) == yt[0]) > 0.9
    P = rec.predict_proba(Xt[0])
    assert P.shape == (len(yt[0]), len(rec.classes_))
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.mean(rec.classes_[rec.filter(Xt[0]).argmax(1)] == yt[0]) > 0.85
    assert np.isfinite(rec.score(Xt[0]))
    assert rec.state_to_class_.shape == (rec.model_.n_components,)


def test_fit_ignores_labels_except_for_naming_states(make_sessions):
    # Permuting the label names permutes the mapping, not the learned model.
    X, y = sessions_xy(make_sessions, n_subjects=2, seed=4)
    names = {"NTW": "A", "ST": "B", "WF": "C", "TL": "D", "TR": "E"}
    a = EMHMMRecognizer(n_init=2).fit(X, y)
    b = EMHMMRecognizer(n_init=2).fit(X, [np.array([names[v] for v in s]) for s in y])
    np.testing.assert_array_equal(a.transmat_, b.transmat_)
    np.testing.assert_array_equal(a.emissionprob_, b.emissionprob_)
    np.testing.assert_array_equal([names[v] for v in a.predict(X[0])], b.predict(X[0]))


def test_unseen_bins_missing_readings_and_round_trip(make_sessions, tmp_path):
    X, y = sessions_xy(make_sessions, n_subjects=2, seed=2)
    rec = EMHMMRecognizer(n_init=2, n_states=7).fit(X, y)
    B = rec.emissionprob_
    for s, n in enumerate(rec.model_.n_values_):
        assert np.all(B[s, :, :n] > 0)  # pseudo-counts: no zero-probability bin
    Z = X[0].copy()
    Z[5:20, 2:] = np.nan
    Z[30] = 1e9
    for P in (rec.predict_proba(Z), rec.filter(Z)):
        assert np.isfinite(P).all()
        np.testing.assert_allclose(P.sum(axis=1), 1.0)
    loaded = load_recognizer(rec.save(tmp_path / "em.npz"))
    assert type(loaded) is EMHMMRecognizer and loaded.get_params() == rec.get_params()
    np.testing.assert_array_equal(loaded.state_to_class_, rec.state_to_class_)
    np.testing.assert_array_equal(loaded.predict(Z), rec.predict(Z))
    loaded.reset()
    np.testing.assert_array_equal(loaded.step_block(Z), rec.filter(Z))


def test_em_recognizer_exposes_the_em_run(make_sessions):
    X, y = sessions_xy(make_sessions, n_subjects=2, seed=3)
    rec = EMHMMRecognizer(n_init=2, n_iter=200, tol=1e-3).fit(X, y)
    h = rec.model_.history_
    assert rec.model_.converged_ and len(h) == rec.model_.n_iter_
    assert np.all(np.diff(h) >= -1e-8 * np.abs(h[:-1]))


@pytest.mark.parametrize("cls,params,match", [
    (EMHMMRecognizer, dict(n_init=0), "'n_init'"),
    (EMHMMRecognizer, dict(tol=-1.0), "'tol'"),
    (EMHMMRecognizer, dict(state_mapping="vote"), "'state_mapping'"),
    (EMHMMRecognizer, dict(n_states=0), "'n_states'"),
    (GibbsHMMRecognizer, dict(n_sweeps=10, burn_in=10), "'burn_in'"),
    (GibbsHMMRecognizer, dict(emission_prior=0.0), "'emission_prior'"),
])
def test_bad_parameters_fail_in_fit(cls, params, match, make_sessions):
    X, y = sessions_xy(make_sessions, n_subjects=1, seed=0)
    rec = cls(**params)  # never raises
    with pytest.raises(ValueError, match=match):
        rec.fit(X, y)
    with pytest.raises(ValueError, match="needs labels"):
        cls().fit(X)


def test_cli_factory_builds_the_new_kinds_from_param_strings():
    cli = pytest.importorskip("host.cli")
    (spec,) = cli._model_specs("hmm-em", ["n_init=2", "n_states=11",
                                          "state_mapping=hungarian"])
    rec = spec.make()
    assert isinstance(rec, EMHMMRecognizer)
    assert (rec.n_init, rec.n_states, rec.state_mapping) == (2, 11, "hungarian")
    rec = cli._model_specs("hmm-gibbs", ["n_sweeps=100", "burn_in=50"])[0].make()
    assert isinstance(rec, GibbsHMMRecognizer) and rec.burn_in == 50


def test_both_state_mappings_come_from_one_fit(make_sessions):
    # Evaluation reports majority and one-to-one mappings of the same fitted model:
    # the variant must decode exactly as a recognizer fitted with that mapping.
    from recognizers.evaluation import leave_one_subject_out

    X, y = sessions_xy(make_sessions, n_subjects=2, seed=5)
    rec = EMHMMRecognizer(n_init=2, n_states=7).fit(X, y)
    ((key, other),) = rec.evaluation_variants().items()
    assert key == ("state_mapping", "hungarian")
    direct = EMHMMRecognizer(n_init=2, n_states=7, state_mapping="hungarian").fit(X, y)
    np.testing.assert_array_equal(other.state_to_class_, direct.state_to_class_)
    np.testing.assert_array_equal(other.predict(X[1]), direct.predict(X[1]))
    np.testing.assert_allclose(other.filter(X[1]), direct.filter(X[1]))
    np.testing.assert_array_equal(rec.predict(X[1]), EMHMMRecognizer(
        n_init=2, n_states=7).fit(X, y).predict(X[1]))  # the original is untouched
    # 7 states, 5 activities: one-to-one gives every activity one state of its own
    assert set(other.state_to_class_.tolist()) == set(range(len(rec.classes_)))

    sessions = make_sessions(n_subjects=3, seed=6)
    res = leave_one_subject_out(EMHMMRecognizer(n_init=2), sessions, windows=[0, 25])
    var = res["variants"]["state_mapping=hungarian"]
    ref = leave_one_subject_out(EMHMMRecognizer(n_init=2, state_mapping="hungarian"),
                                sessions, windows=[0, 25])
    assert var["accuracy_by_window"] == ref["accuracy_by_window"]
    assert var["confusion"] == ref["confusion"]
    assert ref["variants"]["state_mapping=majority"]["accuracy_by_window"] == \
        res["accuracy_by_window"]
