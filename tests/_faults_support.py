"""Helpers shared by the storage-fault and actor-failure suites (issue 5, items 1 and 2).

Nothing here sleeps or polls: every wait is an ``Event``, a barrier, a
future or a subprocess pipe with its own timeout.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

import apsw
import pytest

from actors import Gateway, GatewayConfig, SendResult, SessionStateEventInput, SessionStatus
from persistence import Ping
from tests._faultvfs import FaultVFS, _FaultFile

__all__ = [
    "ADOPTED",
    "DELETABLE",
    "OTHER",
    "CallOutcome",
    "LockHolder",
    "ReadFaultVFS",
    "bounded",
    "degraded",
    "log_lines",
    "producers",
    "raise_once",
    "status_ok",
    "writer_connection",
]

ADOPTED = "agent:main:adopted:claude"
OTHER = "agent:main:other"
DELETABLE = "agent:main:deletable"
"""A session the tests create before a fault, so that deleting it is a real write."""
CALL_TIMEOUT_S = 20.0

CallOutcome = tuple[str, Any]
"""``("ok", value)`` or ``("raised", exception)``."""


class ReadFaultVFS(FaultVFS):
    """``FaultVFS`` whose reads fail too (``apsw.IOError``) while ``fail_reads`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_reads = False
        self.failed_reads = 0

    def xOpen(self, name: Any, flags: Any) -> apsw.VFSFile:
        return _ReadFaultFile(self, name, flags)


class _ReadFaultFile(_FaultFile):
    def __init__(self, vfs: ReadFaultVFS, name: Any, flags: Any) -> None:
        self._read_vfs = vfs
        super().__init__(vfs, name, flags)

    def xRead(self, amount: int, offset: int) -> bytes:
        if self._read_vfs.fail_reads:
            self._read_vfs.failed_reads += 1
            raise apsw.IOError("injected read ioerr")
        data: bytes = super().xRead(amount, offset)
        return data


_HOLDER = """
import sys, apsw
conn = apsw.Connection(sys.argv[1])
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
print("released", flush=True)
"""


class LockHolder:
    """Another process holding a SQLite write transaction until released (a pipe, no sleeps)."""

    def __init__(self, db_path: Path, timeout: float = CALL_TIMEOUT_S) -> None:
        self._db_path = db_path
        self._timeout = timeout
        self._proc: subprocess.Popen[str] | None = None

    def acquire(self) -> None:
        """Start the holder and wait (bounded) until it holds ``BEGIN IMMEDIATE``."""
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(self._db_path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._read_line() == "locked"

    def release(self) -> None:
        """Let the holder roll back and exit (bounded)."""
        proc = self._proc
        if proc is None:
            return
        self._proc = None
        try:
            assert proc.stdin is not None
            proc.stdin.write("\n")
            proc.stdin.flush()
            assert self._read_line(proc) == "released"
            assert proc.wait(timeout=self._timeout) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=self._timeout)
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()

    def _read_line(self, proc: subprocess.Popen[str] | None = None) -> str:
        proc = proc or self._proc
        assert proc is not None
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], self._timeout)
        assert ready, "the lock-holder process did not answer in time"
        return proc.stdout.readline().strip()


def writer_connection(gw: Gateway) -> apsw.Connection:
    """The persistence actor's write connection, once its inbox is idle (after a ``Ping``).

    Only for setting per-connection pragmas (``max_page_count``) between calls.
    """
    assert gw._persistence.ask(Ping(), timeout=CALL_TIMEOUT_S) is True
    actor = gw._persistence._actor_weakref()
    assert actor is not None
    conn = actor._conn
    assert isinstance(conn, apsw.Connection)
    return conn


def producers(transcript: Path) -> list[tuple[str, Callable[[Gateway, int], object]]]:
    """Every producer-like call, each taking the gateway and a call number."""
    from tests.conftest import CHILD, WATCHER

    return [
        ("human_message", lambda gw, i: gw.human_message(CHILD, channel="fault")),
        ("set_goal", lambda gw, i: gw.set_goal(CHILD, action="updated")),
        ("record", lambda gw, i: gw.record(SessionStateEventInput(
            session_key=CHILD, kind="goal_changed", actor_type="human", summary="goal set",
            dedupe_key=f"fault-{i}"))),
        ("spawn_subagent", lambda gw, i: gw.spawn_subagent(
            WATCHER, f"agent:main:subagent:f{i}", run_id=f"spawn-{i}")),
        ("finish_run", lambda gw, i: gw.finish_run(CHILD, run_id=f"run-{i}", outcome="error")),
        ("compacted", lambda gw, i: gw.compacted(CHILD, operation_id=f"op-{i}")),
        ("watch", lambda gw, i: gw.watch(f"agent:main:w{i}", CHILD)),
        ("create_session", lambda gw, i: gw.create_session(f"agent:main:new{i}")),
        ("reset_session", lambda gw, i: gw.reset_session(OTHER)),
        ("delete_session", lambda gw, i: gw.delete_session(DELETABLE)),
        ("adopt", lambda gw, i: gw.adopt(ADOPTED, source="claude", path=transcript)),
        ("note_own_text", lambda gw, i: gw.note_own_text(ADOPTED, f"own text {i}")),
        ("sessions_send", lambda gw, i: gw.sessions_send(OTHER, CHILD, "hi", watch=True)),
        ("scan_upstream", lambda gw, i: gw.scan_upstream()),
    ]


def degraded(result: object) -> bool:
    """Whether a producer's result is the documented storage-fault result."""
    if isinstance(result, SendResult):
        return result.watched is False
    return result is None or result is False or result == []


def status_ok(status: SessionStatus, version: int) -> bool:
    """A read during a fault is either right or degraded as documented (0, history gap)."""
    if status.state_version == version:
        return True
    changes = status.state_changes
    return status.state_version == 0 and (changes is None or changes.history_gap)


def log_lines(caplog: pytest.LogCaptureFixture, prefix: str,
              level: int = logging.WARNING) -> list[str]:
    """Messages at ``level`` or above from logger ``prefix`` or its children."""
    return [r.getMessage() for r in caplog.records
            if (r.name == prefix or r.name.startswith(prefix + ".")) and r.levelno >= level]


def bounded(call: Callable[[], object], timeout: float = CALL_TIMEOUT_S) -> CallOutcome:
    """Run ``call`` in a worker thread; fail the test if it does not return in time."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="faults-call")
    future = pool.submit(call)
    try:
        value = future.result(timeout=timeout)
    except FutureTimeout:
        pool.shutdown(wait=False)
        pytest.fail(f"the call did not return within {timeout}s")
    except Exception as exc:
        pool.shutdown(wait=True)
        return ("raised", exc)
    pool.shutdown(wait=True)
    return ("ok", value)


@contextlib.contextmanager
def raise_once(target: object, name: str, error: BaseException,
               monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Patch ``target.name`` so its first call raises ``error``; yields an Event set then."""
    original = getattr(target, name)
    fired = threading.Event()
    lock = threading.Lock()

    def patched(*args: object, **kwargs: object) -> object:
        with lock:
            first = not fired.is_set()
            fired.set()
        if first:
            raise error
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, patched)
    try:
        yield fired
    finally:
        monkeypatch.setattr(target, name, original)


def corrupt(path: Path, start: int = 4096) -> int:
    """Overwrite ``path`` from byte ``start`` to its end with garbage; returns bytes written."""
    size = path.stat().st_size if path.exists() else 0
    if size <= start:
        return 0
    with path.open("r+b") as handle:
        handle.seek(start)
        handle.write(b"\xa5" * (size - start))
        handle.flush()
        os.fsync(handle.fileno())
    return size - start


def fault_config(**kwargs: Any) -> GatewayConfig:
    """The fast configuration of these suites (200 ms busy timeout, 5 s asks)."""
    kwargs.setdefault("busy_timeout_ms", 200)
    kwargs.setdefault("ask_timeout_s", 5.0)
    return GatewayConfig(**kwargs)
