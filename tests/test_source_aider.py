"""Aider as a registered source: discovery in repositories, adoption, scans, ``ssa
classify`` and ``ssa watch``, on chat histories written as Aider 0.86.2 writes them (the kit)."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from actors import Gateway
from actors.cli import app as cli
from actors.cli.watch import run_watch
from actors.monitors.leases import SETTLE_MS
from actors.monitors.where import project_of
from actors.testing import (
    AiderChatHistory,
    ManualClock,
    Reply,
    SlashCommand,
    ToolCall,
    ToolResult,
    Typed,
)
from actors.upstream.aider.classify import PAGE_BYTES
from actors.upstream.aider.kit import type_turn
from actors.upstream.aider.paths import history_thread_id
from actors.upstream.catalog import default_catalogs, discover
from actors.upstream.source import Candidate
from tests.conftest import WATCHER, Wakes

HISTORY = ".aider.chat.history.md"


def _repo(root: Path, name: str = "app") -> Path:
    repo = root / name
    repo.mkdir(parents=True)
    path = repo / HISTORY
    AiderChatHistory(path).append(Typed("first prompt"), Reply("ok"))
    return path


def _adopted(gateway: Gateway, path: Path) -> str:
    thread = history_thread_id(str(path))
    key = f"agent:main:aider:{thread}"
    link = gateway.adopt(key, source="aider", path=path)
    assert link is not None
    assert (link.source, link.thread_id) == ("aider", thread)
    assert gateway.watch(WATCHER, key)
    assert gateway.scan_upstream() == []  # adopted at the end: nothing counted
    return key


def test_discovery_finds_histories_in_a_repository_or_a_folder_of_them(tmp_path: Path) -> None:
    one = _repo(tmp_path / "code", "app")
    two = _repo(tmp_path / "code", "lib")
    (tmp_path / "code" / "empty").mkdir()
    assert default_catalogs({}, tmp_path)["aider"] == []  # no standard location
    assert [c.path for c in discover("aider", tmp_path / "code")] == [str(one), str(two)]
    assert list(discover("aider", one.parent)) == [
        Candidate(source="aider", path=str(one), thread_id=history_thread_id(str(one)))]
    other = _repo(tmp_path / "elsewhere", "app")  # a repository of the same name
    assert history_thread_id(str(other)) != history_thread_id(str(one))
    assert history_thread_id(str(one)).startswith("app-")


def test_a_typed_turn_counts_once_and_other_blocks_and_own_text_do_not(
        gateway: Gateway, tmp_path: Path) -> None:
    path = _repo(tmp_path)
    key = _adopted(gateway, path)
    type_turn(str(path), "", "please add a test")
    type_turn(str(path), "", "")  # an empty input: not counted
    AiderChatHistory(path).append(Reply("working on it"))
    events = gateway.scan_upstream()
    assert [(e.kind, e.summary) for e in events] == [
        ("human_direct_message", "human message via aider")]
    history = AiderChatHistory(path)
    history.append(ToolCall("shell", {"command": "ls"}, "c1"), ToolResult("c1", "a b"),
                   SlashCommand("run", "make"), Reply("done"))
    assert gateway.scan_upstream() == []
    gateway.note_own_text(key, "relayed by the gateway")
    type_turn(str(path), "", "relayed by the gateway")
    AiderChatHistory(path).append(Reply("ok"))
    assert gateway.scan_upstream() == []
    assert len(gateway.pending_notices(WATCHER)) == 1
    assert project_of("aider", str(path), "") == str(path.parent.resolve())


def test_a_program_driven_session_in_the_history_never_counts(
        gateway: Gateway, tmp_path: Path) -> None:
    path = _repo(tmp_path)
    _adopted(gateway, path)
    AiderChatHistory(path, command_line="aider --message 'fix it'").append(
        Typed("fix it"), Reply("fixed"))
    assert gateway.scan_upstream() == []
    AiderChatHistory(path).append(Typed("typed in a new interactive session"), Reply("ok"))
    assert len(gateway.scan_upstream()) == 1


def test_classify_shows_each_blocks_decision(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _repo(tmp_path)
    assert cli.main(["classify", "--source", "aider", str(path)]) == 0
    rows = [msgspec.json.decode(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["kind"], r["human"], r["reason"]) for r in rows] == [
        ("session_start", False, "session_start"), ("tool", False, "tool_output"),
        ("user", True, "typed"), ("assistant", False, "assistant")]


class TypeOnAdopt(io.StringIO):
    """stdout that types ``texts`` into ``path`` once the adoption summary is printed."""

    def __init__(self, path: Path, texts: list[str]) -> None:
        super().__init__()
        self.path, self.texts = path, texts

    def write(self, text: str) -> int:
        if text.startswith('{"adopted"'):
            for typed in self.texts:
                type_turn(str(self.path), "", typed)
            AiderChatHistory(self.path).append(Reply("on it"))
        return super().write(text)


def test_watch_reports_one_notice_for_a_burst_of_typed_turns(tmp_path: Path) -> None:
    path = _repo(tmp_path / "code")
    args = cli._parser().parse_args(["watch", "--aider", str(tmp_path / "code"), "--scans",
                                     "2", "--json", "--interval", "0.001",
                                     "--db", str(tmp_path / "s.db")])
    out = TypeOnAdopt(path, ["one", "two", "three"])
    assert run_watch(args, out=out, err=io.StringIO()) == 0
    summary, *records = (msgspec.json.decode(line) for line in out.getvalue().splitlines())
    assert summary["adopted"] == {"aider": 1}
    assert len(records) == 1
    assert records[0]["sessionKey"] == f"agent:main:aider:{history_thread_id(str(path))}"
    assert [(e["kind"], e.get("payload")) for e in records[0]["events"]] == [
        ("human_direct_message", {"turns": 3})]


@pytest.mark.parametrize("length", [(1 << 20) + 40_000, 3 << 20])
def test_a_reply_line_longer_than_the_scan_cap_does_not_stop_the_history(
        gateway: Gateway, tmp_path: Path, length: int) -> None:
    """Review finding: a reply line over the 1 MiB cap stalled every later scan (no
    complete block in the window), so no typed turn after it ever counted."""
    path = _repo(tmp_path)
    _adopted(gateway, path)
    with path.open("a", encoding="utf-8") as file:
        file.write("\nreply " + "z" * length + "\n\n")
    type_turn(str(path), "", "typed after the long line")
    AiderChatHistory(path).append(Reply("ok"))
    events: list[object] = []
    for _ in range(8):  # each scan reads at most the cap: a few to get past the line
        events += gateway.scan_upstream()
    assert [e.kind for e in events] == ["human_direct_message"]  # type: ignore[attr-defined]


def test_a_block_longer_than_the_window_is_skipped_a_header_waited_for() -> None:
    from actors.upstream.aider.classify import AiderCursor, past_long_line

    cursor = AiderCursor(offset=10)
    typed = past_long_line(b"#### " + b"x" * 100, cursor)  # a person's line: oversized
    assert typed == AiderCursor(offset=115, in_line=True, skipping=True, last="user")
    assert past_long_line(b"# aider chat started at", cursor) is None
    skipped = past_long_line(b"z" * 100, cursor)
    assert skipped is not None
    assert (skipped.offset, skipped.in_line, skipped.skipping) == (110, True, False)
    assert past_long_line(b"zz\nzzz", cursor) == AiderCursor(offset=13, last="reply")


def _scan_all(gateway: Gateway) -> list[object]:
    events: list[object] = []
    for _ in range(12):  # each scan reads at most the cap: a few to get past a long block
        events += gateway.scan_upstream()
    return events


@pytest.mark.parametrize("text", ["t" * (2 << 20), "\n".join(["line " * 40] * 14_000),
                                  "\n".join(["u" * 700_000] * 4)],
                         ids=["one-line", "many-lines", "lines-over-half-the-cap"])
def test_a_typed_block_longer_than_the_scan_cap_is_skipped_once_and_later_turns_count(
        gateway: Gateway, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        text: str) -> None:
    """Review findings: a typed line over the 1 MiB cap stalled every later notice of
    the history, and a longer multi-line prompt counted once per 1 MiB window."""
    path = _repo(tmp_path)
    _adopted(gateway, path)
    type_turn(str(path), "", text)
    AiderChatHistory(path).append(Reply("ok"))
    assert _scan_all(gateway) == []  # oversized_block: counted neither once nor per window
    type_turn(str(path), "", "typed after the long prompt")
    AiderChatHistory(path).append(Reply("ok"))
    assert [e.kind for e in _scan_all(gateway)] == [  # type: ignore[attr-defined]
        "human_direct_message"]
    assert cli.main(["classify", "--source", "aider", str(path)]) == 0
    rows = [msgspec.json.decode(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["reason"] for r in rows if r["kind"] == "user"] == [
        "typed", "oversized_block", "typed"]  # ssa classify agrees with the scans


@pytest.mark.parametrize("program", [False, True])
@pytest.mark.parametrize("one_line", [False, True])
def test_a_session_begun_further_back_than_the_tail_is_still_known(
        gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        program: bool, one_line: bool) -> None:
    """Review finding: with the last session header more than ``TAIL_BYTES`` before the
    end at adoption, every later typed block was ``no_session`` (dropped)."""
    from actors.upstream.aider import reading as aider_reading

    monkeypatch.setattr(aider_reading, "TAIL_BYTES", 64 << 10)
    monkeypatch.setattr(aider_reading, "SEARCH_PIECE", 4 << 10)
    repo = tmp_path / "app"
    repo.mkdir()
    path = repo / HISTORY
    line = "/usr/local/bin/aider --model openai/m" + (" --message hi" if program else "")
    AiderChatHistory(path, command_line=line).append(Typed("first prompt"), Reply("ok"))
    with path.open("a", encoding="utf-8") as file:  # 200 KiB of reply after the header
        file.write("\n" + ("z" * 200_000 if one_line else ("reply line\n" * 20_000)) + "\n\n")
    thread = history_thread_id(str(path))
    key = f"agent:main:aider:{thread}"
    link = gateway.adopt(key, source="aider", path=path)
    assert link is not None
    assert link.marker["cursor"]["session"]["program"] is program  # its command line was read
    assert gateway.watch(WATCHER, key)
    assert gateway.scan_upstream() == []
    type_turn(str(path), "", "typed after a long session")
    AiderChatHistory(path).append(Reply("ok"))
    expected = [] if program else ["human_direct_message"]  # a --message session: never
    assert [e.kind for e in gateway.scan_upstream()] == expected


def _settle(path: Path, age_s: float) -> None:
    """Make ``path`` look last written ``age_s`` seconds ago."""
    when = path.stat().st_mtime - age_s
    os.utime(path, (when, when))


def test_a_block_ending_on_a_page_with_nothing_after_it_counts_once_the_file_settled(
        open_gateway: Callable[..., Gateway], tmp_path: Path, clock: ManualClock) -> None:
    """Review finding: a typed block ending exactly on a 4096-byte boundary waited for a
    next line that may never come; with nothing more written it was never reported. It
    waits only while a write may be in flight (the file changed under
    ``WRITE_SETTLE_MS`` ago), and the scan asks to be run again (``recheck``)."""
    wakes = Wakes()
    gateway = open_gateway(on_wake=wakes)
    path = _repo(tmp_path)
    _adopted(gateway, path)
    size = path.stat().st_size
    block = "\n#### a prompt ending on a page  \n"
    pad = PAGE_BYTES * 2 - size - len(block) - len("\n\n\n")
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\n" + "r" * pad + "\n\n")  # a reply, as ai_output writes it
    _settle(path, 1.0)
    assert gateway.scan_upstream() == []  # a reply: nothing counted
    with path.open("a", encoding="utf-8") as handle:
        handle.write(block)
    assert path.stat().st_size == PAGE_BYTES * 2
    _settle(path, -5.0)  # just written (a little ahead, so the scan sees it in flight)
    assert gateway.scan_upstream() == []  # the rest of a write may follow
    assert gateway._upstream.tick() == 0  # the recheck is owed, not yet due
    _settle(path, 6.0)  # nothing more came
    clock.advance(SETTLE_MS)
    assert gateway._upstream.tick() == 1  # scanned again, though the file never changed
    assert wakes.wait_for(1)
    assert len(gateway.pending_notices(WATCHER)) == 1
    assert gateway.scan_upstream() == []  # counted once


def test_the_kits_lines_are_the_bytes_append_writes(tmp_path: Path) -> None:
    """Review finding (kit): ``lines()`` of a fresh builder left out the session header
    that ``append()`` writes first."""
    history = AiderChatHistory(tmp_path / HISTORY)
    expected = history.lines(Typed("a"), Reply("b"))
    history.append(Typed("a"), Reply("b"))
    assert (tmp_path / HISTORY).read_bytes() == expected
    assert history.lines(Typed("c")) == b"\n#### c  \n"  # the session goes on
