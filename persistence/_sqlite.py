"""The embedded SQLite backend (APSW): one file, any number of processes on one host."""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import apsw

from persistence._leases import wake_high_water
from persistence._lock import PresenceLock
from persistence._schema import open_connection, prepare_path, tighten_modes, wal_problem
from persistence._shm import shm_frozen, shm_refusal
from persistence.errors import DatabaseCorrupt, StorageError, recovery_hint

__all__ = ["FATAL_ERRORS", "FAULT_ERRORS", "SqliteBackend"]

logger = logging.getLogger(__name__)

FAULT_ERRORS: tuple[type[apsw.Error], ...] = (
    apsw.FullError, apsw.IOError, apsw.ReadOnlyError, apsw.BusyError, apsw.LockedError,
    apsw.CantOpenError, apsw.CorruptError, apsw.NotADBError,
)
"""SQLite errors that are storage faults, not programming errors."""

FATAL_ERRORS: tuple[type[apsw.Error], ...] = (apsw.CorruptError, apsw.NotADBError)
"""SQLite errors after which the database cannot be trusted: the gateway shuts down."""

IDLE_FACTOR = 3
"""While the log is idle the probe period grows to this many probe intervals."""


class SqliteBackend:
    """The signal log in one SQLite file, shared by the processes of one host.

    Args:
        path: the database file.
        synchronous: SQLite durability, ``"FULL"`` or ``"NORMAL"``.
        busy_timeout_ms: how long to wait for another process's lock, in ms.
        vfs: SQLite VFS name (``None``: the default), e.g. for fault injection.

    See :class:`persistence._backend.Backend` for the methods. Thread-safe;
    the connections it opens are for one thread at a time.
    """

    name: str = "sqlite"
    shares_hosts = False

    def __init__(self, path: Path, *, synchronous: Literal["FULL", "NORMAL"] = "FULL",
                 busy_timeout_ms: int = 5000, vfs: str | None = None) -> None:
        self.path: Path | None = path
        self._file = path
        self.location = str(path)
        self._synchronous = synchronous
        self._busy_timeout_ms = busy_timeout_ms
        self._vfs = vfs
        self._identity: tuple[int, int] | None = None
        self._shm: tuple[int, int] | None = None
        """``(inode, largest size)`` of the ``-shm`` while our connections map it."""
        self._shm_lock = threading.Lock()
        self._conns: weakref.WeakSet[apsw.Connection] = weakref.WeakSet()
        """The open connections (to keep their close from storing into a frozen ``-shm``)."""

    def prepare(self) -> None:
        """The location rule, then the missing folder it allows (0700) and the file (0600)."""
        prepare_path(self._file)

    def connect(self, *, writer: bool, migrate: bool = False) -> apsw.Connection:
        """An APSW connection (writer: WAL, the short busy handler; reader: query-only)."""
        refused = shm_refusal(str(self._file))  # SQLite would map it: SIGBUS, not an error
        if refused is not None:
            raise StorageError(refused)
        wal_gone = wal_problem(str(self._file))  # before the open creates a new -wal
        try:
            conn = open_connection(str(self._file), synchronous=self._synchronous,
                                   busy_timeout_ms=self._busy_timeout_ms, writer=writer,
                                   migrate=migrate, vfs=self._vfs)
        except (apsw.IOError, apsw.CorruptError, DatabaseCorrupt) as exc:
            if wal_gone is not None:  # not corrupt: its newest pages were in that file
                raise StorageError(wal_gone) from exc
            if isinstance(exc, DatabaseCorrupt):
                raise
            if isinstance(exc, apsw.IOError):
                raise StorageError(f"cannot open {self._file}: {exc}") from exc
            # (a file that is no database at all may be the user's own, given by
            # mistake: "cannot open ...", never "move it aside")
            raise DatabaseCorrupt(f"{self._file} is corrupt ({exc}); "
                                  f"{recovery_hint(str(self._file))}") from exc
        except apsw.Error as exc:
            raise StorageError(f"cannot open {self._file}: {exc}") from exc
        self._conns.add(conn)
        if writer and conn.readonly("main"):
            # SQLite falls back to read-only for a file this user may not write; every
            # write would then fail (and producers return None) as long as it runs.
            conn.close()
            raise StorageError(f"cannot write {self._file}: permission denied for this user "
                               "(SQLite opened it read-only); fix its owner or mode, or "
                               "give another --db / path")
        if writer and self._identity is None:
            st = os.stat(self._file)
            self._identity = (st.st_dev, st.st_ino)
            tighten_modes(self._file)  # the -wal/-shm SQLite just made, or found
        if writer and not migrate:  # the writer lives as long as the gateway; the
            # migrating connection closes first (and may take the -shm with it)
            try:
                shm = os.stat(f"{self._file}-shm")
            except OSError:
                pass
            else:
                with self._shm_lock:
                    self._shm = (shm.st_ino, shm.st_size)
        return conn

    def begin_write(self, conn: Any) -> None:
        """``BEGIN IMMEDIATE``: the database's write lock, for the whole transaction."""
        conn.execute("BEGIN IMMEDIATE")

    def is_driver_error(self, exc: BaseException) -> bool:
        """Whether ``exc`` is an APSW error."""
        return isinstance(exc, apsw.Error)

    def is_fault(self, exc: BaseException) -> bool:
        """Full disk, I/O error, read-only or vanished file, a lock held too long, corruption."""
        return isinstance(exc, FAULT_ERRORS)

    def is_fatal(self, exc: BaseException) -> bool:
        """A corrupt file, or one that is no database."""
        return isinstance(exc, FATAL_ERRORS)

    def storage_problem(self) -> str | None:
        """Refuse touching a removed or replaced file (SQLite writes to an unlinked one),
        or one whose ``-shm`` was cut short or made immutable under us.

        SQLite maps ``<file>-shm`` into memory; once something else truncates,
        removes or replaces it while it is mapped, the next access to the map
        kills the process with SIGBUS. The ``-shm`` only grows while a
        connection has the database open (ours do while the gateway runs), so
        a smaller, missing or other ``-shm`` is refused before SQLite touches
        it, and so is one made immutable or append-only (:mod:`persistence._shm`).
        Any thread; two ``stat`` calls and an ``open``/``ioctl``/``close``.
        """
        try:
            st = os.stat(self._file)
        except OSError:
            return "the database file is missing (was its directory removed or renamed?)"
        if self._identity is not None and (st.st_dev, st.st_ino) != self._identity:
            return "the database file was replaced by another file"
        return self._shm_problem()

    def _restore_shm(self, size: int, found: int) -> bool:
        """Give a cut-short ``-shm`` its size back: the map is valid again (SIGBUS-free).

        The restored pages read as zeros, which SQLite takes for an index to
        rebuild from the ``-wal`` (as after a crash): nothing is lost. Returns
        whether it worked (logged either way).
        """
        try:
            os.truncate(f"{self._file}-shm", size)
        except OSError as exc:
            logger.error("the -shm file of %s was cut short (%d of %d bytes) and cannot be "
                         "restored: %s", self._file, found, size, exc)
            return False
        logger.warning("the -shm file of %s was cut short under us (%d of %d bytes); restored "
                       "its size so SQLite rebuilds its index from the -wal (it maps the file; "
                       "a cut-short map would kill the process with SIGBUS)", self._file,
                       found, size)
        return True

    def _no_checkpoint_on_close(self) -> None:
        """Keep the open connections' close from checkpointing (a store into the ``-shm``):
        the last close would otherwise be a SIGBUS. The ``-wal`` stays for the next open."""
        for conn in list(self._conns):
            try:
                conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
            except apsw.Error as exc:  # closed meanwhile
                logger.debug("cannot keep %s from checkpointing at close: %s", self._file, exc)

    def _shm_problem(self) -> str | None:
        seen = self._shm
        if seen is None:
            return None
        try:
            st = os.stat(f"{self._file}-shm")
        except FileNotFoundError:
            shown = "removed"
        except OSError:
            return None  # cannot tell; SQLite reports what it meets
        else:
            frozen = shm_frozen(str(self._file)) if st.st_ino == seen[0] else None
            if frozen is not None:  # its pages were flushed: SQLite's next store is a SIGBUS
                self._no_checkpoint_on_close()
                return (f"the database's -shm file ({self._file}-shm) was made {frozen} "
                        "while it was open; refusing to use it (SQLite maps it: a store "
                        "would kill the process). Make it writable again (chattr -i -a)")
            if st.st_ino == seen[0] and st.st_size >= seen[1]:
                with self._shm_lock:
                    self._shm = (seen[0], max(seen[1], st.st_size))
                return None
            if st.st_ino == seen[0] and self._restore_shm(seen[1], st.st_size):
                return None
            shown = "replaced" if st.st_ino != seen[0] else "cut short"
        return (f"the database's -shm file ({self._file}-shm) was {shown} while it was open; "
                "refusing to use it (processes would no longer share one index of the -wal). "
                "Stop every process using the database, then open it again")

    def write_count(self, conn: Any) -> int:
        """SQLite's ``total_changes()`` of the connection."""
        return int(conn.total_changes())

    def presence(self) -> PresenceLock:
        """A shared ``flock`` on ``<database>.lock`` (the file is created when it joins)."""
        return PresenceLock(self._file)

    def wake_signal(self, stop: threading.Event, interval_s: float,
                    interested: Callable[[str], bool]) -> _DataVersionProbe:
        """A probe of ``PRAGMA data_version`` and the wake table's newest id (``interested``
        is not used: a probe does not see whose wake a new row is)."""
        return _DataVersionProbe(self, stop, interval_s)


