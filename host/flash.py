"""`walkerlab flash`: install the MicroPython firmware on a board with mpremote.

What goes on the board: device/__init__.py, device/protocol/ and device/firmware/
(the modules the firmware imports), and device/firmware/main.py as /main.py, which
MicroPython runs at boot. Before copying, the board must answer as a MicroPython
REPL; a walker already running the firmware is first sent its break sequence
(eight Ctrl-C bytes), which reboots it into the REPL.
"""
from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import serial

from host.errors import UserError
from host.link import check_port

ROOT = pathlib.Path(__file__).resolve().parents[1]
BREAK = b"\x03" * 8
RAW_REPL_BANNER = b"raw REPL; CTRL-B to exit"
PROBE_TIMEOUT_S = 2.0
REBOOT_WAIT_S = 3.0


def firmware_files() -> list[tuple[pathlib.Path, str]]:
    """(local file, path on the board) of everything `flash` installs."""
    dev = ROOT / "device"
    files = [(dev / "__init__.py", "device/__init__.py")]
    for sub in ("protocol", "firmware"):
        for path in sorted((dev / sub).glob("*.py")):
            if path.name != "main.py":
                files.append((path, "device/%s/%s" % (sub, path.name)))
    files.append((dev / "firmware" / "main.py", "main.py"))
    return files


def _probe_repl(port_name: str, open_port=None) -> bool:
    """True if the port answers Ctrl-A with MicroPython's raw REPL banner."""
    opener = open_port or (lambda: serial.Serial(port_name, 115200, timeout=0.1))
    try:
        port = opener()
    except (serial.SerialException, OSError) as exc:
        raise UserError("cannot open %s: %s" % (port_name, exc)) from None
    try:
        port.write(b"\r\x03\x03\x01")  # interrupt whatever runs, enter the raw REPL
        seen = b""
        deadline = time.monotonic() + PROBE_TIMEOUT_S
        while time.monotonic() < deadline:
            seen += port.read(256)
            if RAW_REPL_BANNER in seen:
                port.write(b"\x02")  # back to the friendly REPL for mpremote
                return True
        return False
    finally:
        port.close()


def _send_break(port_name: str) -> None:
    try:
        with serial.Serial(port_name, 115200, timeout=0.1) as port:
            port.write(BREAK)
    except (serial.SerialException, OSError):
        pass


def mpremote_command(port_name: str, stage: pathlib.Path) -> list[str]:
    """The mpremote invocation that copies the staged tree and resets the board."""
    exe = shutil.which("mpremote") or str(pathlib.Path(sys.executable).with_name("mpremote"))
    return [exe, "connect", port_name, "fs", "cp", "-r", str(stage / "device"), ":",
            "+", "fs", "cp", str(stage / "main.py"), ":main.py", "+", "reset"]


def flash(port_name: str, dry_run: bool = False) -> list[str]:
    """Install the firmware on the board at port_name; returns the board paths."""
    files = firmware_files()
    if dry_run:
        return [remote for _, remote in files]
    check_port(port_name)
    if not _probe_repl(port_name):
        _send_break(port_name)  # maybe our firmware: it reboots into the REPL
        time.sleep(REBOOT_WAIT_S)
        check_port(port_name)
        if not _probe_repl(port_name):
            raise UserError("%s does not answer as a MicroPython board (no raw REPL "
                            "within %.0f s); is MicroPython installed on it?"
                            % (port_name, PROBE_TIMEOUT_S))
    with tempfile.TemporaryDirectory() as tmp:
        stage = pathlib.Path(tmp)
        for local, remote in files:
            target = stage / remote
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(local, target)
        cmd = mpremote_command(port_name, stage)
        try:
            result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except FileNotFoundError:
            raise UserError("mpremote is not installed (pip install mpremote)") from None
        except subprocess.TimeoutExpired:
            raise UserError("mpremote timed out copying to %s" % port_name) from None
        if result.returncode != 0:
            detail = (result.stderr or result.stdout).strip().splitlines()
            raise UserError("mpremote failed: %s" % (detail[-1] if detail else "no output"))
    return [remote for _, remote in files]
