"""The session actor: one per session, owning its notice queue and inbox."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
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
from actors._notices import NoticeQueue, QueueEntry
from persistence import (
    Acknowledge,
    AckOutcome,
    ResetWatcher,
    StorageError,
    Sweep,
    SweepOutcome,
    submit,
)
from persistence._runtime import Dispatcher

__all__ = ["Handoff", "SessionActor", "SessionState"]

logger = logging.getLogger(__name__)

FLOOR_TTL_S = 120.0
"""How long a target's version floor is kept once nothing is queued for it, in s."""


@dataclass(frozen=True)
class SessionState:
    """What a stopping session actor leaves for its successor (passivation)."""

    entries: tuple[QueueEntry, ...] = ()
    floors: dict[tuple[str, str], int] = field(default_factory=dict)
    floor_all: int = 0
    inbox: tuple[str, ...] = ()
    dropped_notice: bool = False


class Handoff:
    """Thread-safe store of the state of stopped session actors, by session.

    A session actor that is stopped to bound the number of live threads
    writes its queue, inbox and version floors here in ``on_stop``; the next
    actor started for the same session takes them in ``__init__``, so nothing
    queued is lost (architecture notes, "Restart and passivation"). Because
    Pykka reports an actor dead before its ``on_stop`` has run, the pool
    announces each retirement with :meth:`expect`, and :meth:`take` waits
    (bounded) until the retiring actor has handed over.
    """

    def __init__(self, wait_s: float = 10.0) -> None:
        self._lock = threading.Lock()
        self._states: dict[tuple[str, str], SessionState] = {}
        self._pending: dict[tuple[str, str], threading.Event] = {}
        self._wait_s = wait_s

    def expect(self, key: tuple[str, str]) -> None:
        """An actor of ``key`` is stopping: a successor must wait for its hand-over."""
        with self._lock:
            self._pending.setdefault(key, threading.Event())

    def put(self, key: tuple[str, str], state: SessionState | None) -> None:
        """Hand over ``state`` for ``key`` (``None``: nothing to keep) and release waiters."""
        with self._lock:
            if state is not None:
                self._states[key] = state
            done = self._pending.pop(key, None)
        if done is not None:
            done.set()

    def take(self, key: tuple[str, str]) -> SessionState | None:
        """Remove and return the state kept for ``key``, waiting for a pending hand-over.

        Blocks at most ``wait_s`` seconds (then proceeds without it, logged).
        """
        with self._lock:
            pending = self._pending.get(key)
        if pending is not None and not pending.wait(self._wait_s):
            logger.warning("a stopping session actor did not hand over within %.1fs",
                           self._wait_s)
        with self._lock:
            return self._states.pop(key, None)

    def has(self, key: tuple[str, str]) -> bool:
        """Whether state is kept, or being handed over, for ``key``."""
        with self._lock:
            return key in self._states or key in self._pending

    def discard(self, key: tuple[str, str]) -> None:
        """Forget ``key`` (its session was deleted)."""
        with self._lock:
            self._states.pop(key, None)
            done = self._pending.pop(key, None)
        if done is not None:
            done.set()


