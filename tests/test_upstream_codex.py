"""Codex rollout classification (formats doc §3, §6; PROVENANCE.md "Codex CLI").

Each real fixture has its full per-line human/not-human list, worked out by
reading every line: the typed turns are the ``event_msg`` ``user_message``
events (legacy) or the ``item_completed`` ``UserMessage`` event (paginated);
the user-role ``response_item`` copy next to each of them never counts.
Fixtures are read in place from ``shared/`` beside the repository.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.upstream import Unit, normalize_text
from actors.upstream.codex.classify import (
    CodexThread,
    classify_codex_line,
    codex_link_refusal,
    read_codex_thread,
)
from tests import conftest

FIXTURES = conftest.FIXTURES / "codex"

PAGINATED = "codex-0.152.1-tui-paginated.jsonl"
EXEC = "codex-0.135.0-exec-legacy-redacted.jsonl"
AGENTSMD = "codex-0.57.0-tui-agentsmd-aborted-customprompt-excerpt.jsonl"
KIND_PLAIN = "codex-0.34.0-tui-kind-plain-excerpt.jsonl"
ENV_ONLY = "codex-0.34.0-env-context-only.jsonl"

# fixture -> (line count, human line indices)
HUMAN_LINES: dict[str, tuple[int, frozenset[int]]] = {
    PAGINATED: (13, frozenset({7})),
    EXEC: (11, frozenset({6})),
    AGENTSMD: (169, frozenset({4, 22, 45, 166})),
    KIND_PLAIN: (140, frozenset({3, 84, 138})),
    ENV_ONLY: (2, frozenset()),
}

# (response_item copy, counted event) pairs: exactly one of each pair counts.
TYPED_PAIRS: dict[str, list[tuple[int, int]]] = {
    PAGINATED: [(6, 7)],
    EXEC: [(5, 6)],
    AGENTSMD: [(3, 4), (21, 22), (44, 45), (165, 166)],
    KIND_PLAIN: [(2, 3), (83, 84), (137, 138)],
    ENV_ONLY: [],
}

THREADS: dict[str, tuple[CodexThread, str | None]] = {
    PAGINATED: (
        CodexThread(
            thread_id="01a06421-3bf7-7ed2-a618-e42b6c961905",
            originator="codex-tui",
            source="cli",
            thread_source="user",
            history_mode="paginated",
            cli_version="0.152.1",
        ),
        None,
    ),
    EXEC: (
        CodexThread(
            thread_id="019e9625-802f-7e91-840a-cfe88d14117a",
            originator="codex_exec",
            source="exec",
            thread_source="user",
            history_mode=None,
            cli_version="0.135.0",
        ),
        "exec_thread",
    ),
    AGENTSMD: (
        CodexThread(
            thread_id="019a7ae6-1945-7c63-98f2-210adb922af9",
            originator="codex_cli_rs",
            source="cli",
            thread_source=None,
            history_mode=None,
            cli_version="0.57.0",
        ),
        None,
    ),
    KIND_PLAIN: (
        CodexThread(
            thread_id="c61729d4-da6d-46a4-9a29-ec2c614e5e23",
            originator="codex_cli_rs",
            source=None,
            thread_source=None,
            history_mode=None,
            cli_version="0.34.0",
        ),
        None,
    ),
    ENV_ONLY: (
        CodexThread(
            thread_id="fa1ac8bf-348e-4b9a-a06d-767050fa1e10",
            originator="codex_cli_rs",
            source=None,
            thread_source=None,
            history_mode=None,
            cli_version="0.34.0",
        ),
        None,
    ),
}


def _lines(name: str) -> list[bytes]:
    data = (FIXTURES / name).read_bytes()
    assert data.endswith(b"\n")
    return data[:-1].split(b"\n")


def _classify(name: str) -> list[Unit]:
    return [classify_codex_line(line) for line in _lines(name)]


def _response_item_text(line: bytes) -> str:
    payload = json.loads(line)["payload"]
    assert payload["type"] == "message"
    assert payload["role"] == "user"
    return normalize_text("".join(part.get("text", "") for part in payload["content"]))


def _iso_ms(line: bytes) -> int:
    stamp = datetime.fromisoformat(json.loads(line)["timestamp"])
    return (stamp - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


# --- every fixture: full per-line list, thread info, link refusal -----------------------


def test_every_codex_fixture_is_covered() -> None:
    assert {path.name for path in FIXTURES.glob("*.jsonl")} == set(HUMAN_LINES)


@pytest.mark.parametrize("name", sorted(HUMAN_LINES))
def test_fixture_full_per_line_human_list(name: str) -> None:
    count, human = HUMAN_LINES[name]
    expected = [index in human for index in range(count)]
    assert [unit.human for unit in _classify(name)] == expected


@pytest.mark.parametrize("name", sorted(HUMAN_LINES))
def test_fixture_thread_and_link_refusal(name: str) -> None:
    thread, refusal = THREADS[name]
    first = _lines(name)[0]
    assert read_codex_thread(first) == thread
    assert read_codex_thread(first + b"\n") == thread
    assert codex_link_refusal(read_codex_thread(first)) == refusal


@pytest.mark.parametrize("name", sorted(HUMAN_LINES))
def test_fixture_each_typed_turn_counts_once(name: str) -> None:
    lines = _lines(name)
    units = _classify(name)
    for copy, event in TYPED_PAIRS[name]:
        assert not units[copy].human
        assert units[copy].reason == "response_item_duplicate"
        assert units[event].human
        assert units[event].reason == "typed"
        assert units[event].text == _response_item_text(lines[copy])
    # every human line is the event of one pair
    assert {event for _, event in TYPED_PAIRS[name]} == HUMAN_LINES[name][1]


@pytest.mark.parametrize("name", sorted(HUMAN_LINES))
def test_fixture_units_carry_timestamps_and_only_human_text(name: str) -> None:
    for line, unit in zip(_lines(name), _classify(name), strict=True):
        assert unit.occurred_at == _iso_ms(line)
        assert not unit.stop
        assert (unit.text is not None) == unit.human
        assert unit.reason not in ("invalid_json", "unexpected_shape")


def test_paginated_fixture_reasons() -> None:
    assert [unit.reason for unit in _classify(PAGINATED)] == [
        "session_meta",  # 0
        "event",  # 1 task_started
        "response_item",  # 2 developer message
        "injected_context",  # 3 <environment_context>
        "world_state",  # 4
        "turn_context",  # 5
        "response_item_duplicate",  # 6 "Hi", content_item_kinds user.text
        "typed",  # 7 item_completed UserMessage
        "non_user_item",  # 8 item_completed AgentMessage
        "response_item",  # 9 assistant message
        "event",  # 10 token_count
        "event",  # 11 task_complete
        "event",  # 12 thread_settings_applied
    ]
    unit = _classify(PAGINATED)[7]
    assert unit.text == "Hi"
    assert unit.occurred_at == 1_788_386_304_394  # 2026-09-02T21:58:24.394Z


def test_exec_fixture_reasons() -> None:
    # The line classifier is thread-agnostic: line 6 is a typed turn; the
    # thread itself is refused at link time (exec_thread).
    assert [unit.reason for unit in _classify(EXEC)] == [
        "session_meta",
        "event",
        "response_item",
        "injected_context",
        "turn_context",
        "response_item_duplicate",
        "typed",
        "event",
        "response_item",
        "event",
        "event",
    ]
    assert _classify(EXEC)[6].text == "[REDACTED_PROMPT]"


def test_env_context_only_fixture_has_no_human_turn() -> None:
    assert [unit.reason for unit in _classify(ENV_ONLY)] == ["session_meta", "injected_context"]


def test_agentsmd_fixture_injected_aborted_and_custom_prompt() -> None:
    units = _classify(AGENTSMD)
    assert units[1].reason == "injected_context"  # # AGENTS.md instructions for …
    assert units[2].reason == "injected_context"  # <environment_context>
    assert units[20].reason == "event"  # turn_aborted (interrupted)
    # POLICY: the prompt re-sent after the interrupt is a second typed turn.
    assert units[4].text is not None
    assert units[22].text is not None
    assert units[4].text.startswith("Responding to the note below")
    assert units[22].text.startswith(units[4].text.removesuffix("."))
    assert "\n" not in units[22].text
    # POLICY: an expanded custom prompt (/prompts:…) counts as typed.
    assert units[166].text is not None
    assert units[166].text.startswith("## User Input ```text ``` You **MUST**")
    assert sum(unit.human for unit in units) == 4


def test_kind_plain_fixture_texts() -> None:
    units = _classify(KIND_PLAIN)
    assert units[1].reason == "injected_context"
    assert units[3].text == "Can we continue from where we left off?"
    assert units[138].text == "yes p[lease"


# --- synthetic lines --------------------------------------------------------------------

TS = "2025-11-13T01:50:40.642Z"
TS_MS = 1_762_998_640_642


def _line(payload: object, *, kind: str = "event_msg", timestamp: object = TS) -> bytes:
    row: dict[str, object] = {"timestamp": timestamp, "type": kind, "payload": payload}
    return json.dumps(row).encode()


def _user_message(message: object = "hello", **extra: object) -> bytes:
    return _line({"type": "user_message", "message": message, **extra})


def _user_item(*content: Mapping[str, object]) -> bytes:
    item = {"type": "UserMessage", "id": "u1", "content": list(content)}
    return _line({"type": "item_completed", "thread_id": "t", "turn_id": "x", "item": item})


def _text(text: str) -> dict[str, object]:
    return {"type": "text", "text": text, "text_elements": []}


def test_plain_user_message_is_typed() -> None:
    assert classify_codex_line(_user_message("  hello \n\t world ")) == Unit(
        human=True, reason="typed", text="hello world", occurred_at=TS_MS
    )


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"  \n"])
def test_line_ending_is_tolerated(ending: bytes) -> None:
    assert classify_codex_line(_user_message() + ending).human


def test_kind_absent_null_or_plain_is_typed() -> None:
    assert classify_codex_line(_user_message()).human
    assert classify_codex_line(_user_message(kind=None)).human
    assert classify_codex_line(_user_message(kind="plain")).human


@pytest.mark.parametrize("kind", ["user_instructions", "environment_context", "other", ""])
def test_kind_other_than_plain_is_not_human(kind: str) -> None:
    unit = classify_codex_line(_user_message(kind=kind))
    assert unit == Unit(human=False, reason="user_message_kind", occurred_at=TS_MS)


def test_kind_of_wrong_type_is_not_human() -> None:
    assert classify_codex_line(_user_message(kind=5)).reason == "unexpected_shape"


@pytest.mark.parametrize(
    "extra",
    [
        {"images": ["data:image/png;base64,iVBORw0KGgo="]},
        {"images": [], "local_images": ["/tmp/shot.png"]},
        {"images": ["data:image/png;base64,AAAA"], "local_images": [], "text_elements": []},
    ],
)
@pytest.mark.parametrize("message", ["", "   \n"])
def test_image_only_user_message_is_not_human(message: str, extra: dict[str, object]) -> None:
    # POLICY: no text, so the gateway's own image sends could not be told apart.
    unit = classify_codex_line(_user_message(message, **extra))
    assert unit == Unit(human=False, reason="image_only", occurred_at=TS_MS)


def test_image_with_text_is_typed() -> None:
    unit = classify_codex_line(_user_message("look at this", images=["data:image/png;base64,A"]))
    assert unit.human
    assert unit.text == "look at this"


@pytest.mark.parametrize("extra", [{}, {"images": []}, {"images": None}, {"local_images": []}])
def test_empty_user_message_is_not_human(extra: dict[str, object]) -> None:
    assert classify_codex_line(_user_message("", **extra)).reason == "empty_text"
    assert classify_codex_line(_user_message(None, **extra)).reason == "empty_text"


def test_missing_message_field_is_not_human() -> None:
    assert classify_codex_line(_line({"type": "user_message"})).reason == "empty_text"


@pytest.mark.parametrize("message", [5, ["hi"], {"text": "hi"}, True])
def test_message_of_wrong_type_is_not_human(message: object) -> None:
    assert classify_codex_line(_user_message(message)).reason == "unexpected_shape"


INJECTED = [
    "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nbody\n</INSTRUCTIONS>",
    "<environment_context>\n  <cwd>/tmp</cwd>\n</environment_context>",
    "<user_instructions>\nbe brief\n</user_instructions>",
    "<skill>\n<name>x</name>\n</skill>",
    "<user_shell_command>\nls\n</user_shell_command>",
    "<turn_aborted>\nThe user interrupted.\n</turn_aborted>",
    "<SUBAGENT_NOTIFICATION>{}</subagent_notification>",
    "  \n<additional_context>\n<title>editor</title>\n</additional_context>",
]


@pytest.mark.parametrize("text", INJECTED)
def test_injected_fragments_never_count(text: str) -> None:
    assert classify_codex_line(_user_message(text)).reason == "injected_context"
    assert classify_codex_line(_user_item(_text(text))).reason == "injected_context"
    row = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    unit = classify_codex_line(_line(row, kind="response_item"))
    assert unit == Unit(human=False, reason="injected_context", occurred_at=TS_MS)


def test_marker_inside_text_does_not_make_it_injected() -> None:
    assert classify_codex_line(_user_message("see <environment_context> above")).human


def test_user_response_item_is_never_human() -> None:
    row = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    assert classify_codex_line(_line(row, kind="response_item")) == Unit(
        human=False, reason="response_item_duplicate", occurred_at=TS_MS
    )
    image_row = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_image", "image_url": "data:image/png;base64,AAAA"}],
    }
    assert not classify_codex_line(_line(image_row, kind="response_item")).human


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "x"}]},
        {"type": "function_call_output", "call_id": "c", "output": "user_message"},
        {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"},
    ],
)
def test_other_response_items_are_not_human(payload: dict[str, object]) -> None:
    assert classify_codex_line(_line(payload, kind="response_item")).reason == "response_item"


def test_user_response_item_with_bad_content_is_not_human() -> None:
    row = {"type": "message", "role": "user", "content": "hi"}
    assert classify_codex_line(_line(row, kind="response_item")).reason == "unexpected_shape"


def test_paginated_user_message_item_is_typed() -> None:
    assert classify_codex_line(_user_item(_text(" Hi \n"))) == Unit(
        human=True, reason="typed", text="Hi", occurred_at=TS_MS
    )


def test_paginated_text_parts_join_with_a_space() -> None:
    unit = classify_codex_line(_user_item(_text("first"), _text(" second\n"), _text("")))
    assert unit.text == "first second"


def test_paginated_image_only_item_is_not_human() -> None:
    image = {"type": "image", "image_url": "data:image/png;base64,AAAA"}
    local = {"type": "local_image", "path": "/tmp/a.png"}
    assert classify_codex_line(_user_item(image)).reason == "image_only"
    assert classify_codex_line(_user_item(local, _text("  "))).reason == "image_only"
    assert classify_codex_line(_user_item()).reason == "empty_text"
    assert classify_codex_line(_user_item(image, _text("what is this?"))).human


@pytest.mark.parametrize(
    "item",
    [
        {"type": "AgentMessage", "id": "a", "content": [{"type": "Text", "text": "hi"}]},
        {"type": "Plan", "id": "p", "text": "1. do"},
        {"type": "userMessage", "id": "u", "content": [{"type": "text", "text": "hi"}]},
        None,
    ],
)
def test_other_completed_items_are_not_human(item: object) -> None:
    line = _line({"type": "item_completed", "item": item})
    assert classify_codex_line(line).reason == "non_user_item"


def test_a_stop_hook_continuation_prompt_is_not_human() -> None:
    """A Stop hook's continuation prompt is a HookPrompt item (codex 0.169.0's item types)."""
    line = _line({"type": "item_completed", "item": {
        "type": "HookPrompt", "id": "h",
        "fragments": [{"text": "keep going", "hook_run_id": "run-1"}]}})
    unit = classify_codex_line(line)
    assert (unit.human, unit.reason) == (False, "hook_prompt")


PLAN_TEXTS = [
    "Implement the plan.",
    "Implement the plan. If this thread has no active goal, create one from the approved plan "
    "before starting implementation so the original intent persists through compaction and "
    "resume.",
    "A previous agent produced the plan below to accomplish the user's task. Implement the plan "
    "in a fresh context. Treat the plan as the source of user intent.\n\n# Plan\n- step",
]


@pytest.mark.parametrize("text", PLAN_TEXTS)
def test_the_plan_popups_text_is_a_click_not_typed(text: str) -> None:
    for line in (_user_item(_text(text)),
                 _line({"type": "user_message", "message": text, "images": []})):
        unit = classify_codex_line(line)
        assert (unit.human, unit.reason) == (False, "plan_implementation")
    # Anything a person adds makes it typed text again.
    assert classify_codex_line(_user_item(_text("Implement the plan. But skip step 2"))).human


def test_an_external_message_is_another_programs() -> None:
    text = "<external_message source=\"queue\">run the tests</external_message>"
    for line in (_user_item(_text(text)),
                 _line({"type": "user_message", "message": text, "images": []})):
        unit = classify_codex_line(line)
        assert (unit.human, unit.reason) == (False, "external_message")


def test_item_completed_without_item_or_with_bad_item() -> None:
    assert classify_codex_line(_line({"type": "item_completed"})).reason == "event"
    bad = _line({"type": "item_completed", "item": {"type": "UserMessage", "content": "hi"}})
    assert classify_codex_line(bad).reason == "unexpected_shape"
    bad_part = _line(
        {"type": "item_completed", "item": {"type": "UserMessage", "content": [{"text": 5}]}}
    )
    assert classify_codex_line(bad_part).reason == "unexpected_shape"


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "agent_message", "message": "hello"},
        {"type": "turn_aborted", "reason": "interrupted"},
        {"type": "item_started", "item": {"type": "UserMessage", "content": [_text("hi")]}},
        {"type": "token_count", "info": None},
    ],
)
def test_other_events_are_not_human(payload: dict[str, object]) -> None:
    assert classify_codex_line(_line(payload)).reason == "event"


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("session_meta", "session_meta"),
        ("turn_context", "turn_context"),
        ("compacted", "compacted"),
        ("world_state", "world_state"),
        ("inter_agent_communication", "inter_agent_communication"),
        ("inter_agent_communication_metadata", "inter_agent_communication_metadata"),
        ("security_risk_score", "security_risk_score"),
        ("realtime_item", "realtime_item"),
        ("thread_rolled_back_in_2027", "unknown_kind"),
        ("message", "pre_envelope"),
    ],
)
def test_non_event_rows(kind: str, reason: str) -> None:
    payload = {"type": "user_message", "message": "hello", "role": "user"}
    assert classify_codex_line(_line(payload, kind=kind)).reason == reason


def test_user_message_outside_event_msg_or_without_payload() -> None:
    assert classify_codex_line(b'{"type":"event_msg"}').reason == "no_payload"
    assert classify_codex_line(b'{"type":"event_msg","payload":null}').reason == "no_payload"
    assert classify_codex_line(b'{"payload":{"type":"user_message","message":"x"}}').reason == (
        "unknown_kind"
    )


# --- timestamps -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("timestamp", "expected"),
    [
        (TS, TS_MS),
        ("2025-11-13T01:50:40Z", 1_762_998_640_000),
        ("2025-11-13T01:50:40.642123456Z", TS_MS),
        ("2025-11-13T03:50:40.642+02:00", TS_MS),
        ("2025-11-13T01:50:40.642", TS_MS),  # no offset: UTC
        ("not a time", None),
        ("", None),
        ("1969-12-31T23:59:59Z", None),
        ("0001-01-01T00:00:00+01:00", None),
        (None, None),
    ],
)
def test_occurred_at(timestamp: str | None, expected: int | None) -> None:
    unit = classify_codex_line(
        _line({"type": "user_message", "message": "hi"}, timestamp=timestamp)
    )
    assert unit.human
    assert unit.occurred_at == expected


def test_missing_or_mistyped_timestamp() -> None:
    no_stamp = b'{"type":"event_msg","payload":{"type":"user_message","message":"hi"}}'
    assert classify_codex_line(no_stamp).occurred_at is None
    assert classify_codex_line(_line({"type": "user_message"}, timestamp=5)).reason == (
        "unexpected_shape"
    )


# --- malformed input --------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [b"", b"\n", b"   ", b"{", b"}", b"not json", b"{'a': 1}", b'{"a":1}x', b'{"a":1}{"b":2}'],
)
def test_invalid_json(line: bytes) -> None:
    assert classify_codex_line(line) == Unit(human=False, reason="invalid_json")


@pytest.mark.parametrize("line", [b"[]", b"[1, 2]", b"3", b'"user_message"', b"null", b"true"])
def test_non_object_json_is_invalid(line: bytes) -> None:
    assert classify_codex_line(line) == Unit(human=False, reason="invalid_json")


@pytest.mark.parametrize(
    "line",
    [b'{"type": 5}', b'{"type": "event_msg", "payload": "x"}', b'{"payload": [1]}'],
)
def test_objects_of_unexpected_shape(line: bytes) -> None:
    assert classify_codex_line(line) == Unit(human=False, reason="unexpected_shape")


def test_every_truncation_of_a_typed_line_is_invalid() -> None:
    line = _lines(AGENTSMD)[4]
    assert classify_codex_line(line).human
    for cut in range(len(line)):
        assert classify_codex_line(line[:cut]) == Unit(human=False, reason="invalid_json")


def test_nul_bytes() -> None:
    good = _user_message("hello")
    assert classify_codex_line(b"\x00").reason == "invalid_json"
    assert classify_codex_line(b"\x00" * 64).reason == "invalid_json"
    assert classify_codex_line(good + b"\x00").reason == "invalid_json"
    assert classify_codex_line(b"\x00" + good).reason == "invalid_json"
    raw_nul_in_string = good.replace(b"hello", b"hel\x00lo")
    assert classify_codex_line(raw_nul_in_string).reason == "invalid_json"
    # An escaped NUL is valid JSON and is kept in the text.
    assert classify_codex_line(_user_message("a\x00b")).text == "a\x00b"


@pytest.mark.parametrize(
    "line",
    [
        _user_message("hello").replace(b"hello", b"hel\xfflo"),
        _user_message("hello").replace(b"hello", b"\xed\xa0\x80"),  # encoded surrogate
        _user_message("hello", images=["x"]).replace(b'["x"]', b'["\xc3"]'),
        _user_item(_text("hello")).replace(b'"u1"', b'"\xfe"'),
        b"\xef\xbb\xbf" + _user_message("hello"),  # BOM
        b"\xff\xfe{}",
    ],
)
def test_invalid_utf8_is_never_human(line: bytes) -> None:
    unit = classify_codex_line(line)
    assert not unit.human
    assert unit.reason == "invalid_json"


def test_lone_surrogate_escape_is_never_human() -> None:
    line = b'{"type":"event_msg","payload":{"type":"user_message","message":"\\ud800"}}'
    assert not classify_codex_line(line).human


@pytest.mark.parametrize("depth", [10_000, 200_000])
@pytest.mark.parametrize("where", ["payload_field", "item", "message", "top"])
def test_deeply_nested_json(depth: int, where: str) -> None:
    nest = b"[" * depth + b"]" * depth
    if where == "payload_field":
        line = b'{"type":"event_msg","payload":{"type":"user_message","message":"hi","x":' + nest
        line += b"}}"
    elif where == "item":
        line = b'{"type":"event_msg","payload":{"type":"item_completed","item":' + nest + b"}}"
    elif where == "message":
        line = b'{"type":"event_msg","payload":{"type":"user_message","message":' + nest + b"}}"
    else:
        line = nest
    unit = classify_codex_line(line)
    assert not unit.human
    assert unit.reason in ("invalid_json", "unexpected_shape")


def test_moderate_nesting_in_skipped_fields_is_fine() -> None:
    nest: object = "x"
    for _ in range(200):
        nest = {"a": [nest]}
    assert classify_codex_line(_user_message("hello", extra=nest)).human


def test_two_mib_lines() -> None:
    big = "word " * (2 * 1024 * 1024 // 5)
    unit = classify_codex_line(_user_message(big))
    assert unit.human
    assert unit.text is not None
    assert len(unit.text) == len(big) - 1
    output = {"type": "function_call_output", "call_id": "c", "output": "x" * (2 << 20)}
    assert classify_codex_line(_line(output, kind="response_item")).reason == "response_item"
    image = "data:image/png;base64," + "A" * (2 << 20)
    assert classify_codex_line(_user_message("", images=[image])).reason == "image_only"
    assert classify_codex_line(_user_message("hi", images=[image])).text == "hi"


def test_accepts_bytearray_and_memoryview() -> None:
    line = _user_message("hello")
    assert classify_codex_line(bytearray(line)).human  # type: ignore[arg-type]
    assert classify_codex_line(memoryview(line)).human  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=512))
def test_never_raises_on_any_bytes(data: bytes) -> None:
    unit = classify_codex_line(data)
    assert isinstance(unit, Unit)
    assert read_codex_thread(data) is None or isinstance(read_codex_thread(data), CodexThread)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["event_msg", "response_item", "session_meta", 5, None]),
    st.sampled_from(["user_message", "item_completed", "message", None, 3]),
    st.dictionaries(
        st.sampled_from(["message", "kind", "images", "local_images", "item", "content", "role"]),
        JSON_VALUES,
        max_size=4,
    ),
)
def test_never_raises_on_any_json_shape(
    kind: object, payload_type: object, fields: dict[str, object]
) -> None:
    line = json.dumps({"type": kind, "timestamp": TS, "payload": {"type": payload_type, **fields}})
    unit = classify_codex_line(line.encode())
    assert isinstance(unit, Unit)
    if unit.human:
        assert unit.text
        assert unit.text == normalize_text(unit.text)


def test_unit_is_frozen() -> None:
    unit = classify_codex_line(_user_message())
    with pytest.raises(AttributeError):
        unit.human = False  # type: ignore[misc]
    assert msgspec.json.decode(msgspec.json.encode(unit), type=Unit) == unit


# --- session_meta and link policy -------------------------------------------------------


def _meta(**payload: object) -> bytes:
    return _line(
        {"id": "t-1", "cwd": "/x", "base_instructions": {"text": "…"}, **payload},
        kind="session_meta",
    )


@pytest.mark.parametrize(
    ("source", "label"),
    [
        ("cli", "cli"),
        ({"subagent": "review"}, "subagent:review"),
        (
            {"subagent": {"thread_spawn": {"parent_thread_id": "p", "depth": 1}}},
            "subagent:thread_spawn",
        ),
        ({"internal": "guardian"}, "internal:guardian"),
        ({"custom": "atlas"}, "custom:atlas"),
        ({"subagent": None}, "subagent"),
        (None, None),
        (5, "unrecognized"),
        (["cli"], "unrecognized"),
        ({"a": 1, "b": 2}, "unrecognized"),
    ],
)
def test_source_is_flattened(source: object, label: str | None) -> None:
    thread = read_codex_thread(_meta(source=source))
    assert thread is not None
    assert thread.source == label


def test_thread_id_falls_back_to_session_id_and_bad_types_read_as_none() -> None:
    line = _line(
        {"session_id": "s-1", "originator": 5, "cli_version": ["0.1"]}, kind="session_meta"
    )
    assert read_codex_thread(line) == CodexThread(thread_id="s-1")


@pytest.mark.parametrize(
    "line",
    [
        b"",
        b"not json",
        b"[]",
        _user_message("hello"),
        _line("session_meta", kind="session_meta"),
        b'{"type":"session_meta"}',
        b'{"type":"session_meta","payload":null}',
        _lines(AGENTSMD)[1],
    ],
)
def test_read_codex_thread_rejects_non_meta_lines(line: bytes) -> None:
    assert read_codex_thread(line) is None


@pytest.mark.parametrize(
    ("fields", "refusal"),
    [
        ({"originator": "codex-tui", "source": "cli", "thread_source": "user"}, None),
        ({"originator": "codex_vscode", "source": "vscode"}, None),
        ({"originator": "codex_cli_rs"}, None),  # 0.34.0: no source, the TUI
        ({}, None),
        ({"source": {"custom": "atlas"}}, None),
        ({"source": "chatgpt"}, None),
        ({"originator": "codex_exec", "source": "exec", "thread_source": "user"}, "exec_thread"),
        ({"originator": "codex_exec"}, "exec_thread"),  # old exec, no source
        ({"source": "exec"}, "exec_thread"),
        ({"source": "cli", "thread_source": "subagent"}, "subagent_thread"),
        ({"source": {"subagent": "review"}}, "subagent_thread"),
        (
            {"source": {"subagent": {"thread_spawn": {"depth": 1}}}, "thread_source": "subagent"},
            "subagent_thread",
        ),
        ({"source": "cli", "thread_source": "system"}, "not_user_thread"),
        ({"source": "mcp"}, "mcp_thread"),
        ({"source": {"internal": "guardian"}}, "internal_thread"),
        ({"source": "unknown"}, "non_interactive_source"),
        ({"source": {"custom": "my-bot"}}, "non_interactive_source"),
        ({"source": 5}, "non_interactive_source"),
    ],
)
def test_link_refusal_policy(fields: dict[str, object], refusal: str | None) -> None:
    assert codex_link_refusal(read_codex_thread(_meta(**fields))) == refusal


def test_no_session_meta_is_refused() -> None:
    assert codex_link_refusal(None) == "not_a_rollout"
    assert codex_link_refusal(read_codex_thread(b"garbage")) == "not_a_rollout"


def test_a_session_meta_line_longer_than_a_mebibyte_still_names_its_thread(
    tmp_path: Path,
) -> None:
    from actors.upstream.baseline import jsonl_baseline

    meta = {"timestamp": "2025-11-01T01:03:39.000Z", "type": "session_meta",
            "payload": {"id": "01a06421-3bf7-7ed2-a618-e42b6c961905", "cwd": "/work",
                        "originator": "codex_cli_rs", "cli_version": "0.57.0", "source": "cli",
                        "base_instructions": {"text": "instructions " * 200_000}}}
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(json.dumps(meta).encode() + b"\n")
    baseline = jsonl_baseline("codex", str(path), thread_id=None, from_start=False)
    assert baseline is not None
    assert baseline.refusal is None
    assert baseline.thread_id == "01a06421-3bf7-7ed2-a618-e42b6c961905"
    exec_meta = dict(meta, payload=dict(meta["payload"], source="exec"))  # type: ignore[arg-type]
    path.write_bytes(json.dumps(exec_meta).encode() + b"\n")
    refused = jsonl_baseline("codex", str(path), thread_id=None, from_start=False)
    assert refused is not None
    assert refused.refusal == "exec_thread"


_UNCOMMITTED = ("Review the current code changes (staged, unstaged, and untracked files) and "
                "provide prioritized findings.")
_COMMIT = ('Review the code changes introduced by commit 1a2b3c4 ("fix: retry"). Provide '
           "prioritized, actionable findings.")


def test_a_review_preset_prompt_re_emitted_from_the_review_sub_agent_is_not_typed() -> None:
    """``/review`` as the parent rollout holds it (codex-rs/core/src/tasks/review.rs)."""
    rows = [
        _line({"type": "entered_review_mode", "target": {"type": "uncommittedChanges"},
               "user_facing_hint": "current changes"}),
        _user_message(_UNCOMMITTED),
        _line({"type": "message", "id": "review:rollout:user", "role": "user",
               "content": [{"type": "input_text", "text": "<user_action>findings</user_action>"}]},
              kind="response_item"),
        _line({"type": "exited_review_mode", "review_output": None}),
        _user_message(_COMMIT),
        _user_item(_text(_UNCOMMITTED)),
    ]
    units = [classify_codex_line(row) for row in rows]
    assert [u.human for u in units] == [False] * 6
    assert [units[i].reason for i in (1, 4, 5)] == ["review_request"] * 3


def test_custom_review_instructions_and_look_alikes_are_typed() -> None:
    for text in ("Focus on the retry logic and its tests", "Review the current code changes",
                 _UNCOMMITTED + " Then fix them."):
        unit = classify_codex_line(_user_message(text))
        assert (unit.human, unit.reason) == (True, "typed"), text


def test_a_rollout_whose_session_meta_is_not_written_yet_is_not_adopted_yet(
    tmp_path: Path,
) -> None:
    from actors.upstream.baseline import first_line_pending, jsonl_baseline

    path = tmp_path / "rollout.jsonl"
    meta = json.dumps({"timestamp": "2025-11-01T01:03:39.000Z", "type": "session_meta",
                       "payload": {"id": "t1", "originator": "codex_cli_rs", "source": "cli"}})
    for content in (b"", meta.encode()[:30], meta.encode()):  # empty, half, no newline yet
        path.write_bytes(content)
        assert jsonl_baseline("codex", str(path), thread_id=None, from_start=True) is None
        assert first_line_pending("codex", str(path))
    path.write_bytes(meta.encode() + b"\n")
    assert not first_line_pending("codex", str(path))
    baseline = jsonl_baseline("codex", str(path), thread_id=None, from_start=True)
    assert baseline is not None
    assert baseline.refusal is None


def test_a_session_meta_over_a_mebibyte_still_being_written_is_pending(tmp_path: Path) -> None:
    from actors.upstream.baseline import first_line_pending, jsonl_baseline

    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b'{"type":"session_meta","payload":{"base_instructions":"' + b"x" * (3 << 20))
    assert first_line_pending("codex", str(path))  # logged as waiting, not as unreadable
    assert jsonl_baseline("codex", str(path), thread_id=None, from_start=True) is None
