"""The ``ssa`` command line (``api-contract.md``, "Command line").

``ssa demo`` walks through the core protocol; ``ssa watch`` adopts the
coding-agent sessions it finds and prints a notice when a person types into
one; ``ssa status`` and ``ssa list`` read a database without starting any
actor; ``ssa classify`` runs the upstream monitor's classifiers over one
transcript. (The benchmarks are scripts of a checkout, not commands:
``python -m scripts.bench``.) User mistakes print one line on stderr and exit
non-zero, without a traceback.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw
import msgspec

from actors.cli.defaults import DEFAULT_WATCHER
from actors.cli.execpool import DEFAULT_JOBS, DEFAULT_TIMEOUT_S, MAX_JOBS
from actors.cli.listing import run_list
from actors.cli.reading import DB_ENV, open_existing
from actors.errors import SessionStateError
from actors.facade import validate as v
from actors.facade.activity import activity_now
from actors.facade.gateway import default_state_path
from actors.monitors.where import where_of
from actors.upstream.sources import all_sources, source_names
from persistence import (
    StorageError,
    is_url,
    read_changes,
    read_entry,
    read_link,
    read_version,
    text_faults,
    url_has_password,
    url_problem,
)
from persistence.errors import (
    BackendNotInstalled,
)
from persistence.keys import agent_id_of, is_agent_qualified
from persistence.locations import sqlite_location_problem

__all__ = ["main"]


MIN_INTERVAL_S = 0.1
"""The shortest ``--interval``: a fallback scan more often only spins a core."""
"""The first line of ``ssa list`` (text): tab-separated like its rows (``-``: no events yet,
or no upstream link)."""

def _version() -> str:
    """The installed distribution's version (``unknown`` in a checkout never installed)."""
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version("session-state-awareness")
    except PackageNotFoundError:
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ssa", description="Session state awareness for multi-agent gateways.")
    parser.add_argument("--version", action="version", version=f"ssa {_version()}")
    # argparse %-formats help texts: a '%' in the default path must reach it as '%%'.
    db_help = _DB_HELP.format(default=str(default_state_path()).replace("%", "%%"))
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="walk through spawn, notices, drain, reconcile, restart")
    demo.add_argument("--db", type=_db_path, help="database file (default: a temporary one)")
    status = sub.add_parser("status", help="print a session's state version and changes as JSON")
    status.add_argument("key", help="session key, e.g. agent:main:main")
    status.add_argument("--changes-since", type=int, metavar="N",
                        help="also list the events after version N")
    status.add_argument("--agent-id", help="owning agent (default: the key's)")
    status.add_argument("--typed-text", type=int, metavar="CHARS",
                        help="with --changes-since: also what a person typed in each listed "
                        "upstream turn, read now from the tool's transcript, at most CHARS "
                        "characters per turn (never stored)")
    status.add_argument("--db", type=_db_path, help=db_help)
    doctor = sub.add_parser("doctor", help="check the set-up: hooks, databases, ssa watch, "
                            "the last hook failures; each problem with its fix")
    doctor.add_argument("--db", help="also check this database (default: $SSA_DB, else the "
                        "default file)")
    doctor.add_argument("--json", action="store_true", help="one JSON object per finding")
    listing = sub.add_parser("list", help="list sessions: tool, project, name, last activity, "
                             "state version, where their turns are read")
    listing.add_argument("--db", type=_db_path, help=db_help)
    listing.add_argument("--agent-id", help="only this agent's sessions")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    listing.add_argument("--no-names", action="store_true",
                         help="do not read the sessions' names and project folders from "
                              "their tools' files (faster for many sessions)")
    watch = sub.add_parser(
        "watch", help="adopt every session in the catalogs and report direct human turns")
    watch.add_argument("--db", type=_db_path, help=db_help)
    for source in all_sources():
        where = ("default: its standard location"
                 if source.locations(os.environ, os.path.expanduser("~"))
                 else "no standard location: a project or a folder of projects")
        watch.add_argument(f"--{source.flag}", dest=source.name, action="append",
                           metavar=source.metavar,
                           help=f"{source.title} catalog (repeatable; {where}; giving any "
                           "catalog watches only the catalogs given)")
    watch.add_argument("--watcher", default=DEFAULT_WATCHER, help="watcher session key")
    watch.add_argument("--interval", type=float, default=10.0, metavar="S",
                       help="seconds between fallback scans (default 10); with file "
                       "notifications a typed turn is reported within a second anyway")
    watch.add_argument("--scans", type=int, metavar="N", help="stop after N fallback scans")
    watch.add_argument("--poll-only", action="store_true",
                       help="no file notifications: report turns at the fallback scans only")
    watch.add_argument("--json", action="store_true", help="JSON lines instead of text")
    watch.add_argument("--exec", metavar="CMD",
                       help="also run CMD once per notice, the notice and its events as JSON "
                       "on stdin (split like a shell would, run without one)")
    watch.add_argument("--shell", action="store_true", help="run --exec's CMD with /bin/sh -c")
    watch.add_argument("--exec-timeout", type=float, metavar="S",
                       help=f"seconds before a --exec run is killed (default "
                       f"{DEFAULT_TIMEOUT_S:g})")
    watch.add_argument("--exec-jobs", type=int, metavar="N",
                       help=f"--exec runs at once (default {DEFAULT_JOBS}, at most {MAX_JOBS})")
    watches = sub.add_parser("watches", help="list, add or remove the sessions a watcher "
                             "(e.g. a manager agent's session) watches")
    watches.add_argument("action", choices=("list", "add", "remove"))
    watches.add_argument("watcher", nargs="?", metavar="WATCHER",
                         help="the watcher's key (list: optional)")
    watches.add_argument("targets", nargs="*", metavar="TARGET", help="session keys")
    watches.add_argument("--db", type=_db_path, help=db_help)
    _add_push_commands(sub, db_help)
    sub.add_parser("hook", add_help=False,
                   help="a coding agent's prompt hook: print the pending notices of its "
                   "session for its next turn (ssa hook --help)")
    classify = sub.add_parser(
        "classify", help="show why each unit of an upstream transcript does or does not count")
    stores = [s.name for s in all_sources() if s.holds == "store"]
    classify.add_argument("--source", required=True, choices=source_names())
    classify.add_argument("path", type=Path, help="transcript file (a store source: its "
                          f"database; {', '.join(stores) or 'none'})")
    classify.add_argument("--session", help="session id in a store (required for "
                          f"{', '.join(stores) or 'none'})")
    _add_agent_commands(sub)
    return parser


