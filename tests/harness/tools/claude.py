"""Claude Code (``@anthropic-ai/claude-code``) against the fake Anthropic Messages server.

Config (merged into the throw-away home):

* ``~/.claude.json``: ``hasCompletedOnboarding``, the dummy API key approved
  (``customApiKeyResponses.approved`` holds its last 20 characters), and for
  the project ``hasTrustDialogAccepted`` / ``hasCompletedProjectOnboarding``:
  no dialog at start.
* ``~/.claude/settings.json``: ``permissions.allow`` for ``Bash`` and
  ``Agent``, so the scripted calls run without a prompt, and
  ``disableAutoMode: "disable"``: 2.1.328 starts in auto mode, whose safety
  check "runs on the server" and, through a custom base URL, stops the turn
  on a dialog ("Auto mode can't check actions in this session"); setting
  another ``defaultMode`` instead opens a "Make auto mode your default?"
  dialog. A test adds its MCP servers' tools (``mcp__<server>``) and hooks
  there itself.
* Environment: ``ANTHROPIC_BASE_URL``, a dummy ``ANTHROPIC_API_KEY``,
  ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``, ``DISABLE_AUTOUPDATER=1``,
  ``CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1`` (2.1.328 backgrounds an
  ``Agent`` call by default; the parent then goes on while the sub-agent asks
  the model, and the scripted queue would be taken in a racy order).

Transcripts: ``~/.claude/projects/<slug>/<session>.jsonl`` and sub-agents'
``<slug>/<session>/subagents/agent-*.jsonl``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from tests.harness.home import Home, merge_json
from tests.harness.install import AgentInstall
from tests.harness.models import FakeModelServer
from tests.harness.script import ToolUse
from tests.harness.tools._base import AgentTool

__all__ = ["API_KEY", "ClaudeCode"]

PROMPT_MARK = "\u276f"
"""The heavy right-pointing angle mark that starts Claude Code's input line."""
API_KEY = "sk-ant-harness-0000-dummy-key-for-tests"
"""The dummy key the harness gives Claude Code (the fake server accepts any)."""


class ClaudeCode(AgentTool):
    """Claude Code 2.1.332 (see the module docstring: a note names the version it was seen in)."""

    name = "claude"
    api = "anthropic"
    binary = "claude"
    version = "2.1.332"
    quit_keys: ClassVar[tuple[tuple[str, ...], ...]] = (("C-c",), ("C-c",))

    def configure(self, home: Home, project: Path, model: FakeModelServer) -> None:
        """Write ``~/.claude.json`` and ``~/.claude/settings.json`` (merged)."""
        merge_json(home.root / ".claude.json", {
            "hasCompletedOnboarding": True,
            "lastOnboardingVersion": self.version,
            "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
            "projects": {str(project): {"hasTrustDialogAccepted": True,
                                        "hasCompletedProjectOnboarding": True,
                                        "allowedTools": []}},
        })
        settings = self.settings_path(home)
        current = json.loads(settings.read_text()) if settings.exists() else {}
        allow = list(dict.fromkeys([*current.get("permissions", {}).get("allow", []),
                                    "Bash", "Agent"]))
        merge_json(settings, {"permissions": {"allow": allow}, "disableAutoMode": "disable"})

    @staticmethod
    def settings_path(home: Home) -> Path:
        """``~/.claude/settings.json`` (hooks, permissions, MCP tool approvals)."""
        return home.root / ".claude" / "settings.json"

    def extra_env(self, home: Home, model: FakeModelServer) -> Mapping[str, str]:
        """Base URL, dummy key, no telemetry or update checks."""
        return {"ANTHROPIC_BASE_URL": model.base_url, "ANTHROPIC_API_KEY": API_KEY,
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
                # Sub-agents run in the foreground: the parent waits, so the scripted
                # answers are taken in order (a background one races its parent).
                "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1"}

    def tui_argv(self, install: AgentInstall, model: FakeModelServer, args: Sequence[str]
                 ) -> list[str]:
        """``claude [args]``."""
        return [str(install.binary("claude")), *args]

    def program_argv(self, install: AgentInstall, model: FakeModelServer, prompt: str,
                     args: Sequence[str]) -> list[str]:
        """``claude -p PROMPT --output-format json [args]``."""
        return [str(install.binary("claude")), "-p", prompt, "--output-format", "json", *args]

    def ready(self, screen: str) -> bool:
        """The prompt box (its ``PROMPT_MARK`` line) and its footer are drawn (the footer
        names the permission mode; its key hints go while the box holds text)."""
        return PROMPT_MARK in screen and any(
            hint in screen for hint in ("shift+tab", "for shortcuts", "mode on"))

    def busy(self, screen: str) -> bool:
        """The spinner line says ``esc to interrupt``."""
        return "esc to interrupt" in screen

    def shell(self, command: str) -> ToolUse:
        """A ``Bash`` tool call."""
        return ToolUse("Bash", {"command": command, "description": "harness shell command"})

    def subagent(self, prompt: str, description: str = "harness sub-agent") -> ToolUse:
        """An ``Agent`` tool call (``general-purpose``); the sub-agent's own requests are
        main requests too and take the next scripted answers."""
        return ToolUse("Agent", {"description": description, "prompt": prompt,
                                 "subagent_type": "general-purpose"})

    def mcp_tool(self, server: str, tool: str) -> str:
        """``mcp__<server>__<tool>``."""
        return f"mcp__{server}__{tool}"

    fixed_prompts: ClassVar[Mapping[str, str]] = {
        "/init": "Please analyze this codebase and create a CLAUDE.md file"}
    """``/init`` (2.1.332; ``/review`` became the ``code-review`` plugin's, no fixed text)."""

    def continuations(self, original: Path) -> dict[str, tuple[str, list[str]]]:
        """``claude --resume ID --fork-session`` and ``claude --continue --fork-session``:
        a new file starting with copies (without ``--fork-session`` both append)."""
        return {"resume-fork": ("fork", ["--resume", original.stem, "--fork-session"]),
                "continue-fork": ("continue", ["--continue", "--fork-session"])}

    def elsewhere(self, home: Home, original: Path) -> Path:
        """Another project folder (``~/.claude/projects/-elsewhere-worktree/``): the
        conversation began in another worktree."""
        return home.root / ".claude" / "projects" / "-elsewhere-worktree" / original.name

    def transcripts(self, home: Home, project: Path | None = None) -> list[Path]:
        """Session files (sub-agents' included), oldest first; ``project`` filters by ``cwd``."""
        root = home.root / ".claude" / "projects"
        found = sorted(root.glob("*/*.jsonl")) + sorted(root.glob("*/*/subagents/*.jsonl"))
        if project is not None:
            found = [p for p in found if _cwd(p) in (None, str(project))]
        return sorted(found, key=lambda p: p.stat().st_mtime_ns)

    def row_kind(self, row: Mapping[str, Any]) -> str:
        """``type``, with the attachment's or system row's own type after a colon."""
        kind = str(row.get("type", "?"))
        attachment = row.get("attachment")
        if kind == "attachment" and isinstance(attachment, dict):
            return f"attachment:{attachment.get('type')}"
        if kind == "system" and row.get("subtype"):
            return f"system:{row['subtype']}"
        return kind


def _cwd(path: Path) -> str | None:
    """The first ``cwd`` a transcript's rows name (``None`` when none does)."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and isinstance(row.get("cwd"), str):
                return str(row["cwd"])
    return None
