"""Classify the lines of a Codex CLI rollout file (``~/.codex/sessions/**.jsonl``).

A rollout is one append-only JSONL file per thread; every line is
``{"timestamp": ISO, "type": <kind>, "payload": {...}}`` (formats doc §3.2).
The monitor keeps a byte-offset marker like the Claude Code one and feeds each
complete line to :func:`classify_codex_line`; :func:`read_codex_thread` and
:func:`codex_link_refusal` decide from the first line (``session_meta``)
whether the thread may be monitored at all.

Which lines are a turn a person typed (formats doc §3.3, §3.5):

* legacy files: the ``event_msg`` ``user_message`` event, whose ``kind`` is
  absent or ``"plain"`` (``kind`` only exists in <=0.3x files);
* paginated files (``history_mode: paginated``, 0.15x): the ``event_msg``
  ``item_completed`` event whose ``item.type`` is ``"UserMessage"``. These
  files have no ``user_message`` event, and legacy files never persist a
  ``UserMessage`` ``item_completed`` (``codex-rs/rollout/src/policy.rs``), so
  each typed turn is counted exactly once;
* never the user-role ``response_item`` ``message``: it repeats every typed
  prompt (``"response_item_duplicate"``) and also carries the injected context
  fragments (``"injected_context"``).

Policy decisions (each also noted where it is applied):

* image-only turns (no text, only images) are **not** human: they carry no
  text, so the gateway could not recognise its own image sends
  (``"image_only"``). OpenClaw's app-server reader would count them.
* expanded custom prompts (``/prompts:name``) **are** human: a person typed
  the slash command; Codex stores only the expanded template text, which is
  what ``text`` holds.
* a prompt re-sent after an interrupt (``turn_aborted``) counts again: each
  ``user_message`` event is a separate submission.
* a text that starts with an injected-context marker is never human, even in
  a ``user_message`` event (defensive; Codex does not put them there).
* ``/review``: the review runs in a sub-agent whose events the parent thread
  re-emits (``tasks/review.rs``, ``codex_delegate.rs``), so the review's
  prompt lands in the parent rollout as a ``user_message`` between
  ``entered_review_mode`` and ``exited_review_mode``. A preset's prompt
  (current changes, base branch, commit: ``review_prompts.rs``) is a menu
  choice, not typed: not human (``review_request``). Custom review
  instructions are typed and count. The findings come back as a user-role
  ``response_item`` (``id: "review:rollout:user"``), which never counts.
* plan mode: picking "Yes, implement this plan" in the TUI's plan popup
  (after a plan-mode turn that proposed a plan) submits the fixed text
  ``PLAN_IMPLEMENTATION_CODING_MESSAGE`` (``"Implement the plan."`` in
  0.169.0, whose binary holds it beside the popup's labels; the later,
  longer variant and the older "clear context" prefix are matched too): a
  click, like Claude Code's plan approval, not typed
  (``plan_implementation``). The rollout marks nothing else on that line
  (the real 0.169.0 writes it as an ordinary ``UserMessage`` with
  ``provenance: user``), and each line is decided on its own, so the fixed
  text decides it wherever it appears; a person typing exactly that
  sentence is not counted (the conservative side).
* ``/init`` (and the compaction prompt): the TUI submits a fixed text as an
  ordinary user message; the person chose a command, the words are Codex's:
  not human (``tool_prompt``, :mod:`actors.upstream.codex.prompts`).
* messages other programs put into a thread: ``<external_message>`` text
  is ``external_message``; a Stop hook's continuation prompt is a
  ``HookPrompt`` item (``hook_prompt``, driven under the harness with 0.169.0),
  never a ``UserMessage``. A ``codex queue`` message (0.169.0) is a plain
  ``UserMessage``: only its turn's ``task_started`` (an earlier line) says a
  queue started the turn, so that rule lives in the per-file classifier of
  :mod:`actors.upstream.codex.turns` (``queued_message``), not here.
* multi-part paginated messages join their text parts with one space (what
  OpenClaw's self-echo check compares against); a legacy ``message`` is
  Codex's own concatenation of the parts with no separator.

All functions here are pure: no I/O, no logging, thread-safe, non-blocking.
Message text only travels in the returned :class:`~actors.upstream.Unit`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import msgspec

from actors.upstream.codex.meta import (  # the session_meta header's reading, re-exported
    CodexThread,
    codex_header_verdict,
    codex_link_refusal,
    codex_project,
    read_codex_thread,
)
from actors.upstream.codex.prompts import CODEX_PROMPTS
from actors.upstream.common import Unit, normalize_text

__all__ = [
    "KNOWN_LINE_KINDS",
    "CodexThread",
    "classify_codex_line",
    "codex_header_verdict",
    "codex_link_refusal",
    "codex_project",
    "line_kind",
    "read_codex_thread",
]

KNOWN_LINE_KINDS = frozenset({
    # RolloutItem variants besides response_item / event_msg (codex-rs/protocol
    # protocol.rs, later codex-rs/history lib.rs): none is a turn a person typed.
    "session_meta", "turn_context", "compacted",
    "world_state",  # 0.15x: the AGENTS.md / environment baseline
    "inter_agent_communication", "inter_agent_communication_metadata",  # multi-agent mail
    "security_risk_score", "realtime_item",  # a risk score; a voice session's item
    "token_usage_record",  # 0.169.0, 0.171.0: one per model response (token counts)
})
"""Rollout line ``type`` values Codex writes that are never a typed turn (their reason is
the kind itself); ``response_item`` and ``event_msg`` have their own rules, and any other
kind is ``unknown_kind`` (logged once by :mod:`actors.upstream.codex.turns`)."""

_PRE_ENVELOPE_KINDS = frozenset({"message", "function_call", "function_call_output",
                                 "local_shell_call", "reasoning"})
"""Bare ``ResponseItem`` types of rollouts written before the line envelope (2025-09)."""

# --- decoding -----------------------------------------------------------------
#
# Only the fields the rules need are declared; msgspec skips everything else
# without building Python objects. Fields that can be large or whose shape
# varies between payload kinds are kept as ``Raw`` slices and decoded only when
# the line turns out to be a candidate.

_NO_RAW = msgspec.Raw()


class _Payload(msgspec.Struct):
    type: str | None = None
    role: str | None = None
    kind: msgspec.Raw = _NO_RAW
    message: msgspec.Raw = _NO_RAW
    images: msgspec.Raw = _NO_RAW
    local_images: msgspec.Raw = _NO_RAW
    item: msgspec.Raw = _NO_RAW
    content: msgspec.Raw = _NO_RAW


class _Line(msgspec.Struct):
    type: str | None = None
    timestamp: str | None = None
    payload: _Payload | None = None


class _AnyObject(msgspec.Struct):
    """Accepts any JSON object and reads nothing: tells shape errors from non-objects."""


class _Part(msgspec.Struct):
    type: str | None = None
    text: str | None = None


class _Item(msgspec.Struct):
    type: str | None = None
    content: list[_Part] | None = None


_LINE = msgspec.json.Decoder(_Line)
_ANY_OBJECT = msgspec.json.Decoder(_AnyObject)
_OPT_STR = msgspec.json.Decoder(str | None)
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw] | None)
_PARTS = msgspec.json.Decoder(list[_Part] | None)
_ITEM = msgspec.json.Decoder(_Item | None)

# Everything msgspec (or a pathological nesting depth) can raise while decoding.
_DECODE_ERRORS = (msgspec.DecodeError, RecursionError, ValueError, TypeError)

# --- injected context (formats doc §3.3; codex-rs/core/src/contextual_user_message.rs)

_INJECTED_MARKERS = (
    "# agents.md instructions for ",
    "<environment_context>",
    "<user_instructions>",
    "<skill>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<subagent_notification>",
    "<additional_context>",
)
_MARKER_PREFIX_LEN = max(len(marker) for marker in _INJECTED_MARKERS)


# --- /review presets (codex-rs/core/src/review_prompts.rs) -------------------------
#
# `/review` runs a review sub-agent whose events the parent thread re-emits, its
# `user_message` included, so the preset's prompt lands in the parent rollout as
# if typed. Custom review instructions are typed by the person and count.
_REVIEW_PRESETS = re.compile(
    r"Review the current code changes \(staged, unstaged, and untracked files\) and provide "
    r"prioritized findings\."
    r"|Review the code changes against the base branch '.+'\. Start by finding the merge diff "
    r"between the current branch and .+ Provide prioritized, actionable findings\."
    r"|Review the code changes introduced by commit \S+( \(\".*\"\))?\. Provide "
    r"prioritized, actionable findings\.", re.DOTALL)


# --- plan mode (codex-rs/tui/src/chatwidget/plan_implementation.rs) ----------------
#
# The texts the TUI submits when a person picks an option of the plan popup.
_PLAN_IMPLEMENTATION_TEXTS = frozenset({
    "Implement the plan.",  # 0.169.0 (in its binary) and earlier
    "Implement the plan. If this thread has no active goal, create one from the approved "
    "plan before starting implementation so the original intent persists through "
    "compaction and resume.",  # later builds
})
_PLAN_CLEAR_CONTEXT_PREFIX = ("A previous agent produced the plan below to accomplish the "
                              "user's task. Implement the plan in a fresh context.")
_EXTERNAL_MESSAGE = "<external_message"


def _program_text_reason(text: str) -> str | None:
    """Reason code when normalized ``text`` is one a program submitted, not a person."""
    if text in _PLAN_IMPLEMENTATION_TEXTS or text.startswith(_PLAN_CLEAR_CONTEXT_PREFIX):
        return "plan_implementation"
    if text.startswith(_EXTERNAL_MESSAGE):
        return "external_message"
    if _is_review_preset(text):
        return "review_request"
    if CODEX_PROMPTS.match(text) is not None:
        return "tool_prompt"
    return None


def _is_review_preset(text: str) -> bool:
    """Whether normalized ``text`` is the prompt of one of Codex's ``/review`` presets."""
    return _REVIEW_PRESETS.fullmatch(text) is not None


