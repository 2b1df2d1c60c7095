"""Issue 32 item 1: copies recognised from the file itself, wherever the original is.

A conversation that goes on in a new session file (Claude Desktop reopening
or forking it, ``claude --resume ID --fork-session`` in another folder, a
fork whose parent was deleted) carries the earlier session's rows. Each case
here is scripted with the test kit in the tool's shape, with the original in
another project folder or deleted, and measured like the harness does:
every copy is not typed (precision), every prompt typed in the new session is
(recall).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import apsw
import pytest

from actors.testing import (
    ClaudeCodeTranscript,
    CodexRollout,
    OpenCodeTranscript,
    PiSession,
    QwenSession,
    Reply,
    Typed,
)
from actors.upstream.classify import classify_units
from actors.upstream.claude.copyblock import CopiedBlock, copy_boundary
from actors.upstream.codex.copies import fork_replay, replay_of
from actors.upstream.common import NO_OWN_TEXTS
from actors.upstream.opencode.store import classify_db_session
from actors.upstream.qwen import classify as q
from actors.upstream.scan import line_classifier, scan_jsonl

OLD = "11111111-aaaa-4aaa-8aaa-000000000001"
NEW = "22222222-bbbb-4bbb-8bbb-000000000002"
NEWER = "33333333-cccc-4ccc-8ccc-000000000003"


def _figures(path: Path, source: str, own: set[str]) -> tuple[int, int, int]:
    """(TP, FP, FN) of ``ssa classify``'s decisions on ``path`` against the prompts typed there."""
    lines = path.read_bytes().splitlines()
    typed: list[str] = []
    for unit in classify_units(source, str(path)):
        if unit["human"]:
            typed.append(_text(json.loads(lines[unit["line"]])))
    tp = sum(1 for text in typed if text in own)
    return tp, len(typed) - tp, len(own - set(typed))


def _text(row: dict[str, Any]) -> str:
    payload = row.get("payload")
    if isinstance(payload, dict):  # a Codex rollout line
        item = payload.get("item")
        if isinstance(item, dict):
            return "".join(str(b.get("text", "")) for b in item.get("content", []))
        return str(payload.get("message", ""))
    message = row.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    parts = message.get("parts") if isinstance(message, dict) else None
    if isinstance(parts, list):
        return "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))
    return ""


