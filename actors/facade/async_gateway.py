"""``AsyncGateway``: the asyncio face of the same engine (``from actors import AsyncGateway``).

Every :class:`~actors.Gateway` method is a coroutine here, with the same
name, arguments, results and errors. None blocks the event loop: a call runs
on one of a fixed, bounded set of call threads (``config.async_call_threads``,
started on demand and reused, never one per call) while the awaiting task
yields; calls beyond the bound wait in a queue, not on the loop. The
engine's actors run on those threads exactly as they run on a threaded
gateway's callers, so group commit batches concurrent awaits as it batches
concurrent threads.

``on_wake`` (a plain function or a coroutine function, ``(watcher_key) ->
None``) always runs on the loop that opened the gateway. A wake caused by an
awaited call runs, and is awaited, before that call returns (read your
writes, per awaited call, as ``Gateway`` promises per call), for at most
``config.ask_timeout_s`` (then the call returns and the wake goes on as a task);
since the call itself has finished by then, ``on_wake`` may await the gateway (say,
a ``drain``). A wake from elsewhere (another process's, addressed to a watcher this
one hosts; an upstream scan of the cadence) runs as its own task on the loop. An
exception in ``on_wake`` is logged and survived.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, ParamSpec, Self, TypeVar

from actors.config import GatewayConfig
from actors.errors import GatewayClosed
from actors.facade import validate as v
from actors.facade.asyncwakes import run_wakes
from actors.facade.callthreads import CallThreads, in_thread
from actors.facade.gateway import Clock, DeliverFn, Gateway
from actors.facade.values import SendResult, SessionStateEventInput
from actors.monitors.adoption import AdoptRequest
from actors.upstream.claude.node import NodeTranscriptReader
from persistence import ReadPool, SessionRow, SessionStateEvent, SessionStatus, UpstreamLink
from persistence.records import WorkerActivity

__all__ = ["AsyncGateway", "OnWake"]

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

OnWake = Callable[[str], Any]
"""``(watcher_key) -> None`` or ``async (watcher_key) -> None``."""


class _CallState(threading.local):
    """The wakes one call thread collected during the call it is running."""

    owner: AsyncGateway | None = None
    wakes: list[str] | None = None


_call_state = _CallState()


class AsyncGateway:
    """Session state awareness for an asyncio program (``api-contract.md``, ``Gateway``).

    Open it with ``await AsyncGateway.open(...)``; close it with ``await
    gw.close()`` or ``async with gw:``. Use it from the loop that opened it:
    a call from another loop raises ``RuntimeError`` before it does anything.
    Every coroutine method takes the arguments of the :class:`~actors.Gateway`
    method of the same name and returns or raises what it does
    (``GatewayClosed`` after :meth:`close`); while it waits, the loop runs
    other tasks. Reads (``session_status``, ``sessions_list``,
    ``pending_notices``) run on threads of their own
    (``config.read_connections``), so they never queue behind writes.

    Cancellation: a call that was cancelled still completes in its call
    thread (its change is committed and its wakes run as tasks); only the
    awaiting task stops waiting. Notices a cancelled ``drain`` acknowledged,
    and messages a cancelled ``take_messages`` took, are not lost: the next
    ``drain`` (``take_messages``) of that key returns them first, and
    ``pending_notices`` lists them.

    Attributes:
        gateway: the underlying thread-safe :class:`~actors.Gateway`, for
            code that runs in other threads (never call it from the loop: it
            blocks).
        config: the gateway's settings.
        location: where the signal log lives (:attr:`Gateway.location`).
        path: the SQLite file, ``None`` on PostgreSQL (:attr:`Gateway.path`).
        host_id: this gateway's id in leases (:attr:`Gateway.host_id`).
    """

    def __init__(self, gateway: Gateway, calls: CallThreads, reads: CallThreads,
                 loop: asyncio.AbstractEventLoop, on_wake: OnWake | None) -> None:
        """Use :meth:`open`; this wires an opened gateway to ``loop`` (internal)."""
        self.gateway = gateway
        self.config: GatewayConfig = gateway.config
        self.location: str = gateway.location
        self.path: Path | None = gateway.path
        self.host_id: str = gateway.host_id
        self._threads = calls
        self._reads = reads
        self._loop = loop
        self._on_wake = on_wake
        self._tasks: set[asyncio.Task[None]] = set()
        self._calls: set[asyncio.Future[Any]] = set()
        self._undelivered: dict[tuple[str, str], list[str]] = {}
        self._closed = False
        self._closing: asyncio.Task[None] | None = None

    # --- lifecycle -----------------------------------------------------------

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        config: GatewayConfig | None = None,
        clock: Clock | None = None,
        on_wake: OnWake | None = None,
        monitor: bool = True,
        hosts: Iterable[str] = (),
    ) -> AsyncGateway:
        """Open (creating if needed) the database and start the engine, off the loop.

        Args: ``path``, ``config``, ``clock``, ``monitor`` and ``hosts`` as
        :meth:`Gateway.open` (which it runs in a call thread, raising what it raises);
        ``on_wake``: ``(watcher_key) -> None``, a plain function or a coroutine function,
        run on this loop (see the module docstring) once per newly opened notice that
        wakes; the open's own wakes (restart sweep, takeover) run as tasks once it returns.

        Returns:
            The open gateway, bound to the running loop.

        Raises:
            RuntimeError: no asyncio event loop is running.
            ArgumentTypeError: ``on_wake`` is not callable, or ``config`` is not a
                :class:`GatewayConfig`.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError("AsyncGateway.open needs a running asyncio event loop (await it"
                               " from a coroutine; trio is not supported)") from None
        config = v.check_open(config, clock, on_wake, monitor)
        calls = CallThreads("ssa-async-call", config.async_call_threads)
        reads = CallThreads("ssa-async-read", config.read_connections)
        holder: list[AsyncGateway] = []
        early: list[str] = []  # wakes of the open itself, before there is a gateway to run them
        lock = threading.Lock()

        def shim(watcher_key: str) -> None:
            with lock:
                if not holder:
                    early.append(watcher_key)
                    return
                target = holder[0]
            target._wake_from_thread(watcher_key)

        started = calls.submit(partial(
            Gateway.open, path, config=config, clock=clock,
            on_wake=shim if on_wake is not None else None, monitor=monitor, hosts=hosts))
        opening = asyncio.wrap_future(started)
        try:
            gateway = await asyncio.shield(opening)
        except asyncio.CancelledError:  # it opens anyway: close it when it has, loop or not
            started.add_done_callback(partial(_close_abandoned, calls, reads))
            raise
        except BaseException:
            await in_thread(partial(_close_threads, calls, reads, 10.0))
            raise
        opened = cls(gateway, calls, reads, loop, on_wake)
        with lock:
            holder.append(opened)
            woken = list(early)
        for watcher_key in woken:
            opened._spawn_wake(watcher_key)
        return opened

    async def close(self, timeout: float = 10.0) -> None:
        """Close the gateway (:meth:`Gateway.close`), then wait for ``on_wake`` tasks.

        Args:
            timeout: seconds to wait for the calls in flight, for each actor
                to stop, and for the ``on_wake`` tasks still running.

        Calls still in flight (cancelled ones included) get ``timeout``
        seconds to finish first; the close itself runs on a thread of its own,
        so busy call threads cannot hold it up. Idempotent: a second call
        waits for the first to finish. Cancelling the awaiting task does not
        stop the close. The loop keeps running meanwhile. From another loop
        (or once the opening loop is closed) it closes the engine and the
        threads without waiting for ``on_wake`` tasks.
        """
        if asyncio.get_running_loop() is not self._loop:
            self._closed = True
            await in_thread(partial(self._close_engine, timeout))
            return
        if self._closing is None:
            self._closed = True
            self._closing = self._loop.create_task(self._close(timeout))
        await asyncio.shield(self._closing)

    async def _close(self, timeout: float) -> None:
        if self._calls:
            await asyncio.wait(set(self._calls), timeout=timeout)
        try:
            await in_thread(partial(self.gateway.close, timeout))
        finally:
            if self._tasks:
                _done, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
                for task in pending:
                    task.cancel()
            await in_thread(partial(self._close_engine, timeout))

    def _close_engine(self, timeout: float) -> None:
        """Any thread: close the gateway (idempotent) and the call threads; log leftovers."""
        self.gateway.close(timeout)
        stuck = _close_threads(self._threads, self._reads, timeout)
        if stuck:
            logger.warning("%d async call threads still busy after close (in user callbacks)",
                           len(stuck))
        lost = sum(len(items) for items in self._undelivered.values())
        if lost:
            logger.warning("%d notices or messages taken by cancelled calls were never "
                           "collected before close", lost)

    async def __aenter__(self) -> Self:
        """``async with gw:`` closes ``gw`` at the end of the block."""
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        """Close the gateway (see :meth:`close`)."""
        await self.close()

    @property
    def shared_at_open(self) -> bool:
        """Whether another gateway had the database open when this one opened."""
        return self.gateway.shared_at_open

    @property
    def hosted(self) -> frozenset[str]:
        """The watcher keys this process hosts (see :meth:`host`)."""
        return self.gateway.hosted

    @property
    def read_pool(self) -> ReadPool:
        """:attr:`Gateway.read_pool` (its connections block: use them off the loop)."""
        return self.gateway.read_pool

    # --- the call path -------------------------------------------------------

    async def _call(self, method: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``method`` on a call thread; then run, and await, the wakes it caused."""
        return await self._run(self._threads, None, method, *args, **kwargs)

    async def _read(self, method: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run the read ``method`` on a read thread (reads never queue behind writes)."""
        return await self._run(self._reads, None, method, *args, **kwargs)

    async def _take(self, kind: str, key: str, method: Callable[[str], list[str]]) -> list[str]:
        """A consuming call (``drain``, ``take_messages``): what a cancelled one took first."""
        taken = await self._run(self._threads, (kind, key), method, key)
        return self._undelivered.pop((kind, key), []) + taken

    async def _run(self, threads: CallThreads, keep: tuple[str, str] | None,
                   method: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        self._check_loop()
        if self._closed:
            raise GatewayClosed("the gateway is closed")
        future = asyncio.wrap_future(threads.submit(partial(
            self._in_call_thread, method, args, kwargs)))
        self._calls.add(future)
        future.add_done_callback(self._calls.discard)
        try:
            wakes, result, error = await asyncio.shield(future)
        except asyncio.CancelledError:
            future.add_done_callback(partial(self._after_cancel, keep))
            raise
        if wakes:
            runner = self._loop.create_task(self._run_wakes(wakes))
            self._tasks.add(runner)
            runner.add_done_callback(self._tasks.discard)
            _done, late = await asyncio.wait({runner}, timeout=self.config.ask_timeout_s)
            if late:  # as a sync caller stops waiting: the wakes go on as a task
                logger.warning("on_wake took longer than ask_timeout_s; the call returns and "
                               "the wakes go on")
        if error is not None:
            raise error
        return result  # type: ignore[no-any-return]

    def _check_loop(self) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not self._loop:
            raise RuntimeError("an AsyncGateway is used from the loop that opened it; from "
                               "other threads use its .gateway (the thread-safe Gateway)")

    def _in_call_thread(self, method: Callable[..., Any], args: tuple[Any, ...],
                        kwargs: dict[str, Any]) -> tuple[list[str], Any, BaseException | None]:
        """Call thread: the blocking call, with the wakes it caused collected, not run."""
        _call_state.owner, _call_state.wakes = self, []
        try:
            return _call_state.wakes, method(*args, **kwargs), None
        except Exception as exc:
            return _call_state.wakes, None, exc
        finally:
            _call_state.owner, _call_state.wakes = None, None

    def _after_cancel(self, keep: tuple[str, str] | None, future: asyncio.Future[Any]) -> None:
        """A cancelled call finished anyway (loop thread): its wakes run as tasks, and
        what a consuming call took is kept for the next one."""
        if future.cancelled() or future.exception() is not None:  # a BaseException: none
            return
        wakes, result, error = future.result()
        for watcher_key in wakes:
            self._spawn_wake(watcher_key)
        if keep is not None and error is None and result:
            self._undelivered.setdefault(keep, []).extend(result)

    def _wake_from_thread(self, watcher_key: str) -> None:
        """The engine's ``on_wake`` (any gateway thread): collect it, or post it to the loop."""
        if _call_state.owner is self and _call_state.wakes is not None:
            _call_state.wakes.append(watcher_key)
            return
        try:
            self._loop.call_soon_threadsafe(self._spawn_wake, watcher_key)
        except RuntimeError:  # the loop is closed: the notice stays open
            logger.warning("on_wake for %s not run: the event loop is closed", watcher_key)

    def _spawn_wake(self, watcher_key: str) -> None:
        task = self._loop.create_task(self._run_wakes([watcher_key]))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_wakes(self, watcher_keys: list[str]) -> None:
        """Run ``on_wake`` for each key in turn (:func:`~actors.facade.asyncwakes.run_wakes`)."""
        await run_wakes(self._on_wake, watcher_keys)

    # --- sessions ------------------------------------------------------------

    async def create_session(self, key: str, *, agent_id: str | None = None,
                             session_id: str | None = None, spawned_by: str | None = None,
                             chat_type: str | None = None) -> None:
        """:meth:`Gateway.create_session`, awaited."""
        await self._call(self.gateway.create_session, key, agent_id=agent_id,
                         session_id=session_id, spawned_by=spawned_by, chat_type=chat_type)

    async def spawn_subagent(self, parent_key: str, child_key: str, *,
                             run_id: str) -> SessionStateEvent | None:
        """:meth:`Gateway.spawn_subagent`, awaited."""
        return await self._call(self.gateway.spawn_subagent, parent_key, child_key,
                                run_id=run_id)

    async def finish_run(self, session_key: str, *, run_id: str,
                         outcome: str) -> SessionStateEvent | None:
        """:meth:`Gateway.finish_run`, awaited."""
        return await self._call(self.gateway.finish_run, session_key, run_id=run_id,
                                outcome=outcome)

    async def reset_session(self, key: str, *, session_id: str | None = None) -> None:
        """:meth:`Gateway.reset_session`, awaited."""
        await self._call(self.gateway.reset_session, key, session_id=session_id)

    async def delete_session(self, key: str, *, agent_id: str | None = None) -> None:
        """:meth:`Gateway.delete_session`, awaited."""
        await self._call(self.gateway.delete_session, key, agent_id=agent_id)

    # --- producers -----------------------------------------------------------

    async def human_message(self, key: str, *, channel: str,
                            actor_id: str | None = None) -> SessionStateEvent | None:
        """:meth:`Gateway.human_message`, awaited."""
        return await self._call(self.gateway.human_message, key, channel=channel,
                                actor_id=actor_id)

    async def set_goal(self, key: str, *, action: str, actor_type: str = "human",
                       actor_id: str | None = None) -> SessionStateEvent | None:
        """:meth:`Gateway.set_goal`, awaited."""
        return await self._call(self.gateway.set_goal, key, action=action,
                                actor_type=actor_type, actor_id=actor_id)

    async def compacted(self, key: str, *, operation_id: str) -> SessionStateEvent | None:
        """:meth:`Gateway.compacted`, awaited."""
        return await self._call(self.gateway.compacted, key, operation_id=operation_id)

    async def record(self, event: SessionStateEventInput) -> SessionStateEvent | None:
        """:meth:`Gateway.record`, awaited."""
        return await self._call(self.gateway.record, event)

    async def sessions_send(self, sender_key: str, target_key: str, text: str, *,
                            watch: bool = False, deliver: DeliverFn | None = None
                            ) -> SendResult:
        """:meth:`Gateway.sessions_send`, awaited (``deliver`` runs in a call thread)."""
        return await self._call(self.gateway.sessions_send, sender_key, target_key, text,
                                watch=watch, deliver=deliver)

    async def take_messages(self, key: str) -> list[str]:
        """:meth:`Gateway.take_messages`, awaited; what a cancelled one took comes first."""
        return await self._take("messages", key, self.gateway.take_messages)

    async def enqueue_system_event(self, key: str, text: str, *,
                                   context_key: str | None = None) -> bool:
        """:meth:`Gateway.enqueue_system_event`, awaited."""
        return await self._call(self.gateway.enqueue_system_event, key, text,
                                context_key=context_key)

    # --- watchers ------------------------------------------------------------

    async def watch(self, watcher_key: str, target_key: str, *,
                    agent_id: str | None = None, since: int | None = None) -> bool:
        """:meth:`Gateway.watch`, awaited."""
        return await self._call(self.gateway.watch, watcher_key, target_key, agent_id=agent_id,
                                since=since)

    async def set_role(self, key: str, role: str, *, wake: bool = True) -> bool:
        """:meth:`Gateway.set_role`, awaited."""
        return await self._call(self.gateway.set_role, key, role, wake=wake)

    async def role(self, key: str) -> tuple[str, bool]:
        """:meth:`Gateway.role`, awaited."""
        return await self._read(self.gateway.role, key)

    async def unwatch(self, watcher_key: str, target_key: str, *,
                      agent_id: str | None = None) -> bool:
        """:meth:`Gateway.unwatch`, awaited."""
        return await self._call(self.gateway.unwatch, watcher_key, target_key,
                                agent_id=agent_id)

    async def note_activity(self, key: str, state: str, *, detail: str | None = None,
                            at: int | None = None, restart: bool = False) -> bool:
        """:meth:`Gateway.note_activity`, awaited."""
        return bool(await self._call(self.gateway.note_activity, key, state, detail=detail,
                                     at=at, restart=restart))

    async def activity(self, key: str) -> WorkerActivity | None:
        """:meth:`Gateway.activity`, awaited."""
        return await self._read(self.gateway.activity, key)

    async def session_status(self, key: str, *, changes_since: int | None = None,
                             agent_id: str | None = None,
                             typed_text: int | None = None) -> SessionStatus:
        """:meth:`Gateway.session_status`, awaited."""
        return await self._read(self.gateway.session_status, key, changes_since=changes_since,
                                agent_id=agent_id, typed_text=typed_text)

    async def sessions_list(self, *, agent_id: str | None = None) -> list[SessionRow]:
        """:meth:`Gateway.sessions_list`, awaited."""
        return await self._read(self.gateway.sessions_list, agent_id=agent_id)

    async def pending_notices(self, watcher_key: str) -> list[str]:
        """:meth:`Gateway.pending_notices`, awaited; notices a cancelled drain took come first."""
        pending = await self._read(self.gateway.pending_notices, watcher_key)
        return list(self._undelivered.get(("drain", watcher_key), ())) + pending

    async def drain(self, watcher_key: str, *, only: Iterable[str] | None = None) -> list[str]:
        """:meth:`Gateway.drain`, awaited; notices a cancelled drain took come first.

        With ``only``, just those of them among ``only`` (the rest wait for
        the next drain).
        """
        if only is None:
            return await self._take("drain", watcher_key, self.gateway.drain)
        shown = v.check_texts(only, "only")
        taken = await self._run(self._threads, ("drain", watcher_key),
                                partial(self.gateway.drain, only=shown), watcher_key)
        kept = self._undelivered.pop(("drain", watcher_key), [])
        earlier = [text for text in kept if text in shown]
        rest = [text for text in kept if text not in shown]
        if rest:
            self._undelivered[("drain", watcher_key)] = rest
        return earlier + taken

    async def release_leases(self) -> None:
        """:meth:`Gateway.release_leases`, awaited."""
        await self._call(self.gateway.release_leases)

    async def host(self, *watcher_keys: str) -> None:
        """:meth:`Gateway.host`, awaited."""
        await self._call(self.gateway.host, *watcher_keys)

    async def unhost(self, *watcher_keys: str) -> None:
        """:meth:`Gateway.unhost`, awaited."""
        await self._call(self.gateway.unhost, *watcher_keys)

    # --- upstream ------------------------------------------------------------

    async def adopt(self, key: str, *, source: str, path: str | os.PathLike[str],
                    thread_id: str | None = None, agent_id: str | None = None,
                    from_start: bool = False) -> UpstreamLink | None:
        """:meth:`Gateway.adopt`, awaited."""
        return await self._call(self.gateway.adopt, key, source=source, path=path,
                                thread_id=thread_id, agent_id=agent_id, from_start=from_start)

    async def adopt_many(self, sessions: Iterable[AdoptRequest], *,
                         watcher: str | None = None) -> list[UpstreamLink | None]:
        """:meth:`Gateway.adopt_many`, awaited (``sessions`` is read in a call thread)."""
        return await self._call(self.gateway.adopt_many, sessions, watcher=watcher)

    async def adopt_remote(self, key: str, *, node_id: str, thread_id: str,
                           reader: NodeTranscriptReader,
                           agent_id: str | None = None) -> UpstreamLink | None:
        """:meth:`Gateway.adopt_remote`, awaited (``reader`` is called in gateway threads)."""
        return await self._call(self.gateway.adopt_remote, key, node_id=node_id,
                                thread_id=thread_id, reader=reader, agent_id=agent_id)

    async def register_node_reader(self, node_id: str, reader: NodeTranscriptReader) -> None:
        """:meth:`Gateway.register_node_reader`, awaited."""
        await self._call(self.gateway.register_node_reader, node_id, reader)

    async def note_own_text(self, key: str, text: str) -> None:
        """:meth:`Gateway.note_own_text`, awaited."""
        await self._call(self.gateway.note_own_text, key, text)

    async def start_upstream_notifications(self) -> bool:
        """:meth:`Gateway.start_upstream_notifications`, awaited."""
        return await self._call(self.gateway.start_upstream_notifications)

    async def scan_upstream(self, *, keys: Iterable[str] | None = None
                            ) -> list[SessionStateEvent]:
        """:meth:`Gateway.scan_upstream`, awaited (``keys`` is read in the loop)."""
        only = None if keys is None else v.check_texts(keys, "keys")
        return await self._call(self.gateway.scan_upstream, keys=only)


def _close_threads(calls: CallThreads, reads: CallThreads, timeout: float) -> list[str]:
    return calls.close(timeout) + reads.close(timeout)


def _close_abandoned(calls: CallThreads, reads: CallThreads, opening: Future[Gateway]) -> None:
    """An ``open`` whose caller was cancelled finished: close what it opened.

    Runs in the call thread that opened it (the loop may be gone by then);
    the closing happens on a thread of its own, which joins the call threads.
    """
    gateway = None if opening.cancelled() or opening.exception() else opening.result()

    def close() -> None:
        if gateway is not None:
            gateway.close()
        _close_threads(calls, reads, 10.0)

    threading.Thread(target=close, name="ssa-async-close").start()
