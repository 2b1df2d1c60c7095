"""The coding agents ``ssa`` integrates with: one package per tool, one registry line each.

A tool's package holds its :class:`~actors.agents.tools.base.AgentTool` (the
hook input's defaults, the output form, its push path) and its ``install``
module (the files ``ssa install`` changes); OpenCode's plugin and Pi's
extension sit beside them as package data. Adding a tool is one new package
and one line in :data:`TOOLS`. Light: ``ssa hook`` imports this at every
prompt.
"""

from __future__ import annotations

from actors.agents.tools import claude_code, codex, gemini, opencode, pi, qwen
from actors.agents.tools.base import AgentTool

__all__ = ["TOOLS", "AgentTool", "tool_named", "tool_of_source"]

TOOLS: dict[str, AgentTool] = {
    tool.name: tool for tool in (
        claude_code.TOOL,
        codex.TOOL,
        opencode.TOOL,
        pi.TOOL,
        gemini.TOOL,
        qwen.TOOL,
    )
}
"""Every tool, by ``ssa hook``/``ssa install`` name."""


def tool_named(name: str) -> AgentTool | None:
    """The tool called ``name``, or ``None``. Pure."""
    return TOOLS.get(name)


def tool_of_source(source: str) -> AgentTool | None:
    """The tool whose sessions are read as upstream ``source``, or ``None``. Pure."""
    return next((tool for tool in TOOLS.values() if tool.source == source), None)
