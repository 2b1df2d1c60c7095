"""The recording collaborator of :class:`actors.Gateway`: the producers and the message tools.

:class:`RecordingApi` owns the public producers (``spawn_subagent``,
``finish_run``, ``human_message``, ``set_goal``, ``compacted``, ``record``)
and the message tools (``sessions_send``, ``take_messages``,
``enqueue_system_event``): their argument checks, the
:class:`~persistence.RecordEvent` each writes, and the own-text note a
delivery into an upstream-linked session leaves. ``Gateway`` delegates to it
and shows these docstrings as its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from actors.config import GatewayConfig
from actors.engine.messages import Deliver, EnqueueEvent, TakeMessages
from actors.errors import InvalidArgument
from actors.facade import validate as v
from actors.facade.values import SendResult, SessionStateEventInput
from actors.monitors.service import UpstreamService
from persistence import RecordEvent, SessionStateEvent
from persistence.keys import agent_id_of, is_agent_qualified

__all__ = ["DeliverFn", "RecordingApi"]

logger = logging.getLogger("actors.facade.gateway")

DeliverFn = Callable[[str, str, str], bool]
"""The host's dispatcher of :meth:`RecordingApi.sessions_send`: ``(sender, target, text)``."""
_GOAL_ACTIONS = frozenset({"set", "updated", "removed"})
_RUN_SUMMARIES = {
    "ok": "child run completed",
    "error": "child run failed",
    "timeout": "child run timed out",
    "cancelled": "child run cancelled",
}


class RecordingApi:
    """Producers and message tools, on the request paths they are given.

    Args:
        config: the gateway's settings (``group_scope`` shapes ``human_message``).
        guard: ``() -> None``, raising ``ReentrantCall`` or ``GatewayClosed``
            when a public call must not run.
        record: ``(RecordEvent) -> SessionStateEvent | None``: write one
            event and run its wakes (``None`` on a storage fault, logged).
        ask_session: ``((session_key, agent_id), message) -> answer``: ask a
            session actor (raises ``GatewayUnavailable`` when it does not answer).
        best_effort: ``(call, what) -> result | None``, ``None`` on a storage
            or actor fault, logged.
        upstream: the upstream service (``has_link``, ``note_own_text``).
        watch: ``(watcher_key, target_key) -> bool``, the gateway's ``watch``.

    Thread-safe: it keeps no state.
    """

    def __init__(self, *, config: GatewayConfig, guard: Callable[[], None],
                 record: Callable[[RecordEvent], SessionStateEvent | None],
                 ask_session: Callable[[tuple[str, str], object], Any],
                 best_effort: Callable[[Callable[[], Any], str], Any],
                 upstream: UpstreamService, watch: Callable[[str, str], bool]) -> None:
        """Wire the collaborator (non-blocking)."""
        self.config = config
        self._guard = guard
        self._record = record
        self._ask_session = ask_session
        self._best_effort = best_effort
        self._upstream = upstream
        self._watch = watch

    # --- producers -----------------------------------------------------------

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
                          watched=accepted and self._watch(sender_key, target_key))

    def take_messages(self, key: str) -> list[str]:
        """Consume the texts the default dispatcher delivered to ``key``."""
        self._guard()
        v.check_key(key, "key")
        return list(self._ask_session((key, agent_id_of(key)), TakeMessages()))

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

