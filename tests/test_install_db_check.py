"""``ssa install`` refuses a ``--db`` the hooks could not open (issue 33 item 4): before,
it was accepted and every hook then failed with a line the terminal never shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors import Gateway
from actors.agents.dbcheck import db_problem
from actors.cli.app import main
from tests.conftest import SignalLogDb
from tests.test_agents_install import home, ssa

__all__ = ["home", "ssa"]  # the fixtures, imported for pytest


def _install(capsys: pytest.CaptureFixture[str], ssa: str, *args: str) -> tuple[int, str]:
    code = main(["install", "claude-code", "--ssa", ssa, *args])
    return code, capsys.readouterr().err


def test_a_damaged_or_foreign_file_is_refused_and_nothing_is_written(
    home: Path, ssa: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all" * 100)
    code, err = _install(capsys, ssa, "--db", str(garbage))
    assert code == 2
    assert err.count("\n") == 1
    assert "the hooks could not open it" in err
    assert "--no-db-check" in err
    assert not (home / ".claude" / "settings.json").exists()
    foreign = tmp_path / "foreign.sqlite"
    import apsw

    conn = apsw.Connection(str(foreign))
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    assert "not a session-state database" in (db_problem(str(foreign)) or "")
    code, err = _install(capsys, ssa, "--db", str(foreign), "--no-db-check")
    assert code == 0, err  # told to skip the check


def test_a_signal_log_an_empty_file_or_a_new_path_is_taken(
    home: Path, ssa: str, tmp_path: Path, db: SignalLogDb,
) -> None:
    assert db_problem(str(tmp_path / "new.sqlite")) is None  # the first hook makes it
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    assert db_problem(str(empty)) is None
    with Gateway.open(db.location):
        pass
    assert db_problem(str(db.location)) is None


def test_a_server_that_cannot_be_reached_is_refused_within_the_bound(
    home: Path, ssa: str, capsys: pytest.CaptureFixture[str],
) -> None:
    problem = db_problem("postgresql://ssa@127.0.0.1:1/ssa", timeout_s=5.0)
    assert problem is not None
    assert problem.startswith("cannot connect")
    code, err = _install(capsys, ssa, "--db", "postgresql://ssa@127.0.0.1:1/ssa")
    assert code == 2
    assert "could not open it" in err
    assert not (home / ".claude" / "settings.json").exists()
    settings = home / ".claude" / "settings.json"
    code, err = _install(capsys, ssa, "--db", "postgresql://ssa@127.0.0.1:1/ssa",
                         "--no-db-check")
    assert code == 0, err
    assert "127.0.0.1:1" in json.dumps(json.loads(settings.read_text()))


@pytest.mark.parametrize("name", [":memory:", "file:x.sqlite", "file:x?mode=memory"])
def test_a_name_that_is_no_file_is_refused_before_it_is_made_absolute(
    home: Path, ssa: str, name: str, capsys: pytest.CaptureFixture[str],
) -> None:
    code, err = _install(capsys, ssa, "--db", name)
    assert code == 2
    assert err.count("\n") == 1
    assert "is no file path" in err
    assert str(Path.cwd()) not in err  # judged as given, not as /cwd/:memory:
    assert not (home / ".claude" / "settings.json").exists()
