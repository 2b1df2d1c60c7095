"""Claude Code rows of issue 22, classes 1, 2, 4 and 5, in their real shapes.

Claude Desktop cannot run here: its rows are built with the test kit's
builder in the shapes issue 22 gives (``promptSource: "sdk"``,
``entrypoint: "claude-desktop"``, ``origin.kind``). The 2.1.328 shapes
(copied rows, the new row kinds, ``hook_additional_context``) are the ones
the real tool wrote under the harness (``tests/test_agents_claude.py`` runs
it; ``docs/upstream-rows.md``).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from actors.testing import ClaudeCodeTranscript, Reply, Typed
from actors.upstream.classify import classify_units
from actors.upstream.claude.classify import (
    KNOWN_ROW_KINDS,
    classify_claude_line,
    classify_claude_message,
)


def _reasons(path: Path) -> list[tuple[bool, str]]:
    return [(bool(u["human"]), str(u["reason"])) for u in classify_units("claude", str(path))]


def _both(row: dict[str, object]) -> tuple[bool, str]:
    """The decision of both entry points (they must agree)."""
    line = classify_claude_line(json.dumps(row).encode())
    mapped = classify_claude_message(row)
    assert (line.human, line.reason) == (mapped.human, mapped.reason)
    return line.human, line.reason


# -- class 1: Claude Desktop -------------------------------------------------------------------

def test_a_prompt_typed_into_claude_desktop_counts(tmp_path: Path) -> None:
    desktop = ClaudeCodeTranscript(tmp_path / "d.jsonl", entrypoint="claude-desktop",
                                   prompt_source="sdk", version="2.1.219")
    desktop.append(Typed("typed into the Code tab"), Reply("ok"))
    rows = [json.loads(line) for line in desktop.path.read_text().splitlines()]
    assert rows[0]["promptSource"] == "sdk"
    assert rows[0]["origin"] == {"kind": "human"}
    assert _reasons(desktop.path) == [(True, "typed"), (False, "not_user")]


@pytest.mark.parametrize(("text", "origin", "reason"), [
    ("<task-notification><task-id>t1</task-id><status>completed</status></task-notification>",
     "task-notification", "task_notification"),
    ("Continue with the task", None, "not_typed_source"),  # SDK text saying nothing of a person
    ("Continue with the task", "auto-continuation", "not_human_origin"),
])
def test_what_desktop_injects_stays_not_typed(tmp_path: Path, text: str, origin: str | None,
                                              reason: str) -> None:
    desktop = ClaudeCodeTranscript(tmp_path / "d.jsonl", entrypoint="claude-desktop",
                                   prompt_source="sdk")
    desktop.injected(text, origin_kind=origin)
    assert _reasons(desktop.path) == [(False, reason)]


def test_desktop_meta_rows_stay_not_typed(tmp_path: Path) -> None:
    desktop = ClaudeCodeTranscript(tmp_path / "d.jsonl", entrypoint="claude-desktop",
                                   prompt_source="sdk")
    desktop.injected("skill body", origin_kind="human", isMeta=True)
    assert _reasons(desktop.path) == [(False, "meta")]


def test_an_sdk_prompt_of_another_client_stays_a_programs(tmp_path: Path) -> None:
    for entrypoint in ("sdk-ts", "sdk-py", "sdk-cli"):
        sdk = ClaudeCodeTranscript(tmp_path / f"{entrypoint}.jsonl", entrypoint=entrypoint,
                                   prompt_source="sdk")
        sdk.append(Typed("sent by a program"))
        assert _reasons(sdk.path) == [(False, "sdk_entrypoint")]
    other = ClaudeCodeTranscript(tmp_path / "vscode.jsonl", entrypoint="claude-vscode",
                                 prompt_source="sdk")
    other.append(Typed("sdk source outside Desktop"))
    assert _reasons(other.path) == [(False, "not_typed_source")]


# -- class 2: a conversation continued under a new session id -----------------------------------

def _project(tmp_path: Path) -> Path:
    project = tmp_path / "projects" / "-work"
    project.mkdir(parents=True)
    return project


def test_rows_copied_into_a_continued_session_do_not_count_again(tmp_path: Path) -> None:
    project = _project(tmp_path)
    earlier = ClaudeCodeTranscript(project / "11111111-aaaa-4aaa-8aaa-000000000001.jsonl",
                                   entrypoint="cli", prompt_source="typed")
    earlier.append(Typed("typed in the earlier session"), Reply("one"), Typed("again"),
                   Reply("two"))
    later = ClaudeCodeTranscript(project / "22222222-bbbb-4bbb-8bbb-000000000002.jsonl",
                                 entrypoint="cli", prompt_source="typed")
    assert later.copy_of(earlier.path) == 7
    later.append(Typed("typed in the continued session"))
    reasons = _reasons(later.path)
    assert [r for r in reasons if r[1] not in ("not_user",)] == [
        (False, "copied_row"), (False, "copied_row"), (True, "typed")]
    # The earlier session's own rows still count there: the later file says it copied them.
    assert [r for r in _reasons(earlier.path) if r[0]] == [(True, "typed"), (True, "typed")]


def test_a_copy_whose_original_is_gone_counts(tmp_path: Path) -> None:
    """Conservative the other way: nothing proves a copy, so the row counts."""
    project = _project(tmp_path)
    earlier = ClaudeCodeTranscript(project / "11111111-aaaa-4aaa-8aaa-000000000001.jsonl")
    earlier.append(Typed("typed in the earlier session"))
    later = ClaudeCodeTranscript(project / "22222222-bbbb-4bbb-8bbb-000000000002.jsonl")
    later.copy_of(earlier.path)
    earlier.path.unlink()
    assert [r for r in _reasons(later.path) if r[0]] == [(True, "typed")]


def test_a_sibling_written_before_the_row_is_not_read(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A prompt typed now costs a stat per sibling: only files written since are searched."""
    project = _project(tmp_path)
    old = ClaudeCodeTranscript(project / "11111111-aaaa-4aaa-8aaa-000000000001.jsonl")
    old.append(Typed("an old session"))
    os.utime(old.path, ns=(0, 0))
    new = ClaudeCodeTranscript(project / "22222222-bbbb-4bbb-8bbb-000000000002.jsonl")
    new.append(Typed("typed now"))
    opened: list[str] = []
    real_open = open

    def spy(file: object, *args: object, **kwargs: object) -> object:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", spy)
    assert [r for r in _reasons(new.path) if r[0]] == [(True, "typed")]
    assert str(old.path) not in opened


