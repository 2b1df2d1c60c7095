"""Actor failure (issue 5, item 2): injected exceptions in every actor kind, and corruption.

An exception injected inside the session, cursor, waker, upstream-monitor or
persistence actor is logged at ERROR, reaches the caller only as ``None``, an
``actors.errors`` exception or a documented degraded result within a bounded
time, and the actor keeps working or is rebuilt from durable state (the lost
notice comes back with the next material event, the next scan or the
restart sweep). A corrupt database file makes the persistence actor fatal
and the gateway closes in order. Run with ``-s`` to see the tried-case counts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from pathlib import Path
from typing import Any

import apsw
import pytest

import actors.engine.cursor
import actors.monitors.link_monitor
import persistence._writes
from actors import Gateway
from actors.engine.notices import NoticeQueue, notice_text
from actors.errors import GatewayClosed, SessionStateError, StorageError
from actors.testing import running_actors
from tests._faults_support import (
    ADOPTED,
    bounded,
    corrupt,
    fault_config,
    log_lines,
    raise_once,
)
from tests._upstream_rows import claude_assistant, claude_user
from tests.conftest import CHILD, WATCHER, WakeRecorder

WAIT_S = 30.0
THREADS = 8


class Injected(RuntimeError):
    """The exception the tests inject into an actor's handler."""


# name: (patch target, attribute, the call that hits it, ERROR line expected on `actors`)
INJECTIONS: dict[str, tuple[object, str, str, str]] = {
    "session-pending": (NoticeQueue, "reconcile", "pending",
                        "SessionActor failed handling PendingTexts"),
    "cursor-register": (actors.engine.cursor, "submit", "watch",
                        "CursorActor failed handling Register"),
    "session-drain": (NoticeQueue, "drain", "drain", "SessionActor failed handling Drain"),
}
OTHER_WATCHER = "agent:main:other-watcher"


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "projects" / "-work" / "ce24e94d.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(claude_user("already imported") + claude_assistant("ok"))
    return path


def _spawn(gw: Gateway) -> str:
    spawn = gw.spawn_subagent(WATCHER, CHILD, run_id="spawn")
    assert spawn is not None
    return notice_text(CHILD, spawn.sequence)


def _trigger(gw: Gateway, how: str) -> tuple[str, Any]:
    assert gw.human_message(CHILD, channel="before") is not None
    if how == "drain":
        return bounded(partial(gw.drain, WATCHER))
    if how == "pending":
        return bounded(partial(gw.pending_notices, WATCHER))
    return bounded(partial(gw.watch, OTHER_WATCHER, CHILD))


def _errors(caplog: pytest.LogCaptureFixture, logger: str = "actors") -> list[str]:
    return log_lines(caplog, logger, logging.ERROR)


@pytest.mark.parametrize("recovery", ["next_call", "restart"])
@pytest.mark.parametrize("where", list(INJECTIONS))
def test_an_injected_actor_failure_is_logged_and_the_notice_comes_back(
    where: str, recovery: str, open_gateway: Callable[..., Gateway], wakes: WakeRecorder,
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
) -> None:
    target, name, how, line = INJECTIONS[where]
    gw = open_gateway(fault_config())
    notice = _spawn(gw)
    caplog.set_level(logging.WARNING)
    with raise_once(target, name, Injected(where), monkeypatch) as fired:
        outcome = _trigger(gw, how)  # bounded; its result type is checked below (xfail)
    assert fired.is_set()
    assert any(line in text for text in _errors(caplog)), _errors(caplog)
    assert outcome[0] in ("ok", "raised")
    assert gw.session_status(CHILD).state_version >= 2  # the event itself is durable
    # The watcher's session actor still answers; a failed call consumed nothing.
    assert gw.pending_notices(WATCHER) == [notice]
    assert wakes.calls == [WATCHER]  # the producer's wake ran before the failure
    if recovery == "next_call" and how == "watch":
        assert gw.watch(OTHER_WATCHER, CHILD) is True  # the retried watch works
        assert gw.human_message(CHILD, channel="later") is not None
        assert len(gw.pending_notices(OTHER_WATCHER)) == 1
    elif recovery == "next_call":
        assert gw.drain(WATCHER) == [notice]  # the retried drain works
        assert gw.human_message(CHILD, channel="later") is not None
        assert len(gw.pending_notices(WATCHER)) == 1
        assert wakes.calls[-1:] == [WATCHER]
    else:
        gw.close()
        assert open_gateway(fault_config()).pending_notices(WATCHER) == [notice]
    print(f"actor failure {where}/{recovery}: tried 1 injected failure, survived 1 "
          f"(caller got {outcome[0]}), notice came back")


