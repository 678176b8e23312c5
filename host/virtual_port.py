"""Start a virtual walker in this process when the user gave no serial port."""
from __future__ import annotations

import threading

from device.sim.virtual_walker import FaultConfig, PtyServer, VirtualWalker


class BackgroundVirtualWalker:
    """A PtyServer serving a VirtualWalker from a daemon thread; `path` is its port."""

    def __init__(self, course: str = "free", seed: int = 0, rate_hz: int = 50,
                 faults: FaultConfig | None = None, path: str | None = None,
                 bench=None, truth=None, storage=None, speed: float = 1.0,
                 hardware: str = "bits", max_lag_s: float | None = None) -> None:
        self.speed = speed
        self.max_lag_s = max_lag_s
        self.walker = VirtualWalker(course, seed, rate_hz, repeat=True, bench=bench,
                                    truth=truth, storage=storage, factory_flash=True,
                                    hardware=hardware)
        self.server = PtyServer(self.walker, faults, path=path)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.path = ""

    def start(self) -> str:
        self.path = self.server.open()
        self._thread = threading.Thread(target=self.server.serve,
                                        kwargs={"should_stop": self._stop.is_set,
                                                "speed": self.speed,
                                                "max_lag_s": self.max_lag_s},
                                        name="walkerlab-virtual-walker", daemon=True)
        self._thread.start()
        return self.path

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self.server.close()

    def __enter__(self) -> "BackgroundVirtualWalker":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def bench_walker(walker_seed: int = 0, speed: float = 1.0, mistakes: dict | None = None,
                 storage=None):
    """A virtual walker on a calibration bench, with the technician that works it:
    (BackgroundVirtualWalker, technician callable(Step), the hidden hardware truth)."""
    from device.sim.bench import CalibrationBench, VirtualTechnician
    from device.sim.sensors import default_truth

    bench = CalibrationBench()
    truth = default_truth(walker_seed)
    # The fast board: the same firmware and bytes as the bit-level one
    # (tests/device/test_bit_level.py), cheap enough to run several times real time.
    walker = BackgroundVirtualWalker(seed=walker_seed, bench=bench, truth=truth,
                                     speed=speed, storage=storage, hardware="fast",
                                     max_lag_s=0.25)
    return walker, VirtualTechnician(bench, mistakes, seed=walker_seed), truth


def virtual_flash(walker_id: str):
    """The emulated flash of virtual walker `walker_id`, kept across runs (a folder under
    $WALKERLAB_VIRTUAL_FLASH_DIR, default ~/.local/state/walkerlab/virtual-flash)."""
    import os
    import pathlib

    from device.firmware.storage import FileStorage

    base = os.environ.get("WALKERLAB_VIRTUAL_FLASH_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                         "state"),
        "walkerlab", "virtual-flash")
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in walker_id)
    folder = pathlib.Path(base) / safe
    folder.mkdir(parents=True, exist_ok=True)
    return FileStorage(str(folder))
