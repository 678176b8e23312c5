from recognizers.modelling.hmm_utils import fill_covars, log_normalize, normalize  # noqa: F401
