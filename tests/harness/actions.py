"""The harness's own action log: the ground truth a classification is compared with.

Every step the harness takes on a tool (typing a prompt, choosing a slash
command, interrupting, a program-driven run, a scripted tool call...) is one
:class:`Action`. ``human`` says whether the row the tool writes for it was a
person's typing; ``text`` is what the harness expects to find in the rows the
tool writes for it (``None`` when the action leaves no text of its own).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["COMPACT", "CONFIRM", "CONTINUE", "FIXED_PROMPT", "FORK", "HOOK_PROMPT", "INTERRUPT",
           "MCP_CALL", "PROGRAM_RUN", "RESUME", "SHELL_CALL", "SLASH", "SUBAGENT", "TYPED",
           "Action", "ActionLog"]

TYPED = "typed"
"""A prompt a person typed into the TUI (``human``)."""
SLASH = "slash"
"""A slash command chosen in the TUI."""
INTERRUPT = "interrupt"
"""Escape or Ctrl-C while the tool works."""
COMPACT = "compact"
"""A compaction the harness asked for."""
CONFIRM = "confirm"
"""An answer to one of the tool's own confirmation questions (Aider's "Run shell command?")."""
RESUME = "resume"
"""Resuming a session (``--resume`` or the tool's picker)."""
CONTINUE = "continue"
"""Continuing the last session (``--continue``)."""
FORK = "fork"
"""Forking a session."""
SHELL_CALL = "shell_call"
"""A scripted model answer that runs a shell command."""
SUBAGENT = "subagent"
"""A scripted model answer that starts a sub-agent."""
MCP_CALL = "mcp_call"
"""A scripted model answer that calls an MCP tool."""
PROGRAM_RUN = "program_run"
"""A program-driven run (``claude -p``, ``codex exec``, ``opencode run``, Pi print/RPC mode)."""
HOOK_PROMPT = "hook_prompt"
"""A prompt a hook of the tool's own made it go on with (a Codex Stop hook's ``reason``)."""
FIXED_PROMPT = "fixed_prompt"
"""A command or click that makes the tool send a fixed prompt of its own (``/init``):
the person chose an action, the words are the tool's (never ``human``)."""


@dataclass(frozen=True)
class Action:
    """One step the harness took.

    Attributes:
        seq: 1-based order in the log.
        at_ms: wall-clock epoch milliseconds when it was taken.
        agent: the driver's name (e.g. ``claude``, ``worker``).
        tool: ``claude``, ``codex``, ``opencode`` or ``pi`` (``ssa classify`` sources).
        kind: one of this module's constants.
        text: text the tool should write for it (a typed prompt, a command
            marker), or ``None``.
        human: ground truth: a row holding ``text`` is a person's typing.
        detail: anything else worth keeping (the slash command, the tool call).
    """

    seq: int
    at_ms: int
    agent: str
    tool: str
    kind: str
    text: str | None
    human: bool
    detail: Mapping[str, Any] = field(default_factory=dict)


class ActionLog:
    """An append-only, thread-safe list of :class:`Action` (one per harness)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._actions: list[Action] = []

    def record(self, agent: str, tool: str, kind: str, text: str | None = None, *,
               human: bool = False, **detail: Any) -> Action:
        """Append one action and return it (never blocks beyond a lock)."""
        with self._lock:
            action = Action(len(self._actions) + 1, time.time_ns() // 1_000_000, agent, tool,
                            kind, text, human, detail)
            self._actions.append(action)
            return action

    def actions(self, *, agent: str | None = None, tool: str | None = None) -> list[Action]:
        """The actions so far, optionally only one agent's or one tool's."""
        with self._lock:
            return [a for a in self._actions
                    if (agent is None or a.agent == agent) and (tool is None or a.tool == tool)]