@pytest.mark.parametrize("where", list(INJECTIONS))
def test_an_injected_actor_failure_reaches_the_caller_only_as_a_documented_result(
    where: str, open_gateway: Callable[..., Gateway], monkeypatch: pytest.MonkeyPatch,
) -> None:
    target, name, how, _ = INJECTIONS[where]
    gw = open_gateway(fault_config())
    _spawn(gw)
    with raise_once(target, name, Injected(where), monkeypatch):
        how_it_ended, value = _trigger(gw, how)
    print(f"actor failure {where}: caller got {how_it_ended} {type(value).__name__}")
    if how in ("drain", "pending"):
        assert how_it_ended == "ok" or isinstance(value, SessionStateError), value
    else:  # watch never raises for an internal failure: it answers False
        assert how_it_ended == "ok", value
        assert value is False


@pytest.mark.parametrize("error", [RuntimeError, SystemExit])
def test_on_wake_raising_is_logged_and_the_next_wake_still_runs(
    error: type[BaseException], open_gateway: Callable[..., Gateway],
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str] = []
    failed = threading.Event()

    def on_wake(watcher: str) -> None:
        if not failed.is_set():
            failed.set()
            raise error("injected in on_wake")
        calls.append(watcher)

    gw = open_gateway(fault_config(), on_wake=on_wake)
    notice = _spawn(gw)
    caplog.set_level(logging.WARNING)
    outcome = bounded(partial(gw.human_message, CHILD, channel="x"))
    assert outcome[0] == "ok"
    assert outcome[1] is not None
    assert failed.is_set()
    assert any("on_wake raised" in text for text in _errors(caplog))
    assert gw.pending_notices(WATCHER) == [notice]  # the notice stays queued
    assert gw.drain(WATCHER) == [notice]
    later = gw.human_message(CHILD, channel="y")
    assert later is not None
    assert calls == [WATCHER]
    assert gw.pending_notices(WATCHER) == [notice_text(CHILD, later.sequence - 1)]
    print(f"actor failure waker/{error.__name__}: tried 1 injected failure, survived 1")


def test_a_stuck_on_wake_times_out_into_a_logged_result_and_no_caller_waits_forever(
    open_gateway: Callable[..., Gateway], caplog: pytest.LogCaptureFixture,
) -> None:
    entered, release = threading.Event(), threading.Event()
    woke: list[str] = []
    watcher_woke = threading.Event()

    def on_wake(watcher: str) -> None:
        woke.append(watcher)
        if watcher == WATCHER:
            watcher_woke.set()
        if watcher == "agent:main:stuck":
            entered.set()
            release.wait(WAIT_S)

    config = fault_config(ask_timeout_s=1.0)
    gw = open_gateway(config, on_wake=on_wake)
    other = "agent:main:subagent:other"
    # on_wake runs in the thread of the call that queued the notice: a host
    # thread whose wake hangs is stuck with it, but no other caller waits.
    assert gw.watch("agent:main:stuck", other)
    stuck = threading.Thread(target=gw.human_message, args=(other,), kwargs={"channel": "s"})
    stuck.start()
    try:
        assert entered.wait(WAIT_S)
        notice = _spawn(gw)  # its wake waits behind the stuck one, then gives up
        caplog.set_level(logging.WARNING)
        started = time.monotonic()
        outcome = bounded(partial(gw.human_message, CHILD, channel="x"))
        elapsed = time.monotonic() - started
        assert outcome[0] == "ok"
        assert outcome[1] is not None
        assert elapsed < 4 * config.ask_timeout_s
        assert any("waking agent:main:main failed" in text
                   for text in log_lines(caplog, "actors"))
        assert gw.pending_notices(WATCHER) == [notice]
    finally:
        release.set()
        stuck.join(WAIT_S)
    assert not stuck.is_alive()
    assert watcher_woke.wait(WAIT_S)  # the queued wake still ran once released (on a worker)
    assert woke.count(WATCHER) == 1
    assert gw.drain(WATCHER) == [notice]
    assert gw.human_message(CHILD, channel="y") is not None
    print(f"actor failure waker/stuck: caller answered in {elapsed:.1f}s "
          f"(ask timeout {config.ask_timeout_s}s), survived 1")


