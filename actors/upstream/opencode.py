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
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import apsw
import msgspec

from actors.upstream.common import Unit, gateway_envelope_reason, normalize_text
from actors.upstream.opencode_db import open_opencode_db

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

SHELL_SENTINEL: Final = "The following tool was executed by the user"
"""The text OpenCode stores on the user message of a ``!cmd`` shell run."""

REPLAY_WINDOW: Final = 50
"""How many previous user messages a human text is checked against (anchor §3.17)."""

_CHUNK: Final = 500  # ids per IN (...) list; well below SQLITE_MAX_VARIABLE_NUMBER
_ID_WRAP: Final = 1 << 48  # OpenCode ids keep 6 bytes of created_ms * 0x1000 + counter
_ID_SHAPE: Final = re.compile(r"msg_([0-9a-f]{12})")
_MEDIA_PDF: Final = "application/pdf"


# --- types -------------------------------------------------------------------


class SourceText(msgspec.Struct, frozen=True):
    """The span of the typed text a file part came from (``source.text``).

    Attributes:
        value: the text of the span, e.g. ``"@README.md"`` or ``"[Image 1]"``.
        start: start offset in UTF-16 code units (OpenCode is JavaScript).
        end: end offset (exclusive), UTF-16 code units.
    """

    value: str
    start: int
    end: int


class PartSource(msgspec.Struct, frozen=True, kw_only=True):
    """A part's ``source``; only the span matters here (formats doc §4.2).

    Attributes:
        text: the typed span for file/symbol/resource sources; ``None`` for an
            ``agent`` part, whose source is ``{value,start,end}`` directly.
    """

    text: SourceText | None = None


class OpenCodePart(msgspec.Struct, frozen=True, kw_only=True):
    """One message part, as stored in ``part.data`` (formats doc §4.2).

    Only the fields classification reads are decoded; the rest (tool state,
    data URLs, times) is skipped.

    Attributes:
        type: ``text``, ``file``, ``agent``, ``subtask``, ``compaction``,
            ``tool``, ``step-start``, …
        id: the part id (``prt_…``), from the row.
        text: a ``text`` part's text.
        synthetic: set on text OpenCode added (Read tool output, ACP
            ``audience:["assistant"]`` blocks, the shell sentinel).
        ignored: set on text hidden from the model (ACP ``audience:["user"]``).
        metadata: e.g. ``{"compaction_continue": true}``.
        mime: a ``file`` part's MIME type.
        filename: a ``file`` part's file name.
        source: where a ``file``/``agent`` part sits in the typed text.
    """

    type: str
    id: str = ""
    text: str | None = None
    synthetic: bool | None = None
    ignored: bool | None = None
    metadata: dict[str, Any] | None = None
    mime: str | None = None
    filename: str | None = None
    source: PartSource | None = None


class OpenCodeMessage(msgspec.Struct, frozen=True, kw_only=True):
    """One message of a session with its (decoded) parts.

    Attributes:
        id: the message id (``msg_…``).
        role: ``"user"`` or ``"assistant"``; ``None`` if ``data`` did not decode.
        created: ``data.time.created`` in epoch ms (the row's ``time_created``
            when absent).
        parts: the parts in id (creation) order; empty for assistant messages
            unless asked for, and for a user row whose parts have not landed.
        undecodable: ``data`` or one of the parts is not OpenCode's shape.
        failed: an assistant reply that the store proves failed or came back
            empty (``error`` set, or ``tokens.output`` of 0).
        model: a user message's ``model`` as ``providerID/modelID``, if stored.
    """

    id: str
    role: str | None
    created: int
    parts: tuple[OpenCodePart, ...] = ()
    undecodable: bool = False
    failed: bool = False
    model: str | None = None


