"""``ssa hook``'s warm path: a gateway adopts, watches and scans, then prints and acknowledges.

What lives here: :func:`work`, run only when the peek found work (the
cold path, :mod:`actors.agents.hook`, imports this module then, so a prompt
with nothing pending never pays for the engine); the ``flock`` that lets
one hook of a watcher at a time deliver; and the delivery itself, which
prints the notices, flushes, and only then acknowledges exactly those
printed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

import msgspec

from actors.agents.context import (
    MAX_EVENTS_PER_NOTICE,
    NoticeView,
    SummaryEvent,
    render_context,
    state_words,
)
from actors.agents.hookargs import URL_SCHEMES, HookArgs
from actors.agents.hookbudget import disarm
from actors.agents.hookinput import HookInput, render_output
from actors.agents.hookplan import Plan, plan_from
from actors.agents.sessions import Found, StoreRow
from actors.config import GatewayConfig
from actors.facade.activity import activity_now
from actors.facade.gateway import Gateway
from actors.facade.typed import typed_of
from actors.monitors.adoption import AdoptRequest
from actors.upstream.names import name_of
from persistence import TypedRead, after_acknowledgement, peek
from persistence.keys import agent_id_of
from persistence.lazylog import get_logger
from persistence.locations import default_state_path

__all__ = ["LEASE_MS", "NEW_SESSION_SLACK_MS", "watch_spawned", "watching_since", "work"]

logger = get_logger(__name__)

LEASE_MS = 3000
"""The hook's scan leases: a hook killed mid-scan holds them this long at most."""
NEW_SESSION_SLACK_MS = 2000
"""A session first seen after the manager's first hook run counts from its start when
it began at most this long before that run. A worker started just before its manager
(``claude`` in two terminals, then ``ssa manage``) is the common case, and its prompts
typed after the manager's start must count; the price is that a turn typed in those 2 s
before the manager existed counts too (docs/limits.md)."""
_NOTICE = re.compile(r'sessionKey "(?P<key>[^"]+)" changesSince (?P<since>\d+)\.$')


def _is_new(found: Found, since_ms: int) -> bool:
    """Whether a session first seen now began after the manager's first turn.

    Such a session is read from its start (its first prompt may be what a
    person typed since); one that began earlier is linked at its end, so
    turns typed before the manager watched it never count.
    """
    return found.started_ms is not None and found.started_ms >= since_ms - NEW_SESSION_SLACK_MS


