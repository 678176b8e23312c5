"""Start a virtual walker in this process when the user gave no serial port."""
from __future__ import annotations

import threading

from device.sim.virtual_walker import FaultConfig, PtyServer, VirtualWalker


class BackgroundVirtualWalker:
    """A PtyServer serving a VirtualWalker from a daemon thread; `path` is its port."""

    def __init__(self, course: str = "free", seed: int = 0, rate_hz: int = 50,
                 faults: FaultConfig | None = None, path: str | None = None) -> None:
        self.walker = VirtualWalker(course, seed, rate_hz, repeat=True)
        self.server = PtyServer(self.walker, faults, path=path)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.path = ""

    def start(self) -> str:
        self.path = self.server.open()
        self._thread = threading.Thread(target=self.server.serve,
                                        kwargs={"should_stop": self._stop.is_set},
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
