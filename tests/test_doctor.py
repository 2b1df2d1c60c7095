"""``ssa doctor`` finds each broken set-up of the matrix, each with its fix (issue 33 item 4):
no hook, a hook pointing at a missing ``ssa``, a bad ``--db``, a corrupt database, a stale
``ssa watch``; and the last hook failure."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import apsw
import pytest

from actors import Gateway
from actors.agents import hook as hook_mod
from actors.cli.app import main
from actors.cli.doctor import find_hooks, run_doctor
from tests.test_agents_install import home, ssa

__all__ = ["home", "ssa"]  # the fixtures, imported for pytest


def _doctor(home: Path) -> tuple[int, list[dict[str, str]]]:
    out = io.StringIO()
    code = run_doctor(None, as_json=True, out=out, home=home, env=dict(os.environ))
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def _problems(findings: list[dict[str, str]]) -> list[tuple[str, str, str]]:
    return [(f["what"], f["text"], f["fix"]) for f in findings if f["level"] == "problem"]


@pytest.fixture
def state(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = home / "state"
    monkeypatch.setenv("SSA_STATE_DIR", str(directory))
    return directory


def test_a_working_setup_has_no_problem(home: Path, ssa: str, state: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["install", "claude-code", "--ssa", ssa, "--no-mcp"]) == 0
    capsys.readouterr()
    code, findings = _doctor(home)
    assert _problems(findings) == []
    assert code == 0
    assert any(f["what"] == "claude-code hook" and f["level"] == "ok" for f in findings)


def test_no_hook(home: Path, state: Path) -> None:
    (home / ".claude").mkdir()
    code, findings = _doctor(home)
    assert code == 1
    assert [(what, fix) for what, _, fix in _problems(findings)] == [
        ("claude-code hook", "ssa install claude-code")]


def test_a_hook_pointing_at_a_missing_ssa(home: Path, ssa: str, state: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["install", "claude-code", "--ssa", ssa, "--no-mcp"]) == 0
    capsys.readouterr()
    Path(ssa).unlink()  # its virtual environment was removed
    code, findings = _doctor(home)
    assert code == 1
    [(what, text, fix)] = _problems(findings)
    assert what == "claude-code hook"
    assert f"{ssa} does not exist" in text
    assert fix.startswith("ssa install claude-code")


def test_a_bad_db_and_a_corrupt_database(home: Path, ssa: str, state: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    db = home / "work.sqlite"
    assert main(["install", "claude-code", "--ssa", ssa, "--no-mcp", "--db", str(db)]) == 0
    capsys.readouterr()
    with Gateway.open(db):
        pass
    _, findings = _doctor(home)
    assert _problems(findings) == []
    db.write_bytes(b"garbage" * 1000)  # a bad --db: not a database any more
    code, findings = _doctor(home)
    assert code == 1
    [(what, text, fix)] = _problems(findings)
    assert what == f"database {db}"
    assert "not a readable SQLite database" in text
    assert "move it aside" in fix
    with Gateway.open(db.with_name("ok.sqlite")) as gw:  # a corrupt one: a damaged page
        for n in range(300):
            gw.human_message(f"agent:main:s{n}", channel="x")
    damaged = db.with_name("ok.sqlite")
    data = bytearray(damaged.read_bytes())
    data[4096 * 3: 4096 * 3 + 200] = b"\xff" * 200
    damaged.write_bytes(bytes(data))
    out = io.StringIO()
    assert run_doctor(str(damaged), as_json=True, out=out, home=home,
                      env=dict(os.environ)) == 1
    texts = [json.loads(line) for line in out.getvalue().splitlines()]
    assert any(f["what"] == f"database {damaged}" and f["level"] == "problem" and f["fix"]
               for f in texts)


def test_a_stale_ssa_watch(home: Path, state: Path) -> None:
    db = state / "state.sqlite"
    with Gateway.open(db, hosts=("agent:main:ssa-watch",), on_wake=lambda _key: None):
        pass  # closed: its lease released
    _, findings = _doctor(home)
    assert not any(f["what"] == "ssa watch" for f in findings)
    conn = apsw.Connection(str(db))
    conn.execute("INSERT INTO session_hosts (watcher_session_key, host_id, expires_at)"
                 " VALUES ('agent:main:ssa-watch', 'host-dead', 1)")  # died without closing
    conn.close()
    code, findings = _doctor(home)
    assert code == 1
    [(what, text, fix)] = _problems(findings)
    assert what == "ssa watch"
    assert "stopped without closing" in text
    assert "ssa watch --watcher agent:main:ssa-watch" in fix


def test_the_last_hook_failure_is_kept_bounded_and_shown(home: Path, state: Path) -> None:
    for n in range(8):
        assert hook_mod.main(["claude-code", "--timeout", "0"],
                             stdin=io.BytesIO(b"not json %d" % n), stdout=io.StringIO(),
                             stderr=io.StringIO()) == 0
    code, findings = _doctor(home)
    assert code == 1
    [(what, text, _fix)] = _problems(findings)
    assert what == "hook failures"
    assert "5 kept" in text  # the newest five, whatever happened
    assert "not JSON" in text


def test_find_hooks_reads_command_lines_and_argument_arrays(tmp_path: Path) -> None:
    file = tmp_path / "f"
    text = ('{"command": "/v/bin/ssa hook codex --db \'/a b/s.sqlite\' --scope all"}\n'
            'const HOOK_ARGV = ["/v/bin/ssa", "hook", "opencode", "--db", "/x.sqlite"];\n')
    assert [(h.ssa, h.db) for h in find_hooks("codex", text, file)] == [
        ("/v/bin/ssa", "/a b/s.sqlite")]
    assert [(h.ssa, h.db) for h in find_hooks("opencode", text, file)] == [
        ("/v/bin/ssa", "/x.sqlite")]
    assert find_hooks("pi", text, file) == []


@pytest.mark.parametrize("url", ["postgresql://bob:S3CRETPW@127.0.0.1:1/db",
                                 "postgresql://bob@127.0.0.1:1/db?sslpassword=S3CRETPW"])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_password_in_a_database_url_is_never_printed(
        home: Path, state: Path, url: str, as_json: bool) -> None:
    """Adversary round 3 (finding 09): doctor's output is what people paste in reports."""
    out = io.StringIO()
    code = run_doctor(url, as_json=as_json, out=out, home=home,
                      env={**os.environ, "SSA_DB": url})
    assert code == 1
    text = out.getvalue()
    assert "S3CRETPW" not in text
    assert "***" in text
    assert "holds a password" in text  # and it says why that is a problem, with the fix
