"""``ssa hook <tool> --wait``: the waiting hook beside a session (wakes, sent messages).

Who starts it is the tool's push path (:mod:`actors.agents.push`, named in
each tool's package): Claude Code runs it as an ``asyncRewake`` Stop hook;
OpenCode's plugin and Pi's extension keep one per session; for Codex and
Qwen Code the prompt hook starts it detached. It checks once, exactly as a
prompt hook does (adopt, watch, scan what changed, deliver what is pending:
:func:`actors.agents.hookrun.check`), and hands over the messages other
sessions sent (:mod:`actors.agents.inbox`); then it blocks in
:class:`~actors.agents.waiter.ChangeWaiter` until the signal log, a watched
transcript or its inbox changes, and checks again. It costs nothing while
nothing changes (no polling): each change pays one cheap peek, and the engine
only when there is work. When ``ssa watch`` runs, it scans and this process
only reads.

A delivery goes out by exit (Claude Code: stderr, exit 2, which wakes the
session), by stream (a JSON line the plugin injects) or by command (``codex
queue``, Qwen Code's socket); the last two keep waiting, behind a
:class:`~actors.agents.turngate.TurnGate` so that one notice makes one push.
A worker's (or a manager without wakes) waits for messages only. A check
that fails (a locked or unreadable signal log) is tried again after 1, 2 ...
60 s. It ends after an exit delivery, when a newer waiting hook of the
session takes over, when its state folder is removed, and when the tool
process ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TextIO

from actors.agents import inbox
from actors.agents.caller import tool_process
from actors.agents.hookargs import HookArgs
from actors.agents.hookbudget import HookTimeout, deadline, say, watchdog
from actors.agents.hookinput import MAX_INPUT_BYTES, HookInputError, render_output
from actors.agents.hookrun import Run, catalogs_for, check, prepare
from actors.agents.push import PushPath
from actors.agents.spawn import slot_path
from actors.agents.tools import tool_named
from actors.agents.turngate import TurnGate, first_line
from actors.agents.waiter import ChangeWaiter
from persistence import peek
from persistence.lazylog import get_logger

TYPE_CHECKING = False  # the alias below exists for the type checker only
if TYPE_CHECKING:
    from actors.agents.hookrun import Checked

__all__ = ["COMMAND_TIMEOUT_S", "RECENT_S", "CommandOut", "directories", "wait"]

logger = get_logger(__name__)

MAX_BACKOFF_S = 60.0
"""Longest pause before a failed check is tried again (seconds)."""
COMMAND_TIMEOUT_S = 10.0
"""Longest a push command may take (seconds)."""
RECENT_S = 2 * 24 * 3600
"""Catalog directories changed this recently (seconds) are watched for new sessions."""
_MAX_DIRECTORIES = 256
_DEPTH = 4


def wait(args: HookArgs, source: IO[bytes], out: TextIO, err: TextIO,
         exit_now: Callable[[int], None] | None) -> int:
    """Run the wait mode; returns the exit code (see the module docstring).

    Args:
        args: the command line (``args.wait`` is set).
        source: the hook input.
        out, err: the process's stdout and stderr.
        exit_now: as :func:`actors.agents.hook.main`'s.

    Main thread; blocks until a delivery or the session's end.
    """
    found_tool = tool_named(args.tool)
    push = found_tool.push if found_tool is not None else None
    if args.no_wake:
        return 0  # installed with --no-wake: a plugin may still start it
    if push is None:
        say(err, f"--wait: {args.tool} sessions cannot be woken from a hook")
        return 0
    streams = push.delivery == "stream"
    try:
        with deadline(args.timeout):
            # A stream's plugin keeps stdin open after the input's line, for turn ends:
            # read that line from the descriptor itself, nothing beyond it buffered.
            raw = first_line(source, MAX_INPUT_BYTES + 1) if streams \
                else source.read(MAX_INPUT_BYTES + 1)
            run = prepare(args, raw, event=push.event)
    except (HookTimeout, HookInputError) as exc:
        say(err, str(exc))
        return 0
    slot = _take_slot(run)
    if slot is None:  # a newer waiting hook serves the session (or an older one hangs)
        return 0
    found = tool_process()
    stream: TextIO = err if push.delivery == "exit" else out
    if push.delivery == "command" and push.command is not None:
        if found is None:
            say(err, "--wait: the session's tool process is not known (no /proc?)")
            return 0
        stream = CommandOut(push.command, found[0], run.hook.session_id)
    return _serve(run, args, push, stream, slot, found, source if streams else None, err,
                  exit_now)


def _serve(run: Run, args: HookArgs, push: PushPath, stream: TextIO, slot: IO[bytes],
           found: tuple[int, int] | None, plugin: IO[bytes] | None, err: TextIO,
           exit_now: Callable[[int], None] | None) -> int:
    """The waiting hook's loop (see :func:`wait`): deliver, then wait for the next change.

    ``plugin``: the stream plugin's stdin (``idle`` lines), or ``None``. Returns the
    exit code. Main thread; blocks until a delivery that ends it or the session's end.
    """
    exits = push.delivery == "exit"
    mailbox = inbox.inbox_dir(run.state_dir, run.watcher)
    with contextlib.suppress(OSError):
        for folder in (mailbox.parent, mailbox):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    done: Checked = "nothing"
    backoff = 0.0
    warned = False
    gate = TurnGate(run.hook.transcript_path, stdin=plugin)
    with contextlib.closing(slot), ChangeWaiter(found[0] if found is not None else None) \
            as waiter:
        if gate.fd is not None:
            waiter.watch_fd(gate.fd)
        while True:
            if _slot_gone(slot):
                return 0  # its state folder was removed: a new waiting hook takes over
            listening = done in ("worker", "no-wake")  # messages only, no notices
            try:
                waiter.watch([mailbox, Path(run.state_dir)] if listening else
                             [mailbox, *directories(run)])
            except Exception as exc:  # an unreadable signal log: the round says so too
                logger.debug("ssa hook --wait: what to watch", exc_info=True)
                say(err, f"{type(exc).__name__}: {exc}")
            if waiter.degraded and not warned:
                warned = True
                say(err, "file notifications are unavailable here (inotify limits?): "
                         f"checking every {waiter.fallback_s:g} s instead")
            waiter.drain()  # the checks below cover what changed so far
            delivered, done, failed = _round(run, args, stream, err, exit_now,
                                             push.exit_code if exits else None, done,
                                             notices=gate.open())
            if delivered and exits:
                if exit_now is not None:
                    exit_now(push.exit_code)
                return push.exit_code
            if delivered:
                gate.close()  # the next notice waits for the turn this one starts
            if _headless(found, push.headless) or (
                    push.spawn and not push.spawn_for_workers and done == "worker"):
                return 0  # this spawned waiter serves a manager only (a sender queues itself)
            # A failed check (a locked or unreadable signal log) is tried again after 1,
            # 2, 4 ... 60 s even if nothing changes: never back to a wait with work unchecked.
            backoff = min(MAX_BACKOFF_S, max(1.0, backoff * 2)) if failed else 0.0
            timeout = min(t for t in (backoff or None, gate.recheck_s()) if t is not None) \
                if backoff or gate.recheck_s() is not None else None
            while True:  # the plugin's input alone runs no round unless it opened the gate
                outcome = waiter.wait(timeout)
                if outcome == "ended":
                    return 0
                if outcome != "input":
                    break
                gate.read_input()
                if gate.fd is None:  # the plugin closed the pipe: stop polling it
                    waiter.unwatch_fd()
                if gate.open():
                    break
                timeout = gate.recheck_s()


def _slot_gone(slot: IO[bytes]) -> bool:
    """Whether the slot file was removed (its state folder deleted) under this process."""
    try:
        return os.fstat(slot.fileno()).st_nlink == 0
    except OSError:
        return True


def _round(run: Run, args: HookArgs, stream: TextIO, err: TextIO,
           exit_now: Callable[[int], None] | None, exit_code: int | None,
           done: Checked, *, notices: bool = True) -> tuple[bool, Checked, bool]:
    """One look: deliver waiting messages, then (unless that ended the process) notices.

    ``exit_code``: the exit delivery's code (``None``: the path keeps waiting);
    ``notices``: whether notices may be delivered now (:class:`TurnGate`).
    Returns ``(whether something was delivered, what the notice check did, whether
    it failed)``; a failure is one line on ``err``.
    """
    exits = exit_code is not None
    timer = watchdog(args.timeout, err, exit_now)
    # A newer waiting hook ends this one with SIGTERM: never between printing and
    # acknowledging (or between acknowledging and exiting).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    delivered = False
    failed = False
    try:
        with deadline(args.timeout):
            delivered = _deliver_messages(run, stream)
            if notices and not (delivered and exits):
                done = check(run, args, stream, exit_now if exits else None,
                             exit_code=exit_code or 0)
                delivered = delivered or done == "delivered"
    except HookTimeout as exc:
        failed = True
        say(err, str(exc))
    except Exception as exc:  # a failed check is tried again (the caller backs off)
        failed = True
        logger.debug("ssa hook --wait: a check failed", exc_info=True)
        say(err, f"{type(exc).__name__}: {exc}")
    finally:
        if timer is not None:
            timer.cancel()
        if not (delivered and exits):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    return delivered, done, failed


def _deliver_messages(run: Run, out: TextIO) -> bool:
    """Hand the session's waiting messages to its tool, then remove them.

    Written in the push path's form (:func:`~actors.agents.hookinput.render_output`
    for ``run.hook``'s event) and flushed first: a failed write leaves them for
    the next try. Returns whether any were delivered.
    """
    messages = inbox.pending(run.state_dir, run.watcher)
    if not messages:
        return False
    out.write(render_output(run.hook, inbox.render(messages)))
    out.flush()
    inbox.remove(messages)
    return True


class CommandOut(io.StringIO):
    """Where a ``"command"`` push path's notices go: :meth:`flush` runs the command.

    Args:
        build: ``(tool pid, session id, text) -> argv``.
        tool_pid: the session's tool process.
        session_id: the session's id in its tool.

    The command gets the text in its arguments (where ``build`` puts it) and on
    its stdin. ``flush`` raises :class:`OSError` when the command fails or takes more than
    :data:`COMMAND_TIMEOUT_S`, so the notices it carried are not acknowledged.
    The waiting hook's main thread; blocks on the command.
    """

    def __init__(self, build: Callable[[int, str, str], list[str]], tool_pid: int,
                 session_id: str) -> None:
        super().__init__()
        self._build = build
        self._pid = tool_pid
        self._session = session_id

    def flush(self) -> None:
        """Run the command with what was written since the last flush."""
        text = self.getvalue()
        if not text:
            return
        self.seek(0)
        self.truncate()
        try:
            done = subprocess.run(  # noqa: S603 - argv of our own push path, no shell
                self._build(self._pid, self._session, text.rstrip("\n")),
                input=text.rstrip("\n").encode("utf-8", "surrogatepass"),
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                timeout=COMMAND_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise OSError(f"the push command failed: {exc}") from None
        if done.returncode != 0:
            raise OSError(f"the push command exited {done.returncode}: "
                          f"{done.stderr.decode('utf-8', 'replace').strip()[:200]}")


def _headless(found: tuple[int, int] | None, flags: tuple[str, ...]) -> bool:
    """Whether the tool process runs without a person (e.g. ``claude -p``): such a run
    waits for its hooks, so a waiting hook would hold it up."""
    if found is None or not flags:
        return False
    try:
        argv = Path(f"/proc/{found[0]}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(flag.encode() in argv for flag in flags)


_SLOT_TRY_S = 1.0
"""How long one try to take a slot from an older waiting hook blocks (seconds)."""
_SLOT_TRIES = 5


def _take_slot(run: Run) -> IO[bytes] | None:
    """Become the one waiting hook of the session: end an older one, hold its lock.

    A tool may start a waiting hook at every turn's end and keep the older
    ones running (Claude Code does): the newest one takes over. The slot is
    ``hooks/<hash>.wait`` beside the signal log (0600), ``flock``-ed for the
    process's life and holding ``<pid>:<start time>``. An older holder gets
    SIGTERM (when its command line is a waiting ``ssa hook``); a holder that
    started after this process makes it give up at once, so of several
    started together the newest stays. Returns the open slot, or ``None``
    (a newer one serves, or an older one would not end). Main thread
    (SIGALRM); blocks at most about five seconds.
    """
    path = slot_path(run.state_dir, run.watcher)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(os.path.dirname(path), 0o700)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        logger.debug("no waiting-hook slot: %s", exc)
        return open(os.devnull, "rb")
    slot = os.fdopen(fd, "r+b")
    me = (_started(os.getpid()), os.getpid())
    for _ in range(_SLOT_TRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            pass
        holder = _holder(slot)
        if holder is not None and holder[1:] > me:
            slot.close()
            return None  # a newer waiting hook serves the session
        if holder is not None:
            _end(holder[0])
        try:
            with deadline(_SLOT_TRY_S):
                fcntl.flock(fd, fcntl.LOCK_EX)
            break
        except (HookTimeout, OSError):
            continue
    else:
        slot.close()
        return None
    slot.seek(0)
    slot.truncate()
    slot.write(f"{me[1]}:{me[0]}".encode("ascii"))
    slot.flush()
    return slot


def _started(pid: int) -> int:
    """A process's start time in clock ticks (0 when unknown)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def _holder(slot: IO[bytes]) -> tuple[int, int, int] | None:
    """``(pid, start time, pid)`` of the slot's holder as it wrote itself, or ``None``."""
    slot.seek(0)
    pid_text, _, started_text = slot.read(64).decode("ascii", "replace").strip().partition(":")
    if not pid_text.isdigit():
        return None
    return int(pid_text), int(started_text) if started_text.isdigit() else 0, int(pid_text)


