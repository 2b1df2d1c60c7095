"""Lines longer than the bound (``LONG_LINE_MAX_BYTES`` / ``long_line_max_bytes``) are never typed.

Adversarial finding 06: one 800 MB line in a worker's transcript made every
``ssa hook`` run (a short-lived process that cannot keep a pending line between
runs) spend its whole budget reducing the line from its start, so the turn
typed after it was never reported. A line longer than the bound is now decided
``line_too_long`` once a byte search shows its length, and only its end is
searched for. These tests use small bounds (the scan functions take them as
arguments) instead of writing gigabytes; one gateway test writes a line just
past the default 64 MiB bound.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from actors import Gateway, GatewayConfig
from actors.errors import InvalidArgument
from actors.upstream import files as _files
from actors.upstream import scanning as _scanning
from actors.upstream.common import NO_OWN_TEXTS
from actors.upstream.files import check_of, find_newline
from actors.upstream.jsonl import classify_lines
from actors.upstream.longline import LineReducer
from actors.upstream.scan import LONG_LINE_MAX_BYTES, PendingLine, ScanResult, line_classifier
from actors.upstream.scanning import scan_jsonl
from tests._upstream_rows import claude_assistant, claude_user
from tests.conftest import WATCHER

CAP = 4_096
BOUND = 16_384
KEY = "agent:main:adopted:claude"


def _scan(path: Path, marker: dict[str, Any], pending: PendingLine | None = None,
          **kwargs: int) -> ScanResult:
    kwargs.setdefault("cap", CAP)
    kwargs.setdefault("max_line", BOUND)
    return scan_jsonl(str(path), marker, classify=line_classifier("claude", str(path)),
                      own_texts=NO_OWN_TEXTS, pending=pending, **kwargs)


def _start(path: Path) -> dict[str, Any]:
    return {"offset": 0, "inode": path.stat().st_ino, "epoch": 0, "check": ""}


def _typed_row_of_length(length: int) -> bytes:
    """A typed Claude Code row exactly ``length`` bytes long (its newline not counted)."""
    bare = len(claude_user("")) - 1
    row = claude_user("p" * (length - bare))
    assert len(row) - 1 == length
    return row


@pytest.fixture
def reductions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Bytes fed to every :class:`LineReducer` the scans make (a spy)."""
    fed: list[int] = []

    class Spy(LineReducer):
        def feed(self, data: bytes) -> None:
            fed.append(len(data))
            super().feed(data)

    monkeypatch.setattr(_scanning, "LineReducer", Spy)
    return fed


def test_a_typed_row_longer_than_the_bound_is_passed_in_one_fresh_scan(
    tmp_path: Path, reductions: list[int],
) -> None:
    """Even a row shaped as a typed prompt is not typed past the bound; a scan with no
    pending line (a new ``ssa hook`` process) passes it at once, unparsed."""
    path = tmp_path / "t.jsonl"
    long_row = claude_user("p" * 200_000)
    path.write_bytes(long_row + claude_user("typed after the long line"))
    first = _scan(path, _start(path))
    assert (first.kind, first.reason, first.human_turns) == ("activity", "line_too_long", 0)
    assert first.next_marker is not None
    assert first.next_marker["offset"] == len(long_row)
    assert first.next_marker["check"] == check_of(long_row[-32:])
    assert first.more
    assert first.pending is None
    assert reductions == []  # never reduced: only its end was searched for
    second = _scan(path, first.next_marker)
    assert (second.kind, second.human_turns) == ("activity", 1)
    assert second.span == (len(long_row), path.stat().st_size)


def test_a_line_of_exactly_the_bound_is_still_classified_and_one_byte_more_is_not(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_typed_row_of_length(BOUND))
    pending: PendingLine | None = None
    marker = _start(path)
    for _ in range(20):
        result = _scan(path, marker, pending)
        pending = result.pending
        if result.kind == "activity":
            break
    assert (result.reason, result.human_turns) == ("scanned", 1)  # reduced and typed
    path.write_bytes(_typed_row_of_length(BOUND + 1))
    over = _scan(path, _start(path))
    assert (over.kind, over.reason, over.human_turns) == ("activity", "line_too_long", 0)


