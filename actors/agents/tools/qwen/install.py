"""``ssa install qwen``: the prompt hooks and the MCP server in Qwen Code's ``settings.json``.

User scope: ``$QWEN_HOME/settings.json`` (else ``~/.qwen/settings.json``);
``--project``: the project's ``.qwen/settings.json``. Both edits go into one
file in one write. Writes nothing itself.
"""

from __future__ import annotations

from pathlib import Path

from actors.agents._files import FileOp
from actors.agents.installedits import settings_transform
from actors.agents.installplan import Plan
from actors.agents.installsetup import MCP_NAME, Setup

__all__ = ["plan", "qwen_dir"]


def qwen_dir(setup: Setup) -> Path:
    """``$QWEN_HOME`` or ``~/.qwen``."""
    return setup.env_dir("QWEN_HOME", setup.home / ".qwen")


def plan(setup: Setup, *, install: bool, plugin_dir: Path | None = None) -> Plan:
    """The file operations of ``ssa install``/``uninstall qwen`` (writes nothing)."""
    del plugin_dir
    base = setup.project / ".qwen" if setup.project is not None else qwen_dir(setup)
    settings = base / "settings.json"
    what = "UserPromptSubmit and SessionStart hooks" + (
        f", MCP server mcpServers.{MCP_NAME}" if setup.mcp else "")
    notes = []
    if install:
        notes.append("Qwen Code managers are woken through its cross-session messaging "
                     "socket (on by default; agents.crossSessionMessaging).")
    return Plan([FileOp(settings, settings_transform(setup, "qwen", str(settings),
                                                     install=install, notes=notes,
                                                     strict=False), what)], notes)
