"""How SIGTERM and SIGINT stop ``ssa mcp``: a descriptor that turns readable, no exception.

The first signal asks for a stop. Its handler (run by Python on the main
thread, between two bytecodes of whatever that thread was doing) only notes
the signal and writes one byte into a pipe; the byte is never read, so the
pipe's read end (:attr:`SignalStop.fd`) stays readable from then on and any
thread can see the stop with a poll. Only the main thread takes the signals
(:func:`stop_signals_blocked` keeps them from the threads the server starts),
so its wait is interrupted and the handler runs at once. The handler takes no lock, so it cannot
deadlock with the code it interrupts, and raises nothing into it. What the
server does then is :func:`actors.agents.mcp_stdio.serve`'s: no new request
is run, the calls already running are answered (within a grace), then it
exits.

A second signal while the server stops ends the process at once with
``128 +`` the signal's number (``os._exit``): the way out for a person who
does not want to wait for a call that hangs.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
from collections.abc import Iterator
from types import FrameType

__all__ = ["STOP_SIGNALS", "SignalStop", "stop_signals_blocked"]

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
"""The signals that stop ``ssa mcp`` (what MCP clients and a terminal's Ctrl-C send)."""


@contextlib.contextmanager
def stop_signals_blocked() -> Iterator[None]:
    """:data:`STOP_SIGNALS` blocked on the calling thread while the block runs (its mask is
    back after); a thread started meanwhile keeps them blocked, and so do the threads it
    starts (the mask is inherited).

    Why: Python runs a signal handler on the main thread only, and the kernel hands a
    process's signal to any thread that does not block it. Had a reading or tool thread
    taken SIGTERM, the main thread would have gone on waiting in ``poll`` unaware
    (measured: 2 of 80 servers never stopped). With every other thread blocking them,
    the signal interrupts the main thread's wait, and the handler runs at once.
    """
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _above_stdio(fd: int) -> int:
    """``fd``, or a close-on-exec duplicate of it numbered 3 or more when it took a missing
    standard stream's number (``ssa mcp`` run with fd 0 closed must not read this pipe)."""
    if fd > 2:
        return fd  # os.pipe's descriptors are not inherited (PEP 446)
    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    finally:
        os.close(fd)


class SignalStop:
    """A stop asked for by a signal: :attr:`fd` turns readable and :attr:`signum` is set.

    Creates a pipe (both ends close-on-exec; the write end non-blocking).
    Use :meth:`installed` on the main thread; :meth:`close` when done.

    Raises:
        OSError: no pipe could be made (out of descriptors).
    """

    def __init__(self) -> None:
        self._read, self._write = (_above_stdio(fd) for fd in os.pipe())
        os.set_blocking(self._write, False)
        self._fds_open = True
        self.signum: int | None = None
        """The first stop signal's number, ``None`` until one came."""

    @property
    def fd(self) -> int:
        """The descriptor that is readable once a stop was asked (never read: it stays so)."""
        return self._read

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The signal handler (main thread, never blocks): the first signal asks for the stop;
        a second one ends the process at once with ``128 + signum`` (no cleanup)."""
        if self.signum is not None:
            os._exit(128 + signum)
        self.signum = signum
        with contextlib.suppress(OSError):  # full cannot happen (one byte); closed: too late
            os.write(self._write, b"\0")

    @contextlib.contextmanager
    def installed(self) -> Iterator[SignalStop]:
        """:meth:`handle` for :data:`STOP_SIGNALS` while the block runs; the handlers
        before it are back after (main thread only: ``ValueError`` elsewhere)."""
        previous = {sig: signal.signal(sig, self.handle) for sig in STOP_SIGNALS}
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def close(self) -> None:
        """Close the pipe (idempotent; after :meth:`installed`: a late signal finds it closed)."""
        fds, self._fds_open = (self._read, self._write) if self._fds_open else (), False
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
