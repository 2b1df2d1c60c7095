"""``ssa install opencode``: our plugin (``plugin.js`` of this package) in OpenCode's plugins
folder and the MCP server in ``opencode.json`` (user or project). Writes nothing.
"""

from __future__ import annotations

from pathlib import Path

from actors.agents._files import FileOp
from actors.agents.installedits import data_text, mcp_json_transform, plugin_transform
from actors.agents.installplan import Plan
from actors.agents.installsetup import MCP_NAME, Setup

__all__ = ["opencode_config_dir", "opencode_config_file", "plan"]


def plan(setup: Setup, *, install: bool, plugin_dir: Path | None = None) -> Plan:
    """The file operations of ``ssa install``/``uninstall opencode`` (writes nothing)."""
    del plugin_dir
    tool = "opencode"
    notes: list[str] = []
    ops: list[FileOp] = []
    base = (setup.project / ".opencode" if setup.project is not None
            else opencode_config_dir(setup))
    plugin = base / "plugins" / "ssa.js"
    template = data_text(__name__.rsplit(".", 1)[0], "plugin.js")
    ops.append(FileOp(plugin, plugin_transform(str(plugin), template, setup, tool,
                                               install=install, notes=notes),
                      "plugin (experimental.chat.system.transform)", owned=True))
    if setup.mcp or not install:
        config = opencode_config_file(setup)
        entry = {"type": "local", "command": [setup.ssa, *setup.mcp_args()],
                 "enabled": True}
        ops.append(FileOp(config, mcp_json_transform(
            setup, str(config), ["mcp"], entry, install=install, strict=False, notes=notes),
            f"MCP server mcp.{MCP_NAME}"))
    return Plan(ops, notes)


def opencode_config_dir(setup: Setup) -> Path:
    """``$XDG_CONFIG_HOME/opencode`` or ``~/.config/opencode``."""
    return setup.env_dir("XDG_CONFIG_HOME", setup.home / ".config") / "opencode"


def opencode_config_file(setup: Setup) -> Path:
    """The ``opencode.json`` to edit: the first that exists in OpenCode's own order, else
    ``opencode.json`` (global: ``opencode.jsonc``, ``opencode.json``, ``config.json``;
    project: ``opencode.json``, ``opencode.jsonc``, ``.opencode/opencode.json(c)``)."""
    if setup.project is not None:
        candidates = [setup.project / n for n in ("opencode.json", "opencode.jsonc")] + [
            setup.project / ".opencode" / n for n in ("opencode.json", "opencode.jsonc")]
        default = setup.project / "opencode.json"
    else:
        base = opencode_config_dir(setup)
        candidates = [base / n for n in ("opencode.jsonc", "opencode.json", "config.json")]
        default = base / "opencode.json"
    return next((c for c in candidates if c.is_file()), default)
