"""Output files and folders written whole, and never over another command's output.

Every `walkerlab` command that writes a file or a folder goes through
:func:`exclusive_output` (or :func:`exclusive_outputs` for several): the writer fills a
temporary name beside the output, and only a finished output is published, by a rename
that refuses to replace anything (a hard link, or ``renameat2(RENAME_NOREPLACE)`` for
folders). So of two commands writing one output at the same time exactly one succeeds;
the other removes its temporary copy and says so in one line (a ``UserError``). With
``overwrite`` the publication is an atomic replace: the output is one command's whole
file, never a mix.

A long writer that fills its file in place while it runs (a live recording) instead
creates it exclusively up front (h5py mode ``"x"``) and removes it if nothing arrived.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import pathlib
import secrets
import shutil
from collections.abc import Iterator, Sequence

from host.errors import UserError

__all__ = ["OutputExistsError", "check_free", "exclusive_output", "exclusive_outputs"]


class OutputExistsError(UserError):
    """The output exists already, or another command created it while this one ran."""


def check_free(path, overwrite: bool = False) -> pathlib.Path:
    """``path`` as a Path, or UserError if it cannot be written as asked.

    Refuses an existing output (unless ``overwrite``) and a missing parent folder, so a
    command fails before any work rather than after.
    """
    path = pathlib.Path(path)
    if path.exists() and not overwrite:
        raise OutputExistsError("%s already exists (use --overwrite to replace it)" % path)
    folder = path.parent
    if str(folder) and not folder.is_dir():
        raise UserError("cannot write %s: folder %s does not exist" % (path, folder))
    return path


def _temporary_name(path: pathlib.Path) -> pathlib.Path:
    # Hidden, unique to this process and call, and ending in the output's own
    # extension: writers that pick a format from it (np.savez, ffmpeg) still do.
    token = "%d-%s" % (os.getpid(), secrets.token_hex(4))
    return path.with_name(".%s.%s.part%s" % (path.name, token, path.suffix))


@contextlib.contextmanager
def exclusive_outputs(paths: Sequence, *, overwrite: bool = False
                      ) -> Iterator[list[pathlib.Path]]:
    """Temporary names to write ``paths`` under; when the block ends, all are published.

    Parameters
    ----------
    paths : sequence of path-like
        The outputs (files or folders). Their folders must exist.
    overwrite : bool, default False
        Replace existing outputs (atomically) instead of refusing them.

    Yields
    ------
    list of pathlib.Path
        One unused name per output, in the same folder; create the file or folder
        there. Published in order when the block ends without an exception; if an
        output appeared meanwhile, the ones already published are removed again and a
        ``UserError`` says which output another command took. The temporary names
        never outlive the block.
    """
    finals = [check_free(p, overwrite) for p in paths]
    temps = [_temporary_name(p) for p in finals]
    try:
        yield temps
        _publish(temps, finals, overwrite)
    finally:
        for tmp in temps:
            _remove(tmp)


@contextlib.contextmanager
def exclusive_output(path, *, overwrite: bool = False) -> Iterator[pathlib.Path]:
    """:func:`exclusive_outputs` for one output: yields its temporary name."""
    with exclusive_outputs([path], overwrite=overwrite) as (tmp,):
        yield tmp


def _publish(temps, finals, overwrite: bool) -> None:
    published = []
    for tmp, final in zip(temps, finals):
        if not tmp.exists():
            raise RuntimeError("the writer did not create %s" % tmp)
        try:
            if overwrite:
                _replace(tmp, final)
            else:
                _rename_noreplace(tmp, final)
        except FileExistsError:
            for path in published:  # all or nothing: ours only, we never replaced
                _remove(path)
            raise OutputExistsError("%s was created by another command while this one ran; "
                            "nothing written (use --overwrite to replace it)"
                            % final) from None
        published.append(final)


def _replace(tmp: pathlib.Path, final: pathlib.Path) -> None:
    if tmp.is_dir() and final.is_dir():  # os.replace refuses a non-empty folder
        old = _temporary_name(final)
        os.rename(final, old)
        os.rename(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)


_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


def _renameat2():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return libc.renameat2
    except (OSError, AttributeError):
        return None


def _rename_noreplace(tmp: pathlib.Path, final: pathlib.Path) -> None:
    """Rename, or FileExistsError if ``final`` exists (atomically: no window between)."""
    if not tmp.is_dir():
        try:
            os.link(tmp, final)  # fails if final exists, whatever else happens meanwhile
            os.unlink(tmp)
            return
        except FileExistsError:
            raise
        except OSError:
            pass  # a file system without hard links: renameat2 below
    renameat2 = _renameat2()
    if renameat2 is not None:
        if renameat2(_AT_FDCWD, os.fsencode(tmp), _AT_FDCWD, os.fsencode(final),
                     _RENAME_NOREPLACE) == 0:
            return
        code = ctypes.get_errno()
        if code == errno.EEXIST:
            raise FileExistsError(code, os.strerror(code), str(final))
        if code not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise OSError(code, os.strerror(code), str(final))
    # Last resort (no renameat2 here): claim the name exclusively, then move in.
    if tmp.is_dir():
        os.mkdir(final)  # FileExistsError if taken
        os.rmdir(final)
    else:
        os.close(os.open(final, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    os.replace(tmp, final)


def _remove(path: pathlib.Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
