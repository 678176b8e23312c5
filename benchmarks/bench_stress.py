"""Recording under stress: a long soak, an unplug storm and a disk that fills.

    .venv/bin/python benchmarks/bench_stress.py [--soak-minutes 60] [--speed 20] [--unplugs 100]
                                                [--disk-kb 2048]
    .venv/bin/python benchmarks/bench_stress.py --quick

Each run records exactly as `walkerlab record` does (host.record.record_session) from a
virtual walker on a pseudo-terminal.

* soak: `--soak-minutes` of walking served at `--speed` x real time to `walkerlab
  record` in its own process; its RSS is sampled after the first simulated minute and
  at the end (goal: within 10 %), and no frame may be lost.
* unplug storm: `--unplugs` unplugs at random intervals (0.3-0.9 s apart, 0.05-0.25 s
  long); every one must be reconnected and seen as one sequence gap in the file.
* disk full: `walkerlab record` runs in a child process writing to a `--disk-kb` tmpfs
  (as root; otherwise under a file-size limit of that size); it must end with a one-line message
  and exit status 2, and what it wrote before must be readable (directly or after
  `walkerlab recover`).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from device.sim.virtual_walker import FaultConfig, PtyServer, VirtualWalker  # noqa: E402
from host.record import record_session  # noqa: E402
from host.recording import open_recording  # noqa: E402


class Served:
    """A virtual walker served on a pty in a thread, for the length of a with-block."""

    def __init__(self, folder: pathlib.Path, faults: FaultConfig, speed: float = 1.0):
        # The fast board: the same bytes as the bit-level one at a fraction of the CPU,
        # so a busy machine slows the walker less (the recorder is what is measured).
        self.server = PtyServer(VirtualWalker("free", 3, 50, repeat=True, hardware="fast"),
                                faults, path=str(folder / "port"))
        self.stop = threading.Event()
        self.speed = speed

    def __enter__(self) -> str:
        path = self.server.open()
        self.thread = threading.Thread(target=self.server.serve, daemon=True, kwargs={
            "should_stop": self.stop.is_set, "speed": self.speed})
        self.thread.start()
        return path

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(5)
        self.server.close()


def rss_of(pid: int) -> float:
    """Resident memory (MB) of a process, from /proc (Linux)."""
    with open("/proc/%d/status" % pid) as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def soak(folder: pathlib.Path, minutes: float, speed: float) -> dict:
    """`walkerlab record` in its own process (as users run it), RSS sampled from /proc."""
    seconds = minutes * 60 / speed
    out = folder / "soak.h5"
    trace = []
    served = Served(folder, FaultConfig(), speed)
    with served as port:
        proc = subprocess.Popen([sys.executable, "-m", "host.cli", "record", "--port", port,
                                 "--out", str(out), "--duration", str(seconds), "--quiet"],
                                cwd=ROOT, stderr=subprocess.PIPE, text=True)
        while proc.poll() is None:
            # Simulated seconds since the recorder first talked to the walker: the
            # walker's own clock, so a slow start-up or a busy machine does not shift
            # "after the first simulated minute".
            talked = served.server.host_talked_us
            try:
                rss = rss_of(proc.pid)
            except (OSError, ValueError):
                rss = None
            if talked is not None and rss is not None:
                trace.append(((served.server.walker.t_us - talked) / 1e6, rss))
            time.sleep(0.5)
        err = proc.stderr.read()
    if proc.returncode:
        raise RuntimeError("walkerlab record failed: %s" % err.strip()[-300:])
    first = [r for t, r in trace if t >= 60]
    rec = open_recording(out)
    s = rec.summary()
    # the last samples are taken while recording (before the final decode and close)
    end = [r for t, r in trace if t <= minutes * 60]
    return {"simulated_s": round(s["duration_s"]), "samples": s["samples"],
            "frames_lost": s["frames_lost"], "seq_gaps": s["seq_gaps"],
            "rss_first_minute_mb": round(first[0], 1) if first else float("nan"),
            "rss_end_mb": round(end[-1], 1) if end else float("nan"),
            "rss_max_mb": round(max(r for _, r in trace), 1) if trace else float("nan")}


def storm(folder: pathlib.Path, unplugs: int) -> dict:
    # The recorder runs in this process: load its compiled frame scan first, so the
    # unplugs (which start when the host first talks) meet a recorder already running.
    from device.protocol.wire import FrameDecoder
    from host.fast_decode import feed_fast

    feed_fast(FrameDecoder(), b"")
    faults = FaultConfig(disconnect_every_s=0.6, disconnect_duration_s=0.15,
                         disconnect_jitter=0.5, seed=11)
    out = folder / "storm.h5"
    server_stats = {}
    served = Served(folder, faults)
    with served as port:
        t0 = time.monotonic()
        # record until the walker has been unplugged `unplugs` times (and back)
        # slack after the last unplug: the recorder must still see the walker come back
        budget = unplugs * (0.6 * 1.5 + 0.15 * 1.5) + 10
        recorder = threading.Thread(target=lambda: server_stats.update(
            health=record_session(port, out, budget, progress=False)))
        recorder.start()
        while served.server.disconnects < unplugs and time.monotonic() - t0 < budget:
            time.sleep(0.05)
        served.server.faults.disconnect_every_s = 1e9  # no more unplugs
        recorder.join()
    rec = open_recording(out)
    health = server_stats["health"]
    return {"unplugs": served.server.disconnects, "reconnects": health["reconnects"],
            "seq_gaps_in_file": rec.summary()["seq_gaps"],
            "reconnect_events_in_file": rec.summary()["reconnects"],
            "seconds": round(time.monotonic() - t0, 1)}


# The child fills its disk: a small tmpfs where the machine allows mounting one (root),
# else a file-size limit of the same size (RLIMIT_FSIZE: writes past it fail with EFBIG).
DISK_FULL_CHILD = """
import resource, signal, sys
if sys.argv[4] == "rlimit":
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    size = int(sys.argv[5]) * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
from host.cli import main
sys.exit(main(["record", "--port", sys.argv[1], "--out", sys.argv[2],
               "--duration", sys.argv[3], "--quiet"]))
