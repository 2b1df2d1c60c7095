"""Leases shared by the processes of one signal log: hosting, wakes, upstream scans.

Plain functions over an APSW connection, run inside a write transaction the
caller opened (or, for the ``read_*`` helpers, in any connection). A lease
is a row with an owner and an expiry in epoch ms (the gateway's clock); a
process that dies simply stops renewing it, so it lapses in bounded time.

* **Hosting** (``session_hosts``): a process that runs a watcher's agent
  loop declares it with a lease per watcher. A producer that opens a notice
  for a watcher hosted by a *live other* process does not wake locally: it
  adds a row to ``session_wakes`` in the same transaction, and one host
  claims it (``DELETE ... RETURNING``, so exactly one claimant gets it).
* **Scans** (``session_upstream_links.lease_owner``): at most one process
  scans a link at a time; the scan's compare-and-set commit keeps a turn
  from counting twice even if two processes raced anyway.
"""

from __future__ import annotations

from typing import Any

import apsw

from persistence.keys import is_subagent_key

__all__ = [
    "claim_link",
    "claim_wakes",
    "clear_all_leases",
    "link_lease",
    "release_leases",
    "renew_hosts",
    "route_wake",
    "set_hosts",
    "wake_high_water",
]


def route_wake(conn: apsw.Connection, watcher: str, host: str | None, now: int,
               notice: tuple[str, str, int] = ("", "", 0)) -> bool:
    """Decide where the wake of a newly opened notice for ``watcher`` runs.

    Args:
        conn: the write connection, inside the transaction that opened it.
        watcher: the watcher session key.
        host: this process's host id (``None``: it hosts nothing).
        now: epoch ms.
        notice: ``(target_key, target_agent_id, last_seen)`` of the notice: a
            host claims the wake only while that notice is still open.

    Returns:
        ``True`` when this process calls ``on_wake`` (it hosts the watcher, or
        no live process does); ``False`` when a wake row was added for the
        live hosts of another process to claim.
    """
    hosts = [str(h) for (h,) in conn.execute(
        "SELECT host_id FROM session_hosts WHERE watcher_session_key = ? AND expires_at > ?",
        (watcher, now))]
    if not hosts or host in hosts:
        return True
    conn.execute("INSERT INTO session_wakes (watcher_session_key, target_session_key,"
                 " target_agent_id, last_seen_sequence, created_at) VALUES (?, ?, ?, ?, ?)",
                 (watcher, *notice, now))
    return False


def set_hosts(conn: apsw.Connection, host: str, watchers: tuple[str, ...], expires_at: int,
              *, release: bool = False, now: int = 0) -> tuple[str, ...]:
    """Take (or with ``release`` drop) ``host``'s hosting leases on ``watchers``.

    Taking over a watcher whose previous host died (its lease lapsed without
    a release) while no other live process hosts it is a restart for that
    watcher: its unclaimed wakes are dropped and it is woken once per open
    notice instead (the restart sweep's semantics, anchor §3.8 step 4,
    without a re-freeze: other processes may be acknowledging meanwhile). A
    first host, or one after a clean release, owes no such wakes.

    Taking is also how a live host renews: it re-creates a lease row another
    process's takeover deleted while this one stalled, and it notices a
    co-host that died after this one started hosting.

    Returns:
        With ``release``: the wakes still addressed to those watchers that no
        other live process hosts, claimed in the same transaction for the
        releasing process to run (nobody else would; a live co-host keeps
        its share). Otherwise the takeover wakes: one watcher key per open
        notice of each watcher taken over from a dead host.
    """
    claimed: list[str] = []
    for watcher in dict.fromkeys(watchers):
        if not release:
            claimed += _take_over(conn, watcher, host, now)
        elif not _other_live_host(conn, watcher, host, now):
            claimed += _still_open(conn, conn.execute(
                "DELETE FROM session_wakes WHERE watcher_session_key = ?"
                " AND EXISTS (SELECT 1 FROM session_hosts WHERE watcher_session_key = ?"
                " AND host_id = ?) RETURNING id, watcher_session_key, target_session_key,"
                " target_agent_id, last_seen_sequence", (watcher, watcher, host)).fetchall())
        if release:
            conn.execute("DELETE FROM session_hosts WHERE watcher_session_key = ?"
                         " AND host_id = ?", (watcher, host))
        else:
            conn.execute(
                "INSERT INTO session_hosts (watcher_session_key, host_id, expires_at)"
                " VALUES (?, ?, ?) ON CONFLICT (watcher_session_key, host_id)"
                " DO UPDATE SET expires_at = excluded.expires_at", (watcher, host, expires_at))
    return tuple(claimed)


def _other_live_host(conn: apsw.Connection, watcher: str, host: str, now: int) -> bool:
    return conn.execute(
        "SELECT 1 FROM session_hosts WHERE watcher_session_key = ? AND host_id != ?"
        " AND expires_at > ? LIMIT 1", (watcher, host, now)).get is not None


def _take_over(conn: apsw.Connection, watcher: str, host: str, now: int) -> list[str]:
    others = conn.execute(
        "SELECT max(expires_at > ?), count(*) FROM session_hosts"
        " WHERE watcher_session_key = ? AND host_id != ?", (now, watcher, host)).fetchone()
    live, lapsed = (bool(others[0]), int(others[1])) if others is not None else (False, 0)
    if live or not lapsed:
        return []
    conn.execute("DELETE FROM session_hosts WHERE watcher_session_key = ? AND host_id != ?",
                 (watcher, host))
    conn.execute("DELETE FROM session_wakes WHERE watcher_session_key = ?", (watcher,))
    if is_subagent_key(watcher):
        return []
    opened = conn.execute(
        "SELECT count(*) FROM session_watch_cursors WHERE watcher_session_key = ?"
        " AND material_sequence > last_seen_sequence AND provenance != 'ambient-group'",
        (watcher,)).get
    return [watcher] * int(opened or 0)


