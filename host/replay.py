"""Replay a recording's raw serial bytes through exactly the live pipeline.

The bytes are fed in the chunks they were read in, through a fresh StreamDecoder and
RecognitionPipeline, so features and posteriors are those computed live.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from calibration import WalkerCalibration, calibration_for
from host.pipeline import RecognitionPipeline
from host.recording import open_recording
from host.samples import StreamDecoder


@dataclass
class ReplayResult:
    t_s: np.ndarray  # device time of each sample, seconds (unwrapped)
    features: np.ndarray  # (n, k)
    feature_names: tuple[str, ...]
    posterior: np.ndarray | None  # (n, n_classes) filtered posteriors
    classes: tuple[str, ...]
    frames: int
    elapsed_s: float

    def predicted(self) -> np.ndarray:
        if self.posterior is None:
            return np.zeros(0, dtype=str)
        return np.asarray(self.classes)[np.argmax(self.posterior, axis=1)]


def recording_calibration(recording) -> WalkerCalibration:
    """The calibration stored in the recording (what was used live), else the walker's."""
    if recording.calibration:
        return WalkerCalibration.from_dict(recording.calibration, recording.path)
    return calibration_for(recording.attrs.get("walker_id") or "walker")


COALESCE_BYTES = 1 << 18  # unpaced replay decodes ~256 KiB at a time (see _coalesce)


def replay_bytes(chunks, calibration: WalkerCalibration, recognizer=None,
                 speed: float = 0.0, on_output=None,
                 rate_hz: float | None = None,
                 _coalesce_bytes: int = COALESCE_BYTES) -> ReplayResult:
    """Feed (host_time, bytes) chunks through decoder and pipeline.

    speed: 0 runs as fast as possible; X > 0 paces the chunks at X times the speed
    they were recorded at. on_output(PipelineOutput) sees every non-empty block.
    """
    decoder = StreamDecoder()
    pipeline = RecognitionPipeline(calibration, recognizer, rate_hz=rate_hz)
    if speed <= 0 and on_output is None:
        chunks = _coalesce(chunks, _coalesce_bytes)
    t_parts, x_parts, p_parts = [], [], []
    start = time.perf_counter()
    first_host = None
    for host_time, data in chunks:
        if speed > 0:
            if first_host is None:
                first_host = host_time
            due = start + (host_time - first_host) / speed
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        block, _ = decoder.feed(data, host_time)
        if not len(block):
            continue
        out = pipeline.process(block)
        t_parts.append(out.features.t_s)
        x_parts.append(out.features.X)
        if out.posterior is not None:
            p_parts.append(out.posterior)
        if on_output is not None:
            on_output(out)
    elapsed = time.perf_counter() - start
    k = len(pipeline.features.names)
    return ReplayResult(
        t_s=np.concatenate(t_parts) if t_parts else np.zeros(0),
        features=np.concatenate(x_parts) if x_parts else np.zeros((0, k)),
        feature_names=pipeline.features.names,
        posterior=np.concatenate(p_parts) if p_parts else None,
        classes=pipeline.classes,
        frames=decoder.frames.frames_ok,
        elapsed_s=elapsed,
    )


def _coalesce(chunks, limit: int = COALESCE_BYTES):
    """Join consecutive reads into ~256 KiB pieces (the host time of the last).

    Decoder, features and filters are streaming, so the result does not depend on
    where the bytes are cut; unpaced and unobserved, fewer, larger blocks spare the
    per-block overhead of every stage (a read holds ~1 s of data: ~100 frames).
    """
    parts, size, host_time = [], 0, 0.0
    for host_time, data in chunks:
        parts.append(data)
        size += len(data)
        if size >= limit:
            yield host_time, b"".join(parts)
            parts, size = [], 0
    if parts:
        yield host_time, b"".join(parts)


def recording_chunks(rec):
    """(host_time, bytes) per serial read of a Recording, in order."""
    raw = rec.raw_bytes()
    for host_time, offset, length in rec.raw_chunks:
        yield float(host_time), raw[int(offset):int(offset) + int(length)]


def replay_recording(path, recognizer=None, speed: float = 0.0, on_output=None):
    """Replay a recording file (from anywhere: its structure is probed first, see
    open_recording's ``untrusted``); returns (Recording, ReplayResult)."""
    from host.datasets import recording_rate_hz
    from host.errors import UserError

    rec = open_recording(path, untrusted=True)
    try:
        result = replay_bytes(recording_chunks(rec), recording_calibration(rec), recognizer,
                              speed, on_output, rate_hz=recording_rate_hz(rec) or None)
    except ValueError as exc:  # a model that cannot run at the recording's rate
        if recognizer is None or "Hz" not in str(exc):
            raise
        raise UserError(str(exc)) from None
    return rec, result
