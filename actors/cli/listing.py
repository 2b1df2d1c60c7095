"""``ssa list``: every session as a table for people, or one JSON object per line.

Columns: the key, the tool, the project folder, the session's name in its
tool (read from the tool's files now, never stored: :mod:`actors.upstream.names`),
the worker's state, its last activity, its state version, and where its turns
are read from or why they are not (issue 34 item 11: a ``claude -p`` or
``codex exec`` worker never counts, by design, and the listing says so
instead of looking broken). Names and projects are read for the rows shown;
``--no-names`` skips those reads.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, NamedTuple, TextIO

import msgspec

from actors.cli.table import render_table
from actors.cli.when import ago
from actors.facade import validate as v
from actors.facade.activity import current_activity
from actors.monitors.where import UpstreamWhere, in_store, where_of
from actors.upstream.names import name_of
from actors.upstream.sources import find_source
from persistence import (
    SessionRow,
    UpstreamLink,
    WorkerActivity,
    list_links,
    list_session_times,
    list_sessions,
    read_activities,
    read_adoption_notes,
)

__all__ = ["COLUMNS", "NOTE_WORDS", "ListEntry", "home_short", "run_list", "worker_state_cell"]

COLUMNS = ("SESSION", "TOOL", "PROJECT", "NAME", "STATE", "LAST ACTIVITY", "STATE VERSION",
           "UPSTREAM")
"""``ssa list``'s columns (``AGENT`` follows ``SESSION`` when the rows span agents)."""
_LIMITS = {"PROJECT": 40, "NAME": 48}
"""The most characters shown of a cell, by column (longer ones are cut with ``…``)."""

NOTE_WORDS: dict[str, str] = {
    "program_driven": "a program prompts it (print mode or an SDK)",
    "exec_thread": "a program prompts it (exec mode)",
    "subagent_thread": "a sub-agent's thread",
    "subagent": "a sub-agent's session",
    "not_user_thread": "not started by a person",
    "child_session": "a sub-agent's session",
    "legacy_format": "a format this release does not read",
}
"""A person's words for the reason codes adoption records (others are shown as codes)."""


class ListEntry(NamedTuple):
    """One session as ``ssa list`` shows it.

    Attributes:
        row: the session's row.
        link: its upstream link, if adopted with one.
        where: the link described (project read when names are read).
        note: its adoption notes (``noLink`` / ``note`` reason codes).
        tool: the source's name (``"claude"``), from the link or the key.
        name: the session's name in its tool, when read and found.
        last_ms: its last activity, epoch ms (0: unknown).
        activity: where its tool stands, as its hooks told and its transcript shows.
    """

    row: SessionRow
    link: UpstreamLink | None
    where: UpstreamWhere | None
    note: dict[str, str]
    tool: str | None
    name: str | None
    last_ms: int
    activity: WorkerActivity | None = None


def worker_state_cell(activity: WorkerActivity | None) -> str:
    """``ssa list``'s STATE cell: where the session's tool stands (issue 33 item 2), e.g.
    ``waiting (permission)`` or ``busy``; ``-`` when its hooks never said (pure)."""
    if activity is None:
        return "-"
    return activity.state + (f" ({activity.detail})" if activity.detail else "")


def home_short(path: str | None, home: str | None = None) -> str | None:
    """``path`` with the home folder as ``~`` (``None`` stays ``None``; pure)."""
    if not path:
        return path
    home = home if home is not None else os.path.expanduser("~")
    if home and home != os.sep and (path == home or path.startswith(home.rstrip(os.sep) + os.sep)):
        return "~" + path[len(home.rstrip(os.sep)):]
    return path


def run_list(conn: Any, agent_id: str | None, *, as_json: bool, out: TextIO,
             names: bool = True, now_ms: Callable[[], int] | None = None) -> int:
    """Write ``ssa list`` for ``conn`` (a read-only signal-log connection, closed here).

    One row per session (see the module docstring); ``--json`` rows are the
    session's object plus ``upstream``, ``notMonitored`` / ``turnsNeverCount``
    reason codes, ``tool``, ``project``, ``name`` and ``lastActivityMs`` when
    known. With ``names`` the project and name of each linked session are read
    from its tool's files (bounded reads per row); without, neither is.
    Returns the exit status (0). Main thread; blocks on four reads and the
    file reads.

    Raises:
        InvalidAgentId: ``agent_id`` is not a valid agent id.
    """
    agent = v.check_agent_id(agent_id, "--agent-id")
    try:
        rows = list_sessions(conn, agent)
        links = {(link.session_key, link.agent_id): link for link in list_links(conn, agent)}
        notes = read_adoption_notes(conn, agent)
        times = list_session_times(conn, agent)
        activities = read_activities(conn, agent)
    finally:
        conn.close()
    entries = [_entry(row, links.get((row.session_key, row.agent_id)),
                      notes.get((row.session_key, row.agent_id), {}),
                      times.get((row.session_key, row.agent_id), 0), names=names,
                      activity=activities.get((row.session_key, row.agent_id)))
               for row in rows]
    # One write of the whole listing: 20,000 rows must not cost 20,000 writes.
    if as_json:
        encoder = msgspec.json.Encoder()
        out.write(b"".join(_json_row(encoder, e) for e in entries).decode())
    else:
        out.write(_table(entries, (now_ms or _now_ms)()))
    return 0


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _tool_of(key: str, link: UpstreamLink | None) -> str | None:
    """The source of a link, else of a key ``agent:<id>:<source>:<session id>``."""
    if link is not None:
        return link.source
    parts = key.split(":", 3)
    if len(parts) == 4 and parts[0] == "agent" and find_source(parts[2]) is not None:
        return parts[2]
    return None


