"""AsyncGateway: the same engine from an asyncio loop, which it never blocks."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from actors import AsyncGateway, Gateway, GatewayConfig
from actors.errors import GatewayClosed, InvalidSessionKey
from tests._faultvfs import FaultVFS
from tests.conftest import START_MS, ManualClock

T = TypeVar("T")
MANAGER = "agent:main:main"
WORKERS = [f"agent:main:subagent:w{i}" for i in range(20)]
BUDGET_S = 30.0  # every run below ends well before pytest-timeout's 60 s
_OUTLIVE_THE_TEST: list[FaultVFS] = []  # a VFS is unregistered when collected


def run(main: Callable[[], Awaitable[T]]) -> T:
    """Run ``main()`` on a fresh event loop, bounded by ``BUDGET_S``."""
    async def bounded() -> T:
        return await asyncio.wait_for(main(), BUDGET_S)
    return asyncio.run(bounded())


async def _open(tmp_path: Path, **kwargs: Any) -> AsyncGateway:
    kwargs.setdefault("clock", ManualClock(START_MS))
    kwargs.setdefault("monitor", False)
    return await AsyncGateway.open(tmp_path / "state.sqlite", **kwargs)


class Ticker:
    """Measures the loop's largest gap between ticks of ``period_s`` while it runs."""

    def __init__(self, period_s: float = 0.002) -> None:
        self.period_s = period_s
        self.largest_gap_s = 0.0
        self.ticks = 0
        self._stop = asyncio.Event()

    async def run(self) -> None:
        while not self._stop.is_set():
            start = time.perf_counter()
            await asyncio.sleep(self.period_s)  # the instrument, not a wait for a condition
            self.largest_gap_s = max(self.largest_gap_s, time.perf_counter() - start)
            self.ticks += 1

    def stop(self) -> None:
        self._stop.set()


def test_every_gateway_method_is_a_coroutine_with_the_same_signature() -> None:
    public = {name for name in dir(Gateway) if not name.startswith("_")}
    properties = {name for name in public if isinstance(getattr(Gateway, name), property)}
    for name in sorted(public - properties - {"open", "config"}):
        mine = getattr(AsyncGateway, name)
        assert inspect.iscoroutinefunction(mine), name
        theirs = inspect.signature(getattr(Gateway, name))
        assert inspect.signature(mine).parameters.keys() == theirs.parameters.keys(), name
        assert mine.__doc__, name
    assert properties <= set(dir(AsyncGateway))
    assert inspect.iscoroutinefunction(AsyncGateway.open)
    opened = inspect.signature(AsyncGateway.open).parameters
    assert opened.keys() == inspect.signature(Gateway.open).parameters.keys()


def test_twenty_concurrent_producers_never_block_the_loop(tmp_path: Path) -> None:
    """Every fsync takes 0.4 s: a blocking call would stall the loop at least that long."""
    vfs = FaultVFS()
    delay = 0.4

    async def main() -> tuple[float, float, int, int]:
        gw = await _open(tmp_path, config=GatewayConfig(vfs=vfs.name))
        async with gw:
            for worker in WORKERS:
                await gw.watch(MANAGER, worker)
            vfs.sync_delay_s = delay
            ticker = Ticker()
            ticking = asyncio.create_task(ticker.run())
            await asyncio.sleep(0.01)
            events = await asyncio.gather(*(
                gw.human_message(worker, channel="webchat") for worker in WORKERS))
            ticker.stop()
            await ticking
            async_gap, ticks = ticker.largest_gap_s, ticker.ticks
            # Same run, same disk: the blocking Gateway called from the loop (the baseline).
            ticker = Ticker()
            ticking = asyncio.create_task(ticker.run())
            await asyncio.sleep(0.01)
            gw.gateway.human_message(WORKERS[0], channel="webchat")
            await asyncio.sleep(0.01)
            ticker.stop()
            await ticking
            vfs.sync_delay_s = 0.0
            pending = await gw.pending_notices(MANAGER)
        assert all(event is not None for event in events)
        return async_gap, ticker.largest_gap_s, ticks, len(pending)

    async_gap, blocking_gap, ticks, pending = run(main)
    print(f"[async] largest loop gap with 20 concurrent producers: {async_gap * 1000:.1f} ms;"
          f" one blocking call on the loop: {blocking_gap * 1000:.1f} ms (fsync {delay}s)")
    assert blocking_gap >= delay  # the baseline really stalls the loop for a commit
    assert async_gap < delay / 2, f"the loop stalled {async_gap * 1000:.0f} ms"
    assert ticks >= 20  # the loop kept running while 20 commits went by
    assert pending == 20  # one notice per target, each read back (read your writes)


