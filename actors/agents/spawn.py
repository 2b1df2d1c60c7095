"""Start a session's waiting hook from its prompt hook (tools with no hook that can wait).

Some tools (Codex) run hooks synchronously only: no hook of theirs can sit
beside an idle session. For those (:attr:`actors.agents.push.PushPath.spawn`)
the prompt hook of a manager starts ``ssa hook <tool> --wait`` itself, in a
new session (``setsid``) with its output to ``/dev/null``, so the tool never
waits for it; it is told the tool process to watch through
:data:`~actors.agents.caller.TOOL_PID_ENV`, and ends with it. One waits per
session: :func:`waiter_alive` reads the waiting hook's ``flock``-ed slot.
Standard library only (the cold path); the caller's thread; a spawn returns
at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys

from actors.agents.caller import TOOL_PID_ENV, tool_process

TYPE_CHECKING = False
if TYPE_CHECKING:
    from actors.agents.caller import StrPath

__all__ = ["slot_path", "spawn_waiter", "waiter_alive"]


def slot_path(state_dir: StrPath, watcher: str) -> str:
    """The waiting hook's slot of ``watcher``: ``<state_dir>/hooks/<hash>.wait`` (pure)."""
    import hashlib  # noqa: PLC0415 - here: it loads OpenSSL, which most prompt hooks never need

    name = hashlib.sha256(watcher.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return os.path.join(state_dir, "hooks", f"{name}.wait")


def waiter_alive(state_dir: StrPath, watcher: str) -> bool:
    """Whether a waiting hook holds ``watcher``'s slot now (one non-blocking ``flock``)."""
    try:
        fd = os.open(slot_path(state_dir, watcher), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def spawn_waiter(tool: str, argv: list[str], hook_input: dict[str, object]) -> bool:
    """Start ``ssa hook <tool> --wait`` detached, for the session of ``hook_input``.

    Args:
        tool: the ``ssa hook`` tool name.
        argv: the options to pass on (``--db``, ``--scope``, ``--agent``).
        hook_input: what the waiting hook reads on stdin (no prompt text).

    Returns:
        Whether it was started (``False``: no tool process found, or the
        start failed; logged by nobody: the next prompt tries again).
    """
    import subprocess  # noqa: PLC0415 - only when a waiter starts (the cold path's cost)

    found = tool_process()
    if found is None:
        return False
    env = {**os.environ, TOOL_PID_ENV: f"{found[0]}:{found[1]}"}
    try:
        process = subprocess.Popen(  # noqa: S603 - our own command line, no shell
            [sys.executable, "-m", "actors", "hook", tool, "--wait", *argv],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True, env=env)
    except OSError:
        return False
    assert process.stdin is not None
    with contextlib.suppress(OSError):
        process.stdin.write(json.dumps(hook_input).encode("utf-8"))
    with contextlib.suppress(OSError):
        process.stdin.close()
    process.returncode = 0  # never waited for: it outlives this process (no warning)
    return True
