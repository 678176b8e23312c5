"""Fuzzing that stays (issue 35): the firmware and every file loader against damage.

Run: .venv/bin/python benchmarks/fuzz.py [--quick] [--ops 100000] [--files 5000] [--seed 1]
     [--only files --loaders recording,recover --minutes 60 --start N]
     [--report-rss MB] [--probe-cpu S]

1. Firmware: device/sim/firmware_fuzz.py's seeded operations (random bytes, random
   commands, uploads of damaged models, samples, reboots) against one WalkerFirmware
   and its flash, under CPython and under MicroPython's unix port in a 192 KB heap
   (the RP2040's order of size). A crash is an exception escaping the firmware (the
   board would reset); a violation is a model the firmware refuses found in flash.
2. Files: for each loader (model header, whole model, calibration, recording, recover)
   --files damaged copies of valid files (byte edits, truncation, overwritten blocks,
   a field replaced by hostile JSON: deep nesting, 400-digit integers, NaN, wrong
   types). Each loader must read the file or refuse it with one line naming it; any
   other exception, a worker killed by a signal, or a file it spends HANG_CPU_S of
   CPU time on is a crash. The recording loader opens files as files from outside are opened
   (open_recording(..., untrusted=True): the structure probed in a child first).

Prints operations, crashes and the worst memory: on MicroPython the least free heap
(after a collection) of the 192 KB; under CPython the Python heap's peak (tracemalloc);
for files, how far the loader's worker process grew past its start-up size (its own
peak RSS, VmHWM, so C allocations by HDF5 and zlib count too; child processes such as
the structure probe's do not). --report-rss MB lists the files that raised the
worker's peak by more than MB (the peak is reset before each file). Goal: 0 crashes
in 100,000 firmware operations and in 5,000 files per loader.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "hostile"))
FIRMWARE_FUZZ = ROOT / "device" / "sim" / "firmware_fuzz.py"
LOADERS = ("model-header", "model", "calibration", "recording", "recover")


# ---- firmware ------------------------------------------------------------------------
def run_child(cmd) -> tuple[str, float]:
    """(stdout, seconds) of a child process; SystemExit with its output if it fails."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if proc.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (" ".join(cmd),
                                              (proc.stdout + proc.stderr)[-3000:]))
    return proc.stdout, time.perf_counter() - t0


def fuzz_firmware(ops: int, seed: int, work: pathlib.Path, trace: bool) -> list[dict]:
    from device.sim.firmware_fuzz import make_model

    rows = []
    micropython = shutil.which("micropython") or str(
        pathlib.Path(sys.executable).with_name("micropython"))
    models = {"3 KB model": make_model(3, 5), "21 KB model": make_model(8, 40)}
    for label, model in models.items():
        path = work / ("%s.wlm" % label.split()[0])
        path.write_bytes(model)
        runs = [("CPython", [sys.executable, str(FIRMWARE_FUZZ)], ["trace"] if trace else [])]
        if pathlib.Path(micropython).exists():
            runs.append(("MicroPython 192K", [micropython, "-X", "heapsize=192K",
                                              str(FIRMWARE_FUZZ)], []))
        for interp, head, tail in runs:
            flash = work / ("flash-%s-%s" % (label.split()[0], interp.split()[0]))
            flash.mkdir()
            out, secs = run_child(head + [str(ROOT), str(path), str(seed), str(ops),
                                          str(flash)] + tail)
            lines = out.splitlines()
            stats = dict(kv.split("=") for kv in lines[0].split())
            rows.append({"interpreter": interp, "model": "%s (%d B)" % (label, len(model)),
                         "stats": stats, "seconds": secs,
                         "errors": [x for x in lines[1:] if x.startswith("ERROR")]})
    return rows


