"""The pytest fixtures of :mod:`actors.testing` (registered only when the suite asks)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from actors import AsyncGateway, Gateway
from actors.testing._clock import ManualClock
from actors.testing._leaks import LeakCheck

__all__ = ["CLOSE_TIMEOUT_S", "ssa_async_gateway", "ssa_clock", "ssa_gateway"]

CLOSE_TIMEOUT_S = 5.0
"""Seconds the ``ssa_gateway`` fixture gives the gateway to close at teardown."""


@pytest.fixture
def ssa_clock() -> ManualClock:
    """A :class:`ManualClock` at :data:`DEFAULT_START_MS` (pytest fixture)."""
    return ManualClock()


@pytest.fixture
def ssa_gateway(tmp_path: Path, ssa_clock: ManualClock) -> Iterator[Gateway]:
    """A gateway on ``tmp_path / "ssa.sqlite"``, ``monitor=False``, on ``ssa_clock``.

    Yields the open :class:`~actors.Gateway`. At teardown it is closed
    (bounded by :data:`CLOSE_TIMEOUT_S`), and the test fails if one of the
    library's actors or a thread started during the test is still running.
    Runs in the test's thread; blocks on opening and closing the gateway.
    """
    leaks = LeakCheck(timeout=CLOSE_TIMEOUT_S)
    gateway = Gateway.open(tmp_path / "ssa.sqlite", monitor=False, clock=ssa_clock)
    try:
        yield gateway
    finally:
        gateway.close(timeout=CLOSE_TIMEOUT_S)
    _fail_on_leaks(leaks)


@pytest.fixture
async def ssa_async_gateway(tmp_path: Path, ssa_clock: ManualClock
                            ) -> AsyncIterator[AsyncGateway]:
    """``ssa_gateway``'s asyncio counterpart: an :class:`~actors.AsyncGateway`.

    On ``tmp_path / "ssa.sqlite"``, ``monitor=False``, on ``ssa_clock``, opened
    on the test's event loop and closed at teardown (bounded by
    :data:`CLOSE_TIMEOUT_S`); the test fails if one of the library's actors or
    a thread started during the test is still running. An async fixture: it
    needs an asyncio test runner, such as anyio's pytest plugin (installed
    with this library; mark the test ``@pytest.mark.anyio``) or pytest-asyncio
    in auto mode.
    """
    leaks = LeakCheck(timeout=CLOSE_TIMEOUT_S)
    gateway = await AsyncGateway.open(tmp_path / "ssa.sqlite", monitor=False, clock=ssa_clock)
    try:
        yield gateway
    finally:
        await gateway.close(timeout=CLOSE_TIMEOUT_S)
    _fail_on_leaks(leaks)


def _fail_on_leaks(leaks: LeakCheck) -> None:
    problems = leaks.check()
    if problems:
        pytest.fail("the test left the gateway's work running: " + "; ".join(problems),
                    pytrace=False)
