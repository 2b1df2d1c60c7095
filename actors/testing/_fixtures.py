"""The pytest fixtures of :mod:`actors.testing` (registered only when the suite asks)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from actors import Gateway
from actors.testing._clock import ManualClock
from actors.testing._leaks import LeakCheck

__all__ = ["CLOSE_TIMEOUT_S", "ssa_clock", "ssa_gateway"]

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
    problems = leaks.check()
    if problems:
        pytest.fail("the test left the gateway's work running: " + "; ".join(problems),
                    pytrace=False)
