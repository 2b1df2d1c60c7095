"""The long-line reducer (actors.upstream.longline): pure, no threads.

Its promise: fed a JSONL line in pieces of any size, it writes a copy with the
same structure and every value the classifiers read, long strings cut to head
and tail with the whole text's hash kept; invalid stays invalid; and the
source's ordinary rule decides the copy as it decides the line.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest

from actors.upstream import longline as _longline
from actors.upstream import longline_tokens as _longline_tokens
from actors.upstream.common import OwnTextClaims, Unit, text_hash
from actors.upstream.longline import LineReducer
from actors.upstream.longline_reduced import ReducedLine, reduced_unit
from actors.upstream.scan import classify_long_line, count_turns, line_classifier
from tests._upstream_rows import claude_user, codex_legacy_user, pi_user
from tests.conftest import FIXTURES, needs_fixtures

SEED = 20261201


def reduce(line: bytes, piece: int) -> ReducedLine:
    reducer = LineReducer()
    for start in range(0, len(line), piece):
        reducer.feed(line[start:start + piece])
    return reducer.finish()


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thresholds small enough that short test lines exercise every reduction."""
    monkeypatch.setattr(_longline, "SHORT_STRING_BYTES", 24)
    monkeypatch.setattr(_longline, "KEEP_CHARS", 6)
    monkeypatch.setattr(_longline, "_PIECE_BYTES", 7)
    monkeypatch.setattr(_longline, "_JOIN_BYTES", 5)


_NASTY = ['"', "\\", "/", "\b", "\f", "\n", "\r", "\t", "\x01", "\x1f", " ", "  ", "\xa0",
          "\u2003", "\u3000", "\x1c", "é", "€", "\U0001F600", "\ud83d", "\ude00", "a", "z",
          "\\u", "]", "}", ",", ":"]


def _text(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(_NASTY) for _ in range(length))


def _value(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(8 if depth < 4 else 4)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 7, 12345678901234567890, 1.5, -2.5e-7, 1e300])
    if kind in (2, 3):
        return _text(rng, rng.choice([0, 1, 5, 30, 80]))
    if kind in (4, 5):
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {_text(rng, rng.randrange(4)): _value(rng, depth + 1) for _ in range(rng.randrange(4))}


def _documents(count: int) -> Iterator[tuple[Any, bytes]]:
    rng = random.Random(SEED)
    for _ in range(count):
        doc = {"type": "user", "v": _value(rng, 0)}
        text = json.dumps(doc, ensure_ascii=rng.random() < 0.5)
        try:
            yield doc, text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate can only be written escaped
            yield doc, json.dumps(doc).encode()


def _walk(original: Any, reduced: Any, elided: tuple[tuple[str, str], ...]) -> None:
    """``reduced`` is ``original`` with long strings cut to head and tail (6 chars each)."""
    if isinstance(original, str):
        assert isinstance(reduced, str)
        if len(original) <= 12 or reduced == original:
            assert reduced == original
            return
        assert reduced.startswith(original[:6])
        assert reduced.endswith(original[-6:])
        index = int(reduced[6:-6].split(":")[1].rstrip("\ue001"))
        assert elided[index][1] == text_hash(original)
    elif isinstance(original, dict):
        assert isinstance(reduced, dict)
        assert list(reduced) == [
            k if len(k) <= 12 else reduced_key for k, reduced_key in zip(original, reduced,
                                                                          strict=True)]
        for (_, a), (_, b) in zip(original.items(), reduced.items(), strict=True):
            _walk(a, b, elided)
    elif isinstance(original, list):
        assert isinstance(reduced, list)
        assert len(reduced) == len(original)
        for a, b in zip(original, reduced, strict=True):
            _walk(a, b, elided)
    else:
        assert reduced == original