def _is_injected(text: str) -> bool:
    """Codex's contextual-fragment test, by opening marker only (case-insensitive).

    Codex also requires the closing marker; checking only the opening one is
    deliberately wider, so a truncated or older-variant fragment is excluded too.
    """
    head = text.lstrip()[:_MARKER_PREFIX_LEN].lower()
    return head.startswith(_INJECTED_MARKERS)


# --- helpers --------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _epoch_ms(timestamp: str | None) -> int | None:
    """ISO-8601 text → epoch milliseconds; a time without an offset is UTC."""
    if not timestamp:
        return None
    try:
        moment = datetime.fromisoformat(timestamp)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        delta = moment - _EPOCH
    except (ValueError, OverflowError):
        return None
    ms = delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000
    return ms if ms >= 0 else None


def _error_reason(error: Exception) -> str:
    """Reason code for a failed decode: a JSON type mismatch vs malformed JSON."""
    return "unexpected_shape" if isinstance(error, msgspec.ValidationError) else "invalid_json"


def _decode_opt_str(raw: msgspec.Raw) -> tuple[str | None, str | None]:
    """A ``Raw`` JSON string or null → ``(value, None)``; else ``(None, reason)``.

    An absent field (empty ``Raw``) reads as ``(None, None)``.
    """
    if not raw:
        return None, None
    try:
        return _OPT_STR.decode(raw), None
    except _DECODE_ERRORS as error:
        return None, _error_reason(error)


