"""A psycopg connection in the APSW shape the shared transactions are written against.

What lives here: :class:`PgConnection` (``?`` placeholders, a cursor with
``get``; autocommit, the callers say ``BEGIN`` and ``COMMIT``), its
reconnection with :class:`Backoff` after a lost connection (never in the
middle of a transaction), and the classification of psycopg's errors by
SQLSTATE into storage faults, fatal corruption and the rest
(:func:`wrap_error` makes a :class:`~persistence.errors.DriverError`).

Imported only through :mod:`persistence._postgres`, which turns a missing
psycopg into :class:`~persistence.errors.BackendNotInstalled`; it imports
no other module of the backend.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import psycopg
from psycopg.pq import TransactionStatus

from persistence.errors import DriverError

__all__ = [
    "Backoff",
    "Connector",
    "PgConnection",
    "close_quietly",
    "first_line",
    "is_fatal_state",
    "is_fault_state",
    "sqlstate_of",
    "wrap_error",
]

logger = logging.getLogger(__name__)

RECONNECT_FIRST_S = 0.05
RECONNECT_LONGEST_S = 5.0
"""Backoff between connection attempts after a failure, in s (doubling)."""

_FAULT_CLASSES = ("08", "53", "57", "58", "40")
"""SQLSTATE classes that are storage faults: connection exception, insufficient
resources (disk full), operator intervention (shutdown, statement timeout),
system error (I/O), transaction rollback (serialization, deadlock)."""
_FAULT_STATES = frozenset({"25006", "55P03", "55006", "42501"})
"""Read-only transaction (a standby), lock not available (lock timeout),
object in use, insufficient privilege (a role revoked meanwhile)."""
_FATAL_STATES = frozenset({"XX001", "XX002"})
"""Data or index corrupted: the database cannot be trusted."""


class Connector(Protocol):
    """What the connections of this backend need of it (:class:`PostgresBackend`)."""

    @property
    def location(self) -> str:
        """The URL without its password, for messages."""
        ...

    @property
    def channel(self) -> str:
        """The ``NOTIFY`` channel of wake rows."""
        ...

    def raw_connect(self, *, writer: bool, keep_idle: bool = False) -> psycopg.Connection[Any]:
        """A configured psycopg connection (see ``PostgresBackend.raw_connect``)."""
        ...


class Backoff:
    """When the next connection attempt may run after failures: doubling delays, capped.

    Args:
        first_s: the delay after the first failure, in s (default
            :data:`RECONNECT_FIRST_S`).
        longest_s: the longest delay, in s (default :data:`RECONNECT_LONGEST_S`).
        monotonic: the clock, in s from any origin (default ``time.monotonic``).

    Pure but for the clock; one thread at a time; never blocks.
    """

    def __init__(self, first_s: float | None = None, longest_s: float | None = None,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._first = RECONNECT_FIRST_S if first_s is None else first_s
        self._longest = RECONNECT_LONGEST_S if longest_s is None else longest_s
        self._monotonic = monotonic
        self._delay = self._first
        self._next = 0.0

    def remaining(self) -> float:
        """Seconds until the next attempt may run (``0.0``: now)."""
        return max(0.0, self._next - self._monotonic())

    def failed(self) -> float:
        """Note a failed attempt; returns the delay before the next one, in s."""
        delay, self._delay = self._delay, min(self._delay * 2, self._longest)
        self._next = self._monotonic() + delay
        return delay

    def succeeded(self) -> None:
        """Note a successful attempt: the next failure waits ``first_s`` again."""
        self._delay = self._first
        self._next = 0.0


def sqlstate_of(exc: BaseException) -> str | None:
    """The SQLSTATE of psycopg's error ``exc`` (raw or as a :class:`DriverError`), else ``None``."""
    if isinstance(exc, DriverError):
        return exc.sqlstate
    if isinstance(exc, psycopg.Error):
        return exc.sqlstate
    return None


def is_fault_state(state: str | None) -> bool:
    """Whether an error of SQLSTATE ``state`` is a storage fault (pure).

    ``None`` (no SQLSTATE: the connection was lost or refused) is one.
    """
    return (state is None or state in _FAULT_STATES or state in _FATAL_STATES
            or state.startswith(_FAULT_CLASSES))


def is_fatal_state(state: str | None) -> bool:
    """Whether SQLSTATE ``state`` reports corrupted data or index (pure)."""
    return state in _FATAL_STATES


_HINTS = {"25006": " (the server is read-only: a standby? Open the gateway on the primary)"}
"""What to add to the server's message for SQLSTATEs whose cause is not plain."""


def first_line(text: str) -> str:
    """libpq's messages carry ``LINE n:`` context and hints on further lines."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def wrap_error(exc: psycopg.Error) -> DriverError:
    """psycopg's error as a :class:`DriverError`: its first line, a hint, its SQLSTATE (pure)."""
    error = DriverError(f"{type(exc).__name__}: {first_line(str(exc))}"
                        f"{_HINTS.get(exc.sqlstate or '', '')}", exc.sqlstate)
    error.__cause__ = exc
    return error


_TRANSLATED: dict[str, str] = {}


def _translate(statement: str) -> str:
    """``?`` placeholders to psycopg's ``%s`` (and a literal ``%`` doubled); cached."""
    done = _TRANSLATED.get(statement)
    if done is None:
        done = statement.replace("%", "%%").replace("?", "%s")
        if len(_TRANSLATED) < 4096:
            _TRANSLATED[statement] = done
    return done


