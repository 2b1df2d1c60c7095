"""actors.agents.hookbudget: the hook's SIGALRM budget and its _thread watchdog."""

from __future__ import annotations

import signal
import threading

import pytest

from actors.agents.hookbudget import HookTimeout, Watchdog, deadline, disarm

WAIT_S = 5.0
"""Each wait's bound (below pytest-timeout's)."""


def test_a_watchdog_calls_stop_in_its_own_thread_when_it_fires() -> None:
    fired = threading.Event()
    where: list[int] = []

    def stop() -> None:
        where.append(threading.get_ident())
        fired.set()

    Watchdog(0.01, stop)
    assert fired.wait(WAIT_S)
    assert where != [threading.get_ident()]


def test_a_cancelled_watchdog_never_calls_stop_and_cancel_twice_is_harmless() -> None:
    fired = threading.Event()
    dog = Watchdog(0.2, fired.set)
    dog.cancel()
    dog.cancel()
    assert not fired.wait(0.5)


def test_deadline_raises_hook_timeout_in_the_main_thread() -> None:
    with pytest.raises(HookTimeout, match=r"gave up after 0\.05 s"), deadline(0.05):
        threading.Event().wait(WAIT_S)  # interrupted by SIGALRM after 0.05 s


def test_deadline_outside_the_main_thread_runs_without_a_budget() -> None:
    ran: list[bool] = []

    def body() -> None:
        with deadline(0.01):
            ran.append(True)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join(WAIT_S)
    assert ran == [True]
    assert not thread.is_alive()


def test_deadline_of_zero_sets_no_alarm() -> None:
    before = signal.getsignal(signal.SIGALRM)
    with deadline(0):
        assert signal.getsignal(signal.SIGALRM) is before  # pytest-timeout's, if any


def test_disarm_stops_the_running_deadline_only() -> None:
    """Adversary round (stop 39): a budget ending between the printed notice and its
    acknowledgement showed the notice again at the next prompt."""
    with deadline(0.05):
        disarm()
        assert not threading.Event().wait(0.3)  # no HookTimeout: the alarm is off
    before = signal.getsignal(signal.SIGALRM)
    disarm()  # no deadline runs: nothing to stop, nothing changed
    assert signal.getsignal(signal.SIGALRM) is before
