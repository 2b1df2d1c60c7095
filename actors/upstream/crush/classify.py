"""Read Crush's SQLite store (``.crush/crush.db``) and decide which messages a person typed.

Crush (charmbracelet, npm ``@charmland/crush``; Go) keeps every session of a
project in one SQLite file in WAL mode (``internal/db/connect.go``: ``journal_mode
WAL``, ``busy_timeout 30000``), in the data directory ``.crush`` of the project
(``internal/config/load.go``: the closest ``.crush`` up to the project
boundary, else ``<cwd>/.crush``; ``--data-dir`` and ``options.data_directory``
move it). The rules were read from Crush's source (docs/upstream-crush.md
says which snapshot; v0.96.1 itself could not be fetched or run here).

Tables used (goose migrations ``internal/db/migrations``):

* ``sessions(id, parent_session_id, title, message_count, prompt_tokens,
  completion_tokens, cost, updated_at, created_at, summary_message_id, todos)``:
  ``parent_session_id`` is set on a sub-agent's task session (id
  ``<message id>$$<tool call id>``) and on the title session (id ``title-<id>``);
* ``messages(id, session_id, role, parts, model, created_at, updated_at,
  finished_at, provider, is_summary_message)``: ``role`` is ``user``,
  ``assistant`` or ``tool``; ``parts`` a JSON list of ``{"type", "data"}``
  (``internal/message/message.go`` ``marshalParts``): ``text`` ``{text,
  hidden?}``, ``image_url``, ``binary`` ``{Path, MIMEType, Data}``,
  ``tool_call``, ``tool_result``, ``finish``, ``reasoning``,
  ``shell_command`` ``{command, output, exit_code}``. Times are **seconds**
  (``strftime('%s','now')``), although the schema's comments say ms. Ids are
  random UUIDs, so rows are read in ``rowid`` (insertion) order.

Which messages are typed (reason ``typed``), and why the others are not:

* ``child_session``: the session has a parent (a sub-agent's or the title
  generator's prompts are Crush's own);
* ``tool_result`` (role ``tool``), ``not_user`` (``assistant``/``system``),
  ``summary`` (an assistant summary, ``is_summary_message``);
* ``unknown_role``, ``undecodable`` (``parts`` is not Crush's JSON),
  ``unknown_part`` (a part type this reader does not know: it could mark the
  message as generated);
* ``shell``: a ``shell_command`` part (bang mode ``!cmd``,
  ``internal/shell/persist_message.go``);
* ``hidden``: only ``text`` parts with ``hidden: true`` (generated user
  continuations kept in model history; later Crush builds);
* ``skill_command``: a skill chosen in the commands dialog
  (``<loaded_skill>`` XML, ``internal/skills/skills.go`` ``FormatInvocation``);
* ``summary_continuation``: the prompt Crush re-queues after an automatic
  summary (``The previous session was interrupted because it got too long,
  the initial user request was: …``, ``internal/agent/agent.go``);
* ``tool_prompt``: the text is exactly one of Crush's own prompts
  (:mod:`actors.upstream.crush.prompts`: "Initialize Project", from the
  onboarding screen or the commands dialog, sends the initialize template);
* ``attachment_only`` (no text, only attachments), ``empty_text``;
* ``inter_session``, ``reseed_envelope``, ``openclaw_envelope``: a gateway envelope.

Not told apart (documented, counted as typed): ``crush run`` prompts (the
session is created like a TUI one and nothing in the row says who sent it),
custom commands and MCP prompts (their expanded text, the person's own
command file or a server's prompt, is sent as an ordinary prompt).

The I/O functions block the calling thread on SQLite, at most
``busy_timeout_ms`` per statement; use one connection from one thread at a
time. :func:`read_crush_messages` raises :class:`apsw.Error` (a busy or
locked database included), which a caller treats as "no news";
:func:`poll_crush` turns ``BusyError``/``LockedError`` into ``None``.
:func:`classify_crush_message` and :func:`classify_crush_rows` are pure. Nothing
here logs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import apsw
import msgspec

from actors.upstream.common import Unit, gateway_envelope_reason, normalize_text
from actors.upstream.crush.prompts import CRUSH_PROMPTS
from actors.upstream.kindlog import log_unknown_kind

__all__ = [
    "KNOWN_PARTS",
    "SKILL_PREFIX",
    "SUMMARY_CONTINUATION",
    "CrushMessage",
    "CrushRead",
    "CrushSession",
    "classify_crush_message",
    "classify_crush_rows",
    "crush_fingerprint",
    "open_crush_db",
    "poll_crush",
    "read_crush_messages",
    "read_crush_sessions",
]

logger = logging.getLogger(__name__)

KNOWN_PARTS: Final = frozenset({"reasoning", "text", "image_url", "binary", "tool_call",
                                "tool_result", "finish", "shell_command"})
"""The part types of ``internal/message/message.go`` (``partType``)."""
SKILL_PREFIX: Final = "<loaded_skill>"
"""How a chosen skill's invocation text starts (``Skill.FormatInvocation``)."""
SUMMARY_CONTINUATION: Final = ("The previous session was interrupted because it got too "
                               "long, the initial user request was:")
