"""Old import paths keep working after the estimator library moved (issue 33).

Every old path of ``recognizers._moved_modules.MOVED`` imports as the very module that
now holds its contents (one module object, so classes, ``isinstance`` and numba
kernels are shared), and the re-export modules ``recognizers.hmm``/``bmm``/``crf``
still offer what they used to.
"""
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recognizers._moved_modules import MOVED

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_path_is_the_new_module(old):
    new = importlib.import_module(MOVED[old])
    assert importlib.import_module(old) is new
    assert sys.modules[old] is new
    # the module keeps its own identity: the alias did not overwrite its spec
    assert new.__spec__.name == MOVED[old] == new.__name__
    parent, _, child = old.rpartition(".")
    assert getattr(importlib.import_module(parent), child) is new


def test_old_paths_work_in_a_fresh_interpreter_in_any_order():
    # "from old.path import X" as the first import of a process, before anything
    # else of the package was loaded.
    code = ("from recognizers.modelling.hdp_core import doc_estep\n"
            "from recognizers.modelling.hdp import HDP\n"
            "from recognizers.unsupervised import BMMRecognizer\n"
            "import recognizers.modelling.topics.hdp as new\n"
            "assert HDP is new.HDP and new.__spec__.name == 'recognizers.modelling.topics.hdp'\n"
            "print('ok')")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


def test_every_moved_target_exists_and_no_old_file_shadows_it():
    for old, new in MOVED.items():
        assert (ROOT / (new.replace(".", "/") + ".py")).is_file(), new
        assert not (ROOT / (old.replace(".", "/") + ".py")).exists(), old


def test_reexport_modules_keep_their_names():
    from recognizers import bmm, crf, hmm
    from recognizers.crf_recognizer import CRFRecognizer
    from recognizers.hmm_recognizer import HMMRecognizer
    from recognizers.modelling import datasets
    from recognizers.modelling import hmm as hmm_family
    from recognizers.modelling.crf import LinearChainCRF
    from recognizers.modelling.hmm.bmm import BMMHMM

    for name in hmm.__all__:
        assert getattr(hmm, name) is getattr(hmm_family, name, None) or name == "HMMRecognizer"
    assert hmm.HMMRecognizer is HMMRecognizer
    assert hmm.GaussianHMM is hmm_family.GaussianHMM
    assert (crf.LinearChainCRF, crf.CRFRecognizer) == (LinearChainCRF, CRFRecognizer)
    assert bmm.BMMHMM is BMMHMM
    assert (bmm.sample_hmm, bmm.make_separable_hmm) == (datasets.sample_hmm,
                                                        datasets.make_separable_hmm)
    for module in (hmm, crf, bmm):
        assert all(hasattr(module, name) for name in module.__all__)
