"""The presence lock: which gateways have a signal-log database open, across processes."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path

from persistence.errors import DatabaseBusy

__all__ = ["PresenceLock"]

_BUSY = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)


class PresenceLock:
    """A shared ``flock`` on ``<database>.lock`` (created 0600) held while a gateway is open.

    Any number of gateways (in any processes) hold it shared. The one thing
    it answers is whether the opening gateway is *alone*: only then is the
    restart sweep safe (it re-freezes every open notice, which must not
    happen while another process may be between showing a notice and
    acknowledging it). Call :meth:`join` while holding the database's write
    lock (inside ``BEGIN IMMEDIATE``): two openers then never test at once,
    so the exclusive probe's release-and-share step cannot race another's
    probe. The kernel drops the lock when the process dies, so a ``kill -9``
    never leaves it stale.

    The lock file is created by :meth:`join`, which the opener calls only
    once the database has been opened and checked, so an open that fails
    (not a database, another application's file) leaves no ``.lock`` behind.

    Args:
        database: the SQLite file the lock belongs to.

    Runs in the caller's thread; never blocks.
    """

    def __init__(self, database: Path) -> None:
        # Resolve symlinks, so an alias of an open database finds the same lock.
        real = Path(os.path.realpath(database))
        self.path = real.with_name(real.name + ".lock")
        self._fd: int | None = None
        self._released = False

    def join(self) -> bool:
        """Create the lock file if needed and hold it shared; returns whether no other
        gateway holds it.

        Raises:
            DatabaseBusy: the lock is held exclusively outside an open, which
                only a gateway of a release before schema version 3 (one owner
                per database) does; it must be stopped first.
            OSError: the lock file cannot be created, or ``flock`` failed for
                another reason than contention.
        """
        assert not self._released, "join() after release()"
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in _BUSY:
                raise
            alone = False
        else:
            alone = True
        # Openers hold the database's write lock here, so nobody probes meanwhile
        # and nobody of ours can hold the lock exclusively.
        try:
            fcntl.flock(self._fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in _BUSY:
                raise
            raise DatabaseBusy(
                f"{self.path} is held by a gateway of an older release (one owner per "
                "database); stop it before opening the database with this one") from None
        return alone

    def release(self) -> None:
        """Release the lock (idempotent)."""
        self._released = True
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
