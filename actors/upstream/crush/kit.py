"""A Crush session, written into a ``.crush/crush.db`` store as Crush writes it."""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw

from actors.upstream.crush.prompts import CRUSH_PROMPTS
from actors.upstream.fixed_prompts import FILL
from actors.upstream.kit import turns as t
from actors.upstream.kit.clock import ManualClock
from actors.upstream.kit.windows import WINDOWS_FILE

__all__ = ["CrushTranscript", "sample", "type_turn"]

_SCHEMA = (  # the tables as Crush's goose migrations leave them (written from reading them)
    "CREATE TABLE IF NOT EXISTS goose_db_version (id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " version_id INTEGER NOT NULL, is_applied INTEGER NOT NULL,"
    " tstamp TIMESTAMP DEFAULT (datetime('now')))",
    "CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, parent_session_id TEXT,"
    " title TEXT NOT NULL, message_count INTEGER NOT NULL DEFAULT 0"
    " CHECK (message_count >= 0), prompt_tokens INTEGER NOT NULL DEFAULT 0"
    " CHECK (prompt_tokens >= 0), completion_tokens INTEGER NOT NULL DEFAULT 0"
    " CHECK (completion_tokens >= 0), cost REAL NOT NULL DEFAULT 0.0 CHECK (cost >= 0.0),"
    " updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL, summary_message_id TEXT,"
    " todos TEXT)",
    "CREATE TABLE IF NOT EXISTS files (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,"
    " path TEXT NOT NULL, content TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 0,"
    " created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,"
    " FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE,"
    " UNIQUE(path, session_id, version))",
    "CREATE TABLE IF NOT EXISTS messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,"
    " role TEXT NOT NULL, parts TEXT NOT NULL default '[]', model TEXT,"
    " created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, finished_at INTEGER,"
    " provider TEXT, is_summary_message INTEGER DEFAULT 0 NOT NULL,"
    " FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE)",
    "CREATE INDEX IF NOT EXISTS idx_messages_session_id ON messages (session_id)",
    "CREATE INDEX IF NOT EXISTS idx_messages_created_at ON messages (created_at)",
    "CREATE INDEX IF NOT EXISTS idx_sessions_created_at ON sessions (created_at)",
    "CREATE TABLE IF NOT EXISTS read_files (session_id TEXT NOT NULL CHECK (session_id != ''),"
    " path TEXT NOT NULL CHECK (path != ''), read_at INTEGER NOT NULL,"
    " FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE,"
    " PRIMARY KEY (path, session_id))",
    "CREATE TRIGGER IF NOT EXISTS update_session_message_count_on_insert AFTER INSERT ON"
    " messages BEGIN UPDATE sessions SET message_count = message_count + 1"
    " WHERE id = new.session_id; END",
)
_PIXEL = base64.b64decode(t.PIXEL_PNG)
_BUSY_MS = 5000


