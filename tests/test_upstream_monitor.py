"""Upstream links and the monitor through the Gateway (anchor §3.15, §3.16, §4.4, §4.5, §4.8).

Transcripts are synthetic files in each tool's real format, written to
``tmp_path``; every scan is driven by ``scan_upstream()``.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

from actors import Gateway, GatewayConfig
from actors.errors import StorageError
from actors.testing import PiSession, Typed
from persistence import read_link
from tests._upstream_rows import (
    NOT_A_PI_SESSION,
    claude_assistant,
    claude_user,
    pi_header,
    pi_user,
)
from tests.conftest import DAY_MS, WATCHER, ManualClock, WakeRecorder

KEY = "agent:main:adopted:claude"
TIMEOUT = 5.0


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "projects" / "-work" / "ce24e94d.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(claude_user("already imported") + claude_assistant("ok"))
    return path


def _adopt_watched(gw: Gateway, path: Path, key: str = KEY, source: str = "claude") -> None:
    link = gw.adopt(key, source=source, path=path)
    assert link is not None
    assert gw.watch(WATCHER, key)


def _events(gw: Gateway, key: str = KEY) -> list[tuple[str, str]]:
    status = gw.session_status(key, changes_since=0)
    assert status.state_changes is not None
    return [(e.kind, e.summary) for e in status.state_changes.events]


def _stored_marker(gw: Gateway) -> dict[str, object]:
    """The link's marker as stored (no adoption: the source may be gone)."""
    with gw.read_pool.connection() as conn:
        link = read_link(conn, KEY, "main")
    assert link is not None
    return link.marker


def _marker(gw: Gateway, path: Path) -> dict[str, object]:
    """The link's stored marker (adopting again keeps the link and its progress)."""
    link = gw.adopt(KEY, source="claude", path=path)
    assert link is not None
    return link.marker


def test_adopt_records_adopted_and_baselines_at_the_current_end(
    gateway: Gateway, transcript: Path,
) -> None:
    link = gateway.adopt(KEY, source="claude", path=transcript)
    assert link is not None
    assert link.marker["offset"] == transcript.stat().st_size
    assert link.thread_id == "ce24e94d"
    assert re.fullmatch(r"[0-9a-f]{16}", link.source_key)
    assert _events(gateway) == [("adopted", "session adopted from claude")]
    assert gateway.pending_notices(WATCHER) == []


def test_a_typed_turn_appended_upstream_records_one_event_and_one_notice(
    gateway: Gateway, transcript: Path, wakes: WakeRecorder, clock: ManualClock,
) -> None:
    _adopt_watched(gateway, transcript)
    assert gateway.scan_upstream() == []  # nothing new yet
    clock.advance(2 * 3_600_000)  # typed an hour after the adoption, seen an hour later
    _append(transcript, claude_assistant("thinking") + claude_user(
        "real upstream prompt", timestamp="2025-11-30T09:00:00.000Z"))
    events = gateway.scan_upstream()
    assert [(e.kind, e.summary, e.actor_type) for e in events] == [
        ("human_direct_message", "human message via claude", "human")]
    pointer = events[0].payload["source"]  # where to read the text back; no text
    assert set(events[0].payload) == {"source"}
    assert pointer["path"] == os.path.realpath(transcript)
    assert pointer["to"] == transcript.stat().st_size
    assert re.fullmatch(r"[0-9a-f]{16}", pointer["rows"][0])
    assert len(pointer["rows"]) == 1
    assert events[0].occurred_at == clock.now - 3_600_000  # the row's own time
    assert len(gateway.pending_notices(WATCHER)) == 1
    assert wakes.calls == [WATCHER]
    assert gateway.scan_upstream() == []  # the marker moved past it


