"""The two connections a PostgreSQL gateway holds for its life: presence and wake signal.

What lives here: :class:`PgPresence` (a session-level shared advisory lock
that says a gateway is open, taken again after a lost connection) and
:class:`PgListener` (``LISTEN`` on the wake channel, which the trigger of
``session_wakes`` notifies; it reconnects with backoff and then has the
caller claim again, so no wake is lost). Both use only
:mod:`persistence._pg_connection`; imported through :mod:`persistence._postgres`.
"""

from __future__ import annotations

import logging
import select
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql as pgsql

from persistence._pg_connection import Backoff, Connector, close_quietly, first_line
from persistence.errors import StorageError

__all__ = ["PgListener", "PgPresence"]

logger = logging.getLogger(__name__)


class PgPresence:
    """A gateway's presence: a shared advisory lock held on a dedicated connection.

    The server drops it when the connection ends (the process died, the
    network dropped it, the server restarted or ended the session), so a
    dead gateway never looks present. A live gateway whose connection was
    dropped takes the lock again at its next write transaction
    (:meth:`refresh`; a hosting gateway writes at least every third of
    ``lease_ms``). The connection is exempt from ``idle_session_timeout``.

    Args:
        backend: the backend.
        lock: the schema's presence lock id.

    :meth:`join` runs on the opening thread, :meth:`refresh` on the writer's;
    both block on the network.
    """

    def __init__(self, backend: Connector, lock: int) -> None:
        self._backend = backend
        self._lock = lock
        self._conn: psycopg.Connection[Any] | None = None
        self._joined = False
        self._backoff = Backoff()
        self._guard = threading.Lock()  # refresh (writer) against release (closing thread)
        self.rejoins = 0
        """How often the lock was taken again after a loss (for tests)."""

    def _connect(self) -> psycopg.Connection[Any]:
        conn = self._backend.raw_connect(writer=False, keep_idle=True)
        self._conn = conn
        return conn

    def join(self) -> bool:
        """Hold the lock shared; whether nobody else held it (call inside the write lock).

        Raises:
            StorageError: the server could not be reached.
        """
        try:
            conn = self._connect()
            alone = bool(conn.execute("SELECT pg_try_advisory_lock(%s)",
                                      (self._lock,)).fetchone()[0])  # type: ignore[index]
            conn.execute("SELECT pg_advisory_lock_shared(%s)", (self._lock,))
            if alone:
                conn.execute("SELECT pg_advisory_unlock(%s)", (self._lock,))
        except psycopg.Error as exc:
            self.release()
            raise StorageError(f"cannot join {self._backend.location}: "
                               f"{first_line(str(exc))}") from exc
        self._joined = True
        return alone

    def _holds(self) -> bool:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            return False
        try:
            readable, _, _ = select.select([conn.fileno()], [], [], 0)
        except (OSError, ValueError):
            return False
        if not readable:
            return True  # an idle session: nothing arrived, so nothing ended it
        try:  # the server said something (ending the session, or a notice): ask it
            conn.execute("SELECT 1")
        except psycopg.Error:
            return False
        return True

    def refresh(self) -> None:
        """Take the lock again (shared, never waiting) if its connection was lost.

        Never raises: a server that cannot be reached is tried again at a
        later write, after the backoff. Writer thread; one ``select`` on the
        socket when the lock is held, a connection otherwise.
        """
        with self._guard:
            self._refresh()

    def _refresh(self) -> None:
        if not self._joined or self._holds() or self._backoff.remaining() > 0.0:
            return
        close_quietly(self._conn)
        self._conn = None
        try:
            conn = self._connect()
            taken = bool(conn.execute("SELECT pg_try_advisory_lock_shared(%s)",
                                      (self._lock,)).fetchone()[0])  # type: ignore[index]
        except psycopg.Error as exc:
            self._backoff.failed()
            close_quietly(self._conn)
            self._conn = None
            logger.debug("the presence lock cannot be taken again yet: %s", exc)
            return
        if not taken:  # another gateway is joining right now: try at the next write
            close_quietly(self._conn)
            self._conn = None
            return
        self._backoff.succeeded()
        self.rejoins += 1
        logger.info("the presence lock on %s was lost with its connection; taken again",
                    self._backend.location)

    def release(self) -> None:
        """Close the connection, which drops the lock (idempotent; any thread)."""
        with self._guard:
            self._joined = False
            conn, self._conn = self._conn, None
        close_quietly(conn)


class PgListener:
    """The hosting thread's wake signal: ``LISTEN`` on the wake channel.

    A wait returns ``True`` when a wake row was added for a watcher this
    process may host, or right after (re)connecting, since wakes may have
    been added while it listened nowhere: the claim that follows then
    re-sweeps everything owed. Connection failures back off from 50 ms to
    5 s. Hosting thread.

    Args:
        backend: the backend.
        stop: set when the gateway closes.
        interested: whether a wake for this watcher key may be claimed here
            (notifications for watchers this process does not host are
            ignored, so N hosting processes do not all claim every wake).
    """

    def __init__(self, backend: Connector, stop: threading.Event,
                 interested: Callable[[str], bool]) -> None:
        self._backend = backend
        self._stop = stop
        self._interested = interested
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._backoff = Backoff()
        self.reconnects = 0
        """Connections made after the first (for tests and benchmarks)."""
        self._connected_once = False

    def wait(self, timeout_s: float) -> bool:
        """Block up to ``timeout_s`` for a wake notification (see the class doc).

        Raises:
            StorageError: the server could not be reached (the caller retries).
        """
        with self._lock:
            conn = self._conn
            if conn is None or conn.closed or conn.broken:
                return self._reconnect()
        try:
            got = False
            deadline = time.monotonic() + max(0.0, timeout_s)
            while not got:
                left = deadline - time.monotonic()
                notified = list(conn.notifies(timeout=max(0.0, left), stop_after=1))
                if not notified:
                    return False
                notified += conn.notifies(timeout=0.0)  # what else is queued, without waiting
                got = any(self._interested(n.payload) for n in notified)
            return got
        except psycopg.Error as exc:
            with self._lock:
                self._drop()
            raise StorageError("the wake listener lost its connection: "
                               f"{first_line(str(exc))}") from exc

    def _reconnect(self) -> bool:
        self._drop()
        if self._stop.is_set():
            return False
        try:
            conn = self._backend.raw_connect(writer=False, keep_idle=True)
            conn.execute(pgsql.SQL("LISTEN {}").format(pgsql.Identifier(self._backend.channel)))
        except psycopg.Error as exc:
            self._stop.wait(self._backoff.failed())
            raise StorageError("the wake listener cannot connect: "
                               f"{first_line(str(exc))}") from exc
        self._conn = conn
        self._backoff.succeeded()
        if self._connected_once:
            self.reconnects += 1
            logger.info("the wake listener reconnected to %s; claiming what is owed",
                        self._backend.location)
        self._connected_once = True
        return True

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        close_quietly(conn)

    def close(self) -> None:
        """Close the listening connection (idempotent; any thread)."""
        with self._lock:
            self._drop()
