"""A session's name read from its tool's own files (issue 33 item 3).

Every source's ``title`` module, reached through the registry
(:func:`actors.upstream.names.name_of`), on kit-built sessions and the real
fixtures: the tool's own title where it keeps one, else the first words of
the first typed turn; bounded reads; a failure is ``None``, never raised.
"""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import pytest

from actors.testing import (
    AiderChatHistory,
    ClaudeCodeTranscript,
    CodexRollout,
    CrushTranscript,
    GeminiSession,
    OpenCodeTranscript,
    PiSession,
    QwenSession,
    Reply,
    ToolCall,
    Typed,
)
from actors.upstream import naming
from actors.upstream.codex.kit import index_thread_name
from actors.upstream.names import name_of
from actors.upstream.sources import BUILT_IN
from tests import conftest

# --- the shared helpers (pure) --------------------------------------------------


def test_first_words_keeps_eight_words_on_one_line() -> None:
    assert naming.first_words("fix\tthe  flaky\ntest in the\x1b[31m parser module please now") \
        == "fix the flaky test in the[31m parser module…"
    assert naming.first_words("short one") == "short one"
    assert naming.first_words(" \n\t") is None
    assert naming.first_words(None) is None


def test_first_words_cut_at_sixty_characters() -> None:
    name = naming.first_words("a" * 100)
    assert name is not None
    assert len(name) == naming.NAME_CHARS
    assert name.endswith("…")


def test_clean_title_strips_control_characters_and_cuts() -> None:
    assert naming.clean_title("Refactor\u0007 the\r\nauth  module\u200b") \
        == "Refactor the auth module"
    long = naming.clean_title("x" * 200)
    assert long is not None
    assert len(long) == naming.TITLE_CHARS
    assert long.endswith("…")
    assert naming.clean_title(42) is None
    assert naming.clean_title("\x00\x01") is None


