"""The activity vocabulary of the walker: codes, names, the thesis' experiment class
sets and its published statistics (Tables 6.1-6.4).

The product's domain: the annotator, the CLI, the workbench, the GUI theme, the
recognizers' evaluation and the simulator all read it from here. The virtual walker
(device/sim) is a client of this module, not its owner.
"""
from __future__ import annotations

import numpy as np

ACTIVITIES = ("NTW", "ST", "WF", "TL", "TR", "WB", "TRS",
              "GUR", "GDR", "SW", "RT", "GUC", "GDC")

ACTIVITY_NAMES = {
    "NTW": "not touching walker",
    "ST": "stop/standing",
    "WF": "walking forward",
    "TL": "turn left",
    "TR": "turn right",
    "WB": "walking backwards",
    "TRS": "transfer (sit to stand / stand to sit)",
    "GUR": "going up ramp",
    "GDR": "going down ramp",
    "SW": "sitting on walker",
    "RT": "reaching task",
    "GUC": "going up curb",
    "GDC": "going down curb",
}

# Table 6.1.
EXP1_CLASSES = ("NTW", "ST", "WF", "TL", "TR", "WB", "TRS")
# The 12 classes of the experiment-2 result tables (6.3, 6.4, 6.8-6.11, 6.13), in
# their order. TRS (Table 6.1) does not appear in them.
EXP2_CLASSES = ("NTW", "ST", "WF", "TL", "TR", "WB", "RT", "SW",
                "GUR", "GDR", "GUC", "GDC")

# Table 6.4 as printed (rows: previous activity, columns: current), EXP2_CLASSES order.
_TABLE_6_4 = np.array([
    # NTW    ST     WF     TL     TR     WB     RT     SW     GUR    GDR    GUC    GDC
    [.998 , .001 , .0001, .0002, .0001, 0    , 0    , 0    , 0    , 0    , 0    , 0],  # NTW
    [.0002, .9969, .0012, .0005, .0004, 0    , .0001, .0007, 0    , 0    , 0    , 0],  # ST
    [0    , .0009, .9959, .0012, .0009, 0    , .0004, 0    , .0001, .0002, .0001, .0002],  # WF
    [0    , .0017, .0044, .9930, .0001, 0    , .0007, 0    , .0002, 0    , 0    , 0],  # TL
    [0    , .0011, .0048, .0001, .9934, 0    , .0002, 0    , 0    , 0    , .0003, 0],  # TR
    [0    , .0019, .0038, 0    , 0    , .9923, .0019, 0    , 0    , 0    , 0    , 0],  # WB
    [.0002, 0    , .0028, .0002, .0004, .0006, .9958, 0    , 0    , 0    , 0    , 0],  # RT
    [.0001, .0004, 0    , 0    , 0    , 0    , 0    , .9995, 0    , 0    , 0    , 0],  # SW
    [0    , 0    , .005 , 0    , 0    , 0    , 0    , 0    , .9950, 0    , 0    , 0],  # GUR
    [0    , 0    , .0009, 0    , 0    , 0    , 0    , 0    , 0    , .9953, 0    , 0],  # GDR
    [0    , .0006, .005 , 0    , 0    , 0    , 0    , 0    , 0    , 0    , .9945, 0],  # GUC
    [.0006, .0006, .0071, 0    , .0006, 0    , 0    , 0    , 0    , 0    , 0    , .9912],  # GDC
])
# Printed rows do not sum exactly to 1 (rounding; GDR's row sums to .9962): renormalise.
EXP2_TRANSITIONS = _TABLE_6_4 / _TABLE_6_4.sum(axis=1, keepdims=True)
EXP2_TRANSITIONS.setflags(write=False)

# Table 6.3 "Frequency" column: samples per activity in experiment 2 (20 subjects, 50 Hz).
EXP2_SAMPLE_COUNTS = {"NTW": 8554, "ST": 51638, "WF": 71417, "TL": 16867, "TR": 15832,
                      "WB": 1045, "RT": 12287, "SW": 71334, "GUR": 2998, "GDR": 3194,
                      "GUC": 3087, "GDC": 1700}
EXP2_SUBJECTS = 20
LABEL_RATE_HZ = 50.0  # the thesis's sample rate (25-sample window = half a second)
