"""actors.upstream.gemini.classify on rows in Gemini CLI 0.61.0's shapes (the kit's builder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.testing import (
    Compaction,
    Interrupt,
    Reply,
    SlashCommand,
    SubagentRow,
    ToolCall,
    ToolResult,
    Typed,
)
from actors.upstream.gemini import classify as g
from actors.upstream.gemini.kit import GeminiSession, gemini_logs_json


def _decided(path: Path) -> list[tuple[str, bool, str]]:
    scan = g.read_gemini_rows(path.read_bytes())
    return [(r.kind, r.typed, r.reason) for r in scan.rows]


def test_typed_reply_tool_call_and_result(tmp_path: Path) -> None:
    session = GeminiSession(tmp_path / "s.jsonl")
    session.append(Typed("hello one"), Reply("hi"), Typed("run it"),
                   ToolCall("run_shell_command", {"command": "ls"}, "c1"),
                   ToolResult("c1", "a.txt"), Reply("done"))
    scan = g.read_gemini_rows(session.path.read_bytes())
    typed = [r for r in scan.rows if r.typed]
    assert [r.text for r in typed] == ["hello one", "run it"]
    assert {(r.kind, r.reason) for r in scan.rows} >= {
        ("header", "header"), ("$set.messages", "history_rewrite"), ("$set", "metadata"),
        ("gemini", "model"), ("user", "tool_result")}
    assert scan.cursor.header is not None
    assert scan.cursor.header.kind == "main"
    assert scan.cursor.header.session_id == session.session_id
    assert not scan.partial


def test_a_rewritten_message_is_decided_once(tmp_path: Path) -> None:
    session = GeminiSession(tmp_path / "s.jsonl")
    session.append(Typed("hello"))
    lines = session.path.read_bytes().splitlines(keepends=True)
    prompt = next(line for line in lines if line.startswith(b'{"id"') and b'"user"' in line)
    with session.path.open("ab") as handle:
        handle.write(prompt)  # Gemini CLI rewrites a message with the same id on update
    rows = [r for r in g.read_gemini_rows(session.path.read_bytes()).rows if r.kind == "user"]
    assert [(r.typed, r.reason) for r in rows] == [(True, "typed"), (False, "rewritten")]


def test_hook_context_and_display_content(tmp_path: Path) -> None:
    session = GeminiSession(tmp_path / "s.jsonl", hook_context="ctx-1")
    session.append(Typed("look at @a.txt"), SubagentRow("ignored"))
    rows = [r for r in g.read_gemini_rows(session.path.read_bytes()).rows if r.kind == "user"]
    assert [(r.typed, r.reason, r.text) for r in rows] == [
        (True, "typed", "look at @a.txt"), (False, "continuation", None)]


def test_custom_commands(tmp_path: Path) -> None:
    session = GeminiSession(tmp_path / "s.jsonl")
    session.append(SlashCommand("greet", "bob"), SubagentRow("x"), SlashCommand("greet"))
    rows = [r for r in g.read_gemini_rows(session.path.read_bytes()).rows if r.kind == "user"]
    assert [(r.typed, r.reason, r.text) for r in rows] == [
        (True, "typed", "/greet bob"), (False, "continuation", None),
        (False, "custom_command", None)]


def test_interrupt_and_compression_write_no_typed_row(tmp_path: Path) -> None:
    session = GeminiSession(tmp_path / "s.jsonl")
    session.append(Typed("one"), Interrupt(), Compaction("summary"), Typed("two"))
    scan = g.read_gemini_rows(session.path.read_bytes())
    assert [r.text for r in scan.rows if r.typed] == ["one", "two"]
    assert ("info", "info") in {(r.kind, r.reason) for r in scan.rows}


@pytest.mark.parametrize(("text", "reason"), [
    ("<session_context>\nThis is the Gemini CLI.</session_context>", "session_context"),
    ("<state_snapshot>x</state_snapshot>", "compression_summary"),
    ("I ran the following shell command:\n```sh\nls\n```", "shell_mode"),
    ("User has manually exited Plan Mode. Switching to Default.", "plan_mode_notice"),
    ("- **Workspace Directories:**\n  - /work", "directory_context"),
    ("Please continue.", "continuation"),
    ("System: Potential loop detected. Details: x", "continuation"),
])
def test_rows_the_cli_writes_itself(text: str, reason: str) -> None:
    assert g.decide_user_message({"type": "user", "content": [{"text": text}]}) == \
        (False, reason, None)


def test_hook_context_alone_and_media() -> None:
    hook = {"type": "user", "content": [{"text": "<hook_context>x</hook_context>"}]}
    assert g.decide_user_message(hook) == (False, "hook_context", None)
    image = {"type": "user", "content": [{"inlineData": {"mimeType": "image/png", "data": ""}}]}
    assert g.decide_user_message(image) == (False, "media_only", None)


def test_subagent_file_rows_are_never_typed(tmp_path: Path) -> None:
    session = GeminiSession(tmp_path / "s.jsonl", kind="subagent")
    session.append(Typed("sub prompt"))
    scan = g.read_gemini_rows(session.path.read_bytes())
    assert [r.reason for r in scan.rows if r.kind == "user"] == ["subagent"]
    assert g.gemini_refusal(scan.cursor.header, None, has_prompt=False) == "subagent"


def test_incremental_reads_and_a_torn_last_line(tmp_path: Path) -> None:
    session = GeminiSession(tmp_path / "s.jsonl")
    session.append(Typed("one"))
    data = session.path.read_bytes() + session.lines(Typed("two"))
    half = data[: data.index(b'"two"')]  # the second prompt's line is torn
    first = g.read_gemini_rows(half)
    assert first.partial
    assert [r.text for r in first.rows if r.typed] == ["one"]
    rest = g.read_gemini_rows(data[first.cursor.offset:], first.cursor)
    assert [r.text for r in rest.rows if r.typed] == ["two"]
    assert not rest.partial
    assert rest.rows[0].start == first.cursor.offset
    whole = g.read_gemini_rows(data)
    assert [r.line for r in whole.rows] == [r.line for r in first.rows + rest.rows]


def test_invalid_and_unknown_lines() -> None:
    data = b'not json\n{"id":"x","type":"surprise","content":""}\n\n{"foo":1}\n'
    scan = g.read_gemini_rows(data)
    assert [(r.kind, r.reason) for r in scan.rows] == [
        ("invalid_json", "invalid_json"), ("surprise", "unknown_kind"),
        ("unknown", "unknown_kind")]
    assert scan.unknown_kinds == ("surprise", "unknown")


def test_program_driven_sessions_are_refused(tmp_path: Path) -> None:
    session = GeminiSession(tmp_path / "s.jsonl")
    session.append(Typed("hello"))
    header = g.read_gemini_rows(session.path.read_bytes()).cursor.header
    logs = g.interactive_session_ids(gemini_logs_json((session.session_id, "hello")))
    assert logs == frozenset({session.session_id})
    assert g.gemini_refusal(header, logs, has_prompt=True) is None
    other = g.interactive_session_ids(gemini_logs_json(("another", "x")))
    assert g.gemini_refusal(header, other, has_prompt=True) == "program_driven"
    assert g.gemini_refusal(header, None, has_prompt=True) == "program_driven"
    assert g.gemini_refusal(header, None, has_prompt=False) is None
    assert g.gemini_refusal(None, logs, has_prompt=True) == "not_a_session"
    assert g.interactive_session_ids(b"[{") is None


def test_paths_and_fingerprint(tmp_path: Path) -> None:
    chats = tmp_path / "tmp" / "proj" / "chats"
    (chats / "parent").mkdir(parents=True)
    main, sub = chats / "session-x.jsonl", chats / "parent" / "agent.jsonl"
    assert g.logs_path_for(main) == g.logs_path_for(sub) == tmp_path / "tmp" / "proj" / "logs.json"
    assert g.gemini_fingerprint(main) is None
    main.write_text("{}\n")
    before = g.gemini_fingerprint(main)
    assert before is not None
    assert before[4:] == (0, 0, 0, 0)
    (tmp_path / "tmp" / "proj" / "logs.json").write_text(json.dumps([]))
    assert g.gemini_fingerprint(main) != before


_INIT = ("\nYou are an AI agent that brings the power of Gemini directly into the terminal. Your "
         "task is to analyze the current directory and generate a comprehensive GEMINI.md file "
         "to be used as instructional context for future interactions.\n\n**Analysis Process:**"
         "\n\n1.  **Initial Exploration:**\n    *   Start by listing the files and directories."
         "\n")
"""The opening of ``/init``'s prompt (``performInit``, 0.20 to 0.61) and a shortened rest."""


def test_init_prompt_without_its_display_content_is_the_tools() -> None:
    """``/init`` sends a fixed prompt; from 0.28 its row names ``displayContent: "/init"``
    (``custom_command``), a 0.20 to 0.27 document holds only the text (a string, or a
    part list): ``tool_prompt``, not typed, whichever way it is stored."""
    for content in (_INIT, [{"text": _INIT}]):
        assert g.decide_user_message({"type": "user", "content": content})[:2] == (
            False, "tool_prompt")
    assert g.decide_user_message({"type": "user", "content": [{"text": _INIT}],
                                  "displayContent": [{"text": "/init"}]})[:2] == (
        False, "custom_command")
    # a person's prompt that only starts like it is theirs
    assert g.decide_user_message({"type": "user", "content": "You are an AI agent that "
                                  "brings the power of Gemini directly into the terminal."})[
        :2] == (True, "typed")