class _DataVersionProbe:
    """Polls for wake rows: ``PRAGMA data_version`` on its own connection, then the newest id.

    It probes every ``interval_s`` while other connections commit and backs
    off to :data:`IDLE_FACTOR` times that while none do, so a wake is found
    at most ``IDLE_FACTOR * interval_s`` after its commit. Never a table
    scan. Hosting thread.
    """

    def __init__(self, backend: SqliteBackend, stop: threading.Event, interval_s: float) -> None:
        self._backend = backend
        self._stop = stop
        self._interval_s = interval_s
        self._period = interval_s
        self._lock = threading.Lock()
        self._conn: apsw.Connection | None = None
        self._data_version: int | None = None
        self._high_water = 0

    def wait(self, timeout_s: float) -> bool:
        """Sleep one probe period (at most ``timeout_s``), then probe."""
        if self._stop.wait(min(self._period, timeout_s)):
            return False
        with self._lock:
            problem = self._backend.storage_problem()
            if problem is not None:
                raise StorageError(f"the hosting probe stopped: {problem}")
            if self._conn is None:
                self._conn = self._backend.connect(writer=False)
            try:
                version = int(self._conn.pragma("data_version"))
                changed = version != self._data_version
                self._data_version = version
                self._period = (self._interval_s if changed
                                else min(self._period * 1.5, self._interval_s * IDLE_FACTOR))
                if not changed:
                    return False
                high = wake_high_water(self._conn)
            except apsw.Error as exc:
                raise StorageError(f"the hosting probe failed: {exc}") from exc
            if high <= self._high_water:
                return False
            self._high_water = high
            return True

    def close(self) -> None:
        """Close the probe's connection."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
