"""Pi session classifier: which JSONL entries did a person type?

Pi (badlogic/pi-mono ``coding-agent``) keeps one JSONL file per session under
``~/.pi/agent/sessions/--<cwd>--/``: line 0 is a ``{"type": "session"}``
header, every later line an entry (upstream-formats.md §5.2). Files of every
format Pi wrote are linked: v1 (no ``version``, until 2025-12-30), v2
(2025-12-30 to 2026-01-05) and v3 (since then); see
:func:`pi_header_verdict`. OpenClaw links v3 only (anchor-openclaw-behaviour.md
§3.17 "Pi"); the monitor
reads the header with :func:`pi_header_version` and then feeds each complete
line to :func:`classify_pi_line`.

A complete line that is not a JSON object cannot be a typed turn: it is
decided not human (``invalid_json``) and the scan goes on after it (the
monitor logs it once per session). OpenClaw's monitor stops before such a
line for good (anchor §3.17 "Pi", §4.8 item 104); one corrupt line must not
silence a session forever. A half-written last line is not complete and
waits for its newline, as in every JSONL source.

Human turns (upstream-formats.md §5.3, §5.5): an entry ``type: "message"``
whose ``message.role`` is ``"user"`` and whose text (string content, or the
text parts joined with ``"\\n"``) is not empty. Pi stores no provenance flags,
so everything else about a user message looks typed, unless our Pi extension
recorded the prompt's input source on it (``ssaInput``,
:mod:`actors.upstream.pi.inputs`): one a program sent is not human. Policy
decisions:

* Empty and image-only user messages are not human (``empty`` /
  ``image_only``): there is no typed text to tell the gateway's own sends
  from a person's. OpenClaw counts them.
* OpenClaw channel envelopes (text starting ``Sender (untrusted metadata):``
  or ``Conversation info (untrusted metadata):``, optionally after a
  ``[Sun 2026-03-08 22:03 GMT+9]`` stamp) are messages a gateway relayed from
  another channel, not typed into Pi: not human (``openclaw_envelope``). So
  are OpenClaw's inter-session and reseed envelopes.
* ``bashExecution`` (``!cmd``) is a human action but not a prompt: not human
  (``shell_mode``), like Claude Code shell mode.
* A user message holding a slash command (very early builds stored ``/mode``
  as text) is human: a person typed it, and current builds never store
  built-in commands as user messages.
* ``/skill:name args`` is stored expanded (``AgentSession._expandSkillCommand``
  in ``packages/coding-agent/src/core/agent-session.ts``): ``<skill name="…"
  location="…">``, the skill file's body, ``</skill>``, then a blank line and
  the arguments when there are any. The skill file is not typed text: a bare
  ``/skill:name`` is not human (``skill_command``, like Claude Code's slash
  commands); with arguments it is human, and its text (for self-echo) is
  ``/skill:name args``, what the person or the gateway typed. The block ends
  at its *last* ``</skill>`` line, so a skill file quoting ``</skill>`` never
  turns its own lines into typed text. Prompt templates (``/name args``) are
  stored expanded with no marker at all, so they cannot be told from typed
  text and count as typed.
* A line must be valid UTF-8 JSON (RFC 8259); anything else stops the scan.
  OpenClaw replaces invalid bytes instead; Pi (Node ``JSON.stringify``)
  never writes them, so only a corrupted file is affected. Lone ``\\uD8xx``
  escapes are valid JSON and are accepted.

Everything here is pure: no I/O, no shared mutable state beyond the
lock-guarded set of unknown kinds already logged (an entry ``type`` or a
message role this release does not know is decided not typed, ``not_message``
/ ``not_user``, and its name logged once per process:
:func:`~actors.upstream.kindlog.log_unknown_kind`; every entry type and role
of pi-mono ``83378aad`` and the v1/v2 ``hookMessage`` are known), safe to
call from any thread, and nothing raises whatever the input. The typed text is
returned only so the monitor can recognise the gateway's own texts; it is
never logged.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

import msgspec

from actors.upstream.common import (
    Unit,
    cwd_in,
    decode_any,
    decode_object,
    epoch_ms,
    gateway_envelope_reason,
    is_utf8,
    normalize_text,
)
from actors.upstream.kindlog import log_unknown_kind
from actors.upstream.pi.inputs import INPUT_FIELD, input_source_reason

logger = logging.getLogger(__name__)

__all__ = ["classify_pi_line", "pi_header_verdict", "pi_header_version", "pi_project",
           "skill_invocation"]


class _Part(msgspec.Struct):
    type: object = None
    text: object = None


class _Message(msgspec.Struct):
    role: object = None
    content: msgspec.Raw = msgspec.Raw()
    timestamp: object = None
    ssa_input: object = msgspec.field(default=None, name=INPUT_FIELD)


class _Entry(msgspec.Struct):
    """The fields of a Pi entry the decision reads; ``message`` is decoded lazily."""

    type: object = None
    message: msgspec.Raw = msgspec.Raw()
    timestamp: object = None


class _Header(msgspec.Struct):
    type: object = None
    version: object = None


_ENTRY_DECODER = msgspec.json.Decoder(_Entry)
_MESSAGE_DECODER = msgspec.json.Decoder(_Message | None)
_CONTENT_DECODER = msgspec.json.Decoder(str | list[_Part] | None)
_HEADER_DECODER = msgspec.json.Decoder(_Header)

_SKILL_OPEN = re.compile(r'<skill name="([^"\n]+)" location="[^"\n]*">\r?\n')
_SKILL_CLOSE = "\n</skill>"


def skill_invocation(text: str) -> tuple[str, str] | None:
    """``(skill name, arguments)`` when ``text`` is an expanded ``/skill:`` command, else ``None``.

    Pure; see the module doc for the stored shape. The arguments are ``""``
    for a bare invocation.
    """
    opened = _SKILL_OPEN.match(text)
    if opened is None:
        return None
    close = len(text)
    while (close := text.rfind(_SKILL_CLOSE, opened.end() - 1, close)) >= 0:
        rest = text[close + len(_SKILL_CLOSE):]  # the last close the arguments follow
        if not rest.strip() or rest.startswith(("\n\n", "\r\n\r\n")):
            return opened.group(1), rest.strip()
    return None


_STOP = Unit(human=False, reason="invalid_json")
_BLANK = Unit(human=False, reason="blank")

_ENTRY_REASONS = {
    "session": "header",
    "custom_message": "custom_message",
    "custom": "custom_entry",
    "compaction": "compaction",
    "branch_summary": "branch_summary",
    "model_change": "model_change",
    "thinking_level_change": "thinking_level_change",
    "label": "label",
    "session_info": "session_info",
}
_ROLE_REASONS = {
    "assistant": "assistant",
    "toolResult": "tool_result",
    "bashExecution": "shell_mode",
    "custom": "custom",
    "hookMessage": "custom",
    "branchSummary": "branch_summary",
    "compactionSummary": "compaction_summary",
}

# (part type, part text) pairs, or a string, or None: the view of ``content``.
_Content = str | list[tuple[object, object]] | None


def _decide(
    entry_type: object,
    role: object,
    content: _Content,
    message_ts: object,
    entry_ts: object,
    ssa_input: object = None,
) -> Unit:
    """The classification rule, on a view both decode paths build the same way."""
    if entry_type != "message":
        reason = _ENTRY_REASONS.get(entry_type) if isinstance(entry_type, str) else None
        if reason is None and isinstance(entry_type, str):
            log_unknown_kind(logger, "Pi", entry_type)
        return Unit(human=False, reason=reason or "not_message")
    if role != "user":
        reason = _ROLE_REASONS.get(role) if isinstance(role, str) else None
        if reason is None and isinstance(role, str):
            log_unknown_kind(logger, "Pi", f"role:{role}")
        return Unit(human=False, reason=reason or "not_user")
    media = False
    if isinstance(content, str):
        text = content
    elif content is not None:
        text = "\n".join(t for kind, t in content if kind == "text" and isinstance(t, str))
        media = any(kind == "image" for kind, _ in content)
    else:
        text = ""
    skill = skill_invocation(text)
    if skill is not None:
        name, args = skill
        if not args:
            return Unit(human=False, reason="skill_command")
        text = f"/skill:{name} {args}"
    normalized = normalize_text(text)
    if not normalized:
        return Unit(human=False, reason="image_only" if media else "empty")
    envelope = gateway_envelope_reason(text.lstrip())
    if envelope is not None:
        return Unit(human=False, reason=envelope)
    program = input_source_reason(ssa_input)  # our extension's record (_pi_input)
    if program is not None:
        return Unit(human=False, reason=program)
    occurred_at = epoch_ms(message_ts)
    if occurred_at is None:
        occurred_at = epoch_ms(entry_ts)
    return Unit(human=True, reason="typed", text=normalized, occurred_at=occurred_at)


def _classify_mapping(entry: Mapping[str, object]) -> Unit:
    message = entry.get("message")
    role: object = None
    content: _Content = None
    message_ts: object = None
    ssa_input: object = None
    if isinstance(message, Mapping):
        role = message.get("role")
        message_ts = message.get("timestamp")
        ssa_input = message.get(INPUT_FIELD)
        raw = message.get("content")
        if isinstance(raw, str):
            content = raw
        elif isinstance(raw, list):
            content = [
                (part.get("type"), part.get("text")) if isinstance(part, Mapping) else (None, None)
                for part in raw
            ]
    return _decide(entry.get("type"), role, content, message_ts, entry.get("timestamp"),
                   ssa_input)


def _classify_generic(line: bytes) -> Unit:
    """The slow path: a line the fast structs cannot hold, or not valid JSON at all."""
    kind, value = decode_object(line)
    if value is not None:
        return _classify_mapping(value)
    return _BLANK if kind == "blank" else _STOP


def classify_pi_line(line: bytes) -> Unit:
    """Classify one line of a Pi session JSONL file.

    Args:
        line: the raw bytes of one line, with or without its trailing
            ``\\n`` / ``\\r\\n``.

    Returns:
        ``Unit(human=True, reason="typed", text=<normalized text>,
        occurred_at=<ms>)`` for a user message a person typed, where
        ``occurred_at`` is ``message.timestamp`` (ms number), else the
        entry ``timestamp`` (number or ISO 8601 string), else ``None``.
        ``Unit(human=False, reason="invalid_json")`` when the line is not
        one valid UTF-8 JSON document or not an object (not typed; the scan
        goes on after it, see the module docstring). A blank
        line gives ``reason="blank"`` (consumed, not a stop). Every other
        line is not human, with reason ``header``, ``custom_message``,
        ``custom_entry``, ``compaction``, ``branch_summary`` (entry or
        role), ``model_change``, ``thinking_level_change``, ``label``,
        ``session_info``, ``not_message`` (other entry types),
        ``assistant``, ``tool_result``, ``shell_mode``,
        ``custom``, ``branch_summary``, ``compaction_summary``,
        ``not_user``, ``empty``, ``image_only``, ``openclaw_envelope``,
        ``inter_session``, ``reseed_envelope``, or ``rpc_input``,
        ``extension_input``, ``headless_input`` (a prompt our Pi extension
        recorded as sent by a program, :mod:`actors.upstream.pi.inputs`).

    Rule source: upstream-formats.md §5.2, §5.3, §5.5 and the policies in
    the module docstring. Pure (no I/O; an unknown entry type or role is logged
    once, its name only), thread-safe, and never raises.
    """
    if not is_utf8(line):
        return _STOP
    try:
        entry = _ENTRY_DECODER.decode(line)
        if entry.type != "message":
            return _decide(entry.type, None, None, None, None)
        message = _MESSAGE_DECODER.decode(entry.message) if entry.message else None
        if message is None or message.role != "user":
            return _decide(entry.type, None if message is None else message.role, None, None, None)
        parts = _CONTENT_DECODER.decode(message.content) if message.content else None
    except (msgspec.MsgspecError, RecursionError):
        return _classify_generic(line)
    content: _Content = (
        [(part.type, part.text) for part in parts] if isinstance(parts, list) else parts
    )
    return _decide(entry.type, message.role, content, message.timestamp, entry.timestamp,
                   message.ssa_input)


def pi_header_version(first_line: bytes) -> int | None:
    """Read the format version from a Pi session file's header line.

    Args:
        first_line: the raw bytes of line 0 of the file, with or without
            its trailing newline.

    Returns:
        The header's ``version`` (an integer ≥ 1); ``1`` when the header has
        no ``version`` (v1 files, upstream-formats.md §5.2). ``None`` when
        the line is not a Pi session header (not a JSON object with
        ``type: "session"``) or its ``version`` is not a positive integer,
        so the caller can refuse to link it. Only v3 files are append-only
        and may be linked (anchor §3.17 "Pi").

    Pure (no I/O; an unknown entry type or role is logged once, its name only),
    thread-safe, and never raises.
    """
    if not is_utf8(first_line):
        return None
    try:
        header = _HEADER_DECODER.decode(first_line)
        entry_type, version = header.type, header.version
    except (msgspec.MsgspecError, RecursionError):
        ok, value = decode_any(first_line)
        if not ok or not isinstance(value, dict):
            return None
        entry_type, version = value.get("type"), value.get("version", None)
    if entry_type != "session":
        return None
    if version is None:
        return 1
    if isinstance(version, bool):
        return None
    if isinstance(version, float) and version.is_integer():
        version = int(version)
    if isinstance(version, int) and version >= 1:
        return version
    return None


class _HeaderId(msgspec.Struct):
    id: object = None


_header_id_decoder = msgspec.json.Decoder(_HeaderId)


def pi_header_verdict(first_line: bytes) -> tuple[str | None, str | None]:
    """``(session id or None, refusal or None)`` from a Pi session file's header line.

    Every format version Pi wrote is linked (v1, v2, v3; a later one too):
    their user ``message`` entries have the same shape, so each line is
    decided by the same rules. Pi's migrations
    (``packages/coding-agent/src/core/session-manager.ts`` at pi-mono
    ``83378aad``: ``migrateV1ToV2`` adds ``id``/``parentId`` and a ``version``,
    ``migrateV2ToV3`` renames the ``hookMessage`` role to ``custom``) change
    no user message. When Pi opens an older file it rewrites it whole in the
    new format; the scan re-baselines a rewritten file (nothing in it counts
    again). A first line that is not a ``session`` header with a usable
    ``version`` is refused ``not_a_pi_session``. Pure; never raises.
    """
    version = pi_header_version(first_line)
    refusal = "not_a_pi_session" if version is None else None
    try:
        value = _header_id_decoder.decode(first_line).id
    except (msgspec.DecodeError, RecursionError):
        value = None
    return (value if isinstance(value, str) and value else None), refusal


def pi_project(lines: list[bytes]) -> str | None:
    """The header's ``cwd`` (the first of a transcript's head ``lines``), or ``None`` (pure)."""
    return cwd_in(lines[:1])
