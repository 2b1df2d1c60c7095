"""The notices collaborator of :class:`actors.Gateway`: a watcher's queue and its turn.

:class:`NoticesApi` owns ``pending_notices`` and ``drain``: showing a
watcher's queued system events without consuming them, consuming them and
acknowledging the notices, publishing the follow-up notices a drain causes,
and scheduling the rewake of a notice whose acknowledgement did not commit.
``Gateway`` delegates to it and shows these docstrings as its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import apsw

from actors.engine.messages import Drain, DrainOutcome, PendingTexts
from actors.engine.notices import notice_text
from actors.engine.rewake import Rewakes
from actors.errors import StorageError
from actors.facade import validate as v
from persistence import NoticeDescriptor, ReadPool, pending_cursors
from persistence.keys import agent_id_of

__all__ = ["NoticesApi"]


class NoticesApi:
    """Pending notices and drains, on the request paths they are given.

    Args:
        guard: ``() -> None``, raising ``ReentrantCall`` or ``GatewayClosed``
            when a public call must not run.
        has_session_state: ``((session_key, agent_id)) -> bool``: whether a
            session actor (or its handed-off state) exists in this process.
        ask_session: ``((session_key, agent_id), message) -> answer``.
        publish: ``(notices) -> None``: run the wakes of committed notices.
        rewakes: the rewake schedule of unacknowledged notices.
        reads: the read connections.
        timeout: seconds a read waits for a connection.
        queue_limit: the most open notices one queue shows.
        note_read_ok, note_read_fault: the read-fault bookkeeping
            (``() -> None`` and ``(exc, what) -> None``).

    Thread-safe: it keeps no state.
    """

    def __init__(self, *, guard: Callable[[], None],
                 has_session_state: Callable[[tuple[str, str]], bool],
                 ask_session: Callable[[tuple[str, str], object], Any],
                 publish: Callable[[Iterable[NoticeDescriptor]], None], rewakes: Rewakes,
                 reads: ReadPool, timeout: float, queue_limit: int,
                 note_read_ok: Callable[[], None],
                 note_read_fault: Callable[[BaseException, str], None]) -> None:
        """Wire the collaborator (non-blocking)."""
        self._guard = guard
        self._has_session_state = has_session_state
        self._ask_session = ask_session
        self._publish = publish
        self._rewakes = rewakes
        self._reads = reads
        self._timeout = timeout
        self._queue_limit = queue_limit
        self._note_read_ok = note_read_ok
        self._note_read_fault = note_read_fault

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
            ArgumentTypeError: ``only`` is a string, or holds a non-string
                (a :class:`TypeError`; see ``actors.errors``).
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
        limit = self._queue_limit
        return [notice_text(k, ls) for k, _a, ls, _mt in rows[-limit:]]
