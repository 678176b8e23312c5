from recognizers.modelling.em import ConvergenceMonitor  # noqa: F401

DECODER_ALGORITHMS = frozenset(("viterbi", "map"))