# ---- files -----------------------------------------------------------------------------
def _hostile_json(rng, depth=0):
    """A JSON text that loaders have tripped on: nesting, huge numbers, NaN, types."""
    kind = rng.integers(0, 10)
    if kind == 0:
        n = int(rng.integers(100, 20000))
        return "[" * n + "]" * n
    if kind == 1:
        return "1" + "0" * int(rng.integers(300, 5000))
    if kind == 2:
        return rng.choice(["NaN", "Infinity", "-Infinity", "1e999", "-1e999"])
    if kind == 3:
        return rng.choice(["null", "true", "false", "0", "-1", "[]", "{}", '""'])
    if kind == 4:
        return json.dumps("x" * int(rng.integers(0, 50)) + "\u0000\ud800"[:int(rng.integers(0, 3))])
    if kind == 5 and depth < 3:
        return "[" + ", ".join(_hostile_json(rng, depth + 1)
                               for _ in range(int(rng.integers(0, 5)))) + "]"
    if kind == 6 and depth < 3:
        return "{" + ", ".join('"k%d": %s' % (i, _hostile_json(rng, depth + 1))
                               for i in range(int(rng.integers(0, 4)))) + "}"
    return repr(float(rng.normal() * 10.0 ** int(rng.integers(-5, 30))))


def _json_field(text: str, rng) -> str:
    """The JSON object in text with one field (or the whole) replaced."""
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if not isinstance(data, dict) or rng.random() < 0.1:
        return _hostile_json(rng)
    field = str(rng.choice(sorted(data) + ["unknown_field"]))
    data[field] = "@@HOSTILE@@"
    return json.dumps(data).replace('"@@HOSTILE@@"', _hostile_json(rng))


def _bytes(blob: bytes, rng, head: int = 0) -> bytes:
    """Byte edits, a cut, an overwritten block or appended garbage; `head` bytes at the
    front (where formats keep their structure) get half of the edits."""
    data = bytearray(blob)
    kind = rng.integers(0, 10)
    if kind < 6:
        for _ in range(int(rng.integers(1, 17))):
            span = head if head and rng.random() < 0.5 else len(data)
            data[int(rng.integers(0, min(span, len(data))))] = int(rng.integers(0, 256))
    elif kind < 8:
        data = data[:int(rng.integers(1, len(data)))]
    elif kind < 9:
        start = int(rng.integers(0, len(data)))
        n = int(rng.integers(1, 4096))
        data[start:start + n] = bytes([int(rng.integers(0, 256))]) * min(n, len(data) - start)
    else:
        data += rng.bytes(int(rng.integers(1, 5000)))
    return bytes(data)


def make_bases(work: pathlib.Path) -> dict[str, list[bytes]]:
    """Valid files to damage: a model, a calibration, a clean recording and one a
    crashed writer left (flushed, never closed)."""
    import numpy as np

    import recognizers.hmm  # noqa: F401 - registers "hmm"
    from calibration import WalkerCalibration
    from host.recording import RecordingWriter
    from host.simulate import simulate_to_files
    from recognizers.base import RECOGNIZERS

    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    RECOGNIZERS["hmm"]().fit(X, np.repeat(np.array(["W", "ST"]), 200)).save(
        work / "model.npz")
    WalkerCalibration(walker_id="WL-1").save(work / "cal.json")
    clean = simulate_to_files("free", 1, 3, work / "rec", duration_s=1, progress=False)[0]
    from host.recording import open_recording

    raw = open_recording(clean).raw_bytes()
    w = RecordingWriter(work / "crashed.h5")
    for i in range(0, len(raw), 512):
        w.write_serial(raw[i:i + 512], 1.7e9 + i / 1e4)
    w.flush()
    w.abort()
    shutil.copy(clean, work / "clean.h5")
    return read_bases(work)


def read_bases(work: pathlib.Path) -> dict[str, list[bytes]]:
    """The files make_bases wrote (workers read them rather than make them again)."""
    return {"model": [(work / "model.npz").read_bytes()],
            "calibration": [(work / "cal.json").read_bytes()],
            "recording": [(work / "clean.h5").read_bytes(),
                          (work / "crashed.h5").read_bytes()]}


def mutate(loader: str, bases: dict, rng) -> tuple[bytes, str]:
    from corpus import with_model_header  # tests/hostile: the hostile-file corpus

    if loader.startswith("model"):
        blob = bases["model"][0]
        if rng.random() < 0.5:
            return with_model_header(blob, lambda t: _json_field(t, rng)), ".npz"
        return _bytes(blob, rng, head=2048), ".npz"
    if loader == "calibration":
        blob = bases["calibration"][0]
        if rng.random() < 0.6:
            return _json_field(blob.decode(), rng).encode("utf-8", "surrogatepass"), ".json"
        return _bytes(blob, rng), ".json"
    blob = bases["recording"][int(rng.integers(0, 2))]
    return _bytes(blob, rng, head=8192), ".h5"


