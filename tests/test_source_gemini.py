"""Gemini CLI as a registered source: discovery, adoption, scans, ``ssa classify`` and
``ssa watch``, on session files written in Gemini CLI 0.61.0's shapes (the kit)."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import msgspec
import pytest

from actors import Gateway
from actors.cli import app as cli
from actors.cli.watch import run_watch
from actors.monitors.where import project_of
from actors.testing import GeminiSession, Reply, ToolCall, ToolResult, Typed
from actors.upstream.catalog import default_catalogs, discover
from actors.upstream.gemini.kit import type_turn
from actors.upstream.source import Candidate
from tests.conftest import WATCHER

KEY = "agent:main:gemini:s1"


def _age(path: Path, seconds: float = 60.0) -> None:
    """Make ``path`` older than the grace in which a query may still be logged."""
    old = time.time() - seconds
    os.utime(path, (old, old))


def _project(root: Path, name: str = "proj") -> Path:
    chats = root / name / "chats"
    chats.mkdir(parents=True)
    (root / name / ".project_root").write_text(f"/work/{name}")
    return chats


def _interactive(chats: Path, stem: str = "session-2026-11-30T08-00-aaaa1111") -> Path:
    """A TUI session: its first query logged to ``logs.json``, then recorded."""
    path = chats / f"{stem}.jsonl"
    type_turn(str(path), stem, "first prompt", session=GeminiSession(path))
    GeminiSession(path).append(Reply("ok"))  # a reply row (a new builder: no header again)
    return path


def _adopted(gateway: Gateway, path: Path) -> None:
    link = gateway.adopt(KEY, source="gemini", path=path)
    assert link is not None
    assert (link.source, link.thread_id) == ("gemini", path.stem)
    assert gateway.watch(WATCHER, KEY)
    assert gateway.scan_upstream() == []  # adopted at the end: nothing counted


def test_discovery_finds_main_sessions_under_the_standard_location(tmp_path: Path) -> None:
    root = tmp_path / "home" / ".gemini" / "tmp"
    chats = _project(root)
    path = _interactive(chats)
    (chats / "parent-id").mkdir()
    (chats / "parent-id" / "agent.jsonl").write_bytes(b"{}\n")  # a sub-agent's file
    assert default_catalogs({"GEMINI_CLI_HOME": str(tmp_path / "home")}, tmp_path)[
        "gemini"] == [str(root)]
    assert default_catalogs({}, tmp_path / "u")["gemini"] == [
        str(tmp_path / "u" / ".gemini" / "tmp")]
    expected = [Candidate(source="gemini", path=str(path), thread_id=path.stem)]
    assert list(discover("gemini", root)) == expected
    assert list(discover("gemini", chats)) == expected  # a chats directory given itself


def test_a_typed_turn_counts_once_and_other_rows_and_own_text_do_not(
        gateway: Gateway, tmp_path: Path) -> None:
    path = _interactive(_project(tmp_path))
    _adopted(gateway, path)
    type_turn(str(path), path.stem, "please add a test")
    events = gateway.scan_upstream()
    assert [(e.kind, e.summary) for e in events] == [
        ("human_direct_message", "human message via gemini")]
    GeminiSession(path).append(Reply("done"),
                               ToolCall("run_shell_command", {"command": "ls"}, "c1"),
                               ToolResult("c1", "a b"))
    assert gateway.scan_upstream() == []
    gateway.note_own_text(KEY, "relayed by the gateway")
    type_turn(str(path), path.stem, "relayed by the gateway")
    assert gateway.scan_upstream() == []
    assert len(gateway.pending_notices(WATCHER)) == 1
    assert project_of("gemini", str(path), path.stem) == "/work/proj"


def test_a_program_driven_session_gets_no_link_and_an_unlogged_prompt_never_counts(
        gateway: Gateway, tmp_path: Path) -> None:
    chats = _project(tmp_path)
    driven = chats / "session-2026-11-30T08-00-bbbb2222.jsonl"
    GeminiSession(driven, interactive=False).append(Typed("gemini -p prompt"), Reply("ok"))
    _age(driven)  # past EVIDENCE_GRACE_S: its query will never be logged
    assert gateway.adopt("agent:main:gemini:p", source="gemini", path=driven) is None
    assert gateway.session_status("agent:main:gemini:p").state_version > 0  # refused
    # gemini -p writes its header before its prompt: caught in between, it is undecided
    # (adopted again later), then refused once its unlogged prompt is there.
    early = chats / "session-2026-11-30T08-00-dddd4444.jsonl"
    GeminiSession(early, interactive=False).append(Reply("starting"))
    assert gateway.adopt("agent:main:gemini:e", source="gemini", path=early) is None
    assert gateway.session_status("agent:main:gemini:e").state_version == 0  # not decided
    GeminiSession(early, interactive=False).append(Typed("gemini -p prompt"))
    _age(early)
    assert gateway.adopt("agent:main:gemini:e", source="gemini", path=early) is None
    assert gateway.session_status("agent:main:gemini:e").state_version > 0  # refused
    fresh = chats / "session-2026-11-30T08-01-cccc3333.jsonl"
    builder = GeminiSession(fresh, interactive=False)
    builder.append(Reply("ready"))  # no prompt yet, just written: undecided
    assert gateway.adopt(KEY, source="gemini", path=fresh) is None
    _age(fresh)  # idle past the grace, still no prompt: it cannot be told apart, so linked
    assert gateway.adopt(KEY, source="gemini", path=fresh) is not None
    assert gateway.watch(WATCHER, KEY)
    builder.append(Typed("sent by a program"))  # never logged: program-driven
    _age(fresh)
    assert gateway.scan_upstream() == []
    type_turn(str(fresh), fresh.stem, "typed in the TUI")
    assert len(gateway.scan_upstream()) == 1


def test_classify_shows_each_rows_decision(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chats = _project(tmp_path)
    path = _interactive(chats)
    assert cli.main(["classify", "--source", "gemini", str(path)]) == 0
    rows = [msgspec.json.decode(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["human"], r["reason"]) for r in rows] == [
        (False, "header"), (False, "history_rewrite"), (True, "typed"), (False, "metadata"),
        (False, "model"), (False, "metadata")]
    driven = chats / "session-2026-11-30T08-00-bbbb2222.jsonl"
    GeminiSession(driven, interactive=False).append(Typed("gemini -p prompt"))
    assert cli.main(["classify", "--source", "gemini", str(driven)]) == 0
    rows = [msgspec.json.decode(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["reason"] for r in rows if r["reason"].endswith("(program_driven)")] == [
        "not_monitored: program_driven (program_driven)"]
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
    root = tmp_path / "gemini"
    path = _interactive(_project(root))
    args = cli._parser().parse_args(["watch", "--gemini", str(root), "--scans", "2", "--json",
                                     "--interval", "0.001", "--db", str(tmp_path / "s.db")])
    out = TypeOnAdopt(path, ["one", "two", "three"])
    assert run_watch(args, out=out, err=io.StringIO()) == 0
    summary, *records = (msgspec.json.decode(line) for line in out.getvalue().splitlines())
    assert summary["adopted"] == {"gemini": 1}
    assert len(records) == 1
    assert records[0]["sessionKey"] == f"agent:main:gemini:{path.stem}"
    assert [(e["kind"], e["payload"]["turns"], len(e["payload"]["source"]["rows"]))
            for e in records[0]["events"]] == [("human_direct_message", 3, 3)]


def _grow_logs(chats: Path, megabytes: int) -> None:
    """Add other queries to ``logs.json`` until it is over ``megabytes`` MiB (as a TUI
    that kept every query, pastes included, leaves it)."""
    import json

    logs = chats.parent / "logs.json"
    rows = json.loads(logs.read_bytes())
    paste = "p" * (1 << 20)
    rows += [{"sessionId": f"other-{i}", "messageId": i, "type": "user", "message": paste,
              "timestamp": "2026-01-01T00:00:00.000Z"} for i in range(megabytes + 1)]
    logs.write_text(json.dumps(rows, indent=2))


def test_a_logs_json_over_its_parse_limit_still_lets_the_sessions_count(
        gateway: Gateway, tmp_path: Path) -> None:
    """Review finding: over 16 MiB the project's every session went unmonitored."""
    from actors.upstream.gemini.reading import LOGS_LIMIT

    chats = _project(tmp_path / ".gemini" / "tmp")
    path = _interactive(chats)
    _grow_logs(chats, LOGS_LIMIT >> 20)
    assert (chats.parent / "logs.json").stat().st_size > LOGS_LIMIT
    _adopted(gateway, path)
    type_turn(str(path), path.stem, "typed after the logs grew")
    assert [e.kind for e in gateway.scan_upstream()] == ["human_direct_message"]
    # A session no query of which was ever logged stays program-driven.
    other = chats / "session-2026-11-30T08-01-bbbb2222.jsonl"
    GeminiSession(other, interactive=False).append(Typed("a prompt nobody typed in the TUI"))
    _age(other)
    found = gateway.adopt("agent:main:gemini:other", source="gemini", path=other)
    assert found is None


