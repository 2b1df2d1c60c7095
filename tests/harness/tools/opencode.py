"""OpenCode (``opencode-ai``) against the fake Chat Completions server.

Config, merged into ``$XDG_CONFIG_HOME/opencode/opencode.json``:

* ``provider.harness``: ``npm: "@ai-sdk/openai-compatible"`` (bundled in
  1.18: nothing is installed for it), ``options.baseURL`` the fake server's
  ``/v1``, a dummy ``apiKey``, one model (:data:`MODEL_ID`) with tool calls;
  ``model`` and ``small_model`` both ``harness/harness-model`` (the title
  agent's requests come to the fake server too, as side requests).
* ``permission``: ``bash``, ``edit``, ``webfetch`` ``allow`` (no prompt for a
  scripted call); ``autoupdate: false``, ``share: "disabled"``.
* Environment: ``OPENCODE_DISABLE_MODELS_FETCH``, ``_AUTOUPDATE``,
  ``_LSP_DOWNLOAD``, ``_SHARE``, ``_TERMINAL_TITLE`` set to 1.
* Config directories (``$XDG_CONFIG_HOME/opencode`` and a project's
  ``.opencode``): OpenCode installs ``@opencode-ai/plugin`` into each one
  with npm's Arborist, in the background, under a cross-process lock
  (``npm-install:<dir>``), and loads plugins only after that install
  (``Config.waitForDependencies``). A TUI quit while the install runs leaves
  the next start waiting for it: a reopened TUI drew nothing for 90 s (CI,
  stop 30). :func:`seed_dependencies` writes the ``package.json``,
  ``package-lock.json`` and ``node_modules`` that make OpenCode's check find
  the package already there, so no install (and no lock) happens; nothing
  the harness or ssa's plugin loads imports that package.

Two OpenCode processes sharing a home read the same opencode.json, so they
talk to the same fake server (the first one configured) unless a test passes
its own ``OPENCODE_CONFIG``.

Transcripts: one store for every session, ``$XDG_DATA_HOME/opencode/opencode.db``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import apsw
import msgspec

from actors.upstream.classify import classify_units
from actors.upstream.opencode.store import open_opencode_db
from tests.harness.home import Home, merge_json
from tests.harness.install import AgentInstall
from tests.harness.models import MODEL_ID, FakeModelServer
from tests.harness.script import ToolUse
from tests.harness.tools._base import AgentTool, DecidedRow, string_values

__all__ = ["OpenCode", "seed_dependencies"]

PROVIDER = "harness"


class OpenCode(AgentTool):
    """OpenCode 1.18.33 (see the module docstring)."""

    name = "opencode"
    api = "chat"
    binary = "opencode"
    version = "1.18.33"
    quit_keys: ClassVar[tuple[tuple[str, ...], ...]] = (("C-c",), ("C-c",))
    startup_timeout_s: ClassVar[float] = 90.0  # 20-30 s on two busy cores
    turn_timeout_s: ClassVar[float] = 60.0  # its first turn took 12-16 s there

    @staticmethod
    def config_path(home: Home) -> Path:
        """``$XDG_CONFIG_HOME/opencode/opencode.json`` (plugins, MCP servers go here too)."""
        return home.config / "opencode" / "opencode.json"

    @staticmethod
    def db_path(home: Home) -> Path:
        """``$XDG_DATA_HOME/opencode/opencode.db``."""
        return home.data / "opencode" / "opencode.db"

    def configure(self, home: Home, project: Path, model: FakeModelServer) -> None:
        """Merge the provider, the model choice and the permissions into opencode.json;
        seed the config directories' dependencies (see :func:`seed_dependencies`)."""
        merge_json(self.config_path(home), {
            "$schema": "https://opencode.ai/config.json",
            "provider": {PROVIDER: {
                "npm": "@ai-sdk/openai-compatible", "name": "Harness",
                "options": {"baseURL": f"{model.base_url}/v1", "apiKey": "sk-harness-dummy"},
                "models": {MODEL_ID: {"name": "Harness model", "tool_call": True}}}},
            "model": f"{PROVIDER}/{MODEL_ID}", "small_model": f"{PROVIDER}/{MODEL_ID}",
            "autoupdate": False, "share": "disabled",
            "permission": {"bash": "allow", "edit": "allow", "webfetch": "allow"},
        })
        seed_dependencies(self.config_path(home).parent, self.version)
        if (project / ".opencode").is_dir():
            seed_dependencies(project / ".opencode", self.version)

    def extra_env(self, home: Home, model: FakeModelServer) -> Mapping[str, str]:
        """No models.dev fetch, no update, LSP download, sharing or terminal title."""
        return {"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
                "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_SHARE": "1",
                "OPENCODE_DISABLE_TERMINAL_TITLE": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1"}

    def tui_argv(self, install: AgentInstall, model: FakeModelServer, args: Sequence[str]
                 ) -> list[str]:
        """``opencode [args]``."""
        return [str(install.binary("opencode")), *args]

    def program_argv(self, install: AgentInstall, model: FakeModelServer, prompt: str,
                     args: Sequence[str]) -> list[str]:
        """``opencode run [args] PROMPT``."""
        return [str(install.binary("opencode")), "run", *args, prompt]

    def ready(self, screen: str) -> bool:
        """The footer's ``ctrl+p commands`` hint is drawn."""
        return "ctrl+p commands" in screen

    def busy(self, screen: str) -> bool:
        """The footer says ``esc interrupt`` while a turn runs."""
        return "esc interrupt" in screen

    def shell(self, command: str) -> ToolUse:
        """A ``bash`` tool call."""
        return ToolUse("bash", {"command": command, "description": "harness shell command"})

    def subagent(self, prompt: str, description: str = "harness sub-agent") -> ToolUse:
        """A ``task`` tool call (``general`` sub-agent; a child session)."""
        return ToolUse("task", {"description": description, "prompt": prompt,
                                "subagent_type": "general"})

    def mcp_tool(self, server: str, tool: str) -> str:
        """``<server>_<tool>``."""
        return f"{server}_{tool}"

    fixed_prompts: ClassVar[Mapping[str, str]] = {
        "/init": "Create or update `AGENTS.md` for this repository."}
    """``/init`` (the init command's template, 1.18.33)."""
    command_enter: ClassVar[tuple[str, ...]] = ("Enter", "Enter")
    """The first Enter picks the completion, the second runs it."""

    def session_continuations(self, session: str) -> dict[str, tuple[str, list[str]]]:
        """``opencode --session ID --fork``: a new session ("<title> (fork #1)") holding
        copies of every message (``--continue`` and ``--session`` alone append)."""
        return {"session-fork": ("fork", ["--session", session, "--fork"])}

    def delete_session(self, install: AgentInstall, home: Home, model: FakeModelServer,
                       session: str) -> None:
        """``opencode session delete ID`` (its messages and parts go with it)."""
        argv = [str(install.binary("opencode")), "session", "delete", session]
        done = subprocess.run(argv, env=self.env(home, model, install), cwd=home.root,
                              capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: "
                               f"{(done.stdout + done.stderr)[-500:]}")

    def transcripts(self, home: Home, project: Path | None = None) -> list[Path]:
        """The store, when it exists (it holds every session)."""
        path = self.db_path(home)
        return [path] if path.exists() else []

    def sessions(self, path: Path, project: Path | None = None) -> list[str]:
        """The store's session ids (parents before children), ``project``'s only when given."""
        conn = open_opencode_db(path)
        try:
            rows = conn.execute("SELECT id, directory FROM session "
                                "ORDER BY parent_id IS NOT NULL, time_created, id").fetchall()
        finally:
            conn.close()
        return [str(i) for i, d in rows if project is None or d == str(project)]

    def decide(self, path: Path, project: Path | None = None) -> list[DecidedRow]:
        """Every message of every session (``project``'s only) through ``ssa classify``."""
        texts = _message_texts(path)
        out: list[DecidedRow] = []
        for session in self.sessions(path, project):
            for unit in classify_units("opencode", str(path), session=session):
                message = str(unit["message"])
                role, strings = texts.get(message, ("?", ()))
                out.append(DecidedRow("opencode", path, message, session, bool(unit["human"]),
                                      str(unit["reason"]), f"message:{role}", strings))
        return out


def seed_dependencies(directory: Path, version: str) -> None:
    """Make OpenCode's dependency check pass in config ``directory`` without an install.

    OpenCode 1.18's ``Npm.install`` runs Arborist only when ``node_modules`` is
    missing or ``package.json`` names a package that ``package-lock.json``'s
    root entry lacks; this writes both files naming ``@opencode-ai/plugin`` at
    ``version`` and an empty ``node_modules``. Files already there are kept.
    Runs on the test's thread; blocks on file I/O only.

    Raises:
        OSError: the files cannot be written.
    """
    deps = {"@opencode-ai/plugin": version}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "node_modules").mkdir(exist_ok=True)
    for name, content in (("package.json", {"dependencies": deps}),
                          ("package-lock.json", {"lockfileVersion": 3, "requires": True,
                                                 "packages": {"": {"dependencies": deps}}})):
        path = directory / name
        if not path.exists():
            path.write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")


def _message_texts(path: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    """message id -> (role, every string of the message and its parts)."""
    conn = open_opencode_db(path)
    try:
        messages = conn.execute("SELECT id, data FROM message").fetchall()
        parts = conn.execute("SELECT message_id, data FROM part ORDER BY id").fetchall()
    except apsw.Error:
        conn.close()
        raise
    conn.close()
    out: dict[str, tuple[str, list[str]]] = {}
    for message_id, data in messages:
        row: Any = _json(data)
        role = str(row.get("role", "?")) if isinstance(row, dict) else "?"
        out[str(message_id)] = (role, list(string_values(row)))
    for message_id, data in parts:
        if str(message_id) in out:
            out[str(message_id)][1].extend(string_values(_json(data)))
    return {k: (role, tuple(strings)) for k, (role, strings) in out.items()}


def _json(data: Any) -> Any:
    try:
        return msgspec.json.decode(data if isinstance(data, (bytes, str)) else b"null")
    except msgspec.DecodeError:
        return None
