"""Qwen Code session files: read the records, decide which ones a person typed.

Qwen Code (``@qwen-code/qwen-code``, checked at 0.24.4; docs/upstream-qwen.md)
records a session as JSONL at ``~/.qwen/projects/<cwd slug>/chats/<session
id>.jsonl`` (the slug: the working directory with every character outside
``[A-Za-z0-9]`` replaced by ``-``). Every line is one ``ChatRecord``
(``ChatRecordingService.createBaseRecord``,
``packages/core/src/services/chatRecordingService.ts``, in the bundle
``chunks/chunk-DPEB6S2R.js``): ``uuid``, ``parentUuid``, ``sessionId``,
``timestamp``, ``type`` (``user`` / ``assistant`` / ``tool_result`` /
``system``), ``provenance``, ``cwd``, ``version``, ``gitBranch``, and by
kind ``message`` (Gemini-style ``{"role", "parts"}``), ``subtype``,
``systemPayload``, ``toolCallResult``, ``usageMetadata``.

Which records a person typed (precision before recall):

* a ``type: "user"`` record without ``subtype`` (``recordUserMessage``) or
  with ``subtype: "mid_turn_user_message"`` (a message typed while tools ran),
  whose ``provenance`` is ``real_user``;
* not when its parts hold a ``functionResponse`` (``tool_result``);
* its typed text is ``systemPayload.displayText`` when present, else the
  text parts; an empty text is ``empty``;
* a text that is one of the fixed prompts Qwen Code sends for a command
  (``/init``: :mod:`actors.upstream.qwen.prompts`) is ``tool_prompt``;
* a record carrying ``forkedFrom`` is a copy ``/branch`` wrote into the new
  session's file (``SessionService.forkSession``): ``copied_row``;
* ``user`` records with another subtype 0.24.4 writes are the CLI's own
  (:data:`CLI_USER_SUBTYPES`: ``cron``, ``notification``, ``goal_runtime``,
  ``realtime_message``): the subtype is the reason; any other subtype is
  ``unknown_kind``; a ``provenance`` other than ``real_user`` is the reason
  (``system``, ``goal_runtime``, ``goal_control``);
* ``assistant`` (``model``), ``tool_result`` (``tool_result``) and every
  ``system`` record (``system:<subtype>``: ``slash_command``,
  ``chat_compression``, ``ui_telemetry``, ``attribution_snapshot``,
  ``session_source``, ``rewind``...) are not typed;
* any other ``type`` is ``unknown_kind`` (the reading logs each such kind once:
  :mod:`actors.upstream.qwen.reading`).

The helpers (line splitting, text parts) are :mod:`actors.upstream.gemini.classify`'s:
Qwen Code forked Gemini CLI and keeps its ``Content`` shape.

Everything here is pure (no I/O, no logging), thread-safe, non-blocking and
never raises, except :func:`qwen_fingerprint` (one ``stat``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from actors.upstream.common import decode_object, epoch_ms, normalize_text
from actors.upstream.gemini import classify as _gemini
from actors.upstream.qwen.prompts import QWEN_PROMPTS

__all__ = [
    "CLI_USER_SUBTYPES",
    "KNOWN_RECORD_TYPES",
    "QwenCursor",
    "QwenRow",
    "QwenScan",
    "QwenSession",
    "decide_qwen_record",
    "qwen_fingerprint",
    "qwen_project_slug",
    "qwen_refusal",
    "read_qwen_rows",
    "row_kind",
    "runtime_status_path",
    "runtime_status_session",
]

KNOWN_RECORD_TYPES = frozenset({"user", "assistant", "tool_result", "system"})
"""``ChatRecord.type`` values Qwen Code 0.24.4 writes."""

_TYPED_SUBTYPES = frozenset({None, "mid_turn_user_message"})

CLI_USER_SUBTYPES = frozenset({"cron", "notification", "goal_runtime", "realtime_message"})
"""The other ``subtype`` values of the ``user`` records Qwen Code 0.24.4 writes, each the
CLI's own prompt (``recordCronPrompt``, ``recordNotification``, ``recordGoalRuntimeMessage``,
``recordRealtimeConversation`` in ``packages/core/src/services/chatRecordingService.ts``)."""


class QwenSession(msgspec.Struct, frozen=True, kw_only=True):
    """What the records say about their session (the first record that says it wins).

    Attributes:
        session_id: ``sessionId``.
        cwd: ``cwd`` (the project root).
        started_at: the first record's ``timestamp`` as epoch ms.
        version: the Qwen Code version that wrote the first record.
        surface: ``attribution_snapshot.systemPayload.snapshot.surface`` (``cli``...), when seen.
        source_type: ``session_source`` ``systemPayload.sourceType`` (``channel``,
            ``daemon``...), when the session says where it came from.
        subagent: a record carries ``agentId`` / ``isSidechain`` (a sub-agent's file).
    """

    session_id: str | None = None
    cwd: str | None = None
    started_at: int | None = None
    version: str | None = None
    surface: str | None = None
    source_type: str | None = None
    subagent: bool = False


QwenRow = _gemini.GeminiRow
"""One decided line: Gemini CLI's row shape, which Qwen Code's records share (``kind`` is
``type`` with ``:subtype`` when there is one, ``message_id`` the record's ``uuid``)."""


class QwenCursor(msgspec.Struct, frozen=True, kw_only=True):
    """Where an incremental read stands; start with ``QwenCursor()``.

    Attributes:
        offset, line: the first byte and line index not read yet.
        session: what the records read so far say about the session.
    """

    offset: int = 0
    line: int = 0
    session: QwenSession = QwenSession()


class QwenScan(msgspec.Struct, frozen=True, kw_only=True):
    """What `read_qwen_rows` found (as :class:`~actors.upstream.gemini.classify.GeminiScan`)."""

    rows: tuple[QwenRow, ...]
    cursor: QwenCursor
    partial: bool = False
    unknown_kinds: tuple[str, ...] = ()


def row_kind(row: Mapping[str, Any]) -> str:
    """``type``, with ``:subtype`` when the record has one; ``unknown`` without a type. Pure."""
    kind = row.get("type")
    if not isinstance(kind, str):
        return "unknown"
    sub = row.get("subtype")
    return f"{kind}:{sub}" if isinstance(sub, str) else kind


def decide_qwen_record(row: Mapping[str, Any]) -> tuple[bool, str, str | None]:
    """Decide one parsed record on its own: ``(typed, reason, text)``. Pure; never raises."""
    kind = row.get("type")
    sub = row.get("subtype")
    if kind == "assistant":
        return False, "model", None
    if kind == "tool_result":
        return False, "tool_result", None
    if kind == "system":
        return False, f"system:{sub}" if isinstance(sub, str) else "system", None
    if kind != "user":
        return False, "unknown_kind", None
    if row.get("forkedFrom") is not None:
        return False, "copied_row", None
    if sub not in _TYPED_SUBTYPES:
        return False, str(sub) if sub in CLI_USER_SUBTYPES else "unknown_kind", None
    provenance = row.get("provenance", "real_user")
    if provenance != "real_user":
        return False, str(provenance) if isinstance(provenance, str) else "provenance", None
    message = row.get("message")
    parts = message.get("parts") if isinstance(message, Mapping) else None
    if _gemini._has_part(parts, "functionResponse"):
        return False, "tool_result", None
    payload = row.get("systemPayload")
    display = payload.get("displayText") if isinstance(payload, Mapping) else None
    text = normalize_text(display if isinstance(display, str)
                          else "".join(_gemini._texts(parts)))
    if not text:
        return False, "empty", None
    if QWEN_PROMPTS.match(text) is not None:
        return False, "tool_prompt", None
    return True, "typed", text


def _learn(session: QwenSession, value: Mapping[str, Any]) -> QwenSession:
    changes: dict[str, Any] = {}
    if session.session_id is None and isinstance(value.get("sessionId"), str):
        changes["session_id"] = value["sessionId"]
    if session.cwd is None and isinstance(value.get("cwd"), str):
        changes["cwd"] = value["cwd"]
    if session.started_at is None and epoch_ms(value.get("timestamp")) is not None:
        changes["started_at"] = epoch_ms(value.get("timestamp"))
    if session.version is None and isinstance(value.get("version"), str):
        changes["version"] = value["version"]
    if value.get("agentId") is not None or value.get("isSidechain") is True:
        changes["subagent"] = True
    payload = value.get("systemPayload")
    if isinstance(payload, Mapping):
        snap = payload.get("snapshot")
        if session.surface is None and isinstance(snap, Mapping) and \
                isinstance(snap.get("surface"), str):
            changes["surface"] = snap["surface"]
        if value.get("subtype") == "session_source" and isinstance(payload.get("sourceType"),
                                                                    str):
            changes["source_type"] = payload["sourceType"]
    return msgspec.structs.replace(session, **changes) if changes else session


def read_qwen_rows(data: bytes, cursor: QwenCursor | None = None) -> QwenScan:
    """Decide every complete line of ``data``, the file's bytes from ``cursor.offset`` on.

    Same contract as :func:`actors.upstream.gemini.classify.read_gemini_rows`: blank
    lines are skipped, a torn last line is left for the next read, a line that
    is not a JSON object is ``invalid_json``. Pure, thread-safe, never raises.
    """
    cur = cursor or QwenCursor()
    session, index, consumed = cur.session, cur.line, 0
    rows: list[QwenRow] = []
    unknown: list[str] = []
    for start, end, line in _gemini.complete_lines(data, cur.offset):
        consumed = end - cur.offset
        this = index
        index += 1
        if not line.strip():
            continue
        _, value = decode_object(line)
        if value is None:
            rows.append(QwenRow(line=this, start=start, end=end, kind="invalid_json",
                                typed=False, reason="invalid_json"))
            continue
        session = _learn(session, value)
        typed, reason, text = decide_qwen_record(value)
        kind = row_kind(value)
        if reason == "unknown_kind":
            unknown.append(kind)
        uuid = value.get("uuid")
        rows.append(QwenRow(line=this, start=start, end=end, kind=kind, typed=typed,
                            reason=reason, message_id=uuid if isinstance(uuid, str) else None,
                            text=text, occurred_at=epoch_ms(value.get("timestamp"))))
    new = QwenCursor(offset=cur.offset + consumed, line=index, session=session)
    return QwenScan(rows=tuple(rows), cursor=new, partial=consumed < len(data),
                    unknown_kinds=tuple(dict.fromkeys(unknown)))


class _Runtime(msgspec.Struct):
    session_id: object = None
    sessionId: object = None  # noqa: N815 - the file's own key


_RUNTIME = msgspec.json.Decoder(_Runtime)


def runtime_status_session(runtime_json: bytes) -> str | None:
    """The session id a ``chats/<session id>.runtime.json`` sidecar names, or ``None``.

    Only the interactive UI writes this sidecar (``startInteractiveUI``,
    ``packages/cli/src/ui/startInteractiveUI.tsx``; ``Config.
    markRuntimeStatusEnabled`` keeps non-interactive processes from touching
    it), at every launch and resume, and never deletes it
    (``packages/core/src/utils/runtimeStatus.ts``). Pure; never raises.
    """
    try:
        status = _RUNTIME.decode(runtime_json)
    except (msgspec.MsgspecError, RecursionError):
        return None
    found = status.session_id if isinstance(status.session_id, str) else status.sessionId
    return found if isinstance(found, str) else None


def runtime_status_path(session_file: str | os.PathLike[str]) -> Path:
    """``<chats>/<session id>.runtime.json`` beside a session file. Pure."""
    path = Path(session_file)
    return path.with_name(path.name.removesuffix(".jsonl") + ".runtime.json")


def qwen_refusal(session: QwenSession, interactive: bool | None = None, *,
                 has_prompt: bool = False) -> str | None:
    """Why a session cannot be monitored, or ``None`` when it can.

    Args:
        session: :attr:`QwenCursor.session` after a read.
        interactive: whether the session's ``runtime.json`` sidecar names it
            (:func:`runtime_status_session`); ``None``: not checked.
        has_prompt: the file holds a ``user`` record decided typed.

    Returns:
        ``subagent`` (a sub-agent's records), ``source:<type>`` (a session a
        channel or daemon drives: ``session_source``), ``program_driven``
        (prompted, but no interactive UI ever ran it: ``qwen -p``, ACP, the
        SDK), or ``None``. Pure; never raises.
    """
    if session.subagent:
        return "subagent"
    if session.source_type is not None:
        return f"source:{session.source_type}"
    if has_prompt and interactive is False:
        return "program_driven"
    return None


def qwen_project_slug(cwd: str) -> str:
    """The ``~/.qwen/projects`` directory name of a working directory. Pure.

    As Qwen Code's ``sanitizeCwd`` (0.24.4, ``packages/core/src/utils/paths.ts``): on
    Windows the path is lower-cased first; a path recorded there (a drive letter or
    backslashes) is lower-cased here too.
    """
    windows = (len(cwd) > 1 and cwd[1] == ":" and cwd[0].isalpha()) or "\\" in cwd
    return "".join(c if c.isascii() and c.isalnum() else "-"
                   for c in (cwd.lower() if windows else cwd))


def qwen_fingerprint(session_file: str | os.PathLike[str]) -> tuple[int, ...] | None:
    """``(dev, ino, size, mtime_ns)`` of the session file, or ``None`` when it is
    missing or not a regular file. Any thread; one ``stat``; never raises."""
    try:
        st = os.stat(Path(session_file))
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
