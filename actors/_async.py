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
writes, per awaited call, as ``Gateway`` promises per call); since the call
itself has finished by then, ``on_wake`` may await the gateway (say, a
``drain``). A wake from elsewhere (another process's, addressed to a watcher
this one hosts; an upstream scan of the monitor cadence) runs as its own task
on the loop. An exception in ``on_wake`` is logged and survived.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import os
import threading
from collections.abc import Callable, Iterable
from functools import partial
from types import TracebackType
from typing import Any, ParamSpec, Self, TypeVar

from actors import _validate as v
from actors._config import GatewayConfig
from actors._types import SendResult, SessionStateEventInput
from actors._upstream import AdoptRequest
from actors.errors import GatewayClosed
from actors.gateway import Clock, DeliverFn, Gateway
from actors.upstream.claude_node import NodeTranscriptReader
from persistence import SessionRow, SessionStateEvent, SessionStatus, UpstreamLink

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
    gw.close()`` or ``async with gw:``. Use it from the loop that opened it
    (the call threads report back to that loop). Every coroutine method
    takes the arguments of the :class:`~actors.Gateway` method of the same
    name and returns or raises what it does (``GatewayClosed`` after
    :meth:`close`); while it waits, the loop runs other tasks. A call that is
    cancelled still completes in its call thread (its change is committed and
    its wakes run as tasks); only the awaiting task stops waiting.

    Attributes:
        gateway: the underlying thread-safe :class:`~actors.Gateway`, for
            code that runs in other threads (never call it from the loop: it
            blocks).
        config: the gateway's settings.
    """

    def __init__(self, gateway: Gateway, pool: concurrent.futures.ThreadPoolExecutor,
                 loop: asyncio.AbstractEventLoop, on_wake: OnWake | None) -> None:
        """Use :meth:`open`; this wires an opened gateway to ``loop`` (internal)."""
        self.gateway = gateway
        self.config: GatewayConfig = gateway.config
        self._pool = pool
        self._loop = loop
        self._on_wake = on_wake
        self._tasks: set[asyncio.Task[None]] = set()
        self._calls: set[asyncio.Future[Any]] = set()
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

        Args:
            path, config, clock, monitor, hosts: as :meth:`Gateway.open`.
            on_wake: ``(watcher_key) -> None``, a plain function or a
                coroutine function; runs on this loop (see the module
                docstring), once per newly opened notice that wakes.

        Returns:
            The open gateway, bound to the running loop.

        Raises:
            RuntimeError: no asyncio event loop is running.
            ArgumentTypeError: ``on_wake`` is not callable, or ``config`` is not a
                :class:`GatewayConfig`.
            Everything :meth:`Gateway.open` raises.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError("AsyncGateway.open needs a running asyncio event loop (await it"
                               " from a coroutine; trio is not supported)") from None
        config = config if config is not None else GatewayConfig()
        if not isinstance(config, GatewayConfig):
            raise v.ArgumentTypeError(
                f"config must be a GatewayConfig, not {type(config).__name__}")
        if on_wake is not None and not callable(on_wake):
            raise v.ArgumentTypeError("on_wake must be callable")
        pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=config.async_call_threads, thread_name_prefix="ssa-async-call")
        holder: list[AsyncGateway] = []

        def shim(watcher_key: str) -> None:
            if holder:
                holder[0]._wake_from_thread(watcher_key)

        opening = loop.run_in_executor(pool, partial(
            Gateway.open, path, config=config, clock=clock,
            on_wake=shim if on_wake is not None else None, monitor=monitor, hosts=hosts))
        try:
            gateway = await asyncio.shield(opening)
        except asyncio.CancelledError:  # it opens anyway: close it when it has
            opening.add_done_callback(partial(_close_abandoned, pool))
            raise
        except BaseException:
            await _shutdown(pool)
            raise
        opened = cls(gateway, pool, loop, on_wake)
        holder.append(opened)
        return opened

    async def close(self, timeout: float = 10.0) -> None:
        """Close the gateway (:meth:`Gateway.close`), then wait for ``on_wake`` tasks.

        Args:
            timeout: seconds to wait for each actor to stop, and for the
                ``on_wake`` tasks still running.

        Calls still in flight (cancelled ones included) finish first, for at
        most ``timeout`` seconds. Idempotent: a second call waits for the
        first to finish. Cancelling the awaiting task does not stop the
        close. The loop keeps running meanwhile; the call threads are joined
        before this returns.
        """
        if self._closing is None:
            self._closed = True
            self._closing = self._loop.create_task(self._close(timeout))
        await asyncio.shield(self._closing)

    async def _close(self, timeout: float) -> None:
        if self._calls:
            await asyncio.wait(set(self._calls), timeout=timeout)
        try:
            await self._loop.run_in_executor(self._pool, partial(self.gateway.close, timeout))
        finally:
            if self._tasks:
                _done, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
                for task in pending:
                    task.cancel()
            await _shutdown(self._pool)

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

    # --- the call path -------------------------------------------------------

    async def _call(self, method: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``method`` on a call thread; then run, and await, the wakes it caused."""
        if self._closed:
            raise GatewayClosed("the gateway is closed")
        future = self._loop.run_in_executor(self._pool, partial(
            self._in_call_thread, method, args, kwargs))
        self._calls.add(future)
        future.add_done_callback(self._calls.discard)
        try:
            wakes, result, error = await asyncio.shield(future)
        except asyncio.CancelledError:
            future.add_done_callback(self._wakes_after_cancel)
            raise
        for watcher_key in wakes:
            await self._run_wake(watcher_key)
        if error is not None:
            raise error
        return result  # type: ignore[no-any-return]

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

    def _wakes_after_cancel(self, future: asyncio.Future[Any]) -> None:
        """A cancelled call finished anyway: its wakes run as tasks (loop thread)."""
        if not future.cancelled() and future.exception() is None:  # a BaseException: none
            for watcher_key in future.result()[0]:
                self._spawn_wake(watcher_key)

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
        task = self._loop.create_task(self._run_wake(watcher_key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_wake(self, watcher_key: str) -> None:
        if self._on_wake is None:
            return
        try:
            outcome = self._on_wake(watcher_key)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:  # the notice stays open; the watcher sees it at its next turn
            logger.exception("on_wake for %s raised; the gateway goes on", watcher_key)

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
        """:meth:`Gateway.take_messages`, awaited."""
        return await self._call(self.gateway.take_messages, key)

    async def enqueue_system_event(self, key: str, text: str, *,
                                   context_key: str | None = None) -> bool:
        """:meth:`Gateway.enqueue_system_event`, awaited."""
        return await self._call(self.gateway.enqueue_system_event, key, text,
                                context_key=context_key)

    # --- watchers ------------------------------------------------------------

    async def watch(self, watcher_key: str, target_key: str, *,
                    agent_id: str | None = None) -> bool:
        """:meth:`Gateway.watch`, awaited."""
        return await self._call(self.gateway.watch, watcher_key, target_key, agent_id=agent_id)

    async def session_status(self, key: str, *, changes_since: int | None = None,
                             agent_id: str | None = None) -> SessionStatus:
        """:meth:`Gateway.session_status`, awaited."""
        return await self._call(self.gateway.session_status, key, changes_since=changes_since,
                                agent_id=agent_id)

    async def sessions_list(self, *, agent_id: str | None = None) -> list[SessionRow]:
        """:meth:`Gateway.sessions_list`, awaited."""
        return await self._call(self.gateway.sessions_list, agent_id=agent_id)

    async def pending_notices(self, watcher_key: str) -> list[str]:
        """:meth:`Gateway.pending_notices`, awaited."""
        return await self._call(self.gateway.pending_notices, watcher_key)

    async def drain(self, watcher_key: str) -> list[str]:
        """:meth:`Gateway.drain`, awaited."""
        return await self._call(self.gateway.drain, watcher_key)

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

    async def scan_upstream(self) -> list[SessionStateEvent]:
        """:meth:`Gateway.scan_upstream`, awaited."""
        return await self._call(self.gateway.scan_upstream)


def _close_abandoned(pool: concurrent.futures.ThreadPoolExecutor,
                     opening: asyncio.Future[Gateway]) -> None:
    """An ``open`` whose caller was cancelled finished: close what it opened (loop thread)."""
    gateway = None if opening.cancelled() or opening.exception() else opening.result()

    def close() -> None:
        if gateway is not None:
            gateway.close()
        pool.shutdown(wait=True)

    threading.Thread(target=close, name="ssa-async-close").start()


async def _shutdown(pool: concurrent.futures.ThreadPoolExecutor) -> None:
    """Join the call threads without blocking the loop (and without a loop executor)."""
    done = asyncio.Event()
    loop = asyncio.get_running_loop()

    def join() -> None:
        pool.shutdown(wait=True)
        loop.call_soon_threadsafe(done.set)

    joiner = threading.Thread(target=join, name="ssa-async-close", daemon=True)
    joiner.start()
    await done.wait()
    joiner.join()
