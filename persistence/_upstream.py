"""Upstream links and own-text hashes: transactions and reads (anchor §2.4, §3.15, §3.16)."""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from persistence._messages import (
    CommitScan,
    LinkOutcome,
    NoteOwnText,
    RegisterWatch,
    ScanOutcome,
    UpsertLink,
)
from persistence._reads import snapshot
from persistence._writes import record_event, register_watch
from persistence.records import UpstreamLink

__all__ = [
    "commit_scan",
    "list_links",
    "list_watched_links",
    "note_own_text",
    "read_adoption_notes",
    "read_link",
    "read_own_texts",
    "upsert_link",
]

logger = logging.getLogger(__name__)

_LINK_COLUMNS = (
    "session_key, agent_id, source, host_id, thread_id, upstream_ref_json, source_key,"
    " marker_json, created_at, updated_at, last_scanned_at"
)
_json_object = msgspec.json.Decoder(dict[str, Any])


def _link_from_row(row: Any) -> UpstreamLink:
    key, agent, source, host, thread, ref, source_key, marker, created, updated, scanned = row
    return UpstreamLink(
        session_key=key, agent_id=agent, source=source, host_id=host, thread_id=thread,
        upstream_ref=_json_object.decode(ref), source_key=source_key,
        marker=_json_object.decode(marker), created_at=created, updated_at=updated,
        last_scanned_at=scanned,
    )


def read_link(conn: Any, key: str, agent_id: str) -> UpstreamLink | None:
    """Return the link of ``(key, agent_id)``, or ``None``."""
    row = conn.execute(
        f"SELECT {_LINK_COLUMNS} FROM session_upstream_links"  # noqa: S608
        " WHERE session_key = ? AND agent_id = ?",
        (key, agent_id),
    ).fetchone()
    return _link_from_row(row) if row is not None else None


def list_links(conn: Any, agent_id: str | None = None) -> list[UpstreamLink]:
    """Every upstream link (of ``agent_id`` when given), ordered by key and agent.

    One query; caller's thread; raises what the connection raises.
    """
    where, params = ("", ()) if agent_id is None else (" WHERE agent_id = ?", (agent_id,))
    rows = conn.execute(
        f"SELECT {_LINK_COLUMNS} FROM session_upstream_links{where}"  # noqa: S608
        " ORDER BY session_key, agent_id", params).fetchall()
    return [_link_from_row(r) for r in rows]


def list_watched_links(conn: Any) -> tuple[list[UpstreamLink], list[str]]:
    """Links some watcher watches, ordered by source and key (anchor §3.15 step 4).

    Returns:
        ``(links, ambiguous_keys)``: a key linked under more than one agent is
        left out of ``links`` and named in ``ambiguous_keys``.
    """
    with snapshot(conn):
        rows = conn.execute(
            f"SELECT {_LINK_COLUMNS} FROM session_upstream_links AS l"  # noqa: S608
            " WHERE EXISTS (SELECT 1 FROM session_watch_cursors AS c"
            " WHERE c.target_session_key = l.session_key AND c.target_agent_id = l.agent_id)"
            " ORDER BY l.source, l.session_key",
        ).fetchall()
        ambiguous = {
            str(k) for (k,) in conn.execute(
                "SELECT session_key FROM session_upstream_links GROUP BY session_key"
                " HAVING count(*) > 1")
        }
    links = [_link_from_row(r) for r in rows if r[0] not in ambiguous]
    return links, sorted(ambiguous)


