"""`walkerlab deploy-model`: a trained HMM onto a walker, over the walker protocol.

`model_bytes` turns an HMMRecognizer and the walker's calibration into the firmware's
model file (device/firmware/model_format.py): bin edges, start and transition
probabilities, log emission table, and the constants the firmware needs to compute
the model's features from raw counts exactly as host/features.py does.
`upload_model` sends it with MODEL_BEGIN / MODEL_CHUNK / MODEL_COMMIT, each
acknowledged (docs/protocol.md, "Model upload"); the firmware checks the CRC, parses
the model and keeps it on flash. The same path serves a board and the virtual walker.
"""
from __future__ import annotations

import contextlib
import sys

import time

import numpy as np
import serial

from calibration import CalibrationError, GRAVITY, WalkerCalibration, calibration_for
from device.firmware import model_format
from device.protocol import wire
from host.errors import UserError
from host.features import FEATURE_SETS, SPEED_WINDOW_S
from host.link import check_port

REPLY_TIMEOUT_S = 2.0
RETRIES = 3


def feature_constants(calibration: WalkerCalibration) -> list[float]:
    """The FeatureExtractor's constants, computed the way it computes them."""
    c = calibration
    load_scale = 1.0 / np.asarray(c.load_gains_counts_per_n, dtype=np.float64)
    accel_scale = GRAVITY / np.asarray(c.accel_counts_per_g, dtype=np.float64)
    values = (list(np.asarray(c.load_offsets_counts, dtype=np.float64)) + list(load_scale)
              + list(np.asarray(c.accel_bias_counts, dtype=np.float64)) + list(accel_scale)
              + [c.metres_per_tick, c.front_half_width_m, c.rear_half_width_m,
                 c.min_total_load_n, SPEED_WINDOW_S])
    return [float(v) for v in values]


def model_bytes(recognizer, calibration: WalkerCalibration) -> bytes:
    """The firmware model file for a fitted HMMRecognizer (UserError if it cannot be)."""
    from recognizers.hmm_recognizer import HMMRecognizer

    if not isinstance(recognizer, HMMRecognizer):
        raise UserError("only the discrete HMM runs on the walker (train it with "
                        "`walkerlab train --recognizer hmm`), got %s"
                        % type(recognizer).__name__)
    feature_set = recognizer.feature_set_ or "cop"
    if feature_set not in FEATURE_SETS or \
            len(FEATURE_SETS[feature_set]) != recognizer.n_features_in_:
        raise UserError("the model's features (%s, %d columns) are not a feature set the "
                        "firmware computes" % (feature_set, recognizer.n_features_in_))
    disc = recognizer.discretizer_
    model = recognizer.model_
    table = model.emissions_.log_table  # (S, max bins + 1, K), rows past n_bins unused
    edges = [list(map(float, e)) for e in disc.edges_]
    log_emission = [table[s, :len(edges[s]) + 1, :].tolist() for s in range(len(edges))]
    try:
        return model_format.pack_model(
            [str(c) for c in recognizer.classes_], feature_set, feature_constants(calibration),
            edges, model.startprob_.tolist(), model.transmat_.tolist(), log_emission)
    except model_format.ModelError as exc:
        raise UserError("cannot put this model on the walker: %s" % exc) from None


class _Client:
    """Commands and their ACK/NAK over an open serial port (frames of other kinds,
    such as samples of a streaming walker, are skipped)."""

    def __init__(self, port) -> None:
        self.port = port
        self.decoder = wire.FrameDecoder(track_sequence=False)
        self.seq = 0x8000  # away from the recorder's counter, for readable logs
        self.info = None

    def command(self, kind: int, payload: bytes = b"", expect=None):
        """Send; return the reply payload (INFO for HELLO, else the ACK's code)."""
        for _ in range(RETRIES):
            seq = self.seq
            self.seq = (self.seq + 1) & 0xFFFF
            self.port.write(wire.encode_frame(kind, seq, 0, payload))
            deadline = time.monotonic() + REPLY_TIMEOUT_S
            while time.monotonic() < deadline:
                for frame in self.decoder.feed(self.port.read(4096)):
                    if frame.frame_type == wire.INFO:
                        self.info = wire.unpack_info(frame.payload)
                    elif frame.frame_type == wire.CALIBRATION and self.info is not None:
                        try:  # sent after INFO, before the ACK, by a calibrated walker
                            self.info["calibration"] = wire.unpack_calibration(
                                frame.payload)
                        except ValueError:
                            pass
                    elif frame.frame_type in (wire.ACK, wire.NAK):
                        ktype, kseq, code = wire.unpack_ack(frame.payload)
                        if ktype == kind and kseq == seq:
                            return code if frame.frame_type == wire.NAK else 0
        raise UserError("the walker did not answer %s (is it a WalkerLab walker?)"
                        % wire.FRAME_TYPE_NAMES.get(kind, hex(kind)))


