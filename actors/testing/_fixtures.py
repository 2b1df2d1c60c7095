"""The pytest fixtures of :mod:`actors.testing` (registered only when the suite asks)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from actors import AsyncGateway, Gateway
from actors.testing._leaks import LeakCheck
from actors.upstream.kit.clock import ManualClock

__all__ = ["CLOSE_TIMEOUT_S", "ssa_async_gateway", "ssa_clock", "ssa_gateway",
           "ssa_gateway_options"]

CLOSE_TIMEOUT_S = 5.0
"""Seconds the ``ssa_gateway`` fixture gives the gateway to close at teardown."""


@pytest.fixture
def ssa_clock() -> ManualClock:
    """A :class:`ManualClock` at :data:`DEFAULT_START_MS` (pytest fixture)."""
    return ManualClock()


@pytest.fixture
def ssa_gateway_options() -> dict[str, Any]:
    """Extra ``open`` arguments for ``ssa_gateway`` and ``ssa_async_gateway`` (pytest fixture).

    Empty by default. Override it in a conftest or a test module to give the
    fixtures ``on_wake``, ``config``, ``hosts`` or ``monitor``; for example
    ``return {"on_wake": woken.append}``. ``clock`` defaults to ``ssa_clock``
    and ``monitor`` to ``False``.
    """
    return {}


def _options(options: dict[str, Any], clock: ManualClock) -> dict[str, Any]:
    return {"monitor": False, "clock": clock, **options}


@pytest.fixture
def ssa_gateway(tmp_path: Path, ssa_clock: ManualClock,
                ssa_gateway_options: dict[str, Any]) -> Iterator[Gateway]:
    """A gateway on ``tmp_path / "ssa.sqlite"``, ``monitor=False``, on ``ssa_clock``.

    Yields the open :class:`~actors.Gateway` (opened with
    ``ssa_gateway_options`` too). At teardown it is closed (bounded by
    :data:`CLOSE_TIMEOUT_S`), and the test fails if one of the library's
    actors or a thread started during the test is still running; actors and
    threads that were running before (a wider-scoped fixture's gateway) do
    not count. Runs in the test's thread; blocks on opening and closing the
    gateway.
    """
    leaks = LeakCheck(timeout=CLOSE_TIMEOUT_S)
    gateway = Gateway.open(tmp_path / "ssa.sqlite", **_options(ssa_gateway_options, ssa_clock))
    try:
        yield gateway
    finally:
        gateway.close(timeout=CLOSE_TIMEOUT_S)
    _fail_on_leaks(leaks)


@pytest.fixture
async def ssa_async_gateway(tmp_path: Path, ssa_clock: ManualClock,
                            ssa_gateway_options: dict[str, Any]
                            ) -> AsyncIterator[AsyncGateway]:
    """``ssa_gateway``'s asyncio counterpart: an :class:`~actors.AsyncGateway`.

    On ``tmp_path / "ssa-async.sqlite"``, ``monitor=False``, on ``ssa_clock``
    (and ``ssa_gateway_options``), opened on the test's event loop and closed
    at teardown (bounded by :data:`CLOSE_TIMEOUT_S`); the test fails if one of
    the library's actors or a thread started during the test is still running
    (the loop's own executor threads, ``asyncio_N``, do not count: they end
    with the loop). An async fixture: it needs an asyncio test runner, such
    as anyio's pytest plugin (mark the test ``@pytest.mark.anyio``) or
    pytest-asyncio in auto mode (then without the anyio mark).
    """
    leaks = LeakCheck(timeout=CLOSE_TIMEOUT_S, ignore=("asyncio_",))
    gateway = await AsyncGateway.open(tmp_path / "ssa-async.sqlite",
                                      **_options(ssa_gateway_options, ssa_clock))
    try:
        yield gateway
    finally:
        await gateway.close(timeout=CLOSE_TIMEOUT_S)
    _fail_on_leaks(leaks)


def _fail_on_leaks(leaks: LeakCheck) -> None:
    problems = leaks.check()
    if problems:
        pytest.fail("the test left work running: " + "; ".join(problems), pytrace=False)
