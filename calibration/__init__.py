"""Load-cell, accelerometer and encoder calibration, stored per walker."""
from .walker_calibration import (  # noqa: F401
    CalibrationError, WalkerCalibration, calibration_dir, calibration_for, GRAVITY,
    register_calibration_source,
)

__all__ = ["CalibrationError", "WalkerCalibration", "calibration_dir", "calibration_for",
           "GRAVITY", "register_calibration_source"]
