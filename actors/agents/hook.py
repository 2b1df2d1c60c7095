"""``ssa hook <tool>``: put a manager's pending notices into its next turn.

Each coding agent runs this at every prompt a person submits (Claude Code
and Codex: a ``UserPromptSubmit`` / ``SessionStart`` command hook;
OpenCode: the plugin's ``experimental.chat.system.transform``; Pi: the
extension's ``before_agent_start``). The session whose turn it is, the
*manager*, is the watcher ``agent:main:<source>:<session id>`` (the key
``ssa watch`` gives adopted sessions). One run:

1. reads the tool's hook input (:mod:`actors.agents.hookinput`);
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

It never stands in the person's way: any failure (no database, locked,
corrupt, a wrong stdin, the time budget spent) prints nothing on stdout,
one line on stderr, and exits 0, within ``--timeout`` seconds.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import IO, Any, NamedTuple, TextIO

from actors.agents.context import MAX_EVENTS_PER_NOTICE, NoticeView, SummaryEvent, render_context
from actors.agents.hookinput import (
    MAX_INPUT_BYTES,
    TOOLS,
    HookInput,
    HookInputError,
    parse_hook_input,
    render_output,
)
from actors.agents.project import project_of
from actors.agents.sessions import CwdCache, Found, StoreRow, find_sessions
from actors.upstream.catalog import default_catalogs
from actors.upstream.sources import find_source
from persistence import peek
from persistence.keys import agent_id_of, key_problem
from persistence.lazylog import get_logger
from persistence.locations import default_state_path

__all__ = ["DEFAULT_TIMEOUT_S", "SCOPES", "Plan", "main", "plan_work"]

logger = get_logger(__name__)

DEFAULT_TIMEOUT_S = 8.0
"""The hook's whole time budget, in seconds (Claude Code waits 30 s; our OpenCode
plugin and Pi extension wait 10 s)."""
SCOPES = ("project", "all", "list")
LEASE_MS = 3000
"""The hook's scan leases: a hook killed mid-scan holds them this long at most."""
MAX_ADOPT_PER_RUN = 200
"""New sessions one run adopts (newest first); the rest wait for the next prompts, so a
burst of thousands of new sessions never pushes a run past its budget."""
NEW_SESSION_SLACK_MS = 2000
"""A session first seen after the manager's first hook run counts from its start when
it began at most this long before that run (clocks of two tools may differ a little)."""
_NOTICE = re.compile(r'sessionKey "(?P<key>[^"]+)" changesSince (?P<since>\d+)\.$')
_URL_SCHEMES = ("postgres://", "postgresql://")


class HookTimeout(Exception):
    """The hook's time budget ran out."""


class Target(NamedTuple):
    """A session the manager should watch: its key and where it is."""

    key: str
    found: Found
    linked: bool


class Plan(NamedTuple):
    """What one hook run must do beyond reading (empty: the cold path).

    Attributes:
        adopt: sessions to adopt (and watch); none has a link yet.
        watch: linked sessions the manager does not watch yet.
        scan: watched linked session keys whose transcript changed while no
            other process holds their scan lease.
        pending: the manager has open notices.
        own: the manager's own session needs adopting or registering.
        first_run: the manager has no session entry yet (this is its first
            turn seen): what exists now is linked at its current end.
    """

    adopt: tuple[Target, ...] = ()
    watch: tuple[Target, ...] = ()
    scan: tuple[str, ...] = ()
    pending: bool = False
    own: bool = False
    first_run: bool = True

    @property
    def idle(self) -> bool:
        """Whether there is nothing to do but exit."""
        return not (self.adopt or self.watch or self.scan or self.pending or self.own)


def _in_store(source: str) -> bool:
    """Whether ``source``'s sessions are rows of a store (its marker keeps their ``seq``)."""
    found = find_source(source)
    return found is not None and found.holds == "store"


def _key(agent: str, found: Found) -> str:
    return f"agent:{agent}:{found.source}:{found.thread_id}"


def _changed(link: peek.LinkPeek, stores: dict[str, dict[str, int]],
             listed: Found | None) -> bool:
    """Whether ``link``'s source may hold something its marker has not read.

    ``listed``: the same session as the catalogs listed it this run (its
    ``stat`` is reused); otherwise one ``stat``.
    """
    if link.host_id != "gateway:local":
        return False  # read through a paired node's host: not ours to scan
    in_store = _in_store(link.source)
    if listed is not None and listed.stat is not None and not in_store:
        marker = link.marker
        return listed.stat != (marker.get("inode"), marker.get("offset"))
    path = link.path
    if path is None:
        return False
    if in_store:
        seqs = stores.get(path)
        if seqs is None:
            return False  # the store is not in a catalog this run lists
        seq = seqs.get(link.thread_id)
        return seq is None or seq != link.marker.get("seq")
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return True  # vanished: a scan counts it missing
    marker = link.marker
    return st.st_ino != marker.get("inode") or st.st_size != marker.get("offset")


