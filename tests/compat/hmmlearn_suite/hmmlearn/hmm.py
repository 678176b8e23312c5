from recognizers.hmm import GMMHMM, CategoricalHMM, GaussianHMM  # noqa: F401
