"""Issue 22: rows a forked session copied from its parent, and Pi prompts a program sent.

* Pi 0.73.1 ``pi --fork FILE`` / ``/fork``: a new file whose header names
  ``parentSession`` and is stamped at the copy, then the parent's entries
  unchanged (:mod:`actors.upstream.pi.copies`).
* OpenCode 1.18.33 ``--fork``: a new session with every message copied under a
  new id and its original ``time.created`` (:mod:`actors.upstream.opencode.copies`).
* Pi prompts our extension marked with ``ssaInput`` (:mod:`actors.upstream.pi.inputs`).

Rows are built with the test kit in the shapes the real tools wrote under the
harness (tests/test_agents_pi_actions.py, tests/test_agents_opencode_actions.py).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from actors.testing import OpenCodeTranscript, PiSession, Reply, SlashCommand, Typed
from actors.upstream.classify import classify_units
from actors.upstream.common import NO_OWN_TEXTS
from actors.upstream.opencode.copies import fork_time as opencode_fork_time
from actors.upstream.opencode.copies import is_copy
from actors.upstream.opencode.reading import scan_opencode
from actors.upstream.opencode.store import classify_db_session, open_opencode_db, read_sequences
from actors.upstream.pi.classify import _classify_mapping, classify_pi_line
from actors.upstream.pi.copies import fork_time
from actors.upstream.pi.inputs import input_source_reason
from actors.upstream.scan import StoreHint, line_classifier, scan_jsonl


def _reasons(path: Path) -> list[tuple[bool, str]]:
    return [(u["human"], u["reason"]) for u in classify_units("pi", str(path))]


def _forked_pi(tmp_path: Path) -> tuple[PiSession, PiSession]:
    parent = PiSession(tmp_path / "parent.jsonl")
    parent.append(Typed("typed before the fork"), Reply("one"))
    fork = parent.fork(tmp_path / "fork.jsonl")
    fork.append(Typed("typed in the fork"), Reply("two"))
    return parent, fork


# --- Pi forks ------------------------------------------------------------------


def test_pi_fork_copies_are_copied_rows_and_the_forks_own_prompt_is_typed(tmp_path: Path
                                                                          ) -> None:
    parent, fork = _forked_pi(tmp_path)
    assert _reasons(parent.path) == [(False, "header"), (True, "typed"), (False, "assistant")]
    assert _reasons(fork.path) == [(False, "header"), (False, "copied_row"),
                                   (False, "assistant"), (True, "typed"), (False, "assistant")]
    header = json.loads(fork.path.read_bytes().splitlines()[0])
    assert header["parentSession"] == str(parent.path)


def test_pi_fork_counts_only_its_own_prompt_in_a_monitor_scan(tmp_path: Path) -> None:
    _, fork = _forked_pi(tmp_path)
    path = str(fork.path)
    result = scan_jsonl(path, {"offset": 0, "inode": fork.path.stat().st_ino, "epoch": 0,
                               "check": ""}, classify=line_classifier("pi", path),
                        cap=1 << 20, own_texts=NO_OWN_TEXTS)
    assert (result.kind, result.human_turns) == ("activity", 1)


def test_pi_without_the_path_keeps_the_line_decision(tmp_path: Path) -> None:
    """The bare line classifier cannot see the header: it decides the copy alone."""
    _, fork = _forked_pi(tmp_path)
    copy = fork.path.read_bytes().splitlines()[1]
    assert classify_pi_line(copy).human
    assert not line_classifier("pi", str(fork.path))(copy).human


def test_pi_new_session_with_a_parent_and_no_copies_counts_its_prompts(tmp_path: Path) -> None:
    """/new from a session (newSession({parentSession})) writes only the header."""
    session = PiSession(tmp_path / "new.jsonl", parent_session=str(tmp_path / "old.jsonl"))
    session.append(Typed("typed after /new"), Reply("ok"))
    assert _reasons(session.path) == [(False, "header"), (True, "typed"), (False, "assistant")]


def test_pi_old_prompts_without_parent_session_stay_typed(tmp_path: Path) -> None:
    """Conservative: a prompt older than its header proves nothing without parentSession."""
    times = itertools.chain([10_000], itertools.count(1_000, 1_000))
    session = PiSession(tmp_path / "s.jsonl", clock=lambda: next(times))
    session.append(Typed("typed"), Reply("r"))
    assert _reasons(session.path)[1] == (True, "typed")


@pytest.mark.parametrize(("header", "expected"), [
    ({"type": "session", "timestamp": "2026-01-01T00:00:01.000Z", "parentSession": "/p.jsonl"},
     1767225601000),
    ({"type": "session", "timestamp": "2026-01-01T00:00:01.000Z"}, None),
    ({"type": "session", "timestamp": "2026-01-01T00:00:01.000Z", "parentSession": ""}, None),
    ({"type": "session", "timestamp": "2026-01-01T00:00:01.000Z", "parentSession": 3}, None),
    ({"type": "session", "timestamp": "not a time", "parentSession": "/p.jsonl"}, None),
    ({"type": "message", "timestamp": "2026-01-01T00:00:01.000Z", "parentSession": "/p"},
     None),
])
def test_fork_time(header: dict[str, Any], expected: int | None) -> None:
    assert fork_time(json.dumps(header).encode()) == expected


@pytest.mark.parametrize("line", [b"", b"not json", b"[1]", b'{"type":"session"', b"\xff"])
def test_fork_time_of_a_bad_first_line_is_none(line: bytes) -> None:
    assert fork_time(line) is None


def test_an_unreadable_pi_file_proves_no_copy(tmp_path: Path) -> None:
    _, fork = _forked_pi(tmp_path)
    copy = fork.path.read_bytes().splitlines()[1]
    classify = line_classifier("pi", str(tmp_path / "gone.jsonl"))
    assert classify(copy).human


# --- Pi input sources (our extension's ssaInput) ---------------------------------


@pytest.mark.parametrize(("record", "reason"), [
    ({"v": 1, "source": "rpc", "ui": True}, "rpc_input"),
    ({"v": 1, "source": "extension", "ui": True}, "extension_input"),
    ({"v": 1, "source": "extension", "ui": False}, "extension_input"),
    ({"v": 1, "source": "interactive", "ui": False}, "headless_input"),
    ({"v": 1, "source": None, "ui": False}, "headless_input"),
    ({"v": 1, "source": "interactive", "ui": True}, None),
    ({"v": 1, "source": None, "ui": True}, None),
    ({"v": 1, "source": "something new", "ui": True}, None),
    ({"v": 2, "source": "rpc", "ui": False}, None),
    ({"source": "rpc"}, None),
    ("rpc", None),
    (None, None),
    ([1], None),
])
def test_input_source_reason(record: object, reason: str | None) -> None:
    assert input_source_reason(record) == reason


@pytest.mark.parametrize(("record", "human", "reason"), [
    ({"v": 1, "source": "rpc", "ui": True}, False, "rpc_input"),
    ({"v": 1, "source": "interactive", "ui": False}, False, "headless_input"),
    ({"v": 1, "source": "extension", "ui": True}, False, "extension_input"),
    ({"v": 1, "source": "interactive", "ui": True}, True, "typed"),
    (None, True, "typed"),
])
def test_pi_prompts_with_an_input_record(tmp_path: Path, record: dict[str, Any] | None,
                                         human: bool, reason: str) -> None:
    session = PiSession(tmp_path / "s.jsonl", ssa_input=record)
    line = session.lines(Typed("a prompt"))
    unit = classify_pi_line(line)
    assert (unit.human, unit.reason) == (human, reason)
    assert _classify_mapping(json.loads(line)) == unit  # both decode paths agree


def test_a_bare_skill_stays_a_command_and_its_arguments_follow_the_source(tmp_path: Path
                                                                           ) -> None:
    session = PiSession(tmp_path / "s.jsonl", ssa_input={"v": 1, "source": "rpc", "ui": True})
    assert classify_pi_line(session.lines(SlashCommand("skill:x"))).reason == "skill_command"
    assert classify_pi_line(session.lines(SlashCommand("skill:x", "go"))).reason == "rpc_input"


def test_a_tui_session_continued_by_rpc_counts_only_the_tui_prompts(tmp_path: Path) -> None:
    """``pi --mode rpc --continue`` appends to a TUI session: the record is per prompt."""
    session = PiSession(tmp_path / "s.jsonl",
                        ssa_input={"v": 1, "source": "interactive", "ui": True})
    session.append(Typed("typed in the TUI"), Reply("one"))
    session.ssa_input = {"v": 1, "source": "rpc", "ui": True}
    session.append(Typed("sent by an RPC client"), Reply("two"))
    assert [r for h, r in _reasons(session.path) if r in ("typed", "rpc_input")] == [
        "typed", "rpc_input"]


# --- OpenCode forks ----------------------------------------------------------------


def _forked_opencode(tmp_path: Path) -> tuple[OpenCodeTranscript, OpenCodeTranscript]:
    db = tmp_path / "opencode.db"
    parent = OpenCodeTranscript(db, title="Hello")
    parent.append(Typed("typed one"), Reply("one"), Typed("typed two"), Reply("two"))
    fork = parent.fork()
    fork.append(Typed("typed in the fork"), Reply("three"))
    return parent, fork


def test_opencode_fork_copies_are_copied_rows(tmp_path: Path) -> None:
    parent, fork = _forked_opencode(tmp_path)
    original = [u.reason for _, u in classify_db_session(parent.path, parent.session_id)]
    assert original == ["typed", "not_user", "typed", "not_user"]
    forked = [(u.human, u.reason, u.text) for _, u in
              classify_db_session(fork.path, fork.session_id)]
    assert forked == [(False, "copied_row", None), (False, "not_user", None),
                      (False, "copied_row", None), (False, "not_user", None),
                      (True, "typed", "typed in the fork"), (False, "not_user", None)]


def test_opencode_fork_counts_only_its_own_prompt_in_a_monitor_scan(tmp_path: Path) -> None:
    """Linked before the copies landed (an empty fork): the scan still counts one turn."""
    _, fork = _forked_opencode(tmp_path)
    conn = open_opencode_db(fork.path)
    try:
        seq = read_sequences(conn, [fork.session_id])[fork.session_id]
    finally:
        conn.close()
    result = scan_opencode(str(fork.path), fork.session_id,
                           {"seq": 0, "lastHumanMessageId": None},
                           StoreHint(state="ok", seq=seq), own_texts=NO_OWN_TEXTS,
                           replay_window=50)
    assert (result.kind, result.human_turns) == ("activity", 1)


@pytest.mark.parametrize(("message", "session", "copy"), [
    (999, 1000, True), (1000, 1000, False), (1001, 1000, False), (5, None, False)])
def test_is_copy(message: int, session: int | None, copy: bool) -> None:
    assert is_copy(message, session) is copy


@pytest.mark.parametrize(("title", "created", "expected"), [
    ("Hello (fork #1)", 1000, 1000), ("Hello (fork #12)", 1000, 1000),
    ("Hello (fork #1) (fork #2)", 5, 5), ("Hello", 1000, None), ("(fork #1)", 1000, None),
    ("Hello (fork #x)", 1000, None), ("Hello (fork #1) renamed", 1000, None),
    ("Hello (fork #1)", True, None), ("Hello (fork #1)", "1000", None), (None, 1000, None)])
def test_opencode_fork_time(title: object, created: object, expected: int | None) -> None:
    assert opencode_fork_time(title, created) == expected


def test_a_renamed_fork_or_a_session_behind_the_clock_proves_no_copy(tmp_path: Path) -> None:
    """Conservative: without the fork's title a message older than its session counts."""
    db = tmp_path / "opencode.db"
    times = itertools.chain([10_000], itertools.count(1_000, 1_000))
    session = OpenCodeTranscript(db, title="Hello", clock=lambda: next(times))
    session.append(Typed("typed after the clock stepped back"), Reply("one"))
    assert [u.reason for _, u in classify_db_session(db, session.session_id)] == [
        "typed", "not_user"]


FIFO_JOIN_S = 5.0
"""Longest a copy check may take on a FIFO before the test calls it blocked."""


def _returns_promptly(call: Any, fifo: Path) -> list[Any]:
    import os
    import threading

    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(call()), daemon=True)
    worker.start()
    worker.join(FIFO_JOIN_S)
    if worker.is_alive():
        # unblock the reader (a writer opening the FIFO ends its open), then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(FIFO_JOIN_S)
        pytest.fail("the copy check blocked on a FIFO")
    return out


def test_a_fifo_in_place_of_a_pi_session_is_no_fork_and_does_not_block(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    [classify] = _returns_promptly(lambda: line_classifier("pi", str(fifo)), fifo)
    assert classify is classify_pi_line  # no header could be read: no fork


def test_a_fifo_beside_a_claude_transcript_is_skipped_without_blocking(tmp_path: Path) -> None:
    import os

    from actors.upstream.claude.copies import copied_from_elsewhere

    own = tmp_path / "own.jsonl"
    own.write_text('{"type":"user","uuid":"u-1"}\n')
    sibling = tmp_path / "sibling.jsonl"
    os.mkfifo(sibling)
    assert _returns_promptly(
        lambda: copied_from_elsewhere(str(own), "u-1", None), sibling) == [False]
