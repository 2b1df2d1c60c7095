"""Gemini CLI's older session documents (``chats/session-*.json``): decode and decide them.

Before 0.39 (``feat(core): migrate chat recording to JSONL streaming``,
gemini-cli@f744913584, 2026-04-09) Gemini CLI kept a session as one JSON
document, rewritten whole (``fs.writeFileSync``, not atomically) on every
change (``ChatRecordingService.writeConversation``,
``packages/core/src/services/chatRecordingService.ts``; docs/upstream-gemini.md
lists the versions checked)::

    {"sessionId", "projectHash", "startTime", "lastUpdated",
     "messages": [{"id", "timestamp", "type", "content", "displayContent"?,
                   "toolCalls"?, "thoughts"?, "tokens"?, "model"?}, ...],
     "summary"?, "directories"?, "kind"?: "main" | "subagent"}

A message's decision uses the same rules as a JSONL row
(:func:`~actors.upstream.gemini.classify.decide_user_message`). What differs:

* tool results are never ``user`` messages there (``sendMessageStream``
  skips a ``functionResponse``; the result is kept in ``toolCalls``), and
  the CLI's own ``addHistory`` turns are not recorded;
* ``kind`` exists from 0.31 on; before it a sub-agent's chat was recorded
  as ``session-<minute>-<id8>.json`` under the *parent's* session id (same
  file when the minute matched). So a user message counts only when the
  project's ``logs.json`` holds this session's query with the same text
  (:func:`match_keys`, :func:`logged_queries`), not merely the session's id;
* ``content`` is one string before 0.28 (a part list from 0.28,
  gemini-cli@bb6a336ca9, which also added ``displayContent``).

Everything here is pure (no I/O), thread-safe and never raises; typed text
stays in the returned values (for self-echo and the ``logs.json`` match) and
is never logged.
"""

from __future__ import annotations

import logging
from typing import Literal

import msgspec

from actors.upstream.common import epoch_ms, normalize_text
from actors.upstream.gemini.classify import (
    KNOWN_MESSAGE_TYPES,
    GeminiHeader,
    decide_user_message,
    part_texts,
)
from actors.upstream.kindlog import log_unknown_kind

__all__ = ["DOC_LIMIT", "DocMessage", "SessionDocument", "decode_document", "logged_queries",
           "match_keys", "new_messages"]

logger = logging.getLogger(__name__)

DOC_LIMIT = 32 << 20
"""Most bytes of a session document read (a larger one is refused: ``document_too_large``)."""

_REFERENCED = "\n--- Content from referenced files ---"
"""What an ``@path`` expansion appends to the typed text (``atCommandProcessor.ts``)."""
_HOOK_OPEN = "<hook_context>"


class _Message(msgspec.Struct):
    id: object = None
    timestamp: object = None
    type: object = None
    content: object = None
    displayContent: object = None  # noqa: N815 - the file's own key


class _Document(msgspec.Struct):
    sessionId: object = None  # noqa: N815 - the file's own key
    projectHash: object = None  # noqa: N815
    startTime: object = None  # noqa: N815
    lastUpdated: object = None  # noqa: N815
    kind: object = None
    messages: list[_Message] | None = None


_DECODER = msgspec.json.Decoder(_Document)
"""Decodes only the fields read: ``toolCalls``, ``thoughts``, ``tokens`` are skipped unbuilt."""


class DocMessage(msgspec.Struct, frozen=True, kw_only=True):
    """One decided message of a session document.

    Attributes:
        index: its 0-based index in ``messages``.
        message_id: its ``id`` (``None``: none, or not a string).
        kind: its ``type`` (``unknown`` when it has none).
        typed: decided typed on its own (before the ``logs.json`` match).
        reason: why (the JSONL reasons; ``unknown_kind``, ``no_id``).
        text: the normalized typed text (typed only; never log it).
        keys: the texts a logged query of this turn may equal (:func:`match_keys`).
        occurred_at: its ``timestamp`` as epoch ms, or ``None``.
    """

    index: int
    message_id: str | None
    kind: str
    typed: bool
    reason: str
    text: str | None = None
    keys: tuple[str, ...] = ()
    occurred_at: int | None = None


class SessionDocument(msgspec.Struct, frozen=True, kw_only=True):
    """A decoded, decided session document.

    Attributes:
        header: its ``sessionId``, ``projectHash``, times and ``kind``.
        messages: every message, decided, in order.
        unknown_kinds: message types this version did not write (logged once).
    """

    header: GeminiHeader
    messages: tuple[DocMessage, ...]
    unknown_kinds: tuple[str, ...] = ()

    @property
    def newest(self) -> int | None:
        """The newest message ``timestamp`` (or ``lastUpdated``), epoch ms, or ``None``."""
        stamps = [m.occurred_at for m in self.messages if m.occurred_at is not None]
        if self.header.updated_at is not None:
            stamps.append(self.header.updated_at)
        return max(stamps) if stamps else None


DocProblem = Literal["incomplete", "not_a_session"]


