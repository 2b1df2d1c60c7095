"""Hosting leases and wakes between two gateways on one file, in one process (issue 9).

Deterministic: the probe thread's period is set to a minute, so the tests run
each probe themselves (``gw._hosting.probe()``), and the clock is the fake one.
SQLite only: on PostgreSQL wakes are pushed (``LISTEN``), so a hosting thread
claims them as they come; ``tests/test_postgres.py`` runs these scenarios
there with bounded waits instead of hand-driven probes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import pytest

from actors import Gateway, GatewayConfig
from actors.errors import ArgumentTypeError, InvalidArgument, InvalidSessionKey, StorageError
from tests.conftest import CHILD, JOIN_TIMEOUT_S, WATCHER, ManualClock, WakeRecorder

QUIET = GatewayConfig(probe_interval_ms=60_000, lease_ms=600_000)

pytestmark = pytest.mark.sqlite_only


def _pair(open_gateway: Callable[..., Gateway]) -> tuple[Gateway, WakeRecorder,
                                                           Gateway, WakeRecorder]:
    host_wakes, producer_wakes = WakeRecorder(), WakeRecorder()
    host = open_gateway(QUIET, on_wake=host_wakes, hosts=[WATCHER])
    producer = open_gateway(QUIET, on_wake=producer_wakes)
    assert producer.watch(WATCHER, CHILD)
    return host, host_wakes, producer, producer_wakes


def test_a_notice_caused_elsewhere_wakes_the_host_once_at_its_next_probe(
    open_gateway: Callable[..., Gateway],
) -> None:
    host, host_wakes, producer, producer_wakes = _pair(open_gateway)
    for _ in range(20):
        assert producer.human_message(CHILD, channel="c") is not None
    assert producer_wakes.calls == []  # not here: a live process hosts the watcher
    assert host_wakes.calls == []
    assert host._hosting.probe() == 1
    assert host_wakes.calls == [WATCHER]
    assert host._hosting.probe() == 0  # nothing new: no claim, no wake
    assert host_wakes.calls == [WATCHER]


def test_a_notice_the_host_causes_itself_wakes_it_directly(
    open_gateway: Callable[..., Gateway],
) -> None:
    host, host_wakes, _producer, producer_wakes = _pair(open_gateway)
    assert host.human_message(CHILD, channel="c") is not None
    assert host_wakes.calls == [WATCHER]
    assert host._hosting.probe() == 0
    assert producer_wakes.calls == []


def test_a_lapsed_lease_sends_wakes_back_to_the_producer(
    open_gateway: Callable[..., Gateway], clock: ManualClock,
) -> None:
    host, host_wakes, producer, producer_wakes = _pair(open_gateway)
    clock.advance(QUIET.lease_ms)  # the host stopped renewing (as if it died)
    assert producer.human_message(CHILD, channel="c") is not None
    assert producer_wakes.calls == [WATCHER]
    assert host._hosting.probe() == 0
    host._hosting.claim()  # it lives after all (a claim renews): the next notice goes to it
    assert producer.drain(WATCHER)
    assert producer.human_message(CHILD, channel="c") is not None
    assert host._hosting.probe() == 1
    assert host_wakes.calls == [WATCHER]
    assert producer_wakes.calls == [WATCHER]


def test_closing_the_host_releases_its_lease_at_once(
    open_gateway: Callable[..., Gateway],
) -> None:
    host, _host_wakes, producer, producer_wakes = _pair(open_gateway)
    host.close()
    assert producer.human_message(CHILD, channel="c") is not None
    assert producer_wakes.calls == [WATCHER]


def test_a_new_host_takes_the_wakes_a_dead_host_left(
    open_gateway: Callable[..., Gateway],
) -> None:
    host, host_wakes, producer, _producer_wakes = _pair(open_gateway)
    assert producer.human_message(CHILD, channel="c") is not None  # addressed to host
    successor_wakes = WakeRecorder()
    successor = open_gateway(QUIET, on_wake=successor_wakes)
    successor.host(WATCHER)
    assert successor_wakes.calls == [WATCHER]  # taken when it started hosting
    assert host._hosting.probe() == 0
    assert host_wakes.calls == []
    assert successor.hosted == frozenset({WATCHER})


def test_unhost_sends_wakes_back_to_where_they_are_caused(
    open_gateway: Callable[..., Gateway],
) -> None:
    host, _host_wakes, producer, producer_wakes = _pair(open_gateway)
    host.unhost(WATCHER)
    assert host.hosted == frozenset()
    assert producer.human_message(CHILD, channel="c") is not None
    assert producer_wakes.calls == [WATCHER]


def test_hosting_arguments_are_checked(open_gateway: Callable[..., Gateway]) -> None:
    with pytest.raises(InvalidArgument, match="on_wake"):
        open_gateway(QUIET, on_wake=None, hosts=[WATCHER])
    with pytest.raises(ArgumentTypeError):
        open_gateway(QUIET, hosts=WATCHER)  # a str, not an iterable of keys
    gw = open_gateway(QUIET)
    with pytest.raises(InvalidSessionKey):
        gw.host("global")  # not agent-qualified
    with pytest.raises(InvalidSessionKey):
        gw.host('agent:main:"forged"')
    quiet = open_gateway(QUIET, on_wake=None)
    with pytest.raises(InvalidArgument, match="on_wake"):
        quiet.host(WATCHER)
    gw.host(WATCHER, WATCHER)  # idempotent, duplicates folded
    assert gw.hosted == frozenset({WATCHER})


def test_a_host_that_stalled_past_its_lease_still_takes_the_wakes_addressed_to_it(
    open_gateway: Callable[..., Gateway], clock: ManualClock,
) -> None:
    host, host_wakes, producer, _producer_wakes = _pair(open_gateway)
    assert producer.human_message(CHILD, channel="c") is not None  # addressed to host
    clock.advance(QUIET.lease_ms + 1)  # the host stalls past its lease before probing
    assert host._hosting.probe() == 1  # the claim revives the lease and takes the wake
    assert host_wakes.calls == [WATCHER]


def test_a_failed_claim_is_retried_by_the_next_probe(
    open_gateway: Callable[..., Gateway], monkeypatch: pytest.MonkeyPatch,
) -> None:
    host, host_wakes, producer, _producer_wakes = _pair(open_gateway)
    assert producer.human_message(CHILD, channel="c") is not None
    hosting = host._hosting
    real = hosting.claim

    def busy() -> int:
        raise StorageError("database is locked")

    monkeypatch.setattr(hosting, "claim", busy)
    with pytest.raises(StorageError):
        hosting.probe()
    monkeypatch.setattr(hosting, "claim", real)
    assert hosting.probe() == 1  # nothing changed in the log, yet it claims again
    assert host_wakes.calls == [WATCHER]


def test_closing_a_host_leaves_its_unserved_wakes_to_the_next_host(
    open_gateway: Callable[..., Gateway],
) -> None:
    host, host_wakes, producer, producer_wakes = _pair(open_gateway)
    assert producer.human_message(CHILD, channel="c") is not None  # addressed to host
    host.close()  # before any probe took it
    assert host_wakes.calls == []
    successor_wakes = WakeRecorder()
    open_gateway(QUIET, on_wake=successor_wakes, hosts=[WATCHER])
    assert successor_wakes.calls == [WATCHER]
    assert producer_wakes.calls == []


def test_unhosting_leaves_its_unserved_wakes_to_a_co_host(
    open_gateway: Callable[..., Gateway],
) -> None:
    host, host_wakes, producer, _producer_wakes = _pair(open_gateway)
    co_wakes = WakeRecorder()
    co_host = open_gateway(QUIET, on_wake=co_wakes, hosts=[WATCHER])
    assert producer.human_message(CHILD, channel="c") is not None
    host.unhost(WATCHER)
    assert host._hosting.probe() == 0
    assert co_host._hosting.probe() == 1
    assert co_wakes.calls == [WATCHER]
    assert host_wakes.calls == []

def test_a_lease_shorter_than_ten_probe_periods_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="lease_ms"):
        GatewayConfig(lease_ms=99, probe_interval_ms=10)


def test_taking_over_from_a_dead_host_wakes_once_per_notice_it_was_told_of(
    open_gateway: Callable[..., Gateway], clock: ManualClock,
) -> None:
    host, host_wakes, producer, _producer_wakes = _pair(open_gateway)
    assert producer.watch(WATCHER, "agent:main:other")
    assert producer.human_message(CHILD, channel="c") is not None
    assert producer.human_message("agent:main:other", channel="c") is not None
    assert host._hosting.probe() == 2  # the host was woken, then "dies" before draining
    assert host_wakes.calls == [WATCHER, WATCHER]
    assert producer.human_message(CHILD, channel="c") is not None  # covered, no new wake
    clock.advance(QUIET.lease_ms + 1)  # its lease lapses; nobody else hosts the watcher
    successor_wakes = WakeRecorder()
    successor = open_gateway(QUIET, on_wake=successor_wakes, hosts=[WATCHER])
    assert successor_wakes.calls == [WATCHER, WATCHER]  # one per notice still open
    assert len(successor.pending_notices(WATCHER)) == 2
    assert host._hosting.probe() == 0


def test_a_first_host_owes_no_wakes_for_notices_already_woken(
    open_gateway: Callable[..., Gateway], wakes: WakeRecorder,
) -> None:
    producer = open_gateway(QUIET)
    assert producer.watch(WATCHER, CHILD)
    assert producer.human_message(CHILD, channel="c") is not None
    assert wakes.calls == [WATCHER]  # no host: woken where caused
    late_wakes = WakeRecorder()
    open_gateway(QUIET, on_wake=late_wakes, hosts=[WATCHER])
    assert late_wakes.calls == []


def test_renewals_that_keep_failing_while_reads_work_warn_once(
    open_gateway: Callable[..., Gateway], monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The one test here that lets the hosting thread run: renewals every 0.1 s.
    host = open_gateway(GatewayConfig(probe_interval_ms=10, lease_ms=300),
                        on_wake=WakeRecorder(), hosts=[WATCHER])
    hosting = host._hosting
    real = hosting.claim
    claims = threading.Semaphore(0)
    writable = threading.Event()

    def claim() -> int:  # a read-only server: every write fails, every read works
        claims.release()
        if not writable.is_set():
            raise StorageError("cannot execute INSERT in a read-only transaction")
        return real()

    caplog.set_level(logging.INFO, logger="actors.engine.hosting")
    monkeypatch.setattr(hosting, "claim", claim)
    assert all(claims.acquire(timeout=JOIN_TIMEOUT_S) for _ in range(6))
    writable.set()
    assert all(claims.acquire(timeout=JOIN_TIMEOUT_S) for _ in range(3))
    messages = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert [m for level, m in messages if level == logging.WARNING] == [
        "the hosting probe failed (retrying): StorageError: cannot execute INSERT in a "
        "read-only transaction"]
    assert (logging.INFO, "the hosting probe works again") in messages
