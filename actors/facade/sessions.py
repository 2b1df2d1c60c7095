"""The sessions collaborator of :class:`actors.Gateway`: session entries, watches and reads.

:class:`SessionsApi` owns ``create_session``, ``reset_session``,
``delete_session``, ``watch``, ``unwatch``, ``set_role``, ``role``,
``session_status`` and ``sessions_list``: their argument checks, the writes and actor requests
behind them, and the degraded answers of a read fault. ``Gateway`` delegates
to it and shows these docstrings as its own.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import apsw
import msgspec

from actors.config import GatewayConfig
from actors.engine.messages import Register, Reset
from actors.engine.registry import ActorPool
from actors.engine.session import Handoff
from actors.errors import InvalidArgument, StorageError
from actors.facade import validate as v
from actors.facade.activity import activity_now
from actors.facade.typed import typed_texts
from actors.monitors.service import UpstreamService
from persistence import (
    Command,
    DeleteOutcome,
    DeleteSession,
    NoteActivity,
    ReadPool,
    SessionRow,
    SessionStatus,
    SetRole,
    StateChanges,
    Unwatch,
    UpsertSession,
    WorkerActivity,
    list_sessions,
    peek,
    read_changes,
    read_version,
)
from persistence.keys import agent_id_of, is_agent_qualified

__all__ = ["SessionsApi"]

_CHAT_TYPES = frozenset({"direct", "group", "channel"})


class SessionsApi:
    """Session entries, watches and state reads, on the request paths they are given.

    Args:
        config: the gateway's settings (``changes_limit``, ``ask_timeout_s``).
        guard: ``() -> None``, raising ``ReentrantCall`` or ``GatewayClosed``
            when a public call must not run.
        write: ``(command) -> answer``: submit one command to the persistence
            actor (raises ``StorageError`` on a storage fault).
        best_effort: ``(call, what) -> result | None``, ``None`` on a storage
            or actor fault, logged.
        ask_session: ``((session_key, agent_id), message) -> answer``.
        ask_cursor: ``((watcher, target, agent), message) -> answer``.
        sessions, cursors: the pools of session and cursor actors (entries
            of a deleted session or a dropped watch are discarded).
        handoff: the state retired session actors hand to their successors.
        upstream: the upstream service (``track_link``, ``forget``).
        reads: the read connections.
        note_read_ok, note_read_fault: the read-fault bookkeeping
            (``() -> None`` and ``(exc, what) -> None``).
        clock: ``() -> int``, the gateway's clock in epoch ms.

    Thread-safe: it keeps no state.
    """

    def __init__(self, *, config: GatewayConfig, guard: Callable[[], None],
                 write: Callable[[Command], Any],
                 best_effort: Callable[[Callable[[], Any], str], Any],
                 ask_session: Callable[[tuple[str, str], object], Any],
                 ask_cursor: Callable[[tuple[str, str, str], object], Any],
                 sessions: ActorPool[tuple[str, str]],
                 cursors: ActorPool[tuple[str, str, str]], handoff: Handoff,
                 upstream: UpstreamService, reads: ReadPool,
                 note_read_ok: Callable[[], None],
                 note_read_fault: Callable[[BaseException, str], None],
                 clock: Callable[[], int]) -> None:
        """Wire the collaborator (non-blocking)."""
        self._now = clock
        self.config = config
        self._timeout = config.ask_timeout_s
        self._guard = guard
        self._write = write
        self._best_effort = best_effort
        self._ask_session = ask_session
        self._ask_cursor = ask_cursor
        self._sessions = sessions
        self._cursors = cursors
        self._handoff = handoff
        self._upstream = upstream
        self._reads = reads
        self._note_read_ok = note_read_ok
        self._note_read_fault = note_read_fault

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
        self._best_effort(partial(self._write, patch), "create_session")

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
        outcome = self._best_effort(partial(
            self._write, DeleteSession(session_key=key, agent_id=agent)), "delete_session")
        if not isinstance(outcome, DeleteOutcome):
            return
        # The watchers' notices about it went with its cursors, in every process.
        self._cursors.discard_where(lambda k: k[0] == key or k[1:] == (key, agent))
        self._upstream.forget(key, agent)
        if agent == agent_id_of(key):
            self._sessions.discard_where(lambda k: k == (key, agent), wait=True)
            self._handoff.discard((key, agent))

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

    def set_role(self, key: str, role: str, *, wake: bool = True) -> bool:
        """Make ``key`` a manager (watched sessions notify it; ``wake``: it is woken too),
        or a worker again (it is never notified nor woken: its watches are dropped).

        Sessions are workers until made managers. The prompt hooks of the coding
        agents (``ssa hook``) and ``ssa manage`` read this role.

        Args:
            key: the session's key.
            role: ``"manager"`` or ``"worker"``.
            wake: for a manager, whether a notice that opens for it wakes it
                (``ssa hook``'s push paths); ignored for a worker.

        Returns:
            Whether the role or the wake setting changed.

        Raises:
            InvalidSessionKey: the key is invalid.
            InvalidArgument: ``role`` is neither ``"manager"`` nor ``"worker"``.
            ArgumentTypeError: ``wake`` is not a bool.
            StorageError: the write failed.
            GatewayClosed: the gateway is closed.

        Any thread; blocks on one write.
        """
        self._guard()
        v.check_key(key, "key")
        if role not in ("manager", "worker"):
            raise InvalidArgument("role must be 'manager' or 'worker'")
        if not isinstance(wake, bool):
            raise v.ArgumentTypeError(f"wake must be a bool, not {type(wake).__name__}")
        changed = bool(self._write(SetRole(session_key=key, agent_id=agent_id_of(key),
                                           role="manager" if role == "manager" else "worker",
                                           wake=wake)))
        if role == "worker":  # its cursors left the log; drop their actors too
            self._cursors.discard_where(lambda k: k[0] == key)
        return changed

    def note_activity(self, key: str, state: str, *, detail: str | None = None,
                      at: int | None = None, restart: bool = False) -> bool:
        """Record where ``key``'s tool stands now, as its own hook saw it (issue 33 item 2).

        Args:
            key: the adopted session's key.
            state: ``"busy"``, ``"idle"``, ``"waiting"``, ``"finished"`` or ``"failed"``.
            detail: ``"permission"`` or ``"input"`` for ``waiting``; the outcome
                (``"error"``, ``"timeout"``, ``"cancelled"``) for ``failed``; else ``None``.
            at: when, epoch ms (default: the gateway's clock).
            restart: a new spell of the same state (a second permission prompt
                after the first was answered): its ``since`` starts at ``at``.

        Returns:
            Whether the stored state or detail changed (an older note than the
            stored one changes nothing; the same state again keeps its ``since``).

        Raises:
            InvalidSessionKey: the key is invalid.
            InvalidArgument: an unknown state or detail.
            StorageError: the write failed.
            GatewayClosed: the gateway is closed.

        Records no event: the turn's end (``run_completed``/``run_failed``) is
        recorded by the caller with :meth:`Gateway.record`. Any thread; blocks on
        one write.
        """
        self._guard()
        v.check_key(key, "key")
        checked = v.check_activity(state, detail)
        when = v.check_int(at, "at", optional=True)
        if not isinstance(restart, bool):
            raise v.ArgumentTypeError(f"restart must be a bool, not {type(restart).__name__}")
        return bool(self._write(NoteActivity(
            session_key=key, agent_id=agent_id_of(key), state=checked, detail=detail,
            at=self._now() if when is None else when, restart=restart)))

    def activity(self, key: str) -> WorkerActivity | None:
        """Where ``key``'s tool stands, as its hooks last told, or ``None`` (never told, or
        a read fault, which is logged); ``busy`` when its transcript grew since
        (:mod:`actors.facade.activity`). Any thread; blocks on two reads and a ``stat``.

        Raises:
            InvalidSessionKey: the key is invalid.
        """
        self._guard()
        v.check_key(key, "key")
        try:
            with self._reads.connection(self._timeout) as conn:
                found = activity_now(conn, key, agent_id_of(key))
            self._note_read_ok()
            return found
        except (StorageError, apsw.Error) as exc:
            self._note_read_fault(exc, "activity")
            return None

    def role(self, key: str) -> tuple[str, bool]:
        """``key``'s role: ``("manager", wake)`` or ``("worker", False)``.

        Raises:
            InvalidSessionKey: the key is invalid.
            StorageError: the read failed.
            GatewayClosed: the gateway is closed.

        Any thread; blocks on one read.
        """
        self._guard()
        v.check_key(key, "key")
        try:
            with self._reads.connection(self._timeout) as conn:
                return peek.role(conn, key)
        except apsw.Error as exc:
            raise StorageError(f"role: {exc}") from exc

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
        dropped = self._best_effort(partial(
            self._write, Unwatch(watcher_key=watcher_key, target_key=target_key,
                                 target_agent_id=agent)), "unwatch")
        if dropped is True:  # its notice left the log; the queues follow at their next read
            self._cursors.discard_where(lambda k: k == (watcher_key, target_key, agent))
        return dropped is True

    def session_status(self, key: str, *, changes_since: int | None = None,
                       agent_id: str | None = None,
                       typed_text: int | None = None) -> SessionStatus:
        """Return the state version and, with ``changes_since``, the typed changes after it.

        Never advances a cursor. ``history_gap`` comes only from the session's
        pruned watermark. On a read fault the fault is logged and the result
        is empty (version 0) with ``history_gap=True``, telling the caller to
        refresh the whole session instead of trusting an empty delta.

        With ``typed_text=N`` (characters, 1 to 100,000; needs
        ``changes_since``) the result's ``typed_text`` gives, for each listed
        ``human_direct_message`` of an adopted session, what the person typed,
        read now from the tool's own transcript, each text cut to ``N``
        characters, or why it cannot be shown (the transcript changed or is
        gone). The text is never stored or logged. Blocks on bounded reads of
        those transcripts; caller's thread.

        Raises:
            ArgumentTypeError: ``changes_since`` or ``typed_text`` is not an ``int``.
            InvalidChangesSince: ``changes_since`` is negative.
            InvalidArgument: ``typed_text`` is out of range, or given without
                ``changes_since``.
        """
        self._guard()
        v.check_key(key, "key")
        agent = v.check_agent_id(agent_id) or agent_id_of(key)
        after = None if changes_since is None else v.check_changes_since(changes_since)
        bound = None if typed_text is None else v.check_typed_text(typed_text, after)
        try:
            with self._reads.connection(self._timeout) as conn:
                if after is None:
                    status = SessionStatus(state_version=read_version(conn, key, agent))
                else:
                    version, changes = read_changes(conn, key, agent, after,
                                                    self.config.changes_limit)
                    status = SessionStatus(
                        state_version=version, state_changes=changes,
                        typed_text=None if bound is None else typed_texts(
                            conn, changes.events, bound))
                activity = activity_now(conn, key, agent)
                if activity is not None:
                    status = msgspec.structs.replace(status, worker_state=activity)
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
