"""What one ``ssa hook`` run must do, decided from the catalogs and a peek at the signal log.

What lives here: :class:`Plan` (empty: the cold path, exit having printed
nothing) and :func:`plan_work`, the pure decision which sessions to adopt,
to watch or to scan; :func:`plan_from` feeds it from a connection. Part
of the cold path: the standard library, APSW (through
:mod:`persistence.peek`) and the light modules of this package only.
"""

from __future__ import annotations

import os
import time

from actors.agents.hookinput import HookInput
from actors.agents.project import project_of
from actors.agents.sessions import Found, StoreRow
from actors.upstream.source import MISSING
from actors.upstream.sources import find_source
from persistence import peek
from persistence.record import Record

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_ADOPT_PER_RUN", "Plan", "Target", "plan_from", "plan_work"]

MAX_ADOPT_PER_RUN = 200
"""New sessions one run adopts (newest first); the rest wait for the next prompts, so a
burst of thousands of new sessions never pushes a run past its budget."""


class Target(Record):
    """A session the manager should watch: its key and where it is."""

    __slots__ = ("found", "key", "linked")

    def __init__(self, key: str, found: Found, linked: bool) -> None:
        self.key = key
        self.found = found
        self.linked = linked


class Plan(Record):
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

    __slots__ = ("adopt", "first_run", "own", "pending", "scan", "watch")

    def __init__(self, adopt: tuple[Target, ...] = (), watch: tuple[Target, ...] = (),
                 scan: tuple[str, ...] = (), pending: bool = False, own: bool = False,
                 first_run: bool = True) -> None:
        self.adopt = adopt
        self.watch = watch
        self.scan = scan
        self.pending = pending
        self.own = own
        self.first_run = first_run

    @property
    def idle(self) -> bool:
        """Whether there is nothing to do but exit."""
        return not (self.adopt or self.watch or self.scan or self.pending or self.own)


def _key(agent: str, found: Found) -> str:
    return f"agent:{agent}:{found.source}:{found.thread_id}"


def _in_store(source: str) -> bool:
    """Whether ``source``'s sessions are rows of a store (its marker keeps their ``seq``)."""
    found = find_source(source)
    return found is not None and found.holds == "store"


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
        if seq is None:  # gone: a scan counts it missing, unless it was told already
            return MISSING not in link.marker
        return seq != link.marker.get("seq")
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return MISSING not in link.marker  # vanished: a scan counts it missing, once
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


def plan_from(conn: Any, hook: HookInput, watcher: str, *, agent: str, scope: str,
              found: list[Found], stores: dict[str, list[StoreRow]]) -> Plan:
    """:func:`plan_work` with what ``conn`` (a signal-log connection) holds now.

    Args:
        conn: an APSW connection of :mod:`persistence.peek` or of a gateway's
            read pool.
        hook, watcher, agent, scope, found, stores: as for :func:`plan_work`.

    Caller's thread; blocks on a few reads.
    """
    return plan_work(hook=hook, watcher=watcher, agent=agent, scope=scope,
                     found=found, links=peek.links(conn),
                     watched=peek.watched_targets(conn, watcher),
                     pending=bool(peek.pending(conn, watcher)),
                     created_at=peek.session_created_at(conn, watcher),
                     now_ms=time.time_ns() // 1_000_000, stores=stores,
                     known=peek.session_keys(conn))
