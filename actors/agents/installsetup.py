"""What ``ssa install`` writes is about: the resolved set-up and where each tool reads it.

What lives here: :class:`Setup` (the ``ssa`` path, ``--db``, ``--project``,
home and environment, resolved up front), the names and constants every
install uses (:data:`MARKER`, :data:`MCP_NAME`, :data:`HOOK_TIMEOUT_S`),
and the functions that say where each tool reads its configuration
(``$CLAUDE_CONFIG_DIR``, ``$CODEX_HOME``, ``$XDG_CONFIG_HOME``,
``$PI_CODING_AGENT_DIR``). Pure but for ``is_file`` checks.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from actors.agents.hookinput import TOOLS as _HOOK_TOOLS
from actors.agents.installrecord import InstallRecord

__all__ = [
    "HOOK_TIMEOUT_S", "MARKER", "MARKETPLACE_NAME", "MCP_NAME", "PLUGIN_NAME", "TOOLS", "Setup",
]

TOOLS = tuple(_HOOK_TOOLS)
"""The coding agents this module configures."""

HOOK_TIMEOUT_S = 10
"""Seconds each tool gives ``ssa hook`` before it gives up (well under Claude Code's 30 s)."""

MARKER = "// ssa-managed:"
"""The first line of every plugin/extension file we write starts with this."""

MCP_NAME = "ssa"
"""The MCP server's name in every tool's configuration."""

PLUGIN_NAME = "ssa"
MARKETPLACE_NAME = "ssa-local"


@dataclass(frozen=True)
class Setup:
    """Everything one install needs, resolved up front.

    ``ssa`` is the absolute path of the ``ssa`` script the hooks run; ``db``
    the ``--db`` to pass on (absolute, or a URL); ``project`` the directory
    for ``--project`` (else ``None``: the person's own configuration);
    ``home`` and ``env`` stand for ``Path.home()`` and ``os.environ``;
    ``wake`` (``--no-wake``: ``False``) whether the waiting hook is installed.
    """

    ssa: str
    db: str | None
    project: Path | None
    home: Path
    env: Mapping[str, str]
    mcp: bool = True
    scope: str = "project"
    wake: bool = True
    """Install the tool's waiting hook (:mod:`actors.agents.push`) so managers are woken."""
    explicit: frozenset[str] = frozenset()
    """The options of ours given on this command line (``"--db"``, ``"--scope"``): a
    re-install replaces only these in an installed command; the others keep what the
    file has (a hand edit such as ``--scope all`` stays)."""
    permission_wait: float | None = None
    """``--permission-wait MIN``: a worker waiting this many minutes for a permission
    answer opens a notice (``None``: never; its state is shown all the same)."""
    record: InstallRecord | None = None
    """What installs created (:mod:`actors.agents.installrecord`); the transforms note
    into it and ask it what uninstall may remove (``None``: remove emptied containers
    and ``{}`` files, as an install by an older ssa expects)."""

    def hook_command(self, tool: str) -> str:
        """The shell command line a tool's hook runs."""
        return shlex.join(self.hook_argv(tool))

    def hook_argv(self, tool: str) -> list[str]:
        """The same as an argument vector (for the plugin and the extension)."""
        scope = [] if self.scope == "project" else ["--scope", self.scope]
        wake = [] if self.wake else ["--no-wake"]
        return [self.ssa, "hook", tool, *self.db_args(), *scope, *wake]

    def mcp_args(self) -> list[str]:
        """The arguments of ``ssa`` that start the MCP server."""
        return ["mcp", *self.db_args()]

    def db_args(self) -> list[str]:
        """``["--db", db]`` when a database was named."""
        return [] if self.db is None else ["--db", self.db]

    def env_dir(self, name: str, default: Path) -> Path:
        """``$name`` when set and non-empty, else ``default``."""
        value = self.env.get(name, "")
        return Path(value).expanduser() if value else default
