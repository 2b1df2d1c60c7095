"""Codex's older rollout shapes, and the line kinds of the newer ones.

* Rollouts from before the line envelope (openai/codex PR #3380, merged
  2025-09-09, before 0.34.0): a bare ``SessionMeta`` first line, bare
  ``ResponseItem`` lines, ``{"record_type": "state"}`` lines. Refused at the
  header (``legacy_rollout_format``): no ``originator``/``source`` tells a
  ``codex exec`` run from the TUI, and no event tells a typed prompt from the
  injected context.
* 0.34 rollouts (no ``source``, ``kind: "plain"``) are read (kit ``version="0.34"``).
* Line kinds Codex added (``world_state``, ``inter_agent_communication[_metadata]``,
  ``security_risk_score``, ``realtime_item``, 0.169/0.171's ``token_usage_record``) are
  never typed; any other kind is
  ``unknown_kind``, logged once.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from actors.testing import CodexRollout, Typed
from actors.upstream.classify import classify_units
from actors.upstream.codex.classify import classify_codex_line, codex_header_verdict
from actors.upstream.codex.copies import codex_copy_classifier
from actors.upstream.codex.meta import pre_envelope_thread
from actors.upstream.codex.turns import codex_turn_classifier
from tests.conftest import FIXTURES, needs_fixtures

_BARE_META = {"id": "5973b6c0-94b8-487b-a530-2aeb6098ae0e",
              "timestamp": "2025-05-07T17:24:21.123Z", "instructions": None}
_BARE_USER = {"type": "message", "role": "user",
              "content": [{"type": "input_text", "text": "fix the tests"}]}


def _jsonl(*rows: object) -> bytes:
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def test_a_pre_envelope_rollout_is_refused_and_nothing_in_it_counts(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2025-05-07T17-24-21-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"
    path.write_bytes(_jsonl(_BARE_META, _BARE_USER, {"record_type": "state"},
                            {"type": "function_call", "name": "shell", "arguments": "{}",
                             "call_id": "c"}))
    first = path.read_bytes().splitlines()[0]
    assert pre_envelope_thread(first) == _BARE_META["id"]
    assert codex_header_verdict(first) == (_BARE_META["id"], "legacy_rollout_format")
    units = list(classify_units("codex", str(path)))
    assert not [u for u in units if u["human"]]
    assert [u["reason"] for u in units][1:] == [
        "not_monitored: legacy_rollout_format (pre_envelope)"] * 3


@pytest.mark.parametrize("line", [
    b"garbage", b"[]", b'{"id":"x"}', b'{"id":"x","timestamp":1}',
    b'{"type":"session_meta","id":"x","timestamp":"t"}',
    b'{"payload":{},"id":"x","timestamp":"t"}',
])
def test_only_a_bare_session_meta_is_pre_envelope(line: bytes) -> None:
    assert pre_envelope_thread(line) is None
    assert codex_header_verdict(line)[1] != "legacy_rollout_format"


def test_a_034_rollout_from_the_kit_is_read_like_the_real_one(tmp_path: Path) -> None:
    rollout = CodexRollout(tmp_path / "r.jsonl", version="0.34")
    rollout.append(Typed("Can we continue?"))
    rows = [json.loads(line) for line in rollout.path.read_bytes().splitlines()]
    assert "source" not in rows[0]["payload"]
    assert rows[0]["payload"]["cli_version"] == "0.34.0"
    assert rows[2]["payload"] == {"type": "user_message", "message": "Can we continue?",
                                  "kind": "plain"}
    assert codex_header_verdict(rollout.path.read_bytes().splitlines()[0])[1] is None
    assert [(u["human"], u["reason"]) for u in classify_units("codex", str(rollout.path))] == [
        (False, "session_meta"), (False, "response_item_duplicate"), (True, "typed")]
    with pytest.raises(ValueError, match=r"0\.20"):
        CodexRollout(tmp_path / "x.jsonl", version="0.20")


@pytest.mark.parametrize("kind", ["world_state", "inter_agent_communication",
                                  "inter_agent_communication_metadata", "security_risk_score",
                                  "realtime_item", "token_usage_record"])
def test_newer_line_kinds_are_never_typed(kind: str) -> None:
    line = _jsonl({"timestamp": "2026-09-02T21:58:24.362Z", "type": kind,
                   "payload": {"type": "message", "role": "user", "content": [
                       {"type": "input_text", "text": "hello"}]}})
    unit = classify_codex_line(line)
    assert (unit.human, unit.reason) == (False, kind)


def test_an_unknown_line_kind_is_not_typed_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    line = _jsonl({"timestamp": "2026-09-02T21:58:24.362Z", "type": "brand_new_kind_xyz",
                   "payload": {"type": "user_message", "message": "hello"}})
    classify = codex_turn_classifier("/nonexistent/rollout.jsonl")
    with caplog.at_level(logging.WARNING, logger="actors.upstream.codex.classify"):
        units = [classify(line), classify(line)]
    assert [(u.human, u.reason) for u in units] == [(False, "unknown_kind")] * 2
    assert [r.getMessage() for r in caplog.records if "brand_new_kind_xyz" in r.getMessage()] == [
        "Codex row kind 'brand_new_kind_xyz' is unknown: decided not typed"]
    assert "hello" not in caplog.text


def test_token_usage_record_of_0_171_is_known_and_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Codex 0.169.0 and 0.171.0 write a ``token_usage_record`` line after each model
    response (seen by ``python -m tests.harness.drift`` on 0.171.0): a known kind, not
    an unknown one logged as drift."""
    line = _jsonl({"timestamp": "2026-12-07T01:55:23.269Z", "ordinal": 23,
                   "type": "token_usage_record", "payload": {
                       "thread_id": "t", "turn_id": "u", "session_id": "t",
                       "root_turn_id": "u", "response_id": "resp_1",
                       "usage": {"input_tokens": 100, "output_tokens": 10}}})
    classify = codex_turn_classifier("/nonexistent/rollout.jsonl")
    with caplog.at_level(logging.WARNING, logger="actors.upstream.codex.classify"):
        unit = classify(line)
    assert (unit.human, unit.reason) == (False, "token_usage_record")
    assert "token_usage_record" not in caplog.text


