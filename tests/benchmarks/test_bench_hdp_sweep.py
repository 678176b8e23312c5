"""bench_hdp.py's supervised sweep: the splits its learning curve uses, and that the
figures it prints are the accuracies of the models it names, refitted here."""
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_hdp", ROOT / "benchmarks" / "bench_hdp.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_planted_training_sets_are_nested_and_share_one_test_set():
    _, [(Xtr, ytr, Xte, yte, oracle)] = bench.labelled_splits("planted", False, seed=3)
    assert Xtr.shape == (600, 50) and Xte.shape == (200, 50)
    for n in (50, 200):
        _, [(xtr, ytr_n, xte, yte_n, oracle_n)] = bench.labelled_splits(
            "planted", False, seed=3, train_docs=n)
        np.testing.assert_array_equal(xtr, Xtr[:n])
        np.testing.assert_array_equal(ytr_n, ytr[:n])
        np.testing.assert_array_equal(xte, Xte)
        np.testing.assert_array_equal(yte_n, yte)
        np.testing.assert_array_equal(oracle_n, oracle)
    # another seed is another draw
    other = bench.labelled_splits("planted", False, seed=4, train_docs=50)[1][0][0]
    assert not np.array_equal(other, Xtr[:50])


def test_planted_document_length_and_oracle():
    _, [(Xtr, _, Xte, yte, oracle)] = bench.labelled_splits("planted", False, seed=0,
                                                            train_docs=30, doc_words=20)
    assert (Xtr.sum(1) == 20).all() and (Xte.sum(1) == 20).all()
    # the oracle is the Bayes rule of the draw: recomputed from the generator's truth
    X, y, thetabar, _, mu = bench.make_labelled_bars(800, 20, random_state=0)
    np.testing.assert_array_equal(Xte, X[600:])
    np.testing.assert_array_equal(oracle, np.argmax(thetabar[600:] @ mu.T, 1))
    assert oracle.shape == yte.shape


def test_text_training_subsets_are_stratified_and_keep_the_test_fold():
    pytest.importorskip("gensim")
    _, full = bench.labelled_splits("newsgroup", False, seed=0, folds=2)
    _, sub = bench.labelled_splits("newsgroup", False, seed=0, folds=2, train_docs=40)
    assert len(sub) == len(full) == 2
    for (_, ytr, _, yte, oracle), (_, ytr_full, _, yte_full, _) in zip(sub, full):
        assert oracle is None and len(ytr) == 40
        np.testing.assert_array_equal(yte, yte_full)  # the test fold is untouched
        classes, counts = np.unique(ytr_full, return_counts=True)
        sub_counts = np.array([np.sum(ytr == c) for c in classes])
        assert np.all(np.abs(sub_counts - 40 * counts / counts.sum()) <= 1)


def _printed(out, name):
    """(mean, std, per-split accuracies) printed on the line starting with name."""
    line = next(ln for ln in out.splitlines() if ln.strip().startswith(name))
    mean, std = re.search(r"(\d\.\d{3}) \+/- (\d\.\d{3})", line).groups()
    splits = [float(a) for a in line.split("splits ")[1].split()]
    return float(mean), float(std), splits


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::FutureWarning")  # scikit-learn 1.9's default changes
def test_sweep_prints_the_mean_and_std_of_the_models_it_names(capsys):
    from sklearn.linear_model import LogisticRegressionCV
    grid = {"topic_word_prior": (0.01,), "label_weight": (1.0,), "moves": (False,)}
    bench.sweep(True, ["planted"], seeds=(0, 1), grid=grid, peers=True, train_docs=[40])
    out = capsys.readouterr().out
    lr, shdp, oracle = [], [], []
    for seed in (0, 1):
        _, [(Xtr, ytr, Xte, yte, orc)] = bench.labelled_splits("planted", True, seed,
                                                               train_docs=40)
        assert len(ytr) == 40
        lr.append(np.mean(LogisticRegressionCV(Cs=10, cv=5, max_iter=5000)
                          .fit(Xtr, ytr).predict(Xte) == yte))
        m = bench.SupervisedHDP(n_components=10, doc_truncation=4, max_iter=10,
                                topic_word_prior=0.01, label_weight=1.0, moves=False,
                                random_state=seed).fit(Xtr, ytr)
        shdp.append(np.mean(m.predict(Xte) == yte))
        oracle.append(np.mean(orc == yte))
    for name, accs in (("LR on counts", lr), ("0.01", shdp), ("oracle", oracle)):
        mean, std, splits = _printed(out, name)
        np.testing.assert_allclose(splits, accs, atol=5e-4)
        assert mean == pytest.approx(np.mean(accs), abs=5e-4)
        assert std == pytest.approx(np.std(accs, ddof=1), abs=5e-4)
    assert "summary, 40 training documents" in out


def test_topic_counts_of_the_real_corpus_part():
    """The real part's three counts: 100 topics of 1/100 each are 100 by every count,
    though each sits at the 1 % threshold; below it only the 0.1 % count and the
    effective number still see them."""
    equal = np.full(100, 7.0)
    assert bench.n_used(equal) == 100 and bench.n_used(equal, 0.001) == 100
    assert bench.effective_topics(equal) == pytest.approx(100.0)
    # one big topic and 99 of 0.5 % each: the 1 % count sees one topic
    share = np.r_[0.505, np.full(99, 0.005)]
    assert bench.n_used(share) == 1 and bench.n_used(share, 0.001) == 100
    p = share / share.sum()
    assert bench.effective_topics(share) == pytest.approx(np.exp(-np.sum(p * np.log(p))))
    assert 1.0 < bench.effective_topics(share) < 100.0
    # empty topics add nothing
    assert bench.effective_topics(np.r_[share, np.zeros(50)]) == pytest.approx(
        bench.effective_topics(share))