class SessionActor(GatewayActor):
    """One session: its notice queue as a watcher, and its inbox.

    Args:
        key: the session key.
        agent_id: its agent.
        persistence: the persistence actor (asked; a leaf).
        queue_limit: most queued entries.
        timeout: seconds any request to persistence may take.
        handoff: where a stopped predecessor left its state, and where this
            actor leaves its own when stopped.
        late: receives the result of an acknowledgement that committed after
            this actor stopped waiting (its follow-ups are published anyway).
        dispatcher: the gateway's dispatcher (see :mod:`persistence._runtime`).

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
        handoff: Handoff | None = None,
        late: Callable[[Any], None] | None = None,
        dispatcher: Dispatcher | None = None,
    ) -> None:
        super().__init__(dispatcher=dispatcher)
        self._late = late
        self._key = key
        self._agent_id = agent_id
        self._persistence = persistence
        self._timeout = timeout
        self._handoff = handoff
        state = handoff.take((key, agent_id)) if handoff else None
        state = state or SessionState()
        self._queue = NoticeQueue(queue_limit, state.entries)
        self._queue.dropped_notice = state.dropped_notice
        self._floors: dict[tuple[str, str], int] = dict(state.floors)
        self._floor_all = state.floor_all
        self._inbox: list[str] = list(state.inbox)
        now = time.monotonic()
        self._floor_set_at: dict[tuple[str, str], float] = dict.fromkeys(self._floors, now)
        self._handled = 0

    def on_failure(self, *args: object) -> None:
        """Leave the state to the successor after a crash too (driving thread)."""
        self.on_stop()

    def _set_floor(self, target: tuple[str, str], version: int) -> None:
        self._floors[target] = max(self._floors.get(target, 0), version)
        self._floor_set_at[target] = time.monotonic()

    def _prune_floors(self) -> None:
        # A floor only has to outlive the notice states still in flight for its
        # target (bounded by the ask timeouts); older floors of targets with
        # nothing queued are dropped, so memory does not grow with every target.
        horizon = time.monotonic() - FLOOR_TTL_S
        queued = {e.target for e in self._queue.entries()}
        for target in [t for t, at in self._floor_set_at.items()
                       if at < horizon and t not in queued]:
            del self._floor_set_at[target]
            self._floors.pop(target, None)

    def on_stop(self) -> None:
        """Leave queue, inbox and floors to the successor (driving thread)."""
        self._prune_floors()
        if self._handoff is None:
            return
        keep = len(self._queue) or self._inbox or self._floors
        self._handoff.put((self._key, self._agent_id), SessionState(
            entries=self._queue.entries(), floors=dict(self._floors),
            floor_all=self._floor_all, inbox=tuple(self._inbox),
            dropped_notice=self._queue.dropped_notice) if keep else None)

    def handle(self, message: Any) -> Any:
        """Dispatch one message (driving thread; may block on persistence)."""
        self._handled += 1
        if self._handled % 256 == 0:
            self._prune_floors()
        match message:
            case Enqueue(descriptor=d, text=text):
                target = (d.target_key, d.target_agent_id)
                if d.version < max(self._floors.get(target, 0), self._floor_all):
                    return False  # an older state than one already applied
                self._set_floor(target, d.version)
                if not d.pending:
                    self._queue.withdraw(target)
                    return False
                return self._queue.enqueue_notice(text, target)
            case EnqueueEvent(text=text, context_key=context_key):
                return self._queue.enqueue_event(text, context_key)
            case Withdraw(target=target, version=version):
                self._set_floor(target, version)
                self._queue.withdraw(target)
                return None
            case PendingTexts():
                return tuple(self._queue.texts())
            case Drain():
                return self._drain()
            case Reset(session_id=session_id):
                try:
                    version = submit(self._persistence, ResetWatcher(
                        session_key=self._key, agent_id=self._agent_id,
                        session_id=session_id), timeout=self._timeout)
                except StorageError as exc:  # logged once per episode by the writer
                    logger.debug("reset failed: %s", exc)
                    return None
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
                    watcher_key=self._key, targets=targets), timeout=self._timeout,
                    on_late=self._late)
            except Exception as exc:
                # The durable cursors stay pending; the restart sweep or the
                # next material event brings the notice back.
                logger.warning("acknowledging %d drained notices failed: %s", len(targets), exc)
            else:
                for target in targets:
                    self._set_floor(target, ack.version)
                follow_ups = ack.notices
        if self._queue.dropped_notice:
            # Overflow dropped notices of pairs that are still pending: bring
            # them back now that there is room (at most queue_limit per turn).
            try:
                swept: SweepOutcome = submit(self._persistence, Sweep(watcher_key=self._key),
                                             timeout=self._timeout)
            except Exception as exc:
                logger.warning("re-queueing overflowed notices failed: %s", exc)
            else:
                self._queue.dropped_notice = False
                follow_ups = (*follow_ups, *swept.notices)
        return DrainOutcome(texts=tuple(e.text for e in entries), follow_ups=follow_ups)

