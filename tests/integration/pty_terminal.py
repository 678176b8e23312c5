"""A CLI process on a pseudo-terminal, driven like a person at a keyboard (for the
`walkerlab calibrate` tests)."""
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Terminal:
    """A CLI process on a pseudo-terminal, driven like a person at a keyboard."""

    def __init__(self, args, env):
        master, slave = pty.openpty()
        self.proc = subprocess.Popen([sys.executable, "-m", "host.cli", *args], stdin=slave,
                                     stdout=slave, stderr=slave, env=env, cwd=ROOT,
                                     close_fds=True)
        os.close(slave)
        self.master = master
        self.text = ""
        self.pos = 0

    def _read(self, timeout):
        r, _, _ = select.select([self.master], [], [], timeout)
        if r:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                data = b""
            self.text += data.decode("utf-8", "replace")
            return bool(data)
        return True

    def expect(self, pattern, timeout=90.0):
        rx = re.compile(pattern)
        end = time.monotonic() + timeout
        while True:
            m = rx.search(self.text, self.pos)
            if m:
                self.pos = m.end()
                return m
            if time.monotonic() > end or (not self._read(0.2) and self.proc.poll() is not None):
                raise AssertionError("never saw %r; the terminal shows:\n%s"
                                     % (pattern, self.text[-3000:]))

    def send(self, line=""):
        os.write(self.master, (line + "\n").encode())

    def wait(self, timeout=60.0):
        end = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < end:
            self._read(0.2)
        while self._read(0.05) and select.select([self.master], [], [], 0)[0]:
            pass
        return self.proc.wait(timeout=1)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)
