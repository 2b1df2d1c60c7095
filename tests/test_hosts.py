"""Several hosts on one PostgreSQL signal log, over a network (issue 10, item 5).

Each simulated host is a process in a network namespace of the test's own
(``tests/_netns.py``) that reaches a throw-away server of the test's own
over its veth link, as gateways on different machines would. Skipped where
namespaces cannot be made (not root, no iproute2). Every wait is bounded
(:data:`WAIT_S`, below pytest-timeout's 60 s); every child is killed at the end.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._netns import Lan, unavailable
from tests._pg import LocalServer, find_bindir, required
from tests.conftest import WATCHER

psycopg = pytest.importorskip("psycopg")

# slow: its partition is timed in seconds (TCP keepalives), which a busy machine
# running other tests in parallel stretches; the slow tier runs one test at a time.
pytestmark = [pytest.mark.postgres_only, pytest.mark.slow]

WAIT_S = 20.0
ROOT = Path(__file__).resolve().parents[1]
# A host gives up on a silent link after about 3 s (not libpq's 11 s default).
QUICK = "keepalives_idle=1&keepalives_interval=1&keepalives_count=2&tcp_user_timeout=1500"


class Child:
    """A simulated host's process: commands on stdin, one answer line each."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.log: list[str] = []
        self._logged = threading.Condition()
        self._readers = [threading.Thread(target=self._read, args=(stream, put), daemon=True)
                         for stream, put in ((self.proc.stdout, self.lines.put),
                                             (self.proc.stderr, self._note))]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: object, put: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            put(line.rstrip("\n"))  # type: ignore[operator]

    def _note(self, line: str) -> None:
        with self._logged:
            self.log.append(line)
            self._logged.notify_all()

    def next(self) -> str:
        """The next line it printed (fails the test after ``WAIT_S``)."""
        try:
            return self.lines.get(timeout=WAIT_S)
        except queue.Empty:
            pytest.fail(f"no answer within {WAIT_S} s; its log: {self.log[-5:]}")

    def ask(self, command: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.next()

    def logged(self, text: str) -> bool:
        """Whether a log line holding ``text`` arrives within ``WAIT_S``."""
        with self._logged:
            return self._logged.wait_for(lambda: any(text in line for line in self.log),
                                         WAIT_S)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=WAIT_S)
        for reader in self._readers:
            reader.join(timeout=WAIT_S)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def lan() -> Iterator[tuple[Lan, LocalServer]]:
    """Two simulated hosts and a durable server listening on their links only (and loopback)."""
    bindir = find_bindir()
    if bindir is None:
        if required():
            pytest.fail("PostgreSQL is required (SSA_REQUIRE_POSTGRES) but has no binaries")
        pytest.skip("no PostgreSQL binaries to start a server of the test's own")
    why = unavailable()
    if why is not None:
        pytest.skip(why)
    net = Lan(2)
    server: LocalServer | None = None
    try:
        server = LocalServer(bindir, durable=True, trust=[net.network], listen=[
            "127.0.0.1", net.server_address(1), net.server_address(2)])
        server.start()
        yield net, server
    finally:
        if server is not None:
            server.remove()
        net.remove()


def _url(net: Lan, server: LocalServer, i: int, extra: str = "") -> str:
    query = "schema=hosts" + (f"&{extra}" if extra else "")
    return f"postgresql://postgres@{net.server_address(i)}:{server.port}/postgres?{query}"


def _start(net: Lan, server: LocalServer, i: int, role: str, extra: str = "") -> Child:
    child = Child(net.run_argv(i, [sys.executable, "-m", "tests._netns_child",
                                   _url(net, server, i, extra), role]))
    assert child.next() == "ready", child.log[-5:]
    return child


def _drain_with_follow_up(host: Child) -> None:
    """Twenty changes, one notice; the nineteen after its frozen watermark, one follow-up.

    The first change opens the notice; the drain acknowledges it, and the
    changes that landed after its watermark open exactly one follow-up, whose
    wake the drain's own commit sends; the second drain takes it.
    """
    assert {host.ask("drain"), host.next()} == {"drained 1", f"wake {WATCHER}"}
    assert host.ask("drain") == "drained 1"


def test_a_watcher_hosted_on_one_host_is_woken_once_by_changes_on_another(
    lan: tuple[Lan, LocalServer],
) -> None:
    net, server = lan
    host = _start(net, server, 1, "host")
    producer = None
    try:
        producer = _start(net, server, 2, "producer")
        with psycopg.connect(server.url, autocommit=True, connect_timeout=10) as admin:
            clients = {str(a) for (a,) in admin.execute(
                "SELECT DISTINCT client_addr FROM pg_stat_activity"
                " WHERE application_name = 'session-state-awareness'")}
        assert clients == {net.host_address(1), net.host_address(2)}  # over the links
        assert producer.ask("watch") == "watched True"
        for _round in range(2):
            assert producer.ask("fire 20") == "fired 20"
            assert host.next() == f"wake {WATCHER}"  # pushed across hosts
            _drain_with_follow_up(host)
        assert host.ask("quit") == "wakes 4"  # a notice and its follow-up per round
        assert producer.ask("quit") == "wakes 0"  # a host is live: never where caused
    finally:
        host.stop()
        if producer is not None:
            producer.stop()


def test_a_partitioned_host_reconnects_and_claims_the_wake_it_missed(
    lan: tuple[Lan, LocalServer],
) -> None:
    net, server = lan
    host = _start(net, server, 1, "host", QUICK)
    producer = None
    try:
        producer = _start(net, server, 2, "producer")
        assert producer.ask("watch") == "watched True"
        net.cut(1)
        # The server commits the change and its wake row; the host hears nothing.
        assert producer.ask("fire 20") == "fired 20"
        assert host.logged("the wake listener")  # its listener gave up on the silent link
        net.mend(1)
        assert host.next() == f"wake {WATCHER}"  # reconnected, re-swept, woken
        _drain_with_follow_up(host)
        assert host.ask("quit") == "wakes 2"
        assert producer.ask("quit") == "wakes 0"
    finally:
        host.stop()
        if producer is not None:
            producer.stop()
