"""Claude Code transcript classifier: which JSONL rows did a person type?

Claude Code keeps one append-only JSONL file per session
(``~/.claude/projects/<slug>/<sessionId>.jsonl``). Almost everything in it is
stored as ``type: "user"`` at some point: tool results, caveats, slash-command
wrappers, shell-mode rows, background-agent notices, compaction summaries.
This module decides, one row at a time, whether the row is a prompt a person
typed directly into the session (upstream-formats.md §2.4, §2.5, §2.7;
anchor-openclaw-behaviour.md §3.17 "Claude Code — local JSONL" and "paired
node").

Two entry points make the same decision:

* :func:`classify_claude_line` takes raw JSONL bytes (local files; the monitor
  passes complete lines, with or without the newline);
* :func:`classify_claude_message` takes an already-decoded row (paired-node
  items a host returns).

Everything here is pure: no I/O, no shared mutable state beyond the
lock-guarded set of unknown row kinds already logged (an unknown kind is
logged once, see below), safe to call from any thread. Nothing raises,
whatever the input. The typed text is returned in the
:class:`~actors.upstream.common.Unit` only so the monitor can recognise the
gateway's own texts; it is never logged.

Policy decisions beyond OpenClaw's rule (OpenClaw counts every user row with
text that is not its own inter-session or reseed envelope):

* A slash-command row (``<command-name>`` / ``<command-message>`` wrapper, e.g.
  ``/exit``) is not a typed prompt: it is a wrapper Claude Code writes around
  a UI command, most have no model turn, and every ``/exit`` would otherwise
  count as a message. Its output rows (``<local-command-stdout>``) are not
  human either.
* The prompt a built-in command expands to, written as a plain user row by
  older builds (``/init``: "Please analyze this codebase and create a
  CLAUDE.md file…", ``/review``'s "You are an expert code reviewer…"), is
  Claude Code's, not the person's: ``tool_prompt``
  (:mod:`actors.upstream.claude.prompts`); the arguments the person typed
  into it (``/review 123``) are theirs: typed, with them as the text. A command's own row stays
  ``command`` even with arguments: one row cannot tell a prompt command's
  arguments from a local command's (``/model sonnet``, ``/add-dir PATH``).
* Shell mode (``!cmd`` stored as ``<bash-input>``, output ``<bash-stdout>``) is
  a human action but not a prompt to the agent: not human.
* The ``#`` memory shortcut (``<user-memory-input>``) is likewise an action,
  not a prompt: not human.
* ``entrypoint`` starting with ``sdk-`` (headless ``claude -p``, Agent SDK,
  ACP adapters) means a program drove the session: not human.
* ``promptSource`` (recent builds) other than ``"typed"`` is not human.
* Agent teams deliver a teammate's (or the team lead's) message as a user
  row that starts with ``<teammate-message teammate_id="…">``: written by the
  client for another agent, not typed; not human (``teammate_message``).
* A prompt typed while the agent works is written, in current builds, as an
  ``attachment`` row of ``attachment.type`` ``queued_command`` with
  ``commandMode: "prompt"``, ``origin.kind: "human"`` and the text in
  ``prompt`` (folded into the running turn: no ``user`` row follows). It is
  human, under the same rules as a user row. A queued command of another
  mode (``task-notification``), of another or no origin (``peer``,
  ``auto-continuation``), or marked ``isMeta`` is not.
* A plan-approval row (``Implement the following plan:`` followed by the plan,
  with the plan again in ``planContent``) is what Claude Code writes when a
  person picks an option on the plan-mode prompt ("Yes, clear context and
  ..."): the text is the assistant's plan and the person clicked, not
  typed; not human (``plan_approval``). A person who types that phrase has no
  ``planContent`` and counts.
* ``origin.kind`` other than ``"human"``, when present, is not human:
  ``peer`` (a message another Claude Code session sent, written as
  ``<cross-session-message …>``) is ``peer_message``, ``channel`` (a message
  an MCP channel pushed, ``<channel source="…">``) is ``channel_message``,
  ``task-notification`` is ``task_notification``, anything else
  ``not_human_origin``. The wrappers alone decide the same way in builds
  that write no ``origin`` (Claude Code 2.1.328 lists ``peer``, ``channel``,
  ``voice-call`` and ``unclassified`` as the origins of rows others wrote).
* Claude Desktop runs Claude Code through the Agent SDK, so its rows say
  ``promptSource: "sdk"``; what a person typed into Desktop's Code tab says
  ``entrypoint: "claude-desktop"`` and ``origin.kind: "human"`` and is typed
  (issue 22, class 1). Desktop's task notifications and other injected rows
  are decided by their own fields (``origin``, ``isMeta``, wrappers); an
  SDK-sourced Desktop row without ``origin.kind: "human"`` is not typed.
* A row Claude Code copied into a new session file from an earlier session
  (``/branch`` writes every copy with ``forkedFrom: {sessionId,
  messageUuid}``) was typed in that earlier session: ``copied_row``. Copies
  without ``forkedFrom`` (``--fork-session``, a conversation continued under
  a new id) keep the row's ``uuid``; the scan recognises those across the
  project's transcripts (:mod:`actors.upstream.claude.copies`).
* Context Claude Code adds itself (a hook's ``additionalContext``, our own
  ``ssa hook`` notice included) is an ``attachment`` of
  ``hook_additional_context`` (reason ``hook_context``), and in a user row a
  leading ``<system-reminder>`` block, which is dropped like IDE context.
* Row kinds: only ``user`` rows and ``queued_command`` attachments can be
  a person's turn. Every other kind Claude Code 2.1.328 writes (its own
  list of transcript entry kinds: conversation ``assistant``, ``system``,
  ``attachment``, ``progress``; metadata such as ``api-request``,
  ``api-request-shape``, ``api-request-blob``, ``atis-latch``,
  ``cost-state``, ``mode``, ``last-prompt``...) is ``not_user``; a kind
  outside that list is ``unknown_kind`` (not typed) and logged once per
  process (the kind's name only, never a row's text): the one exception to
  "no logging" here.
* Image-only rows (image or document blocks, at most ``[Image #N]``
  placeholders as text) carry no typed text: not human (``image_only``).
* VS Code / JetBrains rows whose leading text blocks are IDE context
  (``<ide_opened_file>``, ``<ide_selection>``, ``<ide_diagnostics>``) or a
  ``<system-reminder>`` are human when a typed block follows; the context
  blocks are dropped and ``text`` is the first typed block.
* OpenClaw channel envelopes (``Sender (untrusted metadata):`` and
  ``Conversation info (untrusted metadata):``) are written by a gateway, not
  typed into Claude Code: not human.
* A line must be valid UTF-8 JSON (RFC 8259) to be classified; OpenClaw
  replaces invalid bytes instead. Lone ``\\uD8xx`` escapes, which Node writes
  for split surrogate pairs, are accepted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec

from actors.upstream.claude.kinds import _NOT_USER, KNOWN_ROW_KINDS, _other_kind
from actors.upstream.claude.prompts import CLAUDE_PROMPTS
from actors.upstream.common import (
    Unit,
    decode_object,
    epoch_ms,
    gateway_envelope_reason,
    is_utf8,
    normalize_text,
)

__all__ = ["KNOWN_ROW_KINDS", "classify_claude_line", "classify_claude_message"]

# Context blocks a client puts in front of the typed text (upstream-formats §2.4).
_CONTEXT_TAGS = ("ide_opened_file", "ide_selection", "ide_diagnostics", "system-reminder")
_CONTEXT_PREFIX = re.compile(
    r"\s*<(" + "|".join(re.escape(tag) for tag in _CONTEXT_TAGS) + r")>.*?</\1>\s*",
    re.DOTALL,
)
_IMAGE_PLACEHOLDER = re.compile(r"\[Image #\d+\]")
_NON_TEXT_MEDIA = frozenset({"image", "document"})

# Prefixes of texts that are not typed prompts, checked on the left-stripped
# text of every candidate, in order (upstream-formats §2.4 table, §2.7 step 3).
_WRAPPER_PREFIXES: tuple[tuple[str, str], ...] = (
    ("<local-command-caveat>", "caveat"),
    ("Caveat: The messages below were generated by the user while running local", "caveat"),
    ("<command-name>", "command"),
    ("<command-message>", "command"),
    ("<command-args>", "command"),
    ("<local-command-stdout>", "command_output"),
    ("<local-command-stderr>", "command_output"),
    ("<bash-input>", "shell_mode"),
    ("<bash-stdout>", "shell_output"),
    ("<bash-stderr>", "shell_output"),
    ("<user-memory-input>", "memory_input"),
    ("<task-notification>", "task_notification"),
    ("<teammate-message", "teammate_message"),  # agent teams: another agent's message
    ("<cross-session-message", "peer_message"),  # another session's message (origin peer)
    ("<channel source=", "channel_message"),  # an MCP channel's message (origin channel)
    ("<channel>", "channel_message"),
    ("[Request interrupted by user", "interrupted"),
)



class _Block(msgspec.Struct):
    """One content block; only the fields the decision reads."""

    type: object = None
    text: object = None


class _Message(msgspec.Struct):
    role: object = None
    content: str | list[_Block] | None = None


class _Row(msgspec.Struct, rename="camel"):
    """The fields of a Claude Code row the decision reads; the rest are skipped.

    ``message`` stays a raw slice and is decoded only for ``type: "user"``
    rows, so assistant rows and side-car rows cost one shallow pass.
    """

    type: object = None
    message: msgspec.Raw = msgspec.Raw()
    is_meta: object = None
    is_sidechain: object = None
    is_compact_summary: object = None
    is_visible_in_transcript_only: object = None
    origin: object = None
    entrypoint: object = None
    prompt_source: object = None
    plan_content: object = None
    timestamp: object = None
    forked_from: object = None


class _Attachment(msgspec.Struct, rename="camel"):
    type: object = None
    command_mode: object = None
    origin: object = None
    prompt: object = None
    is_meta: object = None


class _AttachmentRow(msgspec.Struct, rename="camel"):
    attachment: _Attachment | None = None
    is_sidechain: object = None
    entrypoint: object = None
    timestamp: object = None
    forked_from: object = None


_ROW_DECODER = msgspec.json.Decoder(_Row)
_ATTACHMENT_DECODER = msgspec.json.Decoder(_AttachmentRow)
_MESSAGE_DECODER = msgspec.json.Decoder(_Message | None)

_BLANK = Unit(human=False, reason="blank")
_INVALID = Unit(human=False, reason="invalid_json")
_HOOK_CONTEXT = Unit(human=False, reason="hook_context")
_ORIGIN_REASONS = {"task-notification": "task_notification", "peer": "peer_message",
                   "channel": "channel_message"}


# (block type, block text) pairs: the only view of a content list the rules need.
_Blocks = list[tuple[object, object]]


def _strip_context(text: str) -> tuple[str, bool]:
    """Drop leading IDE / system-reminder context elements; say whether any was dropped."""
    stripped = text.lstrip()
    dropped = False
    while stripped.startswith("<"):
        match = _CONTEXT_PREFIX.match(stripped)
        if match is None:
            if any(stripped.startswith(f"<{tag}>") for tag in _CONTEXT_TAGS):
                return "", True  # unclosed context element: all context
            break
        stripped = stripped[match.end() :]
        dropped = True
    return stripped, dropped


def _decide(
    row_type: object,
    role: object,
    content: object,
    blocks: _Blocks | None,
    flags: tuple[object, object, object, object],
    origin: object,
    entrypoint: object,
    prompt_source: object,
    timestamp: object,
    plan_content: object = None,
    forked_from: object = None,
) -> Unit:
    """The classification rule, on a view both entry points build the same way.

    ``content`` is the raw content when it is a string; ``blocks`` is the
    (type, text) view when it is a list; both ``None`` otherwise.
    ``flags`` is (isSidechain, isCompactSummary, isVisibleInTranscriptOnly, isMeta).
    """
    if row_type != "user" or role != "user":
        return _NOT_USER
    is_sidechain, is_compact, is_visible_only, is_meta = flags
    if is_sidechain:
        return Unit(human=False, reason="sidechain")
    if is_compact or is_visible_only:
        return Unit(human=False, reason="compact_summary")
    if is_meta:
        return Unit(human=False, reason="meta")
    if blocks is not None and any(kind == "tool_result" for kind, _ in blocks):
        return Unit(human=False, reason="tool_result")
    origin_kind: object = None
    if isinstance(origin, Mapping):
        origin_kind = origin.get("kind")
        if origin_kind is not None and origin_kind != "human":
            reason = _ORIGIN_REASONS.get(origin_kind) if isinstance(origin_kind, str) else None
            return Unit(human=False, reason=reason or "not_human_origin")
    if isinstance(entrypoint, str) and entrypoint.startswith("sdk-"):
        return Unit(human=False, reason="sdk_entrypoint")
    if prompt_source is not None and prompt_source != "typed" and not (
            prompt_source == "sdk" and entrypoint == "claude-desktop"
            and origin_kind == "human"):
        return Unit(human=False, reason="not_typed_source")
    if isinstance(forked_from, Mapping):
        return Unit(human=False, reason="copied_row")
    if isinstance(plan_content, str) and plan_content.strip():
        return Unit(human=False, reason="plan_approval")

    media = False
    if isinstance(content, str):
        raw_texts = [content]
    elif blocks is not None:
        raw_texts = [text for kind, text in blocks if kind == "text" and isinstance(text, str)]
        media = any(kind in _NON_TEXT_MEDIA for kind, _ in blocks)
        if not raw_texts and not any(kind == "text" for kind, _ in blocks):
            return Unit(human=False, reason="image_only" if media else "no_text")
    else:
        return Unit(human=False, reason="no_text")

    candidates: list[str] = []
    had_context = False
    for raw in raw_texts:
        text, dropped = _strip_context(raw)
        had_context = had_context or dropped
        if text and not text.isspace():
            candidates.append(text)

    for text in candidates:
        for prefix, reason in _WRAPPER_PREFIXES:
            if text.startswith(prefix):
                return Unit(human=False, reason=reason)
        envelope = gateway_envelope_reason(text)
        if envelope is not None:
            return Unit(human=False, reason=envelope)

    if not candidates:
        if media:
            return Unit(human=False, reason="image_only")
        return Unit(human=False, reason="ide_context" if had_context else "empty")
    if all(not _IMAGE_PLACEHOLDER.sub("", text).strip() for text in candidates):
        return Unit(human=False, reason="image_only")
    command = CLAUDE_PROMPTS.find(candidates[0])
    if command is not None and not command.args:
        return Unit(human=False, reason="tool_prompt")
    return Unit(
        human=True,
        reason="typed",
        text=command.args if command is not None else normalize_text(candidates[0]),
        occurred_at=epoch_ms(timestamp),
    )


def _decide_queued(kind: object, mode: object, origin: object, prompt: object,
                   is_meta: object, is_sidechain: object, entrypoint: object,
                   timestamp: object, forked_from: object = None) -> Unit:
    """The rule for an ``attachment`` row (see the module doc): a queued prompt is a user row."""
    if kind == "hook_additional_context":
        return _HOOK_CONTEXT
    if kind != "queued_command":
        return _NOT_USER
    if mode != "prompt":
        return Unit(human=False, reason="task_notification" if mode == "task-notification"
                    else "queued_command")
    if is_meta:
        return Unit(human=False, reason="meta")
    if not isinstance(origin, Mapping) or origin.get("kind") != "human":
        kind_of_origin = origin.get("kind") if isinstance(origin, Mapping) else None
        reason = (_ORIGIN_REASONS.get(kind_of_origin) if isinstance(kind_of_origin, str)
                  else None)
        return Unit(human=False, reason=reason or "not_human_origin")
    return _decide("user", "user", prompt if isinstance(prompt, str) else None,
                   _blocks_of(prompt), (is_sidechain, None, None, None), origin, entrypoint,
                   None, timestamp, forked_from=forked_from)


def _blocks_of(content: object) -> _Blocks | None:
    if isinstance(content, list):
        view: _Blocks = []
        for item in content:
            if isinstance(item, Mapping):
                view.append((item.get("type"), item.get("text")))
            else:
                view.append((None, None))
        return view
    return None


def classify_claude_message(row: Mapping[str, object]) -> Unit:
    """Classify one already-decoded Claude Code transcript row.

    Args:
        row: a row as a mapping, shaped like one JSONL line of a Claude Code
            session (``type``, ``message.role``, ``message.content``,
            ``isMeta``, ``timestamp`` …); e.g. a paired-node history item.

    Returns:
        ``Unit(human=True, reason="typed", text=<normalized typed text>,
        occurred_at=<timestamp as epoch ms or None>)`` for a prompt a person
        typed; otherwise ``Unit(human=False, reason=<code>)``. Reason codes:
        ``not_user``, ``sidechain``, ``compact_summary``, ``meta``,
        ``tool_result``, ``task_notification``, ``not_human_origin``,
        ``sdk_entrypoint``, ``not_typed_source``, ``no_text``,
        ``image_only``, ``ide_context``, ``empty``, ``caveat``, ``command``,
        ``command_output``, ``shell_mode``, ``shell_output``,
        ``memory_input``, ``interrupted``, ``inter_session``,
        ``reseed_envelope``, ``openclaw_envelope``, ``plan_approval``,
        ``teammate_message``, ``queued_command``, ``peer_message``,
        ``channel_message``, ``hook_context``, ``copied_row`` (a ``/branch``
        copy, ``forkedFrom``), ``unknown_kind`` (a row kind Claude Code
        2.1.328 does not write; logged once), ``invalid_json`` (not a
        mapping).

    The rule is upstream-formats.md §2.4 and §2.7 (OpenClaw's
    ``classifyClaudeCliHistoryMessage``, anchor §3.17 "paired node") plus the
    policies in the module docstring. Makes exactly the decision
    :func:`classify_claude_line` makes on the encoded row. Pure (no I/O; an
    unknown kind is logged once, nothing else is), thread-safe, and never
    raises.
    """
    untyped: object = row  # hosts may hand over anything; never raise
    if not isinstance(untyped, Mapping):
        return _INVALID
    if row.get("type") == "attachment":
        attachment = row.get("attachment")
        if not isinstance(attachment, Mapping):
            return _NOT_USER
        return _decide_queued(attachment.get("type"), attachment.get("commandMode"),
                              attachment.get("origin"), attachment.get("prompt"),
                              attachment.get("isMeta"), row.get("isSidechain"),
                              row.get("entrypoint"), row.get("timestamp"),
                              row.get("forkedFrom"))
    if row.get("type") not in ("user", None):
        return _other_kind(row.get("type"))
    message = row.get("message")
    role: object = None
    content: object = None
    if isinstance(message, Mapping):
        role = message.get("role")
        content = message.get("content")
    blocks = _blocks_of(content)
    return _decide(
        row.get("type"),
        role,
        content if isinstance(content, str) else None,
        blocks,
        (
            row.get("isSidechain"),
            row.get("isCompactSummary"),
            row.get("isVisibleInTranscriptOnly"),
            row.get("isMeta"),
        ),
        row.get("origin"),
        row.get("entrypoint"),
        row.get("promptSource"),
        row.get("timestamp"),
        row.get("planContent"),
        row.get("forkedFrom"),
    )


def classify_claude_line(line: bytes) -> Unit:
    """Classify one line of a Claude Code session JSONL file.

    Args:
        line: the raw bytes of one line, with or without its trailing
            ``\\n`` / ``\\r\\n``.

    Returns:
        The same :class:`Unit` :func:`classify_claude_message` returns for
        the decoded row. A blank line gives ``reason="blank"``; bytes that
        are not one valid JSON document, or a document that is not an
        object, give ``reason="invalid_json"``. Invalid UTF-8 is checked only
        where it matters: a ``type: "user"`` row containing it is
        ``invalid_json``; any other row is ``not_user`` either way. Never
        ``stop``: the Claude monitor skips rows it cannot classify (anchor
        §3.17 step 5).

    Decodes with a module-level msgspec decoder into a struct holding only
    the fields the rule reads (much faster than ``json.loads``); anything
    that struct cannot hold falls back to a generic decode and the mapping
    path, so both entry points always agree. Rule source:
    upstream-formats.md §2.4, §2.7; anchor §3.17. Pure (no I/O; an unknown
    row kind is logged once), thread-safe, and never raises.
    """
    try:
        row = _ROW_DECODER.decode(line)
        if row.type == "attachment":
            return _classify_attachment(line)
        if row.type != "user":
            return _other_kind(row.type)
        message = _MESSAGE_DECODER.decode(row.message) if row.message else None
    except (msgspec.MsgspecError, RecursionError):
        return _classify_generic(line)
    if not is_utf8(line):
        return _INVALID
    role: object = None
    content: str | list[_Block] | None = None
    if message is not None:
        role = message.role
        content = message.content
    blocks = (
        [(block.type, block.text) for block in content] if isinstance(content, list) else None
    )
    return _decide(
        row.type,
        role,
        content if isinstance(content, str) else None,
        blocks,
        (row.is_sidechain, row.is_compact_summary, row.is_visible_in_transcript_only, row.is_meta),
        row.origin,
        row.entrypoint,
        row.prompt_source,
        row.timestamp,
        row.plan_content,
        row.forked_from,
    )


def _classify_attachment(line: bytes) -> Unit:
    """An ``attachment`` row: only a queued prompt can be human (see the module doc)."""
    try:
        row = _ATTACHMENT_DECODER.decode(line)
    except (msgspec.MsgspecError, RecursionError):
        return _classify_generic(line)
    attachment = row.attachment
    if attachment is not None and attachment.type == "hook_additional_context":
        return _HOOK_CONTEXT
    if attachment is None or attachment.type != "queued_command":
        return _NOT_USER
    if not is_utf8(line):
        return _INVALID
    return _decide_queued(attachment.type, attachment.command_mode, attachment.origin,
                          attachment.prompt, attachment.is_meta, row.is_sidechain,
                          row.entrypoint, row.timestamp, row.forked_from)


def _classify_generic(line: bytes) -> Unit:
    """The slow path: a line the fast struct cannot hold, or not valid JSON at all."""
    kind, value = decode_object(line)
    if value is not None:
        return classify_claude_message(value)
    return _BLANK if kind == "blank" else _INVALID
