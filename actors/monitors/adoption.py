"""Adoption of sessions from local sources: baselines read, links upserted in chunks.

What lives here: :class:`AdoptRequest` (one session to adopt, public as
``actors.AdoptRequest``) and :class:`Adopter`, owned by the upstream service,
which turns requests into link upserts (or a bare ``adopted`` event for a
source that cannot be trusted) and commits them, :data:`ADOPT_CHUNK` at a
time. The paired-node path is :mod:`actors.monitors.paired`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import msgspec
import pykka

from actors.upstream.baseline import Baseline, source_key_of
from actors.upstream.sources import find_source, source_names
from persistence import (
    Command,
    LinkOutcome,
    RecordEvent,
    Reply,
    UpsertLink,
    UpstreamLink,
    collect,
    send_many,
    submit,
)
from persistence.keys import agent_id_of

__all__ = ["ADOPT_CHUNK", "SOURCES", "AdoptRequest", "Adopter"]

logger = logging.getLogger(__name__)

SOURCES = frozenset(source_names())
"""The built-in sources' names (the registry, :mod:`actors.upstream.sources`, is the list;
``adopt`` checks against it at each call)."""
ADOPT_CHUNK = 256
"""Sessions whose baselines are read before their commands are committed together."""


class AdoptRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One session to adopt with :meth:`actors.Gateway.adopt_many` (fields as for ``adopt``)."""

    key: str
    source: str
    path: str | os.PathLike[str]
    thread_id: str | None = None
    agent_id: str | None = None
    from_start: bool = False


class Adopter:
    """Adopts sessions from local sources for the upstream service.

    Methods run in the caller's thread and block on reading baselines and on
    the commits.

    Args:
        persistence: the persistence actor.
        timeout: seconds each commit may take.
        new_lease: the lease keyword arguments a new link starts with
            (:meth:`actors.monitors.leases.LeaseKeeper.new_lease`).
        rebased: called with ``(session_key, agent_id)`` when a link was
            re-baselined (its monitor must start afresh).
        watched: called with a link adopted with a watcher.
    """

    def __init__(self, *, persistence: pykka.ActorRef[Any], timeout: float,
                 new_lease: Callable[[], dict[str, Any]],
                 rebased: Callable[[tuple[str, str]], None],
                 watched: Callable[[UpstreamLink], None]) -> None:
        self._persistence = persistence
        self._timeout = timeout
        self._new_lease = new_lease
        self._rebased = rebased
        self._watched = watched

    def adopt(self, key: str, agent_id: str, *, source: str, path: str,
              thread_id: str | None, from_start: bool) -> UpstreamLink | None:
        """Baseline the source, upsert the link and record ``adopted`` (anchor §3.15).

        Returns ``None`` (and records ``adopted`` without a link) for a
        source that cannot be trusted; ``None`` without recording anything
        for an unreadable one. Raises ``StorageError`` as :func:`persistence.submit`.
        """
        command = self._adoption(key, agent_id, source=source, path=path, thread_id=thread_id,
                                 from_start=from_start)
        if command is None:
            return None
        return self._adopted(command, submit(self._persistence, command, timeout=self._timeout))

    def adopt_many(self, requests: list[AdoptRequest], *, watcher: str | None
                   ) -> list[UpstreamLink | None]:
        """Adopt many sessions, sharing group commits; optionally watch each linked one.

        Baselines are read in this thread, :data:`ADOPT_CHUNK` at a time, and
        each chunk's commands (link upsert, ``adopted`` and the watch in one
        command per session) are committed together. Returns one entry per
        request, as :meth:`adopt` would (``None`` also for a storage fault,
        logged). Caller's thread; blocks on disk.
        """
        results: list[UpstreamLink | None] = []
        # Measured: overlapping a chunk's reads with the previous chunk's commit
        # is slower here (both hold the GIL most of the time), so chunks go in turn.
        for start in range(0, len(requests), ADOPT_CHUNK):
            commands = [self._adoption(r.key, r.agent_id or agent_id_of(r.key),
                                       source=r.source, path=os.fspath(r.path),
                                       thread_id=r.thread_id, from_start=r.from_start,
                                       watcher=watcher)
                        for r in requests[start:start + ADOPT_CHUNK]]
            todo: list[Command] = [c for c in commands if c is not None]
            results += self._finish_chunk(commands, send_many(self._persistence, todo))
        return results

    def _finish_chunk(self, commands: list[UpsertLink | RecordEvent | None],
                      replies: list[Reply]) -> list[UpstreamLink | None]:
        outcomes = iter(collect(replies, timeout=self._timeout))
        results: list[UpstreamLink | None] = []
        for command in commands:
            if command is None:
                results.append(None)
                continue
            outcome = next(outcomes)
            if isinstance(outcome, Exception):
                logger.debug("adopting %s failed: %s", command.session_key, outcome)
                results.append(None)
                continue
            results.append(self._adopted(command, outcome))
        return results

    def _adopted(self, command: UpsertLink | RecordEvent, outcome: Any) -> UpstreamLink | None:
        if not isinstance(command, UpsertLink):
            return None  # adopted without a link (a refused source)
        assert isinstance(outcome, LinkOutcome)
        if outcome.rebased:
            self._rebased((command.session_key, command.agent_id))
        if command.watcher_key is not None:
            self._watched(outcome.link)
        return outcome.link

    def _adoption(self, key: str, agent_id: str, *, source: str, path: str,
                  thread_id: str | None, from_start: bool, watcher: str | None = None,
                  ) -> UpsertLink | RecordEvent | None:
        """The command that adopts one session (``None``: its source is unreadable)."""
        kind = find_source(source)
        if kind is None:
            logger.warning("cannot adopt %s: no source %r is registered", key, source)
            return None
        found = kind.reading().baseline(path, thread_id, from_start, 1000)
        baseline = found if isinstance(found, Baseline) else None
        if baseline is None:
            if isinstance(found, str):
                logger.warning("cannot adopt %s: %s", key, found)
            elif kind.reading().waiting(path):
                logger.info("not adopting %s yet: its %s transcript has no complete first "
                            "line", key, source)
            else:
                logger.warning("cannot adopt %s: its %s source is unreadable", key, source)
            return None
        source_key = source_key_of(baseline.host_id, baseline.thread_id, baseline.upstream_ref)
        # Reason codes only (never text): why it gets no link, or why its turns never count.
        payload: dict[str, str] = {"channel": source}
        if baseline.refusal is not None:
            payload["noLink"] = baseline.refusal
        elif baseline.note is not None:
            payload["note"] = baseline.note
        adopted = RecordEvent(
            session_key=key, agent_id=agent_id, kind="adopted", actor_type="system",
            summary=f"session adopted from {source}",
            dedupe_key=f"adopted:{key}:{agent_id}:{source_key}",
            payload_json=msgspec.json.encode(payload).decode())
        if baseline.refusal is not None:
            logger.info("adopted %s without an upstream link: %s", key, baseline.refusal)
            return adopted
        return UpsertLink(
            session_key=key, agent_id=agent_id, source=source, host_id=baseline.host_id,
            thread_id=baseline.thread_id,
            upstream_ref_json=msgspec.json.encode(baseline.upstream_ref, order="sorted").decode(),
            source_key=source_key, marker_json=msgspec.json.encode(baseline.marker).decode(),
            adopted=adopted, watcher_key=watcher, **self._new_lease())
