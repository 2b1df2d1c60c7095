"""Leases shared by the processes of one signal log: hosting, wakes, upstream scans.

Plain functions over a connection of either backend, run inside a write transaction the
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


def route_wake(conn: Any, watcher: str, host: str | None, now: int,
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


def set_hosts(conn: Any, host: str, watchers: tuple[str, ...], expires_at: int,
              *, release: bool = False) -> None:
    """Take (or with ``release`` drop) ``host``'s hosting leases on ``watchers``.

    Taking is also how a live host renews: it re-creates a lease row that
    was deleted while this process stalled. Releasing leaves the wakes owed
    to the watchers (unclaimed, or claimed by this process and not yet seen
    through) for whichever process hosts them next (see :func:`claim_wakes`);
    a live co-host takes them at its next probe.
    """
    for watcher in dict.fromkeys(watchers):
        if release:
            conn.execute("DELETE FROM session_hosts WHERE watcher_session_key = ?"
                         " AND host_id = ?", (watcher, host))
        else:
            conn.execute(
                "INSERT INTO session_hosts (watcher_session_key, host_id, expires_at)"
                " VALUES (?, ?, ?) ON CONFLICT (watcher_session_key, host_id)"
                " DO UPDATE SET expires_at = excluded.expires_at", (watcher, host, expires_at))


def renew_hosts(conn: Any, host: str, expires_at: int) -> int:
    """Extend every hosting lease of ``host`` to ``expires_at``; returns how many."""
    conn.execute("UPDATE session_hosts SET expires_at = ? WHERE host_id = ?",
                 (expires_at, host))
    return int(conn.changes())


_OPEN = (
    "EXISTS (SELECT 1 FROM session_watch_cursors AS c"
    " WHERE c.watcher_session_key = session_wakes.watcher_session_key"
    " AND c.target_session_key = session_wakes.target_session_key"
    " AND c.target_agent_id = session_wakes.target_agent_id"
    " AND c.last_seen_sequence = session_wakes.last_seen_sequence"
    " AND c.material_sequence > c.last_seen_sequence)"
)
"""The wake row's notice is still open."""
_UNSERVED = (
    "(claimed_by IS NULL OR NOT EXISTS (SELECT 1 FROM session_hosts AS h"
    " WHERE h.watcher_session_key = session_wakes.watcher_session_key"
    " AND h.host_id = session_wakes.claimed_by AND h.expires_at > ?))"
)
"""Nobody claimed the wake, or its claimant no longer hosts the watcher (died or left)."""


def _claim(conn: Any, host: str, now: int) -> list[str]:
    """Mark ``host``'s owed wakes claimed; one watcher key per wake, oldest first."""
    scope = ("watcher_session_key IN (SELECT watcher_session_key FROM session_hosts"
             " WHERE host_id = ? AND expires_at > ?)")
    scope_params = (host, now)
    # A wake whose notice was consumed (or dropped) meanwhile is owed to nobody.
    conn.execute(f"DELETE FROM session_wakes WHERE {scope} AND NOT {_OPEN}",  # noqa: S608
                 scope_params)
    rows: list[Any] = conn.execute(
        f"UPDATE session_wakes SET claimed_by = ? WHERE {scope} AND {_UNSERVED}"  # noqa: S608
        " RETURNING id, watcher_session_key", (host, *scope_params, now)).fetchall()
    return [str(w) for _id, w in sorted(rows, key=lambda r: int(r[0]))]


def claim_wakes(conn: Any, host: str, now: int,
                expires_at: int | None = None, watchers: tuple[str, ...] = ()
                ) -> tuple[str, ...]:
    """Take every wake owed to a watcher ``host`` hosts.

    A wake is owed while its notice is open and nobody serves it: no process
    claimed it yet (a producer elsewhere addressed it to the hosts), or the
    process that claimed it no longer hosts the watcher (it died, maybe
    before its agent loop drained, or it closed). The claim marks the row
    with ``host`` instead of deleting it, so a successor host knows which
    notices a dead host was told of; rows whose notice is no longer open
    are deleted. A notice that was woken where it was caused (no live host
    then) has no row, so a later host never wakes it a second time.

    Args:
        expires_at: first take ``host``'s leases on ``watchers`` again until
            this (a process that claims is alive: a lease that lapsed, or a
            row deleted, while it stalled comes back and the wakes addressed
            to it meanwhile are taken). ``None``: only live leases count.
        watchers: the watchers ``host`` hosts (with ``expires_at``; empty:
            just extend the leases it has).

    Returns:
        One watcher key per claimed wake, oldest first. Each is claimed by
        exactly one process.
    """
    if expires_at is not None:
        if watchers:
            set_hosts(conn, host, watchers, expires_at)
        else:
            renew_hosts(conn, host, expires_at)
    return tuple(_claim(conn, host, now))


def wake_high_water(conn: Any) -> int:
    """The newest wake row's id (0 when there is none): a cheap "anything new?" probe."""
    value = conn.execute("SELECT max(id) FROM session_wakes").get
    return int(value) if value is not None else 0


def claim_link(conn: Any, key: str, agent_id: str, owner: str, now: int,
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
    return int(conn.changes()) > 0


def link_lease(conn: Any, key: str, agent_id: str) -> tuple[str | None, int]:
    """``(owner, expires_at)`` of a link's scan lease (``(None, 0)``: free or no link)."""
    row = conn.execute(
        "SELECT lease_owner, lease_expires_at FROM session_upstream_links"
        " WHERE session_key = ? AND agent_id = ?", (key, agent_id)).fetchone()
    if row is None or row[0] is None:
        return None, 0
    return str(row[0]), int(row[1])


def release_leases(conn: Any, host: str) -> None:
    """Drop every lease ``host`` holds (a clean close: others take over at once).

    Wakes still owed to its watchers go to whichever process hosts them next.
    """
    conn.execute("DELETE FROM session_hosts WHERE host_id = ?", (host,))
    conn.execute("UPDATE session_upstream_links SET lease_owner = NULL, lease_expires_at = 0"
                 " WHERE lease_owner = ?", (host,))


def clear_all_leases(conn: Any) -> None:
    """Forget every lease and unclaimed wake: only when no other process has the log open."""
    conn.execute("DELETE FROM session_hosts")
    conn.execute("DELETE FROM session_wakes")
    conn.execute("UPDATE session_upstream_links SET lease_owner = NULL, lease_expires_at = 0"
                 " WHERE lease_owner IS NOT NULL")
