"""``ssa list``: every session with its state version, its transcript, and why one is
not monitored (issue 34 item 11: a ``claude -p`` or ``codex exec`` worker never counts,
by design, and the listing says so instead of looking broken)."""

from __future__ import annotations

from typing import Any, TextIO

import msgspec

from actors.facade import validate as v
from actors.monitors.where import UpstreamWhere, in_store, where_of
from persistence import SessionRow, list_links, list_sessions, read_adoption_notes

__all__ = ["LIST_HEADER", "NOTE_WORDS", "run_list"]

LIST_HEADER = "SESSION\tAGENT\tSTATE_VERSION\tUPSTREAM\n"

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


def run_list(conn: Any, agent_id: str | None, *, as_json: bool, out: TextIO) -> int:
    """Write ``ssa list`` for ``conn`` (a read-only signal-log connection, closed here).

    One row per session: key, agent, state version, and where its turns are
    read from, or why they are not (``not monitored: …``; a linked session a
    program prompts gets ``(turns never count: …)``). ``--json`` rows carry
    ``upstream`` and ``notMonitored`` / ``turnsNeverCount`` reason codes.
    Returns the exit status (0). Main thread; blocks on three reads.

    Raises:
        InvalidAgentId: ``agent_id`` is not a valid agent id.
    """
    agent = v.check_agent_id(agent_id, "--agent-id")
    try:
        rows = list_sessions(conn, agent)
        links = {(link.session_key, link.agent_id): where_of(link, project=False)
                 for link in list_links(conn, agent)}
        notes = read_adoption_notes(conn, agent)
    finally:
        conn.close()
    # One write of the whole listing: 20,000 rows must not cost 20,000 writes.
    if as_json:
        encoder = msgspec.json.Encoder()
        out.write(b"".join(
            _json_row(encoder, row, links.get((row.session_key, row.agent_id)),
                      notes.get((row.session_key, row.agent_id), {}))
            for row in rows).decode())
    else:
        out.write(LIST_HEADER + "".join(
            f"{row.session_key}\t{row.agent_id}\t"
            f"{row.state_version if row.state_version is not None else '-'}\t"
            f"{_upstream_cell(links.get((row.session_key, row.agent_id)), notes.get((row.session_key, row.agent_id), {}))}\n"  # noqa: E501
            for row in rows))
    return 0


def _json_row(encoder: msgspec.json.Encoder, row: SessionRow, where: UpstreamWhere | None,
              note: dict[str, str]) -> bytes:
    """One ``ssa list --json`` line: the row's object, plus ``upstream`` and the reasons."""
    extra = b""
    if where is not None:
        extra += b',"upstream":' + encoder.encode(where)
    if where is None and "noLink" in note:
        extra += b',"notMonitored":' + encoder.encode(note["noLink"])
    elif where is not None and "note" in note:
        extra += b',"turnsNeverCount":' + encoder.encode(note["note"])
    encoded = encoder.encode(row)
    return (encoded[:-1] + extra + b"}\n") if extra else encoded + b"\n"


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
