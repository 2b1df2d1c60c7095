"""Claude Code row classification (formats doc §2.4, §2.5, §2.7; anchor §3.17, §4.5).

Each real fixture has its full per-line decision, worked out by reading every
line (PROVENANCE.md "Claude Code" was the guide): every line not listed is a
non-user row (``not_user``), and a line is human exactly when its reason is
``typed``. Fixtures are read in place from ``shared/`` beside the repository.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.upstream import Unit, normalize_text, text_hash
from actors.upstream.claude.classify import classify_claude_line, classify_claude_message
from tests import conftest
from tests._upstream_rows import claude_user

FIXTURES = conftest.FIXTURES / "claude-code"

VSCODE = "cc-2.0.74-vscode-ide-opened-file.jsonl"
COMPACT = "cc-2.0.76-compact-summary-excerpt.jsonl"
SDK = "cc-2.1.152-sdk-cli-redacted.jsonl"
REJECT = "cc-2.1.17-cli-reject-interrupt-exit.jsonl"
TASKS = "cc-2.1.17-task-notification-excerpt.jsonl"
BASH = "cc-2.1.29-bash-input-plugin-command-excerpt.jsonl"
PROMPT = "cc-2.1.37-cli-prompt-tools-exit.jsonl"

TYPED = "typed"
TOOL = "tool_result"

# fixture -> (line count, {line: reason} for every line that is not "not_user")
EXPECTED: dict[str, tuple[int, dict[int, str]]] = {
    VSCODE: (9, {2: TYPED, 6: TOOL}),
    COMPACT: (
        35,
        {
            2: "meta",  # old-style "Caveat: ..." with isMeta
            3: "command",  # /exit
            4: "command_output",
            7: TYPED,
            11: TOOL, 14: TOOL, 17: TOOL, 20: TOOL,
            25: TYPED,
            29: TOOL,
            31: "compact_summary",
        },
    ),
    SDK: (5, {2: "sdk_entrypoint"}),
    REJECT: (
        101,
        {
            3: TYPED,
            7: TOOL, 10: TOOL, 13: TOOL,
            20: TYPED,  # "yes"
            24: TOOL, 33: TOOL, 37: TOOL,
            43: "meta", 44: "command", 45: "command_output",
            50: TYPED,
            53: TOOL, 57: TOOL, 60: TOOL, 63: TOOL,
            64: "interrupted",
            66: TYPED,
            69: TOOL, 72: TOOL, 76: TOOL, 81: TOOL, 91: TOOL,
            98: "meta", 99: "command", 100: "command_output",
        },
    ),
    TASKS: (
        36,
        {8: "task_notification", 16: "task_notification", 24: "task_notification",
         32: "task_notification"},
    ),
    BASH: (
        56,
        {
            6: "meta", 7: "shell_mode", 8: "shell_output",
            10: TYPED, 17: TYPED,
            22: TOOL, 26: TOOL,
            34: "meta", 35: "shell_mode", 36: "shell_output",
            38: TYPED,
            41: TOOL,
            48: "command",  # plugin command, <command-message> first
            49: "meta", 51: TOOL, 52: "meta",
        },
    ),
    PROMPT: (22, {3: TYPED, 7: TOOL, 10: TOOL, 14: TOOL, 19: "meta", 20: "command",
                  21: "command_output"}),
}


def fixture_lines(name: str) -> list[bytes]:
    data = (FIXTURES / name).read_bytes()
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    return lines


def iso_ms(value: str) -> int:
    return int(datetime.fromisoformat(value).timestamp() * 1000 + 0.5)


def encode(row: Mapping[str, Any]) -> bytes:
    return json.dumps(row, ensure_ascii=False).encode()


def both(row: Mapping[str, Any]) -> Unit:
    """Classify ``row`` as a line and as a mapping; they must agree."""
    unit = classify_claude_line(encode(row))
    assert classify_claude_message(row) == unit
    return unit


def user(content: object, **fields: object) -> dict[str, Any]:
    row: dict[str, Any] = {
        "type": "user",
        "message": {"role": "user", "content": content},
        "uuid": "u-1",
        "timestamp": "2026-07-13T10:05:00.000Z",
    }
    row.update(fields)
    return row


# --- the real fixtures -------------------------------------------------------


def test_every_fixture_is_covered() -> None:
    assert {path.name for path in FIXTURES.glob("*.jsonl")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_line_decisions(name: str) -> None:
    count, reasons = EXPECTED[name]
    lines = fixture_lines(name)
    assert len(lines) == count
    got = [classify_claude_line(line) for line in lines]
    assert [unit.reason for unit in got] == [reasons.get(i, "not_user") for i in range(count)]
    assert [unit.human for unit in got] == [reasons.get(i) == TYPED for i in range(count)]
    for line, unit in zip(lines, got, strict=True):
        assert not unit.stop
        if not unit.human:
            assert unit.text is None
            assert unit.occurred_at is None
            continue
        row = json.loads(line)
        assert unit.occurred_at == iso_ms(row["timestamp"])
        content = row["message"]["content"]
        if isinstance(content, str):
            assert unit.text == normalize_text(content)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_line_and_message_agree_on_fixtures(name: str) -> None:
    for line in fixture_lines(name):
        assert classify_claude_message(json.loads(line)) == classify_claude_line(line)


def test_fixture_lines_with_crlf_or_newline_classify_the_same() -> None:
    for line in fixture_lines(REJECT):
        unit = classify_claude_line(line)
        assert classify_claude_line(line + b"\n") == unit
        assert classify_claude_line(line + b"\r\n") == unit


def test_vscode_turn_keeps_only_the_typed_block() -> None:
    unit = classify_claude_line(fixture_lines(VSCODE)[2])
    assert unit == Unit(
        human=True,
        reason=TYPED,
        text="create me a .github/CODEOWNERS - attach the @entireio/cli-maintainers group "
        "as default for all",
        occurred_at=iso_ms("2026-01-19T03:15:09.400+00:00"),
    )


def test_short_typed_prompt_text() -> None:
    unit = classify_claude_line(fixture_lines(REJECT)[20])
    assert unit.human
    assert unit.text == "yes"


# --- anchor §4.5 ---------------------------------------------------------------


def test_anchor_69_only_the_real_upstream_prompt_counts() -> None:
    reseed = "\n".join([
        "Continue this conversation using the OpenClaw transcript below as prior session "
        "history.",
        "Treat it as authoritative context for this fresh CLI session.",
        "",
        "<conversation_history>",
        "User: previous",
        "</conversation_history>",
        "",
        "<next_user_message>",
        "current",
        "</next_user_message>",
    ])
    rows = [
        {"type": "assistant", "message": {"role": "assistant",
                                          "content": [{"type": "text", "text": "hi"}]}},
        user([{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]),
        user("[Inter-session message] synthetic"),
        user(reseed),
        user("real upstream prompt", timestamp="2026-07-13T10:05:00.000Z"),
    ]
    units = [both(row) for row in rows]
    assert [unit.reason for unit in units] == [
        "not_user", TOOL, "inter_session", "reseed_envelope", TYPED,
    ]
    assert units[-1] == Unit(
        human=True, reason=TYPED, text="real upstream prompt",
        occurred_at=iso_ms("2026-07-13T10:05:00.000+00:00"),
    )


def test_anchor_72_text_is_normalized_for_self_echo() -> None:
    unit = both(user(" same   prompt "))
    assert unit.human
    assert unit.text == "same prompt"
    assert text_hash(unit.text) == text_hash("same prompt")


def test_anchor_75_paired_node_rows_use_the_message_path() -> None:
    item = {"type": "user", "uuid": "item-2", "timestamp": "2026-07-13T10:07:00.000Z",
            "message": {"role": "user", "content": "native prompt"}}
    assert classify_claude_message(item) == Unit(
        human=True, reason=TYPED, text="native prompt",
        occurred_at=iso_ms("2026-07-13T10:07:00.000+00:00"),
    )


# --- flags and provenance -------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"isSidechain": True, "agentId": "a1"}, "sidechain"),
        ({"isCompactSummary": True}, "compact_summary"),
        ({"isVisibleInTranscriptOnly": True}, "compact_summary"),
        ({"isMeta": True}, "meta"),
        ({"origin": {"kind": "task-notification"}}, "task_notification"),
        ({"origin": {"kind": "queued-command"}}, "not_human_origin"),
        ({"entrypoint": "sdk-cli"}, "sdk_entrypoint"),
        ({"entrypoint": "sdk-ts"}, "sdk_entrypoint"),
        ({"entrypoint": "sdk-py"}, "sdk_entrypoint"),
        ({"promptSource": "system"}, "not_typed_source"),
        ({"promptSource": "sdk"}, "not_typed_source"),
    ],
)
def test_flags_that_make_a_row_not_human(fields: dict[str, object], reason: str) -> None:
    assert both(user("hello there", **fields)) == Unit(human=False, reason=reason)


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"isSidechain": False, "isMeta": False},
        {"origin": {"kind": "human"}},
        {"entrypoint": "cli"},
        {"entrypoint": "claude-vscode"},
        {"entrypoint": "claude-desktop"},
        {"promptSource": "typed", "permissionMode": "default"},
    ],
)
def test_typed_prompt_variants_are_human(fields: dict[str, object]) -> None:
    unit = both(user("hello there", **fields))
    assert unit.human
    assert unit.reason == TYPED
    assert unit.text == "hello there"


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ({"type": "assistant", "message": {"role": "user", "content": "x"}}, "not_user"),
        ({"type": "user", "message": {"role": "assistant", "content": "x"}}, "not_user"),
        ({"type": "user"}, "not_user"),
        ({"type": "user", "message": "x"}, "not_user"),
        ({"type": "user", "message": None}, "not_user"),
        ({"type": "queue-operation", "operation": "enqueue", "content": "typed"}, "not_user"),
        # A queued command without a prompt mode is not a queued prompt (see below).
        ({"type": "attachment", "attachment": {"type": "queued_command"}}, "queued_command"),
        ({"type": "attachment", "attachment": "x"}, "not_user"),
    ],
)
def test_rows_that_are_not_user_rows(row: dict[str, Any], reason: str) -> None:
    assert both(row) == Unit(human=False, reason=reason)


# --- content shapes ---------------------------------------------------------------

IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ([IMAGE], "image_only"),
        ([{"type": "document", "source": {}}], "image_only"),
        ([{"type": "text", "text": "[Image #1]"}, IMAGE], "image_only"),
        ([{"type": "text", "text": "  "}, IMAGE], "image_only"),
        ("[Image #1] [Image #2]", "image_only"),
        ([], "no_text"),
        ({"text": "x"}, "no_text"),
        (42, "no_text"),
        (None, "no_text"),
        ("", "empty"),
        ("   \n\t ", "empty"),
        ([{"type": "text", "text": None}], "empty"),
        ([{"type": "text", "text": "ok"}, {"type": "tool_result", "content": "x"}], TOOL),
        ([{"type": "tool_result", "content": [{"type": "text", "text": "x"}]}], TOOL),
        (["just a string in a list"], "no_text"),
        ([{"type": "text", "text": "<ide_opened_file>f</ide_opened_file>"}], "ide_context"),
        ("<ide_selection>unclosed", "ide_context"),
    ],
)
def test_content_without_typed_text(content: object, reason: str) -> None:
    assert both(user(content)) == Unit(human=False, reason=reason)


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ([{"type": "text", "text": "[Image #1] what is this?"}, IMAGE], "[Image #1] what is this?"),
        ([IMAGE, {"type": "text", "text": "describe it"}], "describe it"),
        (
            [
                {"type": "text", "text": "<ide_selection>line 3</ide_selection>"},
                {"type": "text", "text": "<ide_diagnostics>none</ide_diagnostics>"},
                {"type": "text", "text": "fix   this"},
            ],
            "fix this",
        ),
        ("<ide_opened_file>a.py</ide_opened_file>\nwhy does it fail", "why does it fail"),
        (
            [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}],
            "first",
        ),
        (
            [
                {"type": "text", "text": "please look"},
                {"type": "text", "text": "<system-reminder>ctx</system-reminder>"},
            ],
            "please look",
        ),
        ("use @src/app.py here", "use @src/app.py here"),
        ("mention of <bash-input> in the middle", "mention of <bash-input> in the middle"),
        ("I said Sender (untrusted metadata): earlier", "I said Sender (untrusted metadata): "
         "earlier"),
    ],
)
def test_typed_text_is_the_first_typed_block(content: object, text: str) -> None:
    unit = both(user(content))
    assert unit.human
    assert unit.text == text


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<local-command-caveat>Caveat: ...</local-command-caveat>", "caveat"),
        ("Caveat: The messages below were generated by the user while running local commands."
         " DO NOT respond.", "caveat"),
        ("<command-name>/exit</command-name>\n<command-message>exit</command-message>",
         "command"),
        ("<command-message>p:x</command-message>\n<command-name>/p:x</command-name>", "command"),
        ("<command-args>a</command-args>", "command"),
        ("<local-command-stdout>Bye!</local-command-stdout>", "command_output"),
        ("<local-command-stderr>err</local-command-stderr>", "command_output"),
        ("<bash-input>ls</bash-input>", "shell_mode"),
        ("<bash-stdout>x</bash-stdout><bash-stderr></bash-stderr>", "shell_output"),
        ("<user-memory-input>remember this</user-memory-input>", "memory_input"),
        ("<task-notification>\n<task-id>a1</task-id>\n</task-notification>",
         "task_notification"),
        ("[Request interrupted by user]", "interrupted"),
        ("[Request interrupted by user for tool use]", "interrupted"),
        ("[Inter-session message] sourceSession=agent:x isUser=false\nhi", "inter_session"),
        ("  [Inter-session message] indented", "inter_session"),
        ("Sender (untrusted metadata):\n```json\n{\"id\": \"x\"}\n```\n\nhi",
         "openclaw_envelope"),
        ("[Sun 2026-03-08 22:03 GMT+9] Conversation info (untrusted metadata):\n```json\n{}\n```",
         "openclaw_envelope"),
    ],
)
def test_wrapper_texts_are_not_human(text: str, reason: str) -> None:
    assert both(user(text)) == Unit(human=False, reason=reason)
    assert both(user([{"type": "text", "text": text}])) == Unit(human=False, reason=reason)


def test_wrapper_in_a_later_block_still_rejects_the_row() -> None:
    content = [{"type": "text", "text": "hello"}, {"type": "text", "text": "[Inter-session "
                                                                          "message] x"}]
    assert both(user(content)) == Unit(human=False, reason="inter_session")


def test_reseed_prefix_without_its_markers_is_typed() -> None:
    text = "Continue this conversation using the OpenClaw transcript below, please"
    assert both(user(text)).human


# --- timestamps -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("timestamp", "expected"),
    [
        ("2026-07-13T10:05:00.000Z", iso_ms("2026-07-13T10:05:00+00:00")),
        ("2026-07-13T12:05:00.123+02:00", iso_ms("2026-07-13T10:05:00.123+00:00")),
        ("2026-07-13T10:05:00", iso_ms("2026-07-13T10:05:00+00:00")),  # naive = UTC
        (1_784_000_000_000, 1_784_000_000_000),
        (1_784_000_000_000.7, 1_784_000_000_000),
        ("not a date", None),
        ("", None),
        ("2026-07-13T10:05:00Z" + "0" * 100, None),
        (True, None),
        (None, None),
        (float("inf"), None),
        (10**20, None),
        ({"ms": 1}, None),
    ],
)
def test_occurred_at(timestamp: object, expected: int | None) -> None:
    row = user("hi", timestamp=timestamp)
    assert classify_claude_message(row).occurred_at == expected
    if isinstance(timestamp, float) and timestamp == float("inf"):
        return  # not expressible in JSON
    assert classify_claude_line(encode(row)).occurred_at == expected


def test_missing_timestamp() -> None:
    row = user("hi")
    del row["timestamp"]
    assert both(row) == Unit(human=True, reason=TYPED, text="hi")


# --- hostile bytes ------------------------------------------------------------------

TYPED_LINE = encode(user("hello"))


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"", "blank"),
        (b"   ", "blank"),
        (b"\n", "blank"),
        (b"\r\n", "blank"),
        (TYPED_LINE[:-5], "invalid_json"),
        (TYPED_LINE[: len(TYPED_LINE) // 2], "invalid_json"),
        (b"{not-json}", "invalid_json"),
        (b"\x00" * 16, "invalid_json"),
        (TYPED_LINE + b"\x00", "invalid_json"),
        (TYPED_LINE.replace(b"hello", b"hel\x00lo"), "invalid_json"),
        (TYPED_LINE.replace(b"hello", b"hel\xfflo"), "invalid_json"),
        (TYPED_LINE.replace(b'"u-1"', b'"u-\xc3"'), "invalid_json"),  # in a skipped field
        (b"\xef\xbb\xbf" + TYPED_LINE, "invalid_json"),  # BOM is not JSON
        (TYPED_LINE.replace(b'"u-1"', b"NaN"), "invalid_json"),
        (b"[1, 2]", "invalid_json"),
        (b'"user"', "invalid_json"),
        (b"42", "invalid_json"),
        (b"null", "invalid_json"),
        (TYPED_LINE + TYPED_LINE, "invalid_json"),
    ],
)
def test_bad_bytes_are_never_human(line: bytes, reason: str) -> None:
    assert classify_claude_line(line) == Unit(human=False, reason=reason)


def test_invalid_utf8_in_a_non_user_row_is_not_human() -> None:
    line = encode({"type": "assistant", "x": "y"}).replace(b'"y"', b'"\xff"')
    assert not classify_claude_line(line).human


def test_valid_json_msgspec_refuses_is_still_classified() -> None:
    # A lone surrogate escape (Node writes these for split pairs) and a number
    # beyond float range are valid JSON; the stdlib fallback decodes them.
    lone = TYPED_LINE.replace(b"hello", b"hi \\ud83d")
    unit = classify_claude_line(lone)
    assert unit.human
    assert unit.text == "hi \ud83d"
    assert text_hash(unit.text)  # hashable with surrogatepass
    huge = TYPED_LINE.replace(b'"u-1"', b"1e400")
    assert classify_claude_line(huge) == Unit(
        human=True, reason=TYPED, text="hello",
        occurred_at=iso_ms("2026-07-13T10:05:00+00:00"),
    )


def test_odd_shapes_fall_back_to_the_mapping_path() -> None:
    for row in [
        user([{"type": "text", "text": "a"}, "stray"]),
        user([{"type": "text", "text": 7}]),
        {"type": "user", "message": {"role": "user", "content": {"a": 1}}},
        {"type": "user", "message": []},
        {"type": 5, "message": {"role": "user", "content": "hi"}},
        {"type": "user", "message": {"role": "user", "content": "hi"}, "origin": "human"},
        {"type": "user", "message": {"role": "user", "content": "hi"}, "origin": {"x": 1}},
    ]:
        both(row)


def test_message_path_accepts_anything_without_raising() -> None:
    for value in [None, 1, "x", [], b"x"]:
        assert classify_claude_message(value) == Unit(  # type: ignore[arg-type]
            human=False, reason="invalid_json"
        )


@pytest.mark.parametrize("depth", [10, 200, 5_000, 200_000])
def test_deep_nesting_never_raises(depth: int) -> None:
    nested = b"[" * depth + b"]" * depth
    in_skipped = b'{"type":"user","deep":' + nested + b',"message":{"role":"user","content":"x"}}'
    in_content = b'{"type":"user","message":{"role":"user","content":[' + nested + b"]}}"
    got = [classify_claude_line(line).reason for line in (nested, in_skipped, in_content)]
    if depth <= 200:
        assert got == ["invalid_json", TYPED, "no_text"]
    else:  # deeper than either decoder's recursion limit: not JSON we can read
        assert got == ["invalid_json", "invalid_json", "invalid_json"]


def test_two_mib_lines() -> None:
    big = "word " * (2 * 1024 * 1024 // 5)
    prompt = encode(user(big))
    assert len(prompt) > 2 * 1024 * 1024
    unit = classify_claude_line(prompt)
    assert unit.human
    assert unit.text == normalize_text(big)
    result = encode(user([{"type": "tool_result", "tool_use_id": "t", "content": big}]))
    assert classify_claude_line(result) == Unit(human=False, reason=TOOL)
    image = encode(user([{"type": "image", "source": {"data": "A" * 2 * 1024 * 1024}}]))
    assert classify_claude_line(image) == Unit(human=False, reason="image_only")


# --- properties -----------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12,
)
TEXTS = st.sampled_from([
    "hello", " spaced   out ", "", "<command-name>/x</command-name>", "[Image #1]",
    "<ide_opened_file>f</ide_opened_file>", "[Request interrupted by user]",
]) | st.text(max_size=30)
BLOCKS = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image", "tool_result", "thinking", "other"]),
     "text": TEXTS | JSON_VALUES},
)
FLAGS = st.sampled_from([True, False, None, 0, 1, "x"]) | JSON_VALUES
WILD_ROWS = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["user", "assistant", "system"]) | JSON_VALUES,
        "message": st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant"]) | JSON_VALUES,
             "content": TEXTS | st.lists(BLOCKS | JSON_VALUES, max_size=4) | JSON_VALUES},
        ) | JSON_VALUES,
    },
    optional={
        "isMeta": JSON_VALUES,
        "isSidechain": JSON_VALUES,
        "origin": st.fixed_dictionaries({"kind": JSON_VALUES}) | JSON_VALUES,
        "timestamp": JSON_VALUES,
        "extra": JSON_VALUES,
    },
)
USER_ROWS = st.fixed_dictionaries(
    {
        "type": st.just("user"),
        "message": st.fixed_dictionaries(
            {"role": st.just("user"), "content": TEXTS | st.lists(BLOCKS, max_size=4)},
        ),
    },
    optional={
        "isMeta": FLAGS,
        "isSidechain": FLAGS,
        "isCompactSummary": FLAGS,
        "isVisibleInTranscriptOnly": FLAGS,
        "origin": st.fixed_dictionaries(
            {"kind": st.sampled_from(["human", "task-notification", None, 3])}
        ) | JSON_VALUES,
        "entrypoint": st.sampled_from(["cli", "sdk-cli", "claude-vscode", None, 1]),
        "promptSource": st.sampled_from(["typed", "system", None, 2]),
        "timestamp": st.sampled_from(["2026-07-13T10:05:00.000Z", "bad", 1_784_000_000_000])
        | JSON_VALUES,
        "extra": JSON_VALUES,
    },
)
ROWS = USER_ROWS | WILD_ROWS


@settings(max_examples=300, deadline=None)
@given(ROWS)
def test_line_and_message_agree_on_generated_rows(row: dict[str, Any]) -> None:
    unit = both(row)
    assert unit.human == (unit.reason == TYPED)
    assert (unit.text is not None) == unit.human
    assert not unit.stop


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    unit = classify_claude_line(data)
    assert isinstance(unit, Unit)
    assert not unit.stop


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=len(TYPED_LINE)), st.binary(max_size=4))
def test_corrupted_typed_line_never_raises(cut: int, junk: bytes) -> None:
    unit = classify_claude_line(TYPED_LINE[:cut] + junk + TYPED_LINE[cut:])
    assert isinstance(unit, Unit)
    if unit.human:
        assert unit.text is not None


# --- plan approval ("Yes, clear context and ...") --------------------------------------------

PLAN = "# Plan\n\n1. Add the parser.\n2. Test it."


def _plan_row(*, plan_content: object) -> dict[str, Any]:
    row = json.loads(claude_user(f"Implement the following plan:\n\n{PLAN}"))
    if plan_content is not None:
        row["planContent"] = plan_content
    return row


def test_a_plan_approval_row_is_a_click_not_typed_text() -> None:
    row = _plan_row(plan_content=PLAN)
    for unit in (classify_claude_line(json.dumps(row).encode()), classify_claude_message(row)):
        assert (unit.human, unit.reason) == (False, "plan_approval")


def test_typing_the_phrase_without_plan_content_still_counts() -> None:
    for plan_content in (None, "", "  ", 7):
        row = _plan_row(plan_content=plan_content)
        unit = classify_claude_line(json.dumps(row).encode())
        assert (unit.human, unit.reason) == (True, "typed")
        assert classify_claude_message(row) == unit


# --- prompts typed while the agent works: queued_command attachments ------------------------


def _queued(prompt: object, **attachment: object) -> dict[str, Any]:
    row = json.loads(claude_user("placeholder"))
    del row["message"]
    row["type"] = "attachment"
    row["attachment"] = {"type": "queued_command", "commandMode": "prompt",
                         "origin": {"kind": "human"}, "prompt": prompt, **attachment}
    return row


def _both(row: dict[str, Any]) -> Unit:
    unit = classify_claude_line(json.dumps(row).encode())
    assert classify_claude_message(row) == unit  # both entry points agree
    return unit


def test_a_prompt_typed_while_the_agent_works_counts() -> None:
    unit = _both(_queued("also update the docs"))
    assert (unit.human, unit.reason, unit.text) == (True, "typed", "also update the docs")
    blocks = _both(_queued([{"type": "text", "text": "and  the tests"}]))
    assert (blocks.human, blocks.text) == (True, "and the tests")


@pytest.mark.parametrize(("attachment", "reason"), [
    ({"commandMode": "task-notification"}, "task_notification"),
    ({"commandMode": "bash"}, "queued_command"),
    ({"origin": {"kind": "peer"}}, "peer_message"),
    ({"origin": {"kind": "auto-continuation"}}, "not_human_origin"),
    ({"origin": None}, "not_human_origin"),
    ({"isMeta": True}, "meta"),
])
def test_queued_commands_that_no_person_typed_do_not_count(
    attachment: dict[str, object], reason: str,
) -> None:
    unit = _both(_queued("a queued text", **attachment))
    assert (unit.human, unit.reason) == (False, reason)


def test_queued_prompts_follow_the_user_row_rules_and_other_attachments_stay_not_user() -> None:
    assert _both(_queued("<command-name>/model</command-name>")).reason == "command"
    for attachment in ({"type": "todo_reminder", "content": []},
                       {"type": "plan_mode", "reminderType": "full", "isSubAgent": False,
                        "planFilePath": "/home/u/.claude/plans/p.md", "planExists": False},
                       {"type": "plan_mode_exit", "planFilePath": "/p.md", "planExists": True},
                       {"type": "edited_text_file", "filename": "/w/a.py", "snippet": "x"}):
        other = _queued("x")
        other["attachment"] = attachment
        assert _both(other).reason == "not_user", attachment


def test_agent_team_messages_are_not_typed() -> None:
    row = json.loads(claude_user(
        '<teammate-message teammate_id="team-lead" summary="next">\nTake task 2.\n'
        "</teammate-message>"))
    assert _both(row) == Unit(human=False, reason="teammate_message")
