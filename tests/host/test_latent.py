"""host/latent.py: window events and statistics, the model file, `walkerlab latent`."""
import numpy as np
import pytest

from host import latent
from host.errors import UserError

NAMES = ("accel_x", "accel_y", "accel_z", "speed", "load_FR", "load_FL", "load_RL", "load_RR")


def _signal(n=100, rate=50.0, load=(10, 10, 10, 10), speed=0.0, ay=0.0, az_spike=0.0):
    t = np.arange(n) / rate
    X = np.zeros((n, 8))
    X[:, 1] = ay
    X[:, 2] = 9.81
    X[n // 2, 2] += az_spike
    X[:, 3] = speed
    X[:, 4:] = load
    return X, t


def test_window_events_and_statistics():
    X1, t1 = _signal(load=(30, 30, 30, 30), speed=0.5)            # leaning, rolling
    X2, t2 = _signal(load=(40, 5, 5, 40), speed=0.3, ay=0.2)      # right-heavy, turning
    X3, t3 = _signal(load=(1, 1, 1, 1), az_spike=6.0)             # lifted
    X = np.vstack([X1, X2, X3])
    t = np.r_[t1, t2 + 2.0, t3 + 4.0]
    labels = np.array(["WF"] * 100 + ["TR"] * 100 + ["NTW"] * 100)
    labels[120:130] = "ST"
    counts = []
    F, lab, t0, t_end = latent.window_features(X, t, NAMES, labels, counts_out=counts)
    assert counts[2] == {"TR": 40, "ST": 10} and counts[0] == {"WF": 50}
    assert F.shape == (6, 10)
    assert list(lab) == ["WF", "WF", "TR", "TR", "NTW", "NTW"]
    assert np.allclose(t0, [0, 1, 2, 3, 4, 5])
    ev = F[:, :5]
    assert ev[0].tolist() == [1, 1, 0, 0, 0]
    assert ev[2].tolist() == [1, 1, 1, 1, 0]        # load asymmetry 70/90 > 0.2, |mean a_y| 0.2
    assert ev[4].tolist() == [0, 0, 0, 0, 1] or ev[5].tolist() == [0, 0, 0, 0, 1]
    assert F[0, 8] == pytest.approx(0.5)             # mean speed
    assert F[0, 7] == pytest.approx(120 / np.percentile(np.r_[[120] * 100, [90] * 100, [4] * 100], 95))
    assert F[0, 9] == pytest.approx(0.0)             # constant load: no oscillation


def test_window_features_need_loadcells():
    with pytest.raises(UserError, match="loadcells"):
        latent.window_features(np.zeros((10, 3)), np.arange(10.0), ("a", "b", "c"))


def test_model_file_round_trip_and_refusals(tmp_path):
    rng = np.random.default_rng(0)
    F = np.hstack([(rng.random((80, 5)) < 0.5).astype(float), rng.standard_normal((80, 5))])
    est = latent.make_harmonium(3).set_params(n_burn_in=10, n_samples=5, n_em_iter=1, ml_n_iter=5).fit(F)
    m = latent.LatentModel.from_estimator(est, {"kind": "latent-harmonium", "n_windows": 80})
    path = m.save(tmp_path / "m.npz")
    back = latent.LatentModel.load(path)
    assert np.allclose(back.transform(F), est.transform(F))
    assert back.header["n_windows"] == 80
    with pytest.raises(UserError, match="overwrite"):
        m.save(path)
    m.save(path, overwrite=True)
    with pytest.raises(UserError, match="columns"):
        back.transform(F[:, :4])
    np.savez(tmp_path / "other.npz", header=np.frombuffer(b'{"kind": "hmm"}', dtype=np.uint8))
    with pytest.raises(UserError, match="not a latent map"):
        latent.LatentModel.load(tmp_path / "other.npz")


@pytest.fixture(scope="module")
def sessions_paths(tmp_path_factory):
    from host.simulate import simulate_to_files
    folder = tmp_path_factory.mktemp("latent-exp2")
    return [str(p) for p in simulate_to_files("exp2", 2, 0, folder, duration_s=30, progress=False)]


def test_cli_latent_fit_writes_npz_and_refuses_overwrite(sessions_paths, tmp_path, capsys):
    from host.cli import main

    out = tmp_path / "map.npz"
    assert main(["latent", "fit", *sessions_paths, "--out", str(out), "--quiet", "--components", "3"]) == 0
    m = latent.LatentModel.load(out)
    assert m.components.shape == (3, 10)
    assert m.header["feature_names"] == list(latent.FEATURE_NAMES)
    w = latent.session_windows(sessions_paths[0])
    assert m.transform(w.X).shape == (len(w.X), 3)
    assert main(["latent", "fit", *sessions_paths, "--out", str(out), "--quiet"]) == 2
    assert "overwrite" in capsys.readouterr().err
    assert main(["latent", "fit", *sessions_paths, "--out", str(out), "--quiet", "--overwrite"]) == 0
    assert main(["latent", "fit", *sessions_paths, "--quiet"]) == 2


def test_cli_latent_evaluate_prints_loso_accuracies(sessions_paths, capsys):
    from host.cli import main

    assert main(["latent", "evaluate", *sessions_paths, "--quiet", "--components", "2"]) == 0
    out = capsys.readouterr().out
    assert "frames" in out
    for name in ("1-NN latent", "logistic latent", "1-NN raw", "logistic raw"):
        assert name in out
