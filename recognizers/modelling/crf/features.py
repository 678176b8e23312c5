"""Feature functions of the linear-chain CRF, learned from labelled training data.

:func:`fit_feature_spec` chooses everything a :class:`~recognizers.modelling.crf.linear_chain_core.FeatureSpec`
holds: the standardisation of the raw sensors and the thesis's threshold
features (6.5): one threshold ``tau_ij^s`` per pair of activities ``(i, j)`` and
sensor ``s``.  The thesis picked them by eye; here they are chosen from the
training data by one of

``"ks"``      the Kolmogorov-Smirnov split: the value where the two classes'
              empirical distribution functions differ most, i.e. the best
              decision stump between ``i`` and ``j`` on sensor ``s`` by balanced
              accuracy (searched over 129 quantiles of the sensor);
``"median"``  the midpoint between the two classes' medians.

A pair the sensor cannot separate still gets a threshold; training gives its
weights little mass, as in the thesis.  NaN readings are ignored when fitting.
"""
from __future__ import annotations

import warnings

import numpy as np

from recognizers.modelling.crf.linear_chain_core import FeatureSpec

__all__ = ["THRESHOLD_METHODS", "pair_thresholds", "fit_feature_spec"]

THRESHOLD_METHODS = ("ks", "median")
_N_CANDIDATES = 129


def pair_thresholds(values, labels, n_classes: int, method: str = "ks") -> np.ndarray:
    """Thresholds of one sensor for every pair of classes ``i < j``, sorted.

    ``values`` (T,) float, ``labels`` (T,) ints in ``0..n_classes-1``.  Pairs
    where a class has no reading are skipped.
    """
    if method not in THRESHOLD_METHODS:
        raise ValueError("threshold method must be one of %s, got %r"
                         % (THRESHOLD_METHODS, method))
    ok = ~np.isnan(values)
    v, lab = values[ok], labels[ok]
    per_class = [np.sort(v[lab == k]) for k in range(n_classes)]
    present = [k for k in range(n_classes) if per_class[k].size]
    if len(present) < 2:
        return np.empty(0)
    if method == "median":
        med = {k: float(np.median(per_class[k])) for k in present}
        out = [0.5 * (med[i] + med[j]) for a, i in enumerate(present) for j in present[a + 1:]]
        return np.sort(np.asarray(out))
    cand = np.unique(np.quantile(v, np.linspace(0.0, 1.0, _N_CANDIDATES)))
    # cdf[k, c] = fraction of class k strictly below candidate c
    cdf = np.stack([np.searchsorted(per_class[k], cand, side="left") / per_class[k].size
                    for k in present])
    out = []
    for a in range(len(present)):
        for b in range(a + 1, len(present)):
            out.append(cand[np.argmax(np.abs(cdf[a] - cdf[b]))])
    return np.sort(np.asarray(out))


def fit_feature_spec(Xs, ys, n_classes: int, *, thresholds: str | None = "ks",
                     raw: bool = True, window: int = 0) -> FeatureSpec:
    """A :class:`FeatureSpec` learned from sequences ``Xs`` and int labels ``ys``.

    Raw sensors are standardised by their training mean and standard deviation
    (scale 1 for a constant or all-missing sensor).  ``thresholds=None`` gives
    no threshold features.
    """
    X = np.concatenate(Xs)
    y = np.concatenate(ys)
    F = X.shape[1]
    with warnings.catch_warnings():  # an all-NaN column is handled below
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(X, axis=0) if X.size else np.zeros(F)
        std = np.nanstd(X, axis=0) if X.size else np.ones(F)
    mean = np.where(np.isfinite(mean), mean, 0.0)
    scale = np.where(np.isfinite(std) & (std > 0), std, 1.0)
    cuts, offsets = [], [0]
    for s in range(F):
        c = (pair_thresholds(X[:, s], y, n_classes, thresholds) if thresholds is not None
             else np.empty(0))
        cuts.append(c)
        offsets.append(offsets[-1] + c.size)
    return FeatureSpec(mean, scale, raw, window, np.concatenate(cuts) if cuts else np.empty(0),
                       np.asarray(offsets))

