"""``ssa hook <tool>``: put a manager's pending notices into its next turn.

Each coding agent runs this at every prompt a person submits (Claude Code
and Codex: a ``UserPromptSubmit`` / ``SessionStart`` command hook;
OpenCode: the plugin's ``experimental.chat.system.transform``; Pi: the
extension's ``before_agent_start``). The session whose turn it is, the
*manager*, is the watcher ``agent:main:<source>:<session id>`` (the key
``ssa watch`` gives adopted sessions). One run:

1. reads the tool's hook input (:mod:`actors.agents.hookinput`) and
   records which session the tool process runs (:mod:`actors.agents.caller`,
   for ``ssa manage`` and ``ssa mcp``); a session that is not a manager
   (``ssa manage``; every session starts as a worker) stops here: a worker
   is never notified;
2. lists every tool's sessions (:mod:`actors.agents.sessions`) and picks
   those the manager watches: by default every other session of its
   project (:mod:`actors.agents.project`), ``--scope all`` every session,
   ``--scope list`` only the watches added with ``ssa watches add``;
3. peeks at the signal log (:mod:`persistence.peek`, no actor): a notice
   to deliver, a session to adopt or to start watching, or a watched
   transcript that changed while no ``ssa watch`` holds its scan lease is
   *work*; with none, it exits having printed nothing (the cold path);
4. otherwise opens a :class:`~actors.Gateway` (``monitor=False``), adopts,
   watches and scans what changed, prints the pending notices with a
   summary of their changes (:mod:`actors.agents.context`) in the tool's
   output form, flushes, and only then acknowledges exactly the notices it
   printed (``drain(only=...)``): a hook killed before that shows them
   again at the next turn, never loses them and never acknowledges one
   unseen.

The command line is :mod:`actors.agents.hookargs`, the plan
:mod:`actors.agents.hookplan`, the budget :mod:`actors.agents.hookbudget`
(all cold path: the standard library and APSW), the warm path
:mod:`actors.agents.hookwarm`.

It never stands in the person's way: any failure (no database, locked,
corrupt, a wrong stdin, the time budget spent) prints nothing on stdout,
one line on stderr, and exits 0, within ``--timeout`` seconds.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, TextIO

from actors.agents.caller import record_caller
from actors.agents.hookargs import URL_SCHEMES, HookArgs, location_of, parse, parse_slowly
from actors.agents.hookbudget import HookTimeout, deadline, say, watchdog
from actors.agents.hookinput import MAX_INPUT_BYTES, HookInputError, parse_hook_input
from actors.agents.hookplan import plan_from
from actors.agents.project import project_roots
from actors.agents.sessions import CwdCache, StoreRow, find_sessions
from actors.upstream.catalog import default_catalogs
from persistence import peek
from persistence.keys import key_problem
from persistence.lazylog import get_logger
from persistence.locations import default_state_path

__all__ = ["main"]

logger = get_logger(__name__)


def main(argv: Sequence[str], *, stdin: IO[bytes] | None = None,
         stdout: TextIO | None = None, stderr: TextIO | None = None,
         exit_now: Callable[[], None] | None = None) -> int:
    """Run ``ssa hook`` with ``argv`` (the words after ``hook``).

    Args:
        argv: e.g. ``["claude-code"]`` or ``["codex", "--db", "/tmp/x.sqlite"]``.
        stdin: the hook input (default: ``sys.stdin.buffer``).
        stdout: where the context goes (default: ``sys.stdout``).
        stderr: where the one line about a failure goes (default: ``sys.stderr``).
        exit_now: ends the process at once (``ssa hook`` passes ``os._exit``):
            called right after the notices printed were acknowledged, so a
            tool that kills the hook then finds it gone, and by a watchdog
            :data:`~actors.agents.hookbudget.HARD_STOP_S` after a budget
            that a blocked call outlived.
            ``None`` (tests): return normally.

    Returns:
        ``0`` always: also for a failure, and for a command line it does not
        understand (a tool takes exit 2 as "block the prompt"); the reason
        is one line on stderr. ``--help`` prints the usage.

    Main thread (it arms SIGALRM for the budget); blocks for at most
    ``--timeout`` seconds, plus :data:`~actors.agents.hookbudget.HARD_STOP_S` with ``exit_now``.
    """
    if stdout is None:  # what the tool reads is UTF-8 JSON or text, whatever the locale
        with contextlib.suppress(AttributeError, ValueError):
            sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[union-attr]
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    source = stdin if stdin is not None else sys.stdin.buffer
    args = parse(list(argv))
    if args is None:
        args = parse_slowly(list(argv), out, err)
        if args is None:
            return 0
    timer = watchdog(args.timeout, err, exit_now)
    try:
        with deadline(args.timeout):
            _run(args, source, out, exit_now)
    except HookTimeout as exc:
        say(err, str(exc))
    except HookInputError as exc:
        say(err, str(exc))
    except Exception as exc:  # never in the person's way
        logger.debug("ssa hook failed", exc_info=True)
        say(err, f"{type(exc).__name__}: {exc}")
    finally:
        if timer is not None:
            timer.cancel()
    return 0


def _run(args: HookArgs, source: IO[bytes], out: TextIO,
         exit_now: Callable[[], None] | None = None) -> None:
    hook = parse_hook_input(args.tool, source.read(MAX_INPUT_BYTES + 1))
    watcher = f"agent:{args.agent}:{hook.source}:{hook.session_id}"
    problem = key_problem(watcher)
    if problem is not None:
        raise HookInputError(f"session id {hook.session_id!r} makes no session key: {problem}")
    location = location_of(args)
    is_url = location.startswith(URL_SCHEMES)
    if args.db is not None and not is_url and not Path(location).parent.is_dir():
        # As every ssa command: a --db file must be in a directory that exists.
        raise HookInputError(f"--db {location}: no directory {Path(location).parent}")
    state_dir = Path(location).parent if not is_url else default_state_path().parent
    record_caller(state_dir, watcher)  # ssa manage and ssa mcp find this session so
    conn = None if is_url else _open_peek(location)
    try:
        if conn is not None and peek.role(conn, watcher)[0] == "worker":
            return  # a worker is never notified: nothing to adopt, watch or print
        if conn is None and not is_url and not Path(location).exists():
            return  # no signal log yet: no manager either
        cache = CwdCache(state_dir / "hook-cwd-cache.json")  # saved once the directory exists
        stores: dict[str, list[StoreRow]] = {}
        found = find_sessions(catalogs_for(hook.cwd), cache, stores)
        plan = None
        if conn is not None:
            plan = plan_from(conn, hook, watcher, agent=args.agent, scope=args.scope,
                             found=found, stores=stores)
            if plan.idle:
                cache.save()
                return
    finally:
        if conn is not None:
            conn.close()
    # The warm path pulls in the engine: imported only when there is work (cold start).
    from actors.agents.hookwarm import work  # noqa: PLC0415 - scripts/bench_hook.py

    work(location, hook, watcher, args, found, stores, out, plan,
         lambda: _finish(cache, exit_now))
    cache.save()


def catalogs_for(cwd: str) -> dict[str, list[Path]]:
    """Where the hook looks for sessions, for a manager working in ``cwd``.

    Every source's standard locations (:func:`~actors.upstream.catalog.default_catalogs`);
    a source that has none (its sessions are files in the project: Aider's
    history, Crush's store) is looked for in the manager's project,
    :func:`~actors.agents.project.project_roots` of ``cwd`` (its discovery takes
    a repository or a folder of repositories). Returns ``{source: [roots]}``.
    Caller's thread; blocks on a few ``stat`` calls; never raises.
    """
    catalogs = default_catalogs()
    if any(not roots for roots in catalogs.values()):
        here = [Path(root) for root in project_roots(cwd)]
        catalogs = {name: roots or here for name, roots in catalogs.items()}
    return catalogs


def _finish(cache: CwdCache, exit_now: Callable[[], None] | None) -> None:
    """Right after the acknowledgement: save the cache and, from the CLI, end at once.

    The tool reads the output when the process ends; ending right after the
    acknowledgement committed leaves no gap in which a kill would throw away
    output whose notices are acknowledged already. Nothing is lost by not
    closing the gateway: its writes are committed, the presence lock is the
    kernel's, and its scan leases lapse after the hook's short ``lease_ms``.
    """
    if exit_now is None:
        return
    cache.save()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    exit_now()


def _open_peek(location: str) -> Any:
    """A read-only connection for the cold path, or ``None`` when the file cannot be peeked
    at (missing, or another schema version: the gateway makes or migrates it)."""
    try:
        return peek.open_peek(location)
    except peek.PeekUnavailable:
        return None
