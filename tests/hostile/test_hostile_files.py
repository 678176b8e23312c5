"""Every reader of a file from outside, run over a corpus of hostile files (corpus.py):
no traceback, one clear line naming the file, memory bounded."""
from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from calibration import WalkerCalibration
from calibration.walker_calibration import CalibrationError
from host.errors import UserError
from host.recording import open_recording
from host.recording.labels import read_sync, read_tracks
from host.recording.reader import RecordingFormatError
from recognizers.base import ModelFormatError, load_recognizer, read_model_header

from corpus import models, recordings, small_files

# Errors that carry a message meant for the user; anything else is a crash.
USER_ERRORS = (RecordingFormatError, ModelFormatError, CalibrationError, UserError,
               ValueError)
MEMORY_LIMIT = 200 * 1024**2


def run_reader(reader, path: Path):
    """(outcome, message, peak bytes): outcome 'ok' or 'refused'; crashes propagate."""
    tracemalloc.start()
    try:
        reader(path)
        outcome, message = "ok", ""
    except USER_ERRORS as exc:
        outcome, message = "refused", str(exc)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return outcome, message, peak


def check(reader, path: Path):
    assert path.stat().st_size < 10 * 1024**2
    outcome, message, peak = run_reader(reader, path)
    assert peak < MEMORY_LIMIT, "%s took %.0f MB" % (path.name, peak / 1e6)
    if outcome == "refused":
        assert "\n" not in message, message
        assert path.name in message, message
    return outcome


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    import recognizers.hmm_recognizer  # noqa: F401 - registers the "hmm" kind

    root = tmp_path_factory.mktemp("hostile")
    rng = np.random.default_rng(0)
    model = _tiny_model(root / "good-model.npz", rng)
    return {"recording": recordings(root / "recordings"),
            "model": models(root / "models", model), **small_files(root / "small")}


def _tiny_model(path: Path, rng) -> Path:
    from recognizers.base import RECOGNIZERS

    cls = RECOGNIZERS["hmm"]
    X = rng.normal(size=(400, 3))
    y = np.repeat(np.array(["W", "ST"]), 200)
    cls().fit(X, y).save(path)
    return path


def _recover(path: Path):
    from host.recording import recover

    out = path.with_name(path.stem + "-recovered.h5")
    try:
        recover(path, out)
    finally:
        out.unlink(missing_ok=True)


RECORDING_READERS = {
    "open_recording": open_recording,
    "read_tracks": read_tracks,
    "read_sync": read_sync,
    "recover": _recover,
}


@pytest.mark.parametrize("reader", sorted(RECORDING_READERS))
def test_recording_readers_survive_the_corpus(corpus, reader):
    outcomes = {p.name: check(RECORDING_READERS[reader], p) for p in corpus["recording"]}
    # the damage is seen: none of the corrupted recordings reads as a whole recording
    # except those whose damage lies outside what this reader reads
    assert sum(o == "refused" for o in outcomes.values()) >= 10, outcomes


def test_walkerlab_info_gives_one_line_for_every_hostile_recording(corpus, capsys):
    from host.cli import main

    for path in corpus["recording"]:
        code = main(["info", str(path)])
        err = capsys.readouterr().err
        assert "Traceback" not in err, (path.name, err)
        if code != 0:
            assert code == 2 and len(err.strip().splitlines()) == 1, (path.name, err)


@pytest.mark.parametrize("reader", [load_recognizer, read_model_header],
                         ids=["load_recognizer", "read_model_header"])
def test_model_readers_refuse_every_hostile_model_file(corpus, reader):
    for path in corpus["model"]:
        assert check(reader, path) == "refused", path.name


def test_calibration_reader_refuses_every_hostile_file(corpus):
    for path in corpus["calibration"]:
        assert check(WalkerCalibration.load, path) == "refused", path.name


def test_label_file_readers_refuse_every_hostile_file(corpus):
    from host.annotate.interchange import import_csv, import_eaf

    for path in corpus["csv"]:
        assert check(import_csv, path) == "refused", path.name
    for path in corpus["eaf"]:
        assert check(import_eaf, path) == "refused", path.name


def test_video_reader_refuses_every_hostile_file(corpus):
    from host.annotate.video import VideoReader

    for path in corpus["video"]:
        assert check(VideoReader, path) == "refused", path.name
