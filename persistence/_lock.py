"""The single-owner lock: one gateway process owns a signal-log database at a time."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path

from persistence.errors import DatabaseBusy

__all__ = ["OwnerLock"]


class OwnerLock:
    """An exclusive ``flock`` on ``<database>.lock`` (created 0600), held until released.

    Notice delivery assumes one gateway owns the database (seed, "Current
    limits"): a second owner's restart sweep would re-freeze the first's
    pending cursors. The kernel drops the lock when the process dies, so a
    ``kill -9`` never leaves it stale. Readers (``ssa status``/``ssa list``)
    take no lock.

    Args:
        database: the SQLite file the lock guards.

    Raises:
        DatabaseBusy: another gateway (in this or another process) holds it.
        OSError: the lock file cannot be created.
    """

    def __init__(self, database: Path) -> None:
        # Resolve symlinks, so an alias of an open database finds the same lock.
        real = Path(os.path.realpath(database))
        self.path = real.with_name(real.name + ".lock")
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(self._fd)
            self._fd = None
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise DatabaseBusy(
                    f"{database} is already open in another gateway; one gateway process owns "
                    "a database (read it with `ssa status`/`ssa list` instead)") from None
            raise

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