def plan_work(*, hook: HookInput, watcher: str, agent: str, scope: str, found: list[Found],
              links: list[peek.LinkPeek], watched: set[str], pending: bool,
              created_at: int | None, now_ms: int,
              stores: dict[str, list[StoreRow]],
              known: set[str] | None = None) -> Plan:
    """Decide what a hook run must do, from what it found and peeked (pure but for ``stat``).

    Args:
        hook: the hook input.
        watcher: the manager's key.
        agent: the agent id of the keys.
        scope: ``"project"``, ``"all"`` or ``"list"``.
        found: every session in the catalogs.
        links: every upstream link in the signal log.
        watched: the keys the manager has a cursor on.
        pending: whether the manager has open notices.
        created_at: when the manager's session entry was created, or ``None``.
        now_ms: the time, epoch ms (lease expiry).
        stores: each store's rows, by database path (change detection).
        known: the keys of every session entry (a watched session that has
            one was adopted already, with or without a link).

    Returns:
        The plan; :attr:`Plan.idle` when there is nothing to do.
    """
    by_key = {link.session_key: link for link in links}
    listed: dict[str, Found] = {}
    by_ref: dict[tuple[str, str | None, str], peek.LinkPeek] | None = None
    project = project_of(hook.cwd)
    projects: dict[str, str] = {}
    targets: list[Target] = []
    watched_new: list[Target] = []
    for candidate in found:
        key = _key(agent, candidate)
        listed[key] = candidate
        if key in watched:  # the usual case: no more work per session
            if key not in by_key and known is not None and key not in known:
                watched_new.append(Target(key=key, found=candidate, linked=False))
            continue
        if scope == "list" or key == watcher or (candidate.source == hook.source
                                                 and candidate.thread_id == hook.session_id):
            continue
        if scope == "project":
            if candidate.cwd is None:
                continue
            if candidate.cwd not in projects:
                projects[candidate.cwd] = project_of(candidate.cwd)
            if projects[candidate.cwd] != project:
                continue
        if by_ref is None:  # adoption stored real paths
            by_ref = {(link.source, link.path, link.thread_id): link for link in links}
        link = by_ref.get((candidate.source, candidate.path, candidate.thread_id))
        if link is None:
            link = by_key.get(key)  # linked through another path (a symlink): keep it
        targets.append(Target(key=link.session_key if link else key, found=candidate,
                              linked=link is not None))
    fresh = sorted((t for t in targets if not t.linked and t.key not in watched),
                   key=lambda t: -(t.found.started_ms or 0))  # the newest first
    adopt = (*watched_new, *fresh)[:MAX_ADOPT_PER_RUN]
    watch = tuple({t.key: t for t in targets if t.linked and t.key not in watched}.values())
    seqs = {db: {row.session_id: row.seq for row in rows} for db, rows in stores.items()}
    scan = tuple(key for key in sorted(watched) if (link := by_key.get(key)) is not None
                 and (link.lease_owner is None or link.lease_expires_at <= now_ms)
                 and _changed(link, seqs, listed.get(key)))
    own = created_at is None or (watcher not in by_key and hook.transcript_path is not None
                                 and os.path.isfile(hook.transcript_path))
    return Plan(adopt=adopt, watch=watch, scan=scan, pending=pending, own=own,
                first_run=created_at is None)


class _UsageError(Exception):
    """A command line ``ssa hook`` does not understand (argparse's message)."""


def _parser() -> Any:
    import argparse  # noqa: PLC0415 - only for --help and mistakes (start-up cost)

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # no usage dump: one line, then exit 0
            raise _UsageError(message)

    parser = Parser(
        prog="ssa hook", description="Print the pending notices of a coding agent's session "
        "for its next turn (run by the tool's prompt hook; always exits 0).")
    parser.add_argument("tool", choices=tuple(TOOLS))
    parser.add_argument("--db", help="the signal log: a SQLite file or a postgresql:// URL "
                        "(default: $SSA_DB, else ssa watch's default database)")
    parser.add_argument("--scope", choices=SCOPES, default="project",
                        help="which sessions the manager watches: the other sessions of its "
                        "project (default), all sessions, or only those added with "
                        "'ssa watches add'")
    parser.add_argument("--agent", default="main", help="agent id of the session keys "
                        "(default: main, as ssa watch)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help=f"the whole run's budget in seconds (default {DEFAULT_TIMEOUT_S}; "
                        "0: none)")
    return parser


