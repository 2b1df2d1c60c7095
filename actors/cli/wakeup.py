"""A wake-up a signal handler may give: the watch loop's ``attention``.

``threading.Event.set`` takes the event's lock; a signal handler runs in the
main thread between two bytecodes, so when the main thread was inside
``Event.wait`` or ``Event.clear`` holding that lock, a handler calling
``set`` waits for itself for ever. :class:`Wakeup` is built on
``queue.SimpleQueue``, whose ``put`` CPython documents as reentrant (it may
interrupt a ``get`` or ``put`` of the same thread), so :meth:`Wakeup.set` is
safe from a handler, from any thread, and from the waiting thread itself.

:class:`StopFlag` is the loop's ``stop``: a handler interrupted by the next
signal runs again inside itself, so nothing it calls may take a lock, not
even one it took itself a bytecode earlier (a storm of mixed stop signals hung
``ssa watch`` in ``threading.Event.set`` 3 times in 9).
"""

from __future__ import annotations

import queue

__all__ = ["StopFlag", "Wakeup"]


class Wakeup:
    """Wakes one waiting thread; any number of :meth:`set` calls before it wakes are one.

    Thread-safe and signal-handler-safe (see the module docstring).
    """

    def __init__(self) -> None:
        self._pokes: queue.SimpleQueue[None] = queue.SimpleQueue()

    def set(self) -> None:
        """Wake the waiter (or the next :meth:`wait`). Any thread or a signal handler;
        never blocks."""
        self._pokes.put(None)

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a :meth:`set`; consume every pending one.

        Args:
            timeout: seconds, ``>= 0``.

        Returns:
            ``True`` when woken (by one or more ``set`` calls), ``False`` on timeout.
            Blocks the calling thread (the watch loop's, normally the main thread).
        """
        try:
            self._pokes.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return False
        while True:
            try:
                self._pokes.get_nowait()
            except queue.Empty:
                return True


class StopFlag:
    """A one-way flag a signal handler may raise: :meth:`set` is one attribute store,
    atomic under the GIL and lock-free, so it is safe even from a handler that
    interrupted itself. Nobody can wait on it; pair it with a :class:`Wakeup`.
    """

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        """Raise the flag (idempotent). Any thread or a signal handler; never blocks."""
        self._set = True

    def is_set(self) -> bool:
        """Whether :meth:`set` was called. Any thread; never blocks."""
        return self._set
