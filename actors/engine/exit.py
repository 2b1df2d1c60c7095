"""Gateways still open when the interpreter exits are closed at exit, never waited for.

A script that raises, or simply ends, without ``Gateway.close()`` must not
hang the interpreter. The gateway's threads (the runtime's dispatcher
workers, the cadence, hosting and file-notification threads) are daemons, so
the interpreter does not wait for them; and :func:`close_open_gateways`,
registered with :func:`atexit.register`, closes every gateway still open.
``atexit`` handlers run after the interpreter has joined the program's own
non-daemon threads, so a thread of the program that still uses a gateway
finishes first.

Durability: closing stops the persistence actor after the commands already
in its mailbox, so a group commit in progress is committed (and its callers
answered) before the process ends. If closing does not finish within
:data:`EXIT_CLOSE_TIMEOUT_S` per step, the daemons die with the process, as
in a crash: SQLite (and PostgreSQL) keep every committed transaction and
roll back the one that was not committed, whose caller never got an answer.
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import Protocol

__all__ = ["EXIT_CLOSE_TIMEOUT_S", "close_open_gateways", "forget", "open_gateways", "track"]

logger = logging.getLogger(__name__)

EXIT_CLOSE_TIMEOUT_S = 5.0
"""Seconds each step of an at-exit close may wait (an actor, a thread)."""


class _Closable(Protocol):
    """What this module needs of a gateway: an idempotent ``close``."""

    def close(self, timeout: float = ...) -> None:
        """Close the gateway (blocks up to ``timeout`` seconds per step)."""


_open: dict[int, _Closable] = {}
_lock = threading.Lock()


def track(gateway: _Closable) -> None:
    """Remember ``gateway`` as open, to close it at exit (any thread; non-blocking)."""
    with _lock:
        _open[id(gateway)] = gateway


def forget(gateway: _Closable) -> None:
    """Forget ``gateway`` (it was closed; idempotent; any thread; non-blocking)."""
    with _lock:
        _open.pop(id(gateway), None)


def open_gateways() -> list[_Closable]:
    """The gateways open now, oldest first (any thread; non-blocking)."""
    with _lock:
        return list(_open.values())


def close_open_gateways(timeout: float = EXIT_CLOSE_TIMEOUT_S) -> int:
    """Close every gateway still open, the most recently opened first.

    Args:
        timeout: seconds each close step may wait.

    Returns:
        How many gateways were closed. A close that fails is logged and the
        others are still closed; nothing is raised.

    Runs in the thread that calls it (at exit, the main thread); blocks while
    the gateways close.
    """
    with _lock:
        left = list(_open.values())
        _open.clear()
    for gateway in reversed(left):
        try:
            gateway.close(timeout=timeout)
        except Exception:  # at exit: log it and close the others
            logger.exception("closing a gateway left open at exit failed")
    return len(left)


atexit.register(close_open_gateways)
