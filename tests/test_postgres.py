"""What is PostgreSQL's own (issue 10): pushed wakes, reconnects, faults, roles, pruning.

The shared semantics run on PostgreSQL through the parametrized gateway
suite; these tests cover the backend's own mechanisms against the run's
throw-away server. Every wait is bounded (``Wakes.wait_for``: 10 s, below
pytest-timeout's 60 s).
"""

from __future__ import annotations

import logging
import select
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from actors import Gateway, GatewayConfig
from actors.cli.app import main
from actors.errors import InvalidArgument
from persistence import _pg_connection as pg_connection
from persistence import _postgres as pg_backend
from persistence import open_backend
from persistence._pg_connection import Backoff
from persistence._postgres import STALL_TIMEOUT_FLOOR_MS
from persistence._prune import prune
from persistence.errors import DriverError, SchemaError, StorageError
from tests._pg import LocalServer, find_bindir, required
from tests.conftest import CHILD, START_MS, WATCHER, ManualClock, SignalLogDb, Wakes

psycopg = pytest.importorskip("psycopg")
from psycopg import sql  # noqa: E402

SECRET = "the launch code is 0000-SECRET"


pytestmark = pytest.mark.postgres_only


@pytest.fixture
def pg(db: SignalLogDb) -> SignalLogDb:
    """The test's schema on the run's server."""
    return db


def _admin(url: str) -> Any:
    return psycopg.connect(url.split("?", 1)[0], autocommit=True, connect_timeout=10)


TERMINATE_WAIT_MS = 10_000  # a terminated backend exits within this (it ends at once)


def _terminate(url: str, like: str) -> int:
    """Terminate our backends whose current query matches ``like``; how many.

    Waits up to :data:`TERMINATE_WAIT_MS` for each to exit (the server's
    goodbye is then on its client's socket): without the wait a write racing
    the signal could find its presence connection still up (CI, stop 31).
    """
    with _admin(url) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid, %s) FROM pg_stat_activity"
            " WHERE application_name = 'session-state-awareness' AND query LIKE %s"
            " AND pid <> pg_backend_pid()", (TERMINATE_WAIT_MS, like)).fetchall()
    return len(rows)


def test_a_wake_caused_in_another_gateway_is_pushed_to_the_host_once(
    pg: SignalLogDb, open_gateway: Callable[..., Gateway],
) -> None:
    host_wakes, producer_wakes = Wakes(), Wakes()
    host = open_gateway(on_wake=host_wakes, hosts=[WATCHER])
    producer = open_gateway(on_wake=producer_wakes)
    assert producer.watch(WATCHER, CHILD)
    for _ in range(20):
        assert producer.human_message(CHILD, channel="c") is not None
    assert host_wakes.wait_for(1)
    assert host._hosting.claim() == 0  # nothing else is owed: one wake for twenty changes
    assert host_wakes.calls == [WATCHER]
    assert producer_wakes.calls == []
    assert len(host.drain(WATCHER)) == 1


def test_two_hosts_of_one_watcher_share_each_wake_exactly_once(
    pg: SignalLogDb, open_gateway: Callable[..., Gateway],
) -> None:
    both = Wakes()  # one recorder for the two hosts: each wake is counted once in all
    a = open_gateway(on_wake=both, hosts=[WATCHER])
    b = open_gateway(on_wake=both, hosts=[WATCHER])
    producer = open_gateway(on_wake=Wakes())
    assert producer.watch(WATCHER, CHILD)
    rounds = 8
    for done in range(1, rounds + 1):
        assert producer.human_message(CHILD, channel="c") is not None
        assert both.wait_for(done)
        assert len(producer.drain(WATCHER)) == 1
    assert a._hosting.claim() + b._hosting.claim() == 0
    assert both.calls == [WATCHER] * rounds