class CrushTranscript:
    """One Crush session in a ``crush.db`` store, appended to as Crush writes it.

    The store is created (0600, WAL like Crush's) with the tables of Crush's
    migrations when it does not exist; the session row is inserted on
    construction. Each :meth:`append` is one transaction. Times are seconds,
    as Crush's ``strftime('%s','now')`` writes them.

    Args:
        path: the database (``<project>/.crush/crush.db``; its parent must exist).
        session_id: the session id (default: a new UUID).
        parent_session_id: makes a sub-agent's task session (never counts).
        clock: epoch-ms clock (default: a private one moving 1 s per message).
        windows: a store recorded on Windows (``<project>\\.crush\\crush.db``): the
            rows are the same; only the paths Crush records in them are Windows
            paths (an attachment's ``binary`` ``Path``).

    Turns: :class:`~actors.testing.Typed` a user message ``[text, finish]``
    (counts); :class:`~actors.testing.Reply` an assistant message;
    :class:`~actors.testing.ToolCall` an assistant ``tool_call``;
    :class:`~actors.testing.ToolResult` a ``tool`` message;
    :class:`~actors.testing.SlashCommand` ``skill`` the ``<loaded_skill>`` text
    (other commands write nothing); :class:`~actors.testing.Interrupt` an
    assistant message finished ``canceled``; :class:`~actors.testing.Compaction`
    a summary message (``is_summary_message``); :class:`~actors.testing.SubagentRow`
    a task session with the text as its user message;
    :class:`~actors.testing.ImageOnly` a user message with only ``binary`` parts.
    :meth:`shell` and :meth:`hidden` write a bang-mode command and a hidden
    continuation. Not thread-safe; blocks on SQLite.
    """

    def __init__(self, path: str | os.PathLike[str], *, session_id: str | None = None,
                 parent_session_id: str | None = None,
                 clock: Callable[[], int] | None = None, windows: bool = False) -> None:
        self.path = Path(path)
        self._windows = windows
        self.session_id = session_id or str(uuid.uuid4())
        self._clock = clock or ManualClock()
        self._own_clock = clock is None
        new = not self.path.exists()
        if new:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
        self._conn = apsw.Connection(str(self.path))
        self._conn.set_busy_timeout(_BUSY_MS)
        self._conn.execute("PRAGMA journal_mode = WAL")
        with self._conn:
            for statement in _SCHEMA:
                self._conn.execute(statement)
            self._insert_session(self.session_id, parent_session_id, "New Session")

    def close(self) -> None:
        """Close the connection (the store stays)."""
        self._conn.close()

    def __enter__(self) -> CrushTranscript:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def append(self, *turns: t.Turn) -> list[str]:
        """Write the messages of ``turns`` in one transaction; returns their ids.

        Raises:
            TypeError: a turn of an unknown kind (nothing is written).
            apsw.Error: the store cannot be written.
        """
        return self._commit([row for turn in turns for row in self._rows(turn)])

    def _commit(self, rows: list[tuple[str, str, list[dict[str, Any]], bool]]) -> list[str]:
        ids: list[str] = []
        with self._conn:
            ids.extend(self._insert(*row) for row in rows)
        return ids

    def shell(self, command: str, output: str, exit_code: int = 0) -> str:
        """A bang-mode ``!command`` run: a user message with a ``shell_command`` part."""
        return self._commit([(self.session_id, "user", [_part("shell_command", {
            "command": command, "output": output, "exit_code": exit_code})], False)])[0]

    def hidden(self, text: str) -> str:
        """A generated continuation: a user message whose text part is ``hidden``."""
        return self._commit([(self.session_id, "user",
                              [_part("text", {"text": text, "hidden": True}), _stop()],
                              False)])[0]

    def initialize_project(self, initialize_as: str = "AGENTS.md") -> str:
        """The person clicks "Initialize Project": Crush sends its initialize template
        (the pinned version's, rendered with ``initialize_as``) as a user message.

        Returns:
            The message id.
        """
        text = CRUSH_PROMPTS.prompts[-1].text.replace(FILL, initialize_as)
        return self._commit([(self.session_id, "user", [_part("text", {"text": text}), _stop()],
                              False)])[0]

    def _now_s(self) -> int:
        if self._own_clock and isinstance(self._clock, ManualClock):
            self._clock.advance(1000)
        return self._clock() // 1000

    def _insert_session(self, sid: str, parent: str | None, title: str) -> None:
        now = self._now_s()
        self._conn.execute(
            "INSERT OR IGNORE INTO sessions (id, parent_session_id, title, message_count,"
            " prompt_tokens, completion_tokens, cost, summary_message_id, updated_at,"
            " created_at) VALUES (?, ?, ?, 0, 0, 0, 0, NULL, ?, ?)",
            (sid, parent, title, now, now))

    def _insert(self, sid: str, role: str, parts: list[dict[str, Any]], summary: bool) -> str:
        mid = str(uuid.uuid4())
        now = self._now_s()
        self._conn.execute(
            "INSERT INTO messages (id, session_id, role, parts, model, provider,"
            " is_summary_message, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (mid, sid, role, json.dumps(parts), "harness-model", "harness", int(summary),
             now, now))
        if summary:
            self._conn.execute("UPDATE sessions SET summary_message_id = ? WHERE id = ?",
                               (mid, sid))
        return mid

    def _rows(self, turn: t.Turn) -> list[tuple[str, str, list[dict[str, Any]], bool]]:
        sid = self.session_id
        match turn:
            case t.Typed(text=text):
                return [(sid, "user", [_part("text", {"text": text}), _stop()], False)]
            case t.Reply(text=text):
                return [(sid, "assistant", [_part("text", {"text": text}),
                                            _finish("end_turn")], False)]
            case t.ToolCall(name=name, input=arguments, call_id=call_id):
                return [(sid, "assistant", [_part("tool_call", {
                    "id": call_id, "name": name, "input": json.dumps(arguments),
                    "provider_executed": False, "finished": True}), _finish("tool_use")],
                    False)]
            case t.ToolResult(call_id=call_id, output=output):
                return [(sid, "tool", [_part("tool_result", {
                    "tool_call_id": call_id, "name": "bash", "content": output, "data": "",
                    "mime_type": "", "metadata": "", "is_error": False}), _stop()], False)]
            case t.SlashCommand(name="skill", args=args):
                text = (f"<loaded_skill>\n  <name>{args or 'skill'}</name>\n"
                        "  <description>a skill</description>\n  <location>SKILL.md"
                        "</location>\n  <instructions>\nDo it.\n  </instructions>\n"
                        "</loaded_skill>")
                return [(sid, "user", [_part("text", {"text": text}), _stop()], False)]
            case t.SlashCommand():
                return []  # dialogs (/model, /sessions ...) write no message
            case t.Interrupt():
                return [(sid, "assistant", [_finish("canceled")], False)]
            case t.Compaction(summary=summary):
                return [(sid, "assistant", [_part("text", {"text": summary}),
                                            _finish("end_turn")], True)]
            case t.SubagentRow(text=text):
                child = f"{uuid.uuid4()}$$call_{uuid.uuid4().hex[:8]}"
                self._insert_session(child, sid, "sub-agent task")
                return [(child, "user", [_part("text", {"text": text}), _stop()], False)]
            case t.ImageOnly(count=count):
                image = {"Path": WINDOWS_FILE.replace("app.py", "pixel.png") if self._windows
                         else "pixel.png", "MIMEType": "image/png",
                         "Data": base64.b64encode(_PIXEL).decode()}
                return [(sid, "user", [_part("text", {"text": ""}),
                                       *[_part("binary", image)] * count, _stop()], False)]
        raise TypeError(f"not a turn: {turn!r}")


