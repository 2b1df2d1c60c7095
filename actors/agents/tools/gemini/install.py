"""``ssa install gemini``: the prompt hooks and the MCP server in Gemini CLI's ``settings.json``.

User scope: ``$GEMINI_CLI_HOME/.gemini/settings.json`` (else
``~/.gemini/settings.json``); ``--project``: the project's
``.gemini/settings.json``, whose hooks Gemini CLI runs only in a trusted
folder. Both edits go into one file in one write. Writes nothing itself.
"""

from __future__ import annotations

from pathlib import Path

from actors.agents._files import FileOp
from actors.agents.installedits import settings_transform
from actors.agents.installplan import Plan
from actors.agents.installsetup import MCP_NAME, Setup

__all__ = ["gemini_dir", "plan"]


def gemini_dir(setup: Setup) -> Path:
    """``$GEMINI_CLI_HOME/.gemini`` or ``~/.gemini``."""
    return setup.env_dir("GEMINI_CLI_HOME", setup.home) / ".gemini"


def plan(setup: Setup, *, install: bool, plugin_dir: Path | None = None) -> Plan:
    """The file operations of ``ssa install``/``uninstall gemini`` (writes nothing)."""
    del plugin_dir
    tool = "gemini"
    base = setup.project / ".gemini" if setup.project is not None else gemini_dir(setup)
    settings = base / "settings.json"
    notes = []
    if install:
        notes.append("Gemini CLI cannot be woken from outside: a Gemini manager is told at "
                     "its next prompt.")
        if setup.project is not None:
            notes.append("Gemini CLI runs a project's hooks only in a trusted folder.")
    what = "BeforeAgent and SessionStart hooks" + (f", MCP server mcpServers.{MCP_NAME}"
                                                   if setup.mcp else "")
    return Plan([FileOp(settings, settings_transform(setup, tool, str(settings),
                                                     install=install, notes=notes,
                                                     strict=False), what)], notes)
