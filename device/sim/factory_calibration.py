"""The calibration a virtual walker ships with: its hardware ground truth.

A real walker is calibrated with known masses; a virtual one's gains and offsets are
known exactly, so it is "factory calibrated" with them. Loading the simulator registers
it with calibration.register_calibration_source, so calibration_for() finds it for
walker ids of the form SIM-<n> when no calibration file is stored.
"""
from __future__ import annotations

import re

from calibration import WalkerCalibration, register_calibration_source

from .sensors import WalkerHardwareTruth, default_truth

_VIRTUAL_ID = re.compile(r"^SIM-(\d+)$")


def calibration_from_truth(truth: WalkerHardwareTruth) -> WalkerCalibration:
    g = truth.geometry
    return WalkerCalibration(
        walker_id=truth.walker_id,
        load_offsets_counts=[float(v) for v in truth.load_offsets_counts],
        load_gains_counts_per_n=[float(v) for v in truth.load_gains_counts_per_n],
        accel_bias_counts=[float(v) for v in truth.accel_bias_counts],
        accel_counts_per_g=[float(v) for v in truth.accel_counts_per_g],
        encoder_ticks_per_rev=int(truth.encoder_ticks_per_rev),
        wheel_diameter_m=float(truth.wheel_diameter_m),
        front_half_width_m=g.front_half_width_m, rear_half_width_m=g.rear_half_width_m,
        wheelbase_m=g.wheelbase_m, source="virtual walker factory calibration",
    ).validate()


def virtual_walker_calibration(walker_id: str) -> WalkerCalibration | None:
    """Factory calibration of the virtual walker `walker_id`, or None if not virtual."""
    match = _VIRTUAL_ID.match(walker_id)
    if match is None:
        return None
    return calibration_from_truth(default_truth(int(match.group(1))))


def factory_calibration_payload(truth: WalkerHardwareTruth, date_s: int = 1_767_225_600
                                ) -> bytes:
    """The CALIBRATION payload a virtual walker keeps in its flash from the factory
    (dated 2026-01-01)."""
    from dataclasses import asdict

    from device.protocol import wire
    return wire.pack_calibration(asdict(calibration_from_truth(truth)), date_s)


register_calibration_source(virtual_walker_calibration)
