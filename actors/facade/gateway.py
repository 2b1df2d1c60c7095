"""The thread-safe ``Gateway`` facade that a threaded agent gateway holds.

``Gateway`` owns small collaborators and delegates each public method to one
of them, with the same signature (a test compares them) and its docstring:

* :class:`~actors.facade.core.Runtime`: the actors, pools and services, the
  shared request paths, and ``close`` (opened by
  :func:`~actors.facade.lifecycle.open_runtime`);
* :class:`~actors.facade.sessions.SessionsApi`: session entries, watches and reads;
* :class:`~actors.facade.recording.RecordingApi`: the producers and message tools;
* :class:`~actors.facade.notices.NoticesApi`: ``pending_notices`` and ``drain``;
* :class:`~actors.facade.hosting_api.HostingApi`: hosting and leases;
* :class:`~actors.facade.upstream_api.UpstreamApi`: adopting and scanning
  other agents' sessions.
"""


from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any, Self, TypeVar

from actors.config import GatewayConfig
from actors.engine.hosting import Hosting
from actors.facade.core import Runtime
from actors.facade.hosting_api import HostingApi
from actors.facade.lifecycle import open_runtime
from actors.facade.notices import NoticesApi
from actors.facade.recording import DeliverFn, RecordingApi
from actors.facade.sessions import SessionsApi
from actors.facade.upstream_api import UpstreamApi
from actors.facade.values import SendResult, SessionStateEventInput
from actors.monitors.adoption import AdoptRequest
from actors.monitors.filefeed import ChangeFeed
from actors.monitors.service import UpstreamService
from actors.upstream.claude.node import NodeTranscriptReader
from persistence import (
    ReadPool,
    SessionRow,
    SessionStateEvent,
    SessionStatus,
    UpstreamLink,
    WorkerActivity,
)
from persistence.lazylog import quiet_package
from persistence.locations import default_state_path

__all__ = ["Clock", "DeliverFn", "Gateway", "default_state_path", "hosting_of", "upstream_service"]

quiet_package("actors")  # direct imports of the engine get the NullHandler too

Clock = Callable[[], int]
_F = TypeVar("_F", bound=Callable[..., Any])


def _doc_of(source: Callable[..., Any]) -> Callable[[_F], _F]:
    """Give a delegation ``source``'s docstring: the contract is written once, beside its code.

    Applied at class definition; adds nothing to a call.
    """
    def document(method: _F) -> _F:
        method.__doc__ = source.__doc__
        return method
    return document


