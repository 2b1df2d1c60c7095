"""Which coding-agent session a process runs inside: ``ssa manage`` and ``ssa mcp`` ask.

A command the agent runs from its shell tool (``ssa manage``) or an MCP
server the tool started (``ssa mcp``) is a descendant of the tool's process,
but no tool tells it the session's id in one documented way. The prompt hook
knows it (its input names the session), and it is a descendant of the same
tool process. So each hook run records *tool process -> session key* in a
small private file, and a later process finds its own tool process the same
way and reads that record:

* the tool process is the first ancestor that is not a shell (``sh``,
  ``bash``, ...): hooks and shell commands run through one, plugins and
  extensions spawn directly;
* a record holds the session key and the process's start time (``/proc``'s
  field 22), so a reused pid never matches an old record;
* a tool process that serves several sessions (OpenCode) keeps the session
  of its latest prompt, the one whose turn is running.

Linux only (``/proc``); elsewhere nothing is recorded or found and the
caller passes the key itself. Standard library only: the hook's cold path
imports this module. Every function runs on the caller's thread, blocks on
a few small file reads or writes, and never raises for a missing or odd
``/proc`` entry or record.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeAlias

    StrPath: TypeAlias = str | os.PathLike[str]

__all__ = ["SHELLS", "TOOL_PID_ENV", "find_caller", "live_tool_process", "record_caller",
           "records_dir", "tool_process"]

TOOL_PID_ENV = "SSA_TOOL_PID"
"""``<pid>:<start time>`` of the tool process, for a process started detached on its
behalf (:mod:`actors.agents.spawn`): its own ancestors no longer lead there."""

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "busybox", "env",
                    "timeout", "nohup", "setsid", "script", "uv", "uvx"})
"""Process names skipped on the way up to the tool process (shells and launchers)."""
_MAX_DEPTH = 8
"""Ancestors looked at: the tool is within a few; a deep chain is not a tool's child."""
_MAX_RECORDS = 512
"""Records kept; past this, those of processes that ended are removed."""


def records_dir(state_dir: StrPath) -> str:
    """Where the records live: ``<state_dir>/hooks/callers`` (pure)."""
    return os.path.join(state_dir, "hooks", "callers")


def _read_ascii(path: str) -> str:
    """The ASCII text of the file at ``path``.

    Raises:
        OSError: it cannot be read.
        ValueError: it is not ASCII.
    """
    with open(path, encoding="ascii") as file:
        return file.read()


