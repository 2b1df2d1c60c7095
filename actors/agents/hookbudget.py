"""``ssa hook``'s time budget and its one line about a failure.

What lives here: :class:`HookTimeout` and :func:`deadline` (SIGALRM in the
main thread ends a run that spent its ``--timeout``), :func:`watchdog` (a
timer that ends the process :data:`HARD_STOP_S` later when a call that
SIGALRM cannot interrupt blocks), and :func:`say` (the one stderr line a
failure prints: the hook never stands in the person's way). Cold path:
standard library only.
"""

from __future__ import annotations

import contextlib
import signal
from _thread import allocate_lock, start_new_thread
from collections.abc import Callable, Iterator
from types import FrameType

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["HARD_STOP_S", "HookTimeout", "Watchdog", "deadline", "disarm", "say", "watchdog"]


class HookTimeout(Exception):
    """The hook's time budget ran out."""


_armed: list[Callable[[int, FrameType | None], None]] = []
"""The SIGALRM handlers of the :func:`deadline` blocks running now (the main thread's)."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`HookTimeout` in the main thread after ``seconds`` (SIGALRM).

    Outside the main thread (which alone can take SIGALRM) or with ``seconds``
    ``<= 0`` the block runs without a budget. Runs in the caller's thread.
    """
    if seconds <= 0:
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise HookTimeout(f"gave up after {seconds:g} s")

    try:
        previous = signal.signal(signal.SIGALRM, expire)
    except ValueError:  # not the main thread
        yield
        return
    _armed.append(expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _armed.remove(expire)
        signal.signal(signal.SIGALRM, previous)


def disarm() -> None:
    """Stop the running :func:`deadline`'s alarm, if one runs; what follows is bounded by the
    :func:`watchdog` alone.

    The hook calls it right before it prints notices: once printed, their
    acknowledgement must be written, since a budget ending in between would show
    them again at the next prompt (a second notice for one change). Another
    SIGALRM timer (not a deadline's) is left alone. Any thread; never blocks.
    """
    if _armed and signal.getsignal(signal.SIGALRM) is _armed[-1]:
        signal.setitimer(signal.ITIMER_REAL, 0)


HARD_STOP_S = 1.0
"""How long past its budget a hook blocked in a call that SIGALRM cannot interrupt
(a database lock, a thread join) may run before the watchdog ends the process."""


class Watchdog:
    """A started daemon timer thread that calls ``stop`` after ``seconds`` unless cancelled.

    Built on :mod:`_thread` (``threading`` is about 1 ms of ``ssa hook``'s start-up
    on a regular install; issue 33). Args: ``seconds`` (> 0) and ``stop``, run
    in the timer's thread when it fires.
    """

    __slots__ = ("_cancelled",)

    def __init__(self, seconds: float, stop: Callable[[], None]) -> None:
        self._cancelled = allocate_lock()
        self._cancelled.acquire()

        def wait() -> None:
            if not self._cancelled.acquire(timeout=seconds):
                stop()

        start_new_thread(wait, ())

    def cancel(self) -> None:
        """Stop the timer (once; a second call does nothing); any thread; never blocks."""
        with contextlib.suppress(RuntimeError):  # already cancelled
            self._cancelled.release()


def watchdog(budget: float, err: TextIO,
             exit_now: Callable[[int], None] | None) -> Watchdog | None:
    """A started timer that ends the process :data:`HARD_STOP_S` after the budget.

    Args:
        budget: the run's budget, in s (``0``: none, no timer).
        err: where the line about giving up goes.
        exit_now: ``(code) -> None`` ends the process (``None``: no timer; tests).

    Returns:
        The timer (``cancel()`` it when the run ends), or ``None``. Never blocks.
    """
    if exit_now is None or budget <= 0:
        return None

    def stop() -> None:
        say(err, f"gave up after {budget:g} s")
        exit_now(0)

    return Watchdog(budget + HARD_STOP_S, stop)


def say(err: TextIO, line: str) -> None:
    """Write ``ssa hook: <the first line of line>`` to ``err``; never raises (any thread)."""
    with contextlib.suppress(Exception):
        err.write(f"ssa hook: {line.splitlines()[0] if line else 'failed'}\n")
        err.flush()
