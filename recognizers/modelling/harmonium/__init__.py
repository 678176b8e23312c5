"""Harmoniums (two-layer undirected models): :class:`Harmonium` and
:class:`BayesianHarmonium` in :mod:`~recognizers.modelling.harmonium.harmonium`,
kernels in :mod:`~recognizers.modelling.harmonium.harmonium_core`."""
from recognizers.modelling.harmonium.harmonium import BayesianHarmonium, Harmonium

__all__ = ["BayesianHarmonium", "Harmonium"]