def test_a_lost_listener_connection_reconnects_and_claims_what_is_owed(
    pg: SignalLogDb, open_gateway: Callable[..., Gateway],
) -> None:
    host_wakes = Wakes()
    host = open_gateway(on_wake=host_wakes, hosts=[WATCHER])
    producer = open_gateway(on_wake=Wakes())
    assert producer.watch(WATCHER, CHILD)
    assert producer.human_message(CHILD, channel="c") is not None
    assert host_wakes.wait_for(1)
    assert producer.drain(WATCHER)
    killed = _terminate(str(pg.location), "LISTEN%")
    assert killed == 1
    # A change while nobody listens (the notification goes nowhere) is found
    # by the claim that follows the reconnect.
    assert producer.human_message(CHILD, channel="c") is not None
    assert host_wakes.wait_for(2)
    assert host_wakes.calls == [WATCHER, WATCHER]
    signal = host._hosting._signal
    assert getattr(signal, "reconnects", 0) >= 1


def test_a_reset_write_connection_reconnects_without_losing_the_next_change(
    pg: SignalLogDb, open_gateway: Callable[..., Gateway],
) -> None:
    gw = open_gateway()
    assert gw.watch(WATCHER, CHILD)
    assert gw.human_message(CHILD, channel="before") is not None
    assert _terminate(str(pg.location), "%") >= 1  # every connection of ours, the writer's too
    # The dead connection is found at the next BEGIN, which nothing ran on:
    # it is said again on a new connection, so this change is recorded.
    event = gw.human_message(CHILD, channel="after")
    assert event is not None
    status = gw.session_status(CHILD, changes_since=0)  # reads reconnect too
    assert status.state_version == event.sequence
    assert len(gw.drain(WATCHER)) == 1


@pytest.fixture
def role(pg: SignalLogDb, open_gateway: Callable[..., Gateway]) -> Iterator[tuple[str, str]]:
    """A login role with only the privileges docs/deployment.md lists, and its URL."""
    open_gateway().close()  # the owner creates the schema (the first open migrates)
    name = f"ssa_gw_{uuid.uuid4().hex[:10]}"
    url = str(pg.location)
    schema = url.rsplit("schema=", 1)[1]
    with _admin(url) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        for statement in (
            "GRANT USAGE ON SCHEMA {schema} TO {role}",
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}",
        ):
            conn.execute(sql.SQL(statement).format(schema=sql.Identifier(schema),
                                                   role=sql.Identifier(name)))
    base, query = url.split("?", 1)
    role_url = base.replace("postgres@", f"{name}@", 1) + "?" + query
    yield name, role_url
    with _admin(url) as conn:
        conn.execute("SELECT pg_terminate_backend(pid, %s) FROM pg_stat_activity"
                     " WHERE usename = %s", (TERMINATE_WAIT_MS, name))
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def test_a_role_with_only_data_privileges_runs_a_gateway(
    role: tuple[str, str], clock: ManualClock,
) -> None:
    _name, url = role
    wakes = Wakes()
    with Gateway.open(url, clock=clock, on_wake=wakes, monitor=False) as gw:
        assert gw.watch(WATCHER, CHILD)
        assert gw.human_message(CHILD, channel="c") is not None
        assert wakes.calls == [WATCHER]
        assert len(gw.drain(WATCHER)) == 1
        assert gw.sessions_list()


def test_a_read_only_server_degrades_writes_and_they_recover_without_a_restart(
    role: tuple[str, str], clock: ManualClock, caplog: pytest.LogCaptureFixture,
    pg: SignalLogDb,
) -> None:
    name, url = role
    with Gateway.open(url, clock=clock, monitor=False) as gw:
        assert gw.watch(WATCHER, CHILD)
        with _admin(str(pg.location)) as conn:  # as a standby: every transaction read-only
            conn.execute(sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(
                sql.Identifier(name)))
        _terminate(str(pg.location), "%")
        caplog.set_level(logging.WARNING)
        assert [gw.human_message(CHILD, channel="ro") for _ in range(5)] == [None] * 5
        assert gw.session_status(CHILD).state_version == 0  # reads still work
        warnings = [r for r in caplog.records if "writes are failing" in r.getMessage()]
        assert len(warnings) == 1  # one line per episode, not one per write
        with _admin(str(pg.location)) as conn:
            conn.execute(sql.SQL("ALTER ROLE {} RESET default_transaction_read_only").format(
                sql.Identifier(name)))
        _terminate(str(pg.location), "%")
        assert gw.human_message(CHILD, channel="rw") is not None
        assert len(gw.drain(WATCHER)) == 1


