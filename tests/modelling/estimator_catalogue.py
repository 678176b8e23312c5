"""Every estimator of the library, for the tests that run over all of them.

test_sklearn_checks.py (scikit-learn's checks) and test_generic_probes.py (the
probes of issue 33 on each model's own data) take the classes as ``library.X`` and
check with :func:`exported_estimators` that they cover everything
``recognizers.modelling`` exports, so a new estimator cannot go unchecked.
"""
from __future__ import annotations

import recognizers.modelling as library

__all__ = ["library", "exported_estimators"]


def exported_estimators() -> set[type]:
    """The estimator classes ``recognizers.modelling`` exports (anything with
    ``fit`` and ``get_params``)."""
    return {obj for obj in vars(library).values()
            if isinstance(obj, type) and hasattr(obj, "fit") and hasattr(obj, "get_params")}
