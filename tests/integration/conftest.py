import threading

import pytest

from device.sim.virtual_walker import FaultConfig, PtyServer, VirtualWalker


class ServedWalker:
    """A virtual walker served on a pseudo-terminal from a thread, for one test."""

    def __init__(self, tmp_path, course="free", seed=0, rate_hz=50, faults=None,
                 keep_log=False):
        self.walker = VirtualWalker(course, seed, rate_hz, repeat=True, factory_flash=True)
        self.server = PtyServer(self.walker, faults or FaultConfig(),
                                path=str(tmp_path / "walker-port"), keep_log=keep_log)
        self._stop = threading.Event()
        self.path = self.server.open()
        self.thread = threading.Thread(target=self.server.serve,
                                       kwargs={"should_stop": self._stop.is_set},
                                       daemon=True)
        self.thread.start()

    def stop(self):
        self._stop.set()
        self.thread.join(5)
        self.server.close()


@pytest.fixture
def served_walker(tmp_path):
    made = []

    def make(**kwargs):
        w = ServedWalker(tmp_path, **kwargs)
        made.append(w)
        return w

    yield make
    for w in made:
        w.stop()