def test_a_coroutine_on_wake_runs_on_the_loop_before_the_producer_returns(
    tmp_path: Path,
) -> None:
    woken: list[tuple[str, bool]] = []
    drained: list[list[str]] = []

    async def main() -> None:
        loop_thread = threading.get_ident()
        gateway: list[AsyncGateway] = []

        async def on_wake(watcher_key: str) -> None:
            woken.append((watcher_key, threading.get_ident() == loop_thread))
            drained.append(await gateway[0].drain(watcher_key))  # may await the gateway

        gw = await _open(tmp_path, on_wake=on_wake)
        gateway.append(gw)
        async with gw:
            await gw.watch(MANAGER, WORKERS[0])
            await gw.human_message(WORKERS[0], channel="webchat")
            assert woken == [(MANAGER, True)]  # already ran, on the loop's thread
            await gw.human_message(WORKERS[0], channel="webchat")
            assert woken == [(MANAGER, True)] * 2  # a new notice: woken once more

    run(main)
    assert [len(notices) for notices in drained] == [1, 1]


def test_a_failing_on_wake_is_logged_and_survived(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str] = []

    def on_wake(watcher_key: str) -> None:  # a plain function: also run on the loop
        calls.append(watcher_key)
        raise RuntimeError("boom")

    async def main() -> int:
        async with await _open(tmp_path, on_wake=on_wake) as gw:
            await gw.watch(MANAGER, WORKERS[0])
            await gw.watch(MANAGER, WORKERS[1])
            assert await gw.human_message(WORKERS[0], channel="webchat") is not None
            await gw.drain(MANAGER)
            assert await gw.human_message(WORKERS[1], channel="webchat") is not None
            return len(await gw.pending_notices(MANAGER))

    with caplog.at_level(logging.ERROR, logger="actors.facade.async_gateway"):
        assert run(main) == 1
    assert calls == [MANAGER, MANAGER]
    assert [r.getMessage() for r in caplog.records].count(
        f"on_wake for {MANAGER} raised; the gateway goes on") == 2


def test_errors_are_the_gateways_and_a_closed_gateway_says_so(tmp_path: Path) -> None:
    async def main() -> None:
        gw = await _open(tmp_path)
        try:
            with pytest.raises(InvalidSessionKey):
                await gw.human_message("", channel="webchat")
            status = await gw.session_status(WORKERS[0])
            assert status.state_version == 0
            assert (gw.location, gw.path, gw.host_id) == (
                gw.gateway.location, gw.gateway.path, gw.gateway.host_id)
        finally:
            await gw.close()
        await gw.close()  # idempotent
        with pytest.raises(GatewayClosed):
            await gw.drain(MANAGER)

    run(main)