@pytest.mark.usefixtures("small")
def test_random_documents_keep_their_structure_and_values_in_pieces_of_any_size() -> None:
    checked = 0
    for _, line in _documents(300):
        meaning = json.loads(line)  # what JSON says (escaped surrogate pairs are one char)
        for piece in (1, 2, 3, 5, 8, 13, 64, len(line)):
            reduced = reduce(line, piece)
            assert not reduced.pruned
            assert not reduced.oversized
            _walk(meaning, json.loads(reduced.line), reduced.elided)
            checked += 1
    assert checked == 2400


def test_a_line_below_every_threshold_is_copied_exactly() -> None:
    for _, line in _documents(100):
        assert json.loads(reduce(line, 3).line) == json.loads(line)


@pytest.mark.usefixtures("small")
@pytest.mark.parametrize("line", [
    b'{"a":1,}', b'{"a" 1}', b"[1 2]", b'{"a":"\x01"}', b'{"a":tru}', b"{", b'{"a":1}}',
    b"01", b'{"a":"\\x"}', b'{"a":"' + b"x" * 40 + b'\\x"}', b'{"a":"' + b"x" * 40 + b'\x01"}',
    b'{"a":"' + b"x" * 40 + b'\\u12"}', b'{"a":"' + b"x" * 40, b"[" * 1100 + b"]" * 1100,
    b"", b"   ", b'{"a":1} x', b"{} {}", b'{"a":-}', b'{"a":1.}', b'{"a":.5}',
])
def test_invalid_json_stays_invalid(line: bytes) -> None:
    for piece in (1, 2, 7, 1000):
        reduced = reduce(line, piece)
        with pytest.raises(json.JSONDecodeError):
            json.loads(reduced.line)


@pytest.mark.usefixtures("small")
@pytest.mark.parametrize("where", ["short", "long", "dropped"])
def test_invalid_utf8_anywhere_stays_invalid_utf8(where: str) -> None:
    bad = {"short": b'{"a":"\xff","b":1}', "long": b'{"a":"' + b"x" * 40 + b'\xff"}',
           "dropped": b'{"a":[' + b'"x",' * 600 + b'"\xff"]}'}[where]
    for piece in (1, 5, 1000):
        reduced = reduce(bad, piece)
        with pytest.raises(UnicodeDecodeError):
            reduced.line.decode("utf-8")


def test_the_whole_text_hash_is_text_hash_of_the_whole_string(small: None) -> None:
    rng = random.Random(SEED)
    for _ in range(300):
        text = _text(rng, rng.randrange(13, 120))
        line = json.dumps({"t": text}).encode()
        meaning = json.loads(line)["t"]  # escaped surrogate pairs are one character
        for piece in (1, 4, 9, 1000):
            reduced = reduce(line, piece)
            assert reduced.elided or len(meaning) <= 12
            if reduced.elided:
                assert reduced.elided[0][1] == text_hash(meaning)


def test_arrays_past_their_limit_and_deep_nesting_prune_and_a_typed_row_then_does_not_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    classify = line_classifier("claude")
    row = json.loads(claude_user("typed"))
    row["extra"] = list(range(_longline.KEEP_ITEMS + 1))
    reduced = reduce(json.dumps(row).encode(), 4096)
    assert reduced.pruned
    assert len(json.loads(reduced.line)["extra"]) == _longline.KEEP_ITEMS
    assert classify(reduced.line).human
    assert reduced_unit(classify(reduced.line), reduced).reason == "oversized_structure"
    row["extra"] = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
    reduced = reduce(json.dumps(row).encode(), 4096)
    assert reduced.pruned
    assert reduced_unit(classify(reduced.line), reduced).human is False
    monkeypatch.setattr(_longline, "REDUCED_MAX_BYTES", 100)
    row = {"type": "user", "message": {"role": "user", "content": "typed"},
           "extra": [{"k": "v" * 50} for _ in range(50)]}
    reduced = reduce(json.dumps(row).encode(), 4096)
    assert reduced.oversized
    assert len(reduced.line) < 400
    assert classify(reduced.line).human  # the copy stays valid JSON ...
    assert reduced_unit(classify(reduced.line), reduced).reason == "oversized_line"  # ... but
    pi = reduce(pi_user("typed " * 100).rstrip(b"\n"), 4096)
    unit = reduced_unit(line_classifier("pi")(pi.line), pi)
    assert not unit.human
    assert not unit.stop