def _stat(pid: int) -> tuple[str, int, int] | None:
    """``(name, parent pid, start time in clock ticks)`` of ``pid``, or ``None``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            raw = file.read()
    except OSError:
        return None
    left, right = raw.find(b"("), raw.rfind(b")")
    if left < 0 or right < left:
        return None
    fields = raw[right + 2:].split()
    try:
        return (raw[left + 1:right].decode("utf-8", "replace"), int(fields[1]),
                int(fields[19]))
    except (IndexError, ValueError):
        return None


def tool_process(start: int | None = None) -> tuple[int, int] | None:
    """The first ancestor of ``start`` (default: this process) that is not a shell.

    For this process, :data:`TOOL_PID_ENV` names it instead when set and still
    running (a waiting hook started detached).

    Returns:
        ``(pid, start time)`` of that process, or ``None`` (no ``/proc``, or
        the chain ends at init first).
    """
    if start is None and os.environ.get(TOOL_PID_ENV):
        named = _named_tool()
        if named is not None:
            return named
    return next(_non_shell_ancestors(os.getpid() if start is None else start), None)


def _non_shell_ancestors(pid: int) -> Iterator[tuple[int, int]]:
    """``(pid, start time)`` of each ancestor of ``pid`` that is not a shell, nearest first
    (at most :data:`_MAX_DEPTH` levels; the walk stops at init or a vanished process)."""
    info = _stat(pid)
    pid = info[1] if info is not None else 0
    for _ in range(_MAX_DEPTH):
        if pid <= 1:
            return
        info = _stat(pid)
        if info is None:
            return
        name, parent, started = info
        if name not in SHELLS:
            yield pid, started
        pid = parent


def _named_tool() -> tuple[int, int] | None:
    """The tool process :data:`TOOL_PID_ENV` names, when it still runs (same start time)."""
    pid_text, _, started_text = os.environ.get(TOOL_PID_ENV, "").partition(":")
    if not (pid_text.isdigit() and started_text.isdigit()):
        return None
    info = _stat(int(pid_text))
    if info is None or info[2] != int(started_text):
        return None
    return int(pid_text), int(started_text)


def record_caller(state_dir: StrPath, session_key: str) -> str | None:
    """Record that this process's tool process runs ``session_key`` (a hook calls it).

    Writes ``<records_dir>/<pid>.json`` (0600, in a 0700 directory) only when
    the state directory exists and the record changed. The record also names
    the session that *spawned* this one: the nearest ancestor of the tool
    process that has a record of its own (a manager that ran ``claude -p`` or
    ``codex exec`` from its shell tool).

    Returns:
        The spawning session's key, or ``None``. Never raises.
    """
    found = tool_process()
    if found is None or not os.path.isdir(state_dir):
        return None
    pid, started = found
    parent = _spawner(state_dir, pid)
    directory = records_dir(state_dir)
    path = os.path.join(directory, f"{pid}.json")
    text = json.dumps({"key": session_key, "started": started, "parent": parent},
                      ensure_ascii=True)
    with contextlib.suppress(OSError, ValueError):
        if _read_ascii(path) == text:
            return parent
    try:
        for folder in (os.path.dirname(directory), directory):
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder, 0o700)
        temporary = os.path.join(directory, f".{pid}.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, text.encode("ascii"))
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError:
        return parent
    _prune(directory)
    return parent


def _record(state_dir: StrPath, pid: int, started: int) -> dict[str, object] | None:
    """The record of process ``pid`` when it is that process's (same start time)."""
    try:
        value = json.loads(_read_ascii(os.path.join(records_dir(state_dir), f"{pid}.json")))
    except (OSError, ValueError):
        return None
    if not isinstance(value, dict) or value.get("started") != started:
        return None
    return value


def _spawner(state_dir: StrPath, tool_pid: int) -> str | None:
    """The session of the nearest ancestor of ``tool_pid`` that has a record, or ``None``."""
    for pid, started in _non_shell_ancestors(tool_pid):
        record = _record(state_dir, pid, started)
        if record is not None and isinstance(record.get("key"), str):
            return str(record["key"])
    return None


def _prune(directory: str) -> None:
    """Past :data:`_MAX_RECORDS` records, remove those whose process ended."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    if len(names) <= _MAX_RECORDS:
        return
    for name in names:
        pid = name.removesuffix(".json")
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))


def live_tool_process(state_dir: StrPath, session_key: str) -> int | None:
    """The running tool process whose latest recorded session is ``session_key``, or ``None``.

    Reads every record (at most a few hundred small files) and checks each
    match's start time, so an ended process (or a reused pid) never counts.
    """
    try:
        names = os.listdir(records_dir(state_dir))
    except OSError:
        return None
    for name in names:
        pid = name.removesuffix(".json")
        if not pid.isdigit() or pid == name:
            continue
        try:
            record = json.loads(_read_ascii(os.path.join(records_dir(state_dir), name)))
        except (OSError, ValueError):
            continue
        if not isinstance(record, dict) or record.get("key") != session_key:
            continue
        info = _stat(int(pid))
        if info is not None and info[2] == record.get("started"):
            return int(pid)
    return None


def find_caller(state_dir: StrPath, start: int | None = None) -> str | None:
    """The session key recorded for the tool process ``start`` (default: this one) runs in.

    Returns:
        The key, or ``None``: not inside a tool whose hook ran here, or the
        record is of an earlier process with the same pid.
    """
    found = tool_process(start)
    if found is None:
        return None
    pid, started = found
    record = _record(state_dir, pid, started)
    if record is None:
        return None
    key = record.get("key")
    return key if isinstance(key, str) and key else None
