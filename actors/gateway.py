"""The thread-safe ``Gateway`` facade that a threaded agent gateway holds."""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import apsw
import pykka

from actors import _validate as v
from actors._base import on_our_thread
from actors._config import GatewayConfig
from actors._cursor import CursorActor
from actors._messages import (
    Deliver,
    Drain,
    DrainOutcome,
    EnqueueEvent,
    PendingTexts,
    Publish,
    Register,
    Reset,
    TakeMessages,
    Withdraw,
)
from actors._registry import ActorPool
from actors._session import Handoff, SessionActor
from actors._types import SendResult, SessionStateEventInput
from actors._upstream import SOURCES, UpstreamService
from actors._waker import WakerActor
from actors.errors import (
    GatewayClosed,
    GatewayUnavailable,
    InvalidArgument,
    ReentrantCall,
    SessionStateError,
    StorageError,
)
from actors.upstream.claude_node import NodeTranscriptReader
from persistence import (
    DeleteOutcome,
    DeleteSession,
    NoticeDescriptor,
    OwnerLock,
    PersistenceActor,
    Ping,
    Prune,
    ReadPool,
    RecordEvent,
    RecordOutcome,
    SessionRow,
    SessionStateEvent,
    SessionStatus,
    StateChanges,
    Sweep,
    SweepOutcome,
    UpsertSession,
    UpstreamLink,
    list_sessions,
    open_connection,
    prepare_path,
    read_changes,
    read_version,
    submit,
)
from persistence._writer import FATAL_ERRORS
from persistence.keys import agent_id_of, is_agent_qualified

__all__ = ["Gateway", "default_state_path"]

logger = logging.getLogger(__name__)

Clock = Callable[[], int]
DeliverFn = Callable[[str, str, str], bool]
_GOAL_ACTIONS = frozenset({"set", "updated", "removed"})
_RUN_SUMMARIES = {
    "ok": "child run completed",
    "error": "child run failed",
    "timeout": "child run timed out",
    "cancelled": "child run cancelled",
}
_CHAT_TYPES = frozenset({"direct", "group", "channel"})
_ACTOR_FAILURES = (StorageError, GatewayUnavailable, pykka.Timeout, pykka.ActorDeadError,
                   apsw.Error)


def _wall_clock() -> int:
    return time.time_ns() // 1_000_000


def default_state_path() -> Path:
    """The embedded default database path (``api-contract.md``, ``Gateway.open``).

    ``$SSA_STATE_DIR/state.sqlite``, else ``$XDG_STATE_HOME/ssa/state.sqlite``,
    else ``~/.local/state/ssa/state.sqlite``.
    """
    if os.environ.get("SSA_STATE_DIR"):
        return Path(os.environ["SSA_STATE_DIR"]) / "state.sqlite"
    if os.environ.get("XDG_STATE_HOME"):
        return Path(os.environ["XDG_STATE_HOME"]) / "ssa" / "state.sqlite"
    return Path.home() / ".local" / "state" / "ssa" / "state.sqlite"


