"""The argparse side of ``ssa install``, ``ssa uninstall`` and ``ssa mcp``.

Imports nothing heavy: the handlers load :mod:`actors.agents.install` and
:mod:`actors.agents.mcp_server` only when their command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_commands", "run_command"]

from actors.agents.hookinput import TOOLS as _HOOK_TOOLS

TOOLS = tuple(_HOOK_TOOLS)
"""The coding agents ``ssa install`` configures (those ``ssa hook`` serves)."""


def add_commands(sub: Any) -> None:
    """Add the three subcommands to ``ssa``'s subparsers (caller's thread)."""
    for name, help_text in (
            ("install", "configure a coding agent to run ssa hook (and the ssa MCP server)"),
            ("uninstall", "remove what ssa install wrote for a coding agent")):
        parser = sub.add_parser(name, help=help_text)
        parser.add_argument("tool", choices=TOOLS, help="the coding agent")
        parser.add_argument("--project", action="store_true",
                            help="this directory's project configuration instead of yours")
        parser.add_argument("--dry-run", action="store_true",
                            help="print each change as a unified diff and write nothing")
        parser.add_argument("--plugin", metavar="DIR", type=Path,
                            help="for a tool that takes plugins: a plugin (in a marketplace "
                            "directory) instead "
                            "of settings")
        if name == "install":
            parser.add_argument("--ssa", metavar="PATH",
                                help="the ssa script the hooks run (default: this one)")
            parser.add_argument("--db", metavar="PATH_OR_URL",
                                help="the database the hooks and the MCP server use")
            parser.add_argument("--no-db-check", action="store_true",
                                help="do not check that the hooks can open --db (e.g. a "
                                "PostgreSQL server that is not up yet)")
            parser.add_argument("--portable", action="store_true",
                                help="write plain 'ssa' (found on PATH when the tool runs the "
                                "hook) instead of this ssa's absolute path: for --project "
                                "files that are committed and used on other machines")
            parser.add_argument("--no-mcp", action="store_true",
                                help="do not register the ssa MCP server")
            parser.add_argument("--no-wake", action="store_true",
                                help="do not install the waiting hook that wakes an idle "
                                "manager (it is then told at its next prompt only)")
            parser.add_argument("--permission-wait", type=float, metavar="MIN",
                                default=None,
                                help="a worker session waiting MIN minutes for a permission "
                                "answer opens one notice for its managers (default: never, or "
                                "what the installed hooks have; 0 turns it off; its state shows "
                                "in ssa list and session_status all the same)")
            parser.add_argument("--scope", choices=("project", "all", "list"),
                                default=None,
                                help="which sessions the manager watches (ssa hook --scope): "
                                "the project's other sessions (default), all, or only those "
                                "added with 'ssa watches add'; a re-install without --scope "
                                "keeps the scope the installed hook has")
    mcp = sub.add_parser("mcp", help="run the ssa MCP server on stdin/stdout")
    mcp.add_argument("--db", metavar="PATH_OR_URL",
                     help="SQLite file or postgresql:// URL (default: $SSA_DB, else the "
                     "default file)")


def run_command(args: argparse.Namespace) -> int:
    """Run the parsed subcommand; returns its exit code."""
    if args.command == "mcp":
        from actors.agents.mcp_server import main as mcp_main  # noqa: PLC0415

        return mcp_main(args.db, err=sys.stderr)
    from actors.agents.install import run  # noqa: PLC0415

    return run(args, out=sys.stdout, err=sys.stderr)
