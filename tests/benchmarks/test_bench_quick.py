"""Every script in benchmarks/ runs with --quick, so a benchmark that breaks fails CI.

Discovered by glob: benchmarks added on other branches are picked up after merge.
``run_all.py`` only runs the others (its --quick passes --quick on), so it is not run
here a second time.
"""
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHES = sorted(p for p in (ROOT / "benchmarks").glob("*.py")
                 if p.name not in ("run_all.py", "__init__.py"))

# Benchmarks that have no --quick mode yet (issue 22, item 6); remove a name once it has one.
NO_QUICK_YET: set[str] = set()


def test_every_script_has_a_quick_mode():
    for script in BENCHES + [ROOT / "benchmarks" / "run_all.py"]:
        assert "--quick" in script.read_text(), "%s has no --quick" % script.name


# A hang guard, not a speed assert: a quick mode is stopped only after this long without
# printing a line (output unbuffered). Their speed is measured in docs/benchmarks.md.
SILENT_LIMIT_S = 600.0


def run_until_silent(argv, env, silent_limit_s=SILENT_LIMIT_S):
    """Run argv; return (exit status, output), or (None, output) if it printed nothing
    for silent_limit_s and was killed as hung."""
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    line_came = threading.Event()
    output_ended = threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line)
            line_came.set()
        output_ended.set()  # before the last wake-up, so the loop below sees it
        line_came.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    # (Testing reader.is_alive() here raced: the reader could still be alive just after
    # its last set(), and the loop then waited out the whole limit for nothing.)
    while not output_ended.is_set():
        if not line_came.wait(silent_limit_s):
            proc.kill()
            proc.wait()
            return None, "".join(lines)
        line_came.clear()
    return proc.wait(), "".join(lines)


@pytest.mark.slow
@pytest.mark.parametrize("script", BENCHES, ids=[p.stem for p in BENCHES])
def test_benchmark_quick_mode_runs(script):
    if script.name in NO_QUICK_YET:
        pytest.skip("%s has no --quick mode yet" % script.name)
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen",
               PYTHONUNBUFFERED="1", NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    status, out = run_until_silent([sys.executable, str(script), "--quick"], env)
    assert status is not None, "hung: no output for %.0f s\n%s" % (SILENT_LIMIT_S,
                                                                    out[-3000:])
    if status != 0 and "pip install" in out and "needs" in out:
        pytest.skip(out.strip().splitlines()[-1])  # optional peer library not installed
    assert status == 0, out[-3000:]


def test_the_hang_guard_stops_a_silent_process_and_keeps_its_output():
    code = "import time; print('started', flush=True); time.sleep(120)"
    status, out = run_until_silent([sys.executable, "-c", code], dict(os.environ),
                                   silent_limit_s=5.0)
    assert status is None and out == "started\n"
    # A process that ends just after its last line is reported at once, every time
    # (an earlier loop could miss the end and wait out the whole limit, then call it hung).
    for _ in range(20):
        status, out = run_until_silent([sys.executable, "-I", "-S", "-c", "print('done')"],
                                       dict(os.environ), silent_limit_s=300.0)
        assert (status, out) == (0, "done\n")
