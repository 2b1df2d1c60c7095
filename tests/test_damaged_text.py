"""A stored text that is not UTF-8 is a read fault like any other (SQLite keeps any bytes).

``session_status`` raised a raw ``UnicodeDecodeError`` and ``ssa status`` printed a
traceback: now the gateway's reads degrade as on any read fault (logged; empty with
``history_gap``), and the command line prints one line and exits 1.
"""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from actors import Gateway
from actors.cli.app import main

WORKER = "agent:main:w"
WATCHER = "agent:main:main"


def _damaged(path: Path, sql: str) -> None:
    """A signal log with one change of WORKER, then ``sql`` run on it by another tool."""
    with Gateway.open(path, monitor=False) as gw:
        gw.create_session(WORKER)
        gw.watch(WATCHER, WORKER)
        gw.human_message(WORKER, channel="tui")
    conn = apsw.Connection(str(path))
    try:
        conn.execute(sql)
    finally:
        conn.close()


def test_session_status_and_sessions_list_degrade_on_a_text_that_is_not_utf8(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    db = tmp_path / "state.sqlite"
    _damaged(db, "UPDATE session_state_events SET summary = CAST(x'41ff42' AS TEXT)")
    with Gateway.open(db, monitor=False) as gw:
        status = gw.session_status(WORKER, changes_since=0)
        assert status.state_version == 0
        assert status.state_changes is not None
        assert status.state_changes.history_gap is True  # refresh, do not trust a delta
        assert gw.session_status(WORKER).state_version == 1  # reads that meet no bad text
    assert "not UTF-8" in caplog.text
    db2 = tmp_path / "other.sqlite"
    _damaged(db2, "UPDATE sessions SET session_id = CAST(x'ff' AS TEXT)")
    with Gateway.open(db2, monitor=False) as gw:
        assert gw.sessions_list() == []


@pytest.mark.parametrize(("sql", "command"), [
    ("UPDATE session_state_events SET summary = CAST(x'41ff42' AS TEXT)",
     ["status", WORKER, "--changes-since", "0"]),
    ("UPDATE sessions SET session_id = CAST(x'ff' AS TEXT)", ["list"]),
])
def test_the_command_line_prints_one_line_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sql: str, command: list[str],
) -> None:
    db = tmp_path / "state.sqlite"
    _damaged(db, sql)
    capsys.readouterr()
    assert main([*command, "--db", str(db)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"ssa: {db} holds a text value that is not UTF-8")
    assert err.count("\n") == 1