class Gateway:
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

    def __init__(self, runtime: Runtime) -> None:
        """Internal: use :meth:`open`. Wires the collaborators to an opened runtime."""
        r = self._runtime = runtime
        self.host_id = r.host_id
        """This gateway's id in hosting and scan leases (random per open)."""
        self.path = r.path
        """The SQLite file (``None`` on PostgreSQL)."""
        self.location = r.location
        """Where the signal log lives: the SQLite file, or the URL without its password."""
        self.config = r.config
        # The engine's handles, the runtime's own objects: tests and ``ssa watch``
        # (actors.cli.watch) reach the upstream service, pools and actors here.
        self._persistence, self._reads, self._presence = r.persistence, r.reads, r.presence
        self._sessions, self._cursors, self._waker = r.sessions, r.cursors, r.waker
        self._upstream, self._hosting, self._timeout = r.upstream, r.hosting, r.timeout
        self._session_api = SessionsApi(
            config=r.config, guard=r.guard, write=r.write, best_effort=r.best_effort,
            ask_session=r.ask_session, ask_cursor=r.ask_cursor, sessions=r.sessions,
            cursors=r.cursors, handoff=r.handoff, upstream=r.upstream, reads=r.reads,
            note_read_ok=r.note_read_ok, note_read_fault=r.note_read_fault, clock=r.clock)
        self._recording = RecordingApi(
            config=r.config, guard=r.guard, record=r.record, ask_session=r.ask_session,
            best_effort=r.best_effort, upstream=r.upstream, watch=self._session_api.watch)
        self._notices = NoticesApi(
            guard=r.guard, has_session_state=r.has_session_state, ask_session=r.ask_session,
            publish=r.publish, rewakes=r.rewakes, reads=r.reads, timeout=r.timeout,
            queue_limit=r.config.queue_limit, note_read_ok=r.note_read_ok,
            note_read_fault=r.note_read_fault)
        self._hosting_api = HostingApi(guard=r.guard, hosting=r.hosting, waker=r.waker,
                                       release_leases=r.release_leases)
        self._upstream_api = UpstreamApi(guard=r.guard, best_effort=r.best_effort,
                                         upstream=r.upstream)

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
        database open at once (see docs/deployment.md).

        Args:
            path: the SQLite file, or a ``postgresql://user@host/db`` URL
                (libpq's URL; add ``?schema=NAME`` for another schema than
                ``ssa``; needs the ``postgres`` extra); ``None`` means
                :func:`default_state_path`. A missing SQLite file is created
                0600; of its missing directories, the default location's are
                all created (0700), for another path only the file's own
                folder, when that folder's parent exists
                (:mod:`persistence.locations`).
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
                ``":memory:"``, holds a NUL or is a symlink loop, a directory
                or no regular file, or a path whose folder and that folder's
                parent are both missing; ``clock``
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
        gateway = cls(open_runtime(path, config=config, clock=clock, on_wake=on_wake,
                                   monitor=monitor, hosts=hosts))
        if monitor:
            gateway._upstream.start_cadence()
            if gateway.config.upstream_notifications:
                gateway.start_upstream_notifications()
        return gateway

    def close(self, timeout: float = 10.0) -> None:
        """Stop every actor this gateway started, and nothing else.

        Args:
            timeout: seconds to wait for each actor to stop.

        Idempotent; safe from any thread but the gateway's own. Pending
        notices are durable and come back at the next :meth:`open`. A
        gateway still open when the interpreter exits is closed then
        (:mod:`actors.engine.exit`).

        Raises:
            ReentrantCall: called from ``on_wake`` or another gateway thread
                (it would wait for itself); hand it to another thread.
        """
        self._runtime.close(timeout)

    def __enter__(self) -> Self:
        """Enter a ``with`` block: the gateway itself."""
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Leave a ``with`` block: :meth:`close`."""
        self.close()

    @property
    def _feed_factory(self) -> Callable[..., ChangeFeed] | None:
        """Builds the file-notification feed (``None``: ``watchfiles``); tests inject one."""
        return self._upstream_api._feed_factory

    @_feed_factory.setter
    def _feed_factory(self, factory: Callable[..., ChangeFeed] | None) -> None:
        self._upstream_api._feed_factory = factory

    # --- sessions ------------------------------------------------------------

    @_doc_of(SessionsApi.create_session)
    def create_session(self, key: str, *, agent_id: str | None = None,
                       session_id: str | None = None, spawned_by: str | None = None,
                       chat_type: str | None = None) -> None:
        self._session_api.create_session(key, agent_id=agent_id, session_id=session_id,
                                         spawned_by=spawned_by, chat_type=chat_type)

    @_doc_of(RecordingApi.spawn_subagent)
    def spawn_subagent(self, parent_key: str, child_key: str, *,
                       run_id: str) -> SessionStateEvent | None:
        return self._recording.spawn_subagent(parent_key, child_key, run_id=run_id)

    @_doc_of(RecordingApi.finish_run)
    def finish_run(self, session_key: str, *, run_id: str,
                   outcome: str) -> SessionStateEvent | None:
        return self._recording.finish_run(session_key, run_id=run_id, outcome=outcome)

    @_doc_of(SessionsApi.reset_session)
    def reset_session(self, key: str, *, session_id: str | None = None) -> None:
        self._session_api.reset_session(key, session_id=session_id)

    @_doc_of(SessionsApi.delete_session)
    def delete_session(self, key: str, *, agent_id: str | None = None) -> None:
        self._session_api.delete_session(key, agent_id=agent_id)

    # --- producers -----------------------------------------------------------

    @_doc_of(RecordingApi.human_message)
    def human_message(self, key: str, *, channel: str,
                      actor_id: str | None = None) -> SessionStateEvent | None:
        return self._recording.human_message(key, channel=channel, actor_id=actor_id)

    @_doc_of(RecordingApi.set_goal)
    def set_goal(self, key: str, *, action: str, actor_type: str = "human",
                 actor_id: str | None = None) -> SessionStateEvent | None:
        return self._recording.set_goal(key, action=action, actor_type=actor_type,
                                        actor_id=actor_id)

    @_doc_of(RecordingApi.compacted)
    def compacted(self, key: str, *, operation_id: str) -> SessionStateEvent | None:
        return self._recording.compacted(key, operation_id=operation_id)

    @_doc_of(RecordingApi.record)
    def record(self, event: SessionStateEventInput) -> SessionStateEvent | None:
        return self._recording.record(event)

    # --- tools ---------------------------------------------------------------

    @_doc_of(RecordingApi.sessions_send)
    def sessions_send(self, sender_key: str, target_key: str, text: str, *, watch: bool = False,
                      deliver: DeliverFn | None = None) -> SendResult:
        return self._recording.sessions_send(sender_key, target_key, text, watch=watch,
                                             deliver=deliver)

    @_doc_of(RecordingApi.take_messages)
    def take_messages(self, key: str) -> list[str]:
        return self._recording.take_messages(key)

    @_doc_of(SessionsApi.watch)
    def watch(self, watcher_key: str, target_key: str, *, agent_id: str | None = None,
              since: int | None = None) -> bool:
        return self._session_api.watch(watcher_key, target_key, agent_id=agent_id, since=since)

    @_doc_of(SessionsApi.set_role)
    def set_role(self, key: str, role: str, *, wake: bool = True) -> bool:
        return self._session_api.set_role(key, role, wake=wake)

    @_doc_of(SessionsApi.role)
    def role(self, key: str) -> tuple[str, bool]:
        return self._session_api.role(key)

    @_doc_of(SessionsApi.unwatch)
    def unwatch(self, watcher_key: str, target_key: str, *,
                agent_id: str | None = None) -> bool:
        return self._session_api.unwatch(watcher_key, target_key, agent_id=agent_id)

    @_doc_of(SessionsApi.note_activity)
    def note_activity(self, key: str, state: str, *, detail: str | None = None,
                      at: int | None = None, restart: bool = False) -> bool:
        return self._session_api.note_activity(key, state, detail=detail, at=at,
                                               restart=restart)

    @_doc_of(SessionsApi.activity)
    def activity(self, key: str) -> WorkerActivity | None:
        return self._session_api.activity(key)

    @_doc_of(SessionsApi.session_status)
    def session_status(self, key: str, *, changes_since: int | None = None,
                       agent_id: str | None = None,
                       typed_text: int | None = None) -> SessionStatus:
        return self._session_api.session_status(key, changes_since=changes_since,
                                                agent_id=agent_id, typed_text=typed_text)

    @_doc_of(SessionsApi.sessions_list)
    def sessions_list(self, *, agent_id: str | None = None) -> list[SessionRow]:
        return self._session_api.sessions_list(agent_id=agent_id)

    # --- notices -------------------------------------------------------------

    @_doc_of(NoticesApi.pending_notices)
    def pending_notices(self, watcher_key: str) -> list[str]:
        return self._notices.pending_notices(watcher_key)

    @_doc_of(NoticesApi.drain)
    def drain(self, watcher_key: str, *, only: Iterable[str] | None = None) -> list[str]:
        return self._notices.drain(watcher_key, only=only)

    # --- hosting -------------------------------------------------------------

    @_doc_of(HostingApi.host)
    def host(self, *watcher_keys: str) -> None:
        self._hosting_api.host(*watcher_keys)

    @_doc_of(HostingApi.unhost)
    def unhost(self, *watcher_keys: str) -> None:
        self._hosting_api.unhost(*watcher_keys)

    @_doc_of(HostingApi.release_leases)
    def release_leases(self) -> None:
        self._hosting_api.release_leases()

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
        return self._runtime.shared_at_open

    @property
    def hosted(self) -> frozenset[str]:
        """The watchers this process hosts (non-blocking)."""
        return self._hosting_api.hosted

    @_doc_of(RecordingApi.enqueue_system_event)
    def enqueue_system_event(self, key: str, text: str, *,
                             context_key: str | None = None) -> bool:
        return self._recording.enqueue_system_event(key, text, context_key=context_key)

    # --- upstream ------------------------------------------------------------

    @_doc_of(UpstreamApi.adopt)
    def adopt(self, key: str, *, source: str, path: str | os.PathLike[str],
              thread_id: str | None = None, agent_id: str | None = None,
              from_start: bool = False) -> UpstreamLink | None:
        return self._upstream_api.adopt(key, source=source, path=path, thread_id=thread_id,
                                        agent_id=agent_id, from_start=from_start)

    @_doc_of(UpstreamApi.adopt_many)
    def adopt_many(self, sessions: Iterable[AdoptRequest], *,
                   watcher: str | None = None) -> list[UpstreamLink | None]:
        return self._upstream_api.adopt_many(sessions, watcher=watcher)

    @_doc_of(UpstreamApi.adopt_remote)
    def adopt_remote(self, key: str, *, node_id: str, thread_id: str,
                     reader: NodeTranscriptReader,
                     agent_id: str | None = None) -> UpstreamLink | None:
        return self._upstream_api.adopt_remote(key, node_id=node_id, thread_id=thread_id,
                                               reader=reader, agent_id=agent_id)

    @_doc_of(UpstreamApi.register_node_reader)
    def register_node_reader(self, node_id: str, reader: NodeTranscriptReader) -> None:
        self._upstream_api.register_node_reader(node_id, reader)

    @_doc_of(UpstreamApi.note_own_text)
    def note_own_text(self, key: str, text: str) -> None:
        self._upstream_api.note_own_text(key, text)

    @_doc_of(UpstreamApi.start_upstream_notifications)
    def start_upstream_notifications(self) -> bool:
        return self._upstream_api.start_upstream_notifications()

    @_doc_of(UpstreamApi.scan_upstream)
    def scan_upstream(self, *, keys: Iterable[str] | None = None) -> list[SessionStateEvent]:
        return self._upstream_api.scan_upstream(keys=keys)


def upstream_service(gateway: Gateway) -> UpstreamService:
    """The upstream service ``gateway`` runs: the seam for ``ssa watch``.

    ``ssa watch`` drives the service's scans itself (it leases the links it
    adopts, scans new links at once and runs scan cycles on its cadence);
    an embedding gateway uses :meth:`Gateway.scan_upstream` instead. Not part
    of the embedding API (``api-contract.md``): the command line's.

    Args:
        gateway: an open gateway.

    Returns:
        Its :class:`~actors.monitors.service.UpstreamService`.

    Any thread; does not block.
    """
    return gateway._upstream


def hosting_of(gateway: Gateway) -> Hosting:
    """The hosting (leases and wake probe) ``gateway`` runs, for benchmarks' counters.

    Args:
        gateway: an open gateway.

    Returns:
        Its :class:`~actors.engine.hosting.Hosting` (``probes`` counts change probes).

    Any thread; does not block.
    """
    return gateway._hosting
