"""Small sample sessions in each tool's on-disk format, for ``ssa demo`` and tests.

The rows follow the real formats (upstream-formats.md): a Claude Code
project JSONL, a paginated Codex rollout, a Pi v3 session file and a minimal
OpenCode 1.18-style SQLite store (only the tables and columns the reader
uses). Everything is written under a directory the caller owns; functions
block on file I/O in the caller's thread.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import apsw
import msgspec

__all__ = ["SampleSession", "append_opencode_turn", "append_typed_turn",
           "write_sample_catalog"]

_CLAUDE_SESSION = "4f1c8a52-7d1e-4e8b-9a54-2c6f0b3d9e11"
_CODEX_THREAD = "01a06421-3bf7-7ed2-a618-e42b6c961905"
_PI_SESSION = "019e963d-6bd6-7ade-8a49-256ac3391bdd"
_OPENCODE_SESSION = "ses_dd45483e1ffey2Pb2WIeXKDqPz"
_OPENCODE_SCHEMA = (
    "CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT,"
    " slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL,"
    " time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, time_archived INTEGER)",
    "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,"
    " time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL)",
    "CREATE INDEX message_session_idx ON message (session_id, time_created, id)",
    "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,"
    " time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL)",
    "CREATE INDEX part_message_idx ON part (message_id, id)",
    "CREATE TABLE event_sequence (aggregate_id TEXT PRIMARY KEY, seq INTEGER NOT NULL,"
    " owner_id TEXT)",
)


class SampleSession(msgspec.Struct, frozen=True, kw_only=True):
    """One written sample session: what to pass to ``Gateway.adopt``."""

    source: str
    path: str
    thread_id: str


def _line(row: object) -> bytes:
    return json.dumps(row, separators=(",", ":")).encode() + b"\n"


def _claude_user(text: str, when: str) -> bytes:
    return _line({"parentUuid": None, "isSidechain": False, "userType": "external",
                  "cwd": "/home/user/demo", "sessionId": _CLAUDE_SESSION, "version": "2.1.37",
                  "gitBranch": "main", "type": "user",
                  "message": {"role": "user", "content": text},
                  "uuid": str(uuid.uuid4()), "timestamp": when})


def _claude_assistant(text: str, when: str) -> bytes:
    return _line({"parentUuid": None, "isSidechain": False, "userType": "external",
                  "cwd": "/home/user/demo", "sessionId": _CLAUDE_SESSION, "version": "2.1.37",
                  "type": "assistant", "uuid": str(uuid.uuid4()), "timestamp": when,
                  "message": {"role": "assistant", "type": "message",
                              "content": [{"type": "text", "text": text}]}})


def _codex_user(text: str, when: str) -> bytes:
    turn = str(uuid.uuid4())
    return _line({"timestamp": when, "type": "response_item",
                  "payload": {"type": "message", "role": "user",
                              "content": [{"type": "input_text", "text": text}],
                              "internal_chat_message_metadata_passthrough": {
                                  "turn_id": turn, "content_item_kinds": ["user.text"]}}}) + \
        _line({"timestamp": when, "type": "event_msg",
               "payload": {"type": "item_completed", "thread_id": _CODEX_THREAD,
                           "turn_id": turn,
                           "item": {"type": "UserMessage", "id": str(uuid.uuid4()),
                                    "content": [{"type": "text", "text": text,
                                                 "text_elements": []}]}}})


def _pi_user(text: str, when: str) -> bytes:
    return _line({"type": "message", "id": uuid.uuid4().hex[:8], "parentId": None,
                  "timestamp": when,
                  "message": {"role": "user", "content": [{"type": "text", "text": text}]}})


def write_sample_catalog(root: Path) -> dict[str, SampleSession]:
    """Write one sample session per tool under ``root``; returns them by source.

    Layout: ``claude/projects/-home-user-demo/<id>.jsonl``,
    ``codex/sessions/2026/11/30/rollout-…-<id>.jsonl``, ``opencode/opencode.db``,
    ``pi/sessions/--home-user-demo--/<ts>_<id>.jsonl``.
    """
    when = "2026-11-30T08:00:00.000Z"
    claude = root / "claude" / "projects" / "-home-user-demo" / f"{_CLAUDE_SESSION}.jsonl"
    claude.parent.mkdir(parents=True, exist_ok=True)
    claude.write_bytes(_claude_user("Add a changelog entry for 1.2", when)
                       + _claude_assistant("Done.", when))
    codex = (root / "codex" / "sessions" / "2026" / "11" / "30"
             / f"rollout-2026-11-30T08-00-00-{_CODEX_THREAD}.jsonl")
    codex.parent.mkdir(parents=True, exist_ok=True)
    codex.write_bytes(_line({"timestamp": when, "type": "session_meta", "payload": {
        "id": _CODEX_THREAD, "timestamp": when, "cwd": "/home/user/demo",
        "originator": "codex-tui", "cli_version": "0.152.1", "source": "cli",
        "thread_source": "user", "history_mode": "paginated"}})
        + _codex_user("Run the unit tests", when))
    pi = (root / "pi" / "sessions" / "--home-user-demo--"
          / f"2026-11-30T08-00-00-000Z_{_PI_SESSION}.jsonl")
    pi.parent.mkdir(parents=True, exist_ok=True)
    pi.write_bytes(_line({"type": "session", "version": 3, "id": _PI_SESSION, "timestamp": when,
                          "cwd": "/home/user/demo"}) + _pi_user("Summarise the diff", when))
    opencode = root / "opencode" / "opencode.db"
    opencode.parent.mkdir(parents=True, exist_ok=True)
    conn = apsw.Connection(str(opencode))
    try:
        conn.pragma("journal_mode", "wal")
        with conn:
            for statement in _OPENCODE_SCHEMA:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO session (id, project_id, parent_id, slug, directory, title,"
                " version, time_created, time_updated) VALUES (?, 'global', NULL, 'demo',"
                " '/home/user/demo', 'Demo session', '1.18.33', ?, ?)",
                (_OPENCODE_SESSION, 1_796_030_000_000, 1_796_030_000_000))
            conn.execute("INSERT INTO event_sequence (aggregate_id, seq) VALUES (?, 0)",
                         (_OPENCODE_SESSION,))
    finally:
        conn.close()
    append_opencode_turn(opencode, _OPENCODE_SESSION, "Explain the build failure")
    return {
        "claude": SampleSession(source="claude", path=str(claude), thread_id=_CLAUDE_SESSION),
        "codex": SampleSession(source="codex", path=str(codex), thread_id=_CODEX_THREAD),
        "opencode": SampleSession(source="opencode", path=str(opencode),
                                  thread_id=_OPENCODE_SESSION),
        "pi": SampleSession(source="pi", path=str(pi), thread_id=_PI_SESSION),
    }


def append_opencode_turn(db: Path, session_id: str, text: str) -> None:
    """Append a typed user turn to an OpenCode (≥ 1.2) store the way OpenCode writes one.

    One transaction: the user message row, its text part, and the session's
    ``event_sequence`` advanced (formats doc §4.1-§4.2). Ids follow OpenCode's
    shape (creation time, then a counter), after every existing message.
    Blocks on SQLite (busy timeout 5 s).

    Raises:
        apsw.Error: the store cannot be written.
    """
    conn = apsw.Connection(str(db))
    try:
        conn.set_busy_timeout(5000)
        with conn:
            latest, count = conn.execute(
                "SELECT coalesce(max(time_created), 1796030000000), count(*) FROM message").get
            created = int(latest) + 60_000
            stamp = f"{(created * 0x1000 + int(count)) % (1 << 48):012x}"
            message_id = f"msg_{stamp}Sample{int(count):08d}"
            part_id = f"prt_{stamp}Sample{int(count):08d}"
            conn.execute("INSERT INTO message (id, session_id, time_created, time_updated, data)"
                         " VALUES (?, ?, ?, ?, ?)", (message_id, session_id, created, created,
                                                     json.dumps({
                                                         "role": "user",
                                                         "time": {"created": created},
                                                         "agent": "build"})))
            conn.execute("INSERT INTO part (id, message_id, session_id, time_created,"
                         " time_updated, data) VALUES (?, ?, ?, ?, ?, ?)",
                         (part_id, message_id, session_id, created, created,
                          json.dumps({"type": "text", "text": text})))
            conn.execute("UPDATE event_sequence SET seq = seq + 3 WHERE aggregate_id = ?",
                         (session_id,))
    finally:
        conn.close()


def append_typed_turn(session: SampleSession, text: str) -> None:
    """Append a turn a person typed, in the session's own tool format."""
    when = "2026-11-30T08:05:00.000Z"
    if session.source == "opencode":
        append_opencode_turn(Path(session.path), session.thread_id, text)
        return
    row = {"claude": _claude_user, "codex": _codex_user, "pi": _pi_user}[session.source]
    with open(session.path, "ab") as handle:
        handle.write(row(text, when))
