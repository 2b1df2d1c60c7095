"""Qwen Code (``@qwen-code/qwen-code``) against the fake Chat Completions server.

Config, merged into ``~/.qwen/settings.json``:

* ``security.auth.selectedType: "openai"`` with ``OPENAI_API_KEY``,
  ``OPENAI_BASE_URL`` (the fake server's ``/v1``) and ``OPENAI_MODEL``
  (:data:`MODEL_ID`) in the environment: no auth dialog;
* ``security.folderTrust.enabled: false``, ``privacy.usageStatisticsEnabled:
  false``, ``telemetry.enabled: false``, ``general.enableAutoUpdate: false``;
* ``memory.enableManagedAutoMemory/AutoDream/AutoSkill: false``: otherwise, after a
  turn, a background memory-extraction agent sends a request that offers tools
  (six of them) and takes the next scripted answer;
* ``ui.enableFollowupSuggestions: false``: otherwise, after a turn, the follow-up
  suggestion request (it offers the tools too) takes the next scripted answer and the
  TUI shows it as ghost text in the input box, hiding the empty box's placeholder;
  ``ui.enableUserFeedback: false``: no feedback dialog after a conversation.

Tools run without confirmation (``--approval-mode yolo``).

Transcripts: ``~/.qwen/projects/<cwd with every non-alphanumeric character
replaced by "-">/chats/<session id>.jsonl``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from actors.upstream.qwen import classify as up
from tests.harness.home import Home, merge_json
from tests.harness.install import AgentInstall
from tests.harness.models import MODEL_ID, FakeModelServer
from tests.harness.script import ToolUse
from tests.harness.tools._base import AgentTool, DecidedRow, string_values

__all__ = ["QwenCode"]


class QwenCode(AgentTool):
    """Qwen Code 0.24.4 (see the module docstring)."""

    name = "qwen"
    api = "chat"
    binary = "qwen"
    version = "0.24.4"
    startup_timeout_s: ClassVar[float] = 60.0
    quit_keys: ClassVar[tuple[tuple[str, ...], ...]] = (("C-c",), ("C-c",))

    @staticmethod
    def settings_path(home: Home) -> Path:
        """``~/.qwen/settings.json``."""
        return home.root / ".qwen" / "settings.json"

    def configure(self, home: Home, project: Path, model: FakeModelServer) -> None:
        """Merge auth, trust, telemetry and update settings into settings.json."""
        merge_json(self.settings_path(home), {
            "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False},
            "ide": {"enabled": False},
            "ui": {"enableFollowupSuggestions": False, "enableUserFeedback": False},
            "model": {"name": MODEL_ID},
            "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False,
                       "enableAutoSkill": False},
        })

    def extra_env(self, home: Home, model: FakeModelServer) -> Mapping[str, str]:
        """The OpenAI-compatible endpoint, key and model."""
        return {"OPENAI_API_KEY": "sk-harness-dummy", "OPENAI_BASE_URL": f"{model.base_url}/v1",
                "OPENAI_MODEL": MODEL_ID, "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"}

    def tui_argv(self, install: AgentInstall, model: FakeModelServer, args: Sequence[str]
                 ) -> list[str]:
        """``qwen --approval-mode yolo [args]``."""
        return [str(install.binary("qwen")), "--approval-mode", "yolo", *args]

    def program_argv(self, install: AgentInstall, model: FakeModelServer, prompt: str,
                     args: Sequence[str]) -> list[str]:
        """``qwen --approval-mode yolo [args] -p PROMPT``."""
        return [str(install.binary("qwen")), "--approval-mode", "yolo", *args, "-p", prompt]

    def ready(self, screen: str) -> bool:
        """The input box's placeholder."""
        return "Type your message" in screen

    def busy(self, screen: str) -> bool:
        """The status line offers ``esc to cancel``."""
        return "esc to cancel" in screen

    def shell(self, command: str) -> ToolUse:
        """A ``run_shell_command`` call."""
        return ToolUse("run_shell_command", {"command": command})

    def subagent(self, prompt: str, description: str = "harness sub-agent", *,
                 background: bool = False) -> ToolUse:
        """An ``agent`` call of the built-in ``general-purpose`` agent.

        Args:
            prompt: the sub-agent's prompt.
            description: the call's ``description``.
            background: ``run_in_background``. 0.24.4 runs a top-level agent in the
                background when the call does not say (``AgentTool``, the
                ``RUN_IN_BACKGROUND_DESCRIPTION`` of ``chunks/chunk-DPEB6S2R.js``): the
                parent's turn goes on at once (its next request races the sub-agent's
                first) and the result comes back later as a ``user`` ``notification``
                record that starts a turn of its own. ``False`` (the default) runs it in
                the foreground: the answers go parent call, sub-agent, parent, in order.

        Returns:
            The scripted call.
        """
        return ToolUse("agent", {"description": description, "prompt": prompt,
                                 "subagent_type": "general-purpose",
                                 "run_in_background": background})

    fixed_prompts: ClassVar[Mapping[str, str]] = {
        "/init": "You are Qwen Code, an interactive CLI agent. Analyze the current directory"
                 " and generate a comprehensive"}
    """``/init`` (the init command's ``submit_prompt``, 0.24.4 bundle)."""

    def continuations(self, original: Path) -> dict[str, tuple[str, list[str]]]:
        """``qwen --continue --fork-session``: a new file of copies, each carrying
        ``forkedFrom`` (``--continue`` and ``--resume`` alone append)."""
        return {"continue-fork": ("continue", ["--continue", "--fork-session"])}

    def elsewhere(self, home: Home, original: Path) -> Path:
        """Another project's folder (``~/.qwen/projects/-elsewhere-worktree/chats/``)."""
        return home.root / ".qwen" / "projects" / "-elsewhere-worktree" / "chats" / original.name

    def move_elsewhere(self, home: Home, original: Path) -> Path:
        """The session file and its interactive UI's ``<id>.runtime.json`` beside it (the
        reader tells a TUI session from ``qwen -p`` by that sidecar)."""
        sidecar = original.with_name(f"{original.stem}.runtime.json")
        target = super().move_elsewhere(home, original)
        if sidecar.exists():
            sidecar.rename(target.with_name(sidecar.name))
        return target

    def transcripts(self, home: Home, project: Path | None = None) -> list[Path]:
        """Session files (sub-agents' too), oldest first."""
        root = home.root / ".qwen" / "projects"
        dirs = [root / _slug(project)] if project is not None else \
            [p for p in root.glob("*") if p.is_dir()]
        found: list[Path] = []
        for d in dirs:
            found += sorted((d / "chats").glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
            found += sorted((d / "subagents").glob("**/*.jsonl"))
            found += sorted((d / "chats").glob("*/**/*.jsonl"))
        return found

    def decide(self, path: Path, project: Path | None = None) -> list[DecidedRow]:
        """Every line decided by :func:`actors.upstream.qwen.classify.read_qwen_rows`, with the
        session's refusal applied as ``ssa classify`` does."""
        data = path.read_bytes()
        lines = data.split(b"\n")
        scan = up.read_qwen_rows(data)
        try:
            named = up.runtime_status_session(up.runtime_status_path(path).read_bytes())
        except OSError:
            named = None
        interactive = named is not None and named == scan.cursor.session.session_id
        refusal = up.qwen_refusal(scan.cursor.session, interactive,
                                  has_prompt=any(r.typed for r in scan.rows))
        out: list[DecidedRow] = []
        for row in scan.rows:
            typed, reason = row.typed, row.reason
            if refusal is not None:
                typed, reason = False, f"not_monitored: {refusal} ({reason})"
            try:
                value: Any = json.loads(lines[row.line])
            except ValueError:
                value = None
            out.append(DecidedRow(self.name, path, row.line, None, typed, reason, row.kind,
                                  tuple(string_values(value))))
        return out

    def row_kind(self, row: Mapping[str, Any]) -> str:
        """``type`` with ``:subtype`` when there is one."""
        return up.row_kind(row)


def _slug(project: Path) -> str:
    return re.sub(r"[^a-zA-Z0-9]", "-", str(project))
