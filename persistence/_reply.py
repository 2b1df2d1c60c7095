"""The reply slot of a write request, which knows when its requester gave up."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pykka

__all__ = ["PENDING", "Reply"]

PENDING: Any = object()
"""What :meth:`Reply.abandon` returns when no result had arrived yet."""


class Reply:
    """A one-shot result a requester waits on, with late delivery after a timeout.

    The persistence actor always completes a command it took, even after its
    requester stopped waiting; without this, a change committed after a
    timeout would never have its notices published. A requester that gives
    up calls :meth:`abandon` with a non-blocking ``on_late`` callback, which
    receives the value if it still arrives. Same interface as
    ``pykka.ThreadingFuture`` for ``get``/``set``/``set_exception``.

    Thread-safe. ``on_late`` runs in the thread that sets the value (the
    persistence actor's): it must only hand the value on (e.g. ``tell``).
    """

    def __init__(self) -> None:
        # A held lock is the cheapest cross-thread signal CPython has: the
        # waiter blocks in acquire() until set() releases it.
        self._signal = threading.Lock()
        self._signal.acquire()
        self._lock = threading.Lock()
        self._value: Any = PENDING
        self._error: BaseException | None = None
        self._on_late: Callable[[Any], None] | None = None
        self._done = False

    def _release(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
        self._signal.release()

    def set(self, value: Any = None) -> None:
        """Deliver the result (to the waiter, or to ``on_late`` if it gave up)."""
        with self._lock:
            self._value = value
            late = self._on_late
        self._release()
        if late is not None:
            late(value)

    def set_exception(self, exc_info: Any = None) -> None:
        """Deliver a failure: ``(type, exception, traceback)`` as Pykka's futures take."""
        with self._lock:
            self._error = exc_info[1] if exc_info else RuntimeError("unknown failure")
        self._release()

    def get(self, *, timeout: float | None = None) -> Any:
        """Wait for the result (caller's thread; blocks up to ``timeout`` seconds).

        Raises:
            pykka.Timeout: nothing arrived within ``timeout`` seconds.
            BaseException: the failure that was delivered.
        """
        if not self._signal.acquire(timeout=-1 if timeout is None else max(0.0, timeout)):
            raise pykka.Timeout(f"no result within {timeout}s")
        self._signal.release()  # later get() calls return at once
        if self._error is not None:
            raise self._error
        return self._value

    def abandon(self, on_late: Callable[[Any], None]) -> Any:
        """Stop waiting; a value that arrives later goes to ``on_late``.

        Returns:
            The value if it arrived meanwhile (``on_late`` is then not
            called), else :data:`PENDING`.
        """
        with self._lock:
            if self._value is not PENDING:
                return self._value
            self._on_late = on_late
            return PENDING
