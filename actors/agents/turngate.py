"""The turn gate of a waiting hook that stays: one push per notice (:class:`TurnGate`).

Used by :mod:`actors.agents.hookwait` for the stream and command push paths;
:func:`first_line` reads a stream plugin's first input line without taking
more from its pipe. Standard library only; the waiting hook's main thread.
"""

from __future__ import annotations

import io
import os
import stat
import time
from collections.abc import Callable
from typing import IO

__all__ = ["GATE_MAX_S", "QUIET_S", "TurnGate", "first_line"]

QUIET_S = 3.0
"""A command path's session is done with its turn when its transcript stayed this long
unchanged (seconds) after changing."""
GATE_MAX_S = 120.0
"""A closed :class:`TurnGate` opens after this long at the latest (seconds)."""


class TurnGate:
    """One push per notice: after a delivery, the next waits for the turn it started.

    The seed's notices are acknowledged when the watcher's turn takes them; a
    waiting hook that stays (stream and command push paths) hands a notice over
    and acknowledges it at once, so without a gate every change after that would
    push another turn. Closed by a delivery, the gate opens again when the
    session's turn ended: the plugin or extension writes an ``idle`` line on
    stdin (stream paths), or the session's transcript changed after the
    delivery and then stayed quiet for :data:`QUIET_S` (command paths); at the
    latest after :data:`GATE_MAX_S`. What changed meanwhile is one follow-up
    notice. Input is read without blocking, whole lines only: an ``idle`` that
    was waiting when a delivery closed the gate is for the turn before, and is
    dropped; a line longer than :attr:`MAX_LINE` is no ``idle``.

    Args:
        transcript: the session's transcript (quiet detection), or ``None``.
        stdin: the stream plugin's pipe (``idle`` lines), or ``None``.
        clock: seconds, monotonic (tests inject one).

    The waiting hook's main thread; no method blocks.
    """

    MAX_LINE = 64
    """Longest input line looked at (bytes); longer ones are dropped whole."""

    def __init__(self, transcript: str | None, *, stdin: IO[bytes] | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._transcript = transcript
        self.fd: int | None = None
        """The descriptor the waiter polls for ``idle`` lines, or ``None``."""
        if stdin is not None and _is_pipe(stdin):
            self.fd = stdin.fileno()
            os.set_blocking(self.fd, False)
        self._pending = b""
        self._overlong = False
        self._closed_at: float | None = None
        self._mtime: float | None = None
        self._turn_seen = False
        self._quiet_since = 0.0

    def close(self) -> None:
        """A delivery happened: notices wait for the turn's end (non-blocking)."""
        self._lines()  # what was waiting is about the turn before: dropped
        self._closed_at = self._clock()
        self._mtime = self._modified()
        self._turn_seen = False

    def open(self) -> bool:
        """Whether notices may be delivered now (non-blocking but for one ``stat``)."""
        if self._closed_at is None:
            return True
        now = self._clock()
        if now - self._closed_at >= GATE_MAX_S:
            self._closed_at = None
            return True
        if self.fd is None:  # command paths: the transcript moved, then went quiet
            modified = self._modified()
            if modified is not None and modified != self._mtime:
                self._turn_seen = True
                self._mtime = modified
                self._quiet_since = now
            if self._turn_seen and now - self._quiet_since >= QUIET_S:
                self._closed_at = None
                return True
        return False

    def recheck_s(self) -> float | None:
        """How soon :meth:`open` should be asked again while nothing else happens."""
        if self._closed_at is None:
            return None
        left = GATE_MAX_S - (self._clock() - self._closed_at)
        return max(0.05, min(left, QUIET_S if self.fd is None else left))

    def read_input(self) -> None:
        """Read what the plugin wrote (never blocks); an ``idle`` line opens a closed gate."""
        lines = self._lines()
        if self._closed_at is not None and b"idle" in lines:
            self._closed_at = None

    def _lines(self) -> list[bytes]:
        """The whole lines written since the last call (at most 64 KiB read per call)."""
        if self.fd is None:
            return []
        try:
            chunk = os.read(self.fd, 65536)
        except BlockingIOError:
            return []
        except OSError:
            chunk = b""
        if not chunk:  # the plugin went away: no more turn ends will come
            self.fd = None
            self._closed_at = None
            return []
        *whole, self._pending = (self._pending + chunk).split(b"\n")
        found = []
        for line in whole:
            if self._overlong:
                self._overlong = False  # the end of a line too long to matter
                continue
            found.append(line.strip())
        if len(self._pending) > self.MAX_LINE:
            self._pending = b""
            self._overlong = True
        return found

    def _modified(self) -> float | None:
        if self._transcript is None:
            return None
        try:
            return os.stat(self._transcript).st_mtime
        except OSError:
            return None


def first_line(source: IO[bytes], limit: int) -> bytes:
    """The input's first line, read from the descriptor one byte at a time (nothing after
    the newline is taken, so later ``idle`` lines stay in the pipe for the gate)."""
    try:
        fd = source.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):
        return source.readline(limit)
    data = bytearray()
    while len(data) < limit:
        byte = os.read(fd, 1)
        if not byte or byte == b"\n":
            break
        data += byte
    return bytes(data)


def _is_pipe(stream: IO[bytes]) -> bool:
    """Whether ``stream`` is a pipe or a socket (Bun gives its children socket pairs)."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
        return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
    except (OSError, ValueError, io.UnsupportedOperation):
        return False