def _mtime_ms(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns // 1_000_000
    except (OSError, ValueError):
        return 0


def _entry(row: SessionRow, link: UpstreamLink | None, note: dict[str, str], changed_ms: int,
           *, names: bool, activity: WorkerActivity | None = None) -> ListEntry:
    """One row's entry: reads the link's project and name (``names``) and its
    transcript's modification time (a file source's); where its tool stands. Never
    raises."""
    where = name = None
    last = max(changed_ms, activity.updated_at if activity is not None else 0)
    mtime: int | None = None
    if link is not None:
        local = not link.host_id.startswith("node:")  # a paired node's files are not here
        where = where_of(link, project=names and local)
        if local and where.node is None and where.path:
            if names:
                name = name_of(link.source, where.path, link.thread_id)
            if not in_store(link.source):
                mtime = _mtime_ms(where.path) or None
                last = max(last, mtime or 0)
        last = max(last, link.last_scanned_at or 0)
    return ListEntry(row=row, link=link, where=where, note=note,
                     tool=_tool_of(row.session_key, link), name=name, last_ms=last,
                     activity=current_activity(activity, mtime))


def _json_row(encoder: msgspec.json.Encoder, entry: ListEntry) -> bytes:
    """One ``ssa list --json`` line: the row's object plus what the table shows."""
    where, note = entry.where, entry.note
    extra = b""
    if where is not None:
        extra += b',"upstream":' + encoder.encode(where)
    if where is None and "noLink" in note:
        extra += b',"notMonitored":' + encoder.encode(note["noLink"])
    elif where is not None and "note" in note:
        extra += b',"turnsNeverCount":' + encoder.encode(note["note"])
    if entry.tool is not None:
        extra += b',"tool":' + encoder.encode(entry.tool)
    if where is not None and where.project:
        extra += b',"project":' + encoder.encode(where.project)
    if entry.name is not None:
        extra += b',"name":' + encoder.encode(entry.name)
    if entry.last_ms:
        extra += b',"lastActivityMs":' + encoder.encode(entry.last_ms)
    if entry.activity is not None:
        extra += b',"workerState":' + encoder.encode(entry.activity)
    encoded = encoder.encode(entry.row)
    return (encoded[:-1] + extra + b"}\n") if extra else encoded + b"\n"


def _table(entries: list[ListEntry], now_ms: int) -> str:
    """The aligned table (see :data:`COLUMNS`); ``AGENT`` only when rows span agents."""
    agents = len({e.row.agent_id for e in entries}) > 1
    header = list(COLUMNS)
    if agents:
        header.insert(1, "AGENT")
    home = os.path.expanduser("~")
    cells = []
    for e in entries:
        found = find_source(e.tool) if e.tool else None
        project = home_short(e.where.project, home) if e.where is not None else None
        row = [e.row.session_key, found.title if found else "-", project or "-",
               e.name or "-", worker_state_cell(e.activity), ago(e.last_ms, now_ms),
               str(e.row.state_version) if e.row.state_version is not None else "-",
               _upstream_cell(e.where, e.note)]
        if agents:
            row.insert(1, e.row.agent_id)
        cells.append(row)
    limits = {header.index(column): width for column, width in _LIMITS.items()}
    return render_table(header, cells, limits=limits,
                        keep_end=frozenset({header.index("PROJECT")}))


def _words(code: str) -> str:
    return NOTE_WORDS.get(code, code)


def _upstream_cell(where: UpstreamWhere | None, note: dict[str, str]) -> str:
    """``ssa list``'s UPSTREAM column: the transcript (a store: ``store#session``), or why
    the session is not monitored, or ``-``."""
    if where is None:
        return f"not monitored: {_words(note['noLink'])}" if "noLink" in note else "-"
    if where.node is not None:
        cell = f"node:{where.node}#{where.thread_id}"
    elif in_store(where.source):
        cell = f"{where.path}#{where.thread_id}"
    else:
        cell = where.path or "-"
    return f"{cell} (turns never count: {_words(note['note'])})" if "note" in note else cell


