"""Which files one ``ssa install`` / ``ssa uninstall`` of a tool changes, and how.

What lives here: :func:`plan`, from a tool and a
:class:`~actors.agents.installsetup.Setup` to the :class:`Plan`'s file
operations (each a transform of :mod:`actors.agents.installedits`) and the
lines to tell the person after; for Claude Code also the ``--plugin DIR``
marketplace. Writes nothing: :func:`actors.agents._files.apply_changes`
does.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from actors.agents._files import ConfigRefused, FileOp
from actors.agents.installedits import (
    HOOK_EVENTS,
    data_text,
    has_marker,
    hook_events,
    hook_groups,
    hooks_transform,
    is_our_hook,
    is_our_mcp_entry,
    mcp_json_transform,
    owned_file_transform,
    render_plugin,
    toml_transform,
)
from actors.agents.installsetup import (
    MARKETPLACE_NAME,
    MCP_NAME,
    PLUGIN_NAME,
    TOOLS,
    Setup,
    claude_dir,
    claude_state_file,
    codex_home,
    opencode_config_dir,
    opencode_config_file,
    pi_agent_dir,
)

__all__ = ["Plan", "mcp_available", "plan"]


@dataclass(frozen=True)
class Plan:
    """The file operations of one install/uninstall and the lines to tell the person after."""

    ops: list[FileOp]
    notes: list[str]


def mcp_available() -> bool:
    """Whether the ``mcp`` extra is installed (``ssa mcp`` can run); never imports it."""
    return importlib.util.find_spec("mcp") is not None


def plan(tool: str, setup: Setup, *, install: bool, plugin_dir: Path | None = None) -> Plan:
    """The file operations for ``tool`` (see the module docstring for what goes where)."""
    notes: list[str] = []
    if tool == "claude-code":
        return _plan_claude(setup, install, plugin_dir, notes)
    if plugin_dir is not None:
        raise ConfigRefused("--plugin is for claude-code only")
    ops: list[FileOp] = []
    if tool == "codex":
        base = setup.project / ".codex" if setup.project is not None else codex_home(setup)
        hooks = base / "hooks.json"
        ops.append(FileOp(hooks, hooks_transform(setup, tool, str(hooks), install=install),
                          "UserPromptSubmit and SessionStart hooks"
                          + (", and an async PostToolUse hook (mid-turn notices)"
                             if setup.wake else "")))
        if setup.mcp or not install:
            config = base / "config.toml"
            ops.append(FileOp(config, toml_transform(setup, str(config), install=install),
                              f"MCP server [mcp_servers.{MCP_NAME}]"))
        if install:
            events = ", ".join(hook_events(tool) if setup.wake else HOOK_EVENTS)
            notes.append("Codex asks you to trust new hooks: start codex, run /hooks, and "
                         f"trust the ssa hooks ({events}).")
            if setup.project is not None:
                notes.append("Project hooks and config load only in a project Codex trusts.")
    elif tool == "opencode":
        base = (setup.project / ".opencode" if setup.project is not None
                else opencode_config_dir(setup))
        plugin = base / "plugins" / "ssa.js"
        content = render_plugin(data_text("opencode_plugin.js"), setup, tool) if install \
            else None
        ops.append(FileOp(plugin, owned_file_transform(str(plugin), content,
                                                       recognise=has_marker),
                          "plugin (experimental.chat.system.transform)", owned=True))
        if setup.mcp or not install:
            config = opencode_config_file(setup)
            entry = {"type": "local", "command": [setup.ssa, *setup.mcp_args()],
                     "enabled": True}
            ops.append(FileOp(config, mcp_json_transform(
                setup, str(config), ["mcp"], entry, install=install, strict=False),
                f"MCP server mcp.{MCP_NAME}"))
    elif tool == "pi":
        base = (setup.project / ".pi" / "extensions" if setup.project is not None
                else pi_agent_dir(setup) / "extensions")
        extension = base / "ssa.ts"
        content = render_plugin(data_text("pi_extension.ts"), setup, tool) if install \
            else None
        ops.append(FileOp(extension, owned_file_transform(str(extension), content,
                                                          recognise=has_marker),
                          "extension (before_agent_start)", owned=True))
        if install:
            notes.append("Pi has no built-in MCP client: no MCP server registered (the "
                         "notice's session_status is `ssa status KEY --changes-since N` "
                         "from a shell).")
    else:
        raise ConfigRefused(f"unknown tool {tool!r} (one of {', '.join(TOOLS)})")
    return Plan(ops, notes)


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
    ops.append(FileOp(settings, hooks_transform(setup, tool, str(settings), install=install),
                      "UserPromptSubmit and SessionStart hooks"
                      + (", and the Stop hook that wakes an idle manager" if setup.wake
                         else "")))
    if setup.mcp or not install:
        ops.append(FileOp(mcp_file, mcp_json_transform(
            setup, str(mcp_file), key_path, entry, install=install, strict=True),
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
