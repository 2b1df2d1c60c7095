"""The watch loop's wake-up and its stop signals: a signal landing while the loop
waits (or holds the wake-up's state) never deadlocks the handler (review finding:
``threading.Event.set`` from the handler hung ``ssa watch`` once in 56 stops)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from actors.cli.wakeup import StopFlag, Wakeup
from actors.cli.watch import _stop_on_signals

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX signals")


def test_many_sets_before_a_wait_are_one_wake() -> None:
    wakeup = Wakeup()
    for _ in range(5):
        wakeup.set()
    assert wakeup.wait(0) is True
    assert wakeup.wait(0) is False


def test_a_set_from_another_thread_wakes_the_waiter() -> None:
    wakeup = Wakeup()
    threading.Timer(0.01, wakeup.set).start()
    assert wakeup.wait(10) is True


def test_a_stop_signal_during_the_wait_sets_stop_and_wakes_the_loop() -> None:
    stop, wakeup = StopFlag(), Wakeup()
    main = threading.get_ident()
    with _stop_on_signals(stop, wakeup):
        sender = threading.Thread(target=signal.pthread_kill, args=(main, signal.SIGTERM))
        sender.start()
        woke = wakeup.wait(10)
        sender.join(10)
    assert woke
    assert stop.is_set()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN  # on its way out


def test_a_handler_that_interrupts_the_wake_up_itself_does_not_deadlock() -> None:
    """The handler's ``set`` runs in the middle of the main thread's own ``set`` and
    ``wait`` (CPython runs handlers between bytecodes): a burst of signals while the
    main thread loops on both must end, in a child so a deadlock is a failure."""
    script = textwrap.dedent("""
        import os, signal, threading
        from actors.cli.wakeup import StopFlag, Wakeup
        from actors.cli.watch import _stop_on_signals
        stop, wakeup = threading.Event(), Wakeup()
        done = threading.Event()
        def burst():
            for _ in range(2000):
                signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
            done.set()
        handled = []
        def handler(signum, frame):
            handled.append(signum)
            wakeup.set()
        signal.signal(signal.SIGUSR1, handler)
        threading.Thread(target=burst).start()
        woken = 0
        while True:  # until the burst ended, at least once
            wakeup.set()
            woken += wakeup.wait(0.001)
            if done.is_set():
                break
        with _stop_on_signals(stop, wakeup):
            os.kill(os.getpid(), signal.SIGINT)
            assert wakeup.wait(5) and stop.is_set()
        print("ok", woken > 0, len(handled) > 0)
    """)
    result = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True,
                            text=True, timeout=45, cwd=os.getcwd())
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ok", "True", "True"]


def test_a_storm_of_mixed_stop_signals_while_the_loop_waits_ends() -> None:
    """The stop handler interrupted by the next stop signal runs inside itself: it may
    take no lock at all (review finding: ``threading.Event.set`` in the handler hung
    ``ssa watch`` in 3 of 9 storms of 2,000 mixed SIGINT/SIGTERM/SIGHUP). The storms
    come from another process, and two spinning threads with a tiny switch interval
    take the GIL from the handler midway, so signals pile up and land inside it. A
    child runs them, so a deadlock is a timeout, not a hung test."""
    script = textwrap.dedent("""
        import os, subprocess, sys, threading
        from actors.cli.wakeup import StopFlag, Wakeup
        from actors.cli.watch import _stop_on_signals
        sys.setswitchinterval(1e-6)  # hand the GIL over inside the handler, often
        over = threading.Event()
        def spin():  # other threads want the GIL, as the watch's monitors do
            while not over.is_set():
                pass
        spinners = [threading.Thread(target=spin, daemon=True) for _ in range(2)]
        for thread in spinners:
            thread.start()
        sender = (
            "import os, random, signal, sys\\n"
            "pid, pick = int(sys.argv[1]), random.Random(int(sys.argv[2]))\\n"
            "kinds = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)\\n"
            "for _ in range(2000):\\n"
            "    os.kill(pid, pick.choice(kinds))\\n")
        for storm in range(8):
            stop, wakeup = StopFlag(), Wakeup()
            with _stop_on_signals(stop, wakeup):
                proc = subprocess.Popen([sys.executable, "-c", sender, str(os.getpid()),
                                         str(storm)])
                while proc.poll() is None:
                    wakeup.wait(0.001)
                assert stop.is_set()
        over.set()
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True,
                            text=True, timeout=45, cwd=os.getcwd())
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ok"]