class _Args(NamedTuple):
    tool: str
    db: str | None = None
    scope: str = "project"
    agent: str = "main"
    timeout: float = DEFAULT_TIMEOUT_S


_OPTIONS = {"--db": "db", "--scope": "scope", "--agent": "agent", "--timeout": "timeout"}


def _parse(argv: list[str]) -> _Args | None:
    """The command line the installers write, parsed without argparse; ``None``: anything else.

    ``ssa hook`` starts at every prompt, and argparse alone costs a large
    part of a cold start; ``--help`` and mistakes go through argparse.
    """
    tool: str | None = None
    values: dict[str, Any] = {}
    words = iter(argv)
    for word in words:
        name, eq, inline = word.partition("=")
        if name in _OPTIONS:
            value = inline if eq else next(words, None)
            if value is None:
                return None
            values[_OPTIONS[name]] = value
        elif word.startswith("-") or tool is not None:
            return None
        else:
            tool = word
    if tool not in TOOLS or values.get("scope", "project") not in SCOPES:
        return None
    try:
        values["timeout"] = float(values.get("timeout", DEFAULT_TIMEOUT_S))
    except ValueError:
        return None
    if not values["timeout"] >= 0:
        return None
    return _Args(tool=tool, **values)


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`HookTimeout` in the main thread after ``seconds`` (SIGALRM)."""
    if threading_main() and seconds > 0:
        def expire(signum: int, frame: FrameType | None) -> None:
            raise HookTimeout(f"gave up after {seconds:g} s")

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    else:
        yield


def threading_main() -> bool:
    """Whether this runs in the main thread (only it can take SIGALRM)."""
    import threading  # noqa: PLC0415 - cheap, and only needed here

    return threading.current_thread() is threading.main_thread()


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
            :data:`HARD_STOP_S` after a budget that a blocked call outlived.
            ``None`` (tests): return normally.

    Returns:
        ``0`` always: also for a failure, and for a command line it does not
        understand (a tool takes exit 2 as "block the prompt"); the reason
        is one line on stderr. ``--help`` prints the usage.

    Main thread (it arms SIGALRM for the budget); blocks for at most
    ``--timeout`` seconds, plus :data:`HARD_STOP_S` with ``exit_now``.
    """
    if stdout is None:  # what the tool reads is UTF-8 JSON or text, whatever the locale
        with contextlib.suppress(AttributeError, ValueError):
            sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[union-attr]
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    source = stdin if stdin is not None else sys.stdin.buffer
    args = _parse(list(argv))
    if args is None:
        args = _parse_slowly(list(argv), out, err)
        if args is None:
            return 0
    watchdog = _watchdog(args.timeout, err, exit_now)
    try:
        with _deadline(args.timeout):
            _run(args, source, out, exit_now)
    except HookTimeout as exc:
        _say(err, str(exc))
    except HookInputError as exc:
        _say(err, str(exc))
    except Exception as exc:  # never in the person's way
        logger.debug("ssa hook failed", exc_info=True)
        _say(err, f"{type(exc).__name__}: {exc}")
    finally:
        if watchdog is not None:
            watchdog.cancel()
    return 0


HARD_STOP_S = 1.0
"""How long past its budget a hook blocked in a call that SIGALRM cannot interrupt
(a database lock, a thread join) may run before the watchdog ends the process."""


def _watchdog(budget: float, err: TextIO, exit_now: Callable[[], None] | None) -> Any:
    """A daemon timer that ends the process :data:`HARD_STOP_S` after the budget."""
    if exit_now is None or budget <= 0:
        return None
    import threading  # noqa: PLC0415 - cheap; only with a budget

    def stop() -> None:
        _say(err, f"gave up after {budget:g} s")
        exit_now()

    timer = threading.Timer(budget + HARD_STOP_S, stop)
    timer.daemon = True
    timer.start()
    return timer


def _parse_slowly(argv: list[str], out: TextIO, err: TextIO) -> _Args | None:
    """argparse for ``--help`` and mistakes; ``None`` (after one stderr line) to stop."""
    parser = _parser()
    try:
        namespace = parser.parse_args(argv)
    except SystemExit:  # --help: its text is on stdout
        return None
    except _UsageError as exc:
        _say(err, f"bad command line ({exc}): ssa hook {' '.join(argv)} (see ssa hook --help)")
        return None
    if namespace.timeout < 0:
        _say(err, "--timeout must be >= 0")
        return None
    return _Args(tool=namespace.tool, db=namespace.db, scope=namespace.scope,
                 agent=namespace.agent, timeout=namespace.timeout)