def _add_agent_commands(sub: Any) -> None:
    """``ssa install``, ``ssa uninstall`` and ``ssa mcp`` (their code: ``actors/agents``)."""
    from actors.agents.commands import add_commands  # noqa: PLC0415 -- argparse only, light

    add_commands(sub)


def _classify(args: argparse.Namespace) -> int:
    from actors.upstream.classify import classify_units  # noqa: PLC0415

    for unit in classify_units(args.source, str(args.path), session=args.session):
        sys.stdout.write(msgspec.json.encode(unit).decode() + "\n")
    return 0


_DB_HELP = ("SQLite file or postgresql:// URL (default: $SSA_DB when set, else {default}, "
            "from $SSA_STATE_DIR or $XDG_STATE_HOME when set). Keep a PostgreSQL password "
            "off the command line, where every local user can read it while ssa runs: use "
            "PGPASSWORD, ~/.pgpass, a service file (?service=NAME) or SSA_DB")


def _add_push_commands(sub: Any, db_help: str) -> None:
    """``ssa manage`` and ``ssa send`` (issue 35) on ``sub``, the subparsers."""
    manage = sub.add_parser("manage", help="make the coding-agent session this runs in a "
                            "manager (told and woken when others step into the sessions it "
                            "watches), or with --off a worker again")
    manage.add_argument("--off", action="store_true",
                        help="make it a worker again: no notices, no wakes, watches dropped")
    manage.add_argument("--no-wake", action="store_true",
                        help="a manager that is told at its next prompt but never woken")
    manage.add_argument("--session", metavar="KEY",
                        help="the session's key (default: the session this command runs in, "
                        "from its agent's shell tool)")
    manage.add_argument("--db", type=_db_path, help=db_help)
    # Its own light path (actors.agents.sendcli); listed here for ssa --help.
    sub.add_parser("send", add_help=False, help="deliver text into another running "
                   "coding-agent session; an idle one takes a turn with it (ssa send --help)")


def _db_path(value: str) -> Path | str:
    """``--db``: a SQLite file path or a ``postgresql://`` URL (argparse type).

    Another URL scheme is refused with a clear error (never a directory named
    after it); the PostgreSQL URL is checked when the command opens it.
    """
    if not value.strip():
        raise argparse.ArgumentTypeError("--db must not be empty: give a database file or a "
                                         "postgresql:// URL")
    if not is_url(value):
        return Path(value)
    problem = url_problem(value)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"--db: {problem}")
    return value


def _check_new_location(db: Path | str | None) -> None:
    """Refuse a ``--db`` file the location rule refuses, before anything is created.

    The rule is :mod:`persistence.locations`' (the one ``Gateway.open``
    applies): the default location's directories are created whole; a path
    given gets at most its own folder, when that folder's parent exists. A
    ``postgresql://`` URL (a ``str``) and the default (``None``) pass.
    Caller's thread; a few ``stat`` calls.

    Raises:
        SessionStateError: the path is refused (the rule's one line).
    """
    if not isinstance(db, Path):
        return
    problem = sqlite_location_problem(db)
    if problem is not None:
        raise SessionStateError(f"--db {problem}")