class Gateway:
    """Session state awareness for one gateway process (``api-contract.md``).

    Create it with :meth:`open`; close it with :meth:`close` or a ``with``
    block (its actor threads are not daemons, so an unclosed gateway keeps
    the process alive). Every method may be called from many threads at
    once. Methods block the calling thread until their work is committed and
    published, for at most about twice ``config.ask_timeout_s``; none may be
    called from ``on_wake`` (:class:`~actors.errors.ReentrantCall`).

    Ordering guarantee (read your writes): when a producer returns, every
    notice it caused is queued and every ``on_wake`` it caused has run; when
    :meth:`drain` returns, any follow-up notice is queued.

    Every method may raise :class:`~actors.errors.GatewayClosed` (used after
    or during :meth:`close`) and :class:`~actors.errors.ReentrantCall`;
    non-producer calls may raise :class:`~actors.errors.GatewayUnavailable`
    when an internal actor does not answer in time. Producers and upstream
    scans never raise for storage faults: they log and return ``None``.
    """

    def __init__(self, path: Path, config: GatewayConfig, clock: Clock,
                 on_wake: Callable[[str], None] | None, lock: OwnerLock) -> None:
        """Internal: use :meth:`open`."""
        self._lock = lock
        self.path = path
        self.config = config
        self._clock = clock
        self._timeout = config.ask_timeout_s
        self._closed = False
        self._close_lock = threading.Lock()
        self._reads = ReadPool(str(path), size=config.read_connections,
                               busy_timeout_ms=config.busy_timeout_ms, vfs=config.vfs)
        self._fatal = threading.Event()
        self._persistence: pykka.ActorRef[Any] = PersistenceActor.start(
            str(path), clock=clock, versions=itertools.count(1), synchronous=config.synchronous,
            busy_timeout_ms=config.busy_timeout_ms, retention_days=config.retention_days,
            max_rows=config.max_rows, prune_interval_ms=config.prune_interval_ms,
            vfs=config.vfs, fatal=self._fatal,
        )
        self._waker: pykka.ActorRef[Any] | None = (
            WakerActor.start(on_wake) if on_wake is not None else None
        )
        self._handoff = Handoff()
        self._sessions: ActorPool[tuple[str, str]] = ActorPool(
            self._start_session, cap=config.max_session_actors, name="session",
            join_timeout=config.ask_timeout_s)
        self._cursors: ActorPool[tuple[str, str, str]] = ActorPool(
            self._start_cursor, cap=config.max_cursor_actors, name="cursor")
        self._upstream = UpstreamService(persistence=self._persistence, reads=self._reads,
                                         config=config, clock=clock, publish=self._publish)

    # --- lifecycle -----------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        config: GatewayConfig | None = None,
        clock: Clock | None = None,
        on_wake: Callable[[str], None] | None = None,
        monitor: bool = True,
    ) -> Gateway:
        """Open (creating if needed) the database and start the gateway's actors.

        Args:
            path: the SQLite file; ``None`` means :func:`default_state_path`.
                Missing directories are created 0700, the file 0600.
            config: settings; defaults to ``GatewayConfig()``.
            clock: ``() -> int`` epoch milliseconds used for every timestamp,
                retention and cadence decision (inject one in tests).
            on_wake: ``(watcher_key) -> None``, called from an internal thread
                once per newly queued notice of a non-``subagent:`` watcher
                (never for ambient notices); it must not block.
            monitor: start the periodic upstream monitor cadence (first scan
                after ``upstream_initial_delay_s``, then every
                ``upstream_interval_s``); tests pass ``False`` and call
                :meth:`scan_upstream`.

        Runs the restart sweep (every pending notice is re-queued from the
        durable cursors) and a forced prune before returning. Blocks on disk.

        Raises:
            DatabaseBusy: another gateway (in any process) has the file open;
                one gateway process owns a database.
            SchemaError: the file is not a session-state database or is newer.
            StorageError: the file cannot be opened or set up.
            OSError: the directory or file cannot be created.
        """
        config = config if config is not None else GatewayConfig()
        if not isinstance(config, GatewayConfig):
            raise v.ArgumentTypeError(
                f"config must be a GatewayConfig, not {type(config).__name__}")
        if clock is not None and not callable(clock):
            raise v.ArgumentTypeError("clock must be a callable returning epoch milliseconds")
        if on_wake is not None and not callable(on_wake):
            raise v.ArgumentTypeError("on_wake must be callable")
        db_path = Path(path) if path is not None else default_state_path()
        prepare_path(db_path)
        lock = OwnerLock(db_path)
        try:
            open_connection(str(db_path), synchronous=config.synchronous,
                            busy_timeout_ms=config.busy_timeout_ms, writer=True,
                            migrate=True, vfs=config.vfs).close()
        except BaseException as exc:
            lock.release()
            if isinstance(exc, apsw.Error):
                raise StorageError(f"cannot open {db_path}: {exc}") from exc
            raise
        gateway = cls(db_path, config, clock or _wall_clock, on_wake, lock)
        try:
            gateway._persistence.ask(Ping(), timeout=gateway._timeout)
            sweep: SweepOutcome = submit(gateway._persistence, Sweep(), timeout=gateway._timeout)
            gateway._publish(sweep.notices)
            submit(gateway._persistence, Prune(force=True), timeout=gateway._timeout)
        except BaseException as exc:
            gateway.close()
            if isinstance(exc, pykka.ActorDeadError | pykka.Timeout):
                raise StorageError(f"the persistence actor failed to start on {db_path}") from exc
            raise
        if monitor:
            gateway._upstream.start_cadence()
        return gateway

    def close(self, timeout: float = 10.0) -> None:
        """Stop every actor this gateway started, and nothing else.

        Args:
            timeout: seconds to wait for each actor to stop.

        Idempotent; safe from any thread but the gateway's own. Pending
        notices are durable and come back at the next :meth:`open`.
        """
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        stuck = 0
        # Each step is isolated: one failing step never skips the others.
        steps: list[Callable[[], int | None]] = [
            partial(self._upstream.stop, timeout), partial(self._cursors.stop_all, timeout),
            partial(self._sessions.stop_all, timeout)]
        steps += [partial(self._stop_ref, ref, timeout)
                  for ref in (self._waker, self._persistence) if ref is not None]
        steps += [self._reads.close, self._lock.release]
        for step in steps:
            try:
                stuck += step() or 0
            except Exception:
                logger.exception("a step of close() failed; continuing")
        if stuck:
            logger.error("%d gateway actors were still running after close()", stuck)

    @staticmethod
    def _stop_ref(ref: pykka.ActorRef[Any], timeout: float) -> int:
        try:
            ref.stop(block=True, timeout=timeout)
        except pykka.Timeout:
            logger.error("an actor did not stop within %.1fs", timeout)
            return 1
        return 0

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # --- sessions ------------------------------------------------------------

    def create_session(self, key: str, *, agent_id: str | None = None,
                       session_id: str | None = None, spawned_by: str | None = None,
                       chat_type: str | None = None) -> None:
        """Register or update a session entry (fields left ``None`` are kept).

        Args:
            key: the session key.
            agent_id: its agent (default: the key's).
            session_id: incarnation id.
            spawned_by: the spawning parent's key.
            chat_type: ``"direct"``, ``"group"`` or ``"channel"``.

        Raises:
            InvalidSessionKey, InvalidArgument, ArgumentTypeError: bad arguments.

        A storage fault is logged, not raised.
        """
        self._guard()
        v.check_key(key, "key")
        agent = v.check_agent_id(agent_id) or agent_id_of(key)
        v.check_text(session_id, "session_id", optional=True)
        v.check_optional_key(spawned_by, "spawned_by")
        if spawned_by == key:
            raise InvalidArgument("spawned_by must name another session, not key itself")
        if chat_type is not None and not isinstance(chat_type, str):
            raise v.ArgumentTypeError(f"chat_type must be a str, not {type(chat_type).__name__}")
        if chat_type is not None and chat_type not in _CHAT_TYPES:
            raise InvalidArgument(f"chat_type must be one of {sorted(_CHAT_TYPES)}")
        patch = UpsertSession(session_key=key, agent_id=agent, session_id=session_id,
                              spawned_by=spawned_by, chat_type=chat_type)
        self._best_effort(lambda: submit(self._persistence, patch, timeout=self._timeout),
                          "create_session")

    def spawn_subagent(self, parent_key: str, child_key: str, *,
                       run_id: str) -> SessionStateEvent | None:
        """Create the child session and record ``child_spawned`` (seeds the parent's cursor).

        The parent's cursor on the child starts at the ``child_spawned``
        sequence, so earlier child history never notifies it (anchor §3.3).
        Idempotent per ``run_id`` (dedupe ``child-spawned:<run_id>``).

        Returns:
            The event, or ``None`` on a storage fault (logged).
        """
        self._guard()
        v.check_key(parent_key, "parent_key")
        v.check_key(child_key, "child_key")
        if parent_key == child_key:
            raise InvalidArgument("parent_key and child_key must differ")
        v.check_text(run_id, "run_id")
        watchers = (parent_key,) if is_agent_qualified(parent_key) else ()
        return self._record(RecordEvent(
            session_key=child_key, agent_id=agent_id_of(child_key), kind="child_spawned",
            actor_type="agent", actor_id=parent_key, run_id=run_id,
            dedupe_key=f"child-spawned:{run_id}", summary="child session spawned",
            watcher_keys=watchers, spawned_by=parent_key))

    def finish_run(self, session_key: str, *, run_id: str,
                   outcome: str) -> SessionStateEvent | None:
        """Record a run's end: ``ok`` is ``run_completed``, else ``run_failed`` (log only).

        ``error``, ``timeout`` and ``cancelled`` go into the payload
        ``{"outcome": ...}``. Idempotent per ``run_id``.

        Raises:
            InvalidOutcome: ``outcome`` is not one of the four.
        """
        self._guard()
        v.check_key(session_key)
        v.check_text(run_id, "run_id")
        v.check_outcome(outcome)
        return self._record(RecordEvent(
            session_key=session_key, agent_id=agent_id_of(session_key),
            kind="run_completed" if outcome == "ok" else "run_failed", actor_type="system",
            run_id=run_id, dedupe_key=f"run-terminal:{run_id}", summary=_RUN_SUMMARIES[outcome],
            payload_json=None if outcome == "ok" else f'{{"outcome":"{outcome}"}}'))

    def reset_session(self, key: str, *, session_id: str | None = None) -> None:
        """Start a new incarnation: drop the cursors ``key`` holds as a watcher.

        Its own history stays; its queued notices are withdrawn. A storage
        fault is logged, not raised.
        """
        self._guard()
        v.check_key(key, "key")
        v.check_text(session_id, "session_id", optional=True)
        self._best_effort(lambda: self._ask_session((key, agent_id_of(key)),
                                                    Reset(session_id=session_id)),
                          "reset_session")

    def delete_session(self, key: str, *, agent_id: str | None = None) -> None:
        """Drop the session's events, head, entry and every cursor naming it.

        Watchers' queued notices about it are withdrawn. A storage fault is
        logged, not raised.
        """
        self._guard()
        v.check_key(key, "key")
        agent = v.check_agent_id(agent_id) or agent_id_of(key)
        outcome = self._best_effort(lambda: submit(
            self._persistence, DeleteSession(session_key=key, agent_id=agent),
            timeout=self._timeout), "delete_session")
        if not isinstance(outcome, DeleteOutcome):
            return
        withdraw = Withdraw(target=(key, agent), version=outcome.version)
        for watcher in outcome.watchers:
            self._best_effort(partial(self._ask_session, (watcher, agent_id_of(watcher)),
                                      withdraw), "delete_session")
        self._cursors.discard_where(lambda k: k[0] == key or k[1:] == (key, agent))
        self._upstream.forget(key, agent)
        if agent == agent_id_of(key):
            self._sessions.discard_where(lambda k: k == (key, agent), wait=True)
            self._handoff.discard((key, agent))

    # --- producers -----------------------------------------------------------

    def human_message(self, key: str, *, channel: str,
                      actor_id: str | None = None) -> SessionStateEvent | None:
        """Record that a human sent a turn straight into ``key``.

        Recorded when the session has a spawn parent or at least one watcher;
        otherwise returns ``None``. Under ``group_scope="per-group"`` a group
        or channel session first gets the agent's main session as an ambient
        watcher, so the first human turn already reaches it.

        Returns:
            The ``human_direct_message`` event, or ``None`` (not watched, or a
            storage fault, which is logged).
        """
        self._guard()
        v.check_key(key, "key")
        v.check_text(channel, "channel", max_length=64)
        v.check_text(actor_id, "actor_id", optional=True)
        return self._record(RecordEvent(
            session_key=key, agent_id=agent_id_of(key), kind="human_direct_message",
            actor_type="human", actor_id=actor_id,
            summary=f"human message via {channel.strip() or 'unknown'}",
            shape="human-per-group" if self.config.group_scope == "per-group" else "human"))

    def set_goal(self, key: str, *, action: str, actor_type: str = "human",
                 actor_id: str | None = None) -> SessionStateEvent | None:
        """Record ``goal_changed`` with summary ``goal <action>``.

        Args:
            action: ``"set"``, ``"updated"`` or ``"removed"``.
            actor_type: who changed it; an ``agent`` actor with ``actor_id``
                equal to a watcher's key is not notified of its own change.
        """
        self._guard()
        v.check_key(key, "key")
        if not isinstance(action, str):
            raise v.ArgumentTypeError(f"action must be a str, not {type(action).__name__}")
        if action not in _GOAL_ACTIONS:
            raise InvalidArgument(f"action must be one of {sorted(_GOAL_ACTIONS)}")
        v.check_actor_type(actor_type)
        v.check_text(actor_id, "actor_id", optional=True)
        return self._record(RecordEvent(
            session_key=key, agent_id=agent_id_of(key), kind="goal_changed",
            actor_type=actor_type, actor_id=actor_id, summary=f"goal {action}",
            shape="entry-watchers"))

    def compacted(self, key: str, *, operation_id: str) -> SessionStateEvent | None:
        """Record ``compacted`` (log only), idempotent per ``operation_id``."""
        self._guard()
        v.check_key(key, "key")
        v.check_text(operation_id, "operation_id")
        return self._record(RecordEvent(
            session_key=key, agent_id=agent_id_of(key), kind="compacted", actor_type="system",
            dedupe_key=f"compacted:{operation_id}", summary="session compacted"))

    def record(self, event: SessionStateEventInput) -> SessionStateEvent | None:
        """Record any event: the general form of the producers above.

        The session's spawn parent, if any, is a producer watcher (seeded for
        ``child_spawned``, notified for notify kinds).

        Raises:
            ArgumentTypeError: ``event`` is not a ``SessionStateEventInput`` or
                a field has the wrong type.
            InvalidSessionKey, InvalidKind, InvalidArgument: a bad field.
        """
        self._guard()
        if not isinstance(event, SessionStateEventInput):
            raise v.ArgumentTypeError("event must be a SessionStateEventInput")
        v.check_key(event.session_key)
        agent = v.check_agent_id(event.agent_id) or agent_id_of(event.session_key)
        v.check_run_failed_payload(str(event.kind), event.payload)
        command = RecordEvent(
            session_key=event.session_key, agent_id=agent, kind=v.check_kind(event.kind),
            actor_type=v.check_actor_type(event.actor_type),
            summary=str(v.check_text(event.summary, "summary")),
            session_id=v.check_text(event.session_id, "session_id", optional=True),
            actor_id=v.check_text(event.actor_id, "actor_id", optional=True),
            run_id=v.check_text(event.run_id, "run_id", optional=True),
            dedupe_key=v.check_text(event.dedupe_key, "dedupe_key", optional=True),
            occurred_at=v.check_int(event.occurred_at, "occurred_at", optional=True),
            payload_json=v.check_payload(event.payload), shape="entry-watchers")
        return self._record(command)

    # --- tools ---------------------------------------------------------------

    def sessions_send(self, sender_key: str, target_key: str, text: str, *, watch: bool = False,
                      deliver: DeliverFn | None = None) -> SendResult:
        """Send ``text`` from one session to another, optionally watching the target.

        Args:
            deliver: the host's dispatcher ``(sender, target, text) -> bool``;
                by default the text goes to the target's inbox
                (:meth:`take_messages`). An exception counts as not accepted.
            watch: after a successful dispatch only, make the sender an
                explicit watcher of the target at its current state version.

        Returns:
            ``SendResult(accepted, watched)``; ``watched`` is ``None`` unless
            ``watch=True``.
        """
        self._guard()
        v.check_key(sender_key, "sender_key")
        v.check_key(target_key, "target_key")
        if not isinstance(text, str):
            raise v.ArgumentTypeError(f"text must be a str, not {type(text).__name__}")
        if not isinstance(watch, bool):
            raise v.ArgumentTypeError("watch must be a bool")
        try:
            if deliver is None:
                accepted = bool(self._ask_session((target_key, agent_id_of(target_key)),
                                                  Deliver(text=text)))
            else:
                accepted = bool(deliver(sender_key, target_key, text))
        except Exception as exc:  # the host's dispatcher is foreign code
            logger.warning("sessions_send dispatch failed: %s", type(exc).__name__)
            accepted = False
        if accepted:
            target_agent = agent_id_of(target_key)
            if self._best_effort(partial(self._upstream.has_link, target_key, target_agent),
                                 "sessions_send"):
                self._best_effort(partial(self._upstream.note_own_text, target_key,
                                          target_agent, text), "sessions_send")
        if not watch:
            return SendResult(accepted=accepted)
        return SendResult(accepted=accepted,
                          watched=accepted and self.watch(sender_key, target_key))

    def take_messages(self, key: str) -> list[str]:
        """Consume the texts the default dispatcher delivered to ``key``."""
        self._guard()
        v.check_key(key, "key")
        return list(self._ask_session((key, agent_id_of(key)), TakeMessages()))

    def watch(self, watcher_key: str, target_key: str, *, agent_id: str | None = None) -> bool:
        """Make ``watcher_key`` an explicit watcher of ``target_key``.

        Registration starts at the target's current state version; an existing
        watch keeps its cursor (a pending notice survives) and an ambient one
        is promoted to explicit.

        Args:
            watcher_key: an agent-qualified session key.
            target_key: the session to watch.
            agent_id: the target's agent (default: the key's; ``main`` for the
                bare ``global`` key). The cursor targets the pair, so another
                agent's session under the same key never notifies it.

        Returns:
            ``False`` for a self-watch, a watcher that is not agent-qualified
            (e.g. bare ``global``), or a storage fault (logged).
        """
        self._guard()
        v.check_key(watcher_key, "watcher_key")
        v.check_key(target_key, "target_key")
        agent = v.check_agent_id(agent_id) or agent_id_of(target_key)
        if watcher_key == target_key or not is_agent_qualified(watcher_key):
            return False
        pair = (watcher_key, target_key, agent)
        result = self._best_effort(lambda: self._ask_cursor(pair, Register()), "watch")
        return result is True

    def session_status(self, key: str, *, changes_since: int | None = None,
                       agent_id: str | None = None) -> SessionStatus:
        """Return the state version and, with ``changes_since``, the typed changes after it.

        Never advances a cursor. ``history_gap`` comes only from the session's
        pruned watermark. On a read fault the fault is logged and the result
        is empty (version 0) with ``history_gap=True``, telling the caller to
        refresh the whole session instead of trusting an empty delta.

        Raises:
            ArgumentTypeError: ``changes_since`` is not an ``int``.
            InvalidChangesSince: ``changes_since`` is negative.
        """
        self._guard()
        v.check_key(key, "key")
        agent = v.check_agent_id(agent_id) or agent_id_of(key)
        after = None if changes_since is None else v.check_changes_since(changes_since)
        try:
            with self._reads.connection(self._timeout) as conn:
                if after is None:
                    return SessionStatus(state_version=read_version(conn, key, agent))
                version, changes = read_changes(conn, key, agent, after,
                                                self.config.changes_limit)
                return SessionStatus(state_version=version, state_changes=changes)
        except (StorageError, apsw.Error) as exc:
            self._note_read_fault(exc)
            logger.warning("session_status read failed: %s", exc)
            # history_gap=True: the caller must refresh fully, not trust an empty delta.
            empty = None if after is None else StateChanges(
                events=(), history_gap=True, truncated=False, earliest_available_sequence=0)
            return SessionStatus(state_version=0, state_changes=empty)

    def sessions_list(self, *, agent_id: str | None = None) -> list[SessionRow]:
        """Return session entries ordered by key; ``state_version`` only when non-zero.

        On a read fault the list is empty and the fault is logged.
        """
        self._guard()
        agent = v.check_agent_id(agent_id)
        try:
            with self._reads.connection(self._timeout) as conn:
                return list_sessions(conn, agent)
        except (StorageError, apsw.Error) as exc:
            self._note_read_fault(exc)
            logger.warning("sessions_list read failed: %s", exc)
            return []

    # --- upstream ------------------------------------------------------------

    def adopt(self, key: str, *, source: str, path: str | os.PathLike[str],
              thread_id: str | None = None, agent_id: str | None = None,
              from_start: bool = False) -> UpstreamLink | None:
        """Adopt a session of another coding agent and link it for monitoring.

        Records ``adopted`` (log only) and creates or refreshes the upstream
        link of ``(key, agent_id)``, whose marker is the source's current end
        (the end of its last complete line), or its beginning with
        ``from_start``. Re-adopting the same source keeps scan progress; a
        different source rebases. Only links of watched sessions are scanned.

        Args:
            key: the gateway's session key for it.
            source: ``"claude"``, ``"codex"``, ``"opencode"`` or ``"pi"``.
            path: the transcript file (OpenCode: the ``opencode.db`` file).
            thread_id: the upstream session id (required for OpenCode;
                default: derived from the file).
            agent_id: the owning agent (default: the key's).
            from_start: scan the whole existing transcript on the first scan.

        Returns:
            The link, or ``None`` when the source cannot be trusted (Pi files
            older than format v3, Codex threads not started by a user, OpenCode
            child sessions: ``adopted`` is still recorded) or cannot be read
            (nothing is recorded), or on a storage fault (logged).

        Raises:
            InvalidArgument: unknown ``source``, or OpenCode without ``thread_id``.
            ArgumentTypeError: ``path`` is not a path.
        """
        self._guard()
        v.check_key(key, "key")
        agent = v.check_agent_id(agent_id) or agent_id_of(key)
        if not isinstance(source, str):
            raise v.ArgumentTypeError(f"source must be a str, not {type(source).__name__}")
        if source not in SOURCES:
            raise InvalidArgument(f"source must be one of {sorted(SOURCES)}, not {source!r}")
        if not isinstance(path, str | os.PathLike):
            raise v.ArgumentTypeError(f"path must be a path, not {type(path).__name__}")
        file_path = str(v.check_text(os.fspath(path), "path", max_length=4096))
        if "\x00" in file_path:
            raise InvalidArgument("path contains a NUL character")
        v.check_optional_key(thread_id, "thread_id")
        if not isinstance(from_start, bool):
            raise v.ArgumentTypeError("from_start must be a bool")
        if source == "opencode" and thread_id is None:
            raise InvalidArgument("thread_id (the OpenCode session id) is required for opencode")
        result = self._best_effort(partial(
            self._upstream.adopt, key, agent, source=source, path=file_path,
            thread_id=thread_id, from_start=from_start), "adopt")
        return result if isinstance(result, UpstreamLink) else None

    def adopt_remote(self, key: str, *, node_id: str, thread_id: str,
                     reader: NodeTranscriptReader,
                     agent_id: str | None = None) -> UpstreamLink | None:
        """Adopt a Claude Code thread that lives on a paired node.

        The host supplies ``reader`` (see
        :class:`~actors.upstream.claude_node.NodeTranscriptReader`); each scan
        classifies the latest 50 items against the newest uuid seen. Such
        links never report ``upstream_missing`` (a remote read cannot prove a
        deletion). After a restart, call :meth:`register_node_reader` again;
        until then the node's links are skipped.

        Returns:
            The link, or ``None`` when the newest item has no uuid, the reader
            fails, or on a storage fault (all logged).
        """
        self._guard()
        v.check_key(key, "key")
        agent = v.check_agent_id(agent_id) or agent_id_of(key)
        v.check_agent_id(node_id, "node_id")
        v.check_text(thread_id, "thread_id")
        if not isinstance(reader, NodeTranscriptReader):
            raise v.ArgumentTypeError("reader must have a read_latest(thread_id, limit) method")
        result = self._best_effort(partial(
            self._upstream.adopt_remote, key, agent, node_id=node_id, thread_id=thread_id,
            reader=reader), "adopt_remote")
        return result if isinstance(result, UpstreamLink) else None

    def register_node_reader(self, node_id: str, reader: NodeTranscriptReader) -> None:
        """Supply the reader of a paired node's transcripts (after a restart, for example)."""
        self._guard()
        v.check_agent_id(node_id, "node_id")
        if not isinstance(reader, NodeTranscriptReader):
            raise v.ArgumentTypeError("reader must have a read_latest(thread_id, limit) method")
        self._upstream.register_node_reader(node_id, reader)

    def note_own_text(self, key: str, text: str) -> None:
        """Record that the gateway itself is forwarding ``text`` into upstream session ``key``.

        Call it *before* writing the text upstream: a scan that runs in
        between would otherwise count the gateway's own text as a person's.

        Only a hash of the normalized text is stored; the session's last
        ``own_text_window`` of them are self-echo: an upstream human turn
        with the same normalized text does not count. A storage fault is
        logged, not raised.
        """
        self._guard()
        v.check_key(key, "key")
        if not isinstance(text, str):
            raise v.ArgumentTypeError(f"text must be a str, not {type(text).__name__}")
        self._best_effort(partial(self._upstream.note_own_text, key, agent_id_of(key), text),
                          "note_own_text")

    def scan_upstream(self) -> list[SessionStateEvent]:
        """Run one monitor cadence now over every link some watcher watches.

        Blocks until every scan finished (bounded by the configured timeouts);
        notices are queued before it returns. Never raises for storage or
        source faults (they are logged).

        Returns:
            The events this cadence recorded (``human_direct_message``,
            ``upstream_missing``).
        """
        self._guard()
        try:
            return self._upstream.scan_cycle()
        except (*_ACTOR_FAILURES, GatewayClosed) as exc:
            logger.warning("scan_upstream failed: %s: %s", type(exc).__name__, exc)
            return []

    # --- notices -------------------------------------------------------------

    def pending_notices(self, watcher_key: str) -> list[str]:
        """Return the watcher's queued system events, oldest first, without consuming them."""
        self._guard()
        v.check_key(watcher_key, "watcher_key")
        key = (watcher_key, agent_id_of(watcher_key))
        if not self._has_session_state(key):
            return []  # nothing was ever queued for it: no actor needed
        return list(self._ask_session(key, PendingTexts()))

    def drain(self, watcher_key: str) -> list[str]:
        """The watcher's turn: consume its queued events and acknowledge the notices.

        Each acknowledged cursor moves to its frozen watermark, never to the
        head; a pair that changed again in between gets exactly one follow-up
        notice, queued before this returns.

        Returns:
            The consumed texts, oldest first.
        """
        self._guard()
        v.check_key(watcher_key, "watcher_key")
        key = (watcher_key, agent_id_of(watcher_key))
        if not self._has_session_state(key):
            return []
        outcome: DrainOutcome = self._ask_session(key, Drain())
        self._publish(outcome.follow_ups)
        return list(outcome.texts)

    def enqueue_system_event(self, key: str, text: str, *,
                             context_key: str | None = None) -> bool:
        """Queue an ordinary system event for ``key``'s next turn (not a notice).

        Deduplicated on identical text and ``context_key``; draining it
        acknowledges nothing. Returns whether it was newly queued.
        """
        self._guard()
        v.check_key(key, "key")
        v.check_text(text, "text", max_length=8192)
        v.check_text(context_key, "context_key", optional=True)
        return bool(self._ask_session((key, agent_id_of(key)),
                                      EnqueueEvent(text=text, context_key=context_key)))

    # --- internals -----------------------------------------------------------

    def _guard(self) -> None:
        if on_our_thread():
            raise ReentrantCall("gateway methods must not be called from on_wake or our actors")
        if not self._closed and (self._fatal.is_set() or not self._persistence.is_alive()):
            logger.error("closing the gateway: its database or its writer is unusable")
            self.close()
        if self._closed:
            raise GatewayClosed("the gateway is closed")

    def _note_read_fault(self, exc: BaseException) -> None:
        # Corruption met by a read is as fatal as one met by a write.
        if isinstance(exc, FATAL_ERRORS) or isinstance(exc.__cause__, FATAL_ERRORS):
            logger.error("a read found the signal-log database corrupt: %s", exc)
            self._fatal.set()

    def _has_session_state(self, key: tuple[str, str]) -> bool:
        return self._sessions.peek(key) is not None or self._handoff.has(key)

    def _start_session(self, key: tuple[str, str]) -> pykka.ActorRef[Any]:
        return SessionActor.start(
            key[0], key[1], persistence=self._persistence, queue_limit=self.config.queue_limit,
            timeout=self._timeout, handoff=self._handoff)

    def _start_cursor(self, key: tuple[str, str, str]) -> pykka.ActorRef[Any]:
        return CursorActor.start(
            key[0], (key[1], key[2]), resolve_session=lambda k, a: self._sessions.get((k, a)),
            watcher_agent_id=agent_id_of(key[0]), persistence=self._persistence,
            waker=self._waker, timeout=self._timeout)

    def _ask_session(self, key: tuple[str, str], message: object) -> Any:
        return self._ask(self._sessions, key, message)

    def _ask_cursor(self, key: tuple[str, str, str], message: object) -> Any:
        return self._ask(self._cursors, key, message)

    def _ask(self, pool: ActorPool[Any], key: Any, message: object) -> Any:
        # Actor asks wait on inner requests of up to `timeout`, so allow two.
        for _attempt in (1, 2):
            try:
                return pool.get(key).ask(message, timeout=2 * self._timeout)
            except pykka.ActorDeadError:
                if self._closed:
                    raise GatewayClosed("the gateway was closed during the call") from None
            except pykka.Timeout:
                raise GatewayUnavailable(
                    f"no answer within {2 * self._timeout:.1f}s ({type(message).__name__})"
                ) from None
            except (SessionStateError, StorageError):
                raise
            except Exception as exc:  # a bug in an actor: logged there at ERROR
                raise GatewayUnavailable(
                    f"{type(message).__name__} failed: {type(exc).__name__}") from exc
        raise GatewayUnavailable(f"the actor stopped twice ({type(message).__name__})")

    def _best_effort(self, call: Callable[[], Any], what: str) -> Any:
        try:
            return call()
        except StorageError as exc:
            # The persistence actor logs each storage-fault episode once.
            logger.debug("%s failed: %s", what, exc)
            return None
        except _ACTOR_FAILURES as exc:
            logger.warning("%s failed: %s: %s", what, type(exc).__name__, exc)
            return None

    def _record(self, command: RecordEvent) -> SessionStateEvent | None:
        outcome = self._best_effort(
            lambda: submit(self._persistence, command, timeout=self._timeout),
            f"recording {command.kind}")
        if not isinstance(outcome, RecordOutcome):
            return None
        self._publish(outcome.notices)
        return outcome.event

    def _publish(self, notices: Iterable[NoticeDescriptor]) -> None:
        pending = []
        for descriptor in notices:
            key = (descriptor.watcher_key, descriptor.target_key, descriptor.target_agent_id)
            message = Publish(descriptor=descriptor)
            try:
                future = self._cursors.get(key).ask(message, block=False)
            except pykka.ActorDeadError:
                future = None
            pending.append((key, message, future))
        for key, message, future in pending:
            try:
                if future is None:
                    raise pykka.ActorDeadError("retry")
                future.get(timeout=2 * self._timeout)
            except pykka.ActorDeadError:
                self._best_effort(partial(self._ask_cursor, key, message), "publishing a notice")
            except Exception as exc:  # the durable cursor stays pending; a drain/restart heals
                logger.warning("publishing a notice failed: %s: %s", type(exc).__name__, exc)