def test_an_injected_monitor_failure_is_logged_and_the_next_scan_finds_the_turn(
    open_gateway: Callable[..., Gateway], transcript: Path,
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
) -> None:
    gw = open_gateway(fault_config())
    assert gw.adopt(ADOPTED, source="claude", path=transcript) is not None
    assert gw.watch(WATCHER, ADOPTED)
    base = gw.session_status(ADOPTED).state_version
    with transcript.open("ab") as handle:
        handle.write(claude_user("typed by a person"))
    caplog.set_level(logging.WARNING)
    with raise_once(
        actors.monitors.link_monitor, "scan_source", Injected("monitor"), monkeypatch
    ) as fired:
        outcome = bounded(gw.scan_upstream)
    assert fired.is_set()
    assert outcome == ("ok", [])  # documented: a scan never raises, it logs
    assert any("UpstreamMonitor failed handling ScanLink" in text for text in _errors(caplog))
    assert gw.pending_notices(WATCHER) == []
    events = gw.scan_upstream()
    assert [e.kind for e in events] == ["human_direct_message"]
    assert gw.pending_notices(WATCHER) == [notice_text(ADOPTED, base)]
    assert gw.scan_upstream() == []  # counted once
    print("actor failure monitor: tried 1 injected failure, survived 1, the turn came back")


