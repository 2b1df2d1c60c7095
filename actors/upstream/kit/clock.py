"""``ManualClock``: an epoch-millisecond clock a test moves by hand."""

from __future__ import annotations

import threading

__all__ = ["DEFAULT_START_MS", "ManualClock"]

DEFAULT_START_MS = 1_767_225_600_000
"""Where a :class:`ManualClock` starts unless told: 2026-01-01T00:00:00Z."""


MAX_MS = 1 << 53
"""Exclusive upper bound of the times a gateway accepts from a clock (about year 287,000)."""


def _ms(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int of milliseconds, not {type(value).__name__}")
    return value


def _epoch(value: int, name: str) -> int:
    """``value`` if the gateway would take it as epoch ms, else ``ValueError``."""
    if not 0 <= value < MAX_MS:
        raise ValueError(f"{name} must be epoch milliseconds from 0 to 2**53 - 1, not {value}"
                         " (the gateway would ignore the clock)")
    return value


class ManualClock:
    """A clock of epoch milliseconds that only moves when the test moves it.

    Pass it as ``clock=`` to :meth:`actors.Gateway.open`: every timestamp the
    gateway writes (events, cursors, leases, pruning ages, the cadence's
    intervals) is read from it. Calling the clock returns the current time.

    Args:
        start_ms: the initial time, epoch milliseconds (default
            :data:`DEFAULT_START_MS`).

    Raises:
        TypeError: ``start_ms`` is not an ``int``.
        ValueError: ``start_ms`` is not epoch milliseconds the gateway
            accepts (0 to 2**53 - 1).

    Thread-safe: the gateway's threads read it while the test moves it; no
    method blocks beyond a short lock.
    """

    def __init__(self, start_ms: int = DEFAULT_START_MS) -> None:
        self._now = _epoch(_ms(start_ms, "start_ms"), "start_ms")
        self._lock = threading.Lock()

    def __call__(self) -> int:
        """The current time in epoch milliseconds (any thread; non-blocking)."""
        with self._lock:
            return self._now

    @property
    def now(self) -> int:
        """The current time in epoch milliseconds."""
        return self()

    def advance(self, ms: int) -> int:
        """Move the clock forward by ``ms`` milliseconds; return the new time.

        Raises:
            TypeError: ``ms`` is not an ``int``.
            ValueError: ``ms`` is negative (use :meth:`set` to go back), or the
                new time is past 2**53 - 1.
        """
        step = _ms(ms, "ms")
        if step < 0:
            raise ValueError("advance(ms) takes ms >= 0; use set() to move the clock back")
        with self._lock:
            self._now = _epoch(self._now + step, "the advanced time")
            return self._now

    def set(self, ms: int) -> None:
        """Set the clock to ``ms`` epoch milliseconds (backwards too: a wall-clock step).

        Raises:
            TypeError: ``ms`` is not an ``int``.
            ValueError: ``ms`` is not epoch milliseconds (0 to 2**53 - 1).
        """
        value = _epoch(_ms(ms, "ms"), "ms")
        with self._lock:
            self._now = value

    def __repr__(self) -> str:
        return f"ManualClock({self()})"