_NAK_TEXT = {
    wire.NAK_UNKNOWN_COMMAND: "its firmware is too old to take models (update it with "
                              "`walkerlab flash`)",
    wire.NAK_UNSUPPORTED: "it has no storage for a model",
    wire.NAK_BUSY: "it has not enough free memory",
    wire.NAK_BAD_ARGUMENT: "the transfer went out of step",
    wire.NAK_BAD_MODEL: "it rejected the model (CRC or format; see its LOG frames)",
}


@contextlib.contextmanager
def _walker_client(port_name: str, open_port=None):
    """A protocol client on the walker's port, after a HELLO round trip; closes the port."""
    check_port(port_name)
    opener = open_port or (lambda: serial.Serial(port_name, 921600, timeout=0.05))
    try:
        port = opener()
    except (serial.SerialException, OSError) as exc:
        raise UserError("cannot open %s: %s" % (port_name, exc)) from None
    try:
        client = _Client(port)
        client.command(wire.CMD_HELLO)
        yield client
    finally:
        port.close()


def upload_model(port_name: str, data: bytes, progress=None, open_port=None) -> dict:
    """Send model file bytes to the walker on port_name; returns the walker's INFO."""
    with _walker_client(port_name, open_port) as client:

        def check(kind, code):
            if code:
                raise UserError("the walker refused the model: %s"
                                % _NAK_TEXT.get(code, "NAK code %d" % code))

        check(wire.CMD_MODEL_BEGIN, client.command(
            wire.CMD_MODEL_BEGIN, wire.pack_model_begin(len(data), wire.crc16(data))))
        step = wire.MODEL_CHUNK_MAX
        for offset in range(0, len(data), step):
            check(wire.CMD_MODEL_CHUNK, client.command(
                wire.CMD_MODEL_CHUNK, wire.pack_model_chunk(offset, data[offset:offset + step])))
            if progress is not None:
                progress(min(offset + step, len(data)), len(data))
        check(wire.CMD_MODEL_COMMIT, client.command(wire.CMD_MODEL_COMMIT))
        return client.info or {}


def walker_info(port_name: str, open_port=None) -> dict:
    """The walker's INFO (HELLO round trip)."""
    with _walker_client(port_name, open_port) as client:
        if client.info is None:
            raise UserError("%s answered HELLO without INFO" % port_name)
        return client.info


def deploy_model(model_path, port_name: str, calibration_path=None,
                 progress: bool = True) -> dict:
    """Load a saved HMM, build its model file for the walker on port_name, upload it."""
    from tqdm import tqdm

    from host.models import append_history, is_default_model, load_model, save_model

    recognizer = load_model(model_path)
    info = walker_info(port_name)
    try:
        calibration = (WalkerCalibration.load(calibration_path) if calibration_path
                       else calibration_for(info["walker_id"], info.get("calibration"),
                                       use_sources=False))
    except CalibrationError as exc:
        raise UserError(str(exc)) from None
    rate = info.get("rate_hz")
    try:  # the walker filters at its own rate: convert the model, or say why not
        on_device = recognizer.at_rate(rate) if rate else recognizer
    except ValueError as exc:
        raise UserError(str(exc)) from None
    data = model_bytes(on_device, calibration)
    bar = tqdm(total=len(data), unit="B", desc="uploading", disable=not progress)

    def advance(done, total):
        bar.n = done
        bar.refresh()

    try:
        upload_model(port_name, data, progress=advance)
    finally:
        bar.close()
    # The model file remembers where it went (its history), like train and learn.
    append_history(recognizer, "deploy", walker_id=info["walker_id"], port=port_name,
                   bytes=len(data), calibration=str(calibration.source))
    if not is_default_model(model_path):  # the shipped file stays as shipped
        try:
            save_model(recognizer, model_path, overwrite=True)
        except UserError as exc:  # deployed all the same; only the note is missing
            print("walkerlab: warning: deployed, but %s" % exc, file=sys.stderr)
    return {"walker_id": info["walker_id"], "bytes": len(data),
            "classes": [str(c) for c in recognizer.classes_],
            "feature_set": recognizer.feature_set_ or "cop",
            "calibration": calibration.source}
