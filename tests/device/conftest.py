import pytest


@pytest.fixture(scope="session")
def sim_sessions(tmp_path_factory):
    """Two simulated free-living sessions (fast path), as labelled recordings."""
    from host.simulate import simulate_to_files

    out = tmp_path_factory.mktemp("fw-sessions")
    return simulate_to_files("free", 2, 21, out, duration_s=240, progress=False)


@pytest.fixture(scope="session")
def trained_hmms(sim_sessions):
    """{feature set: fitted HMMRecognizer} trained on the first session."""
    from host.datasets import load_sessions
    from recognizers.hmm_recognizer import HMMRecognizer

    models = {}
    for fs in ("cop", "loadcells"):
        s = load_sessions(sim_sessions[:1], feature_set=fs)
        models[fs] = HMMRecognizer().fit([x.X for x in s], [x.y for x in s], feature_set=fs)
    return models