class _Rows:
    """The result of :meth:`PgConnection.execute`, shaped like an APSW cursor."""

    __slots__ = ("_cursor",)

    def __init__(self, cursor: psycopg.Cursor[Any] | None) -> None:
        self._cursor = cursor

    def _has_rows(self) -> bool:
        return self._cursor is not None and self._cursor.description is not None

    @property
    def get(self) -> Any:
        """APSW's ``get``: ``None``, the one value, the one row, or a list of rows."""
        if not self._has_rows():
            return None
        rows = self.fetchall()
        if not rows:
            return None
        if len(rows) == 1:
            row = rows[0]
            return row[0] if len(row) == 1 else row
        return [r[0] if len(r) == 1 else r for r in rows]

    def fetchone(self) -> Any:
        """The next row, or ``None``."""
        return self._cursor.fetchone() if self._cursor is not None and self._has_rows() else None

    def fetchall(self) -> list[Any]:
        """The remaining rows."""
        return self._cursor.fetchall() if self._cursor is not None and self._has_rows() else []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class PgConnection:
    """A psycopg connection with the APSW shape the shared transactions use.

    The connection runs in autocommit mode and the callers issue ``BEGIN``,
    ``SAVEPOINT``, ``COMMIT`` and ``ROLLBACK`` themselves, as on SQLite.
    When the server connection was lost it is re-opened (with backoff) at
    the next statement issued outside a transaction, never in the middle of
    one. Driver errors are raised as :class:`~persistence.errors.DriverError`.

    Args:
        backend: the backend that opens the server connection.
        writer: open for writing (else every transaction is a read-only
            ``REPEATABLE READ`` snapshot).

    One thread at a time; every method blocks on the network.

    Raises:
        DriverError: the first connection failed.
    """

    def __init__(self, backend: Connector, *, writer: bool) -> None:
        self._backend = backend
        self._writer = writer
        self._conn: psycopg.Connection[Any] | None = None
        self._changes = 0
        self._total = 0
        self._lost = False
        self._backoff = Backoff()
        self._connect()

    def _connect(self) -> psycopg.Connection[Any]:
        wait = self._backoff.remaining()
        if wait > 0.0:
            raise DriverError(
                f"the PostgreSQL server is unreachable; reconnecting in {wait:.2f}s", None)
        try:
            conn = self._backend.raw_connect(writer=self._writer)
        except psycopg.Error as exc:
            self._backoff.failed()
            raise wrap_error(exc) from exc
        self._backoff.succeeded()
        self._conn = conn
        return conn

    def _live(self) -> psycopg.Connection[Any]:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            if self._lost:
                raise DriverError("the PostgreSQL connection was lost in this transaction; "
                                  "roll it back", "08006")
            if conn is not None:
                logger.info("reconnecting to PostgreSQL at %s", self._backend.location)
                self._conn = None
            conn = self._connect()
        return conn

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (or was lost with the connection, until rolled back)."""
        if self._lost:
            return True
        conn = self._conn
        return (conn is not None and not conn.broken
                and conn.info.transaction_status != TransactionStatus.IDLE)

    def _run(self, query: Any, params: Sequence[Any] | None, *, prepare: bool | None
             ) -> psycopg.Cursor[Any]:
        conn = self._live()
        fresh = not self.in_transaction
        try:
            return conn.execute(query, params, prepare=prepare)
        except psycopg.Error as exc:
            if not conn.broken:
                raise wrap_error(exc) from exc
            if not fresh:
                self._lost = True  # the server rolled it back; only ROLLBACK clears this
                raise wrap_error(exc) from exc
            # The connection died before this statement, which opens a
            # transaction or runs on its own (a read): nothing of it ran, so
            # it is safe to say it again once, on a new connection.
            logger.info("the PostgreSQL connection was lost (%s); reconnecting", exc)
        try:
            return self._live().execute(query, params, prepare=prepare)
        except psycopg.Error as exc:
            raise wrap_error(exc) from exc

    def execute(self, statement: str, params: Sequence[Any] = (), /) -> _Rows:
        """Run one statement with ``?`` placeholders; returns its rows.

        Raises:
            DriverError: the server refused it or the connection failed.
        """
        if self._lost and statement == "ROLLBACK":
            self._lost = False  # the transaction died with the connection already
            self.close()
            return _Rows(None)
        cursor = self._run(_translate(statement), params, prepare=None)
        count = cursor.rowcount
        self._changes = count if count > 0 else 0
        self._total += self._changes
        return _Rows(cursor)

    def script(self, statements: str) -> None:
        """Run several ``;``-separated statements without parameters (one round trip).

        Raises:
            DriverError: the server refused one or the connection failed.
        """
        self._run(statements.encode(), None, prepare=False)

    def changes(self) -> int:
        """Rows the last statement inserted, updated or deleted."""
        return self._changes

    def total_changes(self) -> int:
        """Rows changed through this connection since it was made."""
        return self._total

    def close(self) -> None:
        """Close the server connection (idempotent)."""
        self._lost = False
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def close_quietly(conn: psycopg.Connection[Any] | None) -> None:
    """Close a connection of our own; a failure is only logged (it may be dead already)."""
    if conn is not None:
        try:
            conn.close()
        except psycopg.Error:
            logger.debug("closing a PostgreSQL connection failed", exc_info=True)
