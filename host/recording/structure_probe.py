"""Read an untrusted recording's HDF5 structure in a child process under a memory limit.

One damaged size field in an HDF5 file (an object header, a global heap collection
holding the variable-length strings of a table) makes libhdf5 allocate whatever it
says, 1.3 GB in a case the fuzzer found, before it refuses the file; in a Python
process that allocation cannot be stopped or bounded. So, for files that come from
outside, a child process that caps its own address space (``RLIMIT_AS``) first walks
every group, attribute, dataset header and variable-length string of the file, the
parts whose size the file itself declares. The numeric data (samples, the raw byte
log) is not read: its size is checked against the file size by
``reader.ReadBudget`` before the parent reads it.

The parent learns which objects could not be read within the limit (or at which one
the library crashed or hung) and decides: ``open_recording(..., untrusted=True)``
refuses the file in one line; ``recover`` leaves those objects out and salvages the
rest. Costs one Python start-up with numpy and h5py (a few tenths of a second).

Run as a script (``python structure_probe.py LIMIT_BYTES FILE...``) it is the child: it
imports only numpy and h5py and prints one line per object, ``at I NAME`` before
reading it and ``toobig I NAME`` when the limit stopped it, then ``done I`` (I: the
file's index), so many files cost one start-up.
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field

#: Memory the child may allocate beyond its start-up size, plus the file's own size:
#: a sound recording's metadata and strings are a small part of the file.
PROBE_ALLOWANCE_BYTES = 512 * 1024**2
#: Time the child may take (a busy machine, a long recording), then it counts as hung.
PROBE_TIMEOUT_S = 120.0
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
            what = ("crashed the HDF5 library (%s)" % self.why if self.why != "hung"
                    else "did not finish in %.0f s" % PROBE_TIMEOUT_S)
        else:
            what = "needed more than %d MB" % (self.limit_bytes // 1024**2)
        return "reading its structure (%s) %s" % (where, what)

    def message(self, path) -> str:
        """The one line for a user: what went wrong with ``path`` and what to do."""
        return ("cannot read %s: %s; the file is damaged; `walkerlab recover %s --out "
                "NEW.h5` salvages what it can" % (os.fspath(path), self.problem(),
                                                  os.fspath(path)))


def probe_limit(paths) -> int:
    """The child's allowance: PROBE_ALLOWANCE_BYTES plus the largest file's size."""
    sizes = [0]
    for path in paths:
        try:
            sizes.append(os.path.getsize(path))
        except OSError:
            pass
    return PROBE_ALLOWANCE_BYTES + max(sizes)


def probe_structure(path, limit_bytes: int | None = None) -> ProbeResult:
    """Walk ``path``'s structure in a child process capped at ``limit_bytes``.

    Errors of any other kind (not HDF5, damaged in a way the library reports) are not
    the probe's business: the child skips them and the parent's own reading reports
    them in its usual words.
    """
    return probe_structures([path], limit_bytes)[0]


def probe_structures(paths, limit_bytes: int | None = None) -> list[ProbeResult]:
    """probe_structure of each path, in as few child processes as it takes (one, unless
    a file crashes or hangs the library: the next child goes on after it). A file
    probed before and unchanged since is not probed again (unless ``limit_bytes``)."""
    paths = [os.fspath(p) for p in paths]
    keys = [_version(p) for p in paths]
    cached = limit_bytes is None
    todo = [p for p, key in zip(paths, keys) if not cached or key not in _SEEN]
    fresh: dict[str, ProbeResult] = {}
    if todo:
        limit = probe_limit(todo) if limit_bytes is None else int(limit_bytes)
        results = [ProbeResult(limit_bytes=limit) for _ in todo]
        start = 0
        while start < len(todo):
            start = _probe_from(todo, start, limit, results)
        fresh = dict(zip(todo, results))
        if cached:  # not a hang: a busy machine may do better next time
            _SEEN.update((_version(p), r) for p, r in fresh.items() if r.why != "hung")
    return [fresh[p] if p in fresh else _SEEN[key] for p, key in zip(paths, keys)]


# Results by file version (path, size, modification time): the workbench describes a
# file, then reads it for every run, and a file is probed once.
_SEEN: dict[tuple, ProbeResult] = {}


def _version(path: str) -> tuple:
    try:
        st = os.stat(path)
    except OSError:
        return (os.path.abspath(path), None, None)
    return (os.path.realpath(path), st.st_size, st.st_mtime_ns)


def _probe_from(paths: list[str], start: int, limit: int, results) -> int:
    """Run one child over paths[start:]; the index of the first file it did not finish
    (after marking that file failed), or len(paths)."""
    cmd = [sys.executable, "-I", os.path.abspath(__file__), str(limit)] + paths[start:]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                              timeout=PROBE_TIMEOUT_S * (len(paths) - start),
                              stdin=subprocess.DEVNULL)
        out, err, code = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:  # run() has killed it
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) \
            else (exc.stdout or "")
        err, code = "", None
    i, current = start, "/"
    for line in out.splitlines():
        kind, _, rest = line.partition(" ")
        index, _, name = rest.partition(" ")
        if kind not in ("at", "toobig", "done") or not index.isdigit():
            continue
        i = start + int(index)
        if kind == "at":
            current = name
        elif kind == "toobig":
            results[i].too_big.append(name)
        else:
            i, current = i + 1, "/"
    if i >= len(paths):
        return i
    # File i has no "done": the child hung, died of a signal (a crash in libhdf5), or
    # ran out of memory where it could not catch it (Python's own allocations).
    results[i].failed = current
    if code is None:
        results[i].why = "hung"
    elif code < 0:
        results[i].why = "signal %d" % -code
    else:
        results[i].why = "memory" if "MemoryError" in err else "exit status %d" % code
    return i + 1


# ---- the child ---------------------------------------------------------------------
def _cap_address_space(limit_bytes: int) -> None:
    """Let this process map at most limit_bytes more than it has mapped now."""
    import resource

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


def _child(limit_bytes: int, paths: list[str]) -> None:
    import warnings

    import h5py

    warnings.simplefilter("ignore")
    _cap_address_space(limit_bytes)
    for index, path in enumerate(paths):
        def say(kind, name, index=index):
            print(kind, index, name, flush=True)

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
    _child(int(sys.argv[1]), sys.argv[2:])
