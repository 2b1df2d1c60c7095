"""Finding adoptable sessions in each tool's standard location (upstream-formats.md §2.1-§5.1).

Used by ``ssa watch``. Discovery only lists candidates; adoption decides
whether each can be linked. Runs in the caller's thread and blocks on
directory listings (and one SQLite query per OpenCode database).
"""

from __future__ import annotations

import glob
import os
import re
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

import apsw

from actors.upstream.opencode_problems import store_problem
from persistence.lazylog import get_logger

__all__ = ["Candidate", "default_catalogs", "discover", "unreadable_store"]

logger = get_logger(__name__)

_UUID_TAIL = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.I)


class Candidate(NamedTuple):
    """One upstream session found in a catalog.

    Attributes:
        source: ``"claude"``, ``"codex"``, ``"opencode"`` or ``"pi"``.
        path: the transcript file (OpenCode: the database).
        thread_id: the tool's own session or thread id.
    """

    source: str
    path: str
    thread_id: str


def default_catalogs(env: Mapping[str, str] | None = None,
                     home: Path | None = None) -> dict[str, list[Path]]:
    """Each tool's standard location, honouring its environment overrides.

    Claude Code: ``$CLAUDE_CONFIG_DIR/projects`` (comma-separated list
    allowed) else ``~/.claude/projects`` and ``~/.config/claude/projects``;
    Codex: ``$CODEX_HOME/sessions`` else
    ``~/.codex/sessions``; OpenCode: ``$OPENCODE_DB`` (absolute) else
    ``$XDG_DATA_HOME/opencode/opencode.db`` else
    ``~/.local/share/opencode/opencode.db``; Pi: ``$PI_CODING_AGENT_DIR/sessions``
    else ``~/.pi/agent/sessions``. Paths are returned whether or not they exist.
    """
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    claude = [Path(p.strip()).expanduser() / "projects"
              for p in env.get("CLAUDE_CONFIG_DIR", "").split(",") if p.strip()]
    newer = home / ".config" / "claude" / "projects"  # newer XDG location (formats doc §2.1)
    codex = Path(env["CODEX_HOME"]).expanduser() if env.get("CODEX_HOME") else home / ".codex"
    data = (Path(env["XDG_DATA_HOME"]).expanduser() if env.get("XDG_DATA_HOME")
            else home / ".local" / "share") / "opencode"
    opencode_db = env.get("OPENCODE_DB", "")
    if opencode_db == ":memory:":
        opencode_db = ""  # an in-memory store has nothing on disk to watch
    opencode = (Path(opencode_db) if opencode_db and os.path.isabs(opencode_db)
                else data / (opencode_db or "opencode.db"))
    pi = (Path(env["PI_CODING_AGENT_DIR"]).expanduser() if env.get("PI_CODING_AGENT_DIR")
          else home / ".pi" / "agent")
    return {
        "claude": claude or [home / ".claude" / "projects", newer],
        "codex": [codex / "sessions"],
        "opencode": [opencode],
        "pi": [pi / "sessions"],
    }


def discover(source: str, root: Path) -> Iterator[Candidate]:
    """List the sessions of ``source`` under ``root`` (a directory, or OpenCode's database).

    Claude Code: ``<root>/<slug>/<session>.jsonl`` (sub-agent files are not
    sessions); Codex: ``<root>/**/rollout-*.jsonl``; Pi: ``<root>/<dir>/*.jsonl``;
    OpenCode: top-level sessions (no parent) in the database. Unreadable
    directories are skipped (logged); an unreadable OpenCode database is
    logged once per reason (:func:`unreadable_store` tells why); never
    raises for a missing root.
    """
    if source == "opencode":
        yield from _opencode(root)
        return
    if not root.is_dir():
        return
    pattern = "**/rollout-*.jsonl" if source == "codex" else "*/*.jsonl"
    # glob.glob on strings, sorted by path components as pathlib sorts: thousands
    # of sessions are listed at every prompt of ``ssa hook``, so no Path per file.
    paths = sorted(glob.glob(os.path.join(glob.escape(str(root)), pattern),
                             recursive=True, include_hidden=True),
                   key=lambda p: p.split(os.sep))
    for path in paths:
        name = os.path.basename(path)
        stem = name[:-len(".jsonl")]
        if source == "codex":
            match = _UUID_TAIL.search(stem)
            thread = match.group(1) if match else stem
        elif source == "pi":
            thread = stem.rsplit("_", 1)[-1]
        else:
            thread = stem
        yield Candidate(source=source, path=path, thread_id=thread)


_unreadable: dict[str, str] = {}
"""OpenCode databases that could not be listed, with why (each reported once per reason)."""
_unreadable_lock = threading.Lock()


def unreadable_store(db: Path) -> str | None:
    """Why the last listing of the OpenCode database ``db`` failed, or ``None`` (any thread)."""
    with _unreadable_lock:
        return _unreadable.get(str(db))


def _opencode(db: Path) -> Iterator[Candidate]:
    if not db.is_file():
        return
    from actors.upstream.opencode import open_opencode_db  # noqa: PLC0415

    try:
        conn = open_opencode_db(db)
        try:
            ids = [str(i) for (i,) in conn.execute(
                "SELECT id FROM session WHERE parent_id IS NULL ORDER BY time_created")]
        finally:
            conn.close()
    except apsw.Error as exc:
        why = store_problem(exc)
        with _unreadable_lock:
            new = _unreadable.get(str(db)) != why
            _unreadable[str(db)] = why
        if new:  # rediscovery every interval must not repeat it
            logger.warning("cannot list OpenCode sessions in %s: %s", db, why)
        return
    with _unreadable_lock:
        _unreadable.pop(str(db), None)
    for session_id in ids:
        yield Candidate(source="opencode", path=str(db), thread_id=session_id)