def test_a_cancelled_call_still_commits_and_wakes(tmp_path: Path) -> None:
    vfs = FaultVFS()
    woken: list[str] = []

    async def on_wake(watcher_key: str) -> None:
        woken.append(watcher_key)

    async def main() -> int:
        gw = await _open(tmp_path, config=GatewayConfig(vfs=vfs.name), on_wake=on_wake)
        async with gw:
            await gw.watch(MANAGER, WORKERS[0])
            vfs.sync_delay_s = 0.1
            call = asyncio.create_task(gw.human_message(WORKERS[0], channel="webchat"))
            await asyncio.sleep(0.02)  # the call is in its thread, waiting on the disk
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            vfs.sync_delay_s = 0.0
        # Closing waited for the cancelled call and the wake task it left behind.
        assert woken == [MANAGER]
        async with await _open(tmp_path) as again:
            return len(await again.pending_notices(MANAGER))

    assert run(main) == 1


def test_open_needs_a_running_loop_and_checks_its_arguments(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError):
        AsyncGateway.open(tmp_path / "x.sqlite").send(None)

    async def main() -> None:
        with pytest.raises(TypeError, match="on_wake must be callable"):
            await AsyncGateway.open(tmp_path / "x.sqlite", on_wake="no")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="GatewayConfig"):
            await AsyncGateway.open(tmp_path / "x.sqlite", config={})  # type: ignore[arg-type]

    run(main)


def test_a_cancelled_open_closes_what_it_opened_and_close_survives_cancellation(
    tmp_path: Path,
) -> None:
    vfs = FaultVFS()
    _OUTLIVE_THE_TEST.append(vfs)  # the abandoned open may still use it at teardown
    vfs.sync_delay_s = 0.2  # opening commits several times: the cancel lands while it runs

    async def main() -> int:
        opening = asyncio.create_task(_open(tmp_path, config=GatewayConfig(vfs=vfs.name)))
        await asyncio.sleep(0.01)
        opening.cancel()
        with pytest.raises(asyncio.CancelledError):
            await opening
        vfs.sync_delay_s = 0.0  # the abandoned open finishes quickly now, and is closed
        gw = await _open(tmp_path / "other")
        closing = asyncio.create_task(gw.close())
        await asyncio.sleep(0)
        closing.cancel()  # the close goes on regardless
        with pytest.raises(asyncio.CancelledError):
            await closing
        await gw.close()  # waits for the first close to finish
        with pytest.raises(GatewayClosed):
            await gw.drain(MANAGER)
        return 0

    assert run(main) == 0
    # The leak check (autouse) fails this test if the abandoned open left anything.


# --- regressions from the adversarial review ------------------------------------------


def test_notices_a_cancelled_drain_acknowledged_go_to_the_next_drain(tmp_path: Path) -> None:
    vfs = FaultVFS()

    async def main() -> tuple[list[str], list[str], list[str]]:
        async with await _open(tmp_path, config=GatewayConfig(vfs=vfs.name)) as gw:
            for worker in WORKERS[:5]:
                await gw.watch(MANAGER, worker)
                await gw.human_message(worker, channel="webchat")
            vfs.sync_delay_s = 0.1  # the drain's commit waits on the disk
            draining = asyncio.create_task(gw.drain(MANAGER))
            await asyncio.sleep(0.02)
            draining.cancel()
            with pytest.raises(asyncio.CancelledError):
                await draining
            vfs.sync_delay_s = 0.0
            await gw.session_status(WORKERS[0])  # any call: the drain has finished by now
            pending = await gw.pending_notices(MANAGER)
            return pending, await gw.drain(MANAGER), await gw.drain(MANAGER)

    pending, first, second = run(main)
    assert len(first) == 5  # the five notices the cancelled drain took
    assert pending == first
    assert second == []  # and only once


def test_wakes_of_the_open_itself_run(tmp_path: Path) -> None:
    with Gateway.open(tmp_path / "state.sqlite", monitor=False) as gw:
        gw.watch(MANAGER, WORKERS[0])
        gw.human_message(WORKERS[0], channel="webchat")
    woken: list[str] = []

    async def on_wake(watcher_key: str) -> None:
        woken.append(watcher_key)

    async def main() -> None:
        async with await _open(tmp_path, on_wake=on_wake):
            pass  # closing waits for the wake tasks

    run(main)
    assert woken == [MANAGER]  # the restart sweep's wake


