"""A private tmux server for driving terminal programs: start, type, read the screen.

Each :class:`TmuxServer` runs on its own socket (``tmux -L ssa-<pid>-<n>-<hex>``,
no config file) so tests never see a person's tmux or each other's. A
control-mode client (``tmux -C``) streams a notification for every byte a
program writes; :meth:`Pane.wait_screen` re-reads the screen when one
arrives instead of polling on a timer, and :meth:`Pane.wait_quiet` waits for
a stretch without output. Every wait takes a timeout and raises
:class:`TimeoutError` with the last screen in its message.

Thread-safety: one test thread drives a server; the control client's reader
is a daemon thread of its own. Methods block for at most their timeout (the
``tmux`` commands themselves for at most :data:`COMMAND_TIMEOUT_S`).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

__all__ = ["COMMAND_TIMEOUT_S", "Pane", "TmuxError", "TmuxServer", "descendants",
           "tmux_available"]

log = logging.getLogger(__name__)

COMMAND_TIMEOUT_S = 10.0
"""Longest one ``tmux`` command may take, in seconds."""
_counter = itertools.count(1)


class TmuxError(RuntimeError):
    """A ``tmux`` command failed (the message holds its stderr)."""


def tmux_available() -> bool:
    """Whether a ``tmux`` executable is on ``PATH``."""
    return shutil.which("tmux") is not None


def descendants(pid: int, *, include_self: bool = False) -> list[int]:
    """Every live descendant of ``pid`` (children first), read from ``/proc``; Linux only."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out: list[int] = [pid] if include_self else []
    todo = list(children.get(pid, ()))
    while todo:
        child = todo.pop()
        out.append(child)
        todo.extend(children.get(child, ()))
    return out