def test_a_branch_copy_says_so_itself() -> None:
    row = {"type": "user", "message": {"role": "user", "content": "typed before the branch"},
           "uuid": "u1", "sessionId": "new", "promptSource": "typed", "origin": {"kind": "human"},
           "forkedFrom": {"sessionId": "old", "messageUuid": "u1"}}
    assert _both(row) == (False, "copied_row")


# -- class 4: other agents' and programs' rows; our own hook's context --------------------------

@pytest.mark.parametrize(("text", "origin", "reason"), [
    ('<cross-session-message from="agent:main:claude:abc">please rebase</cross-session-message>',
     "peer", "peer_message"),
    ('<cross-session-message from="x">no origin field</cross-session-message>', None,
     "peer_message"),
    ('<channel source="slack" user="u1">deploy now</channel>', "channel", "channel_message"),
    ('<channel source="webhook">no origin field</channel>', None, "channel_message"),
])
def test_messages_of_other_sessions_and_channels_do_not_count(
        tmp_path: Path, text: str, origin: str | None, reason: str) -> None:
    session = ClaudeCodeTranscript(tmp_path / "s.jsonl", entrypoint="cli")
    session.injected(text, origin_kind=origin, prompt_source="system" if origin else None)
    assert _reasons(session.path) == [(False, reason)]


def test_our_hooks_context_never_counts() -> None:
    notice = ('Session state: sessions you watch changed since your last turn ... '
              'Session "agent:main:codex:x" changed (other actor).')
    attachment = {"type": "attachment", "uuid": "a1", "attachment": {
        "type": "hook_additional_context", "content": [notice], "hookName": "UserPromptSubmit",
        "hookEvent": "UserPromptSubmit"}}
    assert _both(attachment) == (False, "hook_context")
    reminder = {"type": "user", "message": {"role": "user", "content": [
        {"type": "text", "text": f"<system-reminder>\n{notice}\n</system-reminder>"}]}}
    assert _both(reminder) == (False, "ide_context")


# -- class 5: the newest row kinds ------------------------------------------------------------

NEW_KINDS = {  # the shapes Claude Code 2.1.328 wrote under the harness (text shortened)
    "api-request-shape": {"shapeHash": "0d27", "shape": {"system": [{"type": "text",
                                                                       "text": "You are"}]}},
    "api-request-blob": {"hash": "3c2f", "message": {"role": "user", "content": [
        {"type": "text", "text": "typed text the request carried"}]}},
    "api-request": {"id": "r1", "querySource": "repl_main_thread", "tail": []},
    "atis-latch": {"atis": ""},
    "cost-state": {"totalCostUSD": 0.0012, "modelUsage": {}},
}


@pytest.mark.parametrize("kind", sorted(NEW_KINDS))
def test_the_newest_row_kinds_are_not_typed(kind: str) -> None:
    assert kind in KNOWN_ROW_KINDS
    assert _both({"type": kind, "sessionId": "s", **NEW_KINDS[kind]}) == (False, "not_user")


@pytest.mark.parametrize("attachment", ["prompt_snapshot", "remote_session_change",
                                        "session_context", "date", "auto_mode"])
def test_the_newest_attachments_are_not_typed(attachment: str) -> None:
    row = {"type": "attachment", "uuid": "a", "attachment": {"type": attachment,
                                                            "systemPrompt": ["You are"]}}
    assert _both(row) == (False, "not_user")


def test_an_unknown_kind_is_not_typed_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    row = {"type": "brand-new-kind-7f3a", "message": {"role": "user", "content": "hello"}}
    with caplog.at_level(logging.INFO, logger="actors.upstream.claude.classify"):
        for _ in range(3):
            assert _both(row) == (False, "unknown_kind")
    logged = [r for r in caplog.records if "brand-new-kind-7f3a" in r.getMessage()]
    assert len(logged) == 1
    assert "hello" not in caplog.text  # the kind's name only, never a row's text


# -- class 4 in Pi and Codex: our own hook's context ------------------------------------------

def test_pi_custom_messages_and_our_notice_never_count() -> None:
    from actors.upstream.pi.classify import classify_pi_line

    for custom_type in ("ssa-notice", "some-extension"):
        line = json.dumps({"type": "custom_message", "id": "c1", "parentId": None,
                           "customType": custom_type, "content": "Session state: ...",
                           "display": False}).encode()
        unit = classify_pi_line(line)
        assert (unit.human, unit.reason) == (False, "custom_message")


def test_codex_developer_context_never_counts() -> None:
    from actors.upstream.codex.classify import classify_codex_line

    line = json.dumps({"timestamp": "2026-12-02T01:00:00.000Z", "type": "response_item",
                       "payload": {"type": "message", "role": "developer", "content": [
                           {"type": "input_text", "text": "Session state: ..."}]}}).encode()
    unit = classify_codex_line(line)
    assert (unit.human, unit.reason) == (False, "response_item")