class OpenCodeSession(msgspec.Struct, frozen=True, kw_only=True):
    """A ``session`` row (formats doc §4.1).

    Attributes:
        id: the session id (``ses_…``).
        parent_id: the parent session for a subagent child session, else ``None``.
        title: the session title (children end in ``(@<agent> subagent)``).
        version: the OpenCode version that created it, e.g. ``"1.18.33"``.
        directory: the project directory.
        time_created: epoch ms.
        time_updated: epoch ms.
        time_archived: epoch ms when archived, else ``None``.
        permission: the session's own permission ruleset (JSON text), or
            ``None`` (older stores have no such column).
    """

    id: str
    parent_id: str | None
    title: str
    version: str
    directory: str
    time_created: int
    time_updated: int
    time_archived: int | None = None
    permission: str | None = None

    @property
    def is_child(self) -> bool:
        """True for a subagent child session: its turns never count."""
        return self.parent_id is not None

    @property
    def is_program_driven(self) -> bool:
        """True for a session ``opencode run`` created (its prompts come from a program).

        Non-interactive ``opencode run`` (``packages/opencode/src/cli/cmd/run.ts``)
        creates its session with a ruleset that denies ``question``,
        ``plan_enter`` and ``plan_exit`` for every pattern: nobody is there to
        answer. A session a person drives never carries a ``question`` deny,
        so that rule marks the program. SDK and server clients that create
        sessions without it are not told apart (documented).
        """
        if not self.permission:
            return False
        try:
            rules = msgspec.json.decode(self.permission)
        except msgspec.DecodeError:
            return False
        return isinstance(rules, list) and any(
            isinstance(rule, dict) and rule.get("permission") == "question"
            and rule.get("action") == "deny" and rule.get("pattern") == "*" for rule in rules)

    @property
    def refusal(self) -> str | None:
        """Why no turn of this session counts, or ``None``.

        ``child_session`` (a subagent's), ``program_session`` (``opencode run``).
        """
        if self.is_child:
            return "child_session"
        return "program_session" if self.is_program_driven else None


class OpenCodeMarker(msgspec.Struct, frozen=True):
    """Where monitoring of one OpenCode session stands (anchor §3.17).

    Attributes:
        seq: the ``event_sequence.seq`` last seen.
        last_human_message_id: the newest direct-human message already
            consumed, or ``None``.
    """

    seq: int
    last_human_message_id: str | None


