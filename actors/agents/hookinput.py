"""What each coding agent hands its prompt hook, and how the hook answers it (pure).

Each tool's defaults come from its package (:mod:`actors.agents.tools`).

* Claude Code and Codex run ``ssa hook claude-code|codex`` as a command
  hook (``UserPromptSubmit``, ``SessionStart``) and write their documented
  JSON on stdin: ``session_id``, ``transcript_path``, ``cwd``,
  ``hook_event_name`` (and ``prompt``, ``source``, ...). They take
  ``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}``
  on stdout and put the context into the very request of that turn.
* OpenCode's plugin and Pi's extension (package data of this project) run
  ``ssa hook opencode|pi`` with ``{"session_id", "cwd", "hook_event_name"}``
  (Pi also ``session_file``) and inject plain stdout.

Nothing here reads the prompt: its text never leaves the tool.
"""

from __future__ import annotations

import json

from actors.agents.push import PUSH_EVENT
from actors.agents.tools import TOOLS as _REGISTRY
from persistence.record import Record

__all__ = ["MAX_INPUT_BYTES", "STREAM_EVENT", "TOOLS", "HookInput", "HookInputError",
           "parse_hook_input", "render_output"]

TOOLS: dict[str, str] = {name: tool.source for name, tool in _REGISTRY.items()}
"""``ssa hook`` tool names and the upstream source each one's sessions are read as."""

MAX_INPUT_BYTES = 4 * 1024 * 1024
"""Largest hook input read (a prompt may be long; more is refused, not buffered)."""

_DEFAULT_EVENTS = {name: tool.default_event for name, tool in _REGISTRY.items()}
_NOTICE_LINE_EVENTS = {name: frozenset(tool.notice_line_events)
                       for name, tool in _REGISTRY.items()}
_CONTEXT_EVENTS = {name: frozenset(tool.context_events) for name, tool in _REGISTRY.items()
                   if tool.json_output}
"""Events whose ``additionalContext`` Claude Code and Codex add to the model's context
(``PostToolUse``: to the next request of the same turn)."""
STREAM_EVENT = PUSH_EVENT
"""The waiting hook's stream form: one JSON line ``{"text": ...}`` per delivery, read by
our OpenCode plugin and Pi extension (:data:`actors.agents.push.PUSH_EVENT`)."""


class HookInputError(ValueError):
    """The hook input is not what the tool documents (the message says what is wrong)."""


class HookInput(Record):
    """The fields of a hook input that ``ssa hook`` uses.

    Attributes:
        tool: ``"claude-code"``, ``"codex"``, ``"opencode"`` or ``"pi"``.
        source: the upstream source of that tool's sessions (``"claude"``, ...).
        session_id: the tool's id of the session whose turn it is.
        cwd: that session's working directory.
        event: the hook event (``UserPromptSubmit``, ``SessionStart``, ...).
        transcript_path: the session's transcript, when the tool names it.
        notification_type: Claude Code's ``Notification`` kind
            (``permission_prompt``, ``idle_prompt``, ...).
        turn_id: Codex's turn id on turn-scoped events.

    A value (:class:`~persistence.record.Record`).
    """

    __slots__ = ("cwd", "event", "notification_type", "session_id", "source", "tool",
                 "transcript_path", "turn_id")

    def __init__(self, tool: str, source: str, session_id: str, cwd: str, event: str,
                 transcript_path: str | None = None, notification_type: str | None = None,
                 turn_id: str | None = None) -> None:
        self.tool = tool
        self.source = source
        self.session_id = session_id
        self.cwd = cwd
        self.event = event
        self.transcript_path = transcript_path
        self.notification_type = notification_type
        self.turn_id = turn_id


def parse_hook_input(tool: str, raw: bytes, *, event: str | None = None) -> HookInput:
    """Decode the stdin of ``ssa hook <tool>``.

    Args:
        tool: one of :data:`TOOLS`.
        raw: the bytes read from stdin (at most :data:`MAX_INPUT_BYTES`).
        event: the event to answer as, instead of the input's ``hook_event_name``.

    Returns:
        The parsed input.

    Raises:
        HookInputError: unknown tool, not a JSON object, or ``session_id``
            or ``cwd`` missing or not a non-empty string.

    Pure; any thread.
    """
    if tool not in TOOLS:
        raise HookInputError(f"unknown tool {tool!r} (one of {', '.join(TOOLS)})")
    if len(raw) > MAX_INPUT_BYTES:
        raise HookInputError(f"the hook input is larger than {MAX_INPUT_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8", errors="strict") or "null")
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise HookInputError("the hook input on stdin is not JSON") from None
    if not isinstance(data, dict):
        raise HookInputError("the hook input on stdin is not a JSON object")
    session_id = _required(data, "session_id")
    cwd = _required(data, "cwd")
    if "\x00" in session_id or "\x00" in cwd:
        raise HookInputError("session_id and cwd must not hold NUL characters")
    event = event or _text(data, "hook_event_name") or _DEFAULT_EVENTS[tool]
    transcript = _text(data, "transcript_path") or _text(data, "session_file")
    return HookInput(tool=tool, source=TOOLS[tool], session_id=session_id, cwd=cwd,
                     event=event, transcript_path=transcript,
                     notification_type=_text(data, "notification_type"),
                     turn_id=_text(data, "turn_id"))


def render_output(hook: HookInput, context: str, notices: int = 0) -> str:
    """What ``ssa hook`` writes on stdout to put ``context`` into the tool's next request.

    With ``notices`` (how many notices ``context`` hands over) and a tool that shows a
    hook's ``systemMessage`` to the person for this event, one short line says so there
    (the person sees that the manager was told; the details went to the agent).

    Claude Code and Codex: their JSON ``hookSpecificOutput.additionalContext``
    for ``UserPromptSubmit``, ``SessionStart`` and ``PostToolUse`` (plain
    text for any other event, e.g. a waiting hook's stderr); OpenCode and Pi:
    the plain text; the waiting hook's stream (:data:`STREAM_EVENT`): one JSON
    line ``{"text": ...}``. ``""`` for no context (nothing is printed).
    Pure; any thread.
    """
    if not context:
        return ""
    if hook.event == STREAM_EVENT:
        return json.dumps({"text": context}, ensure_ascii=True) + "\n"
    if hook.event in _CONTEXT_EVENTS.get(hook.tool, ()):
        output: dict[str, object] = {"hookSpecificOutput": {
            "hookEventName": hook.event, "additionalContext": context}}
        if notices and hook.event in _NOTICE_LINE_EVENTS.get(hook.tool, ()):
            output["systemMessage"] = (
                f"ssa: {notices} session{'s' if notices > 1 else ''} you watch changed; "
                "the agent was told")
        return json.dumps(output, ensure_ascii=False) + "\n"
    return context if context.endswith("\n") else context + "\n"


def _required(data: dict[str, object], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise HookInputError(f"the hook input has no {name} (a non-empty string)")
    return value


def _text(data: dict[str, object], name: str) -> str | None:
    value = data.get(name)
    return value if isinstance(value, str) and value else None