def test_a_role_that_may_not_create_the_schema_gets_a_clear_error(
    role: tuple[str, str], clock: ManualClock,
) -> None:
    _name, url = role
    other = url.rsplit("schema=", 1)[0] + "schema=never_created_" + uuid.uuid4().hex[:8]
    with pytest.raises(SchemaError, match="may not create schema"):
        Gateway.open(other, clock=clock, monitor=False)


def test_no_message_text_reaches_any_table(
    pg: SignalLogDb, open_gateway: Callable[..., Gateway],
) -> None:
    gw = open_gateway()
    assert gw.watch(WATCHER, CHILD)
    gw.sessions_send(WATCHER, CHILD, SECRET, watch=True)
    gw.note_own_text(CHILD, SECRET)
    gw.enqueue_system_event(WATCHER, SECRET)
    assert gw.human_message(CHILD, channel="c") is not None
    schema = str(pg.location).rsplit("schema=", 1)[1]
    with _admin(str(pg.location)) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))]
        assert len(tables) == 12  # with ssa_secrets (4), session_roles (5), session_activity (7)
        for table in tables:
            dump = conn.execute(sql.SQL("SELECT t::text FROM {}.{} AS t").format(
                sql.Identifier(schema), sql.Identifier(table))).fetchall()
            assert not any("SECRET" in row[0] for row in dump), table


def test_pruning_deletes_in_bounded_chunks_and_keeps_history_gap_exact(
    pg: SignalLogDb, open_gateway: Callable[..., Gateway],
) -> None:
    gw = open_gateway()
    assert gw.watch(WATCHER, CHILD)
    events = [gw.human_message(CHILD, channel=str(i)) for i in range(12)]
    assert all(e is not None for e in events)
    backend = open_backend(pg.location)
    conn = backend.connect(writer=True)
    try:
        deleted = []
        while True:
            backend.begin_write(conn)
            counts = prune(conn, START_MS, retention_days=30, max_rows=3, limit=4)
            conn.execute("COMMIT")
            deleted.append(counts[0])
            if counts[0] < 4:
                break
    finally:
        conn.close()
    assert deleted == [4, 4, 1]
    status = gw.session_status(CHILD, changes_since=8)
    assert status.state_changes is not None
    assert status.state_changes.history_gap is True  # sequence 9 is gone
    kept = gw.session_status(CHILD, changes_since=9).state_changes
    assert kept is not None
    assert kept.history_gap is False
    newest = [e.sequence for e in events[-3:] if e is not None]
    assert [e.sequence for e in kept.events] == newest


def test_a_schema_of_something_else_is_refused(pg: SignalLogDb, clock: ManualClock) -> None:
    schema = str(pg.location).rsplit("schema=", 1)[1]
    with _admin(str(pg.location)) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("CREATE TABLE {}.orders (id int)").format(sql.Identifier(schema)))
    with pytest.raises(SchemaError, match="not a signal log"):
        Gateway.open(pg.location, clock=clock, monitor=False)


def test_storage_faults_are_told_apart_by_sqlstate(pg: SignalLogDb) -> None:
    backend = open_backend(pg.location)
    for state in ("53100", "57014", "55P03", "25006", "08006", "57P01", "40001", None):
        assert backend.is_fault(DriverError("x", state)), state
    for state in ("42601", "23505", "42P01"):
        assert not backend.is_fault(DriverError("x", state)), state
    assert backend.is_fatal(DriverError("x", "XX001"))
    assert not backend.is_fatal(DriverError("x", "53100"))
    assert not backend.is_fault(ValueError("not the driver's"))