def _say(err: TextIO, line: str) -> None:
    with contextlib.suppress(Exception):
        err.write(f"ssa hook: {line.splitlines()[0] if line else 'failed'}\n")
        err.flush()


def _location(args: _Args) -> str:
    return args.db or os.environ.get("SSA_DB") or str(default_state_path())


def _run(args: _Args, source: IO[bytes], out: TextIO,
         exit_now: Callable[[], None] | None = None) -> None:
    hook = parse_hook_input(args.tool, source.read(MAX_INPUT_BYTES + 1))
    watcher = f"agent:{args.agent}:{hook.source}:{hook.session_id}"
    problem = key_problem(watcher)
    if problem is not None:
        raise HookInputError(f"session id {hook.session_id!r} makes no session key: {problem}")
    location = _location(args)
    is_url = location.startswith(_URL_SCHEMES)
    if args.db is not None and not is_url and not Path(location).parent.is_dir():
        # As every ssa command: a --db file must be in a directory that exists.
        raise HookInputError(f"--db {location}: no directory {Path(location).parent}")
    state_dir = Path(location).parent if not is_url else default_state_path().parent
    cache = CwdCache(state_dir / "hook-cwd-cache.json")  # saved once the directory exists
    stores: dict[str, list[StoreRow]] = {}
    found = find_sessions(default_catalogs(), cache, stores)
    now_ms = time.time_ns() // 1_000_000
    if not is_url:
        plan = _peek_plan(location, hook, watcher, args, found, now_ms, stores)
        if plan is not None and plan.idle:
            cache.save()
            return
    else:
        plan = None
    _work(location, hook, watcher, args, found, stores, out, plan,
          lambda: _finish(cache, exit_now))
    cache.save()


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


def _peek_plan(location: str, hook: HookInput, watcher: str, args: _Args,
               found: list[Found], now_ms: int,
               stores: dict[str, list[StoreRow]]) -> Plan | None:
    """The plan from a cheap read, or ``None`` when the file cannot be peeked at."""
    try:
        conn = peek.open_peek(location)
    except peek.PeekUnavailable:
        return None  # no signal log yet (or another schema): the gateway makes it
    try:
        return _plan_from(conn, hook, watcher, args, found, stores)
    finally:
        conn.close()


def _is_new(found: Found, since_ms: int) -> bool:
    """Whether a session first seen now began after the manager's first turn.

    Such a session is read from its start (its first prompt may be what a
    person typed since); one that began earlier is linked at its end, so
    turns typed before the manager watched it never count.
    """
    return found.started_ms is not None and found.started_ms >= since_ms - NEW_SESSION_SLACK_MS


def _work(location: str, hook: HookInput, watcher: str, args: _Args, found: list[Found],
          stores: dict[str, list[StoreRow]], out: TextIO, plan: Plan | None,
          acknowledged: Callable[[], None]) -> None:
    """The warm path: a gateway adopts, watches, scans, prints and acknowledges."""
    from actors import AdoptRequest, Gateway, GatewayConfig  # noqa: PLC0415 - warm path only

    config = GatewayConfig(ask_timeout_s=min(3.0, max(0.5, args.timeout / 3)),
                           busy_timeout_ms=int(min(2000, max(200, args.timeout * 250))),
                           lease_ms=LEASE_MS, missing_threshold=1)
    with _one_at_a_time(location, watcher):
        gw = Gateway.open(location, config=config, monitor=False)
        try:
            if plan is None:  # no peek before (PostgreSQL, or a file made just now)
                with gw.read_pool.connection() as conn:
                    plan = _plan_from(conn, hook, watcher, args, found, stores)
            _apply(gw, AdoptRequest, hook, watcher, plan)
            # Scans are done: the next prompt's hook may scan at once (this process
            # ends without closing, so its leases would otherwise last lease_ms).
            gw.release_leases()
            if _deliver(gw, hook, watcher, out):
                acknowledged()
        finally:
            gw.close(timeout=2.0)