def _folder(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / "projects" / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _earlier(tmp_path: Path, **options: object) -> ClaudeCodeTranscript:
    """A session in the main checkout's folder: two prompts, each answered."""
    earlier = ClaudeCodeTranscript(_folder(tmp_path, "-work") / f"{OLD}.jsonl", **options)  # type: ignore[arg-type]
    earlier.append(Typed("typed in the earlier session"), Reply("one"),
                   Typed("typed again earlier"), Reply("two"))
    return earlier


def _worktree(tmp_path: Path) -> Path:
    return _folder(tmp_path, "-work--claude-worktrees-brave-fox")


# --- Claude Desktop --------------------------------------------------------------------------

DESKTOP = {"entrypoint": "claude-desktop", "prompt_source": "sdk", "queue_operations": True}


@pytest.mark.parametrize("original", ["elsewhere", "deleted"])
def test_a_claude_desktop_continued_session_counts_only_its_own_prompts(
        tmp_path: Path, original: str) -> None:
    """Desktop continues a conversation in a new file in another worktree's folder: the
    prompt's queue-operation rows first, the copies (earlier ``sessionId`` kept), the prompt."""
    earlier = _earlier(tmp_path, **DESKTOP)
    later = ClaudeCodeTranscript(_worktree(tmp_path) / f"{NEW}.jsonl", **DESKTOP)  # type: ignore[arg-type]
    later.desktop_continuation(earlier.path, "typed in the continued session")
    later.append(Reply("three"), Typed("typed once more"), Reply("four"))
    if original == "deleted":
        earlier.path.unlink()
    assert _figures(later.path, "claude", {"typed in the continued session",
                                           "typed once more"}) == (2, 0, 0)
    reasons = [u["reason"] for u in classify_units("claude", str(later.path))
               if u["reason"] not in ("not_user",)]
    assert reasons == ["copied_row", "copied_row", "typed", "typed"]


def test_desktop_copies_written_before_the_queue_operation_are_copies(tmp_path: Path) -> None:
    """The other order: the copies first, then the prompt with its queue-operation rows."""
    earlier = _earlier(tmp_path, **DESKTOP)
    later = ClaudeCodeTranscript(_worktree(tmp_path) / f"{NEW}.jsonl", **DESKTOP)  # type: ignore[arg-type]
    later.copy_of(earlier.path, keep_session_ids=True)
    later.append(Typed("typed in the continued session"), Reply("three"))
    earlier.path.unlink()
    assert _figures(later.path, "claude", {"typed in the continued session"}) == (1, 0, 0)


def test_a_continuation_of_a_continuation(tmp_path: Path) -> None:
    """Reopened twice (anthropics/claude-code#93859: one file per reopen, each a superset)."""
    earlier = _earlier(tmp_path, **DESKTOP)
    second = ClaudeCodeTranscript(_worktree(tmp_path) / f"{NEW}.jsonl", **DESKTOP)  # type: ignore[arg-type]
    second.desktop_continuation(earlier.path, "typed in the second file")
    second.append(Reply("three"))
    third = ClaudeCodeTranscript(_worktree(tmp_path) / f"{NEWER}.jsonl", **DESKTOP)  # type: ignore[arg-type]
    third.desktop_continuation(second.path, "typed in the third file")
    earlier.path.unlink()
    second.path.unlink()
    assert _figures(third.path, "claude", {"typed in the third file"}) == (1, 0, 0)


def test_a_desktop_continuation_counts_one_turn_in_each_monitor_scan(tmp_path: Path) -> None:
    """``ssa watch`` scans the new file as it grows: the copies never count, each prompt once."""
    earlier = _earlier(tmp_path, **DESKTOP)
    later = ClaudeCodeTranscript(_worktree(tmp_path) / f"{NEW}.jsonl", **DESKTOP)  # type: ignore[arg-type]
    later.desktop_continuation(earlier.path, "typed in the continued session")
    earlier.path.unlink()
    path = str(later.path)
    marker = {"offset": 0, "inode": later.path.stat().st_ino, "epoch": 0, "check": ""}
    first = scan_jsonl(path, marker, classify=line_classifier("claude", path), cap=1 << 20,
                       own_texts=NO_OWN_TEXTS)
    assert (first.kind, first.human_turns) == ("activity", 1)
    later.append(Reply("three"), Typed("typed once more"))
    assert first.next_marker is not None
    second = scan_jsonl(path, first.next_marker, classify=line_classifier("claude", path),
                        cap=1 << 20, own_texts=NO_OWN_TEXTS)
    assert (second.kind, second.human_turns) == ("activity", 1)


# --- Claude Code 2.1.328: --resume ID --fork-session, --continue --fork-session ---------------


@pytest.mark.parametrize("original", ["elsewhere", "deleted"])
def test_a_fork_session_copy_whose_original_is_elsewhere_or_gone(tmp_path: Path,
                                                                 original: str) -> None:
    """2.1.328 rewrites ``sessionId`` on the copies; the copied replies name the earlier
    session in ``requestSessionId``: the prompts made before the newest of them are copies."""
    cli = {"entrypoint": "cli", "prompt_source": "typed"}
    earlier = _earlier(tmp_path, **cli)
    later = ClaudeCodeTranscript(_worktree(tmp_path) / f"{NEW}.jsonl", **cli)  # type: ignore[arg-type]
    later.copy_of(earlier.path)
    later.append(Typed("typed after the fork"), Reply("three"))
    if original == "deleted":
        earlier.path.unlink()
    assert _figures(later.path, "claude", {"typed after the fork"}) == (1, 0, 0)


def test_a_copy_without_a_marked_row_still_needs_its_original(tmp_path: Path) -> None:
    """The limit: a 2.1.328 copy of one unanswered prompt names no earlier session."""
    earlier = ClaudeCodeTranscript(_folder(tmp_path, "-work") / f"{OLD}.jsonl")
    earlier.append(Typed("typed in the earlier session"))
    later = ClaudeCodeTranscript(_worktree(tmp_path) / f"{NEW}.jsonl")
    later.copy_of(earlier.path)
    earlier.path.unlink()
    assert copy_boundary(str(later.path)) is None


# --- sessions that are not continuations keep every prompt -----------------------------------


def test_another_sessions_row_later_in_a_file_moves_no_boundary(tmp_path: Path) -> None:
    """A row naming another session after the file's own start (queue-operation) is no copy
    block: the prompts typed before it keep counting."""
    session = ClaudeCodeTranscript(_folder(tmp_path, "-work") / f"{NEW}.jsonl", **DESKTOP)  # type: ignore[arg-type]
    session.append(Typed("one"), Reply("a"), Typed("two"), Reply("b"))
    stray = ClaudeCodeTranscript(session.path, session_id=OLD, **DESKTOP)  # type: ignore[arg-type]
    stray._file.catch_up(10**13)
    stray.append(Reply("from elsewhere"))
    assert _figures(session.path, "claude", {"one", "two"}) == (2, 0, 0)


def test_an_ordinary_session_has_no_copied_block(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Decided at the session's own first reply: later scans read nothing more for it."""
    session = ClaudeCodeTranscript(_folder(tmp_path, "-work") / f"{NEW}.jsonl",
                                   entrypoint="cli", prompt_source="typed")
    session.append(Typed("one"), Reply("a"), Typed("two"))
    assert copy_boundary(str(session.path)) is None
    assert _figures(session.path, "claude", {"one", "two"}) == (2, 0, 0)
    fed: list[bytes] = []
    real_feed = CopiedBlock.feed

    def spy(self: CopiedBlock, line: bytes) -> None:
        fed.append(line)
        real_feed(self, line)

    monkeypatch.setattr(CopiedBlock, "feed", spy)
    session.append(Reply("b"), Typed("three"))
    assert copy_boundary(str(session.path)) is None
    assert fed == []


def test_the_rows_claude_code_2_1_328_wrote_resuming_from_another_folder() -> None:
    """The real rows (reduced to the fields the rule reads) of ``claude -p PROMPT --resume ID
    --fork-session`` run in another folder than the session's, 2.1.328 against the harness's
    fake model: the new file in the other folder's project directory holds ``mode``,
    ``atis-latch``, the new prompt's ``queue-operation`` rows, the copies (``sessionId``
    rewritten, the copied reply naming the earlier session in ``requestSessionId``), then
    the new prompt. (``--resume ID`` without ``--fork-session`` appended to the earlier
    session's own file, in its own folder.)"""
    old, new = "ca9a5f67-d4c7-40f2-b029-d2cf77b3e98e", "fb0847cb-3471-4543-a77e-f0be31cc8e5e"

    def row(kind: str, at: str | None, **extra: object) -> bytes:
        fields: dict[str, object] = {"type": kind, "sessionId": new, **extra}
        if at is not None:
            fields["timestamp"] = f"2026-12-06T23:44:{at}Z"
        return json.dumps(fields).encode()

    block = CopiedBlock(new)
    for line in (row("mode", None), row("atis-latch", None),
                 row("queue-operation", "58.638", operation="enqueue"),
                 row("queue-operation", "58.639", operation="dequeue"),
                 row("user", "56.382", uuid="b6b110d3"),
                 row("attachment", "56.380", uuid="9bceed21"),
                 row("assistant", "56.496", uuid="b9dfc647", requestSessionId=old),
                 row("attachment", "56.598", uuid="dfebbb65"),
                 row("user", "58.682", uuid="7ae392d8")):
        block.feed(line)
    boundary = block.boundary()
    assert boundary is not None
    assert _at("56.382") <= boundary < _at("58.682")


def _at(second: str) -> int:
    return 1796600640000 + round(float(second) * 1000)


# --- the copied block, line by line ---------------------------------------------------------


def _row(kind: str, at: str, session: str, **extra: object) -> bytes:
    return json.dumps({"type": kind, "timestamp": f"2026-01-01T00:00:{at}.000Z",
                       "sessionId": session, **extra}).encode()


def _boundary(*lines: bytes) -> int | None:
    block = CopiedBlock(NEW)
    for line in lines:
        block.feed(line)
    return block.boundary()


def _ms(second: str) -> int:
    return 1767225600000 + round(float(second) * 1000)


@pytest.mark.parametrize(("lines", "expected"), [
    # Desktop: queue-operation now, copies with the earlier id, then the prompt.
    ((_row("queue-operation", "50", NEW), _row("user", "10", OLD, uuid="a"),
      _row("assistant", "11", OLD, uuid="b"), _row("user", "51", NEW, uuid="c")), "49.999"),
    # Copies first, then the file's own id.
    ((_row("user", "10", OLD, uuid="a"), _row("assistant", "11", OLD, uuid="b"),
      _row("user", "51", NEW, uuid="c"), _row("assistant", "59", OLD, uuid="d")), "11"),
    # Desktop: an unanswered copied prompt after the last copied reply is a copy too.
    ((_row("queue-operation", "50", NEW), _row("user", "10", OLD, uuid="a"),
      _row("assistant", "11", OLD, uuid="b"), _row("user", "12", OLD, uuid="c"),
      _row("user", "51", NEW, uuid="d")), "49.999"),
    # 2.1.328: rewritten ids, the copied reply names the earlier session.
    ((_row("mode", "00", NEW), _row("user", "10", NEW, uuid="a"),
      _row("assistant", "11", NEW, uuid="b", requestSessionId=OLD),
      _row("user", "51", NEW, uuid="c")), "11"),
    # /branch: forkedFrom on every copy.
    ((_row("user", "10", NEW, uuid="a", forkedFrom={"sessionId": OLD, "messageUuid": "a"}),
      _row("user", "51", NEW, uuid="c")), "10"),
    # The session's own replies name it: no copy.
    ((_row("user", "10", NEW, uuid="a"), _row("assistant", "11", NEW, uuid="b",
                                               requestSessionId=NEW)), None),
    # Another session's row after the own start moves nothing.
    ((_row("queue-operation", "05", NEW), _row("user", "06", NEW, uuid="a"),
      _row("assistant", "40", OLD, uuid="b")), None),
    # Lines that are not rows, or rows without a time, prove nothing.
    ((b"not json", b"[]", json.dumps({"type": "user", "sessionId": OLD}).encode()), None),
])
def test_copied_block(lines: tuple[bytes, ...], expected: str | None) -> None:
    assert _boundary(*lines) == (None if expected is None else _ms(expected))


def test_copy_boundary_reads_only_what_was_written_since(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """Each transcript's head is read once: a later call reads only the new lines, and none
    once the file's own start and a later own row are known (nothing can change then)."""
    cli = {"entrypoint": "cli", "prompt_source": "typed"}
    fork = ClaudeCodeTranscript(_worktree(tmp_path) / f"{NEW}.jsonl", **cli)  # type: ignore[arg-type]
    fork.copy_of(_earlier(tmp_path, **cli).path)
    desktop = ClaudeCodeTranscript(_worktree(tmp_path) / f"{NEWER}.jsonl", **DESKTOP)  # type: ignore[arg-type]
    desktop.desktop_continuation(fork.path, "typed in the continued session")
    before = {str(t.path): copy_boundary(str(t.path)) for t in (fork, desktop)}
    assert None not in before.values()
    fed: list[bytes] = []
    real_feed = CopiedBlock.feed

    def spy(self: CopiedBlock, line: bytes) -> None:
        fed.append(line)
        real_feed(self, line)

    monkeypatch.setattr(CopiedBlock, "feed", spy)
    written = fork.append(Typed("typed after the fork"), Reply("three"))
    assert copy_boundary(str(fork.path)) == before[str(fork.path)]
    assert len(fed) == written  # the new lines only
    fed.clear()
    desktop.append(Reply("three"), Typed("typed once more"))
    assert copy_boundary(str(desktop.path)) == before[str(desktop.path)]
    assert fed == []  # decided for good: not read again


def test_copy_boundary_of_a_missing_or_odd_file(tmp_path: Path) -> None:
    assert copy_boundary(str(tmp_path / "missing.jsonl")) is None
    fifo = tmp_path / f"{NEW}.jsonl"
    os.mkfifo(fifo)
    assert copy_boundary(str(fifo)) is None


# --- the other sources: a fork's evidence is in the fork itself --------------------------------


def test_a_pi_fork_whose_parent_is_deleted(tmp_path: Path) -> None:
    """``parentSession`` and the header's time decide; the parent file is never read."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    source = PiSession(tmp_path / "a" / "parent.jsonl")
    source.append(Typed("typed before the fork"), Reply("one"))
    fork = source.fork(tmp_path / "b" / "fork.jsonl")
    fork.append(Typed("typed in the fork"), Reply("two"))
    source.path.unlink()
    assert _figures(fork.path, "pi", {"typed in the fork"}) == (1, 0, 0)


def test_a_qwen_branch_whose_source_is_deleted(tmp_path: Path) -> None:
    """``forkedFrom`` on every copied record decides; the source file is never read."""
    source = QwenSession(tmp_path / "a.jsonl")
    source.append(Typed("typed before the branch"), Reply("ok"))
    branch = source.branch(tmp_path / "b.jsonl")
    branch.append(Typed("typed in the branch"))
    source.path.unlink()
    scan = q.read_qwen_rows(branch.path.read_bytes())
    assert [r.text for r in scan.rows if r.typed] == ["typed in the branch"]


def test_an_opencode_fork_whose_parent_session_is_deleted(tmp_path: Path) -> None:
    """The fork's title and time decide; the parent's rows are never read."""
    parent = OpenCodeTranscript(tmp_path / "opencode.db", title="Hello")
    parent.append(Typed("typed one"), Reply("one"))
    fork = parent.fork()
    fork.append(Typed("typed in the fork"), Reply("two"))
    conn = apsw.Connection(str(fork.path))
    try:
        for table in ("part", "message", "session"):
            column = "id" if table == "session" else "session_id"
            conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (parent.session_id,))
        assert not conn.execute("SELECT 1 FROM message WHERE session_id = ?",
                                (parent.session_id,)).fetchall()
    finally:
        conn.close()
    decided = [(u.human, u.reason, u.text) for _, u in
               classify_db_session(fork.path, fork.session_id)]
    assert [d for d in decided if d[1] != "not_user"] == [
        (False, "copied_row", None), (True, "typed", "typed in the fork")]


def test_a_codex_fork_whose_parent_is_deleted(tmp_path: Path) -> None:
    """Codex 0.169.0 forks a paginated thread without copying its rows (``forked_from_id``;
    the history is read from the parent): only the fork's own prompt is in its file."""
    (tmp_path / "a").mkdir()
    parent = CodexRollout(tmp_path / "a" / "rollout-parent.jsonl", paginated=True)
    parent.append(Typed("typed before the fork"), Reply("one"))
    fork = parent.fork(tmp_path / "a" / "rollout-fork.jsonl")
    fork.append(Typed("typed in the fork"), Reply("two"))
    parent.path.unlink()
    head = json.loads(fork.path.read_bytes().splitlines()[0])
    assert head["payload"]["forked_from_id"] == parent.thread_id
    assert fork_replay(str(fork.path)) is None
    assert _figures(fork.path, "codex", {"typed in the fork"}) == (1, 0, 0)


def test_a_codex_fork_of_a_legacy_thread_whose_parent_is_deleted(tmp_path: Path) -> None:
    """Forking a legacy thread replays its rows, re-stamped to the fork: not typed again."""
    parent = CodexRollout(tmp_path / "rollout-parent.jsonl")
    parent.append(Typed("typed before the fork"), Reply("one"), Typed("again"), Reply("two"))
    fork = parent.fork(tmp_path / "rollout-fork.jsonl")
    assert _figures(fork.path, "codex", set()) == (0, 0, 0)  # linked now: the copies only
    fork.append(Typed("typed in the fork"), Reply("three"))
    parent.path.unlink()
    assert _figures(fork.path, "codex", {"typed in the fork"}) == (1, 0, 0)


def test_a_real_legacy_thread_forked(real_fixtures: Path, tmp_path: Path) -> None:
    """The real 0.57.0 rollout forked as 0.169.0 forks it (checked with the real binary: its
    four prompts replayed, then the fork's own): only the fork's own prompt is typed."""
    source = (real_fixtures / "codex"
              / "codex-0.57.0-tui-agentsmd-aborted-customprompt-excerpt.jsonl")
    thread = json.loads(source.read_bytes().splitlines()[0])["payload"]["id"]
    parent = CodexRollout(tmp_path / f"rollout-{thread}.jsonl", thread_id=thread)
    parent.path.write_bytes(source.read_bytes())
    fork = parent.fork(tmp_path / "rollout-fork.jsonl")
    fork.append(Typed("typed in the fork"))
    parent.path.unlink()
    assert _figures(fork.path, "codex", {"typed in the fork"}) == (1, 0, 0)
    reasons = [u["reason"] for u in classify_units("codex", str(fork.path))]
    assert reasons.count("copied_row") == 4


@pytest.mark.parametrize(("lines", "expected"), [
    # not a fork, a paginated fork, a fork that replays nothing, a broken first line
    ([b'{"type":"session_meta","timestamp":"2026-01-01T00:00:00Z","payload":{"id":"a"}}'], None),
    ([b'{"type":"session_meta","timestamp":"2026-01-01T00:00:00Z","payload":{"id":"a",'
      b'"forked_from_id":"p","history_mode":"paginated"}}'], None),
    ([b'{"type":"session_meta","timestamp":"2026-01-01T00:00:00Z","payload":{"id":"a",'
      b'"forked_from_id":"p"}}', b'{"type":"event_msg","payload":{"type":"task_started"}}'],
     None),
    ([b"not json"], None),
    ([], None),
])
def test_replay_of_what_is_not_a_replaying_fork(lines: list[bytes], expected: None) -> None:
    assert replay_of(lines) is expected


def test_a_replay_with_no_own_line_yet_is_the_burst() -> None:
    meta = (b'{"type":"session_meta","timestamp":"2026-01-01T00:00:00Z","payload":{"id":"a",'
            b'"forked_from_id":"p","history_mode":"legacy"}}')
    parent = b'{"type":"session_meta","timestamp":"2026-01-01T00:00:00Z","payload":{"id":"p"}}'
    replay = replay_of([meta, parent])
    assert replay is not None
    assert replay.own_start is None
    forked = replay.forked_at
    assert replay.is_copy(forked)
    assert replay.is_copy(forked + 1000)
    assert not replay.is_copy(forked + 1001)
    assert not replay.is_copy(None)


# --- real transcripts ------------------------------------------------------------------------


def _real_claude(real_fixtures: Path) -> list[Path]:
    return sorted((real_fixtures / "claude-code").glob("*.jsonl"))


def _session_id(path: Path) -> str:
    for line in path.read_bytes().splitlines():
        session = json.loads(line).get("sessionId")
        if isinstance(session, str):
            return session
    raise AssertionError(f"no sessionId in {path}")


def test_real_transcripts_under_their_own_name_lose_no_prompt(real_fixtures: Path,
                                                              tmp_path: Path) -> None:
    """Each real transcript kept under its session id's name (as Claude Code names it) is
    decided exactly as under its fixture name: an ordinary session has no copied block."""
    for fixture in _real_claude(real_fixtures):
        named = tmp_path / f"{_session_id(fixture)}.jsonl"
        named.write_bytes(fixture.read_bytes())
        assert copy_boundary(str(named)) is None, fixture.name
        before = [u["reason"] for u in classify_units("claude", str(fixture))]
        assert [u["reason"] for u in classify_units("claude", str(named))] == before
        named.unlink()


def test_a_renamed_transcript_has_no_copied_block(tmp_path: Path) -> None:
    """An export kept under another name (``full.jsonl``): its own id is unknown, so its rows,
    all naming a session that is not its name, are not taken for copies."""
    session = ClaudeCodeTranscript(tmp_path / "full.jsonl", session_id=OLD,
                                   entrypoint="cli", prompt_source="typed")
    session.append(Typed("one"), Reply("a"))
    assert copy_boundary(str(session.path)) is None
    assert _figures(session.path, "claude", {"one"}) == (1, 0, 0)


def test_real_rows_copied_by_a_desktop_continuation_are_copies(real_fixtures: Path,
                                                               tmp_path: Path) -> None:
    """A real transcript's rows, copied as Desktop copies them into a file in another folder
    (their ``sessionId`` kept): none counts again; the new prompt does."""
    for index, fixture in enumerate(_real_claude(real_fixtures)):
        later = ClaudeCodeTranscript(_worktree(tmp_path) / f"{NEW[:-2]}{index:02d}.jsonl",
                                     **DESKTOP)  # type: ignore[arg-type]
        later.desktop_continuation(fixture, f"typed after {fixture.name}")
        assert _figures(later.path, "claude", {f"typed after {fixture.name}"}) == (1, 0, 0), \
            fixture.name
