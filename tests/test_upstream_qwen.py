"""actors.upstream.qwen.classify on records in Qwen Code 0.24.4's shapes (the kit's QwenSession)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from actors.testing import Compaction, Reply, SlashCommand, SubagentRow, ToolCall, ToolResult, Typed
from actors.upstream.common import Unit
from actors.upstream.qwen import classify as q
from actors.upstream.qwen.kit import QwenSession
from actors.upstream.qwen.reading import classify_qwen_line


def test_typed_tool_slash_compaction_notification(tmp_path: Path) -> None:
    session = QwenSession(tmp_path / "s.jsonl", cwd="/work/p")
    session.append(Typed("hello"), Reply("hi"), ToolCall("run_shell_command", {}, "c1"),
                   ToolResult("c1", "out"), SlashCommand("about"), Compaction("sum"),
                   SubagentRow("background agent done"), Typed("again"))
    scan = q.read_qwen_rows(session.path.read_bytes())
    assert [r.text for r in scan.rows if r.typed] == ["hello", "again"]
    assert {(r.kind, r.reason) for r in scan.rows} >= {
        ("assistant", "model"), ("tool_result", "tool_result"),
        ("system:slash_command", "system:slash_command"),
        ("system:chat_compression", "system:chat_compression"),
        ("user:notification", "notification"),
        ("system:attribution_snapshot", "system:attribution_snapshot")}
    assert scan.cursor.session.session_id == session.session_id
    assert scan.cursor.session.cwd == "/work/p"
    assert scan.cursor.session.surface == "cli"
    assert scan.cursor.session.started_at is not None


def test_provenance_and_subtypes_decide() -> None:
    base = {"type": "user", "message": {"role": "user", "parts": [{"text": "x"}]}}
    assert q.decide_qwen_record(base) == (True, "typed", "x")
    assert q.decide_qwen_record({**base, "provenance": "goal_runtime"})[:2] == \
        (False, "goal_runtime")
    assert q.decide_qwen_record({**base, "subtype": "cron"})[:2] == (False, "cron")
    mid = {**base, "subtype": "mid_turn_user_message", "systemPayload": {"displayText": "y"}}
    assert q.decide_qwen_record(mid) == (True, "typed", "y")
    result = {"type": "user", "message": {"parts": [{"functionResponse": {}}]}}
    assert q.decide_qwen_record(result)[:2] == (False, "tool_result")
    assert q.decide_qwen_record({"type": "odd"})[:2] == (False, "unknown_kind")


def test_program_driven_sidechain_and_source(tmp_path: Path) -> None:
    run = QwenSession(tmp_path / "a.jsonl", interactive=False)
    run.append(Typed("headless"))
    scan = q.read_qwen_rows(run.path.read_bytes())
    sidecar = q.runtime_status_path(run.path)
    assert not sidecar.exists()
    assert q.qwen_refusal(scan.cursor.session, False, has_prompt=True) == "program_driven"
    tui = QwenSession(tmp_path / "b2b2.jsonl", session_id="b2b2")
    tui.append(Typed("typed"))
    named = q.runtime_status_session(q.runtime_status_path(tui.path).read_bytes())
    assert named == tui.session_id
    tscan = q.read_qwen_rows(tui.path.read_bytes())
    assert q.qwen_refusal(tscan.cursor.session, True, has_prompt=True) is None
    side = q.read_qwen_rows(b'{"type":"user","agentId":"a1","message":{"parts":[]}}\n')
    assert q.qwen_refusal(side.cursor.session) == "subagent"
    src = q.read_qwen_rows(b'{"type":"system","subtype":"session_source",'
                           b'"systemPayload":{"sourceType":"channel"}}\n')
    assert q.qwen_refusal(src.cursor.session) == "source:channel"


def test_torn_line_and_slug(tmp_path: Path) -> None:
    session = QwenSession(tmp_path / "s.jsonl")
    data = session.lines(Typed("one"), Typed("two"))
    first = q.read_qwen_rows(data[:-5])
    assert first.partial
    rest = q.read_qwen_rows(data[first.cursor.offset:], first.cursor)
    assert [r.text for r in first.rows + rest.rows if r.typed] == ["one", "two"]
    assert q.qwen_project_slug("/tmp/gx/q1/project") == "-tmp-gx-q1-project"
    assert q.qwen_project_slug("/Tmp/Project") == "-Tmp-Project"  # case kept off Windows
    assert q.qwen_project_slug("C:\\Users\\Ann\\Repo") == "c--users-ann-repo"  # Windows
    assert q.qwen_fingerprint(tmp_path / "missing") is None


def test_hook_file_and_command_prompts_are_typed_once(tmp_path: Path) -> None:
    """The shapes 0.24.4 wrote under the harness: a hook's context rides on the typed
    record (``systemPayload.hookContext``), ``@`` files add an ``at_command`` record
    and content parts, a custom command records what was typed as ``displayText``."""
    session = QwenSession(tmp_path / "s.jsonl")
    session.prompt("look at @notes.txt", hook_context="ctx-1", files={"notes.txt": "body"})
    session.prompt("/greet argz", model_text="Custom command body with argz",
                   hook_context="ctx-2")
    scan = q.read_qwen_rows(session.path.read_bytes())
    assert [(r.kind, r.typed, r.text) for r in scan.rows] == [
        ("system:at_command", False, None),
        ("user", True, "look at @notes.txt"),
        ("user", True, "/greet argz")]


@pytest.mark.parametrize("context_file", ["QWEN.md", "AGENTS.md"])
def test_init_command_prompt_is_the_tools_not_typed(tmp_path: Path, context_file: str) -> None:
    """``/init`` makes 0.24.4 send its fixed prompt as a ``real_user`` record (seen on the
    real CLI by tests/test_agents_fixed_prompts.py): ``tool_prompt``; the prompts typed
    around it count."""
    session = QwenSession(tmp_path / "s.jsonl")
    session.append(Typed("before"), Reply("ok"))
    session.init_command(context_file)
    session.append(Reply("wrote it"), Typed("after"))
    scan = q.read_qwen_rows(session.path.read_bytes())
    assert [(r.kind, r.reason) for r in scan.rows if r.kind == "user"] == [
        ("user", "typed"), ("user", "tool_prompt"), ("user", "typed")]
    assert [r.text for r in scan.rows if r.typed] == ["before", "after"]


def test_a_typed_prompt_quoting_the_init_opening_still_counts(tmp_path: Path) -> None:
    """Only the whole fixed text is the tool's: a person's prompt that merely starts like
    it (no "Analysis Process" heading after it) is typed."""
    session = QwenSession(tmp_path / "s.jsonl")
    session.append(Typed("You are Qwen Code, an interactive CLI agent. Analyze the current "
                         "directory please"))
    assert [r.typed for r in q.read_qwen_rows(session.path.read_bytes()).rows
            if r.kind == "user"] == [True]


def test_sub_agent_calls_and_their_notification_are_not_typed(tmp_path: Path) -> None:
    session = QwenSession(tmp_path / "s.jsonl")
    session.append(Typed("start one"))
    session.agent_call("sub prompt", "call_1")
    session.agent_call("bg prompt", "call_2", background=True, result="bg result")
    scan = q.read_qwen_rows(session.path.read_bytes())
    assert [r.text for r in scan.rows if r.typed] == ["start one"]
    assert [(r.kind, r.reason) for r in scan.rows if r.kind.startswith(("assistant", "tool",
                                                                       "user:"))] == [
        ("assistant", "model"), ("tool_result", "tool_result"),
        ("assistant", "model"), ("tool_result", "tool_result"),
        ("user:notification", "notification")]
    # The sub-agent's own file: its first record is the parent's prompt, never typed.
    line = (b'{"type":"user","agentId":"general-purpose-call_1","isSidechain":true,'
            b'"message":{"role":"user","parts":[{"text":"sub prompt"}]}}')
    assert classify_qwen_line(line) == Unit(human=False, reason="subagent")


def test_branch_copies_are_not_typed_again(tmp_path: Path) -> None:
    """``/branch`` and ``--fork-session`` copy every record into a new session file, each
    with ``forkedFrom`` (``SessionService.forkSession``): the copies are ``copied_row``."""
    source = QwenSession(tmp_path / "a.jsonl")
    source.append(Typed("typed before the branch"), Reply("ok"))
    branch = source.branch(tmp_path / "b.jsonl")
    branch.append(Typed("typed in the branch"))
    scan = q.read_qwen_rows(branch.path.read_bytes())
    assert [r.text for r in scan.rows if r.typed] == ["typed in the branch"]
    assert [r.reason for r in scan.rows if r.kind == "user"] == ["copied_row", "typed"]
    assert scan.cursor.session.session_id == branch.session_id


def test_user_subtypes_the_cli_writes_and_unknown_ones() -> None:
    base = {"type": "user", "message": {"role": "user", "parts": [{"text": "x"}]}}
    for sub in q.CLI_USER_SUBTYPES:
        assert q.decide_qwen_record({**base, "subtype": sub})[:2] == (False, sub)
    assert q.decide_qwen_record({**base, "subtype": "brand-new"})[:2] == (False, "unknown_kind")
    assert q.row_kind({**base, "subtype": "brand-new"}) == "user:brand-new"


def test_an_unknown_kind_is_logged_once_by_name(caplog: pytest.LogCaptureFixture) -> None:
    line = b'{"type":"brand-new-kind-9c1d","message":{"parts":[{"text":"secret words"}]}}'
    sub = b'{"type":"user","subtype":"odd-sub-9c1d","message":{"parts":[{"text":"secret"}]}}'
    with caplog.at_level(logging.INFO, logger="actors.upstream.qwen.classify"):
        for _ in range(3):
            assert classify_qwen_line(line) == Unit(human=False, reason="unknown_kind")
            assert classify_qwen_line(sub) == Unit(human=False, reason="unknown_kind")
        assert classify_qwen_line(b'{"type":"assistant"}').reason == "model"
    messages = [r.getMessage() for r in caplog.records]
    assert sum("brand-new-kind-9c1d" in m for m in messages) == 1
    assert sum("user:odd-sub-9c1d" in m for m in messages) == 1
    assert len(messages) == 2
    assert "secret" not in caplog.text  # the kind's name only, never a record's text