"""The prompt Crush re-queues after an automatic summary."""

_BUSY: Final = (apsw.BusyError, apsw.LockedError)


class CrushSession(msgspec.Struct, frozen=True, kw_only=True):
    """A ``sessions`` row.

    Attributes:
        id: the session id (a UUID; ``…$$…`` for a task session, ``title-…``).
        parent_session_id: the parent of a sub-agent or title session, else ``None``.
        title: the session title.
        created_ms: ``created_at`` (seconds) as epoch ms.
        updated_ms: ``updated_at`` as epoch ms.
        cwd: the project directory (the parent of the ``.crush`` data directory).
    """

    id: str
    parent_session_id: str | None
    title: str
    created_ms: int
    updated_ms: int
    cwd: str | None = None

    @property
    def refusal(self) -> str | None:
        """``child_session`` for a sub-agent's or the title generator's session, else ``None``."""
        if self.parent_session_id or "$$" in self.id or self.id.startswith("title-"):
            return "child_session"
        return None


class CrushMessage(msgspec.Struct, frozen=True, kw_only=True):
    """A ``messages`` row with its ``parts`` still JSON text.

    Attributes:
        rowid: the SQLite rowid (insertion order: the read cursor).
        id: the message id.
        session_id: its session.
        role: ``user``, ``assistant``, ``tool`` (or anything a newer build writes).
        parts: the ``parts`` JSON text.
        created_ms: ``created_at`` (seconds) as epoch ms.
        is_summary: ``is_summary_message``.
    """

    rowid: int
    id: str
    session_id: str
    role: str
    parts: str
    created_ms: int
    is_summary: bool = False


