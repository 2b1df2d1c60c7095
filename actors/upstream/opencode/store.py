"""Read OpenCode's SQLite store (``opencode.db``) and classify its user messages.

OpenCode >= 1.2 keeps every session in one SQLite file in WAL mode (formats
doc §4.1). This module reads it, never writes it, and decides which user
messages a person typed directly into OpenCode (anchor §3.17 "OpenCode",
formats doc §4.3, §4.5).

Tables used (1.18.33 schema, ``packages/opencode/src/session/session.sql.ts``):

* ``session(id, parent_id, title, version, directory, time_created,
  time_updated, time_archived, …)``: ``parent_id`` is set for subagent child
  sessions.
* ``event_sequence(aggregate_id PRIMARY KEY, seq, owner_id)``: the session's
  event head; ``seq`` goes up by one per event (0-based, so a session with 16
  events has ``seq`` 15). A session without a row reads as ``seq`` 0.
* ``message(id, session_id, time_created, time_updated, data)``: ``data`` is
  the message info JSON *without* ``id`` and ``sessionID``.
* ``part(id, message_id, session_id, time_created, time_updated, data)``:
  ``data`` is the part JSON *without* ``id``, ``messageID``, ``sessionID``.

The I/O functions (:func:`open_opencode_db`, :func:`read_sequences`,
:func:`read_session_info`, :func:`load_messages`, :func:`baseline_marker`,
:func:`classify_db_session`) block the calling thread on SQLite, at most
``busy_timeout_ms`` per statement while another process holds a lock; use one
connection from one thread at a time. They raise :class:`apsw.Error` on any
failure, which a caller must treat as "no news", never as proof that a session
is gone. :func:`classify_messages` is pure: no I/O, no logging, thread-safe.
Nothing here logs; message text only travels in the returned
:class:`~actors.upstream.Unit` values.

Which user messages are a direct human turn (anchor §3.17): role ``user``; no
``compaction`` part and no ``metadata.compaction_continue`` text; the visible
text (``text`` parts that are not ``synthetic`` or ``ignored``, with every
``@file`` mention span named by a part's ``source.text {value,start,end}``
cut out) is non-empty after :func:`~actors.upstream.normalize_text`; and it is
not the user-run shell sentinel. Such a message counts only if it is newer
than the marker's ``last_human_message_id``, and is suppressed as compaction
replay when its text equals the replay text of any of the previous 50 user
messages, unless the store proves a person sent it again: the message right
before it is an assistant reply that failed (``error``) or came back empty
(``tokens.output`` 0), or its ``model`` differs from that of every earlier
message with the same text (a re-send after switching model). ``Unit.reason``
codes:

* ``"typed"`` (human); ``"replay"`` (suppressed repeat of an earlier user
  text); ``"already_seen"`` (not newer than the marker);
* ``"not_user"`` (assistant or other role); ``"child_session"`` (subagent
  session); ``"program_session"`` (created by ``opencode run``);
  ``"undecodable"`` (the row or one of its parts is not OpenCode's JSON shape);
  ``"copied_row"`` (created before its forked session: a copy, see
  :mod:`actors.upstream.opencode.copies`);
  ``"no_parts"`` (staged user row whose parts have not landed);
* ``"compaction"``, ``"shell"``, ``"subtask"`` (subagent slash command),
  ``"image_only"`` (image/PDF attachments only, incl. ``[Image 1]``
  placeholders), ``"file_mention_only"``, ``"synthetic"`` (only
  synthetic/ignored texts: ACP audience annotations, task summaries),
  ``"empty_text"``;
* ``"inter_session"``, ``"reseed_envelope"``, ``"openclaw_envelope"``: a
  gateway envelope (:func:`~actors.upstream.common.gateway_envelope_reason`).

Policy decisions (each also noted where it is applied):

* **Id order survives the id wrap.** OpenCode message ids hold only the low
  48 bits of ``created_ms * 0x1000 + counter``, so they wrap every 2**36 ms
  (about 2.18 years; next on 2028-10-17T20:04:31.872Z). OpenClaw's plain
  string comparison would then never count another turn. "Newer than the
  marker" compares ids after unwrapping them around each message's own
  creation time; this equals the string comparison except across a wrap.
  Ids not in OpenCode's ``msg_<12 hex>…`` shape compare as strings.
* **Gateway envelopes are not human** (and not consumed), as in the Claude
  Code and Pi classifiers: a text starting with OpenClaw's inter-session,
  reseed or channel envelope was relayed by a gateway, not typed. OpenClaw's
  OpenCode reader has no such check.
* **Undecodable rows are not human** (and not consumed): a message whose
  ``data`` or any of whose parts does not decode could hide a compaction or
  synthetic flag. SQLite reads are transactional, so this is never a
  half-written row.
* **Agent mentions stay in the text.** Only ``source.text`` spans (file,
  symbol, resource, pasted-image placeholders) are cut; ``@general`` is kept,
  as in OpenClaw, because the person typed it.
* **Quotes from ``opencode run`` stay.** The classifier reports the stored
  text; a person may type quotes too.
* **Mention offsets are UTF-16 code units**, as OpenCode's JavaScript
  computes them, so a mention after an emoji is still cut.
* Parts are loaded for user messages only (by default): assistant parts hold
  tool output and can be megabytes, and are never classified.

Layout: the row shapes are :mod:`actors.upstream.opencode.rows`, the pure
rules :mod:`actors.upstream.opencode.classify`, the read-only open
:mod:`actors.upstream.opencode.db`; this module reads the store and
re-exports their public names.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

import apsw
import msgspec

from actors.upstream.common import Unit
from actors.upstream.opencode.classify import (
    REPLAY_WINDOW,
    SHELL_SENTINEL,
    classify_messages,
    unwrapped_id,
)
from actors.upstream.opencode.copies import fork_time
from actors.upstream.opencode.db import open_opencode_db
from actors.upstream.opencode.rows import (
    _OPTIONAL_SESSION_COLUMNS,
    _SESSION_COLUMNS,
    OpenCodeClassification,
    OpenCodeMarker,
    OpenCodeMessage,
    OpenCodePart,
    OpenCodeSession,
    PartSource,
    SourceText,
    _decode_message,
    _decode_part,
    _sort_key,
)

__all__ = [
    "REPLAY_WINDOW",
    "SHELL_SENTINEL",
    "OpenCodeClassification",
    "OpenCodeMarker",
    "OpenCodeMessage",
    "OpenCodePart",
    "OpenCodeSession",
    "PartSource",
    "SourceText",
    "baseline_marker",
    "classify_db_session",
    "classify_messages",
    "load_messages",
    "open_opencode_db",
    "read_sequences",
    "read_session_info",
    "unwrapped_id",
]

_CHUNK: Final = 500  # ids per IN (...) list; well below SQLITE_MAX_VARIABLE_NUMBER


# --- I/O ---------------------------------------------------------------------


def read_sequences(conn: apsw.Connection, session_ids: Sequence[str]) -> dict[str, int]:
    """Read the event sequence of many sessions in one batched query.

    The change indicator of anchor §3.17 / formats doc §4.5 ("Change
    detection"); the tables are described in formats doc §4.1.

    Runs ``SELECT s.id, es.seq FROM session s LEFT JOIN event_sequence es ON
    es.aggregate_id = s.id WHERE s.id IN (…)``, 500 ids per statement, all in
    one read transaction. A session without an ``event_sequence`` row reads
    as 0.

    Args:
        conn: a connection from :func:`open_opencode_db`.
        session_ids: the linked session ids; duplicates are fine.

    Returns:
        ``{session_id: seq}``. An id missing from the result has no
        ``session`` row: the session no longer exists.

    Raises:
        apsw.Error: the query failed (locked past the busy timeout, corrupt
            file, unknown schema), or returned a ``seq`` that is not a
            non-negative integer (``apsw.MismatchError``). Proves nothing
            about any session; treat it as no news. Blocks at most the busy
            timeout per statement.
        TypeError: ``session_ids`` is a single string.
    """
    if isinstance(session_ids, str):
        raise TypeError("session_ids must be a sequence of ids, not one string")
    ids = list(dict.fromkeys(session_ids))
    found: dict[str, int] = {}
    if not ids:
        return found
    with conn:
        for chunk in _chunks(ids):
            sql = (
                "SELECT s.id, es.seq FROM session AS s"  # noqa: S608 - placeholders only
                " LEFT JOIN event_sequence AS es ON es.aggregate_id = s.id"
                f" WHERE s.id IN ({_placeholders(len(chunk))})"
            )
            for session_id, seq in conn.execute(sql, chunk):
                value = 0 if seq is None else seq
                if (
                    not isinstance(session_id, str)
                    or not isinstance(value, int)
                    or isinstance(value, bool)
                    or value < 0
                ):
                    raise apsw.MismatchError("event_sequence.seq is not a non-negative integer")
                found[session_id] = value
    return found


def read_session_info(conn: apsw.Connection, session_id: str) -> OpenCodeSession | None:
    """Read one ``session`` row (formats doc §4.1).

    Args:
        conn: a connection from :func:`open_opencode_db`.
        session_id: the session id (``ses_…``).

    Returns:
        The session, or ``None`` when there is no such row. A child
        (subagent) session has ``parent_id`` set (:attr:`OpenCodeSession.is_child`).

    Raises:
        apsw.Error: the query failed, or a column has an unexpected type
            (``apsw.MismatchError``). Blocks at most the busy timeout.
    """
    present = {str(r[1]) for r in conn.execute("PRAGMA table_info(session)")}
    columns = [*_SESSION_COLUMNS, *(c for c in _OPTIONAL_SESSION_COLUMNS if c in present)]
    row = conn.execute(
        f"SELECT {', '.join(columns)} FROM session WHERE id = ?",  # noqa: S608 - our names
        (session_id,),
    ).fetchone()
    if row is None:
        return None
    try:
        return msgspec.convert(dict(zip(columns, row, strict=True)), OpenCodeSession)
    except msgspec.ValidationError as exc:
        raise apsw.MismatchError(f"unexpected session row shape: {exc}") from None


def load_messages(
    conn: apsw.Connection, session_id: str, *, include_assistant_parts: bool = False
) -> list[OpenCodeMessage]:
    """Load a session's messages with their parts decoded (formats doc §4.2).

    Messages and parts are read in one read transaction, so a message and its
    parts are a consistent snapshot even while OpenCode writes. Parts are
    fetched only for user messages unless ``include_assistant_parts``:
    assistant parts carry tool output and are never classified (POLICY).

    Args:
        conn: a connection from :func:`open_opencode_db`.
        session_id: the session id.
        include_assistant_parts: also load the parts of non-user messages
            (for inspection; classification does not need them).

    Returns:
        The messages sorted by (created time, id); each has its parts in id
        order. A row whose ``data`` or a part's ``data`` does not decode is
        returned with ``undecodable=True``. An unknown session gives ``[]``.

    Raises:
        apsw.Error: a query failed (``MismatchError`` for a row with a non-text
            id). Blocks at most the busy timeout per statement.
    """
    messages: dict[str, OpenCodeMessage] = {}
    with conn:
        for message_id, time_created, data in conn.execute(
            "SELECT id, time_created, data FROM message WHERE session_id = ?"
            " ORDER BY time_created, id",
            (session_id,),
        ):
            if not isinstance(message_id, str):
                raise apsw.MismatchError("message.id is not text")
            messages[message_id] = _decode_message(message_id, time_created, data)
        wanted = [
            m.id for m in messages.values()
            if not m.undecodable and (include_assistant_parts or m.role == "user")
        ]
        parts: dict[str, list[OpenCodePart]] = {}
        broken: set[str] = set()
        for chunk in _chunks(wanted):
            for part_id, message_id, data in conn.execute(
                "SELECT id, message_id, data FROM part"  # noqa: S608 - placeholders only
                f" WHERE message_id IN ({_placeholders(len(chunk))}) ORDER BY message_id, id",
                chunk,
            ):
                part = _decode_part(part_id, data)
                if part is None:
                    broken.add(message_id)
                else:
                    parts.setdefault(message_id, []).append(part)
    loaded = [
        msgspec.structs.replace(
            message,
            parts=tuple(parts.get(message.id, ())),
            undecodable=message.undecodable or message.id in broken,
        )
        for message in messages.values()
    ]
    loaded.sort(key=_sort_key)
    return loaded


def baseline_marker(conn: apsw.Connection, session_id: str) -> OpenCodeMarker | None:
    """The marker a newly linked session starts from.

    Anchor §3.17 "Link baseline"; formats doc §4.5 "Marker".

    Reads the sequence, the session row and the messages in one read
    transaction, so no message can land between the sequence and the
    messages and be consumed without ever being counted.

    Args:
        conn: a connection from :func:`open_opencode_db`.
        session_id: the session id.

    Returns:
        ``OpenCodeMarker(seq, id of the latest direct-human message or None)``
        (a child session's is always ``None``), or ``None`` when the session
        does not exist.

    Raises:
        apsw.Error: a query failed. Blocks at most the busy timeout per statement.
    """
    with conn:
        seq = read_sequences(conn, [session_id]).get(session_id)
        info = read_session_info(conn, session_id)
        gone = seq is None or info is None
        messages = [] if gone else load_messages(conn, session_id)
    if seq is None or info is None:
        return None
    result = classify_messages(messages, last_human_message_id=None, refusal=info.refusal,
                               forked_at=fork_time(info.title, info.time_created))
    return OpenCodeMarker(seq, result.last_human_message_id)


def classify_db_session(path: str | Path, session_id: str) -> list[tuple[str, Unit]]:
    """Classify every message of one session, for ``ssa classify --source opencode``.

    The rules are :func:`classify_messages`' (anchor §3.17, formats doc §4.3, §4.5).

    Opens the database read-only, loads the session and classifies all its
    messages as if nothing had been seen yet (``last_human_message_id=None``).

    Args:
        path: the ``opencode.db`` file.
        session_id: the session id.

    Returns:
        ``(message_id, Unit)`` per message, in (created, id) order; every unit
        of a child session is ``child_session``, of an ``opencode run``
        session ``program_session``.

    Raises:
        LookupError: there is no such session.
        apsw.Error: the database cannot be opened or read. Blocks on SQLite.
    """
    conn = open_opencode_db(path)
    try:
        with conn:
            info = read_session_info(conn, session_id)
            if info is None:
                raise LookupError(f"no OpenCode session {session_id!r} in {path}")
            messages = load_messages(conn, session_id)
            refusal, forked_at = info.refusal, fork_time(info.title, info.time_created)
    finally:
        conn.close()
    result = classify_messages(messages, last_human_message_id=None, refusal=refusal,
                               forked_at=forked_at)
    return list(result.decisions)


def _chunks(ids: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start:start + _CHUNK]


def _placeholders(count: int) -> str:
    return ", ".join("?" * count)
