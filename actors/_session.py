"""The session actor: one per session, owning its entry cache and notice queue."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import pykka

from actors._base import GatewayActor
from actors._messages import (
    Deliver,
    Drain,
    DrainOutcome,
    Enqueue,
    EnqueueEvent,
    PendingTexts,
    Record,
    Reset,
    TakeMessages,
    UpdateEntry,
    Withdraw,
)
from actors._notices import NoticeQueue
from persistence import (
    Acknowledge,
    AckOutcome,
    EntryRow,
    ReadPool,
    RecordEvent,
    RecordOutcome,
    ResetWatcher,
    UpsertSession,
    read_entry,
    submit,
)
from persistence.keys import is_agent_qualified, is_group_key, main_session_key

__all__ = ["SessionActor", "shape_record"]

logger = logging.getLogger(__name__)


def shape_record(
    command: RecordEvent, mode: str, entry: EntryRow | None, *, group_scope: str
) -> RecordEvent:
    """Fill the entry-dependent parts of a record command (pure).

    ``"human"`` (anchor §3.6, §3.12): a session with a spawn parent always
    records and tells the parent; one without records only when watched; a
    group or channel session under ``group_scope="per-group"`` first gets the
    agent's main session as an ambient watcher. ``"entry-watchers"``: the
    spawn parent is a producer watcher. ``"as-is"``: unchanged. A missing
    ``session_id`` is taken from the entry.
    """
    changes: dict[str, Any] = {}
    parent = entry.spawned_by if entry else None
    if command.session_id is None and entry is not None and entry.session_id is not None:
        changes["session_id"] = entry.session_id
    if mode in ("human", "entry-watchers") and parent and is_agent_qualified(parent):
        changes["watcher_keys"] = (*command.watcher_keys, parent)
    if mode == "human":
        changes["only_if_watched"] = not parent
        chat_type = entry.chat_type if entry else None
        if group_scope == "per-group" and not parent and is_group_key(command.session_key,
                                                                      chat_type):
            watcher = main_session_key(command.agent_id)
            if watcher != command.session_key:
                changes["ambient_watcher"] = watcher
    return msgspec.structs.replace(command, **changes) if changes else command


class SessionActor(GatewayActor):
    """One session: its entry, its notice queue as a watcher, its inbox.

    Args:
        key: the session key.
        agent_id: its agent.
        persistence: the persistence actor (asked; a leaf).
        reads: read connections, for loading the entry.
        group_scope: the gateway's ``group_scope``.
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
        reads: ReadPool,
        group_scope: str,
        queue_limit: int,
        timeout: float,
    ) -> None:
        super().__init__()
        self._key = key
        self._agent_id = agent_id
        self._persistence = persistence
        self._reads = reads
        self._group_scope = group_scope
        self._timeout = timeout
        self._queue = NoticeQueue(queue_limit)
        self._floors: dict[tuple[str, str], int] = {}
        self._floor_all = 0
        self._inbox: list[str] = []
        self._entry: EntryRow | None = None
        self._entry_loaded = False

    def handle(self, message: Any) -> Any:
        """Dispatch one message (actor thread; may block on persistence)."""
        match message:
            case Record(command=command, mode=mode):
                return self._record(command, mode)
            case UpdateEntry(patch=patch):
                submit(self._persistence, patch, timeout=self._timeout)
                self._entry_loaded = False
                return None
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
                self._entry_loaded = False
                return None
            case Deliver(text=text):
                self._inbox.append(text)
                return True
            case TakeMessages():
                taken, self._inbox = tuple(self._inbox), []
                return taken
        return super().handle(message)

    def _load_entry(self) -> EntryRow | None:
        if not self._entry_loaded:
            with self._reads.connection(self._timeout) as conn:
                self._entry = read_entry(conn, self._key, self._agent_id)
            self._entry_loaded = True
        return self._entry

    def _record(self, command: RecordEvent, mode: str) -> RecordOutcome:
        entry = self._load_entry() if mode != "as-is" or command.session_id is None else None
        shaped = shape_record(command, mode, entry, group_scope=self._group_scope)
        outcome: RecordOutcome = submit(self._persistence, shaped, timeout=self._timeout)
        if shaped.spawned_by is not None or entry is None:
            self._entry_loaded = False
        return outcome

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


def entry_patch(key: str, agent_id: str, **fields: str | None) -> UpsertSession:
    """Build an :class:`UpsertSession` for ``(key, agent_id)`` from keyword fields."""
    return UpsertSession(session_key=key, agent_id=agent_id, **fields)
