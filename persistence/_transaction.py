"""One write transaction on a backend's connection (shared by every backend).

Kept apart from :mod:`persistence._backend` so that a backend module (the
PostgreSQL one) can use it without importing the module that chooses it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Protocol

__all__ = ["Writable", "write_transaction"]


class Writable(Protocol):
    """The one method of a backend that :func:`write_transaction` needs."""

    def begin_write(self, conn: Any) -> None:
        """Start a write transaction on ``conn`` (the backend's own statement)."""


@contextlib.contextmanager
def write_transaction(backend: Writable, conn: Any) -> Iterator[None]:
    """One write transaction on ``conn``: ``begin_write``, the block, ``COMMIT``.

    A block (or a commit) that raises rolls the transaction back (a failing
    rollback is ignored, so it never masks the first error) and re-raises.

    Raises:
        Exception: the driver's error from ``begin_write`` or ``COMMIT``, or
            whatever the block raised.

    Caller's thread; blocks on the database (behind another writer's lock
    for at most the busy timeout).
    """
    backend.begin_write(conn)
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(Exception):
                conn.execute("ROLLBACK")
        raise
