"""What a test may leave behind: none of our actors, no new thread."""

from __future__ import annotations

import threading
import time
from typing import Any

import pykka

from actors.engine.base import GatewayActor
from actors.engine.exit import open_gateways
from persistence import PersistenceActor

__all__ = ["LeakCheck", "running_actors"]


def running_actors() -> list[pykka.ActorRef[Any]]:
    """The actors of this library that are running now, in this process (any thread)."""

    return [ref for ref in pykka.ActorRegistry.get_all()
            if issubclass(ref.actor_class, GatewayActor | PersistenceActor)]


class LeakCheck:
    """Notes the live threads and actors now; :meth:`check` later names what was left running.

    Only what started after the check was made counts: a gateway a wider
    fixture holds (a module- or session-scoped one) is neither reported nor
    touched.

    Args:
        timeout: seconds :meth:`check` waits, in all, for new threads to end
            and leftover actors to stop (default 5).
        ignore: thread names (prefixes) that are not leaks, e.g. the event
            loop's own executor threads (``"asyncio_"``), which end with the
            loop after the test.

    Use from the thread that runs the test; :meth:`check` blocks up to
    ``timeout``.
    """

    def __init__(self, timeout: float = 5.0, *, ignore: tuple[str, ...] = ()) -> None:
        self._before = set(threading.enumerate())
        self._actors = {ref.actor_urn for ref in running_actors()}
        self._gateways = {id(gateway) for gateway in open_gateways()}
        self._timeout = timeout
        self._ignore = ignore

    def check(self) -> list[str]:
        """Stop leftover actors, join new threads; return a line per thing left running.

        An empty list means nothing leaked. A gateway opened since the check
        was made and still open is closed, and actors started since then and
        still running are stopped (so neither runs on into the next test),
        and each is reported; older ones are left alone.
        """
        deadline = time.monotonic() + self._timeout
        problems: list[str] = []
        for gateway in open_gateways():
            if id(gateway) not in self._gateways:
                problems.append("gateway left open (closed now)")
                gateway.close(timeout=max(0.1, deadline - time.monotonic()))
        for ref in running_actors():
            if ref.actor_urn in self._actors:
                continue
            problems.append(f"actor left running: {ref}")
            ref.stop(block=True, timeout=max(0.0, deadline - time.monotonic()))
        for thread in set(threading.enumerate()) - self._before:
            if thread.name.startswith(self._ignore) and self._ignore:
                continue
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                problems.append(f"thread left running: {thread.name}")
        return problems