def read_adoption_notes(conn: Any, agent_id: str | None = None,
                        ) -> dict[tuple[str, str], dict[str, str]]:
    """Why each adopted session (of ``agent_id`` when given) has no link (``noLink``) or
    why its turns never count (``note``): reason codes from its newest ``adopted``
    event, by ``(session key, agent id)``; sessions without either are left out.
    Caller's thread; one query."""
    where, params = ("", ()) if agent_id is None else (" AND agent_id = ?", (agent_id,))
    notes: dict[tuple[str, str], dict[str, str]] = {}
    for key, agent, payload in conn.execute(
            "SELECT session_key, agent_id, payload_json FROM session_state_events"  # noqa: S608 - ? placeholders only
            f" WHERE kind = 'adopted' AND payload_json IS NOT NULL{where} ORDER BY sequence",
            params):
        try:
            found = _json_object.decode(str(payload))
        except (msgspec.DecodeError, UnicodeError):
            continue
        picked = {k: str(found[k]) for k in ("noLink", "note") if isinstance(found.get(k), str)}
        if picked:
            notes[(str(key), str(agent))] = picked
        else:
            notes.pop((str(key), str(agent)), None)
    return notes


def read_own_texts(conn: Any, key: str, agent_id: str) -> list[tuple[int, str, int]]:
    """The session's own texts (see :func:`note_own_text`): ``(position, stored hash,
    noted_at epoch ms)`` in the order they were noted. Caller's thread; one query."""
    return [
        (int(position), str(digest), int(noted_at)) for position, digest, noted_at in conn.execute(
            "SELECT position, text_hash, noted_at FROM session_own_texts"
            " WHERE session_key = ? AND agent_id = ? ORDER BY position",
            (key, agent_id))
    ]


def upsert_link(conn: Any, cmd: UpsertLink, now: int, version: int, *,
                host: str | None = None) -> LinkOutcome:
    """Create or refresh a link; a changed source rebases its marker (anchor §3.15 step 2)."""
    inserted = conn.execute(
        "INSERT INTO session_upstream_links (session_key, agent_id, source, host_id,"
        " thread_id, upstream_ref_json, source_key, marker_json, last_scanned_at,"
        " created_at, updated_at, lease_owner, lease_expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?)"
        " ON CONFLICT (session_key, agent_id) DO NOTHING RETURNING 1",
        (cmd.session_key, cmd.agent_id, cmd.source, cmd.host_id, cmd.thread_id,
         cmd.upstream_ref_json, cmd.source_key, cmd.marker_json, now, now, cmd.lease_owner,
         cmd.lease_expires_at),
    ).get
    existing = None if inserted is not None else read_link(conn, cmd.session_key, cmd.agent_id)
    same_source = existing is not None and (
        existing.source, existing.host_id, existing.thread_id, existing.source_key,
    ) == (cmd.source, cmd.host_id, cmd.thread_id, cmd.source_key)
    if existing is None:  # a new link: inserted above
        pass
    elif same_source:
        conn.execute(
            "UPDATE session_upstream_links SET upstream_ref_json = ?, updated_at = ?"
            " WHERE session_key = ? AND agent_id = ?",
            (cmd.upstream_ref_json, now, cmd.session_key, cmd.agent_id),
        )
    else:
        conn.execute(
            "UPDATE session_upstream_links SET source = ?, host_id = ?, thread_id = ?,"
            " upstream_ref_json = ?, source_key = ?, marker_json = ?, last_scanned_at = NULL,"
            " updated_at = ? WHERE session_key = ? AND agent_id = ?",
            (cmd.source, cmd.host_id, cmd.thread_id, cmd.upstream_ref_json, cmd.source_key,
             cmd.marker_json, now, cmd.session_key, cmd.agent_id),
        )
    adopted = (record_event(conn, cmd.adopted, now, version, host=host) if cmd.adopted
               else None)
    if cmd.watcher_key is not None and cmd.watcher_key != cmd.session_key:
        head = (adopted.event.sequence
                if adopted is not None and adopted.inserted and adopted.event else None)
        register_watch(conn, RegisterWatch(
            watcher_key=cmd.watcher_key, target_key=cmd.session_key,
            target_agent_id=cmd.agent_id), now, version, head=head)
    if existing is None:  # exactly what was inserted: no need to read it back
        link = UpstreamLink(
            session_key=cmd.session_key, agent_id=cmd.agent_id, source=cmd.source,
            host_id=cmd.host_id, thread_id=cmd.thread_id,
            upstream_ref=_json_object.decode(cmd.upstream_ref_json), source_key=cmd.source_key,
            marker=_json_object.decode(cmd.marker_json), created_at=now, updated_at=now,
            last_scanned_at=None)
    else:
        found = read_link(conn, cmd.session_key, cmd.agent_id)
        assert found is not None
        link = found
    return LinkOutcome(link=link, created=existing is None,
                       rebased=existing is not None and not same_source, adopted=adopted)


