"""The report-building part of ``python -m tests.harness.drift`` (pure; no network, no tools)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.harness.drift import (
    Drift,
    Unit,
    _parse_tools,
    _units,
    baseline_of,
    drift_of,
    key_paths,
    render,
    survey,
)
from tests.harness.tools import DecidedRow


def test_key_paths_name_nested_keys_and_list_items_once_down_to_the_depth() -> None:
    row = {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "x"},
                                                                   {"type": "image"}]},
           "deep": {"a": {"b": {"c": 1}}}}
    assert sorted(set(key_paths(row))) == [
        "deep", "deep.a", "deep.a.b", "message", "message.content", "message.content[].text",
        "message.content[].type", "message.role", "type"]
    assert list(key_paths("text")) == []


def _units_of(transcript: list[dict[str, object]], decisions: list[tuple[str, str, bool]],
              tmp_path: Path) -> list[Unit]:
    """Write a synthetic JSONL transcript and pair each line with a decision."""
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in transcript))
    rows = [DecidedRow("claude", path, i, None, human, reason, kind, ())
            for i, (kind, reason, human) in enumerate(decisions)]
    return _units(rows)


def test_a_new_kind_and_key_are_listed_with_their_reasons_and_known_ones_are_not(
        tmp_path: Path) -> None:
    units = _units_of(
        [{"type": "user", "message": {"content": "hi"}},
         {"type": "brand_new", "payload": {"x": 1}},
         {"type": "user", "message": {"content": "again"}, "newField": True}],
        [("user", "typed", True), ("brand_new", "unknown_kind", False),
         ("user", "typed", True)], tmp_path)
    found = survey("claude", "9.9.9", units, logged=["brand_new", "brand_new"],
                   comparison="precision 1.000, recall 1.000")
    known = {"kinds": ["user"], "keys": ["type", "message", "message.content"]}
    drift = drift_of(found, known)
    assert drift.new_kinds == {"brand_new": {"unknown_kind": 1}}
    assert drift.new_keys == {"newField": ["typed"], "payload": ["unknown_kind"],
                              "payload.x": ["unknown_kind"]}
    assert drift.unknown == {"brand_new (unknown_kind)": 1}
    assert drift.logged == ["brand_new"]
    assert not drift.clean
    text = render([drift])
    assert "== claude 9.9.9: DRIFT" in text
    assert "new row kind 'brand_new': unknown_kind x1" in text
    assert "new key 'newField': reasons typed" in text
    assert "unknown-kind unit: brand_new (unknown_kind) x1" in text
    assert "logged once as unknown: brand_new" in text
    assert json.loads(json.dumps(drift.as_json()))["clean"] is False


def test_a_run_whose_shapes_are_all_known_is_clean_and_its_baseline_knows_it(
        tmp_path: Path) -> None:
    units = _units_of([{"type": "user", "message": {"content": "hi"}}],
                      [("user", "typed", True)], tmp_path)
    found = survey("codex", "1.0.0", units)
    known = baseline_of([found])["codex"]
    assert known == {"kinds": ["user"], "keys": ["message", "message.content", "type"]}
    drift = drift_of(found, known)
    assert drift == Drift("codex", "1.0.0", {}, {}, {}, [], "")
    assert drift.clean
    assert render([drift]) == "== codex 1.0.0: nothing new\n"


def test_a_store_transcript_gives_kinds_without_keys(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    path.write_bytes(b"not json")
    units = _units([DecidedRow("opencode", path, "msg_1", "ses_1", False, "unknown_part",
                               "part:new", ())])
    assert units == [Unit("part:new", "unknown_part", False, frozenset())]
    assert drift_of(survey("opencode", "1", units), {}).unknown == {
        "part:new (unknown_part)": 1}


def test_tool_specs_name_a_version_or_the_newest() -> None:
    assert _parse_tools(["codex=0.171.0", "claude"]) == {"codex": "0.171.0", "claude": None}


def test_a_run_that_failed_is_not_clean_even_with_nothing_new() -> None:
    drift = drift_of(survey("aider", "0.86.2", [], error="start failed: TimeoutError: x"), {})
    assert not drift.clean
    assert render([drift]).splitlines()[:2] == [
        "== aider 0.86.2: RUN FAILED", "   error: start failed: TimeoutError: x"]


def test_a_scripted_action_that_failed_makes_the_run_not_clean_and_is_rendered() -> None:
    """Issue 32's scripted actions (a copy without its original, a fixed prompt) each
    get a line; one not decided exactly (``FAIL``) is drift even with nothing new."""
    found = survey("qwen", "0.24.4", [], comparison="precision 1.000, recall 1.000")
    found.actions.update({"fixed prompt /init": "FAIL precision 0.667, recall 1.000"})
    drift = drift_of(found, {})
    assert not drift.clean
    assert "   fixed prompt /init: FAIL precision 0.667, recall 1.000" in render([drift])
    assert drift.as_json()["actions"] == {
        "fixed prompt /init": "FAIL precision 0.667, recall 1.000"}
    found.actions["fixed prompt /init"] = "OK precision 1.000, recall 1.000"
    assert drift_of(found, {}).clean


def test_the_windows_kit_section_decides_every_kit_source_exactly(tmp_path: Path) -> None:
    from tests.harness.drift import windows_kit
    from tests.harness.windows_kit import SOURCES

    section = windows_kit(tmp_path)
    assert sorted(section.actions) == sorted(SOURCES)
    assert all(v.startswith("OK precision 1.000, recall 1.000")
               for v in section.actions.values()), section.actions
    assert section.clean
