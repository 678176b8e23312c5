"""Errors that are the user's to fix: the CLI prints them as one line, exit status 2."""
from __future__ import annotations


class UserError(Exception):
    """A mistake in what the user asked for (bad file, missing port, wrong option)."""


def user_errors() -> tuple[type[BaseException], ...]:
    """Exception types the CLI reports as a one-line message instead of a traceback."""
    kinds: list[type[BaseException]] = [UserError, FileNotFoundError, FileExistsError,
                                        IsADirectoryError, PermissionError]
    try:
        from host.recording import RecordingFormatError
        kinds.append(RecordingFormatError)
    except ImportError:
        pass
    try:
        from recognizers.base import ModelFormatError
        kinds.append(ModelFormatError)
    except ImportError:
        pass
    return tuple(kinds)