def test_a_cancelled_producer_does_not_cancel_the_wakes_it_caused(tmp_path: Path) -> None:
    finished: list[str] = []
    events: dict[str, asyncio.Event] = {}

    async def on_wake(watcher_key: str) -> None:
        events["started"].set()
        await events["release"].wait()
        finished.append(watcher_key)

    async def main() -> None:
        events.update(started=asyncio.Event(), release=asyncio.Event())
        async with await _open(tmp_path, on_wake=on_wake) as gw:
            await gw.watch("agent:main:a", WORKERS[0])
            await gw.watch("agent:main:b", WORKERS[0])
            call = asyncio.create_task(gw.human_message(WORKERS[0], channel="webchat"))
            await events["started"].wait()  # the first wake runs
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            events["release"].set()

    run(main)
    assert finished == ["agent:main:a", "agent:main:b"]


def test_a_stuck_on_wake_holds_its_producer_only_for_ask_timeout_s(tmp_path: Path) -> None:
    never = asyncio.Event()

    async def on_wake(watcher_key: str) -> None:
        await never.wait()

    async def main() -> float:
        gw = await _open(tmp_path, on_wake=on_wake, config=GatewayConfig(ask_timeout_s=0.2))
        try:
            await gw.watch(MANAGER, WORKERS[0])
            start = time.perf_counter()
            assert await gw.human_message(WORKERS[0], channel="webchat") is not None
            return time.perf_counter() - start
        finally:
            await gw.close(timeout=0.5)  # the stuck wake task is cancelled at close

    assert run(main) < 5.0


def test_another_loop_is_refused_before_anything_happens(tmp_path: Path) -> None:
    holder: list[AsyncGateway] = []

    async def first() -> None:
        holder.append(await _open(tmp_path))

    async def second() -> None:
        with pytest.raises(RuntimeError, match="loop that opened it"):
            await holder[0].human_message(WORKERS[0], channel="webchat")
        await holder[0].close()  # closing from another loop works

    run(first)
    run(second)
    with pytest.raises(GatewayClosed):
        holder[0].gateway.drain(MANAGER)
    with Gateway.open(tmp_path / "state.sqlite", monitor=False) as gw:
        assert gw.session_status(WORKERS[0]).state_version == 0  # nothing was recorded


def test_close_is_not_held_up_by_busy_call_threads_and_reads_do_not_queue_behind_them(
    tmp_path: Path,
) -> None:
    release = threading.Event()
    entered: list[str] = []
    both_inside: list[asyncio.Event] = []

    def deliver(sender: str, target: str, text: str) -> bool:  # in a call thread
        entered.append(target)
        if len(entered) == 2:
            loop.call_soon_threadsafe(both_inside[0].set)
        return release.wait(20)

    async def main() -> tuple[float, float]:
        nonlocal loop
        loop = asyncio.get_running_loop()
        both_inside.append(asyncio.Event())
        gw = await _open(tmp_path, config=GatewayConfig(async_call_threads=2))
        sends = [asyncio.create_task(gw.sessions_send(MANAGER, worker, "hello", deliver=deliver))
                 for worker in WORKERS[:2]]
        await both_inside[0].wait()  # both call threads are inside deliver
        start = time.perf_counter()
        await gw.session_status(WORKERS[0])  # a read: its own threads
        read_s = time.perf_counter() - start
        start = time.perf_counter()
        await gw.close(timeout=0.5)  # while both call threads are still stuck
        close_s = time.perf_counter() - start
        release.set()
        await asyncio.gather(*sends, return_exceptions=True)
        return read_s, close_s

    loop: asyncio.AbstractEventLoop
    read_s, close_s = run(main)
    assert read_s < 2.0
    assert close_s < 5.0
