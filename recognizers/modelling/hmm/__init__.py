"""Hidden Markov models: hmmlearn-compatible estimators and their cores.

* :mod:`~recognizers.modelling.hmm.base`: the EM machinery every HMM below
  shares (hmmlearn's ``fit``/``score``/``predict``/``sample``);
* :mod:`~recognizers.modelling.hmm.gaussian`: :class:`GaussianHMM`, :class:`GMMHMM`;
* :mod:`~recognizers.modelling.hmm.categorical`: :class:`MultiCategoricalHMM`
  (several discrete sensors) and :class:`CategoricalHMM` (one), learned by
  counting or by EM;
* :mod:`~recognizers.modelling.hmm.gibbs`: :class:`CollapsedGibbsHMM`
  (sampler in :mod:`~recognizers.modelling.hmm.gibbs_core`);
* :mod:`~recognizers.modelling.hmm.bmm`: :class:`BMMHMM`, online Bayesian
  moment matching (updates in :mod:`~recognizers.modelling.hmm.bmm_core`), and
  :mod:`~recognizers.modelling.hmm.online_em`: :class:`OnlineEMHMM`, its
  online EM baseline, both on :mod:`~recognizers.modelling.hmm.multisensor`
  (their shared base: input checks, streams, pilot mixture, inference);
* :mod:`~recognizers.modelling.hmm.sbhmm`: :class:`StickBreakingHMM`, a
  variational HMM that chooses its number of states (sticky prior, merge and delete
  moves; its VB core, shared with LM2GP, in :mod:`~recognizers.modelling.hmm.sbhmm_core`);
* :mod:`~recognizers.modelling.hmm.utils`: hmmlearn's small array helpers.
"""
from recognizers.modelling.em import ConvergenceWarning
from recognizers.modelling.hmm.bmm import BMMHMM
from recognizers.modelling.hmm.categorical import (
    CategoricalEmissions,
    CategoricalHMM,
    CategoricalStats,
    MultiCategoricalHMM,
    SupervisedCounts,
    count_supervised,
    normalize_counts,
    persistence_transmat,
)
from recognizers.modelling.hmm.gaussian import GMMHMM, GaussianHMM
from recognizers.modelling.hmm.gibbs import CollapsedGibbsHMM
from recognizers.modelling.hmm.online_em import OnlineEMHMM
from recognizers.modelling.hmm.sbhmm import StickBreakingHMM

__all__ = [
    "BMMHMM",
    "CategoricalEmissions",
    "CategoricalHMM",
    "CategoricalStats",
    "CollapsedGibbsHMM",
    "ConvergenceWarning",
    "GMMHMM",
    "GaussianHMM",
    "MultiCategoricalHMM",
    "OnlineEMHMM",
    "StickBreakingHMM",
    "SupervisedCounts",
    "count_supervised",
    "normalize_counts",
    "persistence_transmat",
]