def test_without_the_extra_a_postgresql_url_names_it() -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from actors import Gateway\n"
        "from actors.errors import BackendNotInstalled\n"
        "try:\n"
        "    Gateway.open('postgresql://u@127.0.0.1:1/db')\n"
        "except BackendNotInstalled as exc:\n"
        "    print(type(exc).__name__, exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30, check=True)
    assert "BackendNotInstalled" in done.stdout
    assert "python -m pip install '.[postgres]'" in done.stdout


def test_an_unreachable_server_fails_the_open_with_a_storage_error(
    clock: ManualClock,
) -> None:
    with pytest.raises(StorageError, match="cannot connect"):
        Gateway.open("postgresql://nobody@127.0.0.1:1/none", config=GatewayConfig(),
                      clock=clock, monitor=False)


def test_reconnect_attempts_back_off_doubling_to_the_cap_and_reset_on_success() -> None:
    now = [100.0]
    backoff = Backoff(0.05, 0.4, monotonic=lambda: now[0])
    assert backoff.remaining() == 0.0  # nothing failed: try at once
    assert [backoff.failed() for _ in range(5)] == [0.05, 0.1, 0.2, 0.4, 0.4]
    assert backoff.remaining() == pytest.approx(0.4)
    now[0] += 0.3
    assert backoff.remaining() == pytest.approx(0.1)
    now[0] += 0.125
    assert backoff.remaining() == 0.0
    backoff.succeeded()
    assert backoff.failed() == 0.05


@pytest.fixture
def own_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalServer]:
    """A server of this test's own, which it may stop and start again."""
    bindir = find_bindir()
    if bindir is None:
        if required():
            pytest.fail("PostgreSQL is required (SSA_REQUIRE_POSTGRES) but has no binaries")
        pytest.skip("no PostgreSQL binaries to start a server of the test's own")
    # Reconnect without delay: this test is about recovery; the backoff has its own test.
    monkeypatch.setattr(pg_connection, "RECONNECT_FIRST_S", 0.0)
    monkeypatch.setattr(pg_connection, "RECONNECT_LONGEST_S", 0.0)
    server = LocalServer(bindir, durable=True)  # a crash keeps what was committed
    try:
        server.start()
        yield server
    finally:
        server.remove()


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_the_server_down_degrades_and_recovery_needs_no_restart(
    own_server: LocalServer, clock: ManualClock, caplog: pytest.LogCaptureFixture, mode: str,
) -> None:
    url = own_server.url
    host_wakes = Wakes()
    with Gateway.open(url, clock=clock, on_wake=host_wakes, monitor=False,
                      hosts=[WATCHER]) as host, Gateway.open(url, clock=clock,
                                                             monitor=False) as producer:
        assert producer.watch(WATCHER, CHILD)
        before = producer.human_message(CHILD, channel="before")
        assert before is not None
        assert host_wakes.wait_for(1)
        assert len(host.drain(WATCHER)) == 1

        own_server.stop(mode)  # "immediate": the server crashes
        caplog.set_level(logging.WARNING)
        assert [producer.human_message(CHILD, channel="down") for _ in range(3)] == [None] * 3
        assert producer.set_goal(CHILD, action="set") is None
        down = producer.session_status(CHILD, changes_since=0)
        assert down.state_version == 0  # degraded: refresh the whole session
        assert down.state_changes is not None
        assert down.state_changes.history_gap
        assert host.drain(WATCHER) == []  # the host's reads degrade too, nothing invented
        failing = [r for r in caplog.records if "writes are failing" in r.getMessage()]
        assert len(failing) == 1  # one line per episode

        own_server.start()
        after = producer.human_message(CHILD, channel="after")  # the same gateway recovers
        assert after is not None
        # The host's listener reconnects and claims the new notice's wake.
        assert host_wakes.wait_for(2)
        assert host_wakes.calls == [WATCHER, WATCHER]
        status = host.session_status(CHILD, changes_since=0)
        assert status.state_changes is not None
        assert [e.sequence for e in status.state_changes.events] == [
            before.sequence, after.sequence]  # nothing from the outage, nothing lost
        assert len(host.drain(WATCHER)) == 1