@contextlib.contextmanager
def _one_at_a_time(location: str, watcher: str) -> Iterator[None]:
    """Serialize the warm paths of one watcher's hooks on this host (an ``flock``).

    Two hooks of one session can run at once (``SessionStart`` and the first
    ``UserPromptSubmit``, or a tool that retries); without this both would
    print the same notice before either acknowledged it. The second waits
    (within its budget), then finds the notice acknowledged and prints
    nothing. The lock file (``hooks/<hash>.lock`` beside the database, 0600)
    holds no data. Blocks until the lock is free or SIGALRM ends the run.
    """
    import fcntl  # noqa: PLC0415 - warm path only
    import hashlib  # noqa: PLC0415 - warm path only

    base = (default_state_path().parent if location.startswith(_URL_SCHEMES)
            else Path(location).parent)
    directory = base / "hooks"
    try:
        if not base.is_dir():  # the first run ever: the gateway makes the directory (0700)
            raise FileNotFoundError(base)
        directory.mkdir(mode=0o700, exist_ok=True)
        name = hashlib.sha256(watcher.encode("utf-8", "surrogateescape")).hexdigest()[:24]
        fd = os.open(directory / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:  # no lock: run anyway (a duplicate at worst, never a loss)
        logger.debug("the hook's lock is unavailable: %s", exc)
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _plan_from(conn: Any, hook: HookInput, watcher: str, args: _Args, found: list[Found],
               stores: dict[str, list[StoreRow]]) -> Plan:
    return plan_work(hook=hook, watcher=watcher, agent=args.agent, scope=args.scope,
                     found=found, links=peek.links(conn),
                     watched=peek.watched_targets(conn, watcher),
                     pending=bool(peek.pending(conn, watcher)),
                     created_at=peek.session_created_at(conn, watcher),
                     now_ms=time.time_ns() // 1_000_000, stores=stores,
                     known=peek.session_keys(conn))


def _apply(gw: Any, adopt_request: Any, hook: HookInput, watcher: str, plan: Plan) -> None:
    """Adopt, register and watch what the plan says, then scan what changed."""
    if plan.own:
        if hook.transcript_path is not None and os.path.isfile(hook.transcript_path):
            gw.adopt_many([adopt_request(key=watcher, source=hook.source,
                                         path=hook.transcript_path, thread_id=hook.session_id)])
        else:
            gw.create_session(watcher)
    requests = []
    since: int | None = None
    if plan.adopt or plan.watch:
        with gw.read_pool.connection() as conn:
            since = None if plan.first_run else peek.session_created_at(conn, watcher)
    requests = [adopt_request(
        key=t.key, source=t.found.source, path=t.found.path, thread_id=t.found.thread_id,
        from_start=since is not None and _is_new(t.found, since)) for t in plan.adopt]
    fresh: list[str] = []
    if requests:
        links = gw.adopt_many(requests, watcher=watcher)
        for request, link in zip(requests, links, strict=True):
            if link is None:  # adopted without a link (or not at all): watch the entry
                gw.watch(watcher, request.key)
            elif request.from_start:
                fresh.append(request.key)
    for target in plan.watch:
        # A session that began after the manager's first turn, which another
        # process (ssa watch) adopted first: all its changes are news to the manager.
        new = since is not None and _is_new(target.found, since)
        gw.watch(watcher, target.key, since=0 if new else None)
    scan = tuple(dict.fromkeys((*plan.scan, *fresh)))
    if scan:
        gw.scan_upstream(keys=scan)


def _deliver(gw: Any, hook: HookInput, watcher: str, out: TextIO) -> bool:
    """Print the pending notices, flush, then acknowledge exactly those printed.

    Returns:
        Whether something was printed (and its acknowledgement attempted).
    """
    texts = gw.pending_notices(watcher)
    if not texts:
        return False
    views: list[NoticeView] = []
    with gw.read_pool.connection() as conn:
        total_pending = len(peek.pending(conn, watcher))
        links = {link.session_key: link for link in peek.links(conn)}
        for text in texts:
            match = _NOTICE.search(text)
            if match is None:
                continue
            key, since = match.group("key"), int(match.group("since"))
            events, total = peek.events_after(conn, key, agent_id_of(key), since,
                                              MAX_EVENTS_PER_NOTICE)
            link = links.get(key)
            views.append(NoticeView(
                text=text, target_key=key, changes_since=since, total=total,
                events=tuple(SummaryEvent(e.sequence, e.kind, e.actor_type, e.occurred_at,
                                          e.summary) for e in events),
                source=link.source if link else None, path=link.path if link else None))
    context, shown = render_context(watcher, views, pending=total_pending)
    output = render_output(hook, context)
    if not output:
        return False
    out.write(output)
    out.flush()
    gw.drain(watcher, only=shown)
    return True
