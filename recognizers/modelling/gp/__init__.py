"""Gaussian-process latent models: :class:`LM2GP` in :mod:`~recognizers.modelling.gp.lm2gp`."""
from recognizers.modelling.gp.lm2gp import LM2GP

__all__ = ["LM2GP"]