def test_a_session_found_while_logs_json_is_rewritten_is_adopted_once_it_is_whole(
        tmp_path: Path) -> None:
    """Review finding: adopted never again in that ssa watch run."""
    from actors.upstream.gemini.source import GEMINI

    chats = _project(tmp_path)
    path = _interactive(chats)
    logs = chats.parent / "logs.json"
    whole = logs.read_bytes()
    logs.write_bytes(whole[:20])  # caught mid-rewrite: no session named yet
    reading = GEMINI.reading()
    assert reading.baseline(str(path), None, False, 0) is None
    assert reading.waiting(str(path))  # so ssa watch adopts it again later
    logs.write_bytes(whole)
    assert not reading.waiting(str(path))
    assert reading.baseline(str(path), None, False, 0) is not None


def test_the_builder_alone_writes_a_tui_session_that_counts(
        gateway: Gateway, tmp_path: Path) -> None:
    """Review finding: ``GeminiSession.append(Typed(...))`` logged nothing to ``logs.json``,
    so a suite using the builder as documented got a program-driven session."""
    chats = _project(tmp_path)
    path = chats / "session-2026-11-30T08-00-dddd4444.jsonl"
    builder = GeminiSession(path)
    builder.append(Typed("first"), Reply("ok"))
    logs = (chats.parent / "logs.json").read_bytes()
    assert builder.session_id.encode() in logs
    assert b"first" in logs
    _adopted(gateway, path)
    before = (chats.parent / "logs.json").read_bytes()
    builder.lines(Typed("only shown"))  # lines() writes nothing, logs.json included
    assert (chats.parent / "logs.json").read_bytes() == before
    builder.append(Typed("second"), Reply("done"))
    assert [e.kind for e in gateway.scan_upstream()] == ["human_direct_message"]
