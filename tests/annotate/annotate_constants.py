"""The synthetic camera of the annotator tests (a module name unique across tests/)."""
OFFSET_S = -1.5  # the camera started 1.5 s before the recording
DRIFT_PPM = 800.0  # and its clock runs slow: 0.19 s (2 frames) over the session
FPS = 10
