"""Gemini CLI session files: read the rows, decide which ones a person typed.

Gemini CLI (``@google/gemini-cli``, checked at 0.61.0; docs/upstream-gemini.md)
records a session as JSONL under ``~/.gemini/tmp/<project id>/chats/``:
``session-<YYYY-MM-DDTHH-MM>-<8 hex>.jsonl`` for a main session,
``<parent session id>/<session id>.jsonl`` for a sub-agent's. Every line is
one JSON object of one of these shapes (``ChatRecordingService``,
``packages/core/src/services/chatRecordingService.ts``, in the bundle
``bundle/chunk-JDPZ4CE3.js``):

* a header, ``{"sessionId", "projectHash", "startTime", "lastUpdated",
  "kind": "main" | "subagent", "directories"?}``: line 0, and again whenever
  a session is resumed into the same file;
* a message, ``{"id", "timestamp", "type": "user" | "gemini" | "info" |
  "error" | "warning", "content", "displayContent"?, ...}``. The same ``id``
  is written again whenever a message is updated (a ``gemini`` row once per
  tool-call update and token count): the last write wins;
* ``{"$set": {...}}``: a metadata update; ``$set.messages`` replaces the whole
  history (after a resume, an interrupt, a compression): copies, never new
  turns;
* ``{"$rewindTo": id}``: ``/rewind`` dropped that message and every later one.

Which rows a person typed (precision before recall; every rule names its
source in docs/upstream-gemini.md):

* only a ``type: "user"`` message row that is the first write of its ``id``;
* not when its content holds a ``functionResponse`` (a tool's result; Gemini
  CLI records tool results as ``user`` rows): ``tool_result``;
* its typed text is ``displayContent`` when present (what the person typed
  when the sent content differs: an ``@file`` expansion, a hook's context, a
  custom command), else the content's text parts without the
  ``<hook_context>`` parts a BeforeAgent hook appends;
* a row whose ``displayContent`` is not contained in its content is a
  continuation the CLI sent on the person's behalf ("Please continue." after
  the next-speaker check, the loop-recovery notice, an AfterAgent hook's
  continue reason all carry the original prompt as ``displayContent``):
  ``continuation``; ``displayContent`` starting with ``/`` is a custom
  command (``.gemini/commands/*.toml``): typed with arguments
  (text ``/name args``), not without (``custom_command``);
* rows the CLI writes itself through ``addHistory``/``setHistory`` are plain
  ``user`` rows told apart by their fixed text: ``<session_context>``
  (``session_context``), only ``<hook_context>`` (a SessionStart hook:
  ``hook_context``), a ``<state_snapshot>`` (compression: ``compression_summary``),
  "I ran the following shell command:" (shell mode ``!cmd``: ``shell_mode``),
  the plan-mode exit notice (``plan_mode_notice``), the directory context
  (``directory_context``), "Please continue." and the loop-recovery notice
  without ``displayContent`` (``continuation``);
* every row of a sub-agent session (header ``kind: "subagent"``) is
  ``subagent``: the parent model wrote those prompts.

A session is monitorable only when it is interactive: the TUI logs every
query it is given to ``<project temp dir>/logs.json`` (``Logger.logMessage``
from ``useGeminiStream``'s ``prepareQueryForGemini``) before it records the
turn; ``gemini -p``, ACP and other program-driven runs never do. See
:func:`interactive_session_ids` and :func:`gemini_refusal`.

Everything here is pure (no I/O, no logging, no shared mutable state),
thread-safe, non-blocking and never raises, except :func:`gemini_fingerprint`
(two ``stat`` calls). Typed text travels only in the returned rows, for the
gateway's self-echo check; it is never logged.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec

from actors.upstream.common import Unit, decode_object, epoch_ms, normalize_text
from actors.upstream.gemini.prompts import GEMINI_PROMPTS
from actors.upstream.kindlog import log_unknown_kind

__all__ = [
    "KNOWN_MESSAGE_TYPES",
    "GeminiCursor",
    "GeminiHeader",
    "GeminiRow",
    "GeminiScan",
    "complete_lines",
    "decide_rows",
    "gemini_fingerprint",
    "gemini_refusal",
    "interactive_session_ids",
    "is_copy",
    "logs_path_for",
    "part_texts",
    "read_gemini_rows",
    "row_kind",
]

logger = logging.getLogger(__name__)

KNOWN_MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
"""Message ``type`` values Gemini CLI 0.61.0 writes (``ConversationRecordExtra``)."""

_SESSION_CONTEXT = "<session_context>"
_HOOK_OPEN = "<hook_context>"
_HOOK_CLOSE = "</hook_context>"
_STATE_SNAPSHOT = "<state_snapshot>"
_SHELL_MODE = "I ran the following shell command:"
_PLAN_EXITS = ("User has manually exited Plan Mode. Switching to ", "Plan approved. Switching to ")
_DIRECTORY_CONTEXT = "- **Workspace Directories:**"
_NEXT_SPEAKER = "Please continue."
_INVALID_STREAM = "System: Please continue."
_LOOP_RECOVERY = "System: Potential loop detected."


class GeminiHeader(msgspec.Struct, frozen=True, kw_only=True):
    """What a session file's header line says.

    Attributes:
        session_id: ``sessionId`` (a UUID).
        project_hash: ``projectHash``: SHA-256 hex of the project root path.
        started_at: ``startTime`` as epoch ms, or ``None``.
        updated_at: ``lastUpdated`` as epoch ms, or ``None``. A fresh file's
            header is written before any message; a file converted from an
            older ``.json`` document (or rewritten from memory) carries the old
            ``lastUpdated``, and the copied messages are no newer than it.
        kind: ``main``, ``subagent``, or ``None`` when absent (older files).
        directories: ``directories`` (a sub-agent's workspace), else ``()``.
    """

    session_id: str
    project_hash: str
    started_at: int | None = None
    updated_at: int | None = None
    kind: str | None = None
    directories: tuple[str, ...] = ()


class GeminiRow(msgspec.Struct, frozen=True, kw_only=True):
    """One decided line.

    Attributes:
        line: 0-based line index in the file.
        start, end: byte offsets of the line (``end`` past its newline).
        kind: ``header``, ``$set``, ``$set.messages``, ``$rewindTo``, a message
            ``type`` (``user``, ``gemini``...), ``invalid_json`` or ``unknown``.
        typed: a person typed this turn (before any session-level refusal).
        reason: why (snake_case code; see the module docstring).
        message_id: the message ``id`` for message rows.
        text: the normalized typed text (typed rows only; never log it).
        occurred_at: the row's ``timestamp`` as epoch ms, when it has one.
    """

    line: int
    start: int
    end: int
    kind: str
    typed: bool
    reason: str
    message_id: str | None = None
    text: str | None = None
    occurred_at: int | None = None

    def unit(self) -> Unit:
        """This decision as the shared :class:`~actors.upstream.Unit`."""
        return Unit(human=self.typed, reason=self.reason, text=self.text,
                    occurred_at=self.occurred_at)


class GeminiCursor(msgspec.Struct, frozen=True, kw_only=True):
    """Where an incremental read stands; start with ``GeminiCursor()``.

    Attributes:
        offset: byte offset of the first line not read yet.
        line: its 0-based line index.
        header: the file's first header, once read.
        seen_ids: every message id written so far (a later write of one is an update).
        last_command: the ``displayContent`` of the last custom command decided
            typed (a continuation of that turn carries it again).
    """

    offset: int = 0
    line: int = 0
    header: GeminiHeader | None = None
    seen_ids: frozenset[str] = frozenset()
    last_command: str | None = None


class GeminiScan(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`read_gemini_rows` found.

    Attributes:
        rows: the complete lines read, decided, in order.
        cursor: where the next read starts (past the last complete line).
        partial: bytes after the last newline were left for the next read (a
            line still being written).
        unknown_kinds: kinds decided ``unknown_kind`` in this read (for the
            caller to log once, by name only).
    """

    rows: tuple[GeminiRow, ...]
    cursor: GeminiCursor
    partial: bool = False
    unknown_kinds: tuple[str, ...] = ()


def complete_lines(data: bytes, offset: int = 0) -> Iterator[tuple[int, int, bytes]]:
    """Yield ``(start, end, line)`` for every newline-terminated line of ``data``.

    ``data`` starts at file offset ``offset``; ``start``/``end`` are file
    offsets, ``end`` past the newline; ``line`` has no newline (nor ``\\r``).
    Bytes after the last newline (a torn last line) are not yielded. Pure.
    """
    pos = 0
    while True:
        nl = data.find(b"\n", pos)
        if nl < 0:
            return
        yield offset + pos, offset + nl + 1, data[pos:nl].rstrip(b"\r")
        pos = nl + 1


def row_kind(row: Mapping[str, Any]) -> str:
    """The kind of a parsed row: ``header``, ``$set``, ``$set.messages``, ``$rewindTo``,
    the message ``type``, or ``unknown``. Pure."""
    if isinstance(row.get("$rewindTo"), str):
        return "$rewindTo"
    changes = row.get("$set")
    if isinstance(changes, dict):
        return "$set.messages" if isinstance(changes.get("messages"), list) else "$set"
    if isinstance(row.get("id"), str):
        kind = row.get("type")
        return kind if isinstance(kind, str) else "unknown"
    if isinstance(row.get("sessionId"), str) and isinstance(row.get("projectHash"), str):
        return "header"
    return "unknown"


def _texts(content: object) -> list[str]:
    """The text parts of a ``content`` value (a string, a part, or a list of parts)."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, Mapping):
        text = content.get("text")
        return [text] if isinstance(text, str) and not content.get("thought") else []
    if isinstance(content, list):
        return [t for part in content for t in _texts(part)]
    return []


part_texts = _texts
"""The text parts of a message's ``content`` (thought parts left out); pure."""


def _has_part(content: object, key: str) -> bool:
    if isinstance(content, Mapping):
        return key in content
    return isinstance(content, list) and any(isinstance(p, Mapping) and key in p
                                             for p in content)


def _is_hook_part(text: str) -> bool:
    stripped = text.strip()
    return stripped.startswith(_HOOK_OPEN) and stripped.endswith(_HOOK_CLOSE)


def _injected_reason(text: str) -> str | None:
    """The reason a CLI-written ``user`` text is not typed, or ``None``."""
    stripped = text.lstrip()
    if stripped.startswith(_SESSION_CONTEXT):
        return "session_context"
    if _STATE_SNAPSHOT in text:
        return "compression_summary"
    if stripped.startswith(_SHELL_MODE):
        return "shell_mode"
    if stripped.startswith(_PLAN_EXITS):
        return "plan_mode_notice"
    if stripped.startswith(_DIRECTORY_CONTEXT):
        return "directory_context"
    if stripped.rstrip() in (_NEXT_SPEAKER, _INVALID_STREAM) or stripped.startswith(_LOOP_RECOVERY):
        return "continuation"
    return None


def decide_user_message(row: Mapping[str, Any], last_command: str | None = None
                        ) -> tuple[bool, str, str | None]:
    """Decide one ``type: "user"`` message row on its own: ``(typed, reason, text)``.

    ``text`` is the normalized typed text for a typed row, else ``None``.
    ``last_command`` is the normalized text of the last custom command decided
    typed in the file: a row carrying it again as ``displayContent`` is that
    turn's continuation. Does not know whether the id was written before or
    whether the session is a sub-agent's (see :func:`read_gemini_rows`).
    Pure; never raises.
    """
    content = row.get("content")
    if _has_part(content, "functionResponse"):
        return False, "tool_result", None
    parts = _texts(content)
    own = [t for t in parts if not _is_hook_part(t)]
    joined = "".join(own)
    display = row.get("displayContent")
    if display is not None:
        shown = "".join(_texts(display))
        if shown.lstrip().startswith("/"):
            name, _, args = shown.strip().partition(" ")
            if not args.strip():
                return False, "custom_command", None
            command = normalize_text(f"{name} {args}")
            if command == last_command or _injected_reason(joined) == "continuation":
                return False, "continuation", None
            return True, "typed", command
        if normalize_text(shown) and normalize_text(shown) not in normalize_text(joined):
            return False, "continuation", None
        injected = _injected_reason(joined)
        if injected is not None:
            return False, injected, None
        text = normalize_text(shown)
        return (True, "typed", text) if text else (False, "empty", None)
    if not own and parts:
        return False, "hook_context", None
    injected = _injected_reason(joined)
    if injected is not None:
        return False, injected, None
    text = normalize_text(joined)
    if not text:
        media = _has_part(content, "inlineData") or _has_part(content, "fileData")
        return False, "media_only" if media else "empty", None
    if GEMINI_PROMPTS.match(text) is not None:
        return False, "tool_prompt", None
    return True, "typed", text


_OTHER_REASONS = {"gemini": "model", "info": "info", "error": "error", "warning": "warning"}


def is_copy(header: GeminiHeader | None, occurred_at: int | None) -> bool:
    """Whether a message row stamped ``occurred_at`` is a copy of earlier history.

    Gemini CLI (0.39 on) converts an older ``.json`` session it resumes into
    ``<name>.jsonl`` by writing the old header (its ``lastUpdated`` kept) and
    then every old message as a plain row (``ChatRecordingService.initialize``);
    ``rewriteConversationFile`` does the same for a file it could not reload.
    A fresh file's header is written before any message, so a message no newer
    than the header's ``lastUpdated`` is such a copy. Pure.
    """
    return (header is not None and header.updated_at is not None and occurred_at is not None
            and occurred_at <= header.updated_at)


def _not_a_turn(header: GeminiHeader | None, seen: bool, at: int | None) -> str | None:
    """Why a ``user`` row cannot be a turn whatever it holds, or ``None``: ``subagent``,
    ``rewritten`` (its id was written before), ``copied_history`` (:func:`is_copy`)."""
    if header is not None and header.kind == "subagent":
        return "subagent"
    if seen:
        return "rewritten"
    return "copied_history" if is_copy(header, at) else None


def _header_of(value: Mapping[str, Any]) -> GeminiHeader:
    dirs = value.get("directories")
    kind = value.get("kind")
    return GeminiHeader(
        session_id=str(value["sessionId"]), project_hash=str(value["projectHash"]),
        started_at=epoch_ms(value.get("startTime")),
        updated_at=epoch_ms(value.get("lastUpdated")), kind=kind if isinstance(kind, str) else None,
        directories=tuple(d for d in dirs if isinstance(d, str)) if isinstance(dirs, list) else ())


def read_gemini_rows(data: bytes, cursor: GeminiCursor | None = None) -> GeminiScan:
    """Decide every complete line of ``data``, the file's bytes from ``cursor.offset`` on.

    Args:
        data: the bytes of the session file starting at ``cursor.offset``
            (read them with ``seek(cursor.offset)``; the whole file for a new
            cursor).
        cursor: where the last read stopped (default: the file's start).

    Returns:
        A :class:`GeminiScan`: one :class:`GeminiRow` per complete line (blank
        lines are skipped), the cursor to continue from, and whether a torn
        last line was left for later. Row decisions only; apply
        :func:`gemini_refusal` for the session's monitorability.

    No I/O, thread-safe, never raises: a line that is not a JSON object is
    ``invalid_json`` (not typed; the scan goes on), a shape this version does
    not write is ``unknown_kind`` (its name logged once per process,
    :func:`~actors.upstream.kindlog.log_unknown_kind`).
    """
    cur = cursor or GeminiCursor()
    header, seen, index = cur.header, set(cur.seen_ids), cur.line
    last_command = cur.last_command
    rows: list[GeminiRow] = []
    unknown: list[str] = []
    consumed = 0
    for start, end, line in complete_lines(data, cur.offset):
        consumed = end - cur.offset
        this = index
        index += 1
        if not line.strip():
            continue
        _, value = decode_object(line)
        if value is None:
            rows.append(GeminiRow(line=this, start=start, end=end, kind="invalid_json",
                                  typed=False, reason="invalid_json"))
            continue
        kind = row_kind(value)
        msg_id = value.get("id") if isinstance(value.get("id"), str) else None
        at = epoch_ms(value.get("timestamp"))
        typed, reason, text = False, kind, None
        if kind == "header":
            if header is None:
                header = _header_of(value)
                reason = "header"
            else:
                reason = "resume_header"
        elif kind == "$set":
            reason = "metadata"
        elif kind == "$set.messages":
            reason = "history_rewrite"
        elif kind == "$rewindTo":
            reason = "rewind"
        elif kind == "user":
            refused = _not_a_turn(header, msg_id in seen, at)
            if refused is not None:
                reason = refused
            else:
                typed, reason, text = decide_user_message(value, last_command)
                if typed and text is not None and text.startswith("/"):
                    last_command = text
        elif kind in _OTHER_REASONS:
            reason = _OTHER_REASONS[kind]
        else:
            reason = "unknown_kind"
            unknown.append(kind)
        if msg_id is not None:
            seen.add(msg_id)
        rows.append(GeminiRow(line=this, start=start, end=end, kind=kind, typed=typed,
                              reason=reason, message_id=msg_id, text=text, occurred_at=at))
    new = GeminiCursor(offset=cur.offset + consumed, line=index, header=header,
                       seen_ids=frozenset(seen), last_command=last_command)
    return GeminiScan(rows=tuple(rows), cursor=new, partial=consumed < len(data),
                      unknown_kinds=_logged_once(unknown))


def _logged_once(kinds: list[str]) -> tuple[str, ...]:
    """``kinds`` without repeats, each logged the first time this process sees it."""
    names = tuple(dict.fromkeys(kinds))
    for name in names:
        log_unknown_kind(logger, "Gemini CLI", name)
    return names


def decide_rows(data: bytes) -> GeminiScan:
    """:func:`read_gemini_rows` over a whole file's bytes (``ssa classify``). Pure."""
    return read_gemini_rows(data)


class _LogEntry(msgspec.Struct):
    sessionId: object = None  # noqa: N815 - the file's own key
    type: object = None


_LOGS = msgspec.json.Decoder(list[_LogEntry])


def interactive_session_ids(logs_json: bytes) -> frozenset[str] | None:
    """The session ids ``<project temp dir>/logs.json`` holds a typed query for.

    The interactive TUI appends ``{"sessionId", "messageId", "type": "user",
    "message", "timestamp"}`` for every query a person submits, slash commands
    included, before the turn is recorded (``Logger``,
    ``packages/core/src/core/logger.ts``); program-driven runs never write it.

    Returns ``None`` when the bytes are not a JSON array of objects (a file
    being rewritten: Gemini CLI writes it whole, not atomically; read it
    again). Pure; never raises.
    """
    try:
        entries = _LOGS.decode(logs_json)
    except (msgspec.MsgspecError, RecursionError):
        return None
    return frozenset(e.sessionId for e in entries
                     if isinstance(e.sessionId, str) and e.type == "user")


def gemini_refusal(header: GeminiHeader | None, interactive_ids: frozenset[str] | None,
                   *, has_prompt: bool) -> str | None:
    """Why a session cannot be monitored, or ``None`` when it can.

    Args:
        header: the file's header (``None``: not read yet or not a session file).
        interactive_ids: :func:`interactive_session_ids` of the project's
            ``logs.json`` (``None``: missing or unreadable).
        has_prompt: whether the file holds a ``user`` row decided on its own
            (a session nobody prompted yet cannot be told apart).

    Returns:
        ``not_a_session`` (no header), ``subagent`` (a sub-agent's file: the
        parent model prompts it), ``program_driven`` (it was prompted, but no
        query of it was ever logged: ``gemini -p``, ACP, the SDK), or ``None``.
        Pure; never raises.
    """
    if header is None:
        return "not_a_session"
    if header.kind == "subagent":
        return "subagent"
    if has_prompt and (interactive_ids is None or header.session_id not in interactive_ids):
        return "program_driven"
    return None


def logs_path_for(session_file: str | os.PathLike[str]) -> Path:
    """``<project temp dir>/logs.json`` for an absolute session file path (main or
    sub-agent: ``.../chats/<file>`` or ``.../chats/<parent id>/<file>``). Pure."""
    path = Path(session_file)
    chats = path.parent if path.parent.name == "chats" else path.parent.parent
    return chats.parent / "logs.json"


def _stat_key(path: Path) -> tuple[int, ...] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def gemini_fingerprint(session_file: str | os.PathLike[str]) -> tuple[int, ...] | None:
    """What changes whenever a scan could find news: the session file's and the
    project's ``logs.json``'s ``(dev, ino, size, mtime_ns)``.

    ``None`` when the session file is missing or not a regular file (scan it
    to find out). Any thread; blocks for two ``stat`` calls; never raises.
    """
    main = _stat_key(Path(session_file))
    if main is None:
        return None
    logs = _stat_key(logs_path_for(session_file))
    return main + (logs if logs is not None else (0, 0, 0, 0))
