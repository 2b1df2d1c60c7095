"""What ``ssa`` knows of one coding agent it integrates with (the light half of a tool).

Each tool is a package of :mod:`actors.agents.tools` holding an
:class:`AgentTool` in its ``__init__`` (read at every prompt by ``ssa hook``:
standard library only) and its install plan in ``install`` (imported only by
``ssa install``/``uninstall``). The generic hook, install and wake code reads
these fields and names no tool.
"""

from __future__ import annotations

from actors.agents.activity import ActivityRule
from actors.agents.push import PushPath
from persistence.record import Record

__all__ = ["AgentTool"]


class AgentTool(Record):
    """One coding agent as ``ssa hook``, ``ssa install`` and the waiting hook see it.

    Attributes:
        name: its ``ssa hook``/``ssa install`` name (``"claude-code"``, ...).
        source: the upstream source its sessions are read as (``"claude"``, ...).
        default_event: the hook event a hook input without ``hook_event_name`` is.
        json_output: whether its command hooks answer context events in the
            ``hookSpecificOutput.additionalContext`` JSON (else plain text).
        context_events: the hook events whose ``additionalContext`` reaches the
            model (with ``json_output``).
        hook_events: the events ``ssa install`` runs the prompt hook from, in a
            settings file of hook groups (none: a plugin or extension runs it).
        timeout_unit_ms: whether the tool's hook ``timeout`` is in milliseconds
            (else seconds).
        install: the module whose ``plan(setup, *, install, plugin_dir)`` gives
            the files ``ssa install``/``uninstall`` change.
        push: how its sessions are woken (:mod:`actors.agents.push`), or ``None``.
        plugin_dir: whether ``ssa install --plugin DIR`` applies.
        mcp: whether the tool has an MCP client (``ssa install`` registers ``ssa mcp``).
        notice_line_events: events whose JSON output may carry a ``systemMessage``
            the tool shows the person: one short line when notices were handed
            to the agent (issue 33 item 4).
        activity: the hook events that say where a session stands
            (:mod:`actors.agents.activity`): ``ssa install`` registers ``ssa hook
            <tool> --activity`` under each.
        activity_fields: extra fields of those hook handlers (Claude Code:
            ``async``, so a turn never waits).

    A value (:class:`~persistence.record.Record`): never changed once made.
    """

    __slots__ = ("activity", "activity_fields", "context_events", "default_event", "hook_events",
                 "install", "json_output", "mcp", "name", "notice_line_events", "plugin_dir",
                 "push", "source", "timeout_unit_ms")

    def __init__(self, name: str, source: str, default_event: str, json_output: bool,
                 install: str, push: PushPath | None = None, plugin_dir: bool = False,
                 mcp: bool = True, context_events: tuple[str, ...] = (),
                 notice_line_events: tuple[str, ...] = (), hook_events: tuple[str, ...] = (),
                 timeout_unit_ms: bool = False, activity: tuple[ActivityRule, ...] = (),
                 activity_fields: tuple[tuple[str, object], ...] = ()) -> None:
        self.name = name
        self.source = source
        self.default_event = default_event
        self.json_output = json_output
        self.install = install
        self.push = push
        self.plugin_dir = plugin_dir
        self.mcp = mcp
        self.context_events = context_events
        self.notice_line_events = notice_line_events
        self.hook_events = hook_events
        self.timeout_unit_ms = timeout_unit_ms
        self.activity = activity
        self.activity_fields = activity_fields