def test_an_injected_persistence_failure_restarts_it_or_closes_the_gateway(
    open_gateway: Callable[..., Gateway], caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = fault_config(ask_timeout_s=1.0)
    gw = open_gateway(config)
    notice = _spawn(gw)
    caplog.set_level(logging.WARNING)
    with raise_once(persistence._writes, "record_event", Injected("persistence"),
                    monkeypatch) as fired:
        first = bounded(partial(gw.human_message, CHILD, channel="x"))
    assert fired.is_set()
    assert first == ("ok", None)  # bounded, degraded
    after = bounded(partial(gw.human_message, CHILD, channel="y"))
    print(f"actor failure persistence: first call {first}, next call {after[0]} "
          f"{type(after[1]).__name__}")
    restarted = after[0] == "ok" and after[1] is not None
    closed = after[0] == "raised" and isinstance(after[1], GatewayClosed)
    assert restarted or closed, after
    assert _errors(caplog, "persistence") or _errors(caplog, "actors")
    gw.close()
    assert open_gateway(config).pending_notices(WATCHER) == [notice]


def _fill(gw: Gateway, n: int = 50) -> None:
    for i in range(n):
        assert gw.finish_run(CHILD, run_id=f"run-{i:03d}", outcome="ok") is not None


def test_a_corrupt_database_file_makes_the_gateway_close_in_order(
    open_gateway: Callable[..., Gateway], db_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    config = fault_config()
    gw = open_gateway(config)
    _spawn(gw)
    _fill(gw)
    checkpoint = apsw.Connection(str(db_path))
    try:  # every page into the main file, the WAL reset: the writer must re-read
        assert checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()[0][0] == 0
    finally:
        checkpoint.close()
    assert corrupt(db_path) > 0
    corrupt(db_path.with_name(db_path.name + "-wal"))
    caplog.set_level(logging.WARNING)
    barrier = threading.Barrier(THREADS, timeout=WAIT_S)
    per_thread = 5

    def worker(t: int) -> list[object]:
        barrier.wait()
        wrong: list[object] = []
        for j in range(per_thread):
            try:
                result = gw.human_message(CHILD, channel=f"t{t}-{j}")
            except GatewayClosed:
                continue
            except Exception as exc:
                wrong.append(exc)
            else:
                if result is not None:
                    wrong.append(result)  # recorded into a corrupt file
        return wrong

    pool = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="faults-corrupt")
    futures = [pool.submit(worker, t) for t in range(THREADS)]
    try:
        results = [f.result(timeout=WAIT_S) for f in futures]
    except FutureTimeout:
        pool.shutdown(wait=False)
        pytest.fail(f"a caller waited more than {WAIT_S}s on a corrupt database")
    pool.shutdown(wait=True)
    assert [w for result in results for w in result] == []
    with pytest.raises(GatewayClosed):
        gw.human_message(CHILD, channel="closed")
    with pytest.raises(GatewayClosed):
        gw.drain(WATCHER)
    with pytest.raises(GatewayClosed):
        gw.session_status(CHILD)
    assert any("unusable" in text for text in _errors(caplog, "persistence"))
    assert any("closing the gateway" in text for text in _errors(caplog))
    assert running_actors() == []  # every actor stopped in order; the leak check joins threads
    with pytest.raises(StorageError):
        Gateway.open(db_path, config=config, monitor=False)
    print(f"actor failure corrupt file: tried {THREADS * per_thread + 3} calls from "
          f"{THREADS} threads, all None or GatewayClosed, gateway closed in order")


def test_corruption_found_by_a_read_makes_the_gateway_close_in_order(
    open_gateway: Callable[..., Gateway], db_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    config = fault_config()
    gw = open_gateway(config)
    _spawn(gw)
    _fill(gw)
    assert corrupt(db_path) > 0
    assert corrupt(db_path.with_name(db_path.name + "-wal")) > 0
    caplog.set_level(logging.WARNING)
    status = bounded(partial(gw.session_status, CHILD, changes_since=0))
    assert status[0] == "ok"  # degraded, never raised
    write = bounded(partial(gw.human_message, CHILD, channel="after"))
    print(f"actor failure corrupt WAL: read {status[0]} v{status[1].state_version}, "
          f"write {write[0]} {type(write[1]).__name__}")
    assert write == ("ok", None) or isinstance(write[1], GatewayClosed), write
    with pytest.raises(GatewayClosed):
        gw.human_message(CHILD, channel="closed")
    assert _errors(caplog, "persistence") or _errors(caplog)


@pytest.mark.sqlite_only  # injects SQLite faults (a VFS or a pragma)
def test_a_corrupt_error_inside_one_command_is_fatal(
    open_gateway: Callable[..., Gateway], caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gw = open_gateway(fault_config())
    _spawn(gw)

    def corrupt_page(*args: object, **kwargs: object) -> object:
        raise apsw.CorruptError("database disk image is malformed (injected)")

    monkeypatch.setattr(persistence._writes, "record_event", corrupt_page)
    caplog.set_level(logging.WARNING)
    first = bounded(partial(gw.human_message, CHILD, channel="x"))
    later = bounded(partial(gw.set_goal, CHILD, action="set"))
    print(f"actor failure corrupt command: first {first}, later {later[0]} "
          f"{type(later[1]).__name__}")
    assert first == ("ok", None)
    assert later[0] == "raised"
    assert isinstance(later[1], GatewayClosed)
    assert any("unusable" in text for text in _errors(caplog, "persistence"))

