"""actors.upstream.qwen on records in Qwen Code 0.24.4's shapes (the test kit's QwenSession)."""

from __future__ import annotations

from pathlib import Path

from actors.testing import Compaction, Reply, SlashCommand, SubagentRow, ToolCall, ToolResult, Typed
from actors.upstream import qwen as q
from actors.upstream.kit.qwen import QwenSession


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
    assert q.qwen_fingerprint(tmp_path / "missing") is None