class OpenCodeClassification(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`classify_messages` decided.

    Attributes:
        decisions: ``(message_id, Unit)`` for every message, in (created, id)
            order.
        last_human_message_id: the marker's next ``last_human_message_id``.
    """

    decisions: tuple[tuple[str, Unit], ...]
    last_human_message_id: str | None

    @property
    def human(self) -> list[tuple[str, Unit]]:
        """The decisions counted as human turns, oldest first."""
        return [(mid, unit) for mid, unit in self.decisions if unit.human]


class _MessageTime(msgspec.Struct, frozen=True):
    created: int | None = None


class _MessageData(msgspec.Struct, frozen=True):
    role: str | None = None
    time: _MessageTime | None = None
    error: object = None  # any shape: only its presence is read
    tokens: object = None
    model: object = None


def _failed(data: _MessageData) -> bool:
    """An assistant reply the store proves failed (``error``) or empty (no output tokens)."""
    if data.role != "assistant":
        return False
    if data.error is not None:
        return True
    output = data.tokens.get("output") if isinstance(data.tokens, dict) else None
    return isinstance(output, int) and not isinstance(output, bool) and output == 0


def _model_of(data: _MessageData) -> str | None:
    model = data.model
    if data.role != "user" or not isinstance(model, dict):
        return None
    provider, name = model.get("providerID"), model.get("modelID")
    return f"{provider}/{name}" if isinstance(provider, str) and isinstance(name, str) else None


_message_decoder: Final = msgspec.json.Decoder(_MessageData)
_part_decoder: Final = msgspec.json.Decoder(OpenCodePart)
_SESSION_COLUMNS: Final = (
    "id", "parent_id", "title", "version", "directory",
    "time_created", "time_updated", "time_archived",
)
_OPTIONAL_SESSION_COLUMNS: Final = ("permission",)
"""Columns newer stores have; read when present."""


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
    result = classify_messages(messages, last_human_message_id=None, refusal=info.refusal)
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
            refusal = info.refusal
    finally:
        conn.close()
    result = classify_messages(messages, last_human_message_id=None, refusal=refusal)
    return list(result.decisions)


# --- classification (pure) ---------------------------------------------------


def classify_messages(
    messages: Sequence[OpenCodeMessage],
    *,
    last_human_message_id: str | None,
    replay_window: int = REPLAY_WINDOW,
    refusal: str | None = None,
) -> OpenCodeClassification:
    """Decide, per message, whether a person typed it.

    Anchor §3.17 "OpenCode"; formats doc §4.3 (which user messages are
    human) and §4.5 (how OpenClaw classifies them); the reason codes are
    listed in the module docstring.

    A direct-human message newer than ``last_human_message_id`` always
    becomes the new ``last_human_message_id`` ("consumed"), even when it is
    suppressed as replay, so it is never reconsidered. A staged user row with
    no parts, or with no visible text yet, is neither human nor consumed: when
    its text lands (the sequence advances) it counts once.

    Args:
        messages: a session's messages (:func:`load_messages`); sorted here by
            (created, id) anyway.
        last_human_message_id: the marker's newest consumed human message, or
            ``None`` to consider every message.
        replay_window: how many previous user messages (human or not) a text
            is compared with to suppress compaction replays; 0 disables it.
        refusal: why nothing of this session counts (``child_session`` for a
            subagent child, ``program_session`` for ``opencode run``), or
            ``None``: every message carries that reason.

    Returns:
        Every message's decision and the next ``last_human_message_id``.
        Human units carry the normalized text and ``occurred_at`` (created, ms).

    Raises:
        ValueError: ``replay_window`` is negative.

    Pure: no I/O, no logging, thread-safe, non-blocking.
    """
    if replay_window < 0:
        raise ValueError(f"replay_window must be >= 0, got {replay_window}")
    ordered = sorted(messages, key=_sort_key)
    if refusal is not None:
        return OpenCodeClassification(
            decisions=tuple(
                (m.id, Unit(human=False, reason=refusal, occurred_at=m.created))
                for m in ordered
            ),
            last_human_message_id=last_human_message_id,
        )
    marker = last_human_message_id
    marker_ref = _marker_reference(ordered, marker)
    last, last_ref = marker, marker_ref
    window: deque[tuple[str | None, str | None]] = deque(maxlen=replay_window)
    decisions: list[tuple[str, Unit]] = []
    reply_failed = False  # the message just before is an assistant reply that failed
    for message in ordered:
        after_failure, reply_failed = reply_failed, message.role == "assistant" and message.failed
        if message.undecodable or message.role != "user":
            reason = "undecodable" if message.undecodable else "not_user"
            decisions.append((message.id, Unit(human=False, reason=reason,
                                               occurred_at=message.created)))
            if message.role == "user":
                window.append((None, None))  # its text is unknown, but it is a user message
            continue
        if not message.parts:
            unit = Unit(human=False, reason="no_parts", occurred_at=message.created)
        else:
            text = _direct_human_text(message)
            envelope = None if text is None else gateway_envelope_reason(text)
            if text is None:
                unit = Unit(human=False, reason=_not_human_reason(message),
                            occurred_at=message.created)
            elif envelope is not None:  # POLICY: relayed by a gateway, not typed
                unit = Unit(human=False, reason=envelope, occurred_at=message.created)
            elif marker is not None and not _is_after(
                message.id, message.created, marker, marker_ref
            ):
                unit = Unit(human=False, reason="already_seen", occurred_at=message.created)
            else:
                if last is None or _is_after(message.id, message.created, last, last_ref):
                    last, last_ref = message.id, message.created
                if _is_replay(text, message.model, window, after_failure):
                    unit = Unit(human=False, reason="replay", occurred_at=message.created)
                else:
                    unit = Unit(human=True, reason="typed", text=text,
                                occurred_at=message.created)
        decisions.append((message.id, unit))
        window.append((_replay_text(message), message.model))
    return OpenCodeClassification(decisions=tuple(decisions), last_human_message_id=last)


# --- helpers -------------------------------------------------------------------


def _chunks(ids: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start:start + _CHUNK]


def _is_replay(text: str, model: str | None, window: Iterable[tuple[str | None, str | None]],
               after_failure: bool) -> bool:
    """Whether a text that repeats an earlier user message is compaction replay.

    It is, unless the store proves a person sent it again: right after an
    assistant reply that failed or came back empty, or with another model
    than the earlier message had (a re-send after switching model).
    """
    models = [m for t, m in window if t == text]
    if not models or after_failure:
        return False
    return not (model is not None and all(m is not None and m != model for m in models))


def _placeholders(count: int) -> str:
    return ", ".join("?" * count)


def _sort_key(message: OpenCodeMessage) -> tuple[int, str]:
    return (message.created, message.id)


def _decode_message(message_id: str, time_created: Any, data: Any) -> OpenCodeMessage:
    row_created = time_created if _is_int(time_created) else 0
    if not isinstance(data, str | bytes):
        return OpenCodeMessage(id=message_id, role=None, created=row_created, undecodable=True)
    try:
        decoded = _message_decoder.decode(data)
    except msgspec.DecodeError:
        return OpenCodeMessage(id=message_id, role=None, created=row_created, undecodable=True)
    created = decoded.time.created if decoded.time is not None else None
    if created is None:
        if not _is_int(time_created):
            return OpenCodeMessage(id=message_id, role=decoded.role, created=row_created,
                                   undecodable=True)
        created = row_created
    return OpenCodeMessage(id=message_id, role=decoded.role, created=created,
                           failed=_failed(decoded), model=_model_of(decoded))


def _decode_part(part_id: Any, data: Any) -> OpenCodePart | None:
    if not isinstance(part_id, str) or not isinstance(data, str | bytes):
        return None
    try:
        part = _part_decoder.decode(data)
    except msgspec.DecodeError:
        return None
    return msgspec.structs.replace(part, id=part_id)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_media(part: OpenCodePart) -> bool:
    return part.type == "file" and part.mime is not None and (
        part.mime.startswith("image/") or part.mime == _MEDIA_PDF
    )


def _continues_compaction(part: OpenCodePart) -> bool:
    return part.metadata is not None and part.metadata.get("compaction_continue") is True


def _source_spans(message: OpenCodeMessage) -> list[SourceText]:
    spans = [p.source.text for p in message.parts if p.source is not None
             and p.source.text is not None]
    return sorted(spans, key=lambda span: -span.start)  # applied from the end


def _cut_span(text: str, span: SourceText) -> str:
    """Remove ``span`` from ``text`` if it is there; offsets are UTF-16 units (POLICY)."""
    units = text.encode("utf-16-le", "surrogatepass")
    start, end = span.start * 2, span.end * 2
    if span.start < 0 or end < start or end > len(units):
        return text
    if units[start:end].decode("utf-16-le", "surrogatepass") != span.value:
        return text
    return (units[:start] + units[end:]).decode("utf-16-le", "surrogatepass")


def _visible_text(part: OpenCodePart, spans: list[SourceText]) -> str | None:
    if (
        part.type != "text"
        or part.text is None
        or part.synthetic is True
        or part.ignored is True
        or _continues_compaction(part)
    ):
        return None
    text = part.text
    for span in spans:
        text = _cut_span(text, span)
    return text


def _direct_human_text(message: OpenCodeMessage) -> str | None:
    if any(p.type == "compaction" or _continues_compaction(p) for p in message.parts):
        return None
    spans = _source_spans(message)
    texts = [t for p in message.parts if (t := _visible_text(p, spans)) is not None]
    if not texts:
        return None
    text = normalize_text("\n".join(texts))
    return None if not text or text == SHELL_SENTINEL else text


def _replay_text(message: OpenCodeMessage) -> str | None:
    """What a later compaction replay of this user message would read as."""
    spans = _source_spans(message)
    texts: list[str] = []
    for part in message.parts:
        visible = _visible_text(part, spans)
        if visible is not None:
            texts.append(visible)
        elif _is_media(part):
            name = part.filename if part.filename is not None else "file"
            texts.append(f"[Attached {part.mime}: {name}]")
    return normalize_text("\n".join(texts)) if texts else None


def _not_human_reason(message: OpenCodeMessage) -> str:
    parts = message.parts
    if any(p.type == "compaction" or _continues_compaction(p) for p in parts):
        return "compaction"
    if any(p.type == "text" and normalize_text(p.text) == SHELL_SENTINEL for p in parts):
        return "shell"
    if any(p.type == "subtask" for p in parts):
        return "subtask"
    if any(_is_media(p) for p in parts):
        return "image_only"
    if any(p.type == "file" for p in parts):
        return "file_mention_only"
    if any(p.type == "text" and (p.synthetic is True or p.ignored is True) for p in parts):
        return "synthetic"
    return "empty_text"


def _marker_reference(ordered: list[OpenCodeMessage], marker: str | None) -> int | None:
    """The time to unwrap the marker id around: its message's, else the newest message's."""
    if marker is None or not ordered:
        return None
    for message in ordered:
        if message.id == marker:
            return message.created
    return ordered[-1].created


def unwrapped_id(message_id: str, reference_ms: int | None) -> int | None:
    """The full ``created_ms * 0x1000 + counter`` of an OpenCode id (POLICY: id wrap).

    Args:
        message_id: an id in OpenCode's ``msg_<12 hex>…`` shape.
        reference_ms: a time near the id's creation (epoch ms), to unwrap the
            48 stored bits around.

    Returns:
        The full value, or ``None`` for another shape or no reference. Pure.
    """
    match = _ID_SHAPE.match(message_id)
    if match is None or reference_ms is None:
        return None
    low = int(match.group(1), 16)
    approx = reference_ms * 0x1000
    base = approx - approx % _ID_WRAP + low
    return min((base - _ID_WRAP, base, base + _ID_WRAP), key=lambda c: abs(c - approx))


def _is_after(
    message_id: str, created: int, other_id: str, other_reference: int | None
) -> bool:
    """``message_id`` is newer than ``other_id``: string order unless the ids wrapped."""
    mine, theirs = unwrapped_id(message_id, created), unwrapped_id(other_id, other_reference)
    if mine is None or theirs is None or mine == theirs:
        return message_id > other_id
    return mine > theirs
