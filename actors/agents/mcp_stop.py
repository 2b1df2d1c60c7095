"""How SIGTERM and SIGINT stop ``ssa mcp``: signal numbers on a pipe, no exception.

A signal's number is written into a pipe by Python's C-level handler
(``signal.set_wakeup_fd``) the moment it comes, whichever thread the kernel
gave it to. The server's main thread only ever waits in a ``poll`` that
includes the pipe (:func:`actors.agents.mcp_stdio.serve`), so it sees the
signal at once: the first one stops the server (no new request is run, the
calls already running are answered within a grace, then it exits); a second
one ends the process at once with ``128 +`` the signal's number
(``os._exit``), the way out for a person who does not want to wait for a
call that hangs. The Python-level handler raises nothing into the code it
interrupts and takes no lock: it only ends the process at a signal after
the stop.

Why not a Python handler alone: Python runs it on the main thread only, at
that thread's next bytecode. A signal the kernel gave to another thread, or
one that came just before the main thread began a blocking wait, left that
wait going on unaware (measured: 2 of 80 servers never stopped). Blocking
the signals in the other threads instead would be inherited by every
process a tool starts (``sessions_send``'s push commands), which could then
not be stopped by them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
from collections.abc import Iterator
from types import FrameType

__all__ = ["STOP_SIGNALS", "SignalStop"]

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
"""The signals that stop ``ssa mcp`` (what MCP clients and a terminal's Ctrl-C send)."""


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
    """The stop signals of ``ssa mcp``, as bytes on a pipe (:attr:`fd`).

    While :meth:`installed`, the pipe is Python's wakeup descriptor
    (``signal.set_wakeup_fd``): the C-level handler writes each signal's
    number into it the moment the signal comes, whichever thread the kernel
    picked and whatever the main thread was doing, so a ``poll`` on
    :attr:`fd` never misses one (a Python handler runs only at the main
    thread's next bytecode: one that came just before a blocking call began
    would wait for that call's end). The waiting thread calls :meth:`take`
    when :attr:`fd` is readable; the Python-level handler (:meth:`handle`)
    only ends the process at a signal after the stop.

    Raises:
        OSError: no pipe could be made (out of descriptors).
    """

    def __init__(self) -> None:
        self._read, self._write = (_above_stdio(fd) for fd in os.pipe())
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)  # set_wakeup_fd wants it so
        self._fds_open = True
        self.signum: int | None = None
        """The first stop signal's number, ``None`` until one came."""

    @property
    def fd(self) -> int:
        """The descriptor that turns readable when a signal came (until :meth:`take`)."""
        return self._read

    def request(self, signum: int) -> None:
        """Ask for a stop as signal ``signum`` would (what the C-level handler does;
        any thread, never blocks)."""
        with contextlib.suppress(OSError):
            os.write(self._write, bytes([signum]))

    def take(self) -> int | None:
        """Read the signals that came; the first stop signal (:attr:`signum`), or ``None``.

        A stop signal after the first one (in this or an earlier call) ends the
        process at once with ``128 +`` its number (``os._exit``: no cleanup).
        Never blocks; the thread that waits on :attr:`fd` calls it.
        """
        data = b""
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while chunk := os.read(self._read, 64):
                data += chunk
        for signum in data:
            if signum not in STOP_SIGNALS:
                continue  # another signal with a Python handler: not ours
            if self.signum is not None:
                os._exit(128 + signum)
            self.signum = signum
        return self.signum

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The Python-level handler (main thread, at its next bytecode): nothing for the
        first stop signal (it is read from :attr:`fd`); once a stop was taken, a further
        one ends the process at once, also where nothing polls (closing the gateway)."""
        if self.signum is not None:
            os._exit(128 + signum)

    @contextlib.contextmanager
    def installed(self) -> Iterator[SignalStop]:
        """The handlers of :data:`STOP_SIGNALS` and the wakeup descriptor while the block
        runs; the ones before are back after (main thread only: ``ValueError`` elsewhere)."""
        previous = {sig: signal.signal(sig, self.handle) for sig in STOP_SIGNALS}
        before = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        try:
            yield self
        finally:
            signal.set_wakeup_fd(before)
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def close(self) -> None:
        """Close the pipe (idempotent; after :meth:`installed`)."""
        fds, self._fds_open = (self._read, self._write) if self._fds_open else (), False
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
