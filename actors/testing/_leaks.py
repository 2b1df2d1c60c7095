"""What a test may leave behind: none of our actors, no new thread."""

from __future__ import annotations

import threading
from typing import Any

import pykka

__all__ = ["LeakCheck", "running_actors"]


def running_actors() -> list[pykka.ActorRef[Any]]:
    """The actors of this library that are running now, in this process (any thread)."""
    from actors._base import GatewayActor  # noqa: PLC0415
    from persistence import PersistenceActor  # noqa: PLC0415

    return [ref for ref in pykka.ActorRegistry.get_all()
            if issubclass(ref.actor_class, GatewayActor | PersistenceActor)]


class LeakCheck:
    """Notes the live threads now; :meth:`check` later names what was left running.

    Args:
        timeout: seconds :meth:`check` waits for each new thread to end and
            each leftover actor to stop (default 5).

    Use from the thread that runs the test; :meth:`check` blocks up to
    ``timeout`` per leftover thread or actor.
    """

    def __init__(self, timeout: float = 5.0) -> None:
        self._before = set(threading.enumerate())
        self._timeout = timeout

    def check(self) -> list[str]:
        """Stop leftover actors, join new threads; return a line per thing left running.

        An empty list means nothing leaked. Leftover actors are stopped (so a
        leak never spreads to the next test) and still reported.
        """
        problems: list[str] = []
        for ref in running_actors():
            problems.append(f"actor left running: {ref}")
            ref.stop(block=True, timeout=self._timeout)
        for thread in set(threading.enumerate()) - self._before:
            thread.join(timeout=self._timeout)
            if thread.is_alive():
                problems.append(f"thread left running: {thread.name}")
        return problems