def test_rows_with_reads_only_the_head_and_the_tail(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    middle = b'{"type":"custom-title","customTitle":"in the middle"}\n'
    filler = b'{"type":"x","pad":"' + b"p" * 1000 + b'"}\n'
    with path.open("wb") as file:
        file.write(b'{"type":"custom-title","customTitle":"first"}\n')
        file.write(filler * 400)
        file.write(middle)
        file.write(filler * 400)
        file.write(b'{"type":"custom-title","customTitle":"last"}\n')
    found = [row["customTitle"] for row in
             naming.rows_with(str(path), (b"custom-title",), head=64 * 1024, tail=64 * 1024)]
    assert found == ["first", "last"]
    whole = [row["customTitle"] for row in naming.rows_with(str(path), (b"custom-title",),
                                                            head=1 << 20, tail=1 << 20)]
    assert whole == ["first", "in the middle", "last"]


def test_rows_with_a_missing_file_is_empty(tmp_path: Path) -> None:
    assert list(naming.rows_with(str(tmp_path / "gone.jsonl"), (b"x",))) == []


# --- Claude Code --------------------------------------------------------------


def test_claude_custom_title_latest_wins_over_summary(tmp_path: Path) -> None:
    t = ClaudeCodeTranscript(tmp_path / "11111111-2222-3333-4444-555555555555.jsonl")
    t.append(Typed("please fix the login bug in the web app today thanks"), Reply("ok"))
    t.summary("Login bug fix")
    assert name_of("claude", str(t.path), t.session_id) == "Login bug fix"
    t.rename("first name")
    t.rename("auth work")
    assert name_of("claude", str(t.path), t.session_id) == "auth work"


def test_claude_title_of_another_session_is_skipped(tmp_path: Path) -> None:
    t = ClaudeCodeTranscript(tmp_path / "11111111-2222-3333-4444-555555555555.jsonl")
    t.rename("the earlier session", session_id="00000000-0000-0000-0000-000000000000")
    t.append(Typed("write the release notes"))
    assert name_of("claude", str(t.path), t.session_id) == "write the release notes"


def test_claude_without_a_title_is_named_by_its_first_typed_turn(tmp_path: Path) -> None:
    t = ClaudeCodeTranscript(tmp_path / "11111111-2222-3333-4444-555555555555.jsonl")
    t.append(ToolCall("Bash", {"command": "ls"}, "a b"), Typed("one two three four five six "
                                                                 "seven eight nine ten"))
    assert name_of("claude", str(t.path), t.session_id) \
        == "one two three four five six seven eight…"


def test_claude_rename_far_into_a_long_transcript_is_found_in_the_tail(tmp_path: Path) -> None:
    t = ClaudeCodeTranscript(tmp_path / "11111111-2222-3333-4444-555555555555.jsonl")
    t.append(Typed("start"))
    for _ in range(300):
        t.append(Reply("r" * 10_000))
    t.rename("late name")
    assert t.path.stat().st_size > naming.HEAD + naming.TAIL
    assert name_of("claude", str(t.path), t.session_id) == "late name"


def test_claude_first_words_read_no_other_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The copy check lists and reads the folder's other transcripts (a listing of
    2,000 sessions took 6 minutes that way): a name reads its own file only."""
    t = ClaudeCodeTranscript(tmp_path / "11111111-2222-3333-4444-555555555555.jsonl")
    t.append(Typed("write the release notes"))
    ClaudeCodeTranscript(tmp_path / "99999999-2222-3333-4444-555555555555.jsonl").append(
        Typed("another session"))

    def no_listing(*args: object, **kwargs: object) -> None:
        raise AssertionError("a name listed the transcripts folder")

    monkeypatch.setattr("os.scandir", no_listing)
    monkeypatch.setattr("os.listdir", no_listing)
    assert name_of("claude", str(t.path), t.session_id) == "write the release notes"


@pytest.mark.skipif(not conftest.HAVE_FIXTURES, reason="no shared fixtures")
def test_claude_fixture_is_named_by_its_first_typed_turn() -> None:
    path = conftest.FIXTURES / "claude-code" / "cc-2.1.37-cli-prompt-tools-exit.jsonl"
    # The fixture was renamed: its session id is in its rows, as a real file's name.
    session = next(json.loads(line)["sessionId"] for line in path.read_text().splitlines()
                   if '"sessionId"' in line)
    name = name_of("claude", str(path), session)
    assert name is not None
    assert name_of("claude", str(path), "0a1b2c3d-0000-4000-8000-000000000000") is None
    assert "\n" not in name
    assert len(name) <= naming.NAME_CHARS


# --- Codex --------------------------------------------------------------------


def _rollout(tmp_path: Path) -> CodexRollout:
    day = tmp_path / "codex" / "sessions" / "2026" / "12" / "07"
    day.mkdir(parents=True)
    rollout = CodexRollout(day / "rollout-2026-12-07T01-00-00-x.jsonl")
    rollout.append(Typed("add a retry to the uploader"), Reply("done"))
    return rollout


def test_codex_thread_name_from_the_rollout(tmp_path: Path) -> None:
    rollout = _rollout(tmp_path)
    rollout.rename("Uploader retries")
    index_thread_name(tmp_path / "codex", rollout.thread_id, "older index name")
    assert name_of("codex", str(rollout.path), rollout.thread_id) == "Uploader retries"


def test_codex_thread_name_from_the_session_index(tmp_path: Path) -> None:
    rollout = _rollout(tmp_path)
    index_thread_name(tmp_path / "codex", rollout.thread_id, "first")
    index_thread_name(tmp_path / "codex", "019a0000-0000-7000-8000-000000000000", "another")
    index_thread_name(tmp_path / "codex", rollout.thread_id, "Uploader retries")
    assert name_of("codex", str(rollout.path), rollout.thread_id) == "Uploader retries"


def test_codex_cleared_name_and_no_index_fall_back_to_the_typed_turn(tmp_path: Path) -> None:
    rollout = _rollout(tmp_path)
    assert name_of("codex", str(rollout.path), rollout.thread_id) == "add a retry to the uploader"
    rollout.rename("named")
    rollout.rename(None)
    assert name_of("codex", str(rollout.path), rollout.thread_id) == "add a retry to the uploader"


# --- Pi -------------------------------------------------------------------------


def test_pi_latest_session_info_name(tmp_path: Path) -> None:
    session = PiSession(tmp_path / "2026-12-07T01-00-00-000Z_abc.jsonl")
    session.append(Typed("tidy the imports"), Reply("ok"))
    assert name_of("pi", str(session.path), session.session_id) == "tidy the imports"
    session.name("  imports  ")
    session.name("cleanup")
    assert name_of("pi", str(session.path), session.session_id) == "cleanup"


@pytest.mark.skipif(not conftest.HAVE_FIXTURES, reason="no shared fixtures")
def test_pi_fixture_session_info_name() -> None:
    path = conftest.FIXTURES / "pi" / "pi-v3-print-redacted.jsonl"
    assert name_of("pi", str(path), "x") == "agent-history pi smoke"


# --- stores -------------------------------------------------------------------


def test_opencode_title_and_its_placeholder(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    titled = OpenCodeTranscript(db, title="Fix CI cache")
    titled.append(Typed("why is CI slow"))
    assert name_of("opencode", str(db), titled.session_id) == "Fix CI cache"
    fresh = OpenCodeTranscript(db, title="New session - 2026-12-07T01:00:00.000Z")
    fresh.append(Typed("explain the build failure"))
    assert name_of("opencode", str(db), fresh.session_id) == "explain the build failure"


def test_crush_title_and_its_placeholder(tmp_path: Path) -> None:
    db = tmp_path / "crush.db"
    with CrushTranscript(db) as crush:
        crush.append(Typed("port the parser to rust"))
        session_id = crush.session_id
    assert name_of("crush", str(db), session_id) == "port the parser to rust"
    conn = apsw.Connection(str(db))
    conn.execute("UPDATE sessions SET title = 'Parser port' WHERE id = ?", (session_id,))
    conn.close()
    assert name_of("crush", str(db), session_id) == "Parser port"


def test_an_unreadable_store_has_no_name(tmp_path: Path) -> None:
    bad = tmp_path / "opencode.db"
    bad.write_bytes(b"not a database" * 100)
    assert name_of("opencode", str(bad), "ses_x") is None
    assert name_of("crush", str(bad), "x") is None


# --- Gemini, Qwen, Aider --------------------------------------------------------


def test_gemini_summary_update_names_the_session(tmp_path: Path) -> None:
    chats = tmp_path / "chats"
    chats.mkdir()
    session = GeminiSession(chats / "session-2026-12-07T01-00-abcdef12.jsonl")
    session.append(Typed("map the module graph"))
    with session.path.open("ab") as file:
        file.write(b'{"$set":{"summary":"Module graph map"}}\n')
    assert name_of("gemini", str(session.path), session.session_id) == "Module graph map"


def test_qwen_and_aider_are_named_by_their_first_typed_turn(tmp_path: Path) -> None:
    qwen = QwenSession(tmp_path / "qwen-session.jsonl")
    qwen.append(Typed("rename the config keys"))
    assert name_of("qwen", str(qwen.path), qwen.session_id) == "rename the config keys"
    aider = AiderChatHistory(tmp_path / ".aider.chat.history.md")
    aider.append(Typed("add type hints to utils"))
    assert name_of("aider", str(aider.path), "x") == "add type hints to utils"


# --- the registry ---------------------------------------------------------------


@pytest.mark.parametrize("source", [s.name for s in BUILT_IN])
def test_every_source_names_its_sample_and_never_raises(source: str, tmp_path: Path) -> None:
    found = next(s for s in BUILT_IN if s.name == source)
    path, thread_id = found.reading().sample(tmp_path)
    name = name_of(source, path, thread_id)
    assert name
    assert "\n" not in name
    assert name_of(source, str(tmp_path / "missing" / "x.jsonl"), thread_id) is None


def test_unknown_source_or_no_path_has_no_name() -> None:
    assert name_of("nope", "/x", "y") is None
    assert name_of("claude", None, "y") is None


def test_a_title_module_that_raises_gives_none(monkeypatch: pytest.MonkeyPatch) -> None:
    from actors.upstream import names

    def boom(path: str, thread_id: str) -> str | None:
        raise RuntimeError("defect")

    claude = next(s for s in BUILT_IN if s.name == "claude")
    monkeypatch.setattr(names, "find_source", lambda name: claude.replace(session_name=boom))
    assert name_of("claude", "/x", "y") is None


def test_gemini_document_summary_else_first_typed_message(tmp_path: Path) -> None:
    chats = tmp_path / "chats"
    chats.mkdir()
    session = GeminiSession(chats / "session-2026-01-10T09-00-abcdef12.json", format="json")
    session.append(Typed("map the module graph"))
    assert name_of("gemini", str(session.path), session.session_id) == "map the module graph"
    document = json.loads(session.path.read_text())
    document["summary"] = "Module graph map"
    session.path.write_text(json.dumps(document))
    assert name_of("gemini", str(session.path), session.session_id) == "Module graph map"


def test_codex_archived_rollout_reads_the_same_index(tmp_path: Path) -> None:
    archived = tmp_path / "codex" / "archived_sessions"
    archived.mkdir(parents=True)
    rollout = CodexRollout(archived / "rollout-2026-12-07T01-00-00-x.jsonl")
    rollout.append(Typed("old work"))
    index_thread_name(tmp_path / "codex", rollout.thread_id, "Archived thread")
    assert name_of("codex", str(rollout.path), rollout.thread_id) == "Archived thread"