class CrushRead(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`read_crush_messages` found.

    Attributes:
        messages: the rows after the cursor, in rowid order.
        last_rowid: the next cursor (the largest rowid read, or the old cursor).
    """

    messages: tuple[CrushMessage, ...]
    last_rowid: int


class _Part(msgspec.Struct, frozen=True):
    type: str
    data: msgspec.Raw = msgspec.Raw(b"null")


class _Text(msgspec.Struct, frozen=True):
    text: str = ""
    hidden: bool = False


_parts_decoder: Final = msgspec.json.Decoder(list[_Part])
_text_decoder: Final = msgspec.json.Decoder(_Text)


# --- I/O -----------------------------------------------------------------------


def open_crush_db(path: str | Path, *, busy_timeout_ms: int = 1000) -> apsw.Connection:
    """Open ``crush.db`` read-only: ``file:…?mode=ro`` URI, ``query_only``, no trusted schema.

    The connection sees the last committed transaction of Crush's WAL and never
    blocks its writer (SQLite may create the ``-wal``/``-shm`` side files, as
    every reader does).

    Args:
        path: the database (``<project>/.crush/crush.db``).
        busy_timeout_ms: how long one statement waits on a lock, in ms.

    Returns:
        The connection; close it when done.

    Raises:
        apsw.Error: the file cannot be opened (missing, not a database).
    """
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    conn.set_busy_timeout(busy_timeout_ms)
    conn.execute("PRAGMA query_only = ON")
    conn.execute("PRAGMA trusted_schema = OFF")
    return conn


def read_crush_sessions(conn: apsw.Connection, *, db_path: str | Path | None = None
                        ) -> list[CrushSession]:
    """Every session, oldest first; ``cwd`` is the project when ``db_path`` is given.

    Raises:
        apsw.Error: a query failed (busy or locked included). Blocks on SQLite.
    """
    cwd = str(Path(db_path).resolve().parent.parent) if db_path is not None else None
    rows = conn.execute("SELECT id, parent_session_id, title, created_at, updated_at"
                        " FROM sessions ORDER BY created_at, rowid")
    return [CrushSession(id=str(sid), parent_session_id=parent if isinstance(parent, str)
                         and parent else None, title=str(title), created_ms=_ms(created),
                         updated_ms=_ms(updated), cwd=cwd)
            for sid, parent, title, created, updated in rows]


def read_crush_messages(conn: apsw.Connection, *, after_rowid: int = 0,
                        session_id: str | None = None, limit: int = 1000) -> CrushRead:
    """The messages inserted after ``after_rowid``, in rowid order (at most ``limit``).

    A user message is written once, complete (``message.Service.Create``), so a
    row read here never changes its decision later; assistant rows are updated
    while they stream but are never typed.

    Args:
        conn: a connection from :func:`open_crush_db`.
        after_rowid: the cursor (0: from the start).
        session_id: only this session's messages, or every session's.
        limit: the most rows one call returns (page on with ``last_rowid``).

    Raises:
        ValueError: ``limit`` is not positive.
        apsw.Error: a query failed (busy or locked included). Blocks on SQLite.
    """
    if limit <= 0:
        raise ValueError(f"limit must be > 0, got {limit}")
    where = "rowid > ?"
    args: list[int | str] = [after_rowid]
    if session_id is not None:
        where += " AND session_id = ?"
        args.append(session_id)
    summary = "is_summary_message" if _has_column(conn, "is_summary_message") else "0"
    sql = (f"SELECT rowid, id, session_id, role, parts, created_at, {summary}"  # noqa: S608
           f" FROM messages WHERE {where} ORDER BY rowid LIMIT ?")
    messages = tuple(
        CrushMessage(rowid=int(rowid), id=str(mid), session_id=str(sid), role=str(role),
                     parts=parts if isinstance(parts, str) else "", created_ms=_ms(created),
                     is_summary=bool(is_summary))
        for rowid, mid, sid, role, parts, created, is_summary
        in conn.execute(sql, (*args, limit)))
    return CrushRead(messages=messages,
                     last_rowid=messages[-1].rowid if messages else after_rowid)


def poll_crush(path: str | Path, *, after_rowid: int = 0, busy_timeout_ms: int = 200
               ) -> tuple[list[tuple[CrushMessage, Unit]], int] | None:
    """Open, read and decide everything after ``after_rowid``; ``None`` while Crush holds
    a lock (busy/locked: "no news", try again).

    Returns:
        ``(decisions, next cursor)``.

    Raises:
        apsw.Error: any other failure (no such file, not Crush's schema).
    """
    try:
        conn = open_crush_db(path, busy_timeout_ms=busy_timeout_ms)
    except _BUSY:
        return None
    try:
        with conn:
            sessions = {s.id: s for s in read_crush_sessions(conn)}
            read = read_crush_messages(conn, after_rowid=after_rowid, limit=1_000_000)
    except _BUSY:
        return None
    finally:
        conn.close()
    return classify_crush_rows(read.messages, sessions), read.last_rowid


def crush_fingerprint(conn: apsw.Connection) -> tuple[int, int, int]:
    """``(max rowid, row count, newest updated_at)`` of ``messages``: changes whenever a
    message is added, deleted or updated (a cheap "anything new?" check).

    Raises:
        apsw.Error: a query failed. Blocks on SQLite.
    """
    row = conn.execute("SELECT coalesce(max(rowid), 0), count(*), coalesce(max(updated_at), 0)"
                       " FROM messages").fetchone()
    assert row is not None  # an aggregate always returns a row
    return int(row[0]), int(row[1]), int(row[2])


# --- classification (pure) -------------------------------------------------------


def classify_crush_rows(messages: Sequence[CrushMessage],
                        sessions: dict[str, CrushSession]) -> list[tuple[CrushMessage, Unit]]:
    """Decide every message (see :func:`classify_crush_message`), in the given order.

    A message whose session is not in ``sessions`` is ``unknown_session``. Pure.
    """
    out: list[tuple[CrushMessage, Unit]] = []
    for message in messages:
        session = sessions.get(message.session_id)
        if session is None:
            out.append((message, Unit(human=False, reason="unknown_session",
                                      occurred_at=message.created_ms)))
        else:
            out.append((message, classify_crush_message(message, session.refusal)))
    return out


def classify_crush_message(message: CrushMessage, refusal: str | None = None) -> Unit:
    """Decide one message (the reason codes are in the module docstring).

    Args:
        message: the row.
        refusal: the session's :attr:`CrushSession.refusal` (every message of a
            refused session carries it).

    Returns:
        The unit; a typed one carries the normalized text and ``occurred_at`` (ms).

    No I/O; a role or part type no real Crush was seen writing is logged once
    per process (its name only, :func:`~actors.upstream.kindlog.log_unknown_kind`);
    thread-safe, non-blocking.
    """
    at = message.created_ms

    def no(reason: str) -> Unit:
        return Unit(human=False, reason=reason, occurred_at=at)

    if refusal is not None:
        return no(refusal)
    if message.role == "tool":
        return no("tool_result")
    if message.role in ("assistant", "system"):
        return no("summary" if message.is_summary else "not_user")
    if message.role != "user":
        log_unknown_kind(logger, "Crush", f"role:{message.role}")
        return no("unknown_role")
    try:
        parts = _parts_decoder.decode(message.parts)
    except (msgspec.DecodeError, RecursionError):
        return no("undecodable")
    kinds = {p.type for p in parts}
    if not kinds <= KNOWN_PARTS:
        for kind in sorted(k for k in kinds - KNOWN_PARTS if isinstance(k, str)):
            log_unknown_kind(logger, "Crush", f"part:{kind}")
        return no("unknown_part")
    if "shell_command" in kinds:
        return no("shell")
    texts: list[_Text] = []
    for part in parts:
        if part.type == "text":
            try:
                texts.append(_text_decoder.decode(part.data))
            except (msgspec.DecodeError, RecursionError):
                return no("undecodable")
    visible = [t for t in texts if not t.hidden]
    if texts and not visible:
        return no("hidden")
    # Crush reads the first text part (Message.Content); the TUI writes exactly one.
    text = normalize_text(visible[0].text) if visible else ""
    if not text:
        return no("attachment_only" if kinds & {"binary", "image_url"} else "empty_text")
    if text.startswith(SKILL_PREFIX):
        return no("skill_command")
    if text.startswith(SUMMARY_CONTINUATION):
        return no("summary_continuation")
    if CRUSH_PROMPTS.match(text) is not None:
        return no("tool_prompt")
    envelope = gateway_envelope_reason(text)
    if envelope is not None:
        return no(envelope)
    return Unit(human=True, reason="typed", text=text, occurred_at=at)


# --- helpers -----------------------------------------------------------------------


def _ms(seconds: Any) -> int:
    """A Crush time (seconds; ints, or a float from an old build) as epoch ms; 0 if absent."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return 0
    value = int(seconds)
    return value if value > 100_000_000_000 else value * 1000  # already ms: leave it


def _has_column(conn: apsw.Connection, column: str) -> bool:
    return any(row[1] == column for row in conn.execute("PRAGMA table_info(messages)"))
