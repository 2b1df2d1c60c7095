"""Pi session classification (formats doc §5, §6; anchor §3.17 "Pi", §4.8).

Each real fixture has its full per-line decision, worked out by reading every
line (PROVENANCE.md "Pi" was the guide): a line is human exactly when its
reason is ``typed``; no fixture line stops classification. Fixtures are read
in place from ``shared/`` beside the repository.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, NoReturn

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.upstream import Unit, normalize_text, text_hash
from actors.upstream.pi.classify import _classify_mapping, classify_pi_line, pi_header_version
from tests import conftest

FIXTURES = conftest.FIXTURES / "pi"

V1_COMPACTION = "pi-v1-compaction-bash-excerpt.jsonl"
V1_MODE = "pi-v1-header-mode-excerpt.jsonl"
V3_OPENCLAW = "pi-v3-openclaw-gateway-excerpt.jsonl"
V3_PRINT = "pi-v3-print-redacted.jsonl"

TYPED = "typed"
A = "assistant"
T = "tool_result"

# fixture -> (header version, full per-line reason list)
EXPECTED: dict[str, tuple[int, list[str]]] = {
    V1_COMPACTION: (
        1,
        [
            "header",
            TYPED,  # 1 "any other such pathing issues possibly?"
            A, T, A, T, A, T, A, T, A,
            "compaction",  # 11
            TYPED,  # 12 "alright, where were we?"
            A, T, A, T, A, T, A,
            TYPED,  # 20
            A,
            "shell_mode",  # 22 bashExecution "!ls"
            TYPED,  # 23 "wow, it works"
            A,
            TYPED,  # 25 "wow"
            A,
            TYPED,  # 27
            A,
            TYPED,  # 29 "are we all commited?"
        ],
    ),
    V1_MODE: (
        1,
        [
            "header",
            TYPED,  # 1 "/mode": an early build stored the typed command as user text
            A,
            "model_change",
            TYPED,  # 4
            A, T, T, T, A, T, T, T, T, A, T, A,
        ],
    ),
    V3_OPENCLAW: (
        3,
        [
            "header",
            A,
            "thinking_level_change",
            "custom_entry",  # customType model-snapshot
            "openclaw_envelope",  # 4 relayed by the gateway, not typed into Pi
            A, A, A, A,
            "custom_entry",
            "openclaw_envelope",  # 10
        ],
    ),
    V3_PRINT: (
        3,
        ["header", "session_info", "model_change", "thinking_level_change", TYPED, A],
    ),
}


def fixture_lines(name: str) -> list[bytes]:
    data = (FIXTURES / name).read_bytes()
    assert data.endswith(b"\n")
    return data.split(b"\n")[:-1]


def encode(entry: Mapping[str, Any]) -> bytes:
    return json.dumps(entry, ensure_ascii=False).encode()


def iso_ms(value: str) -> int:
    return int(datetime.fromisoformat(value).timestamp() * 1000 + 0.5)


def user(content: object, **fields: object) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "type": "message",
        "id": "a1b2c3d4",
        "parentId": None,
        "timestamp": "2026-06-05T05:24:28.254Z",
        "message": {"role": "user", "content": content, "timestamp": 1_780_637_068_253},
    }
    entry.update(fields)
    return entry


def classify(entry: Mapping[str, Any]) -> Unit:
    """Classify ``entry`` encoded as a line; the mapping slow path must agree."""
    unit = classify_pi_line(encode(entry))
    assert _classify_mapping(entry) == unit
    return unit


def reject_constant(name: str) -> NoReturn:
    raise ValueError(name)  # NaN / Infinity are not JSON


def scan(lines: Iterable[bytes]) -> tuple[list[Unit], int]:
    """The monitor's walk (anchor §3.17 "Pi"): blank lines are consumed, a stop
    unit halts before its line. Returns the consumed units and how many lines
    the cursor passed."""
    units: list[Unit] = []
    passed = 0
    for line in lines:
        if line.strip():
            unit = classify_pi_line(line)
            if unit.stop:
                break
            units.append(unit)
        passed += 1
    return units, passed


# --- the real fixtures ----------------------------------------------------------


def test_every_fixture_is_covered() -> None:
    assert {path.name for path in FIXTURES.glob("*.jsonl")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_line_decisions(name: str) -> None:
    _, reasons = EXPECTED[name]
    lines = fixture_lines(name)
    assert len(lines) == len(reasons)
    got = [classify_pi_line(line) for line in lines]
    assert [unit.reason for unit in got] == reasons
    assert [unit.human for unit in got] == [reason == TYPED for reason in reasons]
    assert not any(unit.stop for unit in got)
    for line, unit in zip(lines, got, strict=True):
        entry = json.loads(line)
        assert _classify_mapping(entry) == unit
        if not unit.human:
            assert unit.text is None
            assert unit.occurred_at is None
            continue
        message = entry["message"]
        assert unit.occurred_at == message["timestamp"]
        texts = [part["text"] for part in message["content"] if part["type"] == "text"]
        assert unit.text == normalize_text("\n".join(texts))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_header_versions(name: str) -> None:
    version, _ = EXPECTED[name]
    lines = fixture_lines(name)
    assert pi_header_version(lines[0]) == version
    assert pi_header_version(lines[0] + b"\n") == version
    assert all(pi_header_version(line) is None for line in lines[1:])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_scans_to_the_end(name: str) -> None:
    lines = fixture_lines(name)
    units, passed = scan(lines)
    assert passed == len(lines)
    assert len(units) == len(lines)


def test_fixture_typed_texts() -> None:
    texts = [classify_pi_line(line).text for line in fixture_lines(V1_COMPACTION)]
    assert [text for text in texts if text is not None] == [
        "any other such pathing issues possibly?",
        "alright, where were we?",
        "so, i'm now in the new implementation, you still there?",
        "wow, it works",
        "wow",
        "jesus, everything works, you are a monster",
        "are we all commited?",
    ]
    assert classify_pi_line(fixture_lines(V1_MODE)[1]).text == "/mode"


# --- anchor §4.8 ------------------------------------------------------------------------


def test_anchor_101_own_text_is_normalized() -> None:
    unit = classify(user("sent  from OpenClaw"))
    assert unit.text == "sent from OpenClaw"
    assert text_hash(unit.text) == text_hash("sent from OpenClaw")
    assert classify(user("external Pi turn")).text == "external Pi turn"


def test_anchor_104_deliberately_differs_a_complete_bad_row_is_read_past() -> None:
    """Issue 25 item 13: OpenClaw's cursor never passes a bad row, which silenced a
    session for good; here a complete bad row is decided not typed and read past."""
    first = encode(user("first"))
    second = encode(user("second"))
    units, passed = scan([first, b"{not-json}", second])
    assert [unit.text for unit in units] == ["first", None, "second"]
    assert [unit.reason for unit in units][1] == "invalid_json"
    assert passed == 3


def test_blank_lines_are_consumed_not_stops() -> None:
    units, passed = scan([b"", b"  \r", encode(user("after blanks")), b""])
    assert [unit.text for unit in units] == ["after blanks"]
    assert passed == 4


# --- entries and roles ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"type": "session", "version": 3, "id": "x", "cwd": "/"}, "header"),
        ({"type": "custom_message", "customType": "x", "content": "hi", "display": True},
         "custom_message"),
        ({"type": "custom", "customType": "x", "data": {}}, "custom_entry"),
        ({"type": "compaction", "summary": "s", "firstKeptEntryId": "a"}, "compaction"),
        ({"type": "branch_summary", "fromId": "a", "summary": "s"}, "branch_summary"),
        ({"type": "label", "targetId": "a", "label": "l"}, "label"),
        ({"type": "session_info", "name": "n"}, "session_info"),
        ({"type": "model_change", "provider": "p", "modelId": "m"}, "model_change"),
        ({"type": "thinking_level_change", "thinkingLevel": "off"}, "thinking_level_change"),
        ({"type": "something_new", "message": {"role": "user", "content": "hi"}},
         "not_message"),
        ({"type": 3}, "not_message"),
        ({}, "not_message"),
        ({"type": "message"}, "not_user"),
        ({"type": "message", "message": None}, "not_user"),
        ({"type": "message", "message": "user"}, "not_user"),
        ({"type": "message", "message": {"content": "hi"}}, "not_user"),
        ({"type": "message", "message": {"role": "assistant", "content": []}}, "assistant"),
        ({"type": "message", "message": {"role": "toolResult", "content": []}}, "tool_result"),
        ({"type": "message", "message": {"role": "bashExecution", "command": "ls"}},
         "shell_mode"),
        ({"type": "message", "message": {"role": "custom", "content": "x"}}, "custom"),
        ({"type": "message", "message": {"role": "hookMessage", "content": "x"}}, "custom"),
        ({"type": "message", "message": {"role": "branchSummary", "summary": "s"}},
         "branch_summary"),
        ({"type": "message", "message": {"role": "compactionSummary", "summary": "s"}},
         "compaction_summary"),
        ({"type": "message", "message": {"role": "system", "content": "x"}}, "not_user"),
        ({"type": "message", "message": {"role": ["user"], "content": "x"}}, "not_user"),
    ],
)
def test_entries_that_are_not_human(entry: dict[str, Any], reason: str) -> None:
    assert classify(entry) == Unit(human=False, reason=reason)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("", "empty"),
        (" \n\t", "empty"),
        ([], "empty"),
        (None, "empty"),
        ({"text": "x"}, "empty"),
        (42, "empty"),
        ([{"type": "text", "text": ""}, {"type": "image", "data": "AA==", "mimeType": "x"}],
         "image_only"),
        ([{"type": "image", "data": "AA==", "mimeType": "image/png"}], "image_only"),
        ([{"type": "text", "text": 5}], "empty"),
        (["text"], "empty"),
        ("Sender (untrusted metadata):\n```json\n{\"id\": \"gateway-client\"}\n```\n\nhi",
         "openclaw_envelope"),
        ("Conversation info (untrusted metadata):\n```json\n{}\n```\n\nSender (untrusted "
         "metadata):\n```json\n{}\n```\n\nhi", "openclaw_envelope"),
        ([{"type": "text", "text": "[Wed 2026-03-11 23:51 PDT] Sender (untrusted metadata):\n"
                                   "```json\n{}\n```\nhi"}], "openclaw_envelope"),
        ("[Inter-session message] sourceSession=agent:x\nhi", "inter_session"),
        ("Continue this conversation using the OpenClaw transcript below as prior session "
         "history.\n\n<conversation_history>\nUser: a\n</conversation_history>",
         "reseed_envelope"),
    ],
)
def test_user_messages_that_are_not_human(content: object, reason: str) -> None:
    assert classify(user(content)) == Unit(human=False, reason=reason)


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ("hello", "hello"),
        ("  many   spaces\n\nand lines ", "many spaces and lines"),
        ([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "a b"),
        ([{"type": "text", "text": "look"}, {"type": "image", "data": "AA=="}], "look"),
        ([{"type": "text", "text": "x"}, "stray", {"type": "text", "text": "y"}], "x y"),
        ('<skill name="s" location="/p">body</skill>\n\ndo it', '<skill name="s" '
         'location="/p">body</skill> do it'),
        ("I pasted: Sender (untrusted metadata):", "I pasted: Sender (untrusted metadata):"),
        ("/model", "/model"),
    ],
)
def test_user_messages_that_are_human(content: object, text: str) -> None:
    unit = classify(user(content))
    assert unit == Unit(human=True, reason=TYPED, text=text, occurred_at=1_780_637_068_253)


# --- timestamps ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message_ts", "entry_ts", "expected"),
    [
        (1_780_637_068_253, "2026-06-05T05:24:28.254Z", 1_780_637_068_253),
        (None, "2026-06-05T05:24:28.254Z", iso_ms("2026-06-05T05:24:28.254+00:00")),
        ("2026-06-05T05:24:28.000Z", None, iso_ms("2026-06-05T05:24:28+00:00")),
        (None, 1_780_637_068_000, 1_780_637_068_000),
        (1_780_637_068_253.9, None, 1_780_637_068_253),
        ("garbage", "2026-06-05T05:24:28.254Z", iso_ms("2026-06-05T05:24:28.254+00:00")),
        (True, None, None),
        (None, None, None),
        ("garbage", "garbage", None),
        (10**20, None, None),
        ({"ms": 1}, [], None),
    ],
)
def test_occurred_at(message_ts: object, entry_ts: object, expected: int | None) -> None:
    entry = user("hi", timestamp=entry_ts)
    entry["message"]["timestamp"] = message_ts
    assert classify(entry).occurred_at == expected


def test_missing_timestamps() -> None:
    entry = user("hi")
    del entry["timestamp"]
    del entry["message"]["timestamp"]
    assert classify(entry) == Unit(human=True, reason=TYPED, text="hi")


# --- hostile bytes: a line that is not a JSON object is not typed (never stops a scan) ---

TYPED_LINE = encode(user("hello"))
STOP = Unit(human=False, reason="invalid_json")  # issue 25 item 13: no stop


@pytest.mark.parametrize(
    "line",
    [
        b"{not-json}",
        TYPED_LINE[:-1],
        TYPED_LINE[: len(TYPED_LINE) // 2],
        b"\x00",
        b"\x00" * 64,
        TYPED_LINE + b"\x00",
        TYPED_LINE.replace(b"hello", b"hel\x00lo"),
        TYPED_LINE.replace(b"hello", b"hel\xfflo"),
        TYPED_LINE.replace(b'"a1b2c3d4"', b'"a1\xe2\x82"'),  # bad UTF-8 in an unread field
        b"\xef\xbb\xbf" + TYPED_LINE,
        TYPED_LINE.replace(b'"a1b2c3d4"', b"NaN"),
        TYPED_LINE.replace(b'"a1b2c3d4"', b"Infinity"),
        TYPED_LINE + b" " + TYPED_LINE,
        b"[]",
        b"[" + TYPED_LINE + b"]",
        b'"message"',
        b"3",
        b"true",
        b"null",
    ],
)
def test_lines_that_are_not_json_objects_are_invalid_not_typed(line: bytes) -> None:
    assert classify_pi_line(line) == STOP
    assert classify_pi_line(line + b"\n") == STOP


@pytest.mark.parametrize("line", [b"", b" ", b"\n", b"\r\n", b"\t \r\n"])
def test_blank_lines(line: bytes) -> None:
    assert classify_pi_line(line) == Unit(human=False, reason="blank")


def test_line_endings_do_not_matter() -> None:
    unit = classify_pi_line(TYPED_LINE)
    assert unit.human
    assert classify_pi_line(TYPED_LINE + b"\n") == unit
    assert classify_pi_line(TYPED_LINE + b"\r\n") == unit


def test_valid_json_msgspec_refuses_is_still_classified() -> None:
    lone = TYPED_LINE.replace(b"hello", b"hi \\udc00")
    unit = classify_pi_line(lone)
    assert unit.human
    assert unit.text == "hi \udc00"
    assert text_hash(unit.text)
    huge = TYPED_LINE.replace(b'"a1b2c3d4"', b"-1e999")
    assert classify_pi_line(huge).human


@pytest.mark.parametrize("depth", [10, 200, 5_000, 200_000])
def test_deep_nesting_never_raises(depth: int) -> None:
    nested = b"[" * depth + b"]" * depth
    in_entry = TYPED_LINE.replace(b'"a1b2c3d4"', nested)
    in_content = encode(user("x")).replace(b'"x"', b"[" + nested + b"]")
    assert classify_pi_line(nested) == STOP
    if depth <= 200:
        assert classify_pi_line(in_entry).human
        assert classify_pi_line(in_content) == Unit(human=False, reason="empty")
    else:  # deeper than either decoder's recursion limit: not JSON we can read
        assert classify_pi_line(in_entry) == STOP
        assert classify_pi_line(in_content) == STOP


def test_two_mib_lines() -> None:
    big = "word " * (2 * 1024 * 1024 // 5)
    line = encode(user([{"type": "text", "text": big}]))
    assert len(line) > 2 * 1024 * 1024
    unit = classify_pi_line(line)
    assert unit.human
    assert unit.text == normalize_text(big)
    result = encode({"type": "message", "message": {"role": "toolResult",
                                                    "content": [{"type": "text", "text": big}]}})
    assert classify_pi_line(result) == Unit(human=False, reason="tool_result")
    image = encode(user([{"type": "text", "text": ""},
                         {"type": "image", "data": "A" * 2 * 1024 * 1024}]))
    assert classify_pi_line(image) == Unit(human=False, reason="image_only")
    assert classify_pi_line(line[:-1]) == STOP


# --- header versions ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "version"),
    [
        (b'{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}', 3),
        (b'{"type":"session","version":2,"id":"x"}\n', 2),
        (b'{"type":"session","version":4}\r\n', 4),
        (b'{"type":"session","version":3.0}', 3),
        (b'{"type":"session","id":"x","provider":"anthropic"}', 1),
        (b'{"type":"session","version":null}', 1),
        (b'{"type":"session","version":"3"}', None),
        (b'{"type":"session","version":0}', None),
        (b'{"type":"session","version":-3}', None),
        (b'{"type":"session","version":2.5}', None),
        (b'{"type":"session","version":true}', None),
        (b'{"type":"session","version":[3]}', None),
        (b'{"type":"session","version":1e999}', None),
        (b'{"type":"message","version":3}', None),
        (b'{"version":3}', None),
        (b"[]", None),
        (b"", None),
        (b"{not-json}", None),
        (b'{"type":"session","version":3', None),
        (b'{"type":"session","cwd":"\xff","version":3}', None),
        (b"\x00", None),
        (b"[" * 100_000 + b"]" * 100_000, None),
    ],
)
def test_pi_header_version(line: bytes, version: int | None) -> None:
    assert pi_header_version(line) == version


# --- properties -----------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12,
)
TEXTS = st.sampled_from(["hello", " a  b ", "", "Sender (untrusted metadata):\n```"]) | st.text(
    max_size=30
)
PARTS = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image", "toolCall"]) | JSON_VALUES,
     "text": TEXTS | JSON_VALUES},
)
WILD_ENTRIES = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["message", "session", "custom", "compaction"]) | JSON_VALUES,
        "message": st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant", "bashExecution"]) | JSON_VALUES,
             "content": TEXTS | st.lists(PARTS | JSON_VALUES, max_size=4) | JSON_VALUES},
            optional={"timestamp": JSON_VALUES},
        ) | JSON_VALUES,
    },
    optional={"timestamp": JSON_VALUES, "id": JSON_VALUES, "version": JSON_VALUES},
)
USER_ENTRIES = st.fixed_dictionaries(
    {
        "type": st.just("message"),
        "message": st.fixed_dictionaries(
            {"role": st.just("user"), "content": TEXTS | st.lists(PARTS, max_size=4)},
            optional={"timestamp": st.integers(0, 2**50) | JSON_VALUES},
        ),
    },
    optional={"timestamp": st.just("2026-06-05T05:24:28.254Z") | JSON_VALUES,
              "id": JSON_VALUES},
)
ENTRIES = USER_ENTRIES | WILD_ENTRIES


@settings(max_examples=300, deadline=None)
@given(ENTRIES)
def test_json_objects_never_stop_and_both_paths_agree(entry: dict[str, Any]) -> None:
    unit = classify(entry)
    assert not unit.stop
    assert unit.human == (unit.reason == TYPED)
    assert (unit.text is not None) == unit.human


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_raise_and_are_invalid_iff_not_an_object(data: bytes) -> None:
    unit = classify_pi_line(data)
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=reject_constant)
    except (ValueError, TypeError, RecursionError):
        value = None
    if not data.strip():
        assert unit.reason == "blank"
    else:
        assert not unit.stop
        assert (unit.reason == "invalid_json") == (not isinstance(value, dict))


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=len(TYPED_LINE)), st.binary(max_size=4))
def test_corrupted_typed_line_never_raises(cut: int, junk: bytes) -> None:
    unit = classify_pi_line(TYPED_LINE[:cut] + junk + TYPED_LINE[cut:])
    assert isinstance(unit, Unit)
    assert pi_header_version(TYPED_LINE[:cut] + junk + TYPED_LINE[cut:]) is None


# --- /skill:name expansions (AgentSession._expandSkillCommand, pi-mono coding-agent) --------

SKILL_BLOCK = ('<skill name="review" location="/home/me/.pi/agent/skills/review/SKILL.md">\n'
               "References are relative to /home/me/.pi/agent/skills/review.\n\n"
               "# Review\n\nRead the diff and list the problems.\n</skill>")


def _pi_user_line(text: str) -> bytes:
    return json.dumps({"type": "message", "id": "a1b2c3d4", "parentId": None,
                       "timestamp": "2026-06-05T05:24:28.254Z",
                       "message": {"role": "user", "content": [{"type": "text", "text": text}],
                                   "timestamp": 1780637068253}}).encode()


def test_a_bare_skill_invocation_is_a_command_not_typed_text() -> None:
    unit = classify_pi_line(_pi_user_line(SKILL_BLOCK))
    assert (unit.human, unit.reason) == (False, "skill_command")


def test_text_typed_after_a_skill_counts_as_the_command_the_person_typed() -> None:
    unit = classify_pi_line(_pi_user_line(SKILL_BLOCK + "\n\nlook at foo.py first"))
    assert (unit.human, unit.reason) == (True, "typed")
    # What was typed (and what a gateway would note as its own text), not the skill file.
    assert unit.text == normalize_text("/skill:review look at foo.py first")


def test_a_skill_file_that_quotes_its_closing_tag_never_becomes_typed_text() -> None:
    quoting = SKILL_BLOCK.replace("list the problems.", "end with\n</skill>\n\nlike this.")
    assert classify_pi_line(_pi_user_line(quoting)).reason == "skill_command"
    unit = classify_pi_line(_pi_user_line(quoting + "\n\nnow"))
    assert unit.text == normalize_text("/skill:review now")


def test_text_that_only_looks_like_a_skill_block_is_typed_as_it_stands() -> None:
    for text in ("<skill>hello</skill>", SKILL_BLOCK + " and more on the same line",
                 "please explain " + SKILL_BLOCK):
        unit = classify_pi_line(_pi_user_line(text))
        assert (unit.human, unit.text) == (True, normalize_text(text))
