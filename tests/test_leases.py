"""Hosting and scan leases as plain functions over a connection (issue 9)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from persistence import open_connection, prepare_path
from persistence._leases import (
    claim_link,
    claim_wakes,
    clear_all_leases,
    link_lease,
    release_leases,
    renew_hosts,
    route_wake,
    set_hosts,
    wake_high_water,
)
from persistence._lock import PresenceLock

W = "agent:main:main"
NOW = 1_000_000
T = "agent:main:worker"
OPEN = (T, "main", 0)
"""The notice the wakes below are for: opened by :func:`_open_notice`."""


def _open_notice(conn: apsw.Connection, watcher: str = W) -> None:
    conn.execute(
        "INSERT INTO session_watch_cursors (watcher_session_key, target_session_key,"
        " target_agent_id, last_seen_sequence, notified_sequence, material_sequence,"
        " updated_at) VALUES (?, ?, 'main', 0, 1, 1, 0)", (watcher, T))


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    path = tmp_path / "state.sqlite"
    prepare_path(path)
    connection = open_connection(str(path), writer=True, migrate=True)
    yield connection
    connection.close()


def test_a_watcher_nobody_hosts_is_woken_where_the_notice_opened(
    conn: apsw.Connection,
) -> None:
    assert route_wake(conn, W, "me", NOW) is True
    assert route_wake(conn, W, None, NOW) is True
    assert wake_high_water(conn) == 0


def test_a_live_host_elsewhere_gets_a_wake_row_and_exactly_one_host_claims_it(
    conn: apsw.Connection,
) -> None:
    _open_notice(conn)
    set_hosts(conn, "host-a", (W,), NOW + 100)
    set_hosts(conn, "host-b", (W,), NOW + 100)
    assert route_wake(conn, W, "producer", NOW, OPEN) is False
    assert route_wake(conn, W, "host-a", NOW) is True  # a host wakes itself
    assert wake_high_water(conn) == 1
    assert claim_wakes(conn, "host-b", NOW) == (W,)
    assert claim_wakes(conn, "host-a", NOW) == ()  # already taken
    assert claim_wakes(conn, "producer", NOW) == ()  # not a host


def test_a_lapsed_hosting_lease_routes_the_wake_back_and_renewal_keeps_it(
    conn: apsw.Connection,
) -> None:
    _open_notice(conn)
    set_hosts(conn, "host-a", (W,), NOW + 100)
    assert route_wake(conn, W, "producer", NOW + 100) is True  # expired at its expiry
    assert renew_hosts(conn, "host-a", NOW + 500) == 1
    assert route_wake(conn, W, "producer", NOW + 100, OPEN) is False
    # A wake left for a dead host goes to whoever hosts the watcher next.
    set_hosts(conn, "host-b", (W,), NOW + 1000)
    assert claim_wakes(conn, "host-b", NOW + 600) == (W,)


def test_release_and_clear_drop_leases(conn: apsw.Connection) -> None:
    set_hosts(conn, "host-a", (W, "agent:main:other"), NOW + 100)
    set_hosts(conn, "host-a", ("agent:main:other",), 0, release=True)
    assert route_wake(conn, "agent:main:other", "producer", NOW) is True
    release_leases(conn, "host-a")
    assert route_wake(conn, W, "producer", NOW) is True
    set_hosts(conn, "host-a", (W,), NOW + 100)
    assert route_wake(conn, W, "producer", NOW) is False
    clear_all_leases(conn)
    assert wake_high_water(conn) == 0
    assert route_wake(conn, W, "producer", NOW) is True


def _link(conn: apsw.Connection, key: str) -> None:
    conn.execute(
        "INSERT INTO session_upstream_links (session_key, agent_id, source, host_id,"
        " thread_id, upstream_ref_json, source_key, marker_json, created_at, updated_at)"
        " VALUES (?, 'main', 'claude', 'local', 't', '{}', 'k', '{}', 0, 0)", (key,))


def test_a_scan_lease_is_held_by_one_owner_until_it_lapses(conn: apsw.Connection) -> None:
    key = "agent:main:claude:x"
    _link(conn, key)
    assert link_lease(conn, key, "main") == (None, 0)
    assert claim_link(conn, key, "main", "a", NOW, NOW + 100) is True
    assert claim_link(conn, key, "main", "b", NOW + 50, NOW + 150) is False
    assert claim_link(conn, key, "main", "a", NOW + 50, NOW + 150) is True  # renewal
    assert link_lease(conn, key, "main") == ("a", NOW + 150)
    assert claim_link(conn, key, "main", "b", NOW + 150, NOW + 250) is True  # lapsed
    release_leases(conn, "b")
    assert link_lease(conn, key, "main") == (None, 0)
    assert claim_link(conn, "agent:main:missing", "main", "a", NOW, NOW + 1) is False


def test_the_presence_lock_tells_the_first_gateway_it_is_alone(tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    first, second = PresenceLock(db), PresenceLock(db)
    try:
        assert first.join() is True
        assert second.join() is False  # the first holds it shared
        first.release()
        second.release()
        third = PresenceLock(db)
        assert third.join() is True  # both gone: alone again
        third.release()
        assert oct(third.path.stat().st_mode & 0o777) == "0o600"
    finally:
        first.release()
        second.release()


def test_an_older_release_holding_the_lock_exclusively_is_reported_not_waited_for(
    tmp_path: Path,
) -> None:
    import fcntl
    import os

    from persistence.errors import DatabaseBusy

    db = tmp_path / "state.sqlite"
    old = os.open(str(db) + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(old, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what the owner lock did
        lock = PresenceLock(db)
        with pytest.raises(DatabaseBusy, match="older release"):
            lock.join()
        lock.release()
    finally:
        os.close(old)


def test_claiming_with_a_renewal_takes_wakes_left_while_the_lease_had_lapsed(
    conn: apsw.Connection,
) -> None:
    _open_notice(conn)
    set_hosts(conn, "host-a", (W,), NOW + 100)
    assert route_wake(conn, W, "producer", NOW, OPEN) is False
    assert claim_wakes(conn, "host-a", NOW + 200) == ()  # lapsed: not without a renewal
    assert claim_wakes(conn, "host-a", NOW + 200, expires_at=NOW + 300) == (W,)


def test_wakes_a_host_left_unserved_go_to_the_next_host_once(
    conn: apsw.Connection,
) -> None:
    _open_notice(conn)
    _open_notice(conn, "agent:main:other")
    set_hosts(conn, "host-a", (W, "agent:main:other"), NOW + 100)
    assert route_wake(conn, W, "producer", NOW, OPEN) is False
    assert claim_wakes(conn, "host-a", NOW) == (W,)  # told, then it dies or closes
    assert route_wake(conn, "agent:main:other", "producer", NOW, OPEN) is False  # untold
    release_leases(conn, "host-a")
    set_hosts(conn, "host-b", (W, "agent:main:other"), NOW + 100)
    assert claim_wakes(conn, "host-b", NOW) == (W, "agent:main:other")
    assert claim_wakes(conn, "host-b", NOW) == ()  # served now: once
    # A live co-host does not take what another live host serves.
    set_hosts(conn, "host-c", (W,), NOW + 100)
    assert claim_wakes(conn, "host-c", NOW) == ()

def test_a_wake_whose_notice_was_drained_meanwhile_wakes_nobody(conn: apsw.Connection) -> None:
    _open_notice(conn)
    set_hosts(conn, "host-a", (W,), NOW + 100)
    assert route_wake(conn, W, "producer", NOW, OPEN) is False
    conn.execute("UPDATE session_watch_cursors SET last_seen_sequence = 1")  # drained
    assert claim_wakes(conn, "host-a", NOW) == ()
    assert wake_high_water(conn) == 0  # and the row is gone
