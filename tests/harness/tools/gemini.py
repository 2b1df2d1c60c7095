"""Gemini CLI (``@google/gemini-cli``) against the fake Gemini API server.

Config, merged into ``~/.gemini/settings.json`` (the user settings file,
``packages/cli/src/config/settingsSchema.ts`` in the 0.61.0 bundle,
``bundle/chunk-2YTYPKEZ.js``):

* ``security.auth.selectedType: "gemini-api-key"`` with ``GEMINI_API_KEY`` in
  the environment: no auth dialog. ``GOOGLE_GEMINI_BASE_URL`` points the
  ``@google/genai`` client at the fake server (``createContentGenerator``
  reads it when the config has no base URL, ``bundle/chunk-JDPZ4CE3.js``).
* ``security.folderTrust.enabled: false``: no trust dialog.
* ``privacy.usageStatisticsEnabled: false``, ``telemetry.enabled: false``,
  ``general.enableAutoUpdate*: false``: no Clearcut, OTLP or npm traffic.
* ``ui.hideTips``/``hideBanner``, ``ui.showHomeDirectoryWarning: false``,
  ``ide.enabled: false``: a quiet first screen.
* ``model.name``: :data:`GEMINI_MODEL` (also ``-m``), so no model router
  (``auto``) request precedes a turn.

Tools run without confirmation: the TUI is started with ``--approval-mode
yolo`` (shell commands would otherwise wait for a dialog).

Transcripts: ``~/.gemini/tmp/<project id>/chats/session-<YYYY-MM-DDTHH-MM>-<first
8 hex of the session id>.jsonl``; a sub-agent's in ``chats/<parent session
id>/<agent session id>.jsonl``. The project id is the short name
``~/.gemini/projects.json`` maps the project root to (its base name, made unique).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from actors.upstream.gemini import classify as up
from tests.harness.home import Home, merge_json
from tests.harness.install import AgentInstall
from tests.harness.models import GEMINI_MODEL, FakeModelServer
from tests.harness.script import ToolUse
from tests.harness.tools._base import AgentTool, DecidedRow, string_values

__all__ = ["GeminiCli", "decide_jsonl"]

API_KEY = "harness-gemini-key"


class GeminiCli(AgentTool):
    """Gemini CLI 0.61.0 (see the module docstring)."""

    name = "gemini"
    api = "gemini"
    binary = "gemini"
    version = "0.61.0"
    startup_timeout_s: ClassVar[float] = 60.0
    ready_quiet_s: ClassVar[float] = 2.0
    """0.61.0 draws its first frame, then (a second later under load, more on
    ``--resume``) clears and redraws it; keys typed in between are lost."""
    quit_keys: ClassVar[tuple[tuple[str, ...], ...]] = (("C-c",), ("C-c",))

    @staticmethod
    def settings_path(home: Home) -> Path:
        """``~/.gemini/settings.json``."""
        return home.root / ".gemini" / "settings.json"

    def configure(self, home: Home, project: Path, model: FakeModelServer) -> None:
        """Merge auth, trust, telemetry, update and UI settings into settings.json."""
        merge_json(self.settings_path(home), {
            "security": {"auth": {"selectedType": "gemini-api-key"},
                         "folderTrust": {"enabled": False}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "ui": {"hideTips": True, "hideBanner": True, "showHomeDirectoryWarning": False},
            "ide": {"enabled": False},
            "model": {"name": GEMINI_MODEL},
        })

    def extra_env(self, home: Home, model: FakeModelServer) -> Mapping[str, str]:
        """The key, the fake server's base URL, and no sandbox."""
        return {"GEMINI_API_KEY": API_KEY, "GOOGLE_GEMINI_BASE_URL": model.base_url,
                "GEMINI_SANDBOX": "false", "NO_BROWSER": "true"}

    def tui_argv(self, install: AgentInstall, model: FakeModelServer, args: Sequence[str]
                 ) -> list[str]:
        """``gemini -m MODEL --approval-mode yolo [args]``."""
        return [str(install.binary("gemini")), "-m", GEMINI_MODEL, "--approval-mode", "yolo",
                *args]

    def program_argv(self, install: AgentInstall, model: FakeModelServer, prompt: str,
                     args: Sequence[str]) -> list[str]:
        """``gemini -m MODEL --approval-mode yolo [args] -p PROMPT``."""
        return [str(install.binary("gemini")), "-m", GEMINI_MODEL, "--approval-mode", "yolo",
                *args, "-p", prompt]

    def ready(self, screen: str) -> bool:
        """The input box's placeholder or prompt marker and the footer's model name."""
        return "Type your message" in screen or ("> " in screen and GEMINI_MODEL in screen)

    def busy(self, screen: str) -> bool:
        """The status line offers ``esc to cancel``."""
        return "esc to cancel" in screen

    def shell(self, command: str) -> ToolUse:
        """A ``run_shell_command`` call."""
        return ToolUse("run_shell_command", {"command": command})

    def subagent(self, prompt: str, description: str = "harness sub-agent") -> ToolUse:
        """An ``invoke_agent`` call of the built-in ``generalist`` agent."""
        return ToolUse("invoke_agent", {"agent_name": "generalist", "prompt": prompt})

    fixed_prompts: ClassVar[Mapping[str, str]] = {
        "/init": "Your task is to analyze the current directory and generate a comprehensive"
                 " GEMINI.md file"}
    """``/init`` (``performInit``'s ``submit_prompt``, 0.61.0 bundle)."""

    def transcripts(self, home: Home, project: Path | None = None) -> list[Path]:
        """Session files (sub-agents' too), oldest first; ``project`` filters by the
        project id directory ``projects.json`` gives it."""
        root = home.root / ".gemini" / "tmp"
        dirs = [root / d for d in _project_ids(home, project)] if project is not None else \
            [p for p in root.glob("*") if p.is_dir()]
        found: list[Path] = []
        for d in dirs:
            found += sorted((d / "chats").glob("session-*.jsonl"))
            found += sorted((d / "chats").glob("*/*.jsonl"))
        return found

    def decide(self, path: Path, project: Path | None = None) -> list[DecidedRow]:
        """Every line decided by :func:`actors.upstream.gemini.classify.decide_rows`, with the
        session's refusal (:func:`~actors.upstream.gemini.classify.gemini_refusal`, from the
        project's ``logs.json``) applied as ``ssa classify`` does:
        ``not_monitored: <why> (<reason>)``."""
        return decide_jsonl(self.name, path, up.decide_rows, _interactive_ids(path))

    def row_kind(self, row: Mapping[str, Any]) -> str:
        """``type`` of a message row, else its marker key (``$set``, ``$rewindTo``, ``header``)."""
        return up.row_kind(row)