def _is_utf8(data: bytes) -> bool:
    try:
        str(data, "utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _non_empty_list(raw: msgspec.Raw) -> bool:
    """Whether a ``Raw`` value is a JSON array with at least one element."""
    if not raw:
        return False
    try:
        values = _RAW_LIST.decode(raw)
    except _DECODE_ERRORS:
        return False
    return bool(values)


class _KindOnly(msgspec.Struct):
    type: object = None


_KIND_ONLY = msgspec.json.Decoder(_KindOnly)


def line_kind(line: bytes) -> object:
    """The top-level ``type`` of a rollout line as read (``None`` when it has none or
    is not a JSON object). Pure; never raises."""
    try:
        return _KIND_ONLY.decode(line).type
    except (*_DECODE_ERRORS, msgspec.ValidationError):
        return None


# --- per-kind rules ---------------------------------------------------------------


def _classify_user_message(payload: _Payload, occurred_at: int | None) -> Unit:
    """Legacy ``event_msg`` ``user_message`` (formats doc §3.2 payload shapes, §3.3)."""
    kind, kind_error = _decode_opt_str(payload.kind)
    message, message_error = _decode_opt_str(payload.message)
    error = kind_error or message_error
    if error is not None:
        return Unit(human=False, reason=error, occurred_at=occurred_at)
    # <=0.3x wrote user_instructions / environment_context events too.
    if kind is not None and kind != "plain":
        return Unit(human=False, reason="user_message_kind", occurred_at=occurred_at)
    if message and _is_injected(message):
        return Unit(human=False, reason="injected_context", occurred_at=occurred_at)
    text = normalize_text(message)
    if not text:
        # POLICY: image-only turns are not human (no text to tell own sends from).
        if _non_empty_list(payload.images) or _non_empty_list(payload.local_images):
            return Unit(human=False, reason="image_only", occurred_at=occurred_at)
        return Unit(human=False, reason="empty_text", occurred_at=occurred_at)
    program = _program_text_reason(text)
    if program is not None:
        return Unit(human=False, reason=program, occurred_at=occurred_at)
    return Unit(human=True, reason="typed", text=text, occurred_at=occurred_at)


def _classify_item_completed(payload: _Payload, occurred_at: int | None) -> Unit:
    """Paginated ``event_msg`` ``item_completed`` with a ``UserMessage`` item (§3.2)."""
    if not payload.item:
        return Unit(human=False, reason="event", occurred_at=occurred_at)
    try:
        item = _ITEM.decode(payload.item)
    except _DECODE_ERRORS as error:
        return Unit(human=False, reason=_error_reason(error), occurred_at=occurred_at)
    if item is not None and item.type == "HookPrompt":
        return Unit(human=False, reason="hook_prompt", occurred_at=occurred_at)
    if item is None or item.type != "UserMessage":
        return Unit(human=False, reason="non_user_item", occurred_at=occurred_at)
    texts: list[str] = []
    has_image = False
    for part in item.content or ():
        if part.type == "text" and part.text:
            if _is_injected(part.text):
                return Unit(human=False, reason="injected_context", occurred_at=occurred_at)
            texts.append(part.text)
        elif part.type in ("image", "local_image"):
            has_image = True
    text = normalize_text(" ".join(texts))
    if not text:
        # POLICY: image-only turns are not human (see module docstring).
        reason = "image_only" if has_image else "empty_text"
        return Unit(human=False, reason=reason, occurred_at=occurred_at)
    program = _program_text_reason(text)
    if program is not None:
        return Unit(human=False, reason=program, occurred_at=occurred_at)
    return Unit(human=True, reason="typed", text=text, occurred_at=occurred_at)


def _classify_response_item(payload: _Payload, occurred_at: int | None) -> Unit:
    """``response_item``: model-visible history, never human (formats doc §3.3)."""
    if payload.type != "message" or payload.role != "user":
        return Unit(human=False, reason="response_item", occurred_at=occurred_at)
    try:
        parts = _PARTS.decode(payload.content) if payload.content else None
    except _DECODE_ERRORS as error:
        return Unit(human=False, reason=_error_reason(error), occurred_at=occurred_at)
    for part in parts or ():
        if part.type == "input_text" and part.text and _is_injected(part.text):
            return Unit(human=False, reason="injected_context", occurred_at=occurred_at)
    return Unit(human=False, reason="response_item_duplicate", occurred_at=occurred_at)


# --- public API ---------------------------------------------------------------------


def classify_codex_line(line: bytes) -> Unit:
    """Classify one rollout line: did a person type this turn?

    Human (``reason="typed"``) only for (formats doc §3.2, §3.3, §3.5):

    * an ``event_msg`` ``user_message`` whose ``kind`` is absent or
      ``"plain"`` and whose normalized ``message`` is non-empty and does not
      open with an injected-context marker;
    * an ``event_msg`` ``item_completed`` whose ``item.type`` is
      ``"UserMessage"`` with non-empty typed text (its ``text`` parts, joined
      with a space) and no injected-context part.

    Everything else is not human, with a fixed reason code: ``invalid_json``
    (not JSON, or not a JSON object, or too deeply nested), ``unexpected_shape``
    (an object whose fields have unexpected types), ``response_item_duplicate``
    (the user-role ``response_item`` copy of a typed prompt),
    ``injected_context``, ``review_request`` (the prompt of a ``/review``
    preset, re-emitted from the review sub-agent), ``plan_implementation``
    (the plan popup's fixed text), ``external_message``, ``hook_prompt``,
    ``response_item``,
    ``user_message_kind``,
    ``image_only``, ``empty_text``, ``non_user_item``, ``event``,
    ``session_meta``, ``turn_context``, ``compacted``, ``other``.

    Args:
        line: one JSONL line, with or without its trailing newline. Any bytes
            are accepted (truncated, NUL, invalid UTF-8, huge, deeply nested).

    Returns:
        A :class:`~actors.upstream.Unit`. For human units ``text`` is the
        normalized typed text. ``occurred_at`` is the line's top-level
        ``timestamp`` as epoch ms whenever it parses, for every unit.

    Pure, thread-safe and non-raising; nothing is logged.
    """
    try:
        row = _LINE.decode(line)
    except msgspec.ValidationError:
        # Valid JSON but not the expected shape: a non-object, or an object
        # whose type/timestamp/payload fields have surprising types.
        try:
            _ANY_OBJECT.decode(line)
        except _DECODE_ERRORS:
            return Unit(human=False, reason="invalid_json")
        return Unit(human=False, reason="unexpected_shape")
    except _DECODE_ERRORS:
        return Unit(human=False, reason="invalid_json")

    occurred_at = _epoch_ms(row.timestamp)
    payload = row.payload
    kind = row.type
    if kind == "event_msg" and payload is not None:
        if payload.type in ("user_message", "item_completed") and not _is_utf8(line):
            # msgspec does not check the UTF-8 of fields it skips; a candidate
            # line must be valid JSON throughout, as json.loads would demand.
            return Unit(human=False, reason="invalid_json", occurred_at=occurred_at)
        if payload.type == "user_message":
            return _classify_user_message(payload, occurred_at)
        if payload.type == "item_completed":
            return _classify_item_completed(payload, occurred_at)
        return Unit(human=False, reason="event", occurred_at=occurred_at)
    if kind == "response_item" and payload is not None:
        return _classify_response_item(payload, occurred_at)
    if kind in ("event_msg", "response_item"):  # without an object payload
        return Unit(human=False, reason="no_payload", occurred_at=occurred_at)
    if isinstance(kind, str) and kind in KNOWN_LINE_KINDS:
        return Unit(human=False, reason=kind, occurred_at=occurred_at)
    if kind in _PRE_ENVELOPE_KINDS or (kind is None and payload is None):
        # A bare ResponseItem or state line (rollouts before the envelope,
        # refused at the header: meta.pre_envelope_thread).
        return Unit(human=False, reason="pre_envelope", occurred_at=occurred_at)
    return Unit(human=False, reason="unknown_kind", occurred_at=occurred_at)