_STALLED_WRITER = """
import sys, time
from persistence import open_backend
backend = open_backend(sys.argv[1], busy_timeout_ms=int(sys.argv[2]))
conn = backend.connect(writer=True)
backend.begin_write(conn)          # holds the log's write lock...
print("locked", flush=True)
time.sleep(60)                     # ...and stalls (frozen, partitioned, swapped out)
"""


def test_a_process_that_stalls_inside_a_write_frees_the_lock_for_the_others(
    pg: SignalLogDb, open_gateway: Callable[..., Gateway],
) -> None:
    busy_ms = 500
    gw = open_gateway(GatewayConfig(busy_timeout_ms=busy_ms))
    assert gw.watch(WATCHER, CHILD)
    stalled = subprocess.Popen(
        [sys.executable, "-c", _STALLED_WRITER, str(pg.location), str(busy_ms)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert stalled.stdout is not None
        assert stalled.stdout.readline().strip() == "locked"
        # Each attempt waits at most busy_timeout_ms for the lock (then None);
        # the server ends the stalled session after the stall timeout (5 s).
        assert gw.human_message(CHILD, channel="c") is None  # a fault, not a hang
        attempts = int(2 * STALL_TIMEOUT_FLOOR_MS / busy_ms)  # bounded: about 10 s of waits
        first = next((e for e in (gw.human_message(CHILD, channel="c")
                                  for _ in range(attempts)) if e is not None), None)
        assert first is not None
        assert len(gw.drain(WATCHER)) == 1
        with _admin(str(pg.location)) as conn:
            ended = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
                " AND state = 'idle in transaction'", ("session-state-awareness",)).fetchone()
        assert ended == (0,)
    finally:
        stalled.kill()
        stalled.wait(timeout=10)
        assert stalled.stdout is not None
        stalled.stdout.close()


def test_a_gateway_whose_presence_connection_dropped_is_present_again_after_a_write(
    pg: SignalLogDb, open_gateway: Callable[..., Gateway],
) -> None:
    first = open_gateway(hosts=[WATCHER])
    assert first.watch(WATCHER, CHILD)
    # The writer's and presence's connections exist once open() returned; the
    # wake listener's is made by the hosting thread and may not be there yet.
    assert _terminate(str(pg.location), "%") >= 2
    # The next write takes the presence lock again before its transaction.
    assert first.human_message(CHILD, channel="c") is not None
    second = open_gateway()
    assert second.shared_at_open  # no restart sweep: the host's leases and wakes stay
    assert first._presence.rejoins == 1  # type: ignore[attr-defined]


def test_presence_and_listening_connections_are_exempt_from_idle_session_timeout(
    role: tuple[str, str], pg: SignalLogDb,
) -> None:
    name, url = role
    with _admin(str(pg.location)) as admin:
        if admin.info.server_version < 140000:
            pytest.skip("idle_session_timeout exists from PostgreSQL 14")
        admin.execute(sql.SQL("ALTER ROLE {} SET idle_session_timeout = 1000").format(
            sql.Identifier(name)))  # a DBA's default that reaps idle sessions
    backend = open_backend(url)
    idle = backend.raw_connect(writer=False, keep_idle=True)  # type: ignore[attr-defined]
    plain = backend.raw_connect(writer=False)  # type: ignore[attr-defined]
    try:
        assert idle.execute("SHOW idle_session_timeout").fetchone() == ("0",)
        assert plain.execute("SHOW idle_session_timeout").fetchone() == ("1s",)
        # The server probes a silent client after 5 s (TCP connections only).
        assert plain.execute("SHOW tcp_keepalives_idle").fetchone() == ("5",)
    finally:
        idle.close()
        plain.close()


@pytest.mark.parametrize(("url", "conninfo", "schema", "shown"), [
    ("postgresql:///db?host=127.0.0.1&port=5&user=u", "postgresql:///db?host=127.0.0.1&port=5"
     "&user=u", "ssa", "postgresql:///db?host=127.0.0.1&port=5&user=u"),
    ("postgresql:///db?host=/run/pg", "postgresql:///db?host=/run/pg", "ssa",
     "postgresql:///db?host=/run/pg"),
    ("postgresql://u@h/db?options=-c%20statement_timeout%3D5000&schema=x",
     "postgresql://u@h/db?options=-c%20statement_timeout%3D5000", "x",
     "postgresql://u@h/db?options=-c%20statement_timeout%3D5000&schema=x"),
    ("postgresql://u:pw@h:5/db?password=S3cret&schema=abc",
     "postgresql://u:pw@h:5/db?password=S3cret", "abc", "postgresql://u@h:5/db?schema=abc"),
    ("postgres://u@h1,h2/db", "postgres://u@h1,h2/db", "ssa", "postgres://u@h1,h2/db"),
    ("POSTGRESQL://u@h/db?sslpassword=k3y", "postgresql://u@h/db?sslpassword=k3y", "ssa",
     "postgresql://u@h/db"),
])
def test_the_url_reaches_libpq_as_given_and_is_shown_without_passwords(
    url: str, conninfo: str, schema: str, shown: str,
) -> None:
    assert pg_backend.parse_location(url) == (conninfo, schema, shown)


@pytest.mark.parametrize(("location", "message"), [
    ("postgresql://h/db?schema=a%0A", "lower-case identifier"),
    ("postgresql://h/db?schema=a&schema=b", "more than one schema"),
    (" postgresql://h/db", "spaces"),
    ("postgresql://h/db ", "spaces"),
    ("postgresql:/127.0.0.1/db", "starts with postgresql://"),
    ("postgres:127.0.0.1/db", "starts with postgresql://"),
    ("postgresql//h/db", "starts with postgresql://"),
    ("postgresql ://h/db", "starts with postgresql://"),
    ("postgresql;//h/db", "starts with postgresql://"),
    ("host=127.0.0.1 port=5432 dbname=db", "as a URL"),
    ("dbname=db", "as a URL"),
    ("user@host:5432/db", "as a URL"),
    ("mysql://h/db", "not a mysql:// URL"),
])
def test_mistyped_urls_are_refused_not_taken_for_file_names(
    location: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # a file or directory made of the URL would land here
    with pytest.raises(InvalidArgument, match=message):
        Gateway.open(location, monitor=False)
    assert list(tmp_path.iterdir()) == []


def test_two_schemas_never_share_a_lock() -> None:
    # These two names have the same CRC-32 (the first lock ids did).
    names = ("adv_m9nq5h3k", "adv_3b6lpjl1")
    assert len({pg_backend._lock_id("write", n) for n in names}) == 2
    assert len({pg_backend._lock_id(kind, names[0]) for kind in ("write", "presence")}) == 2
    assert all(-2**63 <= pg_backend._lock_id("write", n) < 2**63 for n in names)


def test_missing_grants_are_named_at_open_and_by_the_cli(
    role: tuple[str, str], pg: SignalLogDb, clock: ManualClock,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name, url = role
    schema = url.rsplit("schema=", 1)[1]
    with _admin(str(pg.location)) as admin:
        admin.execute(sql.SQL("REVOKE INSERT ON ALL TABLES IN SCHEMA {} FROM {}").format(
            sql.Identifier(schema), sql.Identifier(name)))
    with pytest.raises(StorageError, match="lacks SELECT, INSERT, UPDATE or DELETE"):
        Gateway.open(url, clock=clock, monitor=False)
    assert main(["list", "--db", url]) == 0  # reading needs SELECT only
    with _admin(str(pg.location)) as admin:  # USAGE only: not even the columns are visible
        admin.execute(sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM {}").format(
            sql.Identifier(schema), sql.Identifier(name)))
    with pytest.raises(StorageError, match="lacks SELECT, INSERT, UPDATE or DELETE"):
        Gateway.open(url, clock=clock, monitor=False)
    with _admin(str(pg.location)) as admin:
        admin.execute(sql.SQL("REVOKE USAGE ON SCHEMA {} FROM {}").format(
            sql.Identifier(schema), sql.Identifier(name)))
    with pytest.raises(StorageError, match="may not use schema"):
        Gateway.open(url, clock=clock, monitor=False)
    capsys.readouterr()
    assert main(["status", CHILD, "--db", url]) == 1
    err = capsys.readouterr().err
    assert "GRANT USAGE ON SCHEMA" in err
    assert err.count("\n") == 1  # one line


@pytest.mark.parametrize("statement", [
    "CREATE VIEW {schema}.v AS SELECT 1 AS x",
    "CREATE SEQUENCE {schema}.s",
    "CREATE FUNCTION {schema}.f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    "CREATE TYPE {schema}.mood AS ENUM ('ok')",
    "CREATE TABLE {schema}.ssa_schema (id int)",
])
def test_a_schema_holding_anything_of_something_else_is_refused(
    pg: SignalLogDb, clock: ManualClock, statement: str,
) -> None:
    url = str(pg.location)
    schema = url.rsplit("schema=", 1)[1]
    with _admin(url) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        admin.execute(statement.format(schema=schema))
    with pytest.raises(SchemaError, match=r"not a (session-state )?signal log"):
        Gateway.open(url, clock=clock, monitor=False)


@pytest.mark.parametrize("busy_ms", [0, 1])
def test_tiny_busy_timeouts_still_bound_lock_waits_and_never_end_our_own_transactions(
    pg: SignalLogDb, open_gateway: Callable[..., Gateway], busy_ms: int,
) -> None:
    gw = open_gateway(GatewayConfig(busy_timeout_ms=busy_ms))  # opening ran its transactions
    assert gw.watch(WATCHER, CHILD)
    backend = open_backend(str(pg.location), busy_timeout_ms=busy_ms)
    holder = backend.connect(writer=True)
    try:
        backend.begin_write(holder)  # another process holds the write lock
        assert gw.human_message(CHILD, channel="c") is None  # at once, not forever
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert gw.human_message(CHILD, channel="c") is not None


def test_driver_errors_are_one_line_and_say_what_a_read_only_server_means() -> None:
    raw = psycopg.errors.ReadOnlySqlTransaction(
        "cannot execute DELETE in a read-only transaction\nLINE 1: DELETE FROM x\n        ^")
    wrapped = pg_connection.wrap_error(raw)
    assert "\n" not in str(wrapped)
    assert "cannot execute DELETE in a read-only transaction" in str(wrapped)
    assert "a standby? Open the gateway on the primary" in str(wrapped)
    assert wrapped.sqlstate == "25006"


def test_a_presence_lock_lost_while_another_gateway_joins_is_taken_at_a_later_write(
    pg: SignalLogDb,
) -> None:
    url = str(pg.location)
    backend = open_backend(url)
    writer = backend.connect(writer=True, migrate=True)
    writer.close()
    presence = backend.presence()
    assert presence.join()
    conn = presence._conn  # type: ignore[attr-defined]
    lock = presence._lock  # type: ignore[attr-defined]
    with _admin(url) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        assert select.select([conn.fileno()], [], [], 10)[0]  # the server said goodbye
        admin.execute("SELECT pg_advisory_lock(%s)", (lock,))  # a gateway joining right now
        presence.refresh()  # not taken (it never waits): tried again at the next write
        assert presence.rejoins == 0  # type: ignore[attr-defined]
        admin.execute("SELECT pg_advisory_unlock(%s)", (lock,))
    presence.refresh()
    assert presence.rejoins == 1  # type: ignore[attr-defined]
    with _admin(url) as admin:
        held = admin.execute(  # a bigint advisory key shows as (classid, objid) halves
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ShareLock'"
            " AND granted AND classid::bigint = %s AND objid::bigint = %s",
            ((lock >> 32) & 0xFFFFFFFF, lock & 0xFFFFFFFF)).fetchone()
    assert held == (1,)
    presence.release()
