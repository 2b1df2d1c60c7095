"""The cursor actor: one per watcher/target pair, registering its watch."""

from __future__ import annotations

import logging
from typing import Any

import pykka

from actors.engine.base import GatewayActor
from actors.engine.messages import Register
from persistence import NoticeDescriptor, RegisterOutcome, RegisterWatch, StorageError, submit
from persistence.runtime import Dispatcher

__all__ = ["CursorActor", "should_wake"]

logger = logging.getLogger(__name__)

def should_wake(descriptor: NoticeDescriptor) -> bool:
    """Whether this process runs the wake of ``descriptor`` (see ``NoticeDescriptor.wake``).

    The transaction that opened the notice decided it: ambient (queue-only)
    notices and nested ``subagent:`` watchers never wake, and a watcher
    hosted by a live other process is woken there.
    """
    return descriptor.pending and descriptor.wake


class CursorActor(GatewayActor):
    """One watcher/target pair: registers the watch.

    The durable cursor lives in SQLite and is changed only by the persistence
    actor, inside transactions that read it again (so any number of
    processes may move it). Notices are derived from it by the watcher's
    session actor in every process; wakes are routed by the transaction
    that opened the notice.

    Args:
        watcher_key: the watcher session key.
        target: ``(target_key, target_agent_id)``.
        persistence: the persistence actor.
        timeout: seconds each request may take.
        dispatcher: the gateway's dispatcher (see :mod:`persistence.runtime`).

    Asks only persistence (a leaf).
    """

    def __init__(
        self,
        watcher_key: str,
        target: tuple[str, str],
        *,
        persistence: pykka.ActorRef[Any],
        timeout: float,
        dispatcher: Dispatcher | None = None,
    ) -> None:
        super().__init__(dispatcher=dispatcher)
        self._watcher_key = watcher_key
        self._target = target
        self._persistence = persistence
        self._timeout = timeout

    def handle(self, message: Any) -> Any:
        """Dispatch one message (driving thread; blocks on the asks it makes)."""
        match message:
            case Register(provenance=provenance, since=since):
                try:
                    outcome: RegisterOutcome = submit(self._persistence, RegisterWatch(
                        watcher_key=self._watcher_key, target_key=self._target[0],
                        target_agent_id=self._target[1], provenance=provenance, since=since),
                        timeout=self._timeout)
                except StorageError as exc:  # logged once per episode by the writer
                    logger.debug("registering a watch failed: %s", exc)
                    return False
                return outcome.registered
        return super().handle(message)