class TmuxServer:
    """A tmux server of its own, killed by :meth:`close` (or leaving a ``with`` block).

    Args:
        width, height: the size of every window, in cells (the control
            client has that size, and windows follow it).
    """

    def __init__(self, *, width: int = 180, height: int = 50) -> None:
        self.socket = f"ssa-{os.getpid()}-{next(_counter)}-{secrets.token_hex(3)}"
        self.width, self.height = width, height
        self._changed = threading.Condition()
        self._outputs = 0
        self._control: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._panes: list[Pane] = []
        self._started = False

    def __enter__(self) -> TmuxServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, *args: str, check: bool = True) -> str:
        """Run ``tmux -L <socket> args...``; returns its stdout.

        Raises:
            TmuxError: non-zero exit (with ``check``) or longer than
                :data:`COMMAND_TIMEOUT_S`.
        """
        command = ["tmux", "-L", self.socket, "-f", "/dev/null", *args]
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=COMMAND_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired as exc:
            raise TmuxError(f"{shlex.join(command)} took longer than {COMMAND_TIMEOUT_S} s"
                            ) from exc
        if check and done.returncode != 0:
            raise TmuxError(f"{shlex.join(command)} failed: {done.stderr.strip()}")
        return done.stdout

    def start(self, name: str, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
              script_dir: Path) -> Pane:
        """Start ``argv`` in a new window ``name`` with exactly ``env`` (nothing inherited).

        The command runs through a launcher script written to
        ``script_dir/<name>.sh`` (mode 0700, kept for debugging); the pane
        stays after the program exits (``remain-on-exit``) so its last screen
        can be read.

        Raises:
            TmuxError: tmux could not start the window.
        """
        script_dir.mkdir(parents=True, exist_ok=True)
        launcher = script_dir / f"{name}.sh"
        assignments = " ".join(shlex.quote(f"{k}={v}") for k, v in sorted(env.items()))
        launcher.write_text(f"#!/bin/sh\ncd {shlex.quote(str(cwd))} || exit 97\n"
                            f"exec env -i {assignments} {shlex.join(argv)}\n")
        launcher.chmod(0o700)
        size = ("-x", str(self.width), "-y", str(self.height))
        if not self._started:
            self.run("new-session", "-d", "-s", "ssa", "-n", name, *size, str(launcher))
            self._started = True
            self.run("set-option", "-g", "remain-on-exit", "on")
            self.run("set-option", "-g", "history-limit", "20000")
            self._attach_control()
        else:
            self.run("new-window", "-d", "-t", "ssa", "-n", name, str(launcher))
        pane_id = self.run("display-message", "-p", "-t", f"ssa:{name}", "#{pane_id}").strip()
        self.run("set-option", "-w", "-t", f"ssa:{name}", "remain-on-exit", "on")
        pane = Pane(self, pane_id, name)
        self._panes.append(pane)
        return pane

    def _attach_control(self) -> None:
        self._control = subprocess.Popen(
            ["tmux", "-L", self.socket, "-f", "/dev/null", "-C", "attach-session", "-t", "ssa"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._reader = threading.Thread(target=self._read_control, name=f"tmux-{self.socket}",
                                        daemon=True)
        self._reader.start()
        # Windows follow the latest client's size: give the control client the fixed size.
        # (window-size manual instead makes tmux 3.3a exit on the next new-window while a
        # control client is attached: "server exited unexpectedly".)
        assert self._control.stdin is not None
        self._control.stdin.write(f"refresh-client -C {self.width}x{self.height}\n".encode())
        self._control.stdin.flush()

    def _read_control(self) -> None:
        assert self._control is not None
        assert self._control.stdout is not None
        for line in self._control.stdout:
            if line.startswith((b"%output", b"%extended-output", b"%exit", b"%window")):
                with self._changed:
                    self._outputs += 1
                    self._changed.notify_all()
        with self._changed:
            self._outputs += 1
            self._changed.notify_all()

    def output_count(self) -> int:
        """How many output notifications the control client saw so far."""
        with self._changed:
            return self._outputs

    def wait_output(self, after: int, timeout_s: float) -> int:
        """Block until the output count exceeds ``after`` or ``timeout_s`` passes; returns it."""
        with self._changed:
            self._changed.wait_for(lambda: self._outputs > after, max(0.0, timeout_s))
            return self._outputs

    def close(self) -> None:
        """Kill the tmux server, every program it ran and their children (SIGKILL, found
        through ``/proc`` before the server goes), and the control client."""
        doomed: list[int] = []
        if self._started:
            for pane in self._panes:
                with contextlib.suppress(TmuxError, ValueError):
                    doomed.extend(descendants(pane.pid(), include_self=True))
            self.run("kill-server", check=False)
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if self._control is not None:
            try:
                self._control.wait(COMMAND_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._control.kill()
                self._control.wait(COMMAND_TIMEOUT_S)
        if self._reader is not None:
            self._reader.join(COMMAND_TIMEOUT_S)
        if self._control is not None:
            for stream in (self._control.stdin, self._control.stdout):
                if stream is not None:
                    stream.close()
            self._control = None
        self._started = False


class Pane:
    """One program's window in a :class:`TmuxServer`."""

    def __init__(self, server: TmuxServer, pane_id: str, name: str) -> None:
        self.server, self.pane_id, self.name = server, pane_id, name

    def __repr__(self) -> str:
        return f"Pane({self.name!r}, {self.pane_id})"

    def send_text(self, text: str) -> None:
        """Type ``text`` literally (``send-keys -l``), without pressing Enter."""
        self.server.run("send-keys", "-t", self.pane_id, "-l", text)

    def send_keys(self, *keys: str) -> None:
        """Press tmux key names (``Enter``, ``Escape``, ``C-c``, ``Up``, ``BTab``...)."""
        self.server.run("send-keys", "-t", self.pane_id, *keys)

    def screen(self, *, history: bool = False) -> str:
        """The visible screen as text (with ``history``, the scroll-back too)."""
        extra = ("-S", "-") if history else ()
        return self.server.run("capture-pane", "-p", "-J", "-t", self.pane_id, *extra)

    def dead(self) -> int | None:
        """The program's exit status once it exited, else ``None``."""
        out = self.server.run("display-message", "-p", "-t", self.pane_id,
                              "#{pane_dead} #{pane_dead_status}", check=False).split()
        if out and out[0] == "1":
            return int(out[1]) if len(out) > 1 and out[1].lstrip("-").isdigit() else -1
        return None

    def pid(self) -> int:
        """The pid of the program the pane runs."""
        return int(self.server.run("display-message", "-p", "-t", self.pane_id,
                                   "#{pane_pid}").strip())

    def wait_screen(self, predicate: Callable[[str], bool], timeout_s: float,
                    what: str = "the expected screen") -> str:
        """Block until ``predicate(screen)`` holds; returns that screen.

        Re-reads the screen whenever the program writes (and at least every
        half second).

        Raises:
            TimeoutError: not within ``timeout_s`` seconds, or the program
                exited first (the message holds the last screen).
        """
        deadline = time.monotonic() + timeout_s
        while True:
            seen = self.server.output_count()
            text = self.screen()
            if predicate(text):
                return text
            left = deadline - time.monotonic()
            status = self.dead()
            if left <= 0 or status is not None:
                why = f"exited with {status}" if status is not None else "timed out"
                raise TimeoutError(f"{self.name}: {what} not seen ({why} after "
                                   f"{timeout_s:.0f} s); screen:\n{text}")
            self.server.wait_output(seen, min(left, 0.5))

    def wait_text(self, needle: str, timeout_s: float) -> str:
        """:meth:`wait_screen` for a screen containing ``needle``."""
        return self.wait_screen(lambda s: needle in s, timeout_s, repr(needle))

    def wait_quiet(self, quiet_s: float, timeout_s: float) -> str:
        """Block until the program wrote nothing for ``quiet_s`` seconds; returns the screen.

        Raises:
            TimeoutError: it kept writing for ``timeout_s`` seconds.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            seen = self.server.output_count()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.name}: still writing after {timeout_s:.0f} s; "
                                   f"screen:\n{self.screen()}")
            if self.server.wait_output(seen, min(quiet_s, left)) == seen and left >= quiet_s:
                return self.screen()