def test_a_long_typed_text_carries_its_whole_hash_for_self_echo() -> None:
    text = "paste " * 10_000 + "\n\tend"
    for source, line in (("claude", claude_user(text)), ("pi", pi_user(text)),
                         ("codex", codex_legacy_user(text).splitlines()[1])):
        reducer = LineReducer()
        reducer.feed(line.rstrip(b"\n"))
        unit = classify_long_line(line_classifier(source), reducer)
        assert unit.human, source
        assert unit.echo_hash == text_hash(text), source
        assert len(unit.text or "") < 2 * _longline.KEEP_CHARS + 40
        assert count_turns([unit], OwnTextClaims.of(text_hash(text))) == (0, None)
        assert count_turns([unit], OwnTextClaims.of(text_hash("other")))[0] == 1


def test_a_marker_a_person_typed_is_not_taken_for_an_elision() -> None:
    reduced = ReducedLine(line=b"", size=0, pruned=False, oversized=False,
                          elided=(("something else", "0" * 64),))
    unit = Unit(human=True, reason="typed", text="a \ue000ssa-elided:0\ue001 b")
    assert reduced_unit(unit, reduced).echo_hash is None


def _fixture_lines() -> Iterator[tuple[str, bytes]]:
    for folder, source in (("claude-code", "claude"), ("codex", "codex"), ("pi", "pi")):
        for path in sorted((FIXTURES / folder).rglob("*.jsonl")):
            for line in path.read_bytes().split(b"\n"):
                if line.strip():
                    yield source, line


