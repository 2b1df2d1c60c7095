"""A small pool of read-only SQLite connections for gateway threads."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import apsw

from persistence._schema import open_connection
from persistence.errors import StorageError, StorageUnavailable

__all__ = ["ReadPool"]

logger = logging.getLogger(__name__)


class ReadPool:
    """Read-only connections handed out to one thread at a time.

    APSW connections must not be used by two threads at once (style anchors
    §8 #17), so each reader checks one out exclusively; WAL lets readers run
    beside the single writer, each read in its own snapshot.

    Args:
        path: the database file.
        size: the most connections ever open at once.
        busy_timeout_ms: SQLite busy timeout for readers, in ms.
        vfs: SQLite VFS name, or ``None`` for the default.

    Thread-safe; :meth:`connection` blocks while every connection is in use.
    """

    def __init__(self, path: str, *, size: int = 4, busy_timeout_ms: int = 5000,
                 vfs: str | None = None) -> None:
        self._path = path
        self._vfs = vfs
        self._size = size
        self._busy_timeout_ms = busy_timeout_ms
        self._idle: queue.LifoQueue[apsw.Connection] = queue.LifoQueue()
        self._lock = threading.Lock()
        self._opened = 0
        self._closed = False

    @contextmanager
    def connection(self, timeout: float = 10.0) -> Iterator[apsw.Connection]:
        """Check a connection out for the ``with`` block.

        Args:
            timeout: seconds to wait for a free connection.

        Raises:
            StorageUnavailable: the pool is closed or none became free in time.
            StorageError: a new connection could not be opened.
        """
        conn = self._checkout(timeout)
        try:
            yield conn
        finally:
            self._checkin(conn)

    def _checkout(self, timeout: float) -> apsw.Connection:
        with self._lock:
            if self._closed:
                raise StorageUnavailable("the read pool is closed")
            try:
                return self._idle.get_nowait()
            except queue.Empty:
                pass
            if self._opened < self._size:
                self._opened += 1
                try:
                    return open_connection(self._path, busy_timeout_ms=self._busy_timeout_ms,
                                           vfs=self._vfs)
                except apsw.Error as exc:
                    self._opened -= 1
                    raise StorageError(f"cannot open a read connection: {exc}") from exc
        try:
            return self._idle.get(timeout=timeout)
        except queue.Empty:
            raise StorageUnavailable("no read connection became free in time") from None

    def _checkin(self, conn: apsw.Connection) -> None:
        with self._lock:
            if not self._closed:
                self._idle.put(conn)
                return
            self._opened -= 1
        _close_quietly(conn)

    def close(self) -> None:
        """Close idle connections now and busy ones when they are checked in."""
        with self._lock:
            self._closed = True
            while True:
                try:
                    conn = self._idle.get_nowait()
                except queue.Empty:
                    break
                self._opened -= 1
                _close_quietly(conn)


def _close_quietly(conn: apsw.Connection) -> None:
    try:
        conn.close()  # may checkpoint; a storage fault must not break close()
    except apsw.Error as exc:
        logger.warning("closing a read connection failed: %s", exc)
