"""The thread-safe ``Gateway`` facade that a threaded agent gateway holds."""


from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Iterable
from functools import partial

import apsw
import pykka

from actors.config import GatewayConfig
from actors.engine.messages import (
    Deliver,
    Drain,
    DrainOutcome,
    EnqueueEvent,
    PendingTexts,
    Register,
    Reset,
    TakeMessages,
)
from actors.engine.notices import notice_text
from actors.errors import (
    InvalidArgument,
    StorageError,
)
from actors.facade import validate as v
from actors.facade.core import SaneClock, wall_clock
from actors.facade.upstream_api import UpstreamApi
from actors.facade.values import SendResult, SessionStateEventInput
from persistence import (
    Backend,
    DeleteOutcome,
    DeleteSession,
    Ping,
    Presence,
    Prune,
    ReadPool,
    RecordEvent,
    SessionRow,
    SessionStateEvent,
    SessionStatus,
    StateChanges,
    SweepOutcome,
    Unwatch,
    UpsertSession,
    clear_all_leases,
    is_epoch_ms,
    list_sessions,
    open_backend,
    pending_cursors,
    read_changes,
    read_version,
    submit,
    sweep_cursors,
    write_transaction,
)
from persistence.errors import InvalidLocation
from persistence.keys import agent_id_of, is_agent_qualified
from persistence.lazylog import quiet_package
from persistence.locations import default_state_path

__all__ = ["Gateway", "default_state_path"]

logger = logging.getLogger(__name__)
quiet_package("actors")  # direct imports of the engine get the NullHandler too

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


def _sane_now(clock: Clock) -> int:
    """``clock()`` if it answers epoch ms, else the system clock (as the writer does)."""
    try:
        now = clock()
    except Exception:
        return wall_clock()
    return now if is_epoch_ms(now) else wall_clock()


def _join(backend: Backend, presence: Presence, host_id: str,
          now: int) -> tuple[SweepOutcome, bool]:
    """Migrate, join the presence marker and, when alone, run the restart sweep.

    All inside one write transaction: two gateways opening at once serialize
    here, so at most one of them finds itself alone. Returns the sweep and
    whether it was alone.

    Raises:
        StorageError, SchemaError, DatabaseBusy: as :meth:`Gateway.open`.
    """
    conn = backend.connect(writer=True, migrate=True)
    try:
        with write_transaction(backend, conn):
            alone = presence.join()
            if alone:
                # Nobody else has the log open: leases and unclaimed wakes are stale.
                clear_all_leases(conn)
                sweep = sweep_cursors(conn, None, now, 0, host=host_id)
            else:
                sweep = SweepOutcome(notices=())
    except BaseException as exc:
        if backend.is_driver_error(exc) and not isinstance(exc, StorageError):
            raise StorageError(f"cannot open {backend.location}: {exc}") from exc
        raise
    finally:
        conn.close()
    return sweep, alone


