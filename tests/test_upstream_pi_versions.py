"""Pi's older session formats (v1, v2): linked and read by the same rules as v3.

Pi wrote v1 until 2025-12-30, v2 until 2026-01-05 and v3 since
(``packages/coding-agent/src/core/session-manager.ts`` in badlogic/pi-mono:
``migrateV1ToV2``, ``migrateV2ToV3``); a v1 branch names its source
``branchedFrom`` (renamed ``parentSession`` in ``484d7e06``). The real v1
fixtures are read in place from ``shared/`` beside the repository.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from actors.testing import Compaction, PiSession, Reply, Typed
from actors.upstream.classify import classify_units
from actors.upstream.pi.classify import pi_header_verdict, pi_header_version
from actors.upstream.pi.copies import fork_time, pi_copy_classifier
from tests import conftest

FIXTURES = conftest.FIXTURES / "pi"


def _decisions(path: Path) -> list[tuple[bool, str]]:
    return [(u["human"], u["reason"]) for u in classify_units("pi", str(path))]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_typed_turn_in_every_format_counts(tmp_path: Path, version: int) -> None:
    path = tmp_path / "s.jsonl"
    PiSession(path, version=version).append(Typed("hello"), Reply("hi"), Compaction("sum"),
                                            Typed("again"))
    assert _decisions(path) == [(False, "header"), (True, "typed"), (False, "assistant"),
                                (False, "compaction"), (True, "typed")]
    assert pi_header_verdict(path.read_bytes().splitlines()[0])[1] is None


def test_the_kit_writes_each_format_as_pi_did(tmp_path: Path) -> None:
    rows = {}
    for version in (1, 2, 3):
        path = tmp_path / f"v{version}.jsonl"
        PiSession(path, version=version, parent_session="/p.jsonl").append(
            Typed("x"), Compaction("sum"))
        rows[version] = [json.loads(line) for line in path.read_bytes().splitlines()]
    v1, v2, v3 = rows[1], rows[2], rows[3]
    # v1 (fixture pi-v1-compaction-bash-excerpt.jsonl): no version, the model in the
    # header, branchedFrom; entries without id/parentId; firstKeptEntryIndex.
    assert "version" not in v1[0]
    assert v1[0]["branchedFrom"] == "/p.jsonl"
    assert {"provider", "modelId", "thinkingLevel"} <= v1[0].keys()
    assert all("id" not in row and "parentId" not in row for row in v1[1:])
    assert "firstKeptEntryIndex" in v1[2]
    assert "firstKeptEntryId" not in v1[2]
    assert pi_header_version(json.dumps(v1[0]).encode()) == 1
    assert v2[0]["version"] == 2
    assert v2[0]["parentSession"] == "/p.jsonl"
    assert v3[0]["version"] == 3
    assert all("id" in row for row in v2[1:] + v3[1:])
    with pytest.raises(ValueError, match="not 4"):
        PiSession(tmp_path / "v4.jsonl", version=4)


def test_a_v1_branch_names_its_source_branched_from_and_its_copies_do_not_count(
    tmp_path: Path,
) -> None:
    source = PiSession(tmp_path / "old.jsonl", version=1)
    source.append(Typed("typed in the old session"))
    branch = source.fork(tmp_path / "new.jsonl")
    branch.append(Typed("typed in the branch"))
    first = branch.path.read_bytes().splitlines()[0]
    assert fork_time(first) is not None
    classify = pi_copy_classifier(str(branch.path))
    units = [classify(line) for line in branch.path.read_bytes().splitlines()[1:]]
    assert [(u.human, u.reason) for u in units] == [(False, "copied_row"), (True, "typed")]


def test_a_file_without_a_session_header_is_refused(tmp_path: Path) -> None:
    assert pi_header_verdict(b'{"type":"message"}') == (None, "not_a_pi_session")
    assert pi_header_verdict(b'{"type":"session","id":"s","version":"3"}') == (
        "s", "not_a_pi_session")
    assert pi_header_verdict(b'{"type":"session","id":"s"}') == ("s", None)  # v1
    assert pi_header_verdict(b'{"type":"session","id":"s","version":2}') == ("s", None)


@conftest.needs_fixtures
def test_the_real_v1_files_are_read() -> None:
    # A v1 file: its two prompts (the early "/mode" was stored as text) count.
    mode = _decisions(FIXTURES / "pi-v1-header-mode-excerpt.jsonl")
    assert [i for i, (human, _) in enumerate(mode) if human] == [1, 4]
    # A v1 branch (branchedFrom, header 2025-12-09T00:53Z): every prompt in this
    # excerpt was typed before the branch, in the session it came from.
    decisions = _decisions(FIXTURES / "pi-v1-compaction-bash-excerpt.jsonl")
    assert not [d for d in decisions if d[0]]
    assert [i for i, d in enumerate(decisions) if d[1] == "copied_row"] == [
        1, 12, 20, 23, 25, 27, 29]


def test_an_unknown_entry_type_or_role_is_not_typed_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / "s.jsonl"
    PiSession(path).append(Typed("hello"))
    with path.open("ab") as handle:
        handle.write(b'{"type":"brand_new_entry_xyz","id":"a1","text":"secret words"}\n'
                     b'{"type":"message","id":"a2","message":{"role":"narratorXyz",'
                     b'"content":"secret words"}}\n'
                     b'{"type":"brand_new_entry_xyz","id":"a3"}\n')
    with caplog.at_level(logging.WARNING, logger="actors.upstream.pi.classify"):
        decisions = _decisions(path)
    assert decisions[-3:] == [(False, "not_message"), (False, "not_user"),
                              (False, "not_message")]
    logged = [r.getMessage() for r in caplog.records if "Xyz" in r.getMessage()
              or "xyz" in r.getMessage()]
    assert logged == ["Pi row kind 'brand_new_entry_xyz' is unknown: decided not typed",
                      "Pi row kind 'role:narratorXyz' is unknown: decided not typed"]
    assert "secret" not in caplog.text