def decide_jsonl(tool: str, path: Path, decide: Any, interactive: frozenset[str] | None
                 ) -> list[DecidedRow]:
    """Decide every line of ``path`` with ``decide(data: bytes) -> GeminiScan`` and apply
    :func:`~actors.upstream.gemini.classify.gemini_refusal`; blocks on the read."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    out: list[DecidedRow] = []
    scan = decide(data)
    refusal = up.gemini_refusal(scan.cursor.header, interactive,
                                has_prompt=any(r.typed for r in scan.rows))
    for row in scan.rows:
        typed, reason = row.typed, row.reason
        if refusal is not None:
            typed, reason = False, f"not_monitored: {refusal} ({reason})"
        try:
            value: Any = json.loads(lines[row.line])
        except ValueError:
            value = None
        out.append(DecidedRow(tool, path, row.line, None, typed, reason, row.kind,
                              tuple(string_values(value))))
    return out


def _interactive_ids(path: Path) -> frozenset[str] | None:
    try:
        return up.interactive_session_ids(up.logs_path_for(path).read_bytes())
    except OSError:
        return None


def _project_ids(home: Home, project: Path) -> list[str]:
    registry = home.root / ".gemini" / "projects.json"
    try:
        projects = json.loads(registry.read_text())["projects"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    found = projects.get(str(project)) if isinstance(projects, dict) else None
    return [found] if isinstance(found, str) else []
