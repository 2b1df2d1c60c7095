"""Waking a watcher again after a drain that kept its notices back (issue 9)."""

from __future__ import annotations

import threading

import pytest

from actors.engine import rewake as _rewake
from actors.engine.rewake import Rewakes

WAIT_S = 10.0


def test_a_watcher_is_woken_again_while_it_still_owes_a_wake(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_rewake, "FIRST_S", 0.001)
    woken: list[str] = []
    fired = threading.Event()

    def wake(watcher: str) -> None:
        woken.append(watcher)
        fired.set()

    owed = {"agent:main:a": True, "agent:main:b": False}
    rewakes = Rewakes(wake, lambda w: owed[w])
    try:
        rewakes.later("agent:main:b")  # nothing owed any more by the time it fires
        rewakes.later("agent:main:a")
        assert fired.wait(WAIT_S)
    finally:
        assert rewakes.close(WAIT_S) == 0
    assert woken == ["agent:main:a"]


def test_close_cancels_pending_wakes_and_later_ones_are_ignored() -> None:
    woken: list[str] = []
    rewakes = Rewakes(woken.append, lambda w: True)
    rewakes.later("agent:main:a")  # 1 s away
    assert rewakes.close(WAIT_S) == 0
    rewakes.later("agent:main:a")
    assert woken == []
    assert not any(t.name == "ssa-rewake" for t in threading.enumerate())


def test_the_backoff_doubles_until_a_drain_settles(monkeypatch: pytest.MonkeyPatch) -> None:
    delays: list[float] = []

    class FakeTimer:
        def __init__(self, delay: float, *_args: object) -> None:
            delays.append(delay)
            self.daemon = False
            self.name = ""

        def start(self) -> None:
            pass

        def cancel(self) -> None:
            pass

        def join(self, timeout: float) -> None:
            pass

        def is_alive(self) -> bool:
            return False

    monkeypatch.setattr(_rewake.threading, "Timer", FakeTimer)
    rewakes = Rewakes(lambda w: None, lambda w: True)
    for _ in range(8):
        rewakes.later("agent:main:a")
        rewakes._timers.clear()  # as if each had fired
    rewakes.settled("agent:main:a")
    rewakes.later("agent:main:a")
    rewakes.close(WAIT_S)
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 1.0]