class Gateway(UpstreamApi):
    """Session state awareness for one gateway process (``api-contract.md``).

    Create it with :meth:`open`; close it with :meth:`close` or a ``with``
    block (one still open when the interpreter exits is closed then, and its
    threads never keep the process alive). Every method may be called from
    many threads at once; the gateway's actors run on those calling threads
    and on at most ``config.worker_threads`` workers. Methods block the
    calling thread until their work is committed and published, for at most
    about twice ``config.ask_timeout_s`` (a producer that leads a group
    commit: until the database answers, at most ``busy_timeout_ms`` behind a
    foreign lock); none may be
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
        hosts: Iterable[str] = (),
    ) -> Gateway:
        """Open (creating if needed) the database and start the gateway's actors.

        Any number of gateways, in any number of processes, may have one
        database open at once (see the README's "Deployment").

        Args:
            path: the SQLite file, or a ``postgresql://user@host/db`` URL
                (libpq's URL; add ``?schema=NAME`` for another schema than
                ``ssa``; needs the ``postgres`` extra); ``None`` means
                :func:`default_state_path`. A SQLite file's missing
                directories are created 0700, the file 0600.
            config: settings; defaults to ``GatewayConfig()``.
            clock: ``() -> int`` epoch milliseconds used for every timestamp,
                retention and cadence decision (inject one in tests).
            on_wake: ``(watcher_key) -> None``, called once per newly opened
                notice of a non-``subagent:`` watcher (never for ambient
                notices) across all processes: here when this process caused
                it and no other live process hosts the watcher, or when this
                process hosts it. It runs in the thread of the call that
                opened the notice, or in the ``ssa-hosting`` thread for a
                wake another process addressed here; it must not block.
            monitor: start the periodic upstream monitor cadence (first scan
                after ``upstream_initial_delay_s``, then every
                ``upstream_interval_s``); tests pass ``False`` and call
                :meth:`scan_upstream`.
            hosts: watcher keys whose agent loop runs in this process: their
                wakes run here whichever process caused them (see
                :meth:`host`). Needs ``on_wake``.

        When no other gateway has the database open, runs the restart sweep
        (every open notice is re-frozen to cover all pending work and woken
        once, anchor §3.8); beside running gateways it leaves their cursors
        alone (open notices are durable and show here anyway). Then a forced
        prune. Blocks on disk (behind another process's write lock for at
        most ``busy_timeout_ms``).

        Raises:
            ArgumentTypeError: ``config``, ``clock``, ``on_wake`` or
                ``monitor`` is of the wrong type, ``path`` is not a ``str`` or
                ``os.PathLike``, or ``clock`` answers something else than an ``int``.
            InvalidArgument: ``path`` is a URL of another scheme, or a bad
                PostgreSQL URL (the message says what is wrong), empty,
                ``":memory:"``, holds a NUL or is a symlink loop; ``clock``
                raised or answered a time that is not epoch milliseconds (a
                clock of seconds).
            BackendNotInstalled: a ``postgresql://`` URL without the
                ``postgres`` extra (``python -m pip install '.[postgres]'``
                in the checkout).
            DatabaseBusy: a gateway of an older release (one owner per
                database) has the file open.
            SchemaError: the file (or schema) is not a session-state database
                or is newer.
            StorageError: the database cannot be opened or set up (a
                PostgreSQL server that does not answer included).
            OSError: the directory or file cannot be created.
        """
        config = v.check_open(config, clock, on_wake, monitor)
        hosted = v.check_hosts(hosts, on_wake)
        given = v.check_location(path)
        location = given if given is not None else default_state_path()
        try:
            backend = open_backend(location, synchronous=config.synchronous,
                                   busy_timeout_ms=config.busy_timeout_ms, vfs=config.vfs)
        except InvalidLocation as exc:
            raise InvalidArgument(str(exc)) from None
        backend.prepare()
        clock = SaneClock(clock) if clock is not None else wall_clock
        host_id = uuid.uuid4().hex
        presence = backend.presence()
        try:
            sweep, alone = _join(backend, presence, host_id, _sane_now(clock))
        except BaseException:
            presence.release()
            raise
        gateway = cls(backend, config, clock, on_wake, presence, host_id)
        gateway._shared_at_open = not alone
        try:
            gateway._persistence.ask(Ping(), timeout=gateway._timeout)
            gateway._publish(sweep.notices)
            submit(gateway._persistence, Prune(force=True), timeout=gateway._timeout)
            if hosted:
                gateway._hosting.host(hosted)
        except BaseException as exc:
            gateway.close()
            if isinstance(exc, pykka.ActorDeadError | pykka.Timeout):
                raise StorageError(
                    f"the persistence actor failed to start on {backend.location}") from exc
            raise
        if monitor:
            gateway._upstream.start_cadence()
            if config.upstream_notifications:
                gateway.start_upstream_notifications()
        return gateway

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
        # The watchers' notices about it went with its cursors, in every process.
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
            dedupe_key=v.check_text(event.dedupe_key, "dedupe_key", optional=True,
                                    max_bytes=v.MAX_DEDUPE_KEY_BYTES),
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

    def watch(self, watcher_key: str, target_key: str, *, agent_id: str | None = None,
              since: int | None = None) -> bool:
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
            since: start a new watch as if it had been registered at this
                state version instead (e.g. ``0`` for a session that began
                after the watcher did, which another process adopted first):
                the target's notify-eligible changes after it that are
                already in the log, by actors other than the watcher, are
                pending as one notice (``changesSince since``). No
                ``on_wake`` runs for that notice; the watcher sees it at its
                next read. An existing watch is kept as it is.

        Raises:
            InvalidSessionKey: a key is invalid.
            InvalidChangesSince, ArgumentTypeError: ``since`` is negative or not an int.

        Returns:
            ``False`` for a self-watch, a watcher that is not agent-qualified
            (e.g. bare ``global``), or a storage fault (logged).
        """
        self._guard()
        v.check_key(watcher_key, "watcher_key")
        v.check_key(target_key, "target_key")
        agent = v.check_agent_id(agent_id) or agent_id_of(target_key)
        start = v.check_since(since)
        if watcher_key == target_key or not is_agent_qualified(watcher_key):
            return False
        pair = (watcher_key, target_key, agent)
        result = self._best_effort(lambda: self._ask_cursor(pair, Register(since=start)),
                                   "watch")
        if result is True:
            self._best_effort(partial(self._upstream.track_link, target_key, agent), "watch")
        return result is True

    def unwatch(self, watcher_key: str, target_key: str, *,
                agent_id: str | None = None) -> bool:
        """Stop ``watcher_key`` watching ``target_key``: its cursor and open notice go.

        The inverse of :meth:`watch` (``ssa watches remove``). A later
        :meth:`watch` starts again at the target's state version then.

        Args:
            watcher_key: the watcher.
            target_key: the watched session.
            agent_id: the target's agent (default: the key's).

        Returns:
            Whether a watch was dropped (``False``: there was none, or a
            storage fault, logged).

        Raises:
            InvalidSessionKey: a key is invalid.
            GatewayClosed: the gateway is closed.

        Any thread; blocks on one write.
        """
        self._guard()
        v.check_key(watcher_key, "watcher_key")
        v.check_key(target_key, "target_key")
        agent = v.check_agent_id(agent_id) or agent_id_of(target_key)
        dropped = self._best_effort(lambda: submit(
            self._persistence, Unwatch(watcher_key=watcher_key, target_key=target_key,
                                       target_agent_id=agent),
            timeout=self._timeout), "unwatch")
        if dropped is True:  # its notice left the log; the queues follow at their next read
            self._cursors.discard_where(lambda k: k == (watcher_key, target_key, agent))
        return dropped is True

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
                    status = SessionStatus(state_version=read_version(conn, key, agent))
                else:
                    version, changes = read_changes(conn, key, agent, after,
                                                    self.config.changes_limit)
                    status = SessionStatus(state_version=version, state_changes=changes)
            self._note_read_ok()
            return status
        except (StorageError, apsw.Error) as exc:
            self._note_read_fault(exc, "session_status")
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
                rows = list_sessions(conn, agent)
            self._note_read_ok()
            return rows
        except (StorageError, apsw.Error) as exc:
            self._note_read_fault(exc, "sessions_list")
            return []

    # --- notices -------------------------------------------------------------

    def pending_notices(self, watcher_key: str) -> list[str]:
        """Return the watcher's queued system events, oldest first, without consuming them."""
        self._guard()
        v.check_key(watcher_key, "watcher_key")
        key = (watcher_key, agent_id_of(watcher_key))
        if not self._has_session_state(key) and not self._open_notice_texts(watcher_key):
            return []  # nothing queued here and no open notice: no actor needed
        # The session actor places the open notices among this process's events
        # and keeps them to show during a read fault.
        return list(self._ask_session(key, PendingTexts()))

    def drain(self, watcher_key: str, *, only: Iterable[str] | None = None) -> list[str]:
        """The watcher's turn: consume its queued events and acknowledge the notices.

        Each acknowledged cursor moves to its frozen watermark, never to the
        head; a pair that changed again in between gets exactly one follow-up
        notice, queued before this returns. Only notices whose acknowledgement
        committed are returned, so no two drains (in any processes) return one
        notice; one whose acknowledgement could not be written (a storage
        fault, another process holding the write lock past
        ``busy_timeout_ms``) stays queued, and the watcher is woken again
        after 1 s, then 2, 4, ... up to 60 s, until a drain acknowledges it.

        Args:
            watcher_key: the watcher whose turn it is.
            only: consume just these texts, as :meth:`pending_notices`
                returned them (a watcher that was shown its notices before
                it acknowledged them, e.g. ``ssa hook``): an entry queued
                since, or a notice replaced since (its ``changesSince``
                moved), stays queued. ``None`` (the default) consumes all.

        Returns:
            The consumed texts, oldest first (with ``only``, a subset of it).

        Raises:
            InvalidSessionKey: ``watcher_key`` is not a valid key.
            InvalidArgument: ``only`` is a string, or holds a non-string.
            GatewayClosed: the gateway is closed.

        Any thread; blocks on the session actor and one write.
        """
        self._guard()
        v.check_key(watcher_key, "watcher_key")
        shown = None if only is None else v.check_texts(only, "only")
        key = (watcher_key, agent_id_of(watcher_key))
        if shown == () or (
                not self._has_session_state(key) and not self._open_notice_texts(watcher_key)):
            return []  # nothing to consume: no actor needed
        outcome: DrainOutcome = self._ask_session(key, Drain(only=shown))
        self._publish(outcome.follow_ups)
        if outcome.unacknowledged:
            self._rewakes.later(watcher_key)  # its wake was spent on a turn that got nothing
        else:
            self._rewakes.settled(watcher_key)
        return list(outcome.texts)

    def _open_notice_texts(self, watcher_key: str) -> list[str]:
        """The watcher's open notices as the queue would show them (no local events)."""
        try:
            with self._reads.connection(self._timeout) as conn:
                rows = pending_cursors(conn, watcher_key)
        except (StorageError, apsw.Error) as exc:
            self._note_read_fault(exc, "pending_notices")
            return []
        self._note_read_ok()
        limit = self.config.queue_limit
        return [notice_text(k, ls) for k, _a, ls, _mt in rows[-limit:]]

    # --- hosting -------------------------------------------------------------

    def host(self, *watcher_keys: str) -> None:
        """Declare that these watchers' agent loops run in this process.

        While this gateway is open its ``on_wake`` receives every wake of
        these watchers, whichever process (or thread) caused the notice:
        another process that opens a notice for a hosted watcher addresses
        the wake to the hosts, and this process finds it within about
        ``config.probe_interval_ms`` (plus one commit). Several processes
        may host one watcher; each wake then runs in exactly one of them.
        The lease behind it is renewed every third of ``config.lease_ms``;
        if this process dies it lapses after at most ``lease_ms`` and wakes
        run where they are caused again. Wakes owed to these watchers (ones
        other processes addressed to their hosts that nobody took, and ones a
        host that died or left took while their notice is still open) are
        delivered now, once each. Idempotent.

        Args:
            watcher_keys: agent-qualified watcher session keys.

        Raises:
            InvalidSessionKey, InvalidArgument: a bad key, or no ``on_wake``
                was given to :meth:`open`.
            StorageError: the lease could not be written.

        Blocks on one write (it takes the leases and claims the owed wakes); calling thread.
        """
        self._guard()
        hosted = v.check_hosts(watcher_keys, self._waker)
        if hosted:
            self._hosting.host(hosted)

    def unhost(self, *watcher_keys: str) -> None:
        """Stop hosting these watchers (their wakes run where caused, or at another host).

        Raises:
            InvalidSessionKey: a bad key.
            StorageError: the lease could not be written.
        """
        self._guard()
        for key in watcher_keys:
            v.check_key(key, "watcher_key")
        if watcher_keys:
            self._hosting.unhost(tuple(watcher_keys))

    def release_leases(self) -> None:
        """Drop this gateway's scan and hosting leases now, so other processes take over.

        For a process that is done scanning but not closing yet (``ssa
        hook``, which ends without closing): the leases otherwise stay until
        they lapse (``lease_ms``), and another process skips those links
        meanwhile. A later scan or hosting renewal takes them again. Best
        effort: a failure is logged and the leases lapse by themselves.

        Raises:
            GatewayClosed: the gateway is closed.

        Any thread; blocks on one write.
        """
        self._guard()
        self._release_leases()

    @property
    def read_pool(self) -> ReadPool:
        """The gateway's pool of read connections to the signal log.

        For the read functions of :mod:`persistence` (``persistence.peek``,
        ``persistence.pending_cursors``, ...) on either backend, whose
        statements use ``?`` placeholders: ``with gw.read_pool.connection()
        as conn:``. Do not write through a connection, nor keep one past its
        block; once the gateway is closed, checking one out raises
        ``StorageUnavailable``. Any thread; non-blocking.
        """
        return self._reads

    @property
    def shared_at_open(self) -> bool:
        """Whether another gateway had the database open when this one opened it.

        ``False`` means this gateway ran the restart sweep. Non-blocking.
        """
        return self._shared_at_open

    @property
    def hosted(self) -> frozenset[str]:
        """The watchers this process hosts (non-blocking)."""
        return self._hosting.watchers

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

