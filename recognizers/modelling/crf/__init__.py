"""Conditional random fields.

* :mod:`~recognizers.modelling.crf.linear_chain`: :class:`LinearChainCRF`,
  sklearn-crfsuite's interface over float features (features in
  :mod:`~recognizers.modelling.crf.features`, kernels in
  :mod:`~recognizers.modelling.crf.linear_chain_core`);
* :mod:`~recognizers.modelling.crf.hcrf`: :class:`HCRFClassifier`, the hidden
  CRF sequence classifier (kernels in :mod:`~recognizers.modelling.crf.hcrf_core`);
* :mod:`~recognizers.modelling.crf.hcrfdpm`: :class:`HCRFDPM`, the HCRF with a
  Dirichlet-process mixture of hidden states (kernels in
  :mod:`~recognizers.modelling.crf.hcrfdpm_core`).
"""
from recognizers.modelling.crf.hcrf import HCRFClassifier
from recognizers.modelling.crf.hcrfdpm import HCRFDPM, encode_signed
from recognizers.modelling.crf.linear_chain import LinearChainCRF

__all__ = ["HCRFClassifier", "HCRFDPM", "LinearChainCRF", "encode_signed"]
