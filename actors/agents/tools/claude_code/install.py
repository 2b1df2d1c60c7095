"""``ssa install claude-code``: hooks in ``settings.json`` (user or project), the MCP server in
``~/.claude.json`` (or the project's ``.mcp.json``), or with ``--plugin DIR`` a marketplace
directory holding one plugin. Writes nothing: :func:`actors.agents._files.apply_changes` does.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from actors.agents._files import FileOp
from actors.agents.installedits import (
    hook_groups,
    hooks_transform,
    is_our_hook,
    is_our_mcp_entry,
    mcp_json_transform,
    owned_file_transform,
)
from actors.agents.installplan import Plan
from actors.agents.installsetup import MARKETPLACE_NAME, MCP_NAME, PLUGIN_NAME, Setup

__all__ = ["claude_dir", "claude_state_file", "plan"]


def plan(setup: Setup, *, install: bool, plugin_dir: Path | None = None) -> Plan:
    """The file operations of ``ssa install``/``uninstall claude-code`` (writes nothing)."""
    return _plan_claude(setup, install, plugin_dir, [])


def claude_dir(setup: Setup) -> Path:
    """``$CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    return setup.env_dir("CLAUDE_CONFIG_DIR", setup.home / ".claude")


def claude_state_file(setup: Setup) -> Path:
    """User-scope MCP servers: ``$CLAUDE_CONFIG_DIR/.claude.json`` or ``~/.claude.json``."""
    if setup.env.get("CLAUDE_CONFIG_DIR"):
        return claude_dir(setup) / ".claude.json"
    return setup.home / ".claude.json"


def _plan_claude(setup: Setup, install: bool, plugin_dir: Path | None,
                 notes: list[str]) -> Plan:
    tool = "claude-code"
    entry = {"type": "stdio", "command": setup.ssa, "args": setup.mcp_args(), "env": {}}
    if plugin_dir is not None:
        return _plan_claude_plugin(setup, install, plugin_dir.resolve(), notes)
    ops: list[FileOp] = []
    if setup.project is not None:
        settings = setup.project / ".claude" / "settings.json"
        mcp_file, key_path = setup.project / ".mcp.json", ["mcpServers"]
    else:
        settings = claude_dir(setup) / "settings.json"
        mcp_file, key_path = claude_state_file(setup), ["mcpServers"]
    ops.append(FileOp(settings, hooks_transform(setup, tool, str(settings), install=install,
                                                notes=notes),
                      "UserPromptSubmit and SessionStart hooks"
                      + (", the Stop hook that wakes an idle manager" if setup.wake else "")
                      + ", and the Stop, StopFailure, Notification and SessionEnd hooks that "
                        "say where the session stands"))
    if setup.mcp or not install:
        ops.append(FileOp(mcp_file, mcp_json_transform(
            setup, str(mcp_file), key_path, entry, install=install, strict=True, notes=notes),
            f"MCP server mcpServers.{MCP_NAME}"))
    if install and setup.project is not None:
        notes.append("Claude Code asks once to approve a project's .mcp.json servers, and "
                     "runs a project's hooks only after its workspace-trust dialog.")
    return Plan(ops, notes)


def _plan_claude_plugin(setup: Setup, install: bool, root: Path, notes: list[str]) -> Plan:
    """A marketplace directory holding one plugin: ``root/plugins/ssa``."""
    tool = "claude-code"
    plugin = root / "plugins" / PLUGIN_NAME
    try:
        plugin_version = version("session-state-awareness")
    except PackageNotFoundError:
        plugin_version = "0.0.0"

    def owned_json(path: Path, value: Any, what: str,
                   recognise: Callable[[Any], bool]) -> FileOp:
        content = json.dumps(value, indent=2) + "\n" if install else None

        def ours(text: str) -> bool:
            try:
                return recognise(json.loads(text))
            except ValueError:
                return False
        return FileOp(path, owned_file_transform(str(path), content, recognise=ours), what,
                      owned=True)

    description = ("Tells this session when someone else steps into another session of "
                   "the project (session-state-awareness).")
    marketplace = {"name": MARKETPLACE_NAME, "owner": {"name": "session-state-awareness"},
                   "description": "The ssa plugin of this installation of "
                                  "session-state-awareness (written by ssa install).",
                   "plugins": [{"name": PLUGIN_NAME, "source": f"./plugins/{PLUGIN_NAME}",
                                "description": description}]}
    manifest = {"name": PLUGIN_NAME, "version": plugin_version, "description": description,
                "author": {"name": "session-state-awareness"}}
    hooks = {"description": "ssa: pending session-state notices into each turn",
             "hooks": {event: [group] for event, group in hook_groups(setup, tool).items()}}
    mcp = {"mcpServers": {MCP_NAME: {"command": setup.ssa, "args": setup.mcp_args()}}}

    def named(name: str) -> Callable[[Any], bool]:
        return lambda v: isinstance(v, dict) and v.get("name") == name

    def has_our_hooks(v: Any) -> bool:
        groups = v.get("hooks", {}).get("UserPromptSubmit") if isinstance(v, dict) else None
        return isinstance(groups, list) and any(
            is_our_hook(tool)(h) for g in groups if isinstance(g, dict)
            for h in g.get("hooks", []))

    def has_our_mcp(v: Any) -> bool:
        return isinstance(v, dict) and is_our_mcp_entry(v.get("mcpServers", {}).get(MCP_NAME))

    ops = [
        owned_json(root / ".claude-plugin" / "marketplace.json", marketplace,
                   "marketplace manifest", named(MARKETPLACE_NAME)),
        owned_json(plugin / ".claude-plugin" / "plugin.json", manifest, "plugin manifest",
                   named(PLUGIN_NAME)),
        owned_json(plugin / "hooks" / "hooks.json", hooks,
                   "UserPromptSubmit, SessionStart (and waiting Stop) hooks", has_our_hooks),
    ]
    if setup.mcp or not install:
        ops.append(owned_json(plugin / ".mcp.json", mcp, f"MCP server {MCP_NAME}",
                              has_our_mcp))
    if install:
        notes += [
            "Install the plugin in Claude Code (user scope):",
            f"  claude plugin marketplace add {shlex.quote(str(root))}",
            f"  claude plugin install {PLUGIN_NAME}@{MARKETPLACE_NAME}",
            f"or load it for one session: claude --plugin-dir {shlex.quote(str(plugin))}",
        ]
    else:
        notes += [f"If it is installed in Claude Code: claude plugin uninstall "
                  f"{PLUGIN_NAME}@{MARKETPLACE_NAME} && claude plugin marketplace remove "
                  f"{MARKETPLACE_NAME}"]
    return Plan(ops, notes)