def commit_scan(conn: Any, cmd: CommitScan, now: int, version: int, *,
                host: str | None = None) -> ScanOutcome:
    """Apply a scan result if the link is unchanged (compare-and-set, anchor §3.16).

    The compare-and-set is what keeps two processes that scanned the same
    bytes from counting a turn twice: the second commit finds ``updated_at``
    moved and changes nothing. ``cmd.lease_owner`` renews its scan lease.
    """
    current = conn.execute(
        "SELECT updated_at, source_key FROM session_upstream_links"
        " WHERE session_key = ? AND agent_id = ?",
        (cmd.session_key, cmd.agent_id),
    ).fetchone()
    if current is None or (int(current[0]), str(current[1])) != (
            cmd.expected_updated_at, cmd.source_key):
        return ScanOutcome(applied=False)
    recorded = record_event(conn, cmd.record, now, version, host=host) if cmd.record else None
    _use_own_texts(conn, cmd)
    if cmd.drop_link:
        conn.execute(
            "DELETE FROM session_upstream_links WHERE session_key = ? AND agent_id = ?",
            (cmd.session_key, cmd.agent_id),
        )
    elif cmd.marker_json is not None:
        # Never equal to the old value: a scan in the same millisecond as the
        # previous write must still invalidate a concurrent compare-and-set.
        updated = conn.execute(
            "UPDATE session_upstream_links SET marker_json = ?, last_scanned_at = ?,"
            " updated_at = CASE WHEN ? > updated_at THEN ? ELSE updated_at + 1 END,"
            " lease_owner = coalesce(?, lease_owner),"
            " lease_expires_at = coalesce(?, lease_expires_at)"
            " WHERE session_key = ? AND agent_id = ? RETURNING updated_at",
            (cmd.marker_json, now, now, now, cmd.lease_owner,
             cmd.lease_expires_at if cmd.lease_owner is not None else None,
             cmd.session_key, cmd.agent_id),
        ).get
        return ScanOutcome(applied=True, record=recorded,
                           updated_at=int(updated) if updated is not None else None)
    return ScanOutcome(applied=True, record=recorded)


def _use_own_texts(conn: Any, cmd: CommitScan) -> None:
    """Delete the own texts the scan's rows used up, and those expired unused."""
    for position in cmd.own_texts_used:
        conn.execute(
            "DELETE FROM session_own_texts WHERE session_key = ? AND agent_id = ? AND position = ?",
            (cmd.session_key, cmd.agent_id, position))
    if cmd.own_texts_expired_before is not None:
        conn.execute(
            "DELETE FROM session_own_texts WHERE session_key = ? AND agent_id = ?"
            " AND noted_at > 0 AND noted_at < ?",
            (cmd.session_key, cmd.agent_id, cmd.own_texts_expired_before))


def note_own_text(conn: Any, cmd: NoteOwnText, now: int) -> None:
    """Keep the hash among the session's last ``cmd.window`` own texts, noted at ``now``."""
    top = conn.execute(
        "SELECT coalesce(max(position), 0) FROM session_own_texts"
        " WHERE session_key = ? AND agent_id = ?",
        (cmd.session_key, cmd.agent_id),
    ).get
    position = int(top) + 1
    conn.execute(
        "INSERT INTO session_own_texts (session_key, agent_id, position, text_hash, noted_at)"
        " VALUES (?, ?, ?, ?, ?)",
        (cmd.session_key, cmd.agent_id, position, cmd.text_hash, now),
    )
    conn.execute(
        "DELETE FROM session_own_texts WHERE session_key = ? AND agent_id = ? AND position <= ?",
        (cmd.session_key, cmd.agent_id, position - cmd.window),
    )
