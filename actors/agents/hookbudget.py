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
import threading
from collections.abc import Callable, Iterator
from types import FrameType

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["HARD_STOP_S", "HookTimeout", "deadline", "say", "threading_main", "watchdog"]


class HookTimeout(Exception):
    """The hook's time budget ran out."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`HookTimeout` in the main thread after ``seconds`` (SIGALRM)."""
    if threading_main() and seconds > 0:
        def expire(signum: int, frame: FrameType | None) -> None:
            raise HookTimeout(f"gave up after {seconds:g} s")

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    else:
        yield


def threading_main() -> bool:
    """Whether this runs in the main thread (only it can take SIGALRM)."""
    return threading.current_thread() is threading.main_thread()


HARD_STOP_S = 1.0
"""How long past its budget a hook blocked in a call that SIGALRM cannot interrupt
(a database lock, a thread join) may run before the watchdog ends the process."""


def watchdog(budget: float, err: TextIO,
             exit_now: Callable[[int], None] | None) -> threading.Timer | None:
    """A started daemon timer that ends the process :data:`HARD_STOP_S` after the budget.

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

    timer = threading.Timer(budget + HARD_STOP_S, stop)
    timer.daemon = True
    timer.start()
    return timer


def say(err: TextIO, line: str) -> None:
    """Write ``ssa hook: <the first line of line>`` to ``err``; never raises (any thread)."""
    with contextlib.suppress(Exception):
        err.write(f"ssa hook: {line.splitlines()[0] if line else 'failed'}\n")
        err.flush()
