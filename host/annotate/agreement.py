"""Agreement between two label tracks, sample by sample.

Cohen's kappa over the samples both tracks label, and the thesis's windowed accuracy
(recognizers/evaluation.py: a sample of track A counts as matched if track B has the
same label within +-window samples), with A taken as the reference.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from host.annotate.labels import labels_on
from recognizers.evaluation import window_accuracy


@dataclass
class Agreement:
    n_samples: int  # samples labelled in both tracks
    kappa: float  # NaN if no samples in common
    accuracy: float  # raw agreement (window 0)
    windowed_accuracy: float
    window: int


def cohen_kappa(a, b) -> float:
    """Cohen's kappa of two equal-length label sequences (NaN if empty; 1.0 when
    both raters use one and the same label throughout)."""
    a = np.asarray(a, dtype=object)
    b = np.asarray(b, dtype=object)
    n = a.size
    if n == 0:
        return float("nan")
    classes, inv = np.unique(np.concatenate([a, b]).astype(str), return_inverse=True)
    ia, ib = inv[:n], inv[n:]
    k = len(classes)
    p_o = float(np.mean(ia == ib))
    p_e = float(np.dot(np.bincount(ia, minlength=k), np.bincount(ib, minlength=k))) / n / n
    if p_e >= 1.0:
        return 1.0 if p_o >= 1.0 else 0.0
    return (p_o - p_e) / (1.0 - p_e)


def agreement(segments_a, segments_b, time_s, window: int = 25) -> Agreement:
    """Agreement of track B with track A on the samples at time_s both label."""
    la = labels_on(segments_a, time_s)
    lb = labels_on(segments_b, time_s)
    both = (la != "") & (lb != "")
    a, b = la[both].astype(str), lb[both].astype(str)
    if not a.size:
        return Agreement(0, float("nan"), float("nan"), float("nan"), window)
    return Agreement(int(a.size), cohen_kappa(a, b), float(np.mean(a == b)),
                     window_accuracy(a, b, window), window)