def _watch(args: argparse.Namespace) -> int:
    from actors.cli.watch import run_watch  # noqa: PLC0415

    v.check_key(args.watcher, "--watcher")
    if not is_agent_qualified(args.watcher):
        raise SessionStateError("--watcher must be an agent-qualified session key "
                                "(agent:<agent id>:<rest>, e.g. agent:main:main)")
    if not (math.isfinite(args.interval) and MIN_INTERVAL_S <= args.interval <= 86_400):
        raise SessionStateError(f"--interval must be a number of seconds from "
                                f"{MIN_INTERVAL_S:g} to 86400")
    if args.scans is not None and args.scans < 0:
        raise SessionStateError("--scans must not be negative")
    _check_new_location(args.db)
    _check_exec_options(args)
    missing = _missing_catalogs(args)
    if missing:
        for flag, path in missing:
            sys.stderr.write(f"ssa watch: {flag} {path} does not exist (check the path; "
                             "without the option the standard locations are used)\n")
        return 2  # a usage error: watching nothing forever helps nobody
    return run_watch(args, out=sys.stdout, err=sys.stderr)  # today's streams, not import-time


def _missing_catalogs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The catalog paths given (``--claude DIR`` ...) that do not exist.

    Only explicit paths count: the standard locations may be absent (a tool
    not installed). Caller's thread; one ``stat`` per path.
    """
    return [(f"--{source.flag}", path) for source in all_sources()
            for path in (getattr(args, source.name, None) or []) if not os.path.exists(path)]


def _check_exec_options(args: argparse.Namespace) -> None:
    """``--exec``'s companions: only with ``--exec``, and in range (the command: run_watch)."""
    if args.exec is None:
        for flag, given in (("--shell", args.shell), ("--exec-timeout", args.exec_timeout),
                            ("--exec-jobs", args.exec_jobs)):
            if given not in (None, False):
                raise SessionStateError(f"{flag} needs --exec CMD")
    if args.exec_timeout is not None and not (
            math.isfinite(args.exec_timeout) and 0 < args.exec_timeout <= 86_400):
        raise SessionStateError("--exec-timeout must be a number of seconds, more than 0 and "
                                "at most 86400")
    if args.exec_jobs is not None and not 1 <= args.exec_jobs <= MAX_JOBS:
        raise SessionStateError(f"--exec-jobs must be from 1 to {MAX_JOBS}")


def _status(args: argparse.Namespace) -> int:
    v.check_key(args.key, "KEY")
    agent = v.check_agent_id(args.agent_id, "--agent-id") or agent_id_of(args.key)
    if args.changes_since is not None and args.changes_since < 0:
        raise SessionStateError("--changes-since must not be negative")
    if args.typed_text is not None and (args.changes_since is None
                                        or not 1 <= args.typed_text <= v.MAX_TYPED_TEXT):
        raise SessionStateError(f"--typed-text needs --changes-since and is from 1 to "
                                f"{v.MAX_TYPED_TEXT} characters")
    conn, where = open_existing(args.db, args.db_named_by)
    try:
        with text_faults(where):  # a stored text that is not UTF-8: one line, a read fault
            status, link = _status_of(conn, args, agent, where)
    finally:
        conn.close()
    if link is not None:  # which adopted session this is (paths, never message text)
        status["upstream"] = where_of(link)
    sys.stdout.write(msgspec.json.encode(status).decode() + "\n")
    return 0


def _status_of(conn: Any, args: argparse.Namespace, agent: str,
               where: str) -> tuple[dict[str, object], Any]:
    """``ssa status``'s reads: ``(the JSON object, the upstream link or None)``."""
    version = read_version(conn, args.key, agent)
    if version == 0 and read_entry(conn, args.key, agent) is None:
        # Never seen: version 0, as session_status answers (the contract: always a
        # state version; a session may be watched before it exists). A typo would
        # look like a quiet session, so a person is told on stderr.
        owner = "" if args.agent_id is None else f" of agent {agent}"
        listing = "ssa list" + ("" if args.db is None else f" --db {shlex.quote(where)}")
        sys.stderr.write(f"ssa: note: no session {args.key}{owner} in {where} yet, so "
                         f"version 0 ({listing} shows the sessions it knows)\n")
    if args.changes_since is None:
        status: dict[str, object] = {"stateVersion": version}
    else:
        after = v.check_changes_since(args.changes_since)
        version, changes = read_changes(conn, args.key, agent, after, 200)
        status = {"stateVersion": version, "stateChanges": changes}
        if args.typed_text is not None:
            from actors.facade.typed import typed_texts  # noqa: PLC0415 - only when asked
            status["typedText"] = typed_texts(conn, changes.events, args.typed_text)
    link = read_link(conn, args.key, agent)
    activity = activity_now(conn, args.key, agent)
    if activity is not None:  # where the session's tool stands (issue 33 item 2)
        status["workerState"] = activity
    return status, link


