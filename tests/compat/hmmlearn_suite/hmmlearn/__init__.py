"""A stand-in for the `hmmlearn` package whose classes are WalkerLab's.

hmmlearn 0.3.3's own test files (in ``tests/``, vendored unchanged under its BSD licence,
see tests/COPYING) import ``hmmlearn.hmm``, ``hmmlearn.base`` and ``hmmlearn.utils``;
this package answers those imports with WalkerLab's implementations, which is what a
user migrating by changing an import gets.
"""