@needs_fixtures
@pytest.mark.parametrize("parent_field", [None, "forked_from", "forked_from_id"])
def test_a_fork_of_builds_that_named_no_parent_is_read_from_its_own_rows(
        tmp_path: Path, parent_field: str | None) -> None:
    """Adversary (issue 32): before openai/codex#9330 (January 2026) a fork's
    ``session_meta`` named no parent, then it was ``forked_from``; the parent's rows
    replayed after it counted as typed again. The replayed meta is the proof."""
    source = FIXTURES / "codex" / "codex-0.57.0-tui-agentsmd-aborted-customprompt-excerpt.jsonl"
    parent = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    fork_id, at = "019b0000-0000-7000-8000-00000000f0c1", "2025-11-20T10:00:00.000Z"
    meta = json.loads(json.dumps(parent[0]))
    meta["timestamp"] = at
    meta["payload"].update({"id": fork_id, "timestamp": at})
    if parent_field is not None:
        meta["payload"][parent_field] = parent[0]["payload"]["id"]
    replayed = [{**row, "timestamp": f"2025-11-20T10:00:00.{n % 60:03d}Z"}
                for n, row in enumerate(parent)]
    own = "2025-11-20T10:00:09.000Z"
    rows = [meta, *replayed,
            {"timestamp": own, "type": "response_item", "payload": {
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "now the other approach"}]}},
            {"timestamp": own, "type": "event_msg", "payload": {
                "type": "user_message", "message": "now the other approach", "images": []}}]
    path = tmp_path / f"rollout-2025-11-20T10-00-00-{fork_id}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    classify = codex_copy_classifier(str(path))
    units = [classify(line) for line in path.read_bytes().splitlines()]
    assert [u.text for u in units if u.human] == ["now the other approach"]
