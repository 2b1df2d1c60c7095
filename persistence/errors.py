"""Errors raised by the persistence layer."""

from __future__ import annotations

__all__ = [
    "BackendNotInstalled",
    "DatabaseBusy",
    "DatabaseCorrupt",
    "DriverError",
    "InvalidLocation",
    "SchemaError",
    "StorageError",
    "StorageUnavailable",
]


class StorageError(Exception):
    """A signal-log read or write failed (a database error, full disk, lock, lost server).

    Producers catch it, log it and return ``None`` (seed, "Storage and limits":
    recording is best effort). ``__cause__`` holds the driver's exception.
    """


class StorageUnavailable(StorageError):
    """The persistence actor is not running or did not answer in time."""


class SchemaError(StorageError):
    """The database file (or PostgreSQL schema) is not ours, or is of a newer version."""


class DatabaseCorrupt(StorageError):
    """The SQLite file is damaged: its check at open failed, or SQLite met corruption.

    Nothing more is written into it (a gateway that meets corruption while
    running stops writing and closes). The message names the file and how to
    recover (:func:`recovery_hint`): the file holds metadata only, never
    message text, so moving it aside and starting a new one loses only the
    signal log's history.
    """


def recovery_hint(location: str) -> str:
    """What a person does about a corrupt database at ``location`` (one sentence; pure)."""
    return (f"it holds no message text: move it aside (mv {location} {location}.corrupt, "
            f"with its -wal and -shm files) and the next start creates a new one; "
            f"sqlite3 {location}.corrupt .recover can salvage its events for inspection")


class DatabaseBusy(StorageError):
    """A gateway of an older release (one owner per database) holds the database.

    Any number of gateways of this release, in any processes, may open one
    database; only a running pre-schema-3 gateway, which locks it
    exclusively, keeps them out.
    """


class DriverError(StorageError):
    """A PostgreSQL statement failed; ``__cause__`` is psycopg's error.

    Attributes:
        sqlstate: the five-character SQLSTATE (``None`` when the connection
            failed before the server answered).
    """

    def __init__(self, message: str, sqlstate: str | None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class InvalidLocation(ValueError):
    """The database location is neither a SQLite file path nor a valid ``postgresql://`` URL."""


class BackendNotInstalled(ImportError):
    """A ``postgresql://`` URL was given but the PostgreSQL extra is not installed.

    Install it with ``python -m pip install '.[postgres]'`` in the checkout.
    """
