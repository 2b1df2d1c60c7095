"""Several gateways opening the same new database file at the same moment (issue 25's
async example does: two copies started together). Both used to fail now and then:
``FileExistsError`` from the exclusive create, and ``database is locked`` from the
switch to WAL, which SQLite reports without calling the busy handler."""

from __future__ import annotations

import threading
from pathlib import Path

import apsw
import pytest

from persistence._schema import open_connection, prepare_path, set_wal

OPENERS = 3
TRIALS = 40


def test_writers_opening_a_new_file_together_all_succeed(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    for trial in range(TRIALS):
        path = tmp_path / f"t{trial}" / "state.sqlite"
        barrier = threading.Barrier(OPENERS, timeout=10)

        def open_it(path: Path = path, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            try:
                prepare_path(path)
                open_connection(str(path), synchronous="FULL", busy_timeout_ms=5000,
                                writer=True, migrate=True).close()
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=open_it) for _ in range(OPENERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)
        assert not any(t.is_alive() for t in threads)
        assert path.stat().st_mode & 0o777 == 0o600
    assert errors == []


def test_set_wal_gives_up_after_its_timeout(tmp_path: Path) -> None:
    path = tmp_path / "held.sqlite"
    holder = apsw.Connection(str(path))
    holder.execute("CREATE TABLE t(x)")
    holder.execute("BEGIN EXCLUSIVE")
    other = apsw.Connection(str(path))
    try:
        with pytest.raises(apsw.BusyError):
            set_wal(other, 50)
    finally:
        holder.execute("ROLLBACK")
        other.close()
        holder.close()
