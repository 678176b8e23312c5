"""Old module paths of the estimator library, kept importable after the layout move.

Issue 33 moved the estimators into one subpackage per family under
:mod:`recognizers.modelling` and renamed the walker recognizer modules.  Code
written against the old paths (``from recognizers.modelling.hdp import HDP``,
``import recognizers.unsupervised``) keeps working: :data:`MOVED` maps each old
dotted path to the module that now holds it, and :class:`MovedModuleFinder`
(put first on :data:`sys.meta_path` by ``recognizers/__init__``) answers an import
of an old path with the new module object itself, so both names share one module
(same classes, same state; ``isinstance`` and model files are unaffected).
Nothing is copied: the old path is an alias, resolved when first imported.

Modules whose contents were split (``recognizers.hmm``, ``recognizers.bmm``,
``recognizers.crf``) stay real re-export modules instead.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["MOVED", "MovedModuleFinder", "install"]

_M = "recognizers.modelling."

#: old dotted module path -> the module that holds its contents now.
MOVED = {
    "recognizers._hmm_base": _M + "hmm.base",
    "recognizers._gaussian_hmm": _M + "hmm.gaussian",
    "recognizers.online_em": _M + "hmm.online_em",
    "recognizers.crf_features": _M + "crf.features",
    "recognizers.unsupervised": "recognizers.latent_recognizers",
    "recognizers.shdp": "recognizers.shdp_recognizer",
    "recognizers.hcrf_dpm": "recognizers.hcrf_dpm_recognizer",
    _M + "gibbs": _M + "hmm.gibbs_core",
    _M + "bmm_core": _M + "hmm.bmm_core",
    _M + "sbhmm": _M + "hmm.sbhmm",
    _M + "hmm_utils": _M + "hmm.utils",
    _M + "crf_core": _M + "crf.linear_chain_core",
    _M + "hcrf": _M + "crf.hcrf",
    _M + "hcrf_core": _M + "crf.hcrf_core",
    _M + "hcrfdpm": _M + "crf.hcrfdpm",
    _M + "hcrfdpm_core": _M + "crf.hcrfdpm_core",
    _M + "lda": _M + "topics.lda",
    _M + "lda_core": _M + "topics.lda_core",
    _M + "hdp": _M + "topics.hdp",
    _M + "hdp_core": _M + "topics.hdp_core",
    _M + "slda": _M + "topics.slda",
    _M + "shdp": _M + "topics.shdp",
    _M + "perplexity": _M + "topics.perplexity",
    _M + "harmonium_core": _M + "harmonium.harmonium_core",
    _M + "lm2gp": _M + "gp.lm2gp",
    _M + "topic_data": _M + "datasets",
    _M + "sequence_data": _M + "datasets",
}


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import an old path of :data:`MOVED` as the module now holding it."""

    def __init__(self, moved: dict[str, str]):
        self.moved = dict(moved)
        self._specs: dict[str, object] = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.moved:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(self.moved[spec.name])
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        # The import system has just set the alias's spec on the shared module
        # object; give it back its own (reload, pickling of classes and numba's
        # cache locate a module by its spec).
        name = module.__spec__.name
        module.__spec__ = self._specs.pop(name)


def install() -> None:
    """Put one :class:`MovedModuleFinder` first on :data:`sys.meta_path` (idempotent).

    First, because it answers only the old paths of :data:`MOVED` and must win over
    finders that would still find a stale copy there (an editable install of an
    older checkout).
    """
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder(MOVED))
