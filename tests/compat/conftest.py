# The vendored hmmlearn suite runs in its own subprocess (test_hmmlearn_suite.py).
collect_ignore = ["hmmlearn_suite"]