"""


def _small_disk(folder: pathlib.Path, kb: int) -> bool:
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dk" % kb, "tmpfs",
                           str(folder)],
                          capture_output=True).returncode == 0


def disk_full(folder: pathlib.Path, seconds: float, kb: int, speed: float) -> dict:
    disk = folder / "disk"
    disk.mkdir()
    how = "tmpfs" if _small_disk(disk, kb) else "rlimit"
    out = folder / "full.h5"
    try:
        with Served(folder, FaultConfig(), speed=speed) as port:
            proc = subprocess.run([sys.executable, "-c", DISK_FULL_CHILD, port,
                                   str(disk / "full.h5"), str(seconds), how, str(kb)],
                                  capture_output=True, text=True, cwd=ROOT,
                                  timeout=seconds + 120)
        if (disk / "full.h5").exists():
            shutil.copyfile(disk / "full.h5", out)
    finally:
        if how == "tmpfs":
            subprocess.run(["umount", str(disk)], capture_output=True)
    err = [line for line in proc.stderr.splitlines() if line.strip()]
    result = {"disk": how, "exit": proc.returncode, "message": err[-1][:160] if err else "",
              "stderr_lines": len(err), "traceback": "Traceback" in proc.stderr,
              "file_mb": round(out.stat().st_size / 1e6, 2) if out.exists() else 0}
    try:
        result["samples_readable"] = len(open_recording(out).samples)
    except Exception as exc:  # noqa: BLE001 - then recover must salvage it
        from host.recording import recover
        result["direct_read"] = str(exc).splitlines()[0][:120]
        report = recover(out, folder / "full-recovered.h5")
        result["samples_recovered"] = report.samples
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--soak-minutes", type=float, default=60.0)
    ap.add_argument("--speed", type=float, default=20.0)
    ap.add_argument("--unplugs", type=int, default=100)
    ap.add_argument("--disk-kb", type=int, default=2048, help="size of the full disk")
    ap.add_argument("--quick", action="store_true",
                    help="1.25 simulated minutes at 5x, 5 unplugs, a 384 KB disk (CI)")
    args = ap.parse_args(argv)
    if args.quick:
        # 5x, not 20x: a recorder given a tenth of a core on a busy machine cannot
        # take 1,000 samples/s, and the quick mode checks the path, not that rate.
        args.soak_minutes, args.speed, args.unplugs, args.disk_kb = 1.25, 5.0, 5, 384
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for name, run in (("soak", lambda d: soak(d, args.soak_minutes, args.speed)),
                          ("storm", lambda d: storm(d, args.unplugs)),
                          ("disk_full", lambda d: disk_full(d, 600.0 if not args.quick
                                                            else 120.0, args.disk_kb,
                                                            args.speed))):
            d = tmp / name
            d.mkdir()
            r = run(d)
            print("%-9s %s" % (name, ", ".join("%s=%s" % kv for kv in r.items())),
                  flush=True)
            if name == "soak":
                grew = r["rss_end_mb"] / r["rss_first_minute_mb"] - 1
                print("          RSS growth after the first minute: %+.1f %%" % (100 * grew))
                if r["frames_lost"] or grew > 0.10:
                    failures.append(name)
            if name == "storm" and not (r["reconnects"] == r["unplugs"]
                                        == r["reconnect_events_in_file"]):
                failures.append(name)
            if name == "disk_full" and (r["exit"] != 2 or r["traceback"] or not (
                    r.get("samples_readable") or r.get("samples_recovered"))):
                failures.append(name)
    print("RESULT: %s" % ("all goals met" if not failures else "missed: " + ", ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
