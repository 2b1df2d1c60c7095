"""One look of ``ssa hook``: prepare the run, then check (adopt, watch, scan, deliver).

What lives here: :func:`prepare` (the hook input, the session's key, the
signal log, the caller record) and :func:`check` (the cold path's peek,
and the warm path only when there is work), shared by the prompt hook
(:mod:`actors.agents.hook`) and the wait mode (:mod:`actors.agents.hookwait`).
Cold path: the standard library, APSW and the light modules of this package.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable

from actors.agents.caller import record_caller
from actors.agents.hookargs import URL_SCHEMES, HookArgs, location_of
from actors.agents.hookinput import HookInput, HookInputError, parse_hook_input
from actors.agents.hookplan import plan_from
from actors.agents.project import project_roots
from actors.agents.sessions import CwdCache, StoreRow, find_sessions
from actors.agents.spawn import spawn_waiter, waiter_alive
from actors.agents.tools import tool_named
from actors.upstream.catalog import default_catalogs
from persistence import peek
from persistence.keys import key_problem
from persistence.locations import default_state_file, folders_to_create, sqlite_location_problem
from persistence.record import Record

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from typing import Any, Literal, TextIO, TypeAlias

__all__ = ["Checked", "Run", "catalogs_for", "check", "prepare"]


class Run(Record):
    """What one hook process knows about its session (made once by :func:`prepare`).

    Attributes:
        hook: the parsed hook input.
        watcher: the session's key.
        location: the signal log (a SQLite path or a ``postgresql://`` URL).
        is_url: whether ``location`` is a PostgreSQL URL.
        state_dir: the directory of the hook's own files.
        parent: the session that spawned this one (its tool process is an
            ancestor of this one's: :func:`actors.agents.caller.record_caller`),
            or ``None``.
    """

    __slots__ = ("hook", "is_url", "location", "parent", "state_dir", "watcher")

    def __init__(self, hook: HookInput, watcher: str, location: str, is_url: bool,
                 state_dir: str, parent: str | None = None) -> None:
        self.hook = hook
        self.watcher = watcher
        self.location = location
        self.is_url = is_url
        self.state_dir = state_dir
        self.parent = parent


def prepare(args: HookArgs, raw: bytes, *, event: str | None = None) -> Run:
    """Parse the hook input and record which session the tool process runs.

    ``event``: the hook event to answer as (the wait mode's push path), instead
    of the input's.

    Raises:
        HookInputError: the input is not what the tool documents, its session
            id makes no key, or the signal log's location is refused
            (:func:`~persistence.locations.sqlite_location_problem`; nothing
            was created).

    Caller's thread; blocks on a few small file reads and writes.
    """
    hook = parse_hook_input(args.tool, raw, event=event)
    watcher = f"agent:{args.agent}:{hook.source}:{hook.session_id}"
    problem = key_problem(watcher)
    if problem is not None:
        raise HookInputError(f"session id {hook.session_id!r} makes no session key: {problem}")
    location = location_of(args)
    is_url = location.startswith(URL_SCHEMES)
    # The database first: a location the rule refuses (":memory:", /dev/null, a
    # directory, a missing tree) gets nothing created beside it, no hooks/ folder.
    signal_log = location if not is_url else default_state_file()
    problem = sqlite_location_problem(signal_log)
    if problem is None and not os.path.isabs(signal_log):
        # The tool runs the hook in each project's folder: a relative path would be a
        # database (and a hooks/ folder) per project.
        problem = (f"{location} is a relative path; give an absolute one (the hook runs in "
                   "each project's folder)")
    if problem is not None:
        named_by = ("the default database" if is_url or location == default_state_file()
                    else "--db" if args.db else "$SSA_DB")
        raise HookInputError(f"{named_by} {problem}")
    state_dir = os.path.dirname(signal_log)
    with contextlib.suppress(OSError):  # the folders the rule allows, as a gateway makes them
        for folder in folders_to_create(signal_log):
            os.mkdir(folder, 0o700)
    parent = record_caller(state_dir, watcher)  # ssa manage and ssa mcp find it so
    return Run(hook=hook, watcher=watcher, location=location, is_url=is_url,
               state_dir=state_dir, parent=parent if parent != watcher else None)


if TYPE_CHECKING:  # an alias for annotations: typing is not loaded at run time
    Checked: TypeAlias = Literal["delivered", "nothing", "worker", "no-wake"]
    """What one :func:`check` did: delivered notices; found nothing to deliver; the session
    is a worker; it is a manager whose wakes are off."""


def check(run: Run, args: HookArgs, out: TextIO,
          exit_now: Callable[[int], None] | None = None, *, exit_code: int = 0) -> Checked:
    """One look: adopt, watch and scan what the plan says, then deliver what is pending.

    Args:
        run: what :func:`prepare` made.
        args: the command line.
        out: where the notices go, in the tool's output form for ``run.hook.event``.
        exit_now: called with ``exit_code`` right after printed notices were
            acknowledged (``None``: return normally).

    Returns:
        What it did (see :data:`Checked`).

    Raises:
        persistence.StorageError, actors.errors.GatewayClosed: the signal log failed.

    Main thread; blocks on the database and the transcripts.
    """
    hook, watcher, location = run.hook, run.watcher, run.location
    conn = None if run.is_url else _open_peek(location)
    try:
        if conn is not None:
            role, wake = peek.role(conn, watcher)
            if role == "worker":
                if not args.wait:
                    _start_waiter(run, args, worker=True)
                if _unwatched_spawn(conn, run):
                    from actors.agents.hookwarm import watch_spawned  # noqa: PLC0415

                    watch_spawned(run, args)
                return "worker"  # never notified: nothing to adopt, watch or print
            if args.wait and not wake:
                return "no-wake"
            if wake and not args.wait:
                _start_waiter(run, args)
        if conn is None and not run.is_url and not os.path.exists(location):
            if not args.wait:
                _start_waiter(run, args, worker=True)  # for sent messages, where it must
            return "worker"  # no signal log yet: no manager either
        # saved once the state directory exists
        cache = CwdCache(os.path.join(run.state_dir, "hook-cwd-cache.json"))
        stores: dict[str, list[StoreRow]] = {}
        found = find_sessions(catalogs_for(hook.cwd), cache, stores)
        plan = None
        if conn is not None:
            plan = plan_from(conn, hook, watcher, agent=args.agent, scope=args.scope,
                             found=found, stores=stores)
            if plan.idle:
                cache.save()
                return "nothing"
    finally:
        if conn is not None:
            conn.close()
    # The warm path pulls in the engine: imported only when there is work (cold start).
    from actors.agents.hookwarm import work  # noqa: PLC0415 - scripts/bench_hook.py

    cache.save()  # before printing: after the acknowledgement comes only the exit
    delivered = work(location, hook, watcher, args, found, stores, out, plan,
                     lambda: _finish(exit_now, exit_code))
    cache.save()  # a first run's state directory exists only now
    return "delivered" if delivered else "nothing"


def catalogs_for(cwd: str) -> dict[str, list[str]]:
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
        here = list(project_roots(cwd))
        catalogs = {name: roots or here for name, roots in catalogs.items()}
    return catalogs


def _finish(exit_now: Callable[[int], None] | None, code: int) -> None:
    """Right after the acknowledgement: from the CLI, end at once (issue 34 item 3).

    The tool reads the output only from a hook that exits 0; ending right
    after the acknowledgement committed leaves no gap in which a kill would
    throw away output whose notices are acknowledged already: nothing is
    written in between (the cache was saved before printing). Nothing is lost
    by not closing the gateway: its writes are committed, the presence lock is
    the kernel's, and its scan leases lapse after the hook's short ``lease_ms``.
    """
    if exit_now is None:
        return
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    exit_now(code)


def _unwatched_spawn(conn: Any, run: Run) -> bool:
    """Whether a manager spawned this session and does not watch it yet (a spawn edge)."""
    return (run.parent is not None and peek.role(conn, run.parent)[0] == "manager"
            and run.watcher not in peek.watched_targets(conn, run.parent))


def _start_waiter(run: Run, args: HookArgs, *, worker: bool = False) -> None:
    """For a tool whose waiting hook the prompt hook starts: start it when none runs
    (for a worker only where it waits for sent messages)."""
    found_tool = tool_named(args.tool)
    push = found_tool.push if found_tool is not None else None
    if args.no_wake or push is None or not push.spawn \
            or (worker and not push.spawn_for_workers) \
            or waiter_alive(run.state_dir, run.watcher):
        return
    options = [*(["--db", args.db] if args.db else []), "--scope", args.scope,
               "--agent", args.agent]
    spawn_waiter(args.tool, options, {
        "session_id": run.hook.session_id, "cwd": run.hook.cwd,
        "transcript_path": run.hook.transcript_path, "hook_event_name": push.event})


def _open_peek(location: str) -> Any:
    """A read-only connection for the cold path, or ``None`` when the file cannot be peeked
    at (missing, or another schema version: the gateway makes or migrates it)."""
    try:
        return peek.open_peek(location)
    except peek.PeekUnavailable:
        return None
