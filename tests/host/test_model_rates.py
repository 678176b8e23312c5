"""Model files carry their sample rate; a stream at another rate converts or refuses."""
import warnings

import numpy as np
import pytest

from host.datasets import load_sessions
from host.errors import UserError
from host.models import load_model
from host.replay import replay_recording
from host.simulate import simulate_to_files
from recognizers import CRFRecognizer, HMMRecognizer, load_recognizer
from recognizers.modelling.hmm import persistence_transmat
from recognizers.rates import (RateWarning, mean_stay_s, persistence_tau_at_rate,
                               transmat_at_rate)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Two training subjects at 50 Hz and the same test subject at 50 and 100 Hz."""
    d = tmp_path_factory.mktemp("rates")
    train = simulate_to_files("free", 2, 100, d / "train", duration_s=120, progress=False)
    t50 = simulate_to_files("free", 1, 21, d / "t50", duration_s=60, progress=False)[0]
    t100 = simulate_to_files("free", 1, 21, d / "t100", rate_hz=100, duration_s=60,
                             progress=False)[0]
    sessions = load_sessions([str(p) for p in train], "cop")
    return {"train": [str(p) for p in train], "sessions": sessions, "t50": str(t50),
            "t100": str(t100), "dir": d}


@pytest.fixture(scope="module")
def hmm50(data):
    s = data["sessions"]
    model = HMMRecognizer(tau=400).fit([x.X for x in s], [x.y for x in s], feature_set="cop")
    model.sample_rate_hz_ = 50.0
    return model


@pytest.mark.parametrize("factor", [2.0, 0.5, 3.0])
def test_the_persistence_root_is_the_persistence_matrix_of_the_converted_tau(factor):
    A = persistence_transmat(5, 400.0)
    B = transmat_at_rate(A, factor)
    tau2 = persistence_tau_at_rate(400.0, 5, factor)
    np.testing.assert_allclose(B, persistence_transmat(5, tau2), atol=1e-12)
    np.testing.assert_allclose(B.sum(axis=1), 1.0)
    if factor == 2.0:  # two steps at 100 Hz are one step at 50 Hz
        np.testing.assert_allclose(B @ B, A, atol=1e-12)
    if factor == 0.5:
        np.testing.assert_allclose(B, A @ A, atol=1e-12)


def test_a_converted_model_on_a_stream_with_every_other_frame_missing_equals_the_original(
        hmm50):
    """Brute force: frames with no evidence (NaN) only propagate the chain, so the 100 Hz
    model over [x0, -, x1, -, ...] must give the 50 Hz model's posteriors over [x0, x1, ...]."""
    rng = np.random.default_rng(0)
    X50 = rng.normal(size=(200, hmm50.n_features_in_)) * 3
    X100 = np.full((400, X50.shape[1]), np.nan)
    X100[::2] = X50
    fast = hmm50.at_rate(100)
    assert fast is not hmm50 and fast.sample_rate_hz_ == 100.0
    np.testing.assert_allclose(fast.filter(X100)[::2], hmm50.filter(X50), atol=1e-9)
    # ...and back: the 100 Hz model converted to 50 Hz is the original.
    np.testing.assert_allclose(fast.at_rate(50).transmat_, hmm50.transmat_, atol=1e-12)
    assert hmm50.at_rate(50) is hmm50  # same rate: the model itself


def test_the_file_records_the_rate_and_time_constants_in_seconds(hmm50, tmp_path):
    path = hmm50.save(tmp_path / "m.npz")
    loaded = load_recognizer(path)
    assert loaded.sample_rate_hz_ == 50.0
    stays = loaded.time_constants_s()["mean_stay"]
    np.testing.assert_allclose(list(stays.values()), mean_stay_s(hmm50.transmat_, 50.0))
    assert set(stays) == set(hmm50.classes_)
    crf = CRFRecognizer(window=10, max_iterations=2)
    crf.fit([np.random.default_rng(1).normal(size=(60, 2))], [np.repeat(["A", "B"], 30)])
    crf.sample_rate_hz_ = 50.0
    assert crf.time_constants_s()["window"] == pytest.approx(0.2)


def test_replaying_a_100_hz_recording_converts_a_50_hz_model(hmm50, data):
    rec50, r50 = replay_recording(data["t50"], hmm50)
    rec100, r100 = replay_recording(data["t100"], hmm50)
    acc = []
    for rec, r in ((rec50, r50), (rec100, r100)):
        truth = rec.labels_per_sample("simulator")
        acc.append(np.mean(r.predicted()[truth != ""] == truth[truth != ""]))
    assert len(r100.t_s) == 2 * len(r50.t_s) - 1  # really twice the frames
    assert acc[1] > 0.5 and abs(acc[1] - acc[0]) < 0.1  # recognises as well at 100 Hz


def test_models_that_cannot_be_converted_say_so(data, tmp_path):
    s = data["sessions"]
    crf = CRFRecognizer(max_iterations=3).fit([x.X[:2000] for x in s],
                                              [x.y[:2000] for x in s], feature_set="cop")
    crf.sample_rate_hz_ = 50.0
    with pytest.raises(ValueError, match=r"trained at 50 Hz and cannot run at 100 Hz"):
        crf.at_rate(100)
    with pytest.raises(UserError, match=r"crf model was trained at 50 Hz .*100 Hz"):
        replay_recording(data["t100"], crf)
    assert crf.at_rate(50) is crf


def test_old_files_without_a_rate_take_their_training_recordings_or_warn(data, tmp_path):
    s = data["sessions"]
    model = HMMRecognizer().fit([x.X for x in s], [x.y for x in s], feature_set="cop")
    model.metadata_ = {"training_recordings": data["train"]}
    path = model.save(tmp_path / "old.npz")  # no sample_rate_hz_: an old file
    assert load_recognizer(path).__dict__.get("sample_rate_hz_") is None
    assert load_model(path).sample_rate_hz_ == 50.0  # read from the recordings
    model.metadata_ = {"training_recordings": [str(tmp_path / "gone.h5")]}
    orphan = load_model(model.save(tmp_path / "orphan.npz"))
    assert orphan.__dict__.get("sample_rate_hz_") is None
    with pytest.warns(RateWarning, match="assuming 50 Hz"):
        converted = orphan.at_rate(100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(converted.transmat_ @ converted.transmat_,
                                   orphan.transmat_, atol=1e-12)


def test_the_live_worker_converts_a_50_hz_model_for_a_100_hz_walker(hmm50):
    """The monitor's processing thread reads the rate from the walker's INFO frame."""
    import time

    from device.sim.virtual_walker import simulate_session_bytes
    from host.gui.processing import ProcessingWorker
    from host.link import LinkBatch, QueueSink
    from host.samples import StreamDecoder

    posts = {}
    for rate in (50, 100):
        decoder = StreamDecoder()
        worker = ProcessingWorker(QueueSink())
        worker.set_recognizer(hmm50)
        chunks = []
        for t, data in simulate_session_bytes("free", 21, rate, duration_s=4, chunk_s=0.1):
            block, others = decoder.feed(data, t)
            chunk = worker.process([LinkBatch(time.time(), data, block, others, [])])
            if chunk is not None and chunk.posterior is not None:
                chunks.append(chunk.posterior)
        assert not worker.errors
        posts[rate] = np.concatenate(chunks)
        running = worker._pipeline.recognizer
        assert running.sample_rate_hz_ == rate and (running is hmm50) == (rate == 50)
    assert len(posts[100]) == 2 * len(posts[50]) - 1
