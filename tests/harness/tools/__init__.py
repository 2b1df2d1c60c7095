"""Per-tool profiles: config, command lines, screens, transcripts of each coding agent."""

from __future__ import annotations

from tests.harness.tools._base import AgentTool, DecidedRow, jsonl_rows, string_values
from tests.harness.tools.aider import Aider
from tests.harness.tools.claude import ClaudeCode
from tests.harness.tools.codex import Codex
from tests.harness.tools.gemini import GeminiCli
from tests.harness.tools.opencode import OpenCode
from tests.harness.tools.pi import Pi
from tests.harness.tools.qwen import QwenCode

__all__ = [
    "TOOLS",
    "AgentTool",
    "Aider",
    "ClaudeCode",
    "Codex",
    "DecidedRow",
    "GeminiCli",
    "OpenCode",
    "Pi",
    "QwenCode",
    "jsonl_rows",
    "string_values",
    "tool_named",
]

TOOLS: dict[str, AgentTool] = {"claude": ClaudeCode(), "codex": Codex(),
                               "opencode": OpenCode(), "pi": Pi(), "aider": Aider(),
                               "gemini": GeminiCli(), "qwen": QwenCode()}
"""Every profile by its ``ssa classify`` source name."""


def tool_named(name: str | AgentTool) -> AgentTool:
    """The profile called ``name`` (a profile is returned as is).

    Raises:
        KeyError: an unknown tool name.
    """
    return name if isinstance(name, AgentTool) else TOOLS[name]