def renew_hosts(conn: apsw.Connection, host: str, expires_at: int) -> int:
    """Extend every hosting lease of ``host`` to ``expires_at``; returns how many."""
    conn.execute("UPDATE session_hosts SET expires_at = ? WHERE host_id = ?",
                 (expires_at, host))
    return conn.changes()


def claim_wakes(conn: apsw.Connection, host: str, now: int,
                expires_at: int | None = None, watchers: tuple[str, ...] = ()
                ) -> tuple[str, ...]:
    """Take every wake addressed to a watcher ``host`` hosts.

    Args:
        expires_at: first renew ``host``'s leases to this (a process that
            claims is alive: a lease that lapsed while it stalled, with wakes
            addressed to it meanwhile, is revived and those wakes are taken).
            ``None``: only leases still live at ``now`` count.
        watchers: the watchers ``host`` hosts; with ``expires_at`` their lease
            rows are taken again (:func:`set_hosts`), so a row a takeover
            deleted comes back and a co-host's death is noticed (its takeover
            wakes are part of the answer).

    Returns:
        One watcher key per claimed wake whose notice is still open, oldest
        first (a watcher appears once per newly opened notice). Each row is
        claimed by exactly one process; a wake whose notice was drained (or
        dropped) meanwhile is deleted without waking anyone.
    """
    owed: tuple[str, ...] = ()
    if expires_at is not None:
        if watchers:
            owed = set_hosts(conn, host, watchers, expires_at, now=now)
        else:
            renew_hosts(conn, host, expires_at)
    rows = conn.execute(
        "DELETE FROM session_wakes WHERE watcher_session_key IN (SELECT watcher_session_key"
        " FROM session_hosts WHERE host_id = ? AND expires_at > ?)"
        " RETURNING id, watcher_session_key, target_session_key, target_agent_id,"
        " last_seen_sequence", (host, now)).fetchall()
    return owed + _still_open(conn, rows)


def _still_open(conn: apsw.Connection, rows: list[Any]) -> tuple[str, ...]:
    woken: list[str] = []
    for _id, watcher, target, agent, last_seen in sorted(rows, key=lambda r: int(r[0])):
        if conn.execute(
                "SELECT 1 FROM session_watch_cursors WHERE watcher_session_key = ?"
                " AND target_session_key = ? AND target_agent_id = ?"
                " AND last_seen_sequence = ? AND material_sequence > last_seen_sequence",
                (watcher, target, agent, last_seen)).get is not None:
            woken.append(str(watcher))
    return tuple(woken)


def wake_high_water(conn: apsw.Connection) -> int:
    """The newest wake row's id (0 when there is none): a cheap "anything new?" probe."""
    value = conn.execute("SELECT max(id) FROM session_wakes").get
    return int(value) if value is not None else 0


def claim_link(conn: apsw.Connection, key: str, agent_id: str, owner: str, now: int,
               expires_at: int) -> bool:
    """Take or renew the scan lease of a link: free, lapsed or already ``owner``'s.

    Returns:
        Whether ``owner`` now holds it (``False`` also when the link is gone).
    """
    conn.execute(
        "UPDATE session_upstream_links SET lease_owner = ?, lease_expires_at = ?"
        " WHERE session_key = ? AND agent_id = ?"
        " AND (lease_owner IS NULL OR lease_owner = ? OR lease_expires_at <= ?)",
        (owner, expires_at, key, agent_id, owner, now))
    return conn.changes() > 0


def link_lease(conn: apsw.Connection, key: str, agent_id: str) -> tuple[str | None, int]:
    """``(owner, expires_at)`` of a link's scan lease (``(None, 0)``: free or no link)."""
    row = conn.execute(
        "SELECT lease_owner, lease_expires_at FROM session_upstream_links"
        " WHERE session_key = ? AND agent_id = ?", (key, agent_id)).fetchone()
    if row is None or row[0] is None:
        return None, 0
    return str(row[0]), int(row[1])


def release_leases(conn: apsw.Connection, host: str, now: int) -> tuple[str, ...]:
    """Drop every lease ``host`` holds (a clean close: others take over at once).

    Returns:
        The wakes still addressed to watchers it hosted that no other live
        process hosts, claimed in the same transaction: the closing process
        runs them, since from this commit on producers wake locally and nobody
        else would. A live co-host keeps the wakes of the watchers it shares.
    """
    hosted = tuple(str(w) for (w,) in conn.execute(
        "SELECT watcher_session_key FROM session_hosts WHERE host_id = ?", (host,)))
    claimed = set_hosts(conn, host, hosted, 0, release=True, now=now)
    conn.execute("DELETE FROM session_hosts WHERE host_id = ?", (host,))
    conn.execute("UPDATE session_upstream_links SET lease_owner = NULL, lease_expires_at = 0"
                 " WHERE lease_owner = ?", (host,))
    return claimed


def clear_all_leases(conn: apsw.Connection) -> None:
    """Forget every lease and unclaimed wake: only when no other process has the log open."""
    conn.execute("DELETE FROM session_hosts")
    conn.execute("DELETE FROM session_wakes")
    conn.execute("UPDATE session_upstream_links SET lease_owner = NULL, lease_expires_at = 0"
                 " WHERE lease_owner IS NOT NULL")
