"""The session actor: one per session, owning its notice queue and inbox."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import apsw
import pykka

from actors.engine.base import GatewayActor
from actors.engine.messages import (
    Deliver,
    Drain,
    DrainOutcome,
    EnqueueEvent,
    PendingTexts,
    Reset,
    TakeMessages,
)
from actors.engine.notices import NoticeQueue, QueueEntry, notice_text
from persistence import (
    Acknowledge,
    AckOutcome,
    ReadPool,
    ResetWatcher,
    StorageError,
    pending_cursors,
    submit,
)
from persistence.runtime import Dispatcher

__all__ = ["Handoff", "SessionActor", "SessionState"]

logger = logging.getLogger(__name__)

_ACK_FAILING = threading.Event()
"""Set while drain acknowledgements fail (one WARNING per episode, any session)."""


@dataclass(frozen=True)
class SessionState:
    """What a stopping session actor leaves for its successor (passivation)."""

    entries: tuple[QueueEntry, ...] = ()
    evicted: tuple[tuple[tuple[tuple[str, str], str], int], ...] = ()
    inbox: tuple[str, ...] = ()


class Handoff:
    """Thread-safe store of the state of stopped session actors, by session.

    A session actor that is stopped to bound the number of live threads
    writes its queue and inbox here in ``on_stop``; the next
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
    """One session in this process: its place in the notice queue, and its inbox.

    A watcher's session-state notices are durable: the open cursors of the
    signal log, which every process sees (``persistence.pending_cursors``).
    This actor keeps the process's own system events and orders the notices
    among them; before it answers :class:`PendingTexts`, :class:`Drain` or
    :class:`EnqueueEvent` it reads the open cursors again (one indexed
    query), so a notice another process queued shows here and one another
    process drained is gone here. A drain acknowledges, in one transaction,
    only the notices it returns and only while they are still the open ones
    (compare-and-set), so exactly one drain in all processes consumes each.

    Args:
        key: the session key.
        agent_id: its agent.
        persistence: the persistence actor (asked; a leaf).
        reads: read connections to the signal log.
        queue_limit: most queued entries.
        timeout: seconds any request to persistence may take.
        handoff: where a stopped predecessor left its state, and where this
            actor leaves its own when stopped.
        late: receives the result of an acknowledgement that committed after
            this actor stopped waiting (its follow-up wakes run anyway).
        dispatcher: the gateway's dispatcher (see :mod:`persistence.runtime`).

    Asks only the persistence actor, never a cursor or session actor, so the
    ask graph stays acyclic.
    """

    def __init__(
        self,
        key: str,
        agent_id: str,
        *,
        persistence: pykka.ActorRef[Any],
        reads: ReadPool,
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
        self._reads = reads
        self._timeout = timeout
        self._handoff = handoff
        state = handoff.take((key, agent_id)) if handoff else None
        state = state or SessionState()
        self._queue = NoticeQueue(queue_limit, state.entries, dict(state.evicted))
        self._inbox: list[str] = list(state.inbox)
        self._sync_failed = False

    def on_failure(self, *args: object) -> None:
        """Leave the state to the successor after a crash too (driving thread)."""
        self.on_stop()

    def on_stop(self) -> None:
        """Leave queue and inbox to the successor (driving thread)."""
        if self._handoff is None:
            return
        keep = len(self._queue) or self._inbox or self._queue.evicted
        self._handoff.put((self._key, self._agent_id), SessionState(
            entries=self._queue.entries(), evicted=tuple(self._queue.evicted.items()),
            inbox=tuple(self._inbox)) if keep else None)

    def handle(self, message: Any) -> Any:
        """Dispatch one message (driving thread; may block on persistence and reads)."""
        match message:
            case EnqueueEvent(text=text, context_key=context_key):
                self._sync()  # notices committed before this event come first
                return self._queue.enqueue_event(text, context_key)
            case PendingTexts():
                self._sync()
                return tuple(self._queue.texts())
            case Drain(only=only):
                return self._drain(only)
            case Reset(session_id=session_id):
                try:
                    submit(self._persistence, ResetWatcher(
                        session_key=self._key, agent_id=self._agent_id,
                        session_id=session_id), timeout=self._timeout)
                except StorageError as exc:  # logged once per episode by the writer
                    logger.debug("reset failed: %s", exc)
                    return None
                self._queue.withdraw_all_notices()
                return None
            case Deliver(text=text):
                self._inbox.append(text)
                return True
            case TakeMessages():
                taken, self._inbox = tuple(self._inbox), []
                return taken
        return super().handle(message)

    def _sync(self) -> None:
        """Bring the queued notices in line with the durable open cursors."""
        try:
            with self._reads.connection(self._timeout) as conn:
                rows = pending_cursors(conn, self._key)
        except (StorageError, apsw.Error) as exc:
            # Degrade to what this process last saw; the log still holds them.
            level = logging.DEBUG if self._sync_failed else logging.WARNING
            self._sync_failed = True
            logger.log(level, "reading the open notices failed (showing the last known): %s",
                       exc)
            return
        self._sync_failed = False
        self._queue.reconcile([((k, a), ls, mt, notice_text(k, ls)) for k, a, ls, mt in rows])

    def _drain(self, only: tuple[str, ...] | None = None) -> DrainOutcome:
        self._sync()
        entries = self._queue.drain() if only is None else self._queue.take(frozenset(only))
        shown = [e for e in entries if e.target is not None and e.last_seen is not None]
        follow_ups: tuple[Any, ...] = ()
        consumed: set[tuple[str, str]] = set()
        failed = False
        if shown:
            try:
                ack: AckOutcome = submit(self._persistence, Acknowledge(
                    watcher_key=self._key, targets=tuple(e.target for e in shown
                                                         if e.target is not None),
                    last_seen=tuple(e.last_seen for e in shown if e.last_seen is not None)),
                    timeout=self._timeout, on_late=self._late)
            except Exception as exc:
                # Not acknowledged, so not consumed: returning them could hand one
                # notice to two drains. They stay queued (and open in the log) for
                # the next turn; the system events, which need no acknowledgement, go.
                # Once per fault episode (of the process), not once per drain.
                level = logging.DEBUG if _ACK_FAILING.is_set() else logging.WARNING
                _ACK_FAILING.set()
                logger.log(level, "acknowledging drained notices failed (they stay queued "
                           "and come back with a later drain; logged again when it works): "
                           "%s", exc)
                self._queue.requeue(shown)
                consumed = set()
                failed = True
            else:
                consumed = set(ack.acknowledged)
                follow_ups = ack.notices
                if _ACK_FAILING.is_set():
                    _ACK_FAILING.clear()
                    logger.warning("acknowledging drained notices works again")
        texts = tuple(e.text for e in entries if e.target is None or e.target in consumed)
        kept = len(shown) if failed else 0
        return DrainOutcome(texts=texts, follow_ups=follow_ups, unacknowledged=kept)
