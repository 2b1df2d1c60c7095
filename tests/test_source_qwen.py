"""Qwen Code as a registered source: discovery, adoption, scans, ``ssa classify`` and
``ssa watch``, on session files written in Qwen Code 0.24.4's shapes (the kit)."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import msgspec
import pytest

from actors import Gateway
from actors.cli import app as cli
from actors.cli.watch import run_watch
from actors.monitors.where import project_of
from actors.testing import (
    QwenSession,
    Reply,
    SlashCommand,
    SubagentRow,
    ToolCall,
    ToolResult,
    Typed,
)
from actors.upstream.catalog import default_catalogs, discover
from actors.upstream.qwen.kit import type_turn
from actors.upstream.source import Candidate
from tests.conftest import WATCHER

SID = "0b7c6f7e-1111-4222-8333-944455556666"
KEY = f"agent:main:qwen:{SID}"


def _age(path: Path, seconds: float = 60.0) -> None:
    """Make ``path`` older than the grace in which a sidecar may still be written."""
    old = time.time() - seconds
    os.utime(path, (old, old))


def _session(root: Path, sid: str = SID, *, interactive: bool = True) -> Path:
    chats = root / "-work-proj" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / f"{sid}.jsonl"
    QwenSession(path, session_id=sid, cwd="/work/proj", interactive=interactive).append(
        Typed("first prompt"), Reply("ok"))
    return path


def _adopted(gateway: Gateway, path: Path) -> None:
    link = gateway.adopt(KEY, source="qwen", path=path)
    assert link is not None
    assert (link.source, link.thread_id) == ("qwen", SID)
    assert gateway.watch(WATCHER, KEY)
    assert gateway.scan_upstream() == []  # adopted at the end: nothing counted


def test_discovery_finds_sessions_under_the_standard_locations(tmp_path: Path) -> None:
    root = tmp_path / "home" / ".qwen" / "projects"
    path = _session(root)
    sub = root / "-work-proj" / "subagents" / SID
    sub.mkdir(parents=True)
    (sub / "agent-1.jsonl").write_bytes(b"{}\n")  # a sub-agent's file
    assert default_catalogs({}, tmp_path / "home")["qwen"] == [str(root)]
    assert default_catalogs({"QWEN_HOME": "/q"}, tmp_path)["qwen"] == ["/q/projects"]
    assert default_catalogs({"QWEN_HOME": "/q", "QWEN_RUNTIME_DIR": "/r"}, tmp_path)[
        "qwen"] == ["/r/projects"]
    expected = [Candidate(source="qwen", path=str(path), thread_id=SID)]
    assert list(discover("qwen", root)) == expected
    assert list(discover("qwen", path.parent)) == expected  # a chats directory given itself


def test_a_typed_turn_counts_once_and_other_records_and_own_text_do_not(
        gateway: Gateway, tmp_path: Path) -> None:
    path = _session(tmp_path)
    _adopted(gateway, path)
    type_turn(str(path), SID, "please add a test")
    events = gateway.scan_upstream()
    assert [(e.kind, e.summary) for e in events] == [
        ("human_direct_message", "human message via qwen")]
    QwenSession(path, session_id=SID).append(
        Reply("done"), ToolCall("run_shell_command", {"command": "ls"}, "c1"),
        ToolResult("c1", "a b"), SlashCommand("compress", ""), SubagentRow("a notification"))
    assert gateway.scan_upstream() == []
    gateway.note_own_text(KEY, "relayed by the gateway")
    type_turn(str(path), SID, "relayed by the gateway")
    assert gateway.scan_upstream() == []
    assert len(gateway.pending_notices(WATCHER)) == 1
    assert project_of("qwen", str(path), SID) == "/work/proj"


def test_program_and_channel_driven_sessions_get_no_link(
        gateway: Gateway, tmp_path: Path) -> None:
    driven = _session(tmp_path, "1b7c6f7e-1111-4222-8333-944455556666", interactive=False)
    _age(driven)  # past EVIDENCE_GRACE_S: its sidecar will never be written
    assert gateway.adopt("agent:main:qwen:p", source="qwen", path=driven) is None
    assert gateway.session_status("agent:main:qwen:p").state_version > 0  # refused
    channel = _session(tmp_path, "2b7c6f7e-1111-4222-8333-944455556666")
    with channel.open("r+b") as handle:
        rows = handle.read()
        handle.seek(0)
        source = {"type": "system", "subtype": "session_source", "uuid": "u0",
                  "sessionId": channel.stem, "systemPayload": {"sourceType": "channel"}}
        handle.write(json.dumps(source).encode() + b"\n" + rows)
    assert gateway.adopt("agent:main:qwen:c", source="qwen", path=channel) is None
    fresh = tmp_path / "-work-proj" / "chats" / "3b7c6f7e-1111-4222-8333-944455556666.jsonl"
    builder = QwenSession(fresh, session_id=fresh.stem, interactive=False)
    builder.append(Reply("ready"))  # no prompt yet, just written: undecided (qwen -p or the UI)
    assert gateway.adopt(KEY, source="qwen", path=fresh) is None
    assert gateway.session_status(KEY).state_version == 0  # nothing decided yet
    _age(fresh)  # idle past the grace, still no prompt: it cannot be told apart, so linked
    assert gateway.adopt(KEY, source="qwen", path=fresh) is not None
    assert gateway.watch(WATCHER, KEY)
    builder.append(Typed("sent by a program"))  # no sidecar: program-driven
    _age(fresh)
    assert gateway.scan_upstream() == []


def test_classify_shows_each_records_decision(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _session(tmp_path)
    assert cli.main(["classify", "--source", "qwen", str(path)]) == 0
    rows = [msgspec.json.decode(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["human"], r["reason"]) for r in rows] == [
        (True, "typed"), (False, "system:attribution_snapshot"),
        (False, "system:file_history_snapshot"), (False, "model")]
    driven = _session(tmp_path, "1b7c6f7e-1111-4222-8333-944455556666", interactive=False)
    assert cli.main(["classify", "--source", "qwen", str(driven)]) == 0
    rows = [msgspec.json.decode(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[0]["reason"] == "not_monitored: program_driven (program_driven)"
    assert not any(r["human"] for r in rows)


class TypeOnAdopt(io.StringIO):
    """stdout that types ``texts`` into ``path`` once the adoption summary is printed."""

    def __init__(self, path: Path, texts: list[str]) -> None:
        super().__init__()
        self.path, self.texts = path, texts

    def write(self, text: str) -> int:
        if text.startswith('{"adopted"'):
            for typed in self.texts:
                type_turn(str(self.path), self.path.stem, typed)
        return super().write(text)


def test_watch_reports_one_notice_for_a_burst_of_typed_turns(tmp_path: Path) -> None:
    root = tmp_path / "qwen"
    path = _session(root)
    args = cli._parser().parse_args(["watch", "--qwen", str(root), "--scans", "2", "--json",
                                     "--interval", "0.001", "--db", str(tmp_path / "s.db")])
    out = TypeOnAdopt(path, ["one", "two", "three"])
    assert run_watch(args, out=out, err=io.StringIO()) == 0
    summary, *records = (msgspec.json.decode(line) for line in out.getvalue().splitlines())
    assert summary["adopted"] == {"qwen": 1}
    assert len(records) == 1
    assert records[0]["sessionKey"] == KEY
    assert [(e["kind"], e["payload"]["turns"], len(e["payload"]["source"]["rows"]))
            for e in records[0]["events"]] == [("human_direct_message", 3, 3)]
