"""Codex 0.169.0 turns another program started (issue 22, class 4): ``codex queue``.

Rows are built by the test kit (:class:`~actors.upstream.codex.kit.CodexRollout` with
``paginated=True``, the rows the real 0.169.0 TUI wrote under the harness,
``tests/test_agents_codex_queue.py``) and decided through ``ssa classify``'s code path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.testing import Reply, Typed
from actors.upstream.classify import classify_units
from actors.upstream.codex.kit import CodexRollout, HookContinuation, QueuedMessage, Steer
from actors.upstream.codex.turns import (
    QUEUE_TRIGGER,
    TurnStart,
    UserItem,
    codex_turn_classifier,
    find_turn,
    queued_message,
    turn_start,
    user_item,
)

pytestmark = pytest.mark.timeout(30)


def _rollout(tmp_path: Path) -> CodexRollout:
    return CodexRollout(tmp_path / "rollout-2026-12-02T07-35-27-x.jsonl", paginated=True)


def _decided(path: Path) -> list[tuple[bool, str, str]]:
    """(human, reason, kind) of every line, through ``ssa classify``'s code path."""
    lines = path.read_text().splitlines()
    out = []
    for unit in classify_units("codex", str(path)):
        row = json.loads(lines[int(unit["line"])])
        kind = f"{row['type']}:{row['payload'].get('type')}"
        out.append((bool(unit["human"]), str(unit["reason"]), kind))
    return out


def _humans(path: Path) -> list[str]:
    return [reason for human, reason, _ in _decided(path) if human]


def _reasons(path: Path, kind: str) -> list[str]:
    return [reason for _, reason, k in _decided(path) if k == kind]


def test_turn_start_reads_the_trigger(tmp_path: Path) -> None:
    rollout = _rollout(tmp_path)
    line = rollout.lines(QueuedMessage("run it")).split(b"\n")[0]
    assert turn_start(line) == TurnStart(rollout.turn_ids[0], QUEUE_TRIGGER)
    typed = rollout.lines(Typed("hi")).split(b"\n")[0]
    assert turn_start(typed) == TurnStart(rollout.turn_ids[1], "user")


@pytest.mark.parametrize("line", [
    b"", b"not json", b"[]", b'{"type":"event_msg"}',
    b'{"type":"event_msg","payload":{"type":"task_started"}}',
    b'{"type":"event_msg","payload":{"type":"task_started","turn_id":7}}',
    b'{"type":"response_item","payload":{"type":"task_started","turn_id":"t"}}',
    b'{"type":"event_msg","payload":{"type":"task_complete","turn_id":"t"}}',
])
def test_other_lines_start_no_turn(line: bytes) -> None:
    assert turn_start(line) is None
    assert user_item(line) is None


def test_a_task_started_without_attribution_has_no_trigger() -> None:
    line = b'{"type":"event_msg","payload":{"type":"task_started","turn_id":"t"}}'
    assert turn_start(line) == TurnStart("t", None)
    odd = (b'{"type":"event_msg","payload":{"type":"task_started","turn_id":"t",'
           b'"turn_attribution":{"turn_trigger":5}}}')
    assert turn_start(odd) == TurnStart("t", None)


def test_user_item_reads_the_turn_and_item(tmp_path: Path) -> None:
    rollout = _rollout(tmp_path)
    lines = rollout.lines(Typed("hi")).split(b"\n")
    item = user_item(lines[2])
    assert item is not None
    assert item.turn_id == rollout.turn_ids[0]
    assert item.item_id
    assert user_item(lines[1]) is None  # the response_item copy
    hook = rollout.lines(HookContinuation("go on")).split(b"\n")
    assert user_item(hook[1]) is None  # a HookPrompt item


def test_queued_message_rule() -> None:
    first = UserItem("t", "a")
    assert queued_message(QUEUE_TRIGGER, "a", first)
    assert not queued_message(QUEUE_TRIGGER, "a", UserItem("t", "b"))  # a steer
    assert not queued_message("user", "a", first)
    assert not queued_message(None, "a", first)
    assert not queued_message("Queue", "a", first)  # exact value only
    assert not queued_message(QUEUE_TRIGGER, None, first)
    assert not queued_message(QUEUE_TRIGGER, None, UserItem("t", None))


def test_a_queued_message_is_not_typed_and_typed_prompts_are(tmp_path: Path) -> None:
    rollout = _rollout(tmp_path)
    rollout.append(Typed("typed one"), Reply("answer"), QueuedMessage("queued by a program"),
                   Reply("queued answer"), Typed("typed two"), Reply("answer two"))
    assert _humans(rollout.path) == ["typed", "typed"]
    assert _reasons(rollout.path, "event_msg:item_completed").count("queued_message") == 1
    assert "response_item_duplicate" in _reasons(rollout.path, "response_item:message")


def test_a_steer_into_a_queued_turn_is_typed(tmp_path: Path) -> None:
    rollout = _rollout(tmp_path)
    rollout.append(QueuedMessage("queued"), Steer("a person steers"), Reply("done"))
    decided = [(h, r) for h, r, k in _decided(rollout.path) if k == "event_msg:item_completed"]
    assert decided[:2] == [(False, "queued_message"), (True, "typed")]


