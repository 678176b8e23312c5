"""Topic models over document-word counts.

* :mod:`~recognizers.modelling.topics.lda`: :class:`LDA` (kernels in
  :mod:`~recognizers.modelling.topics.lda_core`);
* :mod:`~recognizers.modelling.topics.hdp`: :class:`HDP`, the hierarchical
  Dirichlet process (kernels in :mod:`~recognizers.modelling.topics.hdp_core`);
* :mod:`~recognizers.modelling.topics.slda`: :class:`SupervisedLDA`, and
  :mod:`~recognizers.modelling.topics.shdp`: :class:`SupervisedHDP`;
* :mod:`~recognizers.modelling.topics.perplexity`: held-out perplexity and the
  count checks the models share.
"""
from recognizers.modelling.topics.hdp import HDP
from recognizers.modelling.topics.lda import LDA
from recognizers.modelling.topics.perplexity import heldout_perplexity
from recognizers.modelling.topics.shdp import SupervisedHDP
from recognizers.modelling.topics.slda import SupervisedLDA

__all__ = ["HDP", "LDA", "SupervisedHDP", "SupervisedLDA", "heldout_perplexity"]
