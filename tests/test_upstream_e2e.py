"""End to end on copies of real transcripts: adopt, a person types upstream, one notice;
the source disappears, ``upstream_missing`` after three scans (issue 3, "Done when").

Fixtures are read from ``../shared`` and copied into ``tmp_path`` at test time.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

from actors import Gateway
from actors.testing import OpenCodeTranscript, Typed
from tests._upstream_rows import claude_user, codex_legacy_user, codex_paginated_user, pi_user
from tests.conftest import FIXTURES, WATCHER

OPENCODE_MAIN = "ses_dd45483e1ffey2Pb2WIeXKDqPz"


def _copy(tmp_path: Path, relative: str) -> Path:
    target = tmp_path / Path(relative).name
    shutil.copyfile(FIXTURES / relative, target)
    if target.suffix == ".jsonl" and not target.read_bytes().endswith(b"\n"):
        # Some published copies lost the final newline every writer puts after a row;
        # without it the last row is (correctly) treated as still being written.
        _append(target, b"\n")
    return target


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def _pi_v1_user(text: str) -> bytes:
    return pi_user(text, version=1)


CASES = [
    ("claude", "claude-code/cc-2.1.37-cli-prompt-tools-exit.jsonl", claude_user),
    ("claude", "claude-code/cc-2.0.74-vscode-ide-opened-file.jsonl", claude_user),
    ("codex", "codex/codex-0.152.1-tui-paginated.jsonl", codex_paginated_user),
    ("codex", "codex/codex-0.34.0-tui-kind-plain-excerpt.jsonl", codex_legacy_user),
    ("pi", "pi/pi-v3-print-redacted.jsonl", pi_user),
    ("pi", "pi/pi-v1-header-mode-excerpt.jsonl", _pi_v1_user),  # Pi's v1 format is read too
]


@pytest.mark.parametrize(("source", "fixture", "row"), CASES)
def test_a_typed_turn_in_a_real_transcript_gives_one_event_and_one_notice_then_missing(
    gateway: Gateway, tmp_path: Path, source: str, fixture: str, row: Callable[[str], bytes],
) -> None:
    key = f"agent:main:adopted:{source}"
    path = _copy(tmp_path, fixture)
    assert gateway.adopt(key, source=source, path=path) is not None
    assert gateway.watch(WATCHER, key)
    assert gateway.scan_upstream() == []  # the existing history is the baseline
    _append(path, row("please also update the changelog"))
    events = gateway.scan_upstream()
    assert [(e.kind, e.summary) for e in events] == [
        ("human_direct_message", f"human message via {source}")]
    assert len(gateway.pending_notices(WATCHER)) == 1
    gateway.drain(WATCHER)
    path.unlink()
    assert gateway.scan_upstream() == []
    assert gateway.scan_upstream() == []
    assert [(e.kind, e.payload) for e in gateway.scan_upstream()] == [
        ("upstream_missing", {"channel": source})]
    assert len(gateway.pending_notices(WATCHER)) == 1


def test_a_typed_turn_in_a_real_opencode_store_gives_one_event_then_missing(
    gateway: Gateway, tmp_path: Path,
) -> None:
    key = "agent:main:adopted:opencode"
    db = _copy(tmp_path, "opencode/opencode-1.18.33-generated.db")
    link = gateway.adopt(key, source="opencode", path=db, thread_id=OPENCODE_MAIN)
    assert link is not None
    assert gateway.watch(WATCHER, key)
    assert gateway.scan_upstream() == []
    OpenCodeTranscript.resume(db, OPENCODE_MAIN).append(Typed("please also update the changelog"))
    events = gateway.scan_upstream()
    assert [(e.kind, e.summary) for e in events] == [
        ("human_direct_message", "human message via opencode")]
    assert len(gateway.pending_notices(WATCHER)) == 1
    assert gateway.scan_upstream() == []
    gateway.drain(WATCHER)
    conn = apsw.Connection(str(db))
    try:
        conn.set_busy_timeout(5000)
        with conn:
            conn.execute("DELETE FROM part WHERE session_id = ?", (OPENCODE_MAIN,))
            conn.execute("DELETE FROM message WHERE session_id = ?", (OPENCODE_MAIN,))
            conn.execute("DELETE FROM session WHERE id = ?", (OPENCODE_MAIN,))
    finally:
        conn.close()
    assert gateway.scan_upstream() == []
    assert gateway.scan_upstream() == []
    assert [e.kind for e in gateway.scan_upstream()] == ["upstream_missing"]


@pytest.mark.parametrize(("source", "fixture"), [
    ("codex", "codex/codex-0.135.0-exec-legacy-redacted.jsonl"),
])
def test_untrusted_real_sources_are_adopted_without_a_link(
    gateway: Gateway, tmp_path: Path, source: str, fixture: str,
) -> None:
    key = f"agent:main:untrusted:{source}"
    assert gateway.adopt(key, source=source, path=_copy(tmp_path, fixture)) is None
    status = gateway.session_status(key, changes_since=0)
    assert status.state_changes is not None
    assert [e.kind for e in status.state_changes.events] == ["adopted"]


def test_opencode_child_sessions_get_no_link(gateway: Gateway, tmp_path: Path) -> None:
    db = _copy(tmp_path, "opencode/opencode-1.18.33-generated.db")
    assert gateway.adopt("agent:main:child", source="opencode", path=db,
                         thread_id="ses_dd4546f3affe14h47P40rzt6ym") is None


def test_opencode_run_sessions_get_no_link_while_interactive_ones_do(
    gateway: Gateway, tmp_path: Path,
) -> None:
    db = _copy(tmp_path, "opencode/opencode-1.18.33-generated.db")
    assert gateway.adopt("agent:main:run", source="opencode", path=db,
                         thread_id="ses_dd4537039ffecBg3ADoT7o4TaI") is None  # opencode run
    assert gateway.adopt("agent:main:acp", source="opencode", path=db,
                         thread_id="ses_dd4543c24ffejqmAZxy1b9Lb38") is not None


def test_an_opencode_store_without_session_permissions_still_reads(tmp_path: Path) -> None:
    import apsw

    from actors.upstream.opencode import store as oc

    db = _copy(tmp_path, "opencode/opencode-1.18.33-generated.db")
    writable = apsw.Connection(str(db))
    writable.execute("ALTER TABLE session DROP COLUMN permission")  # as older stores are
    writable.close()
    conn = oc.open_opencode_db(db)
    try:
        info = oc.read_session_info(conn, "ses_dd4537039ffecBg3ADoT7o4TaI")
    finally:
        conn.close()
    assert info is not None
    assert (info.permission, info.is_program_driven, info.refusal) == (None, False, None)


def test_the_sample_sessions_of_all_four_tools_are_monitored(
    gateway: Gateway, tmp_path: Path,
) -> None:
    from actors.testing.samples import append_typed_turn, write_sample_catalog

    samples = write_sample_catalog(tmp_path / "catalog")
    for source, sample in samples.items():
        key = f"agent:main:{source}:{sample.thread_id}"
        assert gateway.adopt(key, source=source, path=sample.path,
                             thread_id=sample.thread_id) is not None
        assert gateway.watch(WATCHER, key)
    assert gateway.scan_upstream() == []
    for sample in samples.values():
        append_typed_turn(sample, "typed by a person")
    assert sorted(e.summary for e in gateway.scan_upstream()) == [
        f"human message via {s}" for s in sorted(samples)]
    assert len(gateway.pending_notices(WATCHER)) == len(samples)


def test_a_prompt_typed_while_claude_code_works_is_reported(
    gateway: Gateway, tmp_path: Path,
) -> None:
    transcript = tmp_path / "busy.jsonl"
    transcript.write_bytes(claude_user("start the refactor"))
    assert gateway.adopt("agent:main:busy", source="claude", path=transcript) is not None
    assert gateway.watch(WATCHER, "agent:main:busy")  # only watched links are scanned
    queued = json.loads(claude_user("placeholder"))
    del queued["message"]
    queued.update(type="attachment", attachment={
        "type": "queued_command", "commandMode": "prompt", "origin": {"kind": "human"},
        "prompt": "and keep the old API working"})
    with transcript.open("ab") as handle:  # typed while the agent worked: no user row
        handle.write(json.dumps(queued).encode() + b"\n")
    events = gateway.scan_upstream()
    assert [(e.session_key, e.kind) for e in events] == [
        ("agent:main:busy", "human_direct_message")]
