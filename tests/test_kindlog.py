"""A row kind no real tool was seen writing: not typed, and logged once per process per tool."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path

import pytest

from actors.upstream.crush.classify import CrushMessage, classify_crush_message
from actors.upstream.gemini import classify as g
from actors.upstream.kindlog import MAX_LOGGED_KINDS, log_unknown_kind

_LOGGER = logging.getLogger("tests.kindlog")


def test_each_tool_and_kind_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    kind = f"kind-{secrets.token_hex(4)}"
    with caplog.at_level(logging.INFO, logger="tests.kindlog"):
        assert log_unknown_kind(_LOGGER, "Tool A", kind)
        assert not log_unknown_kind(_LOGGER, "Tool A", kind)
        assert log_unknown_kind(_LOGGER, "Tool B", kind)  # another tool: its own once
    messages = [r.getMessage() for r in caplog.records if kind in r.getMessage()]
    assert messages == [f"Tool A row kind {kind!r} is unknown: decided not typed",
                        f"Tool B row kind {kind!r} is unknown: decided not typed"]


def test_a_value_that_is_no_name_is_unprintable_and_the_count_is_capped(
        caplog: pytest.LogCaptureFixture) -> None:
    tool = f"Tool {secrets.token_hex(4)}"
    with caplog.at_level(logging.INFO, logger="tests.kindlog"):
        assert log_unknown_kind(_LOGGER, tool, "secret text with spaces")
        assert not log_unknown_kind(_LOGGER, tool, {"a": 1})  # also <unprintable>
        logged = sum(log_unknown_kind(_LOGGER, tool, f"k{i}") for i in range(2 * MAX_LOGGED_KINDS))
    assert logged == MAX_LOGGED_KINDS - 1
    assert "secret text" not in caplog.text
    assert f"{tool} row kind '<unprintable>'" in caplog.text


def test_gemini_unknown_message_type_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    kind = f"surprise{secrets.token_hex(4)}"
    line = b'{"id":"x%d","type":"' + kind.encode() + b'","content":"hello private"}\n'
    with caplog.at_level(logging.INFO, logger="actors.upstream.gemini.classify"):
        for n in range(3):
            scan = g.read_gemini_rows(line.replace(b"%d", str(n).encode()))
            assert [(r.typed, r.reason) for r in scan.rows] == [(False, "unknown_kind")]
    logged = [r for r in caplog.records if kind in r.getMessage()]
    assert len(logged) == 1, caplog.text
    assert "Gemini CLI" in logged[0].getMessage()
    assert "hello private" not in caplog.text


def test_crush_unknown_role_and_part_are_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    role, part = f"role{secrets.token_hex(4)}", f"part{secrets.token_hex(4)}"
    parts = '[{"type": "text", "data": {"text": "private words"}}, {"type": "%s", "data": {}}]'
    with caplog.at_level(logging.INFO, logger="actors.upstream.crush.classify"):
        for rowid in (1, 2):
            odd_role = CrushMessage(rowid=rowid, id="m", session_id="s", role=role,
                                    parts="[]", created_ms=0)
            odd_part = CrushMessage(rowid=rowid, id="n", session_id="s", role="user",
                                    parts=parts % part, created_ms=0)
            assert classify_crush_message(odd_role).reason == "unknown_role"
            assert classify_crush_message(odd_part).reason == "unknown_part"
    assert sum(role in r.getMessage() for r in caplog.records) == 1, caplog.text
    assert sum(part in r.getMessage() for r in caplog.records) == 1, caplog.text
    assert "private words" not in caplog.text


def test_ssa_classify_shows_an_unknown_kind_on_stderr(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review finding: logged at INFO, the notice never reached an ``ssa`` user."""
    from actors.cli import app as cli
    from actors.testing import GeminiSession, Typed

    chats = tmp_path / "proj" / "chats"
    chats.mkdir(parents=True)
    path = chats / "session-2026-11-30T08-00-eeee5555.jsonl"
    GeminiSession(path).append(Typed("hello"))
    kind = f"novel{secrets.token_hex(4)}"
    with path.open("ab") as file:
        file.write(b'{"id":"z","type":"' + kind.encode() + b'","content":"private words"}\n')
    assert cli.main(["classify", "--source", "gemini", str(path)]) == 0
    captured = capsys.readouterr()
    assert f"ssa: Gemini CLI row kind {kind!r} is unknown: decided not typed" in captured.err
    assert "private words" not in captured.err
