"""``ssa install pi``: our extension (``extension.ts`` of this package) in Pi's extensions
folder (user or project). Pi has no MCP client. Writes nothing.
"""

from __future__ import annotations

from pathlib import Path

from actors.agents._files import FileOp
from actors.agents.installedits import data_text, plugin_transform
from actors.agents.installplan import Plan
from actors.agents.installsetup import Setup

__all__ = ["pi_agent_dir", "plan"]


def plan(setup: Setup, *, install: bool, plugin_dir: Path | None = None) -> Plan:
    """The file operations of ``ssa install``/``uninstall pi`` (writes nothing)."""
    del plugin_dir
    tool = "pi"
    notes: list[str] = []
    ops: list[FileOp] = []
    base = (setup.project / ".pi" / "extensions" if setup.project is not None
            else pi_agent_dir(setup) / "extensions")
    extension = base / "ssa.ts"
    template = data_text(__name__.rsplit(".", 1)[0], "extension.ts")
    ops.append(FileOp(extension, plugin_transform(str(extension), template, setup, tool,
                                                  install=install, notes=notes),
                      "extension (before_agent_start)", owned=True))
    if install:
        notes.append("Pi has no built-in MCP client: no MCP server registered (the "
                     "notice's session_status is `ssa status KEY --changes-since N` "
                     "from a shell).")
    return Plan(ops, notes)


def pi_agent_dir(setup: Setup) -> Path:
    """``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``."""
    return setup.env_dir("PI_CODING_AGENT_DIR", setup.home / ".pi" / "agent")