def test_a_stop_hook_continuation_is_not_typed(tmp_path: Path) -> None:
    rollout = _rollout(tmp_path)
    rollout.append(Typed("typed"), HookContinuation("keep going"), Reply("went on"))
    assert _humans(rollout.path) == ["typed"]
    assert "hook_prompt" in _reasons(rollout.path, "event_msg:item_completed")


def test_legacy_rollouts_are_decided_as_before(tmp_path: Path) -> None:
    rollout = CodexRollout(tmp_path / "r.jsonl")
    rollout.append(Typed("one"), Reply("a"), Typed("two"))
    assert _humans(rollout.path) == ["typed", "typed"]
    with pytest.raises(TypeError):
        rollout.append(QueuedMessage("x"))


def _split_scan(path: Path, at: int) -> list[str]:
    """Decide the lines in two scans, the second starting at line ``at``: fresh classifiers."""
    lines = path.read_bytes().split(b"\n")[:-1]
    first, second = codex_turn_classifier(str(path)), codex_turn_classifier(str(path))
    units = [first(line) for line in lines[:at]] + [second(line) for line in lines[at:]]
    return [u.reason for u in units if u.human or u.reason == "queued_message"]


def test_a_scan_that_starts_inside_a_queued_turn_looks_its_start_up(tmp_path: Path) -> None:
    rollout = _rollout(tmp_path)
    rollout.append(Typed("typed one"), Reply("a"))
    at = len(rollout.path.read_bytes().split(b"\n")) - 1 + 1  # just after the task_started
    rollout.append(QueuedMessage("queued"), Steer("steer"), Reply("b"), Typed("typed two"))
    assert _split_scan(rollout.path, at) == ["typed", "queued_message", "typed", "typed"]


def test_find_turn_reads_backwards_within_its_limit(tmp_path: Path) -> None:
    rollout = _rollout(tmp_path)
    rollout.append(QueuedMessage("queued"), Reply("b"))
    turn = rollout.turn_ids[0]
    found = find_turn(str(rollout.path), turn)
    assert found is not None
    assert found[0] == TurnStart(turn, QUEUE_TRIGGER)
    assert found[1]
    rollout.append(*[Reply("x" * 1000)] * 40)  # about 40 KB after the turn's start
    assert find_turn(str(rollout.path), turn, limit=4096) is None
    assert find_turn(str(rollout.path), turn) == found
    assert find_turn(str(rollout.path), "no-such-turn") is None
    assert find_turn(str(tmp_path / "missing.jsonl"), turn) is None


def test_a_turn_whose_start_is_not_found_keeps_its_decision(tmp_path: Path) -> None:
    rollout = _rollout(tmp_path)
    rollout.append(QueuedMessage("queued"), Reply("b"))
    lines = rollout.path.read_bytes().split(b"\n")
    alone = tmp_path / "alone.jsonl"
    alone.write_bytes(b"\n".join(lines[2:]))  # the queued turn's start is gone
    classify = codex_turn_classifier(str(alone))
    assert [classify(line).reason for line in lines[2:4]] == ["response_item_duplicate", "typed"]


def test_chunked_lookback_joins_lines_across_pieces(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from actors.upstream.codex import turns as codex_turns

    monkeypatch.setattr(codex_turns, "_CHUNK", 97)  # lines cut at every piece boundary
    rollout = _rollout(tmp_path)
    rollout.append(Typed("t"), Reply("a"), QueuedMessage("queued"), Reply("b" * 500))
    found = find_turn(str(rollout.path), rollout.turn_ids[1])
    assert found is not None
    assert found[0].trigger == QUEUE_TRIGGER
    assert found[1] is not None


def test_lookups_are_bounded_per_classifier(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from actors.upstream.codex import turns as codex_turns

    calls: list[str] = []
    real = codex_turns.find_turn

    def counted(path: str, turn_id: str, *, limit: int = codex_turns.LOOKBACK_BYTES
                ) -> tuple[TurnStart, str | None] | None:
        calls.append(turn_id)
        return real(path, turn_id, limit=limit)

    monkeypatch.setattr(codex_turns, "find_turn", counted)
    rollout = _rollout(tmp_path)
    rollout.append(*[Typed(f"typed {n}") for n in range(6)])
    lines = rollout.path.read_bytes().split(b"\n")[:-1]
    orphans = [line for line in lines if user_item(line) is not None]  # no task_started
    classify = codex_turn_classifier(str(rollout.path))
    assert all(classify(line).human for line in orphans * 3)
    assert len(calls) == 2  # each turn at most once, at most two turns
    calls.clear()
    classify = codex_turn_classifier(str(rollout.path))
    humans = [u.reason for u in map(classify, lines) if u.human]
    assert humans == ["typed"] * 6  # each turn's start read first: no lookup
    assert calls == []


def test_find_turn_stops_at_an_earlier_turn(tmp_path: Path) -> None:
    rollout = _rollout(tmp_path)
    rollout.append(Typed("one"), Reply("a"), QueuedMessage("queued"), Reply("b"))
    lines = rollout.path.read_bytes().split(b"\n")
    start_of_second = next(i for i, line in enumerate(lines)
                           if turn_start(line) is not None
                           and turn_start(line) == TurnStart(rollout.turn_ids[1], QUEUE_TRIGGER))
    del lines[start_of_second]
    gone = tmp_path / "gone.jsonl"
    gone.write_bytes(b"\n".join(lines))
    assert find_turn(str(gone), rollout.turn_ids[1]) is None
    assert find_turn(str(gone), rollout.turn_ids[0]) is not None