def reader_for(loader: str, work: pathlib.Path):
    from calibration import WalkerCalibration
    from host.recording import open_recording, recover
    from recognizers.base import load_recognizer, read_model_header

    def recover_to(path):
        out = work / "recovered.h5"
        if out.exists():
            out.unlink()
        recover(path, out)

    def open_from_outside(path):  # as `info`, `replay FILE` and the workbench open it
        return open_recording(path, untrusted=True)

    return {"model-header": read_model_header, "model": load_recognizer,
            "calibration": WalkerCalibration.load, "recording": open_from_outside,
            "recover": recover_to}[loader]


def _own_peak_kb() -> int:
    """This process's own peak RSS (VmHWM): ru_maxrss would begin at the parent's peak,
    which Linux keeps across exec."""
    with open("/proc/self/status") as fh:
        return int(next(line for line in fh if line.startswith("VmHWM:")).split()[1])


def _reset_own_peak() -> None:
    """Start VmHWM again from the current RSS (Linux: "5" to clear_refs)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def worker(loader: str, seed: int, start: int, stop: int, work: pathlib.Path,
           per_file: bool = False) -> None:
    """Damaged files start..stop-1 through one loader; a line per file:
    'i ok|refused|unclear|crash [message]', then 'done'. ``per_file``: before each
    outcome, 'i peak KB', how far the worker's peak RSS rose above its RSS at the start
    of that file (the peak is reset before each file)."""
    import warnings

    import numpy as np

    from calibration.walker_calibration import CalibrationError
    from host.errors import UserError
    from host.recording.reader import RecordingFormatError
    from recognizers.base import ModelFormatError

    warnings.simplefilter("ignore")
    refusals = (RecordingFormatError, ModelFormatError, CalibrationError, UserError)
    bases = read_bases(work.parent / "bases")
    read = reader_for(loader, work)
    peak_kb = _own_peak_kb()
    print("rss", peak_kb, flush=True)
    for i in range(start, stop):
        rng = np.random.default_rng([seed, LOADERS.index(loader), i])
        blob, ext = mutate(loader, bases, rng)
        path = work / ("f%d%s" % (i, ext))
        path.write_bytes(blob)
        print(i, "start", flush=True)
        if per_file:
            _reset_own_peak()
            with open("/proc/self/status") as fh:
                rss_kb = int(next(x for x in fh if x.startswith("VmRSS:")).split()[1])
        try:
            read(path)
            outcome, note = "ok", ""
        except refusals as exc:
            one_line = "\n" not in str(exc) and path.name in str(exc)
            outcome, note = ("refused" if one_line else "unclear"), str(exc)[:200]
        except Exception as exc:  # noqa: BLE001 - what the fuzzing looks for
            outcome, note = "crash", "%s: %s" % (type(exc).__name__, str(exc)[:200])
        path.unlink()
        if per_file:
            file_peak_kb = _own_peak_kb()
            peak_kb = max(peak_kb, file_peak_kb)
            print(i, "peak", file_peak_kb - rss_kb, flush=True)
        note = note.replace("\n", " | ").encode("ascii", "backslashreplace").decode()
        print(i, outcome, note, flush=True)
    print("rss", max(peak_kb, _own_peak_kb()), flush=True)  # the files' share: the rise
    print("done", flush=True)


#: CPU seconds a worker may spend on one file before it counts as hung (and is killed):
#: CPU, not wall-clock time, so that a starved worker on a loaded machine is not hung.
HANG_CPU_S = 120.0


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process (Linux /proc)."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _lines(proc, deadline: float | None = None):
    """proc's stdout lines; "hung" after HANG_CPU_S of its CPU time without a line,
    "deadline" once time.monotonic() passes ``deadline`` (then stop)."""
    import select

    fd, buffer = proc.stdout.fileno(), b""
    cpu_at_line = _cpu_seconds(proc.pid)
    while True:
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            cpu_at_line = _cpu_seconds(proc.pid)
            yield line.decode("utf-8", "replace")
        if deadline is not None and time.monotonic() > deadline:
            yield "deadline"
            return
        ready, _, _ = select.select([fd], [], [], 5.0)
        if not ready:
            if _cpu_seconds(proc.pid) - cpu_at_line > HANG_CPU_S:
                yield "hung"
                return
            continue
        data = os.read(fd, 1 << 16)
        if not data:
            return
        buffer += data


def fuzz_files(loader: str, n: int, seed: int, work: pathlib.Path,
               minutes: float | None = None, start: int = 0,
               report_rss_mb: float | None = None, probe_cpu_s: int | None = None) -> dict:
    """Run the worker on files start..n-1 until they are done (or ``minutes`` have
    passed: "files" is then the number done), restarting it after a fatal signal or
    a hang. Each file is made from (seed, loader, its number) alone, so runs over
    consecutive ranges add up to one run over the whole range.

    ``report_rss_mb``: measure the worker's peak per file and list ("big") the files
    that raised it by more than that. ``probe_cpu_s``: the structure probe's CPU cap
    per file in the worker (a search for such files need not wait a minute on each
    file that keeps libhdf5 looping)."""
    counts = dict.fromkeys(("ok", "refused", "unclear", "crash"), 0)
    first, t0, growth, begin = [], time.perf_counter(), 0, start
    deadline = None if minutes is None else time.monotonic() + 60 * minutes
    rss: list[int] = []
    big: list[tuple[int, int]] = []
    extra = [] if report_rss_mb is None else ["--report-rss", str(report_rss_mb)]
    extra += [] if probe_cpu_s is None else ["--probe-cpu", str(probe_cpu_s)]
    while start < n:
        wdir = pathlib.Path(tempfile.mkdtemp(dir=work))
        errfile = open(wdir / "stderr.txt", "w+")  # HDF5 prints much there: never a pipe
        proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", loader, str(seed), str(start), str(n),
             str(wdir)] + extra, stdout=subprocess.PIPE, stderr=errfile,
            env=dict(os.environ, PYTHONPATH=str(ROOT)))
        current, hung, stopped = start, False, False
        for line in _lines(proc, deadline):
            if line in ("hung", "deadline"):  # a file that hangs the loader: a crash
                proc.kill()
                hung, stopped = line == "hung", line == "deadline"
                break
            parts = line.rstrip("\n").split(" ", 2)
            if parts[0] == "done":
                break
            if parts[0] == "rss":  # after start-up, then at the end: the files' share
                rss.append(int(parts[1]))
                continue
            current = int(parts[0])
            if parts[1] == "start":
                continue
            if parts[1] == "peak":
                if int(parts[2]) > 1024 * report_rss_mb:
                    big.append((current, int(parts[2])))
                    print("file %d: the worker's peak rose by %.0f MB" % (
                        current, int(parts[2]) / 1024), file=sys.stderr, flush=True)
                continue
            counts[parts[1]] += 1
            if parts[1] in ("crash", "unclear") and len(first) < 5:
                first.append("file %d: %s" % (current, parts[2] if len(parts) > 2 else ""))
            current += 1
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        errfile.seek(0)
        err = errfile.read()
        errfile.close()
        if len(rss) >= 2:
            growth = max(growth, rss[-1] - rss[-2])
        rss.clear()
        if stopped:  # out of time: file `current` was not finished, not a crash
            shutil.rmtree(wdir, ignore_errors=True)
            n = current
            break
        if status != 0:  # killed (a segfault in a C library) or an error outside a file
            counts["crash"] += 1
            first.append("file %d: %s" % (current, "hung: %.0f s of CPU on it, killed"
                                          % HANG_CPU_S if hung else "worker exit status %d %s"
                                          % (status, err.strip()[-300:])))
            current += 1
        shutil.rmtree(wdir, ignore_errors=True)
        start = current
    return {"loader": loader, "files": n - begin, "range": "%d-%d" % (begin, n - 1),
            **counts, "growth_kb": growth, "big": big,
            "seconds": time.perf_counter() - t0, "first": first}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="500 firmware operations and 4 files per loader (CI)")
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--files", type=int, default=5_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--trace-python", action="store_true",
                    help="CPython firmware runs: the Python heap's peak (tracemalloc, "
                    "several times slower; always on with --quick)")
    ap.add_argument("--only", choices=("firmware", "files"), default=None)
    ap.add_argument("--loaders", default=",".join(LOADERS),
                    help="comma-separated subset of: " + ", ".join(LOADERS))
    ap.add_argument("--minutes", type=float, default=None,
                    help="stop each file loader after this long and report the files "
                    "done (a shared machine)")
    ap.add_argument("--start", type=int, default=0,
                    help="first file number: resume a run that --minutes stopped, from "
                    "the first file it did not finish (files --start..--files-1)")
    ap.add_argument("--report-rss", type=float, default=None, metavar="MB",
                    help="measure the worker's peak RSS per file and list the files "
                    "that raised it by more than MB")
    ap.add_argument("--probe-cpu", type=int, default=None, metavar="S",
                    help="the structure probe's CPU seconds per file (default: "
                    "structure_probe.PROBE_CPU_S; a smaller cap for searches only: a "
                    "slow file may then be refused)")
    ap.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        loader, seed, start, stop, work = args.worker
        if args.probe_cpu is not None:
            from host.recording import structure_probe

            structure_probe.PROBE_CPU_S = args.probe_cpu
        worker(loader, int(seed), int(start), int(stop), pathlib.Path(work),
               per_file=args.report_rss is not None)
        return 0
    ops, files = (500, 4) if args.quick else (args.ops, args.files)
    first_file = 0 if args.quick else args.start
    print("fuzz.py: seed %d, %d firmware operations per run, files %d-%d per loader"
          % (args.seed, ops, first_file, files - 1))
    print("Python %s, %s, %d CPUs, load %.1f" % (platform.python_version(),
                                                 platform.machine(), os.cpu_count(),
                                                 os.getloadavg()[0]))
    crashes = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        if args.only in (None, "firmware"):
            print("\n| firmware | model | operations | crashes | violations | commits taken "
                  "| NAKs | worst memory | time |")
            print("|---|---|---:|---:|---:|---:|---:|---|---:|")
            for r in fuzz_firmware(ops, args.seed, work, args.quick or args.trace_python):
                s = r["stats"]
                crashes += int(s["crashes"]) + int(s["violations"])
                if s["min_free"] != "None":
                    memory = "heap: %s of %s B free at worst" % (s["min_free"], s["heap"])
                elif s["peak"] != "None":
                    memory = "Python heap peak %.0f KB" % (int(s["peak"]) / 1e3)
                else:
                    memory = "not traced (--trace-python)"
                print("| %s | %s | %s | %s | %s | %s | %s | %s | %.0f s |" % (
                    r["interpreter"], r["model"], s["ops"], s["crashes"], s["violations"],
                    s["commits_ok"], s["naks"], memory, r["seconds"]))
                for e in r["errors"]:
                    print("    " + e)
        if args.only in (None, "files"):
            print("\n| loader | files | read | refused (one line) | unclear message | "
                  "crashes | peak RSS growth | time |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|")
            make_bases(work / "bases")
            for loader in args.loaders.split(","):
                r = fuzz_files(loader, files, args.seed, work, args.minutes, first_file,
                               args.report_rss, args.probe_cpu)
                crashes += r["crash"]
                print("| %s | %d (%s) | %d | %d | %d | %d | %.0f MB | %.0f s |" % (
                    loader, r["files"], r["range"], r["ok"], r["refused"], r["unclear"], r["crash"],
                    r["growth_kb"] / 1024, r["seconds"]))
                for e in r["first"]:
                    print("    " + e)
                for i, kb in r["big"]:
                    print("    file %d: the worker's peak rose by %.0f MB" % (i, kb / 1024))
    print("\n%s: %d crashes" % ("FAIL" if crashes else "OK", crashes))
    return 1 if crashes else 0


if __name__ == "__main__":
    raise SystemExit(main())