def _list(args: argparse.Namespace) -> int:
    conn, where = open_existing(args.db, args.db_named_by)
    with text_faults(where):  # a stored text that is not UTF-8: one line, a read fault
        return run_list(conn, args.agent_id, as_json=args.json, out=sys.stdout,
                        names=not args.no_names)


class _StderrHandler(logging.Handler):
    """Writes records to whatever ``sys.stderr`` is at the time (tests swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        """Write one formatted record to the current ``sys.stderr``."""
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # a closed or broken stderr must not break the command
            self.handleError(record)


def _show_library_warnings() -> None:
    """Route the library's WARNING and ERROR lines to stderr (once per process).

    The library itself only installs a ``NullHandler``; a command-line user
    must still see, e.g., that a transcript line is too large to scan.
    """
    for name in ("actors", "persistence"):
        library = logging.getLogger(name)
        if not any(isinstance(h, _StderrHandler) for h in library.handlers):
            handler = _StderrHandler(logging.WARNING)
            handler.setFormatter(logging.Formatter("ssa: %(message)s"))
            library.addHandler(handler)


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of subcommand ``command`` (``parser`` itself if there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser | None = action.choices.get(command)
            if found is not None:
                return found
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ssa`` command line.

    Args:
        argv: arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code: 0 on success, 1 on a runtime error (one line on
        stderr), 2 on a usage error (argparse).
    """
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["hook"]:
        from actors.agents.hook import main as hook_main  # noqa: PLC0415 -- its own parser

        return hook_main(words[1:])
    parser = _parser()
    args, extra = parser.parse_known_args(words)
    if extra:  # name the subcommand's usage, not the top level's (exits 2)
        _subparser(parser, args.command).error(f"unrecognized arguments: {' '.join(extra)}")
    # (the demo wants a new file; install writes what it was given, mcp reads $SSA_DB itself)
    args.db_named_by = "--db" if getattr(args, "db", None) is not None else None
    if hasattr(args, "db") and args.command not in ("demo", "install", "uninstall", "mcp"):
        if args.db is None and os.environ.get(DB_ENV):
            args.db_named_by = f"${DB_ENV}"
            try:
                args.db = _db_path(os.environ[DB_ENV])
            except argparse.ArgumentTypeError as exc:
                sys.stderr.write(f"ssa: ${DB_ENV}: {exc}\n")
                return 2
        elif isinstance(args.db, str) and url_has_password(args.db):
            sys.stderr.write("ssa: warning: the --db URL holds a password, which every local "
                             "user can read in the process list while ssa runs; use "
                             f"PGPASSWORD, ~/.pgpass, a service file (?service=NAME) or "
                             f"${DB_ENV} instead\n")
    _show_library_warnings()
    try:
        if args.command == "demo":
            from actors.cli.demo import run_demo  # noqa: PLC0415 -- keep `ssa status` light

            _check_new_location(args.db)
            return run_demo(args.db)
        if args.command == "status":
            return _status(args)
        if args.command == "classify":
            return _classify(args)
        if args.command == "watch":
            return _watch(args)
        if args.command == "watches":
            from actors.agents.watches import run_watches  # noqa: PLC0415 -- keep others light

            _check_new_location(args.db)
            return run_watches(args.action, args.watcher, args.targets,
                               args.db if args.db is not None else default_state_path(),
                               sys.stdout)
        if args.command == "manage":
            from actors.agents.manage import run_manage  # noqa: PLC0415 -- keep others light

            _check_new_location(args.db)
            return run_manage(args.db if args.db is not None else default_state_path(),
                              args.session, off=args.off, wake=not args.no_wake,
                              out=sys.stdout)
        if args.command == "doctor":
            from actors.cli.doctor import run_doctor  # noqa: PLC0415 -- keep others light

            return run_doctor(args.db, as_json=args.json, out=sys.stdout)
        if args.command in ("install", "uninstall", "mcp"):
            from actors.agents.commands import run_command  # noqa: PLC0415

            return run_command(args)
        return _list(args)
    except KeyboardInterrupt:
        return 130  # Ctrl-C before a command installed its own handler: no traceback
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, like other CLI tools.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (SessionStateError, StorageError, OSError, apsw.Error, BackendNotInstalled) as exc:
        sys.stderr.write(f"ssa: {exc}\n")
        return 1