def test_the_dedupe_key_names_the_source_identity_the_epoch_and_the_new_offset(
    gateway: Gateway, transcript: Path, db_path: Path,
) -> None:
    _adopt_watched(gateway, transcript)
    _append(transcript, claude_user("hello"))
    assert len(gateway.scan_upstream()) == 1
    conn = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        keys = [k for (k,) in conn.execute(
            "SELECT dedupe_key FROM session_state_events WHERE kind = 'human_direct_message'")]
    finally:
        conn.close()
    size = transcript.stat().st_size
    assert len(keys) == 1
    # source identity, then the marker's re-baseline epoch and the new offset
    assert re.fullmatch(rf"upstream:{re.escape(KEY)}:[0-9a-f]{{16}}:0:{size}", keys[0])


def test_unwatched_links_are_not_scanned(gateway: Gateway, transcript: Path) -> None:
    assert gateway.adopt(KEY, source="claude", path=transcript) is not None
    _append(transcript, claude_user("nobody watches"))
    assert gateway.scan_upstream() == []
    assert gateway.watch(WATCHER, KEY)
    assert [e.kind for e in gateway.scan_upstream()] == ["human_direct_message"]


def test_own_texts_are_self_echo_and_only_their_hashes_are_stored(
    gateway: Gateway, transcript: Path, db_path: Path,
) -> None:
    _adopt_watched(gateway, transcript)
    gateway.note_own_text(KEY, "same prompt")
    _append(transcript, claude_user(" same   prompt "))
    assert gateway.scan_upstream() == []
    _append(transcript, claude_user("an external prompt"))
    assert len(gateway.scan_upstream()) == 1
    assert b"same prompt" not in db_path.read_bytes()


def test_sessions_send_to_an_adopted_session_counts_as_own_text(
    gateway: Gateway, transcript: Path,
) -> None:
    _adopt_watched(gateway, transcript)
    assert gateway.sessions_send(WATCHER, KEY, "forwarded by the gateway").accepted
    _append(transcript, claude_user("forwarded   by the gateway"))
    assert gateway.scan_upstream() == []


def test_several_turns_in_one_scan_record_one_event_with_a_turn_count(
    gateway: Gateway, transcript: Path, clock: ManualClock,
) -> None:
    _adopt_watched(gateway, transcript)
    clock.advance(2 * DAY_MS)  # the adoption is older than the last 24 hours now
    old = "2025-01-01T00:00:00.000Z"
    _append(transcript, claude_user("one", timestamp=old) + claude_user("two", timestamp=old)
            + claude_user("three", timestamp=old))
    events = gateway.scan_upstream()
    assert len(events) == 1
    assert events[0].payload["turns"] == 3
    assert len(events[0].payload["source"]["rows"]) == 3  # a pointer per typed turn
    assert events[0].occurred_at == clock.now - DAY_MS  # clamped to the last 24 hours


def test_a_partial_last_line_waits_and_counts_once_when_complete(
    gateway: Gateway, transcript: Path,
) -> None:
    _adopt_watched(gateway, transcript)
    row = claude_user("written in two parts")
    _append(transcript, row[:25])
    assert gateway.scan_upstream() == []
    _append(transcript, row[25:])
    assert len(gateway.scan_upstream()) == 1
    assert gateway.scan_upstream() == []