def match_keys(content: object, display: object) -> tuple[str, ...]:
    """The normalized texts a logged query of this user message may equal. Pure.

    The TUI logs the trimmed query it was given (``useGeminiStream``'s
    ``prepareQueryForGemini``). The message holds it as ``displayContent``
    (0.28 on, when the sent content differs), as the content's first text
    part, or (content a single string before 0.28) at the head of the content
    before an ``@path`` expansion or a BeforeAgent hook's ``<hook_context>``.
    """
    keys: list[str] = []
    if display is not None:
        keys.append(normalize_text("".join(part_texts(display))))
    parts = part_texts(content)
    if parts:
        keys.append(normalize_text(parts[0]))
        joined = "".join(parts)
        head = joined.split(_REFERENCED, 1)[0].split(_HOOK_OPEN, 1)[0]
        keys.append(normalize_text(head))
    return tuple(k for k in dict.fromkeys(keys) if k)


def decode_document(data: bytes) -> SessionDocument | DocProblem:
    """Decode and decide a whole session document.

    Returns the :class:`SessionDocument`, ``"incomplete"`` when ``data`` is
    not JSON (a document being rewritten: read it again) or ``"not_a_session"``
    when it is JSON of another shape (no string ``sessionId`` and
    ``projectHash``, or ``messages`` not a list of objects). Pure; never raises.
    """
    try:
        doc = _DECODER.decode(data)
    except msgspec.ValidationError:
        return "not_a_session"
    except (msgspec.MsgspecError, RecursionError):
        return "incomplete"
    if not isinstance(doc.sessionId, str) or not isinstance(doc.projectHash, str):
        return "not_a_session"
    header = GeminiHeader(session_id=doc.sessionId, project_hash=doc.projectHash,
                          started_at=epoch_ms(doc.startTime),
                          updated_at=epoch_ms(doc.lastUpdated),
                          kind=doc.kind if isinstance(doc.kind, str) else None)
    decided: list[DocMessage] = []
    unknown: list[str] = []
    last_command: str | None = None
    for index, message in enumerate(doc.messages or ()):
        kind = message.type if isinstance(message.type, str) else "unknown"
        msg_id = message.id if isinstance(message.id, str) else None
        at = epoch_ms(message.timestamp)
        typed, reason, text = False, kind, None
        keys: tuple[str, ...] = ()
        if kind not in KNOWN_MESSAGE_TYPES:
            reason = "unknown_kind"
            unknown.append(kind)
        elif kind != "user":
            reason = "model" if kind == "gemini" else kind
        elif msg_id is None:
            reason = "no_id"
        elif header.kind == "subagent":
            reason = "subagent"
        else:
            row = {"content": message.content, "displayContent": message.displayContent}
            typed, reason, text = decide_user_message(row, last_command)
            if typed:
                keys = match_keys(message.content, message.displayContent)
                if text is not None and text.startswith("/"):
                    last_command = text
        decided.append(DocMessage(index=index, message_id=msg_id, kind=kind, typed=typed,
                                  reason=reason, text=text, keys=keys, occurred_at=at))
    names = tuple(dict.fromkeys(unknown))
    for name in names:
        log_unknown_kind(logger, "Gemini CLI", name)
    return SessionDocument(header=header, messages=tuple(decided), unknown_kinds=names)


class _LogEntry(msgspec.Struct):
    sessionId: object = None  # noqa: N815 - the file's own key
    type: object = None
    message: object = None


_LOGS = msgspec.json.Decoder(list[_LogEntry])


def logged_queries(logs_json: bytes, session_id: str) -> frozenset[str] | None:
    """The normalized queries ``logs.json`` holds for ``session_id`` (``type: "user"``).

    ``logs.json`` is a JSON array of ``{"sessionId", "messageId", "type",
    "message", "timestamp"}`` (``Logger``, ``packages/core/src/core/logger.ts``;
    unchanged from 0.19 to 0.61). ``None`` when the bytes are not such an
    array (being rewritten: read again). Pure; never raises.
    """
    try:
        entries = _LOGS.decode(logs_json)
    except (msgspec.MsgspecError, RecursionError):
        return None
    return frozenset(normalize_text(e.message) for e in entries
                     if e.sessionId == session_id and e.type == "user"
                     and isinstance(e.message, str))


def new_messages(doc: SessionDocument, count: int, last: str | None,
                 until: int | None) -> tuple[int, bool]:
    """Where the messages not decided yet start: ``(index, rewritten)``. Pure.

    Args:
        doc: the document as it is now.
        count: how many messages the last scan had decided.
        last: the id of the last of them (``None`` when ``count`` is 0).
        until: the newest time among them, epoch ms (see :func:`is_new`).

    The document is rewritten whole, so the marker names the last decided
    message rather than a byte offset. When it is still at ``count - 1``
    the messages after it are new. Otherwise earlier messages were dropped
    or replaced (``/rewind``, a sub-agent writing the same file before 0.31):
    the new ones start after ``last`` if it is still there, else from the
    first message; ``rewritten`` is then ``True`` and :func:`is_new` keeps a
    message decided before from being counted again.
    """
    if count <= 0:
        return 0, False
    messages = doc.messages
    if count <= len(messages) and messages[count - 1].message_id == last:
        return count, False
    for message in reversed(messages):
        if last is not None and message.message_id == last:
            return message.index + 1, True
    return 0, True


def is_new(message: DocMessage, until: int | None, rewritten: bool) -> bool:
    """Whether ``message`` may be a turn not decided before. Pure.

    A message keeps its ``timestamp`` through every rewrite, so one no newer
    than ``until`` (the newest time a scan decided) was decided already, or is
    a copy; after a rewrite, a message without a time cannot be told new.
    """
    if until is None:
        return True
    if message.occurred_at is None:
        return not rewritten
    return message.occurred_at > until
