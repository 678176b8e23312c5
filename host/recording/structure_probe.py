"""Read an untrusted recording's HDF5 structure in a child process under a memory limit.

One damaged size field in an HDF5 file (the length of a variable-length string in a
table, a global heap collection's size) makes libhdf5 allocate whatever it says, 1.3 GB
in a case the fuzzer found, before it refuses the file, and a damaged global heap can
keep it looping for minutes; inside a Python process neither can be stopped or
bounded. So, for files that come from outside, a child process that caps its own
address space (``RLIMIT_AS``) and CPU time per file (``RLIMIT_CPU``) first walks
every group, attribute, dataset header and variable-length string of the file, the
parts whose size the file itself declares. The numeric data (samples, the raw byte
log) is not read: its size is checked against the file size by
``reader.ReadBudget`` before the parent reads it.

The parent learns which objects could not be read within the limit (or at which one
the library crashed or hung) and decides: ``open_recording(..., untrusted=True)``
refuses the file in one line; ``recover`` leaves those objects out and salvages the
rest. Costs one Python start-up with numpy and h5py once per process, then about as
much as opening the file (benchmarks/bench_structure_probe.py).

Run as a script (``python structure_probe.py LIMIT_BYTES CPU_S``) it is the child: it
imports only numpy and h5py, reads file paths (JSON, one a line) on stdin and, for
each, prints one line per object, ``at NAME`` before reading it and ``toobig NAME``
when the limit stopped it, then ``done``. It lives as long as its parent (a Python
start-up is most of a probe's cost) and is replaced after a file it could not read.
"""
from __future__ import annotations

import atexit
import json
import os
import resource
import select
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field

#: Memory the child may allocate beyond its start-up size, plus the file's own size:
#: a sound recording's metadata and strings are a small part of the file.
PROBE_ALLOWANCE_BYTES = 512 * 1024**2
#: CPU seconds the child may spend on one file (RLIMIT_CPU: SIGXCPU ends it), so that
#: a library looping on a damaged heap is told apart from a busy machine.
PROBE_CPU_S = 60
#: Wall-clock time the child may stay silent, a backstop only (a starved process on a
#: loaded machine can wait minutes for its CPU seconds).
PROBE_TIMEOUT_S = 1800.0
#: Objects walked at most: a crafted file can link groups into a huge graph.
MAX_OBJECTS = 100_000


