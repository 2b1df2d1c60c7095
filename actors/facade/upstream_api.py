"""The upstream collaborator of :class:`actors.Gateway`: adopting other coding agents' sessions.

:class:`UpstreamApi` owns the public upstream methods (``adopt``,
``adopt_many``, ``adopt_remote``, ``register_node_reader``,
``note_own_text``, ``start_upstream_notifications``, ``scan_upstream``):
their argument checks and the hand-off to the upstream service
(:class:`actors.monitors.service.UpstreamService`). ``Gateway`` delegates to
it and shows these docstrings as its own.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import msgspec

from actors.errors import (
    ArgumentTypeError,
    InvalidArgument,
)
from actors.facade import validate as v
from actors.monitors.adoption import AdoptRequest
from actors.monitors.filefeed import ChangeFeed
from actors.monitors.service import UpstreamService
from actors.upstream.claude.node import NodeTranscriptReader
from actors.upstream.sources import find_source, source_names
from persistence import (
    SessionStateEvent,
    UpstreamLink,
)
from persistence.keys import agent_id_of, is_agent_qualified

__all__ = ["AdoptRequest", "UpstreamApi"]

logger = logging.getLogger("actors.gateway")


def _checked(request: AdoptRequest) -> AdoptRequest:
    """Validate one adoption request; returns it normalized (agent id and path filled).

    Raises:
        ArgumentTypeError, InvalidArgument, InvalidSessionKey: a bad field.
    """
    if not isinstance(request, AdoptRequest):
        raise v.ArgumentTypeError("each session must be an AdoptRequest")
    key, source, path = request.key, request.source, request.path
    v.check_key(key, "key")
    agent = v.check_agent_id(request.agent_id) or agent_id_of(key)
    if not isinstance(source, str):
        raise v.ArgumentTypeError(f"source must be a str, not {type(source).__name__}")
    kind = find_source(source)
    if kind is None:
        raise InvalidArgument(f"source must be one of {sorted(source_names())}, not {source!r}")
    if not isinstance(path, str | os.PathLike):
        raise v.ArgumentTypeError(f"path must be a path, not {type(path).__name__}")
    file_path = str(v.check_text(os.fspath(path), "path", max_length=4096))
    v.check_optional_key(request.thread_id, "thread_id")
    if not isinstance(request.from_start, bool):
        raise v.ArgumentTypeError("from_start must be a bool")
    if kind.holds == "store" and request.thread_id is None:
        raise InvalidArgument(f"thread_id (the {kind.title} session id) is required for "
                              f"{kind.name}")
    return msgspec.structs.replace(request, agent_id=agent, path=file_path)


class UpstreamApi:
    """Adopting sessions of other agents: ``adopt``, ``note_own_text``, ``scan_upstream``, ...

    Args:
        guard: ``() -> None``, raising ``ReentrantCall`` or ``GatewayClosed``
            when a public call must not run (``Runtime.guard``).
        best_effort: ``(call, what) -> result | None``, ``None`` on a storage
            or actor fault, logged (``Runtime.best_effort``).
        upstream: the upstream service that adopts, scans and keeps links.

    Thread-safe (it keeps no state of its own but :attr:`_feed_factory`).
    """

    _feed_factory: Callable[..., ChangeFeed] | None = None
    """Builds the file-notification feed (``None``: ``watchfiles``); tests inject one."""

    def __init__(self, *, guard: Callable[[], None],
                 best_effort: Callable[[Callable[[], Any], str], Any],
                 upstream: UpstreamService) -> None:
        """Wire the collaborator (non-blocking)."""
        self._guard = guard
        self._best_effort = best_effort
        self._upstream = upstream

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
        request = _checked(AdoptRequest(key=key, source=source, path=path,
                                        thread_id=thread_id, agent_id=agent_id,
                                        from_start=from_start))
        agent, file_path = str(request.agent_id), os.fspath(request.path)
        result = self._best_effort(partial(
            self._upstream.adopt, key, agent, source=source, path=file_path,
            thread_id=thread_id, from_start=from_start), "adopt")
        return result if isinstance(result, UpstreamLink) else None

    def adopt_many(self, sessions: Iterable[AdoptRequest], *,
                   watcher: str | None = None) -> list[UpstreamLink | None]:
        """Adopt many sessions at once (and watch them), sharing group commits.

        The same as calling :meth:`adopt` for each (and :meth:`watch` by
        ``watcher`` for each one that got a link), but the baselines are read
        in chunks and each chunk commits together: adopting thousands of
        sessions costs about their file reads, not two durable commits each.

        Args:
            sessions: :class:`AdoptRequest` items (``key``, ``source``,
                ``path``, optional ``thread_id``, ``agent_id``, ``from_start``).
            watcher: an agent-qualified session key that explicitly watches
                every linked session (registered in the same transaction).

        Returns:
            One entry per request, in order, as :meth:`adopt` returns.

        Raises:
            InvalidArgument, ArgumentTypeError, InvalidSessionKey: a bad
                request (nothing is adopted then).

        Caller's thread; blocks on file reads and disk.
        """
        self._guard()
        if isinstance(sessions, str | bytes | AdoptRequest) or not isinstance(
                sessions, Iterable):
            raise ArgumentTypeError(f"sessions must be a list of AdoptRequest, not "
                                      f"{type(sessions).__name__}")
        requests = [_checked(r) for r in sessions]
        if watcher is not None:
            v.check_key(watcher, "watcher")
            if not is_agent_qualified(watcher):
                raise InvalidArgument("watcher must be an agent-qualified session key")
        result = self._best_effort(partial(self._upstream.adopt_many, requests,
                                           watcher=watcher), "adopt_many")
        return result if isinstance(result, list) else [None] * len(requests)

    def adopt_remote(self, key: str, *, node_id: str, thread_id: str,
                     reader: NodeTranscriptReader,
                     agent_id: str | None = None) -> UpstreamLink | None:
        """Adopt a Claude Code thread that lives on a paired node.

        The host supplies ``reader`` (see
        :class:`~actors.upstream.claude.node.NodeTranscriptReader`); each scan
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

        Only a keyed hash of the normalized text is stored, with the time it
        was noted; the session keeps its last ``own_text_window`` of them.
        The first upstream human turn with the same normalized text, written
        no earlier than ``own_text_skew_ms`` before the note, is self-echo and
        does not count; it uses the note up, so a person typing the same words
        later is reported. A note no row matches within ``own_text_ttl_ms``
        expires and hides nothing. A storage fault is logged, not raised.
        """
        self._guard()
        v.check_key(key, "key")
        if not isinstance(text, str):
            raise v.ArgumentTypeError(f"text must be a str, not {type(text).__name__}")
        self._best_effort(partial(self._upstream.note_own_text, key, agent_id_of(key), text),
                          "note_own_text")

    def start_upstream_notifications(self) -> bool:
        """Scan an adopted session as soon as its transcript changes (file notifications).

        Watches the directories of every watched link's files with
        ``watchfiles`` (inotify, FSEvents, ...) in one daemon thread; a burst
        of writes to one transcript triggers one scan of that link alone, on
        the gateway's worker threads, and its notice is queued (and
        ``on_wake`` called) as soon as its turn commits. Links watched later
        are followed from their :meth:`watch` on (or the next scan cycle).
        Notifications can be lost, so keep calling :meth:`scan_upstream`
        (or open with ``monitor=True``) as the fallback: unchanged sources
        cost one ``stat`` each. ``Gateway.open(monitor=True)`` calls this when
        ``config.upstream_notifications`` is set. Idempotent.

        Returns:
            ``False`` when notifications are unavailable (logged); polling
            still works.

        Caller's thread; non-blocking apart from one read of the links.
        """
        self._guard()
        try:
            return self._upstream.start_notifications(self._feed_factory)
        except Exception as exc:
            logger.warning("start_upstream_notifications failed: %s: %s", type(exc).__name__,
                           exc)
            return False

    def scan_upstream(self, *, keys: Iterable[str] | None = None) -> list[SessionStateEvent]:
        """Run one monitor cadence now over every link some watcher watches.

        Only links whose source changed since the scan that last settled them
        are read (one ``stat`` each decides). Blocks until every scan
        finished (bounded by the configured timeouts); notices are queued
        before it returns. Never raises for storage or source faults (they
        are logged).

        Args:
            keys: scan only the links of these session keys, watched or not
                (a caller that already knows which sources changed, e.g.
                ``ssa hook``, or one about to watch them: what was typed before
                a watch begins is recorded before its cursor exists, so it
                never notifies it); ``None``: every watched link.

        Returns:
            The events this cadence recorded (``human_direct_message``,
            ``upstream_missing``).

        Raises:
            InvalidArgument, ArgumentTypeError: ``keys`` is a string or
                holds a non-string.
            GatewayClosed: the gateway is closed.
        """
        self._guard()
        only = None if keys is None else frozenset(v.check_texts(keys, "keys"))
        try:
            return self._upstream.scan_cycle(only=only)
        except Exception as exc:  # a scan never raises into the caller
            logger.warning("scan_upstream failed: %s: %s", type(exc).__name__, exc)
            return []

