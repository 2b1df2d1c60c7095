"""``ssa list`` as a table for people, with each session's name (issue 33 item 3)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import msgspec
import pytest

from actors import Gateway
from actors.cli.app import main
from actors.cli.listing import home_short, worker_state_cell
from actors.cli.table import cut, render_table
from actors.cli.when import ago
from actors.testing import ClaudeCodeTranscript, CodexRollout, Reply, Typed
from persistence import WorkerActivity
from tests._table import table_rows

NOW = 1_800_000_000_000


def test_table_columns_are_as_wide_as_their_widest_cell() -> None:
    text = render_table(["A", "LONG TITLE", "LAST"], [["xyz", "1", "tail"], ["x", "22", "t"]])
    assert text.splitlines() == ["A    LONG TITLE  LAST", "xyz  1           tail",
                                 "x    22          t"]


def test_table_cuts_long_cells_and_keeps_a_path_end() -> None:
    text = render_table(["N", "P", "Z"], [["abcdefghij", "/a/b/c/d/project", "z"]],
                        limits={0: 5, 1: 9}, keep_end=frozenset({1}))
    assert text.splitlines()[1] == "abcd…  …/project  z"
    assert cut("abc", 3) == "abc"


def test_ago_is_relative_for_a_week_then_a_local_time() -> None:
    assert ago(None, NOW) == "-"
    assert ago(NOW - 400, NOW) == "just now"
    assert ago(NOW - 45_000, NOW) == "45s ago"
    assert ago(NOW - 150_000, NOW) == "2m ago"
    assert ago(NOW - 3 * 3_600_000, NOW) == "3h ago"
    assert ago(NOW - 6 * 86_400_000, NOW) == "6d ago"
    old = NOW - 30 * 86_400_000
    assert ago(old, NOW) == datetime.fromtimestamp(old / 1000).astimezone().strftime(
        "%Y-%m-%d %H:%M")


def test_home_short() -> None:
    assert home_short("/home/ann/src/app", "/home/ann") == "~/src/app"
    assert home_short("/home/ann", "/home/ann") == "~"
    assert home_short("/home/anna/x", "/home/ann") == "/home/anna/x"
    assert home_short(None, "/home/ann") is None


def test_worker_state_cell_says_where_the_tool_stands() -> None:
    assert worker_state_cell(None) == "-"
    assert worker_state_cell(WorkerActivity(state="busy", since=1, updated_at=1)) == "busy"
    assert worker_state_cell(WorkerActivity(state="waiting", detail="permission", since=1,
                                            updated_at=2)) == "waiting (permission)"


@pytest.fixture
def listed(open_gateway: Callable[..., Gateway], tmp_path: Path) -> dict[str, Path]:
    """A renamed Claude Code session, a Codex thread named by its first words, and a
    session without a link."""
    claude = ClaudeCodeTranscript(tmp_path / "c" / "abc.jsonl", cwd="/home/user/shop")
    claude.path.parent.mkdir()
    claude.append(Typed("fix the checkout page layout"), Reply("ok"))
    claude.rename("Checkout layout")
    day = tmp_path / "codex" / "sessions" / "2026" / "12" / "07"
    day.mkdir(parents=True)
    codex = CodexRollout(day / "rollout-2026-12-07T01-00-00-x.jsonl", cwd="/home/user/api")
    codex.append(Typed("add a retry to the uploader"), Reply("done"))
    gw = open_gateway()
    assert gw.adopt("agent:main:claude:abc", source="claude", path=claude.path) is not None
    assert gw.adopt("agent:main:codex:x", source="codex", path=codex.path) is not None
    gw.create_session("agent:main:plain")
    # The Codex worker waits for a permission answer (its hook said so after its last write).
    gw.note_activity("agent:main:codex:x", "waiting", detail="permission",
                     at=codex.path.stat().st_mtime_ns // 1_000_000 + 1)
    gw.close()
    return {"claude": claude.path, "codex": codex.path}


def test_list_shows_tool_project_name_and_last_activity(
    listed: dict[str, Path], db_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list", "--db", str(db_path)]) == 0
    rows = {r["SESSION"]: r for r in table_rows(capsys.readouterr().out)}
    claude, codex, plain = (rows["agent:main:claude:abc"], rows["agent:main:codex:x"],
                            rows["agent:main:plain"])
    assert (claude["TOOL"], claude["PROJECT"], claude["NAME"]) == (
        "Claude Code", "/home/user/shop", "Checkout layout")
    assert (codex["TOOL"], codex["PROJECT"], codex["NAME"]) == (
        "Codex", "/home/user/api", "add a retry to the uploader")
    assert (plain["TOOL"], plain["PROJECT"], plain["NAME"], plain["UPSTREAM"]) == (
        "-", "-", "-", "-")
    assert codex["STATE"] == "waiting (permission)"  # issue 33 item 2
    assert (claude["STATE"], plain["STATE"]) == ("-", "-")  # their hooks never said
    assert claude["LAST ACTIVITY"].endswith("ago") or claude["LAST ACTIVITY"] == "just now"


def test_list_json_keeps_its_keys_and_adds_name_tool_project_activity(
    listed: dict[str, Path], db_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list", "--json", "--db", str(db_path)]) == 0
    rows = {r["sessionKey"]: r for r in map(msgspec.json.decode,
                                            capsys.readouterr().out.splitlines())}
    claude = rows["agent:main:claude:abc"]
    assert claude["agentId"] == "main"
    assert claude["upstream"]["path"] == str(listed["claude"].resolve())
    assert (claude["tool"], claude["project"], claude["name"]) == (
        "claude", "/home/user/shop", "Checkout layout")
    assert isinstance(claude["lastActivityMs"], int)
    assert rows["agent:main:codex:x"]["workerState"]["state"] == "waiting"
    assert "workerState" not in claude
    assert "name" not in rows["agent:main:plain"]
    assert "tool" not in rows["agent:main:plain"]


def test_no_names_reads_no_tool_files(
    listed: dict[str, Path], db_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list", "--no-names", "--json", "--db", str(db_path)]) == 0
    rows = [msgspec.json.decode(line) for line in capsys.readouterr().out.splitlines()]
    assert all("name" not in r and "project" not in r for r in rows)
    assert {r.get("tool") for r in rows} == {"claude", "codex", None}


def test_names_are_never_stored(
    listed: dict[str, Path], db_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list", "--db", str(db_path)]) == 0
    assert "Checkout layout" in capsys.readouterr().out
    for file in db_path.parent.glob(db_path.name + "*"):
        data = file.read_bytes()
        assert b"Checkout layout" not in data
        assert b"add a retry to the uploader" not in data


def test_many_agents_add_an_agent_column(
    open_gateway: Callable[..., Gateway], db_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    gw = open_gateway()
    gw.create_session("agent:main:one")
    gw.create_session("agent:ops:two", agent_id="ops")
    gw.close()
    assert main(["list", "--db", str(db_path)]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert {(r["SESSION"], r["AGENT"]) for r in rows} == {("agent:main:one", "main"),
                                                         ("agent:ops:two", "ops")}


def test_a_long_name_is_cut_in_the_table(
    open_gateway: Callable[..., Gateway], db_path: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    claude = ClaudeCodeTranscript(tmp_path / "abc.jsonl")
    claude.append(Typed("x"))
    claude.rename("word " * 30)
    gw = open_gateway()
    assert gw.adopt("agent:main:claude:abc", source="claude", path=claude.path) is not None
    gw.close()
    assert main(["list", "--db", str(db_path)]) == 0
    [row] = table_rows(capsys.readouterr().out)
    assert len(row["NAME"]) == 48
    assert row["NAME"].endswith("…")


def test_a_fifo_where_a_transcript_was_never_hangs_list_or_status(
    listed: dict[str, Path], db_path: Path,
) -> None:
    """Adversary round 4 (findings 02, 05): names and projects were read with a plain
    open, which waits for a writer forever on a FIFO."""
    import os
    import subprocess
    import sys

    listed["claude"].unlink()
    os.mkfifo(listed["claude"])
    for argv in (["list"], ["status", "agent:main:claude:abc", "--changes-since", "0",
                            "--typed-text", "50"], ["watches", "list"]):
        done = subprocess.run([sys.executable, "-m", "actors", *argv, "--db", str(db_path)],
                              capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode in (0, 1), done.stderr
        assert "Traceback" not in done.stderr
