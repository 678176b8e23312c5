"""hmmlearn's array utilities (``hmmlearn.utils``), for users switching by an import."""
from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["fill_covars", "log_normalize", "normalize"]


def normalize(a, axis=None) -> None:
    """Scale ``a`` in place so that it sums to 1 along ``axis`` (zero sums left alone)."""
    a_sum = a.sum(axis)
    if axis and a.ndim > 1:
        a_sum[a_sum == 0] = 1
        shape = list(a.shape)
        shape[axis] = 1
        a_sum.shape = shape
    a /= a_sum


def log_normalize(a, axis=None) -> None:
    """Shift ``a`` in place so that ``sum(exp(a)) == 1`` along ``axis``."""
    if axis is not None and a.shape[axis] == 1:
        a[:] = 0
    else:
        with np.errstate(under="ignore"):
            a -= special.logsumexp(a, axis, keepdims=True)


def fill_covars(covars, covariance_type="full", n_components=1, n_features=1) -> np.ndarray:
    """Full ``(n_components, n_features, n_features)`` matrices from any covariance type."""
    if covariance_type == "full":
        return covars
    if covariance_type == "diag":
        return np.array([np.diag(c) for c in covars])
    if covariance_type == "tied":
        return np.tile(covars, (n_components, 1, 1))
    if covariance_type == "spherical":
        covars = np.ravel(covars)
        return np.eye(n_features)[None, :, :] * covars[:, None, None]
    raise ValueError("covariance_type must be 'spherical', 'tied', 'diag' or 'full', got %r"
                     % (covariance_type,))
