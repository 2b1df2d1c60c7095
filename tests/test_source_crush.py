"""Crush as a registered source: discovery of project stores, adoption, scans, ``ssa
classify`` and ``ssa watch``, on ``crush.db`` stores written in Crush's shapes (the kit)."""

from __future__ import annotations

import io
from pathlib import Path

import msgspec
import pytest

from actors import Gateway
from actors.cli import app as cli
from actors.cli.watch import run_watch
from actors.monitors.where import project_of
from actors.testing import (
    CrushTranscript,
    OpenCodeTranscript,
    Reply,
    SubagentRow,
    ToolCall,
    ToolResult,
    Typed,
)
from actors.upstream.catalog import default_catalogs, discover
from actors.upstream.crush.kit import type_turn
from actors.upstream.crush.source import store_rows
from actors.upstream.opencode.source import OPENCODE
from actors.upstream.source import Candidate
from tests.conftest import WATCHER

SID = "9d2f0c1e-aaaa-4bbb-8ccc-0d1e2f3a4b5c"
KEY = f"agent:main:crush:{SID}"


def _store(root: Path, name: str = "proj", sid: str = SID) -> Path:
    data = root / name / ".crush"
    data.mkdir(parents=True)
    with CrushTranscript(data / "crush.db", session_id=sid) as session:
        session.append(Typed("first prompt"), Reply("ok"))
    return data / "crush.db"


def _adopted(gateway: Gateway, db: Path) -> None:
    link = gateway.adopt(KEY, source="crush", path=db, thread_id=SID)
    assert link is not None
    assert (link.source, link.thread_id) == ("crush", SID)
    assert gateway.watch(WATCHER, KEY)
    assert gateway.scan_upstream() == []  # adopted at the end: nothing counted


def test_discovery_finds_top_level_sessions_of_project_stores(tmp_path: Path) -> None:
    db = _store(tmp_path / "code")
    with CrushTranscript(db, session_id=SID) as session:
        session.append(SubagentRow("a task for the sub-agent"))  # a task session: not listed
    other = _store(tmp_path / "code", "lib", "1d2f0c1e-aaaa-4bbb-8ccc-0d1e2f3a4b5c")
    assert default_catalogs({}, tmp_path)["crush"] == []  # no standard location
    mine = Candidate(source="crush", path=str(db), thread_id=SID)
    assert list(discover("crush", db)) == [mine]  # the store itself
    assert list(discover("crush", db.parent.parent)) == [mine]  # its project
    assert [c.path for c in discover("crush", tmp_path / "code")] == [str(other), str(db)]
    [row] = store_rows(db)
    assert (row.session_id, row.directory) == (SID, str((tmp_path / "code" / "proj").resolve()))
    assert row.seq > 0


def test_a_typed_turn_counts_once_and_other_messages_and_own_text_do_not(
        gateway: Gateway, tmp_path: Path) -> None:
    db = _store(tmp_path)
    _adopted(gateway, db)
    type_turn(str(db), SID, "please add a test")
    events = gateway.scan_upstream()
    assert [(e.kind, e.summary) for e in events] == [
        ("human_direct_message", "human message via crush")]
    with CrushTranscript(db, session_id=SID) as session:
        session.append(Reply("done"), ToolCall("bash", {"command": "ls"}, "c1"),
                       ToolResult("c1", "a b"))
        session.shell("ls", "a b")
    assert gateway.scan_upstream() == []
    gateway.note_own_text(KEY, "relayed by the gateway")
    type_turn(str(db), SID, "relayed by the gateway")
    assert gateway.scan_upstream() == []
    assert len(gateway.pending_notices(WATCHER)) == 1
    assert project_of("crush", str(db), SID) == str(db.resolve().parent.parent)


def test_a_sub_agents_session_gets_no_link(gateway: Gateway, tmp_path: Path) -> None:
    db = _store(tmp_path)
    with CrushTranscript(db, session_id="m1$$call1", parent_session_id=SID) as task:
        task.append(Typed("written by the parent model"))
    assert gateway.adopt("agent:main:crush:task", source="crush", path=db,
                         thread_id="m1$$call1") is None


