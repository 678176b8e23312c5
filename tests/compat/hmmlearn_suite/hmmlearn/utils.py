from recognizers.modelling.hmm.utils import fill_covars, log_normalize, normalize  # noqa: F401