def _part(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "data": data}


def _stop() -> dict[str, Any]:
    """The finish part ``message.Service.Create`` appends to every non-assistant message."""
    return _finish("stop", 0)


def _finish(reason: str, at: int = 1) -> dict[str, Any]:
    return _part("finish", {"reason": reason, "time": at})


_SAMPLE_SESSION = "3f2a8c1e-5b6d-4e7f-8a9b-0c1d2e3f4a5b"


def sample(root: Path) -> tuple[str, str]:
    """Write a sample store under ``root``: ``demo/.crush/crush.db`` holding one session
    with a typed prompt. Returns ``(store path, session id)``.

    Raises:
        OSError, apsw.Error: it cannot be written.
    """
    data = root / "demo" / ".crush"
    data.mkdir(parents=True, exist_ok=True)
    with CrushTranscript(data / "crush.db", session_id=_SAMPLE_SESSION) as session:
        session.append(t.Typed("Summarise the diff"), t.Reply("Done."))
    return str(data / "crush.db"), _SAMPLE_SESSION


def type_turn(path: str, thread_id: str, text: str) -> None:
    """Append a prompt a person typed to the session ``thread_id`` of the store at ``path``
    (raises ``apsw.Error``)."""
    with CrushTranscript(path, session_id=thread_id) as session:
        session.append(t.Typed(text))