def work(location: str, hook: HookInput, watcher: str, args: HookArgs, found: list[Found],
         stores: dict[str, list[StoreRow]], out: TextIO, plan: Plan | None,
         acknowledged: Callable[[], None]) -> bool:
    """The warm path: a gateway adopts, watches, scans, prints and acknowledges.

    Args:
        location: the signal log (a SQLite path or a ``postgresql://`` URL).
        hook: the hook input.
        watcher: the manager's key.
        args: the command line (``--agent``, ``--scope``, ``--timeout``).
        found: every session in the catalogs.
        stores: each store's rows, by database path.
        out: where the tool's output goes.
        plan: the plan of the peek, or ``None`` (no peek: it is made here).
        acknowledged: called right after the printed notices were acknowledged.

    Returns:
        Whether notices were printed (and acknowledged).

    Raises:
        persistence.StorageError, actors.errors.GatewayClosed: the signal log failed
            (``ssa hook`` prints one line and exits 0).

    Main thread; blocks on the database and the transcripts, within the budget.
    """
    config = GatewayConfig(ask_timeout_s=min(3.0, max(0.5, args.timeout / 3)),
                           busy_timeout_ms=int(min(2000, max(200, args.timeout * 250))),
                           lease_ms=LEASE_MS, missing_threshold=1)
    with _one_at_a_time(location, watcher):
        gw = Gateway.open(location, config=config, monitor=False)
        try:
            if gw.role(watcher)[0] == "worker":  # the file was just made or migrated
                return False
            if plan is None:  # no peek before (PostgreSQL, or a file made just now)
                with gw.read_pool.connection() as conn:
                    plan = plan_from(conn, hook, watcher, agent=args.agent,
                                     scope=args.scope, found=found, stores=stores)
            _apply(gw, hook, watcher, plan)
            # Scans are done: the next prompt's hook may scan at once (this process
            # ends without closing, so its leases would otherwise last lease_ms).
            gw.release_leases()
            once = _Once(acknowledged)
            # The writer thread ends the process the moment the acknowledgement
            # commits (issue 34 item 3): nothing runs between the two.
            after_acknowledgement(watcher, once)
            try:
                if _deliver(gw, hook, watcher, out, excerpt=args.excerpt):
                    once()
                    return True
                return False
            finally:
                after_acknowledgement(watcher, None)
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
    base = (default_state_path().parent if location.startswith(URL_SCHEMES)
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


def _apply(gw: Gateway, hook: HookInput, watcher: str, plan: Plan) -> None:
    """Adopt, register and watch what the plan says, then scan what changed."""
    if plan.own:
        if hook.transcript_path is not None and os.path.isfile(hook.transcript_path):
            gw.adopt_many([AdoptRequest(key=watcher, source=hook.source,
                                         path=hook.transcript_path, thread_id=hook.session_id)])
        else:
            gw.create_session(watcher)
    since: int | None = None
    if plan.adopt or plan.watch:
        with gw.read_pool.connection() as conn:
            since = None if plan.first_run else watching_since(conn, watcher)
    requests = [AdoptRequest(
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
    earlier = tuple(t.key for t in plan.watch if not (since is not None
                                                      and _is_new(t.found, since)))
    if earlier:
        # Linked by another process, maybe with turns it has not read yet: typed
        # before this watch began, they are recorded first and never notify it.
        gw.scan_upstream(keys=earlier)
    for target in plan.watch:
        # A session that began after the manager's first turn, which another
        # process (ssa watch) adopted first: all its changes are news to the manager.
        new = since is not None and _is_new(target.found, since)
        gw.watch(watcher, target.key, since=0 if new else None)
    scan = tuple(dict.fromkeys((*plan.scan, *fresh)))
    if scan:
        gw.scan_upstream(keys=scan)


def watch_spawned(run: Any, args: HookArgs) -> None:
    """A spawn edge: the manager that spawned ``run``'s session watches it from its start.

    The session (a worker) is adopted from its transcript's start when the
    tool names one (its typed turns since it began count), or registered;
    then ``run.parent`` watches it from state version 0 and it is scanned.

    Raises:
        persistence.StorageError: the signal log failed (the hook says so and exits 0).

    Main thread; blocks on the database and the transcript, within the budget.
    """
    hook, key, parent = run.hook, run.watcher, run.parent
    assert parent is not None
    config = GatewayConfig(ask_timeout_s=min(3.0, max(0.5, args.timeout / 3)),
                           busy_timeout_ms=int(min(2000, max(200, args.timeout * 250))),
                           lease_ms=LEASE_MS, missing_threshold=1)
    with Gateway.open(run.location, config=config, monitor=False) as gw:
        path = hook.transcript_path
        if path is not None and os.path.isfile(path):
            gw.adopt_many([AdoptRequest(key=key, source=hook.source, path=path,
                                        thread_id=hook.session_id, from_start=True)])
        else:
            gw.create_session(key)
        gw.watch(parent, key, since=0)
        gw.scan_upstream(keys=(key,))
        gw.release_leases()


class _Once:
    """Calls ``fn`` the first time it is called, never again (any thread)."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self._fn: Callable[[], None] | None = fn
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            fn, self._fn = self._fn, None
        if fn is not None:
            fn()


def watching_since(conn: Any, watcher: str) -> int | None:
    """Since when ``watcher`` watches (epoch ms): the later of its session entry's creation
    and its becoming a manager; ``None`` when it has no entry. Blocks on two reads."""
    created = peek.session_created_at(conn, watcher)
    if created is None:
        return None
    return max(created, peek.manager_since(conn, watcher) or 0)


def _name(link: peek.LinkPeek | None) -> str | None:
    """The linked session's name in its tool (a paired node's files are not here)."""
    if link is None or link.host_id.startswith("node:"):
        return None
    return name_of(link.source, link.path, link.thread_id)


def _summaries(conn: Any, events: list[peek.EventPeek],
               excerpt: int) -> tuple[SummaryEvent, ...]:
    """The summary lines of one notice; with ``excerpt``, its typed turns' first characters
    read from their transcripts (:mod:`actors.facade.typed`). Blocks on bounded reads."""
    reads: dict[int, TypedRead] = {}
    if excerpt:
        typed = [(e.sequence, _payload(e.payload_json)) for e in events
                 if e.kind == "human_direct_message"]
        reads = {r.sequence: r for r in typed_of(conn, typed, excerpt)}
    out = []
    for e in events:
        read = reads.get(e.sequence)
        out.append(SummaryEvent(
            e.sequence, e.kind, e.actor_type, e.occurred_at, e.summary,
            typed=read.texts if read is not None and read.status == "ok" else (),
            typed_note=read.status if read is not None and read.status != "ok" else None))
    return tuple(out)


def _state(conn: Any, key: str) -> str | None:
    """Where ``key``'s tool stands, in words, or ``None`` (its hooks never said)."""
    found = activity_now(conn, key, agent_id_of(key))
    return None if found is None else state_words(found.state, found.detail, found.since)


def _payload(text: str | None) -> Any:
    try:
        return msgspec.json.decode(text) if text else None
    except msgspec.DecodeError:
        return None


def _deliver(gw: Gateway, hook: HookInput, watcher: str, out: TextIO, *,
             excerpt: int = 0) -> bool:
    """Print the pending notices, flush, then acknowledge exactly those printed.

    With ``excerpt`` (characters), each typed upstream turn listed shows its first
    ``excerpt`` characters, read from the tool's transcript now (never stored).

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
            # Only what this notice covers (up to its frozen watermark): a change after
            # it gets its own follow-up notice, and is listed there, once.
            events, total = peek.events_after(
                conn, key, agent_id_of(key), since, MAX_EVENTS_PER_NOTICE,
                until=peek.watermark(conn, watcher, key, agent_id_of(key)))
            link = links.get(key)
            views.append(NoticeView(
                text=text, target_key=key, changes_since=since, total=total,
                events=_summaries(conn, events, excerpt),
                state=_state(conn, key),
                source=link.source if link else None, path=link.path if link else None,
                name=_name(link)))
    context, shown = render_context(watcher, views, pending=total_pending)
    output = render_output(hook, context, notices=len(shown))
    if not output:
        return False
    disarm()  # printed means acknowledged: the budget must not end the run in between
    out.write(output)
    out.flush()
    gw.drain(watcher, only=shown)
    return True