@dataclass
class ProbeResult:
    """What the child could not read: ``too_big`` objects needed more than
    ``limit_bytes``; ``failed`` is the object at which the library crashed or hung
    (``why`` says which), everything after it unknown."""

    limit_bytes: int
    too_big: list[str] = field(default_factory=list)
    failed: str | None = None
    why: str = ""

    @property
    def ok(self) -> bool:
        return not self.too_big and self.failed is None

    def unreadable(self, name: str) -> bool:
        """True if object ``name`` (or what contains it) could not be read."""
        bad = self.too_big + ([self.failed] if self.failed is not None else [])
        name = "/" + name.strip("/")
        return any(name == b or name.startswith(b.rstrip("/") + "/") for b in bad)

    def problem(self) -> str:
        """What went wrong, in words: 'reading its structure (/x) needed more than N MB'."""
        where = self.failed if self.failed is not None else self.too_big[0]
        if self.failed is not None and self.why != "memory":
            what = {"hung": "did not finish in %.0f s" % PROBE_TIMEOUT_S,
                    "cpu": "took more than %d s of CPU time" % PROBE_CPU_S}.get(
                        self.why, "stopped the reading process (%s)" % self.why)
        else:
            what = "needed more than %d MB" % (self.limit_bytes // 1024**2)
        return "reading its structure (%s) %s" % (where, what)

    def message(self, path) -> str:
        """The one line for a user: what went wrong with ``path`` and what to do."""
        return ("cannot read %s: %s; the file is damaged; `walkerlab recover %s --out "
                "NEW.h5` salvages what it can" % (os.fspath(path), self.problem(),
                                                  os.fspath(path)))


def probe_limit(path) -> int:
    """The child's allowance for ``path``: PROBE_ALLOWANCE_BYTES plus its size."""
    try:
        return PROBE_ALLOWANCE_BYTES + os.path.getsize(path)
    except OSError:
        return PROBE_ALLOWANCE_BYTES


def probe_structure(path, limit_bytes: int | None = None) -> ProbeResult:
    """Walk ``path``'s structure in a child process capped at ``limit_bytes`` (default
    probe_limit(path)).

    Errors of any other kind (not HDF5, damaged in a way the library reports) are not
    the probe's business: the child skips them and the parent's own reading reports
    them in its usual words.
    """
    return probe_structures([path], limit_bytes)[0]


def probe_structures(paths, limit_bytes: int | None = None) -> list[ProbeResult]:
    """probe_structure of each path. A file probed before and unchanged since is not
    probed again (unless ``limit_bytes`` is given)."""
    paths = [os.fspath(p) for p in paths]
    out = []
    with _LOCK:
        for path in paths:
            key = _version(path)
            if limit_bytes is None and key in _SEEN:
                out.append(_SEEN[key])
                continue
            result = _probe_one(path, probe_limit(path) if limit_bytes is None
                                else int(limit_bytes), exact=limit_bytes is not None)
            if limit_bytes is None and result.why != "hung":  # busy now, better later
                _SEEN[key] = result
            out.append(result)
    return out


# Results by file version (path, size, modification time): the workbench describes a
# file, then reads it for every run, and a file is probed once.
_SEEN: dict[tuple, ProbeResult] = {}
_LOCK = threading.Lock()


def _version(path: str) -> tuple:
    try:
        st = os.stat(path)
    except OSError:
        return (os.path.abspath(path), None, None)
    return (os.path.realpath(path), st.st_size, st.st_mtime_ns)


class _Died(Exception):
    """The child stopped answering: hung (killed) or dead."""


class _Child:
    """One long-lived child (a Python start-up is most of a probe's cost); it reads
    paths on stdin, answers on stdout, and ends when its stdin closes."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self.proc = subprocess.Popen(
            [sys.executable, "-I", os.path.abspath(__file__), str(limit_bytes),
             str(PROBE_CPU_S)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL)  # libhdf5's diagnostics: a full pipe would block
        self.buffer = b""

    def ask(self, path: str):
        """Send ``path``; yield (kind, name) until its "done"; _Died if it hangs
        (PROBE_TIMEOUT_S without a word) or dies."""
        try:
            self.proc.stdin.write((json.dumps(path) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            raise _Died from None
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                kind, _, name = line.decode("utf-8", "replace").partition(" ")
                name = json.loads(name) if name else ""
                yield kind, name
                if kind == "done":
                    return
            ready, _, _ = select.select([self.proc.stdout], [], [], PROBE_TIMEOUT_S)
            if not ready:
                raise _Died("silent")
            data = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not data:
                raise _Died("gone")
            self.buffer += data

    def why_stopped(self, silent: bool) -> str:
        """Kill the child if it was ``silent`` too long ("hung"), else wait for its end
        (its stdout closes a moment before it can be waited for): "cpu" (RLIMIT_CPU),
        "signal N" or "exit status N"."""
        try:
            code = None if silent else self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            self.proc.kill()
            self.proc.wait()
            return "hung"
        if code == -signal.SIGXCPU:
            return "cpu"
        return "signal %d" % -code if code < 0 else "exit status %d" % code

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


_CHILD: _Child | None = None


def _probe_one(path: str, limit: int, exact: bool) -> ProbeResult:
    """Probe one file in the long-lived child, (re)started with enough allowance."""
    global _CHILD
    if _CHILD is not None and (_CHILD.limit_bytes < limit or
                               exact and _CHILD.limit_bytes != limit):
        _CHILD.close()
        _CHILD = None
    if _CHILD is None:
        _CHILD = _Child(limit)
    result, current = ProbeResult(limit_bytes=_CHILD.limit_bytes), "/"
    try:
        for kind, name in _CHILD.ask(path):
            if kind == "at":
                current = name
            elif kind == "toobig":
                result.too_big.append(name)
    except _Died as died:
        # A hang, a signal (a crash in libhdf5), or memory it could not catch.
        result.failed = current
        result.why = _CHILD.why_stopped(silent=died.args == ("silent",))
    if not result.ok:  # a fresh child for the next file, whatever this one left
        _CHILD.close()
        _CHILD = None
    return result


@atexit.register
def _close_child() -> None:
    if _CHILD is not None:
        _CHILD.close()


# ---- the child ---------------------------------------------------------------------
def _cap_address_space(limit_bytes: int) -> None:
    """Let this process map at most limit_bytes more than it has mapped now."""
    with open("/proc/self/status") as fh:
        vm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + limit_bytes, vm + limit_bytes))


def _out_of_memory(exc: BaseException) -> bool:
    """True for what a refused allocation looks like, from Python or from libhdf5."""
    # libhdf5: "memory allocation failed for chunk"; not "past end of allocation",
    # which it says about damaged addresses.
    msg = str(exc).lower()
    return isinstance(exc, MemoryError) or "allocation failed" in msg or \
        "unable to allocate" in msg


def _walk(f, say) -> None:
    """Read every object's header, attributes and variable-length strings."""
    import h5py
    import numpy as np

    seen, stack = set(), ["/"]
    while stack and len(seen) < MAX_OBJECTS:
        name = stack.pop()
        say("at", name)
        try:
            obj = f[name]
            key = h5py.h5o.get_info(obj.id).addr
            if key in seen:
                continue
            seen.add(key)
            for attr in list(obj.attrs):
                obj.attrs[attr]
            if isinstance(obj, h5py.Group):
                stack.extend(sorted((name.rstrip("/") + "/" + child for child in obj),
                                    reverse=True))
            elif isinstance(obj, h5py.Dataset):
                dtype = obj.dtype
                text = [n for n in dtype.names or () if dtype[n].kind == "O"]
                if text and obj.ndim == 1:
                    obj.fields(text)[()]
                elif dtype.kind == "O" and obj.size:
                    obj[()]
                np.dtype(dtype)  # the datatype message
        except Exception as exc:  # noqa: BLE001 - only memory is the probe's business
            if _out_of_memory(exc):
                say("toobig", name)


def _child(limit_bytes: int, cpu_s: int) -> None:
    """Probe each path (a JSON line on stdin) in turn, until stdin closes."""
    import warnings

    import h5py

    warnings.simplefilter("ignore")
    _cap_address_space(limit_bytes)

    def say(kind, name):
        sys.stdout.write("%s %s\n" % (kind, json.dumps(name)))
        sys.stdout.flush()

    while line := sys.stdin.readline():  # not `for line in sys.stdin`: it reads ahead
        path = json.loads(line)
        used = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        soft = int(used) + 1 + cpu_s
        resource.setrlimit(resource.RLIMIT_CPU, (
            soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
        say("at", "/")
        try:
            try:
                f = h5py.File(path, "r")
            except OSError as exc:
                if "already open for write" not in str(exc):  # SWMR: live or crashed
                    raise
                f = h5py.File(path, "r", swmr=True)
        except Exception as exc:  # noqa: BLE001 - the parent's open reports the rest
            if _out_of_memory(exc):
                say("toobig", "/")
            say("done", "")
            continue
        with f:
            _walk(f, say)
        say("done", "")


if __name__ == "__main__":
    _child(int(sys.argv[1]), int(sys.argv[2]))
