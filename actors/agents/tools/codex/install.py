"""``ssa install codex``: hooks in ``hooks.json`` and the MCP server in ``config.toml``
(``$CODEX_HOME``, or the project's ``.codex``). Writes nothing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from actors.agents._files import FileOp
from actors.agents.installedits import HOOK_EVENTS, hook_events, hooks_transform, toml_transform
from actors.agents.installplan import Plan
from actors.agents.installsetup import MCP_NAME, Setup

__all__ = ["codex_home", "plan", "trust_keys"]


def plan(setup: Setup, *, install: bool, plugin_dir: Path | None = None) -> Plan:
    """The file operations of ``ssa install``/``uninstall codex`` (writes nothing)."""
    del plugin_dir
    tool = "codex"
    notes: list[str] = []
    ops: list[FileOp] = []
    base = setup.project / ".codex" if setup.project is not None else codex_home(setup)
    hooks = base / "hooks.json"
    removed: list[tuple[str, int, int]] = []  # where our handlers were (uninstall)
    trust: tuple[str, ...] = ()
    if install:  # only when hooks.json changes: Codex keys its trust by each hook's content
        events = ", ".join(hook_events(tool) if setup.wake else
                           dict.fromkeys((*HOOK_EVENTS, "Stop", "PermissionRequest")))
        trust = ("Codex asks you to trust new hooks: start codex; at \"Hooks need review\" "
                 "choose \"Trust all and continue\" (or run /hooks later and trust the ssa "
                 f"hooks: {events}).",)
    ops.append(FileOp(hooks, hooks_transform(setup, tool, str(hooks), install=install,
                                               notes=notes, removed=removed),
                      "UserPromptSubmit and SessionStart hooks"
                      + (", an async PostToolUse hook (mid-turn notices)" if setup.wake else "")
                      + ", and the Stop and PermissionRequest hooks that say where the "
                        "session stands", notes=trust))
    if setup.mcp or not install:
        config = base / "config.toml"
        ops.append(FileOp(config, toml_transform(
            setup, str(config), install=install, notes=notes,
            trust_keys=lambda: trust_keys(hooks, removed)),
                          f"MCP server [mcp_servers.{MCP_NAME}]"))
    if install and setup.project is not None:
        notes.append("Project hooks and config load only in a project Codex trusts.")
    return Plan(ops, notes)


def trust_keys(hooks: Path, places: list[tuple[str, int, int]]) -> list[str]:
    """The ``[hooks.state]`` keys Codex records the trust of our handlers under:
    ``<hooks.json>:<event in snake case>:<group>:<handler>`` (the path as given and,
    when it differs, resolved)."""
    paths = dict.fromkeys([str(hooks), os.path.realpath(hooks)])
    return list(dict.fromkeys(f"{path}:{_snake(event)}:{gi}:{hi}" for path in paths
                              for event, gi, hi in places))


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", event).lower()


def codex_home(setup: Setup) -> Path:
    """``$CODEX_HOME`` or ``~/.codex``."""
    return setup.env_dir("CODEX_HOME", setup.home / ".codex")
