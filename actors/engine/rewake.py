"""Waking a watcher again after a drain that could not acknowledge its notices.

A drain hands out only notices whose acknowledgement committed (so no two
drains, in any processes, return one notice). When the acknowledgement cannot
be written (a storage fault, another process holding the write lock past
``busy_timeout_ms``) the notices stay queued, but the wake that prompted the
turn is spent; an agent loop that drains once per wake would not be told
again. :class:`Rewakes` wakes such a watcher again after a backoff, as long as
it still has open notices, until one of its drains acknowledges.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

__all__ = ["FIRST_S", "LONGEST_S", "Rewakes"]

logger = logging.getLogger(__name__)

FIRST_S = 1.0
"""Seconds before the first wake again; doubled per further failed turn."""
LONGEST_S = 60.0
"""Longest wait between wakes again, in seconds."""


class Rewakes:
    """Backed-off wakes of watchers whose last drain kept its notices back.

    Args:
        wake: runs ``on_wake`` for a watcher (the gateway's waker path).
        still_owed: whether a watcher still has an open notice that wakes.

    Thread-safe. Each pending wake is one ``threading.Timer`` (a daemon
    thread that lives only while a storage fault lasts); :meth:`close`
    cancels them all.
    """

    def __init__(self, wake: Callable[[str], None], still_owed: Callable[[str], bool]) -> None:
        self._wake = wake
        self._still_owed = still_owed
        self._lock = threading.Lock()
        self._attempts: dict[str, int] = {}
        self._timers: dict[str, threading.Timer] = {}
        self._closed = False

    def later(self, watcher: str) -> None:
        """Schedule a wake of ``watcher`` after the next backoff step (non-blocking)."""
        with self._lock:
            if self._closed or watcher in self._timers:
                return
            attempt = self._attempts.get(watcher, 0)
            self._attempts[watcher] = attempt + 1
            delay = min(FIRST_S * 2 ** attempt, LONGEST_S)
            timer = threading.Timer(delay, self._fire, (watcher,))
            timer.daemon = True
            timer.name = "ssa-rewake"
            self._timers[watcher] = timer
        logger.info("a drain of %s kept its notices back; waking it again in %.0f s",
                    watcher, delay)
        timer.start()

    def settled(self, watcher: str) -> None:
        """A drain of ``watcher`` went through: reset its backoff (non-blocking)."""
        with self._lock:
            self._attempts.pop(watcher, None)

    def _fire(self, watcher: str) -> None:
        with self._lock:
            self._timers.pop(watcher, None)
            if self._closed:
                return
        try:
            if self._still_owed(watcher):
                self._wake(watcher)
        except Exception:  # the gateway closed meanwhile, or a read failed: drop it
            logger.debug("waking %s again failed", watcher, exc_info=True)

    def close(self, timeout: float) -> int:
        """Cancel the pending wakes and join their threads; returns how many were stuck."""
        with self._lock:
            self._closed = True
            timers = list(self._timers.values())
            self._timers.clear()
        for timer in timers:
            timer.cancel()
        stuck = 0
        for timer in timers:
            if timer is not threading.current_thread():
                timer.join(timeout)
                stuck += int(timer.is_alive())
        return stuck
