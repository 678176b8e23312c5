"""Reading .npz files from outside without trusting them.

``np.load(allow_pickle=False)`` refuses pickles, but it believes every array header: a
member declaring 10^12 elements, or a zip member of 2 GB of zeros compressed to 2 MB,
is allocated before anything is checked. :func:`load_npz` reads each member's header
first and refuses a file whose arrays would need more memory than a few times the
file's size (plus an allowance for small files), or whose members are not plain
numeric / text arrays.
"""
from __future__ import annotations

import os
import struct
import zipfile
import zlib

import numpy as np

ALLOWANCE_BYTES = 64 * 1024**2
SIZE_FACTOR = 8  # np.savez stores arrays uncompressed: a real file holds what it declares


class NpzFormatError(ValueError):
    """The file is not an .npz this code will read (one line, naming the file)."""


# What zipfile, zlib and numpy raise on a damaged archive (besides FileNotFoundError and
# its kin, which stay as they are): a bad header, an unsupported "version" or flag in a
# damaged local header (NotImplementedError), an "encrypted" bit (RuntimeError), a
# corrupt deflate stream (zlib.error), a bad struct.
DAMAGE = (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError, NotImplementedError,
          RuntimeError, zlib.error, struct.error, OverflowError)


def _member_header(z: zipfile.ZipFile, info: zipfile.ZipInfo):
    with z.open(info) as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(fh)
        if version == (2, 0):
            return np.lib.format.read_array_header_2_0(fh)
        raise ValueError("npy format version %s" % (version,))


def check_npz(path, max_bytes: int | None = None) -> dict[str, tuple[tuple, np.dtype]]:
    """{array name: (shape, dtype)} of an .npz, after checking every member's header;
    NpzFormatError if a member is not an .npy array of numbers or text, or the arrays
    would take more than ``max_bytes`` (default: ALLOWANCE_BYTES + SIZE_FACTOR x the
    file's size)."""
    path = os.fspath(path)
    if max_bytes is None:
        max_bytes = ALLOWANCE_BYTES + SIZE_FACTOR * os.path.getsize(path)
    out, total = {}, 0
    try:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if not info.filename.endswith(".npy"):
                    raise NpzFormatError("%s: member %r is not an .npy array"
                                         % (path, info.filename))
                shape, _, dtype = _member_header(z, info)
                if dtype.hasobject:
                    raise NpzFormatError("%s: array %r holds Python objects (a pickle); "
                                         "refusing to read it" % (path, info.filename))
                nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
                total += nbytes
                if total > max_bytes or info.file_size > max_bytes:
                    raise NpzFormatError(
                        "%s: array %r declares %.0f MB, more than the file (%.1f MB) can "
                        "hold; refusing to read it" % (path, info.filename, nbytes / 1e6,
                                                        os.path.getsize(path) / 1e6))
                out[info.filename[:-4]] = (shape, dtype)
    except NpzFormatError:
        raise
    except DAMAGE as exc:
        if isinstance(exc, (FileNotFoundError, IsADirectoryError, PermissionError)):
            raise
        raise NpzFormatError("%s: not a readable .npz file (%s)" % (
            path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)) from None
    return out


def load_npz(path, max_bytes: int | None = None) -> dict[str, np.ndarray]:
    """Every array of an .npz, checked first by :func:`check_npz`."""
    check_npz(path, max_bytes)
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except DAMAGE as exc:
        if isinstance(exc, (FileNotFoundError, IsADirectoryError, PermissionError)):
            raise
        raise NpzFormatError("%s: damaged .npz file (%s)" % (
            path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)) from None
