"""``ssa install/uninstall <tool>``: put ``ssa hook`` and ``ssa mcp`` where each tool reads them.

What each install writes is each tool's package's ``install`` module
(:mod:`actors.agents.tools`; ``docs/agents-install.md`` has the full text):
the prompt hooks and, for managers' wakes, the waiting hook (or a plugin or
extension that runs them), and the MCP server where the tool has an MCP
client.

Our entries are recognised by what they run, never by position: a hook whose
command is ``<path>/ssa hook <tool>``, an MCP server named ``ssa`` that runs
``<path>/ssa mcp``, a plugin or extension file whose first line is
:data:`~actors.agents.installsetup.MARKER`. Files go through
:mod:`actors.agents._files` (locks, atomic replace, backups, modes). Runs on
the caller's thread; blocks on the file system.

This module is the command (:func:`run`); the set-up and the tools'
locations are :mod:`actors.agents.installsetup`, the edits and the
recognising of our entries :mod:`actors.agents.installedits`, which files
change how :mod:`actors.agents.installplan`.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
from pathlib import Path
from typing import TextIO

from actors.agents._files import ConfigRefused, diff
from actors.agents.dbcheck import db_problem
from actors.agents.installplan import apply, plan
from actors.agents.installsetup import Setup
from persistence import is_url, url_has_password, url_problem
from persistence.locations import sqlite_location_problem

__all__ = ["URL_SECRET_REFUSAL", "project_path_warning", "resolve_ssa", "run"]


def resolve_ssa(explicit: str | None, argv0: str | None = None) -> str:
    """The absolute path of the ``ssa`` script the installed hooks run.

    ``--ssa PATH`` when given; else the running script when it is the ``ssa``
    entry point; else ``ssa`` on ``PATH``.

    Raises:
        ConfigRefused: no ``ssa`` found, or ``--ssa`` is not an executable file.
    """
    if explicit is not None:
        path = Path(explicit).expanduser().absolute()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ConfigRefused(f"--ssa {explicit}: not an executable file")
        return str(path)
    running = Path(argv0 if argv0 is not None else sys.argv[0])
    if running.name == "ssa" and running.is_file():
        return str(running.absolute())
    found = shutil.which("ssa")
    if found is None:
        raise ConfigRefused("cannot find the ssa command (not run as ssa, none on PATH): "
                            "pass --ssa PATH")
    return str(Path(found).absolute())


URL_SECRET_REFUSAL = (
    "--db: the URL holds a password (or an SSL key passphrase, sslpassword=), which "  # noqa: S105 -- a message
    "install would write into the hook command "
    "lines and the MCP server's arguments (every local user sees it in ps at each prompt, "
    "and --project files are usually committed); leave it out of the URL and give it by "
    "PGPASSWORD, ~/.pgpass or a service file (?service=NAME; sslpassword goes there too)")
"""The one line ``ssa install --db URL`` refuses a URL with a password with (exit 2)."""


def _checked_db(db: str | None) -> str | None:
    """``--db`` as the hooks will get it: a URL as given, a path made absolute.

    Raises:
        ConfigRefused: empty, a URL with a password (:data:`URL_SECRET_REFUSAL`) or
            one no backend takes, or a path the location rule refuses
            (:mod:`persistence.locations`: the hooks would fail at every prompt).
    """
    if db is None:
        return None
    if not db.strip():
        raise ConfigRefused("--db must not be empty: give a database file or a "
                            "postgresql:// URL")
    if is_url(db):
        if url_has_password(db):
            raise ConfigRefused(URL_SECRET_REFUSAL)
        problem = url_problem(db)
        if problem is not None:
            raise ConfigRefused(f"--db: {problem}")
        return db
    problem = sqlite_location_problem(db)  # ":memory:", "file:..." as given, before
    if problem is not None:                 # the path is made absolute (as ssa hook does)
        raise ConfigRefused(f"--db {problem}")
    path = str(Path(db).expanduser().absolute())
    problem = sqlite_location_problem(path)
    if problem is not None:
        raise ConfigRefused(f"--db {problem}")
    return path


def _setup_from(args: argparse.Namespace, install: bool) -> Setup:
    db = _checked_db(getattr(args, "db", None))
    if install and db is not None and not getattr(args, "no_db_check", False):
        problem = db_problem(db)
        if problem is not None:
            raise ConfigRefused(f"--db: the hooks could not open it: {problem} (fix it, or "
                                "pass --no-db-check to install anyway)")
    portable = getattr(args, "portable", False)
    if portable and getattr(args, "ssa", None) is not None:
        raise ConfigRefused("--portable writes plain 'ssa' (found on PATH), --ssa an absolute "
                            "path: give one of them")
    ssa = ("ssa" if portable else resolve_ssa(getattr(args, "ssa", None))) if install else "ssa"
    mcp = install and not getattr(args, "no_mcp", False)
    scope = getattr(args, "scope", None)
    wait = getattr(args, "permission_wait", None)
    if wait is not None and not (math.isfinite(wait) and 0 <= wait <= MAX_PERMISSION_WAIT_MIN):
        raise ConfigRefused(f"--permission-wait must be a number of minutes from 0 (off) to "
                            f"{MAX_PERMISSION_WAIT_MIN}")
    explicit = frozenset(name for name, given in (("--db", db is not None),
                                                   ("--scope", scope is not None),
                                                   ("--permission-wait", wait is not None))
                         if given)
    return Setup(ssa=ssa, db=db, project=Path.cwd() if args.project else None,
                 home=Path.home(), env=os.environ, mcp=mcp, scope=scope or "project",
                 wake=not getattr(args, "no_wake", False), explicit=explicit,
                 permission_wait=wait or None)  # 0: off (a re-install drops the option)


MAX_PERMISSION_WAIT_MIN = 1440
"""The longest ``--permission-wait`` (a day, in minutes)."""


def project_path_warning(setup: Setup) -> str | None:
    """The warning for ``install --project`` writing absolute paths into files a project
    usually commits (``None``: nothing to warn about; pure)."""
    if setup.project is None:
        return None
    absolute = [p for p in (setup.ssa, setup.db) if p is not None and os.path.isabs(p)]
    if not absolute:
        return None
    return ("ssa: warning: --project writes " + " and ".join(absolute) + " into the "
            "project's files, which are usually committed; they work only where that path "
            "exists (--portable writes plain 'ssa', found on PATH)")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Run ``ssa install`` (``args.command == "install"``) or ``ssa uninstall``.

    Returns:
        0 done (or nothing to do); 2 refused (one line on ``err``, nothing
        written); 1 a file could not be written (one line on ``err``).
    """
    install = args.command == "install"
    try:
        setup = _setup_from(args, install)
        the_plan = plan(args.tool, setup, install=install, plugin_dir=args.plugin)
        changes = apply(the_plan, dry_run=args.dry_run)
    except ConfigRefused as exc:
        err.write(f"ssa: {exc}\n")
        return 2
    except OSError as exc:
        err.write(f"ssa: {exc}\n")
        return 1
    verb = "install" if install else "uninstall"
    warning = project_path_warning(setup) if install else None
    if warning is not None:
        err.write(warning + "\n")
    for op, change in zip(the_plan.ops, changes, strict=True):
        if op.quiet:
            continue
        if args.dry_run:
            if change.changed:
                out.write(diff(change))
            else:
                out.write(f"unchanged: {change.path} ({change.what})\n")
            continue
        if not change.changed:
            state = "already installed" if install else "not installed"
            out.write(f"{state}: {change.what} in {change.path}\n")
        elif change.after is None:
            out.write(f"removed {change.path} ({change.what})\n")
        else:
            action = "wrote" if change.before is None else "updated"
            backup = "" if change.backup is None else f"; backup {change.backup}"
            label = "installed" if install else "uninstalled"
            out.write(f"{action} {change.path} ({change.what} {label}{backup})\n")
    if args.dry_run:
        out.write(f"dry run: nothing written (ssa {verb} {args.tool} without --dry-run "
                  "writes it)\n")
    changed_notes = [note for op, change in zip(the_plan.ops, changes, strict=True)
                     if change.changed for note in op.notes]
    for note in dict.fromkeys([*the_plan.notes, *changed_notes]):  # a retried transform
        out.write(note + "\n")                                      # says it twice
    return 0
