"""The one interface behind which the two storage backends differ.

Everything else is shared: the transaction functions (:mod:`persistence._writes`,
:mod:`persistence._leases`, :mod:`persistence._upstream`, :mod:`persistence._prune`),
the read queries, the cursor math, the persistence actor and its group
commit. They are plain functions over a connection that behaves like an
APSW connection (``execute(sql, params)`` with ``?`` placeholders, returning
a cursor with ``get``, ``fetchone``, ``fetchall`` and iteration;
``changes()``; ``in_transaction``); the PostgreSQL backend hands out a thin
adapter with that shape. What a backend decides is listed in
:class:`Backend`.

:func:`open_backend` picks the backend from the location the user gave:
a ``postgresql://`` (or ``postgres://``) URL selects PostgreSQL, anything
else is a SQLite file path.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import parse_qsl, urlsplit

from persistence._sqlite import SqliteBackend
from persistence._transaction import write_transaction
from persistence.errors import InvalidLocation

__all__ = [
    "Backend",
    "Presence",
    "WakeSignal",
    "is_postgres_url",
    "is_url",
    "open_backend",
    "url_problem",
    "write_transaction",
]

_URL = re.compile(r"\s*(?:[A-Za-z][A-Za-z0-9+.-]*://|postgres(?:ql)?\s*(?:[:;]|//))",
                  re.IGNORECASE)
"""A URL, or what was meant as a PostgreSQL one (``postgresql:/h/db``, ``postgresql//h``)."""
_CONNINFO = re.compile(r"\s*(?:[A-Za-z_]+\s*=|[\w.-]+@[\w.-]+:\d+(?:/|$))")
"""A libpq ``key=value`` string, or ``user@host:port/db``: meant for a server."""
_POSTGRES = ("postgresql://", "postgres://")


def is_postgres_url(location: str) -> bool:
    """Whether ``location`` names the PostgreSQL backend (pure)."""
    return location.lower().startswith(_POSTGRES)


def is_url(location: str) -> bool:
    """Whether ``location`` is a URL rather than a file path (pure).

    ``scheme://...``; anything that starts with ``postgres`` or
    ``postgresql`` and then ``:``, ``;`` or ``//`` (also after spaces); a
    libpq ``key=value`` string; ``user@host:port``. A mistyped URL must be
    refused, not taken for a file name.
    """
    return _URL.match(location) is not None or _CONNINFO.match(location) is not None


class Presence(Protocol):
    """Which gateways have the signal log open, across processes and hosts."""

    def join(self) -> bool:
        """Mark this gateway present; returns whether no other gateway is.

        Called inside the write transaction of the opening gateway (two
        openers never test at once). Caller's thread; blocks on the
        backend (SQLite: one lock on a file; PostgreSQL: one connection and
        two statements, at most ``connect_timeout`` plus ``lock_timeout``).

        Raises:
            DatabaseBusy: a gateway of an older release holds the database alone.
            StorageError: the backend could not be asked.
            OSError: SQLite's lock file cannot be created (it is created here,
                once the database has been checked, so a failed open leaves none).
        """

    def release(self) -> None:
        """Stop being present (idempotent; any thread; closes a file or a connection)."""


class WakeSignal(Protocol):
    """Tells the hosting thread that a wake may have been addressed to this process."""

    def wait(self, timeout_s: float) -> bool:
        """Block up to ``timeout_s`` s (less when the gateway stops); whether to claim now.

        ``True`` when another connection may have added a wake row, or when
        the signal cannot know (it just reconnected): the caller then claims,
        which re-sweeps everything owed to its watchers. Hosting thread.

        Raises:
            StorageError: the backend could not be asked (the caller retries).
        """

    def close(self) -> None:
        """Close the signal's connection (idempotent; any thread)."""


class Backend(Protocol):
    """What differs between the SQLite and the PostgreSQL signal log.

    One instance per open gateway, shared by its threads (thread-safe).
    """

    name: str
    """``"sqlite"`` or ``"postgresql"``."""
    location: str
    """Where the log lives, for messages: the file, or the URL without a password."""
    path: Path | None
    """The SQLite file (``None`` for PostgreSQL)."""
    shares_hosts: bool
    """Whether gateways on other machines may share the log (PostgreSQL)."""

    def prepare(self) -> None:
        """Create what must exist before the first connection (SQLite: directories, file).

        Caller's thread; blocks on the file system.

        Raises:
            InvalidLocation: a SQLite path the location rule refuses
                (:mod:`persistence.locations`); nothing was created.
            OSError: a directory or the file cannot be created.
        """

    def connect(self, *, writer: bool, migrate: bool = False) -> Any:
        """Open one connection shaped like an APSW connection (see the module doc).

        Args:
            writer: the connection writes (else it is read-only).
            migrate: create or upgrade the schema first (with ``writer``).

        Returns:
            The open connection, for one thread at a time.

        Raises:
            SchemaError: the database belongs to something else or is newer.
            StorageError: it cannot be opened.

        Caller's thread; blocks on disk or network.
        """

    def begin_write(self, conn: Any) -> None:
        """Open a write transaction that excludes every other writer of the log until it ends.

        SQLite: ``BEGIN IMMEDIATE`` (the database's write lock). PostgreSQL:
        ``BEGIN`` and a transaction-scoped advisory lock of the schema, so
        the shared transactions run in the same total order as on SQLite.

        Raises:
            Exception: the driver's error (classify it with :meth:`is_fault`).
        """

    def is_driver_error(self, exc: BaseException) -> bool:
        """Whether ``exc`` came from the database (not from our code; pure)."""

    def is_fault(self, exc: BaseException) -> bool:
        """Whether ``exc`` is a storage fault (full disk, lost server, lock timeout; pure)."""

    def is_fatal(self, exc: BaseException) -> bool:
        """Whether after ``exc`` the database cannot be trusted (corrupt; pure)."""

    def storage_problem(self) -> str | None:
        """Why writing must not be tried now (SQLite: the file was removed), or ``None``.

        Writer thread; blocks on one ``stat`` at most.
        """

    def write_count(self, conn: Any) -> int:
        """A counter that grows whenever ``conn`` writes (pure read of the connection)."""

    def presence(self) -> Presence:
        """A new, not yet joined presence marker for one gateway (creates nothing yet).

        Raises:
            StorageError: it cannot be created.
        """

    def wake_signal(self, stop: threading.Event, interval_s: float,
                    interested: Callable[[str], bool]) -> WakeSignal:
        """A new wake signal for the hosting thread.

        Args:
            stop: set when the gateway closes (a wait returns soon after).
            interval_s: the SQLite probe period (PostgreSQL is pushed).
            interested: ``(watcher_key) -> bool``, whether this process hosts
                the watcher (a signal that knows whose wake arrived skips
                the others).
        """


def url_has_password(location: str) -> bool:
    """Whether a database URL carries a secret: a password (in its user part or as
    ``?password=``) or an SSL key passphrase (``?sslpassword=``); pure.

    A location that is not a URL, or that cannot be split as one, has none.
    """
    if not is_url(location):
        return False
    try:
        parts = urlsplit(location)
        in_user = parts.password is not None
    except ValueError:
        return False
    return in_user or any(key.strip().lower() in SECRET_PARAMETERS
                          for key, _ in parse_qsl(parts.query, keep_blank_values=True))


def redact_url(location: str) -> str:
    """``location`` with every secret replaced by ``***``: the password of its user part and
    the values of :data:`SECRET_PARAMETERS` in its query (pure). A location that is no URL
    comes back as given; a URL that cannot be split as one, as ``<a database URL>``."""
    if not is_url(location):
        return location
    try:
        parts = urlsplit(location)
        password = parts.password
    except ValueError:
        return "<a database URL>"
    netloc = parts.netloc
    if password is not None:
        user, _, host = netloc.rpartition("@")
        name = user.split(":", 1)[0]
        netloc = f"{name}:***@{host}"
    query = "&".join(
        f"{key}=***" if key.strip().lower() in SECRET_PARAMETERS else f"{key}={value}"
        for key, value in (pair.partition("=")[::2] for pair in parts.query.split("&") if pair))
    return parts._replace(netloc=netloc, query=query).geturl()


SECRET_PARAMETERS = frozenset({"password", "sslpassword"})
"""libpq connection parameters whose value is a secret: the password, and the
passphrase of the client's SSL key (both refused in a URL that ends up in command lines)."""


def url_problem(location: str) -> str | None:
    """Why ``location`` (a URL, see :func:`is_url`) names no backend, or ``None`` (pure)."""
    if location != location.strip():
        return "the database URL must not start or end with spaces"
    if is_postgres_url(location):
        return None
    if _CONNINFO.match(location) is not None:
        return ("give the PostgreSQL database as a URL: postgresql://user@host:port/db "
                "(not a key=value string or user@host:port)")
    if location.lower().startswith("postgres"):
        return "a PostgreSQL URL starts with postgresql:// (as in postgresql://user@host/db)"
    scheme = location.split(":", 1)[0]
    return ("the database must be a SQLite file path or a postgresql:// URL, "
            f"not a {scheme}:// URL")


def open_backend(location: str | Path, *, synchronous: Literal["FULL", "NORMAL"] = "FULL",
                 busy_timeout_ms: int = 5000, vfs: str | None = None) -> Backend:
    """The backend for ``location``: a ``postgresql://`` URL, or a SQLite file path.

    Args:
        location: the URL or the path.
        synchronous: SQLite durability.
        busy_timeout_ms: how long a writer waits for another's lock, in ms
            (PostgreSQL: for the log's write lock, as ``lock_timeout``).
        vfs: SQLite VFS name (fault-injection tests).

    Raises:
        InvalidLocation: another URL scheme, or a bad PostgreSQL URL.
        BackendNotInstalled: a PostgreSQL URL without the ``postgres`` extra.

    Pure apart from importing the driver; never connects.
    """
    if isinstance(location, str) and is_url(location):
        problem = url_problem(location)
        if problem is not None:
            raise InvalidLocation(problem)
        # Imported here: psycopg is an optional extra (BackendNotInstalled without it).
        from persistence._postgres import PostgresBackend  # noqa: PLC0415

        return PostgresBackend(location, busy_timeout_ms=busy_timeout_ms)
    return SqliteBackend(Path(location), synchronous=synchronous,
                         busy_timeout_ms=busy_timeout_ms, vfs=vfs)