def test_classify_shows_each_messages_decision(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _store(tmp_path)
    assert cli.main(["classify", "--source", "crush", "--session", SID, str(db)]) == 0
    rows = [msgspec.json.decode(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["session"], r["human"], r["reason"]) for r in rows] == [
        (SID, True, "typed"), (SID, False, "not_user")]
    assert cli.main(["classify", "--source", "crush", str(db)]) == 1
    assert capsys.readouterr().err.startswith(
        f"ssa: --session ID is required for crush; {db} holds 1 session: {SID}")


def test_a_file_that_is_not_a_crush_store_is_named_in_a_users_words(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    """Review finding: ``--crush /etc/passwd`` printed SQLite's ``NotADBError``."""
    text = tmp_path / ".crush" / "crush.db"
    text.parent.mkdir()
    text.write_text("root:x:0:0:root:/root:/bin/bash\n" * 200)
    assert cli.main(["classify", "--source", "crush", "--session", SID, str(text)]) == 1
    assert capsys.readouterr().err == (
        f"ssa: cannot read {text}: not a SQLite database (give Crush's .crush/crush.db)\n")
    with caplog.at_level("WARNING", logger="actors.upstream.crush.source"):
        assert list(discover("crush", text)) == []
    assert "NotADBError" not in caplog.text
    assert "not a SQLite database" in caplog.text


class TypeOnAdopt(io.StringIO):
    """stdout that types ``texts`` into the session once the adoption summary is printed."""

    def __init__(self, db: Path, texts: list[str]) -> None:
        super().__init__()
        self.db, self.texts = db, texts

    def write(self, text: str) -> int:
        if text.startswith('{"adopted"'):
            with CrushTranscript(self.db, session_id=SID) as session:
                session.append(*(Typed(t) for t in self.texts))
        return super().write(text)


def test_watch_reports_one_notice_for_a_burst_of_typed_turns(tmp_path: Path) -> None:
    db = _store(tmp_path / "code")
    args = cli._parser().parse_args(["watch", "--crush", str(tmp_path / "code"), "--scans",
                                     "2", "--json", "--interval", "0.001",
                                     "--db", str(tmp_path / "s.db")])
    out = TypeOnAdopt(db, ["one", "two", "three"])
    assert run_watch(args, out=out, err=io.StringIO()) == 0
    summary, *records = (msgspec.json.decode(line) for line in out.getvalue().splitlines())
    assert summary["adopted"] == {"crush": 1}
    assert len(records) == 1
    assert records[0]["sessionKey"] == KEY
    assert [(e["kind"], e.get("payload")) for e in records[0]["events"]] == [
        ("human_direct_message", {"turns": 3})]


def test_stores_whose_folder_names_hold_uri_characters_are_read(tmp_path: Path) -> None:
    """The stores are opened by their real path, not a ``file:`` URI: ``?``, ``#`` and
    ``%`` in a name are plain characters (crush.db and opencode.db alike)."""
    odd = tmp_path / "a?b#c%20d"
    db = _store(odd)
    assert [c.thread_id for c in discover("crush", odd)] == [SID]
    assert [row.session_id for row in store_rows(str(db))] == [SID]
    store = odd / "opencode.db"
    session = OpenCodeTranscript(store, directory="/w")
    session.append(Typed("hello"), Reply("ok"))
    assert [c.thread_id for c in OPENCODE.discover(str(store))] == [session.session_id]
    assert OPENCODE.rows is not None
    assert [row.session_id for row in OPENCODE.rows(str(store), 500)] == [session.session_id]


def test_project_stores_are_listed_in_pathlibs_order(tmp_path: Path) -> None:
    """``a`` before ``a-b`` (by path components, not by string: ``-`` sorts before ``/``)."""
    first = _store(tmp_path, "a", "1d2f0c1e-aaaa-4bbb-8ccc-0d1e2f3a4b5c")
    second = _store(tmp_path, "a-b")
    assert [c.path for c in discover("crush", tmp_path)] == [str(first), str(second)]
