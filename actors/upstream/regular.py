"""Opening a file only when it is a regular one: a FIFO or device put where a transcript
was never blocks a reader (standard library only: ``ssa hook``'s cold path uses it)."""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = ["open_regular", "open_regular_file"]


def open_regular(path: str) -> BinaryIO | None:
    """Open ``path`` for reading in binary if it is a regular file, else ``None``.

    Opens ``O_NONBLOCK`` and checks the opened file, so a FIFO or device put
    where a transcript was never blocks the caller (a plain ``open`` of a FIFO
    waits for a writer forever). The caller closes the returned file. Caller's
    thread; never raises (an unreadable path is ``None``).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        return os.fdopen(fd, "rb")
    except OSError:
        os.close(fd)
        return None


def open_regular_file(path: str) -> BinaryIO:
    """:func:`open_regular`, raising instead of answering ``None``: for readers whose
    callers catch ``OSError`` (a FIFO or device where a transcript was is "not found",
    never a read that blocks). Caller's thread; the caller closes the file.

    Raises:
        FileNotFoundError: ``path`` is missing, unreadable, or no regular file.
    """
    handle = open_regular(path)
    if handle is None:
        raise FileNotFoundError(f"{path} is no readable regular file")
    return handle
