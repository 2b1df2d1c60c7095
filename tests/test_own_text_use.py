"""An own text is used up by the row it matches, and one never echoed stops hiding (issue 34
item 1): after the gateway sends "continue" once, a person typing "continue" is reported."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from actors import Gateway
from actors.testing import ManualClock
from actors.upstream.common import OwnTextClaims, OwnTextRecord, Unit, text_hash
from actors.upstream.scanning import count_turns
from persistence import open_backend
from tests._upstream_rows import claude_assistant, claude_user
from tests.conftest import START_MS, WATCHER, SignalLogDb

KEY = "agent:main:claude:worker"
MINUTE = 60_000


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


def _typed(text: str, at_ms: int) -> Unit:
    return Unit(human=True, reason="typed", text=text, occurred_at=at_ms)


# -- the rule, without threads ------------------------------------------------------------


def test_one_record_hides_one_row_only() -> None:
    own = OwnTextClaims([OwnTextRecord(1, text_hash("continue"), START_MS)], now=START_MS,
                        ttl_ms=15 * MINUTE, skew_ms=30_000)
    rows = [_typed("continue", START_MS + 1000), _typed("continue", START_MS + 2000)]
    assert count_turns(rows, own) == (1, START_MS + 2000)
    assert own.claimed == (1,)


def test_two_records_of_the_same_words_hide_two_rows_oldest_first() -> None:
    own = OwnTextClaims([OwnTextRecord(7, text_hash("go"), START_MS + 5),
                         OwnTextRecord(3, text_hash("go"), START_MS)],
                        now=START_MS, ttl_ms=MINUTE)
    assert count_turns([_typed("go", START_MS + 10)] * 2, own) == (0, None)
    assert own.claimed == (3, 7)


def test_a_record_past_its_ttl_hides_nothing() -> None:
    record = OwnTextRecord(1, text_hash("continue"), START_MS)
    late = OwnTextClaims([record], now=START_MS + 15 * MINUTE + 1, ttl_ms=15 * MINUTE)
    assert count_turns([_typed("continue", START_MS + 15 * MINUTE)], late) == (
        1, START_MS + 15 * MINUTE)
    assert late.claimed == ()
    assert late.expired_before() == START_MS + 1
    assert OwnTextClaims([], now=START_MS, ttl_ms=MINUTE).expired_before() is None
    in_time = OwnTextClaims([record], now=START_MS + 15 * MINUTE, ttl_ms=15 * MINUTE)
    assert count_turns([_typed("continue", START_MS + MINUTE)], in_time) == (0, None)


def test_a_row_written_before_the_text_was_sent_is_a_persons() -> None:
    own = OwnTextClaims([OwnTextRecord(1, text_hash("continue"), START_MS)], now=START_MS,
                        ttl_ms=MINUTE, skew_ms=30_000)
    assert count_turns([_typed("continue", START_MS - 30_001)], own)[0] == 1
    assert count_turns([_typed("continue", START_MS - 30_000)], own)[0] == 0  # within the skew


def test_a_record_of_unknown_time_matches_as_before() -> None:
    own = OwnTextClaims([OwnTextRecord(1, text_hash("x"), 0)], now=START_MS * 2, ttl_ms=MINUTE)
    assert count_turns([_typed("x", 5)], own) == (0, None)
    assert own.claimed == (1,)


def test_a_row_without_a_time_may_match() -> None:
    own = OwnTextClaims([OwnTextRecord(1, text_hash("x"), START_MS)], now=START_MS, ttl_ms=MINUTE)
    assert count_turns([Unit(human=True, reason="typed", text="x")], own) == (0, None)


# -- through the gateway --------------------------------------------------------------------


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "worker.jsonl"
    path.write_bytes(claude_user("history", timestamp=_iso(START_MS - MINUTE))
                     + claude_assistant("ok"))
    return path


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def _stored(db: SignalLogDb) -> int:
    conn = open_backend(db.location).connect(writer=True)
    try:
        return int(conn.execute("SELECT count(*) FROM session_own_texts").fetchone()[0])
    finally:
        conn.close()


def test_a_person_typing_the_gateways_words_after_its_echo_is_reported_each_time(
    open_gateway: Callable[..., Gateway], db: SignalLogDb, transcript: Path,
    clock: ManualClock,
) -> None:
    gw = open_gateway()
    assert gw.adopt(KEY, source="claude", path=transcript) is not None
    assert gw.watch(WATCHER, KEY)
    gw.note_own_text(KEY, "continue")
    assert _stored(db) == 1
    clock.advance(1000)
    _append(transcript, claude_user("continue", timestamp=_iso(clock())))
    assert gw.scan_upstream() == []  # the echo of the gateway's own text
    assert _stored(db) == 0  # used up with the marker's move
    for turn in range(3):
        clock.advance(MINUTE)
        _append(transcript, claude_user("continue", timestamp=_iso(clock())))
        assert [e.kind for e in gw.scan_upstream()] == ["human_direct_message"], turn


def test_a_text_never_echoed_stops_hiding_a_persons_words_after_its_ttl(
    open_gateway: Callable[..., Gateway], db: SignalLogDb, transcript: Path,
    clock: ManualClock,
) -> None:
    gw = open_gateway()
    assert gw.adopt(KEY, source="claude", path=transcript) is not None
    assert gw.watch(WATCHER, KEY)
    gw.note_own_text(KEY, "continue")  # delivered nowhere: the tool never writes it
    clock.advance(gw.config.own_text_ttl_ms + 1)
    _append(transcript, claude_user("continue", timestamp=_iso(clock())))
    assert [e.kind for e in gw.scan_upstream()] == ["human_direct_message"]
    assert _stored(db) == 0  # the expired record went with the scan


def test_words_a_person_typed_before_the_gateway_sent_the_same_are_reported(
    open_gateway: Callable[..., Gateway], transcript: Path, clock: ManualClock,
) -> None:
    gw = open_gateway()
    assert gw.adopt(KEY, source="claude", path=transcript) is not None
    assert gw.watch(WATCHER, KEY)
    typed_at = clock()
    clock.advance(5 * MINUTE)
    gw.note_own_text(KEY, "continue")  # sent later; its echo is not written yet
    _append(transcript, claude_user("continue", timestamp=_iso(typed_at)))
    assert [e.kind for e in gw.scan_upstream()] == ["human_direct_message"]
    clock.advance(1000)
    _append(transcript, claude_user("continue", timestamp=_iso(clock())))
    assert gw.scan_upstream() == []  # the record still waited for its own echo
