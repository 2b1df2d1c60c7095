"""Errors raised by the persistence layer."""

from __future__ import annotations

__all__ = ["DatabaseBusy", "SchemaError", "StorageError", "StorageUnavailable"]


class StorageError(Exception):
    """A signal-log read or write failed (SQLite error, full disk, locked file).

    Producers catch it, log it and return ``None`` (seed, "Storage and limits":
    recording is best effort). ``__cause__`` holds the APSW exception.
    """


class StorageUnavailable(StorageError):
    """The persistence actor is not running or did not answer in time."""


class SchemaError(StorageError):
    """The database file is not ours, or was written by a newer version."""


class DatabaseBusy(StorageError):
    """Formerly: another gateway owned the database. No longer raised.

    Any number of gateways, in any processes, may open one database since
    schema version 3; the name stays so code that catches it still imports.
    """