def test_the_search_for_the_end_goes_on_over_scans_without_reducing(
    tmp_path: Path, reductions: list[int],
) -> None:
    path = tmp_path / "t.jsonl"
    long_row = claude_assistant("a" * 100_000)
    path.write_bytes(long_row + claude_user("after"))
    marker, pending = _start(path), None
    results = []
    for _ in range(20):
        result = _scan(path, marker, pending, pass_bytes=10_000)
        results.append(result)
        pending = result.pending
        if result.kind == "activity":
            break
    assert [r.reason for r in results[:-1]] == ["line_too_long"] * (len(results) - 1)
    assert all(r.more and r.pending is not None and r.pending.reducer is None
               for r in results[:-1])
    # The first scan searched cap..bound+1+pass_bytes; each later one pass_bytes more.
    assert len(results) == 1 + -(-(len(long_row) - 1 - (BOUND + 1 + 10_000)) // 10_000)
    assert results[-1].next_marker is not None
    assert results[-1].next_marker["offset"] == len(long_row)
    assert reductions == []
    after = _scan(path, results[-1].next_marker)
    assert after.human_turns == 1


def test_a_line_that_grows_past_the_bound_while_written_is_passed_then_what_follows_counts(
    tmp_path: Path, reductions: list[int],
) -> None:
    path = tmp_path / "t.jsonl"
    long_row = claude_user("g" * 60_000)
    path.write_bytes(long_row[:8_000])  # longer than the cap, under the bound: reduced
    first = _scan(path, _start(path))
    assert first.reason == "long_line"
    assert first.pending is not None
    assert first.pending.reducer is not None
    pending: PendingLine | None = first.pending
    with path.open("ab") as handle:
        handle.write(long_row[8_000:40_000])  # past the bound, no newline yet
    for _ in range(20):
        result = _scan(path, _start(path), pending)
        pending = result.pending
        if result.reason == "line_too_long":
            break
    assert pending is not None
    assert pending.reducer is None
    fed = sum(reductions)
    for _ in range(3):  # its writer is still at it: it waits, no reading again
        waiting = _scan(path, _start(path), pending)
        assert (waiting.kind, waiting.reason, waiting.more) == ("no_news", "line_too_long", False)
        pending = waiting.pending
    with path.open("ab") as handle:
        handle.write(long_row[40_000:] + claude_user("typed after it"))
    done = _scan(path, _start(path), pending)
    assert (done.kind, done.reason) == ("activity", "line_too_long")
    assert done.next_marker is not None
    assert done.next_marker["offset"] == len(long_row)
    assert sum(reductions) == fed  # not fed to the reducer after the bound was known
    assert sum(reductions) <= BOUND
    assert _scan(path, done.next_marker).human_turns == 1


def test_a_long_line_ending_past_the_bound_in_one_read_is_not_typed(
    tmp_path: Path,
) -> None:
    """A reduced line whose end arrives in the piece that takes it past the bound."""
    path = tmp_path / "t.jsonl"
    long_row = _typed_row_of_length(BOUND + 2_000)
    path.write_bytes(long_row[:BOUND - 1_000])
    first = _scan(path, _start(path))
    assert first.pending is not None
    assert first.pending.reducer is not None
    pending: PendingLine | None = first.pending
    with path.open("ab") as handle:
        handle.write(long_row[BOUND - 1_000:] + claude_user("after"))
    for _ in range(20):
        result = _scan(path, _start(path), pending)
        pending = result.pending
        if result.kind == "activity":
            break
    assert result.human_turns == 1  # only "after"
    assert result.span is not None
    assert result.span[0] == len(long_row)


def test_a_line_rewritten_while_it_is_passed_is_read_again_from_the_marker(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    head = claude_user("before")
    path.write_bytes(head + claude_assistant("a" * 100_000)[:60_000])
    marker = {"offset": len(head), "inode": path.stat().st_ino, "epoch": 0,
              "check": check_of(head[-32:])}
    passing = _scan(path, marker)
    assert passing.reason == "line_too_long"
    assert passing.pending is not None
    with path.open("r+b") as handle:  # the unfinished line is replaced in place
        handle.seek(len(head))
        handle.write(claude_user("x" * 100))
        handle.truncate()
    for _ in range(3):
        result = _scan(path, marker, passing.pending)
        if result.kind == "activity":
            break
        passing = result
    assert (result.kind, result.human_turns) == ("activity", 1)


def test_find_newline_searches_chunk_by_chunk_and_checks_what_is_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_files, "SEARCH_CHUNK_BYTES", 7)
    path = tmp_path / "t"
    data = b"abcdefghijklmnopqrstuvwxyz" * 3 + b"\nrest"
    path.write_bytes(data)
    inode = path.stat().st_ino
    found = find_newline(str(path), 10, 1_000, inode=inode, check=check_of(data[:10]))
    assert (found.kind, found.at, found.size) == ("found", 78, len(data))
    assert found.tail == data[79 - 32:79]
    short = find_newline(str(path), 10, 50, inode=inode, check=None)
    assert (short.kind, short.at, short.tail) == ("none", 50, data[18:50])
    assert find_newline(str(path), 10, 90, inode=inode,
                        check=check_of(b"x" * 10)).kind == "rewritten"
    assert find_newline(str(path), 10, 90, inode=inode + 1, check=None).kind == "rewritten"
    assert find_newline(str(tmp_path / "gone"), 0, 9, inode=inode, check=None).kind == "missing"


def test_ssa_classify_says_line_too_long_like_the_scans(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_typed_row_of_length(BOUND) + _typed_row_of_length(BOUND + 1)
                     + claude_user("short"))
    entries = list(classify_lines(str(path), line_classifier("claude", str(path)),
                                  refusal=None, cap=CAP, max_line=BOUND))
    assert [(e["human"], e["reason"]) for e in entries][1:] == [
        (False, "line_too_long"), (True, "typed")]
    assert entries[0]["human"] is True


def test_the_bound_is_a_gateway_setting_with_the_documented_default() -> None:
    assert GatewayConfig().long_line_max_bytes == LONG_LINE_MAX_BYTES == 64 << 20
    with pytest.raises(InvalidArgument):
        GatewayConfig(long_line_max_bytes=0)


def test_each_fresh_gateway_like_a_hook_run_passes_a_line_over_the_bound_and_logs_once(
    open_gateway: Callable[..., Gateway], tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """Every ``ssa hook`` run opens a gateway of its own: no pending line survives it."""
    path = tmp_path / "projects" / "-work" / "ce24e94d.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(claude_user("already imported"))
    config = GatewayConfig(scan_cap_bytes=CAP, long_line_max_bytes=BOUND)
    first = open_gateway(config)
    assert first.adopt(KEY, source="claude", path=path) is not None
    assert first.watch(WATCHER, KEY)
    secret = "do not log this text"
    with path.open("ab") as handle:
        handle.write(claude_user(secret + "q" * 300_000) + claude_user("typed after it"))
    with caplog.at_level(logging.INFO, logger="actors"):
        events = open_gateway(config).scan_upstream()
    assert [e.kind for e in events] == ["human_direct_message"]
    assert (events[0].payload or {}).get("turns", 1) == 1
    assert caplog.text.count("decided not typed without reading it") == 1
    assert secret not in caplog.text
    assert open_gateway(config).scan_upstream() == []


def test_a_line_just_past_the_default_bound_is_never_reduced_by_a_fresh_gateway(
    open_gateway: Callable[..., Gateway], tmp_path: Path, reductions: list[int],
) -> None:
    """The default bound, at its real size (64 MiB and a few bytes on disk)."""
    path = tmp_path / "projects" / "-work" / "ce24e94d.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(claude_user("already imported"))
    gw = open_gateway()
    assert gw.adopt(KEY, source="claude", path=path) is not None
    assert gw.watch(WATCHER, KEY)
    with path.open("ab") as handle:
        head = b'{"type":"assistant","message":{"role":"assistant","content":"'
        handle.write(head)
        block = b"y" * (1 << 20)
        for _ in range(64):
            handle.write(block)
        handle.write(b'"}}\n')
        handle.write(claude_user("typed after the huge line"))
    assert os.path.getsize(path) > LONG_LINE_MAX_BYTES
    events = open_gateway().scan_upstream()
    assert [e.kind for e in events] == ["human_direct_message"]
    assert reductions == []  # without the bound, all 64 MiB went through the reducer
