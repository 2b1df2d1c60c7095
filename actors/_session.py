"""The session actor: one per session, owning its notice queue and inbox."""

from __future__ import annotations

import logging
from typing import Any

import pykka

from actors._base import GatewayActor
from actors._messages import (
    Deliver,
    Drain,
    DrainOutcome,
    Enqueue,
    EnqueueEvent,
    PendingTexts,
    Reset,
    TakeMessages,
    Withdraw,
)
from actors._notices import NoticeQueue
from persistence import Acknowledge, AckOutcome, ResetWatcher, submit

__all__ = ["SessionActor"]

logger = logging.getLogger(__name__)


class SessionActor(GatewayActor):
    """One session: its notice queue as a watcher, and its inbox.

    Args:
        key: the session key.
        agent_id: its agent.
        persistence: the persistence actor (asked; a leaf).
        queue_limit: most queued entries.
        timeout: seconds any request to persistence may take.

    Asks only the persistence actor, never a cursor or session actor, so the
    ask graph stays acyclic. Queue updates are applied in commit order: each
    notice state carries a version and older ones are ignored.
    """

    def __init__(
        self,
        key: str,
        agent_id: str,
        *,
        persistence: pykka.ActorRef[Any],
        queue_limit: int,
        timeout: float,
    ) -> None:
        super().__init__()
        self._key = key
        self._agent_id = agent_id
        self._persistence = persistence
        self._timeout = timeout
        self._queue = NoticeQueue(queue_limit)
        self._floors: dict[tuple[str, str], int] = {}
        self._floor_all = 0
        self._inbox: list[str] = []

    def handle(self, message: Any) -> Any:
        """Dispatch one message (actor thread; may block on persistence)."""
        match message:
            case Enqueue(descriptor=d, text=text):
                target = (d.target_key, d.target_agent_id)
                if d.version < max(self._floors.get(target, 0), self._floor_all):
                    return False  # an older state than one already applied
                self._floors[target] = d.version
                if not d.pending:
                    self._queue.withdraw(target)
                    return False
                return self._queue.enqueue_notice(text, target)
            case EnqueueEvent(text=text, context_key=context_key):
                return self._queue.enqueue_event(text, context_key)
            case Withdraw(target=target, version=version):
                self._floors[target] = max(self._floors.get(target, 0), version)
                self._queue.withdraw(target)
                return None
            case PendingTexts():
                return tuple(self._queue.texts())
            case Drain():
                return self._drain()
            case Reset(session_id=session_id):
                version = submit(self._persistence, ResetWatcher(
                    session_key=self._key, agent_id=self._agent_id, session_id=session_id),
                    timeout=self._timeout)
                self._floor_all = max(self._floor_all, int(version))
                self._queue.withdraw_all_notices()
                return None
            case Deliver(text=text):
                self._inbox.append(text)
                return True
            case TakeMessages():
                taken, self._inbox = tuple(self._inbox), []
                return taken
        return super().handle(message)

    def _drain(self) -> DrainOutcome:
        entries = self._queue.drain()
        targets = tuple(dict.fromkeys(e.target for e in entries if e.target is not None))
        follow_ups: tuple[Any, ...] = ()
        if targets:
            try:
                ack: AckOutcome = submit(self._persistence, Acknowledge(
                    watcher_key=self._key, targets=targets), timeout=self._timeout)
            except Exception:
                # The durable cursors stay pending; the restart sweep or the
                # next material event brings the notice back.
                logger.warning("acknowledging %d drained notices failed", len(targets),
                               exc_info=True)
            else:
                for target in targets:
                    self._floors[target] = max(self._floors.get(target, 0), ack.version)
                follow_ups = ack.notices
        return DrainOutcome(texts=tuple(e.text for e in entries), follow_ups=follow_ups)

