"""A small pool of read-only connections to the signal log for gateway threads."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from persistence._backend import Backend
from persistence._reads import text_faults
from persistence.errors import StorageError, StorageUnavailable

__all__ = ["ReadPool"]

logger = logging.getLogger(__name__)


class ReadPool:
    """Read-only connections handed out to one thread at a time.

    A connection must not be used by two threads at once (style anchors
    §8 #17), so each reader checks one out exclusively; readers run beside
    the writers (SQLite's WAL, PostgreSQL's MVCC), each multi-statement read
    in its own snapshot.

    Args:
        backend: the signal log's backend (it opens the connections).
        size: the most connections ever open at once.

    Thread-safe; :meth:`connection` blocks while every connection is in use.
    """

    def __init__(self, backend: Backend, *, size: int = 4) -> None:
        self._backend = backend
        self._size = size
        self._idle: queue.LifoQueue[Any] = queue.LifoQueue()
        self._lock = threading.Lock()
        self._opened = 0
        self._closed = False

    def is_fault(self, exc: BaseException) -> bool:
        """Whether ``exc``, raised by a read, is a storage fault (retry later; pure)."""
        return isinstance(exc, StorageError) or self._backend.is_fault(exc)

    @contextmanager
    def connection(self, timeout: float = 10.0) -> Iterator[Any]:
        """Check a connection out for the ``with`` block.

        Args:
            timeout: seconds to wait for a free connection.

        Raises:
            StorageUnavailable: the pool is closed or none became free in time.
            StorageError: a new connection could not be opened, or the backend's
                files must not be touched (``Backend.storage_problem``); raised
                in the block: a stored text value that is not UTF-8
                (:func:`~persistence._reads.text_faults`).
        """
        problem = self._backend.storage_problem()  # e.g. a -shm cut short (SQLite: SIGBUS)
        if problem is not None:
            raise StorageError(problem)
        conn = self._checkout(timeout)
        try:
            with text_faults(self._backend.location):  # a stored text that is not UTF-8
                yield conn
        finally:
            self._checkin(conn)

    def _checkout(self, timeout: float) -> Any:
        with self._lock:
            if self._closed:
                raise StorageUnavailable("the read pool is closed")
            try:
                return self._idle.get_nowait()
            except queue.Empty:
                pass
            grow = self._opened < self._size
            if grow:
                self._opened += 1  # the slot is ours; connect outside the lock
        if grow:
            try:
                return self._backend.connect(writer=False)
            except StorageError as exc:
                with self._lock:
                    self._opened -= 1
                raise StorageError(f"cannot open a read connection: {exc}") from (
                    exc.__cause__ or exc)  # the driver's error, as a fault check expects
        try:
            return self._idle.get(timeout=timeout)
        except queue.Empty:
            raise StorageUnavailable("no read connection became free in time") from None

    def _checkin(self, conn: Any) -> None:
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


def _close_quietly(conn: Any) -> None:
    try:
        conn.close()  # may checkpoint; a storage fault must not break close()
    except Exception as exc:
        logger.warning("closing a read connection failed: %s", exc)
