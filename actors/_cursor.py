"""The cursor actor: one per watcher/target pair, publishing its notices."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pykka

from actors._base import GatewayActor
from actors._messages import Enqueue, Publish, Register, Wake
from actors._notices import notice_text
from persistence import NoticeDescriptor, RegisterOutcome, RegisterWatch, StorageError, submit
from persistence._runtime import Dispatcher
from persistence.keys import is_subagent_key

__all__ = ["CursorActor", "should_wake"]

logger = logging.getLogger(__name__)

SessionResolver = Callable[[str, str], "pykka.ActorRef[Any]"]


def should_wake(descriptor: NoticeDescriptor) -> bool:
    """Whether a newly queued notice wakes its watcher (seed; anchor §3.5).

    Ambient (queue-only) notices and nested ``subagent:`` watchers never wake.
    """
    return (
        descriptor.pending and not descriptor.queue_only
        and not is_subagent_key(descriptor.watcher_key)
    )


class CursorActor(GatewayActor):
    """One watcher/target pair: registers the watch and publishes its notices.

    The durable cursor lives in SQLite and is changed only by the persistence
    actor; this actor caches the newest committed notice state of the pair,
    turns it into the byte-stable notice text, puts it in the watcher's queue
    and, when newly queued and eligible, asks the waker to call ``on_wake``.

    Args:
        watcher_key: the watcher session key.
        target: ``(target_key, target_agent_id)``.
        resolve_session: returns the live session actor of ``(key, agent_id)``.
        persistence: the persistence actor.
        waker: the waker actor, or ``None`` without ``on_wake``.
        timeout: seconds each request may take.
        dispatcher: the gateway's dispatcher (see :mod:`persistence._runtime`).

    Asks the watcher's session actor, the waker and persistence; none of them
    asks a cursor actor.
    """

    def __init__(
        self,
        watcher_key: str,
        target: tuple[str, str],
        *,
        resolve_session: SessionResolver,
        watcher_agent_id: str,
        persistence: pykka.ActorRef[Any],
        waker: pykka.ActorRef[Any] | None,
        timeout: float,
        dispatcher: Dispatcher | None = None,
    ) -> None:
        super().__init__(dispatcher=dispatcher)
        self._watcher_key = watcher_key
        self._watcher_agent_id = watcher_agent_id
        self._target = target
        self._resolve_session = resolve_session
        self._persistence = persistence
        self._waker = waker
        self._timeout = timeout
        self._state: NoticeDescriptor | None = None

    def handle(self, message: Any) -> Any:
        """Dispatch one message (driving thread; blocks on the asks it makes)."""
        match message:
            case Publish(descriptor=descriptor):
                return self._publish(descriptor)
            case Register(provenance=provenance):
                try:
                    outcome: RegisterOutcome = submit(self._persistence, RegisterWatch(
                        watcher_key=self._watcher_key, target_key=self._target[0],
                        target_agent_id=self._target[1], provenance=provenance),
                        timeout=self._timeout)
                except StorageError as exc:  # logged once per episode by the writer
                    logger.debug("registering a watch failed: %s", exc)
                    return False
                return outcome.registered
        return super().handle(message)

    def _publish(self, descriptor: NoticeDescriptor) -> bool:
        if self._state is not None and descriptor.version < self._state.version:
            return False
        self._state = descriptor
        message = Enqueue(descriptor=descriptor,
                          text=notice_text(self._target[0], descriptor.last_seen))
        newly = False
        for attempt in (1, 2):
            session = self._resolve_session(self._watcher_key, self._watcher_agent_id)
            try:
                newly = bool(session.ask(message, timeout=self._timeout))
                break
            except pykka.ActorDeadError:
                if attempt == 2:
                    raise
        if newly and self._waker is not None and should_wake(descriptor):
            self._waker.ask(Wake(watcher_key=self._watcher_key), timeout=self._timeout)
        return newly
