"""Crush's crush.db: every message kind decided as Crush's source writes it.

The store is built by :class:`actors.upstream.crush.kit.CrushTranscript` in the
shape of Crush's migrations (docs/upstream-crush.md). The real CLI cannot be
driven here: see ``test_real_crush_cannot_be_installed_here``.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import apsw
import pytest

from actors.testing import (
    Compaction,
    ImageOnly,
    Interrupt,
    Reply,
    SlashCommand,
    SubagentRow,
    ToolCall,
    ToolResult,
    Typed,
)
from actors.upstream.crush.classify import (
    SUMMARY_CONTINUATION,
    CrushMessage,
    classify_crush_message,
    classify_crush_rows,
    crush_fingerprint,
    open_crush_db,
    poll_crush,
    read_crush_messages,
    read_crush_sessions,
)
from actors.upstream.crush.kit import CrushTranscript


@pytest.fixture
def db(tmp_path: Path) -> Path:
    (tmp_path / "project" / ".crush").mkdir(parents=True)
    return tmp_path / "project" / ".crush" / "crush.db"


def _decide(db: Path) -> list[tuple[str, bool, str]]:
    result = poll_crush(db)
    assert result is not None
    return [(m.role, u.human, u.reason) for m, u in result[0]]


def test_typed_reply_tool_call_and_result(db: Path) -> None:
    with CrushTranscript(db) as crush:
        crush.append(Typed("hello 77"), ToolCall("bash", {"command": "ls"}, "c1"),
                     ToolResult("c1", "README.md"), Reply("done"))
    assert _decide(db) == [("user", True, "typed"), ("assistant", False, "not_user"),
                           ("tool", False, "tool_result"), ("assistant", False, "not_user")]
    result = poll_crush(db)
    assert result is not None
    (typed,) = [u for _m, u in result[0] if u.human]
    assert typed.text == "hello 77"
    assert typed.occurred_at is not None
    assert typed.occurred_at % 1000 == 0  # Crush stores seconds


def test_generated_user_messages_are_not_typed(db: Path) -> None:
    with CrushTranscript(db) as crush:
        crush.shell("echo hi", "hi")
        crush.hidden("continue the task")
        crush.append(SlashCommand("skill", "review"), ImageOnly(), Interrupt(),
                     Compaction("summary text"), Typed(f"{SUMMARY_CONTINUATION} `fix it`"),
                     SlashCommand("model"), Typed("[Inter-session message] relayed"))
    assert [r for _role, _h, r in _decide(db)] == [
        "shell", "hidden", "skill_command", "attachment_only", "not_user", "summary",
        "summary_continuation", "inter_session"]


def test_sub_agent_and_title_sessions_never_count(db: Path) -> None:
    with CrushTranscript(db) as crush:
        crush.append(Typed("parent prompt"), SubagentRow("the task prompt"))
    with CrushTranscript(db, session_id="title-abc") as titles:
        titles.append(Typed("Generate a concise title for the following content"))
    assert sorted(_decide(db)) == sorted([("user", True, "typed"),
                                          ("user", False, "child_session"),
                                          ("user", False, "child_session")])
    conn = open_crush_db(db)
    try:
        sessions = read_crush_sessions(conn, db_path=db)
    finally:
        conn.close()
    assert [s.refusal for s in sessions].count("child_session") == 2
    assert {s.cwd for s in sessions} == {str(db.parent.parent.resolve())}


@pytest.mark.parametrize(("parts", "reason"), [
    ("not json", "undecodable"),
    ('[{"type": "text", "data": {"text": 5}}]', "undecodable"),
    ('[{"type": "text", "data": {"text": "x"}}, {"type": "new_kind", "data": {}}]',
     "unknown_part"),
    ('[{"type": "text", "data": {"text": "  "}}, {"type": "finish", "data": {}}]',
     "empty_text"),
    ('[{"type": "text", "data": {"text": "hi", "hidden": false}}]', "typed"),
    ('[{"type": "text", "data": {"text": "hi", "submission_id": "s1"}}]', "typed"),
])
def test_part_shapes(parts: str, reason: str) -> None:
    message = CrushMessage(rowid=1, id="m", session_id="s", role="user", parts=parts,
                           created_ms=1_000)
    assert classify_crush_message(message).reason == reason


def test_unknown_role_and_session() -> None:
    message = CrushMessage(rowid=1, id="m", session_id="s", role="developer", parts="[]",
                           created_ms=0)
    assert classify_crush_message(message).reason == "unknown_role"
    assert classify_crush_rows([message], {})[0][1].reason == "unknown_session"


def test_incremental_read_from_the_last_rowid(db: Path) -> None:
    with CrushTranscript(db) as crush:
        crush.append(Typed("one"), Reply("a"))
        conn = open_crush_db(db)
        try:
            first = read_crush_messages(conn)
            before = crush_fingerprint(conn)
            crush.append(Typed("two"))
            second = read_crush_messages(conn, after_rowid=first.last_rowid)
            assert crush_fingerprint(conn) != before
            again = read_crush_messages(conn, after_rowid=second.last_rowid)
            paged = read_crush_messages(conn, limit=1)
        finally:
            conn.close()
    assert [m.role for m in first.messages] == ["user", "assistant"]
    assert [json.loads(m.parts)[0]["data"]["text"] for m in second.messages] == ["two"]
    assert again.messages == ()
    assert again.last_rowid == second.last_rowid
    assert len(paged.messages) == 1
    conn = open_crush_db(db)
    try:
        with pytest.raises(ValueError, match="limit"):
            read_crush_messages(conn, limit=0)
    finally:
        conn.close()


def test_read_only_connection_cannot_write(db: Path) -> None:
    CrushTranscript(db).close()
    conn = open_crush_db(db)
    try:
        with pytest.raises(apsw.ReadOnlyError):
            conn.execute("DELETE FROM messages")
    finally:
        conn.close()


def test_a_locked_store_is_no_news_not_an_error(db: Path) -> None:
    crush = CrushTranscript(db)
    crush.append(Typed("one"))
    crush.close()
    writer = apsw.Connection(str(db))
    writer.execute("PRAGMA journal_mode = DELETE")  # a rollback journal: readers block
    writer.execute("BEGIN EXCLUSIVE")
    try:
        assert poll_crush(db, busy_timeout_ms=50) is None
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert _decide(db) == [("user", True, "typed")]


def test_reading_while_crush_writes(db: Path) -> None:
    crush = CrushTranscript(db)
    done = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for n in range(50):
                crush.append(Typed(f"prompt {n}"), Reply(f"answer {n}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=write)
    thread.start()
    cursor, typed = 0, 0
    while True:
        finished = done.is_set()
        result = poll_crush(db, after_rowid=cursor)
        if result is not None:
            typed += sum(1 for _m, u in result[0] if u.human)
            cursor = result[1]
        if finished:
            break
    thread.join(10)
    crush.close()
    assert not errors
    assert typed == 50


def test_missing_store_raises(tmp_path: Path) -> None:
    with pytest.raises(apsw.Error):
        poll_crush(tmp_path / "nothing" / "crush.db")


def test_builder_store_is_private(db: Path) -> None:
    CrushTranscript(db).close()
    assert db.stat().st_mode & 0o777 == 0o600


@pytest.mark.agents
def test_real_crush_cannot_be_installed_here() -> None:
    """The real Crush is not driven: its npm package only downloads the Go binary from
    GitHub releases at install time, which this network does not reach, and no Go
    toolchain can build it (no module proxy). Skipped with that reason unless a
    ``crush`` binary is on PATH, whose version is then printed."""
    found = shutil.which("crush")
    if found is None:
        pytest.skip("Crush 0.96.1 cannot be installed here: npm @charmland/crush's postinstall "
                    "(install.js) downloads crush_0.96.1_Linux_x86_64.tar.gz from "
                    "github.com/charmbracelet/crush/releases, and github.com does not resolve "
                    "(getaddrinfo ENOTFOUND github.com); there is no PyPI or Debian package "
                    "and no Go module proxy to build it from source")
    pytest.fail(f"a crush binary is on PATH ({found}): write the harness profile for it")