def _end(pid: int) -> None:
    """SIGTERM ``pid`` when it is a waiting ``ssa hook``."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return
    if b"hook" in argv and b"--wait" in argv:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)


def directories(run: Run) -> list[Path]:
    """The directories whose change may hold news for ``run``'s manager.

    The signal log's (every commit lands in its ``-wal``), the manager's own
    transcript's, each watched transcript's or store's, and the catalogs'
    directories changed within :data:`RECENT_S` (where new sessions appear); a
    catalog root that does not exist yet is listed too (the waiter watches for
    its creation).
    At most 256. Caller's thread; blocks on a few reads and ``stat`` calls.
    """
    found: dict[str, None] = {str(run.state_dir): None}
    if run.hook.transcript_path:
        found[str(Path(run.hook.transcript_path).parent)] = None
    if not run.is_url:
        try:
            conn = peek.open_peek(run.location)
        except Exception:  # missing, locked, corrupt: the check says why
            conn = None
        if conn is not None:
            try:
                watched = peek.watched_targets(conn, run.watcher)
                for link in peek.links(conn):
                    if link.session_key in watched and link.path:
                        found[str(Path(link.path).parent)] = None
            finally:
                conn.close()
    now = time.time()
    for roots in catalogs_for(run.hook.cwd).values():
        for root in roots:
            if not os.path.isdir(root):  # watched for its creation (its ancestor, that name)
                found[root] = None
                continue
            for directory in _recent(root, now):
                found[directory] = None
                if len(found) >= _MAX_DIRECTORIES:
                    return [Path(d) for d in found]
    return [Path(d) for d in found]


def _recent(root: str, now: float) -> Iterator[str]:
    """``root`` and its directories (to :data:`_DEPTH` levels) changed within RECENT_S."""
    if not os.path.isdir(root):
        return
    yield root
    stack = [(root, 0)]
    while stack:
        path, depth = stack.pop()
        if depth >= _DEPTH:
            continue
        try:
            entries = list(os.scandir(path))
        except OSError:
            continue
        for entry in entries:
            try:
                if not entry.is_dir(follow_symlinks=False) \
                        or now - entry.stat(follow_symlinks=False).st_mtime > RECENT_S:
                    continue
            except OSError:
                continue
            yield entry.path
            stack.append((entry.path, depth + 1))
