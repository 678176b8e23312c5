"""The linear-chain CRF and its walker recognizer, under their historical path.

:class:`LinearChainCRF` lives in :mod:`recognizers.modelling.crf.linear_chain`,
the walker recognizer ``"crf"`` in :mod:`recognizers.crf_recognizer`.  This module
only re-exports them.
"""
from recognizers.crf_recognizer import CRFRecognizer
from recognizers.modelling.crf.linear_chain import LinearChainCRF

__all__ = ["LinearChainCRF", "CRFRecognizer"]