def test_a_line_longer_than_the_cap_is_classified_over_several_scans_and_logged_once(
    open_gateway: Callable[..., Gateway], transcript: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    gw = open_gateway(GatewayConfig(scan_cap_bytes=4096))
    _adopt_watched(gw, transcript)
    _append(transcript, claude_assistant("x" * 10_000) + claude_user("y" * 20_000)
            + claude_user("after the big lines"))
    with caplog.at_level(logging.INFO, logger="actors"):
        events = gw.scan_upstream()  # one cadence reads on, a cap at a time
        assert {e.kind for e in events} == {"human_direct_message"}
        assert sum((e.payload or {}).get("turns", 1) for e in events) == 2
        assert gw.scan_upstream() == []
    assert caplog.text.count("longer than the 4096-byte scan cap") == 2  # once per line
    assert _marker(gw, transcript)["offset"] == transcript.stat().st_size


def test_a_long_line_still_being_written_waits_and_its_end_is_read_later(
    open_gateway: Callable[..., Gateway], transcript: Path,
) -> None:
    gw = open_gateway(GatewayConfig(scan_cap_bytes=4096))
    _adopt_watched(gw, transcript)
    row = claude_user("z" * 50_000)
    start = transcript.stat().st_size
    _append(transcript, row[:30_000])
    assert gw.scan_upstream() == []
    assert _marker(gw, transcript)["offset"] == start  # never past bytes it has not classified
    _append(transcript, row[30_000:])
    assert [e.kind for e in gw.scan_upstream()] == ["human_direct_message"]
    assert _marker(gw, transcript)["offset"] == transcript.stat().st_size


def test_a_long_line_rewritten_while_pending_is_read_again_from_its_start(
    open_gateway: Callable[..., Gateway], transcript: Path,
) -> None:
    gw = open_gateway(GatewayConfig(scan_cap_bytes=4096))
    _adopt_watched(gw, transcript)
    start = transcript.stat().st_size
    _append(transcript, claude_assistant("a" * 30_000)[:20_000])
    assert gw.scan_upstream() == []
    with transcript.open("r+b") as handle:  # the half-written line is replaced in place
        handle.truncate(start)
        handle.seek(start)
        handle.write(claude_user("b" * 30_000))
    assert [e.kind for e in gw.scan_upstream()] == ["human_direct_message"]


def test_the_forward_scan_never_skips_a_middle_row_across_capped_scans(
    open_gateway: Callable[..., Gateway], transcript: Path,
) -> None:
    """Anchor §4.5 item 76, scaled down to a 64 KiB cap: each scan reads at most the
    cap, and one cadence scans on until the backlog is read."""
    gw = open_gateway(GatewayConfig(scan_cap_bytes=65_536))
    _adopt_watched(gw, transcript)
    _append(transcript, claude_assistant("a" * 65_000) + claude_user("middle prompt")
            + claude_assistant("b" * 32_000))
    assert len(gw.scan_upstream()) == 1
    assert gw.scan_upstream() == []
    assert _marker(gw, transcript)["offset"] == transcript.stat().st_size


def test_three_missing_scans_record_one_upstream_missing_and_keep_the_link(
    gateway: Gateway, transcript: Path,
) -> None:
    _adopt_watched(gateway, transcript)
    transcript.unlink()
    assert gateway.scan_upstream() == []
    assert gateway.scan_upstream() == []
    events = gateway.scan_upstream()
    assert [(e.kind, e.actor_type, e.summary, e.payload) for e in events] == [
        ("upstream_missing", "system", "upstream missing via claude", {"channel": "claude"})]
    assert len(gateway.pending_notices(WATCHER)) == 1
    for _ in range(3):
        assert gateway.scan_upstream() == []  # told once: still gone is quiet
    assert "missing" in _stored_marker(gateway)


@pytest.mark.parametrize("how", ["moved back", "restored", "rewritten"])
def test_a_transcript_that_comes_back_is_read_on_from_where_it_was(
    gateway: Gateway, transcript: Path, tmp_path: Path, how: str,
) -> None:
    """Issue 34 item 2: a move and back (same inode), a restore or ``git stash -u`` and
    pop (a new inode, the same bytes): turns typed after it came back are reported, the
    history before it never again. Other bytes before the marker: re-baselined."""
    _adopt_watched(gateway, transcript)
    _append(transcript, claude_user("before it went"))
    assert [e.kind for e in gateway.scan_upstream()] == ["human_direct_message"]
    aside = tmp_path / "aside.jsonl"
    content = transcript.read_bytes()
    if how == "moved back":
        transcript.rename(aside)
    else:
        transcript.unlink()
    for _ in range(3):
        gateway.scan_upstream()
    assert "missing" in _stored_marker(gateway)
    if how == "moved back":
        aside.rename(transcript)
    elif how == "restored":
        transcript.write_bytes(content)
    else:
        transcript.write_bytes(claude_user("other history " + "x" * len(content)))
    assert gateway.scan_upstream() == []  # nothing new yet: no longer missing
    assert "missing" not in _stored_marker(gateway)
    for n in range(3):
        _append(transcript, claude_user(f"typed after it came back {n}"))
        assert [e.kind for e in gateway.scan_upstream()] == ["human_direct_message"], n
    kinds = [k for k, _ in _events(gateway)]
    assert kinds.count("human_direct_message") == 4
    assert kinds.count("upstream_missing") == 1


def test_any_other_result_resets_the_missing_streak(gateway: Gateway, transcript: Path) -> None:
    """Anchor §4.4 item 55: missing, no news, missing, missing → no event."""
    _adopt_watched(gateway, transcript)
    content = transcript.read_bytes()
    transcript.unlink()
    assert gateway.scan_upstream() == []
    transcript.write_bytes(content)
    assert gateway.scan_upstream() == []
    transcript.unlink()
    assert gateway.scan_upstream() == []
    assert gateway.scan_upstream() == []
    assert [k for k, _ in _events(gateway)] == ["adopted"]


def test_a_transient_error_is_not_a_miss(gateway: Gateway, transcript: Path,
                                         db_path: Path) -> None:
    """Anchor §4.8 item 102: a path too long to open proves nothing."""
    _adopt_watched(gateway, transcript)
    conn = apsw.Connection(str(db_path))
    try:
        conn.set_busy_timeout(5000)
        conn.execute("UPDATE session_upstream_links SET upstream_ref_json = ?",
                     ('{"path":"/' + "x" * 5000 + '"}',))
    finally:
        conn.close()
    for _ in range(4):
        assert gateway.scan_upstream() == []
    assert [k for k, _ in _events(gateway)] == ["adopted"]


def test_a_fifo_is_never_read_and_counts_as_a_missing_file(
    gateway: Gateway, transcript: Path, tmp_path: Path,
) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    assert gateway.adopt("agent:main:fifo", source="claude", path=fifo) is None
    _adopt_watched(gateway, transcript)
    transcript.unlink()
    os.mkfifo(transcript)
    for _ in range(3):
        gateway.scan_upstream()  # would hang forever if the FIFO were opened blocking
    assert [k for k, _ in _events(gateway)] == ["adopted", "upstream_missing"]


def test_re_adopting_the_same_source_keeps_progress_and_a_new_source_rebases(
    gateway: Gateway, transcript: Path, tmp_path: Path,
) -> None:
    _adopt_watched(gateway, transcript)
    _append(transcript, claude_user("counted"))
    assert len(gateway.scan_upstream()) == 1
    again = gateway.adopt(KEY, source="claude", path=transcript, from_start=True)
    assert again is not None
    assert again.marker["offset"] == transcript.stat().st_size  # progress kept
    other = tmp_path / "other.jsonl"
    other.write_bytes(claude_user("old history in the new file"))
    rebased = gateway.adopt(KEY, source="claude", path=other, from_start=True)
    assert rebased is not None
    assert rebased.marker["offset"] == 0
    assert rebased.source_key != again.source_key
    assert [(e.payload or {}).get("turns") for e in gateway.scan_upstream()] == [None]


def test_a_pi_file_without_a_session_header_is_adopted_without_a_link(
    gateway: Gateway, tmp_path: Path,
) -> None:
    odd = tmp_path / "odd.jsonl"
    odd.write_bytes(NOT_A_PI_SESSION + pi_user("hello"))
    assert gateway.adopt("agent:main:pi:odd", source="pi", path=odd) is None
    assert _events(gateway, "agent:main:pi:odd") == [("adopted", "session adopted from pi")]
    current = tmp_path / "v3.jsonl"
    current.write_bytes(pi_header(3) + pi_user("hello"))
    _adopt_watched(gateway, current, "agent:main:pi:v3", "pi")
    gateway.note_own_text("agent:main:pi:v3", "sent from OpenClaw")
    _append(current, pi_user("sent  from OpenClaw"))
    assert gateway.scan_upstream() == []
    _append(current, pi_user("external Pi turn") + b"{not-json}\n" + pi_user("behind"))
    assert [e.summary for e in gateway.scan_upstream()] == ["human message via pi"]
    assert gateway.scan_upstream() == []  # the cursor never passes the bad row


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_pi_format_is_linked_and_pis_migration_counts_nothing_again(
    gateway: Gateway, tmp_path: Path, version: int,
) -> None:
    path = tmp_path / "old.jsonl"
    old = PiSession(path, version=version)
    old.append(Typed("typed before the adoption"))
    _adopt_watched(gateway, path, "agent:main:pi:old", "pi")
    old.append(Typed("typed in the old format"))
    assert [e.summary for e in gateway.scan_upstream()] == ["human message via pi"]
    # Pi opens the file again: it migrates it to v3 and rewrites it whole.
    replacement = tmp_path / "old.new"
    migrated = PiSession(replacement, session_id=old.session_id)
    migrated.append(Typed("typed before the adoption"), Typed("typed in the old format"))
    replacement.replace(path)
    assert gateway.scan_upstream() == []
    _append(path, pi_user("typed after the migration"))
    assert [e.summary for e in gateway.scan_upstream()] == ["human message via pi"]


def test_a_pi_file_rewritten_in_place_rebaselines_without_counting(
    gateway: Gateway, tmp_path: Path,
) -> None:
    path = tmp_path / "v3.jsonl"
    path.write_bytes(pi_header(3) + pi_user("one") + pi_user("two"))
    _adopt_watched(gateway, path, "agent:main:pi:v3", "pi")
    replacement = tmp_path / "v3.new"
    replacement.write_bytes(pi_header(3) + pi_user("migrated history"))
    replacement.replace(path)  # a different inode, and shorter
    assert gateway.scan_upstream() == []
    _append(path, pi_user("typed after the rewrite"))
    assert len(gateway.scan_upstream()) == 1


def test_a_key_adopted_under_two_agents_is_skipped_as_ambiguous(
    gateway: Gateway, transcript: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    _adopt_watched(gateway, transcript)
    assert gateway.adopt(KEY, source="claude", path=transcript, agent_id="ops") is not None
    assert gateway.watch("agent:ops:main", KEY, agent_id="ops")
    _append(transcript, claude_user("which agent?"))
    with caplog.at_level(logging.WARNING, logger="actors"):
        assert gateway.scan_upstream() == []
    assert "more than one agent" in caplog.text


def test_the_cadence_scans_after_the_initial_delay_and_then_on_its_interval(
    open_gateway: Callable[..., Gateway], transcript: Path, clock: ManualClock,
) -> None:
    gw = open_gateway(GatewayConfig(upstream_initial_delay_s=0.0, upstream_interval_s=0.01),
                      monitor=True)
    _adopt_watched(gw, transcript)
    cycles = threading.Semaphore(0)
    original = gw._upstream.scan_cycle

    def counting_cycle(**kwargs: bool) -> list[object]:
        assert kwargs == {"follow_backlog": False}  # the cadence leaves backlogs to soon scans
        events = original(**kwargs)
        cycles.release()
        return list(events)

    gw._upstream.scan_cycle = counting_cycle  # type: ignore[method-assign]
    _append(transcript, claude_user("picked up by the cadence"))
    # The first cycle (no initial delay) may have run before the patch: one interval
    # later (10 ms on the injected clock) a counted one is due either way.
    clock.advance(10)
    assert cycles.acquire(timeout=TIMEOUT)
    clock.advance(10)  # and one interval after that, the next
    assert cycles.acquire(timeout=TIMEOUT)
    assert [k for k, _ in _events(gw)] == ["adopted", "human_direct_message"]


def test_a_cadence_that_meets_a_storage_fault_logs_once_per_episode(
    gateway: Gateway, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
) -> None:
    manager = gateway._upstream
    real = manager.scan_cycle
    failures: list[BaseException] = [StorageError("the server is down")] * 3 + [
        RuntimeError("a bug")]

    def failing(**_: bool) -> list[object]:
        raise failures.pop(0)

    monkeypatch.setattr(manager, "scan_cycle", failing)
    caplog.set_level(logging.INFO, logger="actors.monitors.service")
    for _ in range(3):
        manager.cadence_cycle()  # never raises
    faults = [r for r in caplog.records if "cycles are failing" in r.getMessage()]
    assert [r.levelno for r in faults] == [logging.WARNING]  # once, not per cycle
    manager.cadence_cycle()  # anything else keeps its traceback
    assert [r.exc_info is not None for r in caplog.records
            if "scan cycle failed" in r.getMessage()] == [True]
    monkeypatch.setattr(manager, "scan_cycle", real)
    manager.cadence_cycle()
    assert any("cycles work again" in r.getMessage() for r in caplog.records)


def test_the_gateways_own_long_text_is_self_echo_and_a_persons_is_counted(
    open_gateway: Callable[..., Gateway], transcript: Path,
) -> None:
    gw = open_gateway(GatewayConfig(scan_cap_bytes=65_536))
    _adopt_watched(gw, transcript)
    own = "relayed log line\n" * 20_000  # 340 KB, read in six pieces
    gw.note_own_text(KEY, own)
    _append(transcript, claude_user(own))
    assert gw.scan_upstream() == []  # the gateway's own text came back: not a person
    _append(transcript, claude_user(own + "and one more line typed by a person"))
    assert [e.kind for e in gw.scan_upstream()] == ["human_direct_message"]


def test_adoption_at_the_end_finds_the_end_of_a_last_line_longer_than_a_mebibyte(
    gateway: Gateway, transcript: Path,
) -> None:
    _append(transcript, claude_user("old " * 400_000))  # a 1.6 MB last line
    link = gateway.adopt(KEY, source="claude", path=transcript)
    assert link is not None
    assert link.marker["offset"] == transcript.stat().st_size  # not 0: history is not new
    assert gateway.watch(WATCHER, KEY)
    assert gateway.scan_upstream() == []


def test_a_rewrite_before_the_marker_while_a_long_line_is_pending_re_baselines(
    open_gateway: Callable[..., Gateway], transcript: Path,
) -> None:
    gw = open_gateway(GatewayConfig(scan_cap_bytes=4096))
    _adopt_watched(gw, transcript)
    row = claude_user("p" * 30_000)
    _append(transcript, row[:20_000])
    assert gw.scan_upstream() == []  # the line waits, part-way read
    data = transcript.read_bytes()
    start = len(data) - 20_000 - 32  # the last bytes before the long line, which the marker's
    at = start + max(i for i, byte in enumerate(data[start:start + 32])  # check reads again:
                     if chr(byte).isdigit())  # a digit of the row's timestamp,
    with transcript.open("r+b") as handle:  # rewritten in place
        handle.write(data[:at] + (b"1" if data[at:at + 1] != b"1" else b"2") + data[at + 1:])
    assert transcript.read_bytes() != data
    _append(transcript, row[20_000:])
    assert gw.scan_upstream() == []  # re-baselined: nothing counted from rewritten history
    marker = _marker(gw, transcript)
    assert marker["epoch"] == 1
    assert marker["offset"] == transcript.stat().st_size