@needs_fixtures
def test_real_transcripts_are_decided_alike_on_their_reduced_copies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every line of the real fixtures, reduced with 128-character heads and tails and
    two-element arrays, gets the decision its whole line gets (or stays not typed)."""
    lines = list(_fixture_lines())
    assert lines, f"no real transcripts in {FIXTURES}"
    monkeypatch.setattr(_longline, "SHORT_STRING_BYTES", 256)
    monkeypatch.setattr(_longline, "KEEP_CHARS", 128)
    monkeypatch.setattr(_longline, "KEEP_ITEMS", 2)
    reduced_some = 0
    for source, line in lines:
        classify = line_classifier(source)
        whole = classify(line)
        reducer = LineReducer()
        for start in range(0, len(line), 1000):
            reducer.feed(line[start:start + 1000])
        reduced = reducer.finish()
        reduced_some += bool(reduced.elided or reduced.pruned)
        unit = reduced_unit(classify(reduced.line), reduced)
        if reduced.pruned and whole.human:
            assert unit.reason == "oversized_structure"
        else:
            assert (unit.human, unit.reason, unit.stop) == (whole.human, whole.reason,
                                                            whole.stop), (source, line[:200])
    assert len(lines) > 600
    assert reduced_some > 100


def test_a_huge_number_is_read_in_bounded_memory_and_copied_as_zero() -> None:
    """Regression: a 40 MiB number was carried whole (memory and quadratic time)."""
    import tracemalloc

    reducer = LineReducer()
    head = json.dumps(json.loads(claude_user("typed"))).encode()[:-1] + b', "pad": 1'
    tracemalloc.start()
    try:
        reducer.feed(head)
        for _ in range(48):
            reducer.feed(b"7" * 65_536)  # 3 MiB of digits
        reducer.feed(b".5e-3}")
        reduced = reducer.finish()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 512 * 1024
    assert json.loads(reduced.line)["pad"] == 0
    assert reduced.pruned
    classify = line_classifier("claude")
    assert reduced_unit(classify(reduced.line), reduced).reason == "oversized_structure"
    assert json.loads(reduce(b'{"n":-12.5e+3,"m":0,"k":[1,2.25]}', 1).line) == {
        "n": -12.5e3, "m": 0, "k": [1, 2.25]}


@pytest.mark.parametrize("defect", [b",,", b",01", b",1.", b",-", b",1 2", b",tru", b',"a\\x"',
                                    b',{"a":}', b",[1,]", b',"\x01"'])
def test_a_defect_among_dropped_array_elements_stays_invalid(defect: bytes) -> None:
    line = b'{"a":[' + b",".join(b"%d" % i for i in range(700)) + defect + b",5]}"
    for piece in (3, 1000, len(line)):
        with pytest.raises(json.JSONDecodeError):
            json.loads(reduce(line, piece).line)


def test_many_dropped_array_elements_keep_the_copy_small_and_pruned() -> None:
    elements = [0, 1, "b", {}, [], {"a": "b", "n": 1}, [1, "x", None], True, -2.5]
    line = json.dumps({"type": "user", "pad": elements * 20_000}).encode()
    reduced = reduce(line, 65_536)
    assert reduced.pruned
    assert json.loads(reduced.line)["pad"] == (elements * 60)[:_longline.KEEP_ITEMS]
    assert len(reduced.line) < 16_384


def test_a_pruned_content_list_is_never_called_image_only() -> None:
    """Regression: 600 images and then a text block read as image_only when reduced."""
    row = json.loads(claude_user("x"))
    row["message"]["content"] = [{"type": "image", "source": {"type": "base64",
                                                            "data": "QUJD"}}] * 600 + [
        {"type": "text", "text": "hi"}]
    reduced = reduce(json.dumps(row).encode(), 4096)
    unit = reduced_unit(line_classifier("claude")(reduced.line), reduced)
    assert (unit.human, unit.reason) == (False, "oversized_structure")
    tool = json.loads(claude_user("x"))
    tool["message"]["content"] = [{"type": "tool_result", "tool_use_id": "t",
                                   "content": "out"}] * 600
    reduced = reduce(json.dumps(tool).encode(), 4096)
    assert reduced_unit(line_classifier("claude")(reduced.line), reduced).reason == "tool_result"


def test_dropped_elements_and_members_of_common_shapes_take_one_pattern_match() -> None:
    """The reviewer's slow shapes (seconds per MiB through the tokenizer) are passed by
    the bounded run patterns, and a defect ends a run before it."""
    elements, members = _longline_tokens.dropped_patterns()
    run = (b',[[]],[[[]]],{"a":{"b":1}},{"a":[]},"\\n","\\"","a\\\\b",'
           + '"é"'.encode() + b',"\\u00e9\\n",0,-1.5e3,true,null,[1,"x",{}]')
    assert elements.fullmatch(run + b"]", 0, len(run)) is None  # needs the delimiter ...
    matched = elements.match(run + b"]")
    assert matched is not None
    assert matched.end() == len(run)  # ... and then takes every element at once
    for defect in (b',"\x01"', b',[1,]', b",01", b',"\xff"', b',"\\x"', b",[[[[]]]]"):
        stopped = elements.match(b",1" + defect + b"]")
        assert stopped is not None
        assert stopped.end() == 2  # the defect (or a fourth level) is left to the tokenizer
    keyed = b',"k1":1,"k2":{"a":[1]},"k3":"v"'
    found = members.match(keyed + b"}")
    assert found is not None
    assert found.end() == len(keyed)


def test_an_object_keeps_its_first_members_and_prunes_the_rest() -> None:
    row = json.loads(claude_user("typed"))
    row["extra"] = {f"k{i}": i for i in range(_longline.KEEP_MEMBERS + 10)}
    reduced = reduce(json.dumps(row).encode(), 4096)
    assert reduced.pruned
    assert len(json.loads(reduced.line)["extra"]) == _longline.KEEP_MEMBERS
    assert reduced_unit(line_classifier("claude")(reduced.line), reduced).reason == (
        "oversized_structure")
