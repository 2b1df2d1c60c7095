"""Codex (``@openai/codex``) against the fake OpenAI Responses server.

Config, merged into ``~/.codex/config.toml`` with tomlkit (a test's own
tables, e.g. ``[mcp_servers.x]`` or hooks, stay):

* ``model_provider = "harness"`` and ``[model_providers.harness]`` with
  ``wire_api = "responses"`` (the only value 0.169 accepts) and
  ``env_key = "HARNESS_API_KEY"``: a custom provider needs no login, so no
  onboarding screen appears. Its ``base_url`` is also passed per process
  (``-c model_providers.harness.base_url=...``), so two Codex processes
  sharing a home can talk to different fake servers.
* ``[projects."<project>"] trust_level = "trusted"``: no trust dialog.
* ``approval_policy = "never"``, ``sandbox_mode = "danger-full-access"``
  (scripted commands run without a prompt or bubblewrap), and
  ``[notice] hide_full_access_warning = true``.
* ``check_for_update_on_startup = false``; ``disable_paste_burst = true``:
  without it the composer takes quickly typed text plus Enter for a paste and
  inserts a newline instead of submitting.

Transcripts: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` (``CODEX_HOME``
is ``~/.codex``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import tomlkit

from tests.harness.home import Home, write_private
from tests.harness.install import AgentInstall
from tests.harness.models import FakeModelServer
from tests.harness.script import ToolUse
from tests.harness.tools._base import AgentTool

__all__ = ["PROVIDER", "Codex"]

PROVIDER = "harness"
"""The ``model_providers`` id the harness configures."""
API_KEY_ENV = "HARNESS_API_KEY"
MODEL = "gpt-5.4"


class Codex(AgentTool):
    """Codex 0.171.0 (see the module docstring: a note names the version it was seen in)."""

    name = "codex"
    api = "responses"
    binary = "codex"
    version = "0.171.0"
    quit_keys: ClassVar[tuple[tuple[str, ...], ...]] = (("C-c",), ("C-c",))

    @staticmethod
    def config_path(home: Home) -> Path:
        """``~/.codex/config.toml``."""
        return home.root / ".codex" / "config.toml"

    def configure(self, home: Home, project: Path, model: FakeModelServer) -> None:
        """Merge the provider, the project's trust and the quiet settings into config.toml."""
        path = self.config_path(home)
        doc = tomlkit.parse(path.read_text()) if path.exists() else tomlkit.document()
        for key, value in (("model", MODEL), ("model_provider", PROVIDER),
                           ("approval_policy", "never"), ("sandbox_mode", "danger-full-access"),
                           ("check_for_update_on_startup", False),
                           ("disable_paste_burst", True)):
            doc[key] = value
        providers = _table(doc, "model_providers")
        providers[PROVIDER] = {"name": "Harness fake model", "base_url": f"{model.base_url}/v1",
                               "env_key": API_KEY_ENV, "wire_api": "responses"}
        _table(_table(doc, "projects"), str(project))["trust_level"] = "trusted"
        _table(doc, "notice")["hide_full_access_warning"] = True
        write_private(path, tomlkit.dumps(doc))

    def extra_env(self, home: Home, model: FakeModelServer) -> Mapping[str, str]:
        """The dummy key under the provider's ``env_key``."""
        return {API_KEY_ENV: "sk-harness-dummy", "CODEX_HOME": str(home.root / ".codex")}

    def _overrides(self, model: FakeModelServer) -> list[str]:
        return ["-c", f'model_providers.{PROVIDER}.base_url="{model.base_url}/v1"']

    def tui_argv(self, install: AgentInstall, model: FakeModelServer, args: Sequence[str]
                 ) -> list[str]:
        """``codex -c model_providers.harness.base_url=... [args]``."""
        return [str(install.binary("codex")), *self._overrides(model), *args]

    def program_argv(self, install: AgentInstall, model: FakeModelServer, prompt: str,
                     args: Sequence[str]) -> list[str]:
        """``codex exec --skip-git-repo-check -c ... [args] PROMPT``."""
        return [str(install.binary("codex")), "exec", "--skip-git-repo-check",
                *self._overrides(model), *args, prompt]

    def ready(self, screen: str) -> bool:
        """The composer line (``\\u203a``) and the shortcuts hint are drawn."""
        return "\u203a" in screen and "for shortcuts" in screen

    def busy(self, screen: str) -> bool:
        """The status line says ``esc to interrupt``."""
        return "esc to interrupt" in screen

    def shell(self, command: str) -> ToolUse:
        """An ``exec_command`` call (unified exec)."""
        return ToolUse("exec_command", {"cmd": command})

    def subagent(self, prompt: str, description: str = "harness sub-agent") -> ToolUse:
        """A ``spawn_agent`` call (in the ``multi_agent_v1`` namespace)."""
        return ToolUse("spawn_agent", {"message": prompt})

    def mcp_tool(self, server: str, tool: str) -> str:
        """``mcp__<server>__<tool>``."""
        return f"mcp__{server}__{tool}"

    fixed_prompts: ClassVar[Mapping[str, str]] = {
        "/init": "Generate a file named AGENTS.md that serves as a contributor guide",
        "/review": "Review the current code changes",
        "plan popup": "Implement the plan."}
    """``/init`` (``codex-rs/tui/prompt_for_init_command.md``); ``/review``'s "Review
    uncommitted changes" preset (a menu choice); the plan popup's "Yes, implement this
    plan" (``PLAN_IMPLEMENTATION_CODING_MESSAGE``)."""

    def send_fixed_prompt(self, agent: Any, command: str, answer: Any) -> None:
        """``/init`` as a slash command; ``/review``: an uncommitted change, the menu, its
        second preset; ``plan popup``: ``/plan``, a typed planning prompt answered with a
        ``<proposed_plan>``, then Enter on "Yes, implement this plan"."""
        from tests.harness import actions as act
        from tests.harness.script import Text
        marker = self.fixed_prompts[command]
        if command == "/review":
            (agent.project / "README.md").write_text("an uncommitted change\n")
            agent.script(answer)
            agent.slash("/review", kind=act.FIXED_PROMPT, text=marker)
            agent.pane.wait_text("Select a review preset", 10)
            agent.keys("Down")
            agent.pane.wait_quiet(0.3, 5)
            agent.keys("Enter")
        elif command == "plan popup":
            agent.slash("/plan", text=None)
            agent.script(Text("Here is the plan.\n<proposed_plan>\n# Plan\n- step one\n"
                              "</proposed_plan>\n"))
            agent.type("make a plan for the harness")
            agent.pane.wait_screen(lambda s: "Implement this plan?" in s, self.turn_timeout_s,
                                   "the plan popup")
            agent.script(answer)
            agent.keys("Enter")  # 1. Yes, implement this plan
            agent.record(act.FIXED_PROMPT, marker, choice="Yes, implement this plan")
        else:
            super().send_fixed_prompt(agent, command, answer)

    def continuations(self, original: Path) -> dict[str, tuple[str, list[str]]]:
        """``codex fork --last``: a new rollout (``codex resume`` appends to the
        session's own file)."""
        return {"fork": ("fork", ["fork", "--last"])}

    continuation_copies: ClassVar[bool] = False
    """0.171.0's fork rollout names its original (``session_meta.forked_from_id``,
    ``forked_from_ordinal_exclusive``) and copies none of its rows."""

    def elsewhere(self, home: Home, original: Path) -> Path:
        """``~/.codex/archived_sessions/`` (where Codex's own archive moves a rollout)."""
        return home.root / ".codex" / "archived_sessions" / original.name

    def transcripts(self, home: Home, project: Path | None = None) -> list[Path]:
        """Rollout files, oldest first; ``project`` filters by ``session_meta.cwd``."""
        found = sorted((home.root / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl"))
        if project is not None:
            found = [p for p in found if _cwd(p) in (None, str(project))]
        return found

    def row_kind(self, row: Mapping[str, Any]) -> str:
        """``type:payload.type`` (``event_msg:user_message``, ``response_item:message``...)."""
        payload = row.get("payload")
        inner = payload.get("type") if isinstance(payload, dict) else None
        return f"{row.get('type')}:{inner}" if inner else str(row.get("type"))


def _table(parent: Any, key: str) -> Any:
    if key not in parent:
        parent[key] = tomlkit.table()
    return parent[key]


def _cwd(path: Path) -> str | None:
    with path.open(encoding="utf-8", errors="replace") as handle:
        first = handle.readline()
    try:
        row = json.loads(first)
    except ValueError:
        return None
    payload = row.get("payload") if isinstance(row, dict) else None
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    return cwd if isinstance(cwd, str) else None
