"""Pi (``@mariozechner/pi-coding-agent``) against the fake Chat Completions server.

Config, merged into ``$PI_CODING_AGENT_DIR`` (``~/.pi/agent``):

* ``models.json``: provider ``harness`` with ``api: "openai-completions"``,
  ``baseUrl`` the fake server's ``/v1``, a dummy ``apiKey``, ``compat``
  without the developer role or reasoning effort, one model
  (:data:`MODEL_ID`, no reasoning, 128k context).
* ``settings.json``: ``defaultProvider``/``defaultModel`` the harness model,
  ``quietStartup``, ``enableInstallTelemetry: false``.
* Environment: ``PI_OFFLINE=1`` (no update, package or telemetry traffic; Pi
  then prints "fd not found. Offline mode enabled, skipping download." and
  works without fd and ripgrep), ``PI_SKIP_VERSION_CHECK=1``, ``PI_TELEMETRY=0``.

The TUI takes input only once its footer (the model id and the context
gauge) is drawn: keys typed earlier are echoed and then dropped.

Transcripts: ``~/.pi/agent/sessions/--<cwd slug>--/<time>_<id>.jsonl``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from tests.harness.home import Home, merge_json
from tests.harness.install import AgentInstall
from tests.harness.models import MODEL_ID, FakeModelServer
from tests.harness.script import ToolUse
from tests.harness.tools._base import AgentTool

__all__ = ["Pi"]

PROVIDER = "harness"


class Pi(AgentTool):
    """Pi 0.73.1 (see the module docstring)."""

    name = "pi"
    api = "chat"
    binary = "pi"
    version = "0.73.1"
    quit_keys: ClassVar[tuple[tuple[str, ...], ...]] = (("C-c",), ("C-c",))

    @staticmethod
    def agent_dir(home: Home) -> Path:
        """``~/.pi/agent`` (``models.json``, ``settings.json``, ``extensions/``, ``sessions/``)."""
        return home.root / ".pi" / "agent"

    def configure(self, home: Home, project: Path, model: FakeModelServer) -> None:
        """Merge the provider into models.json and the defaults into settings.json."""
        agent = self.agent_dir(home)
        merge_json(agent / "models.json", {"providers": {PROVIDER: {
            "baseUrl": f"{model.base_url}/v1", "api": "openai-completions",
            "apiKey": "sk-harness-dummy",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": MODEL_ID, "name": "Harness model", "reasoning": False,
                        "input": ["text"], "contextWindow": 128000, "maxTokens": 8192,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}],
        }}})
        merge_json(agent / "settings.json", {
            "defaultProvider": PROVIDER, "defaultModel": MODEL_ID, "quietStartup": True,
            "enableInstallTelemetry": False})

    def extra_env(self, home: Home, model: FakeModelServer) -> Mapping[str, str]:
        """Offline mode, no version check, no telemetry."""
        return {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}

    def tui_argv(self, install: AgentInstall, model: FakeModelServer, args: Sequence[str]
                 ) -> list[str]:
        """``pi [args]``."""
        return [str(install.binary("pi")), *args]

    def program_argv(self, install: AgentInstall, model: FakeModelServer, prompt: str,
                     args: Sequence[str]) -> list[str]:
        """``pi -p [args] PROMPT`` (print mode)."""
        return [str(install.binary("pi")), "-p", *args, prompt]

    def ready(self, screen: str) -> bool:
        """The footer shows the model id and the context gauge (``/128k``)."""
        return MODEL_ID in screen and "/128k" in screen

    def busy(self, screen: str) -> bool:
        """The working line says ``Working...`` (older builds: ``(escape to interrupt)``)."""
        return "to interrupt)" in screen or "Working..." in screen

    def shell(self, command: str) -> ToolUse:
        """A ``bash`` tool call."""
        return ToolUse("bash", {"command": command})

    def continuations(self, original: Path) -> dict[str, tuple[str, list[str]]]:
        """``pi --fork FILE``: a new session file (header ``parentSession``) with copies
        (``--continue`` and ``--session`` append to the session's own file)."""
        return {"fork": ("fork", ["--fork", str(original)])}

    def elsewhere(self, home: Home, original: Path) -> Path:
        """Another project's folder under ``~/.pi/agent/sessions/``."""
        return self.agent_dir(home) / "sessions" / "--elsewhere-worktree--" / original.name

    def transcripts(self, home: Home, project: Path | None = None) -> list[Path]:
        """Session files, oldest first; ``project`` filters by the header's ``cwd``."""
        found = sorted((self.agent_dir(home) / "sessions").glob("*/*.jsonl"))
        if project is not None:
            found = [p for p in found if _cwd(p) in (None, str(project))]
        return found

    def row_kind(self, row: Mapping[str, Any]) -> str:
        """``type``, with the message's role after a colon (``message:user``)."""
        message = row.get("message")
        if row.get("type") == "message" and isinstance(message, dict):
            return f"message:{message.get('role')}"
        return str(row.get("type", "?"))


def _cwd(path: Path) -> str | None:
    with path.open(encoding="utf-8", errors="replace") as handle:
        first = handle.readline()
    try:
        row = json.loads(first)
    except ValueError:
        return None
    cwd = row.get("cwd") if isinstance(row, dict) else None
    return cwd if isinstance(cwd, str) else None
