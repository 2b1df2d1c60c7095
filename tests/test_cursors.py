"""Cursor arithmetic without threads or SQLite (anchor §3.3, §3.4, §3.7, §3.8)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from persistence.cursors import Cursor, acknowledge, is_pending, material_update, refreeze, seed


def test_a_seed_is_synced_at_its_sequence() -> None:
    assert seed(7) == Cursor(7, 7, 7)
    assert not is_pending(seed(7))


def test_the_first_material_event_opens_a_notice_covering_it() -> None:
    assert material_update(seed(5), 9) == Cursor(5, 9, 9)


def test_later_material_events_leave_the_frozen_watermark_in_place() -> None:
    cursor = material_update(material_update(material_update(seed(5), 9), 12), 15)
    assert cursor == Cursor(5, 9, 15)


def test_a_missing_cursor_starts_from_zero() -> None:
    assert material_update(None, 4) == Cursor(0, 4, 4)


def test_acknowledge_moves_to_the_frozen_watermark_and_opens_one_follow_up() -> None:
    cursor, follow_up = acknowledge(Cursor(5, 9, 15))
    assert cursor == Cursor(9, 15, 15)
    assert follow_up == 9


def test_acknowledge_without_interleaved_work_closes_the_notice() -> None:
    cursor, follow_up = acknowledge(Cursor(5, 9, 9))
    assert cursor == Cursor(9, 9, 9)
    assert follow_up is None
    assert not is_pending(cursor)


def test_refreeze_covers_everything_pending() -> None:
    assert refreeze(Cursor(5, 9, 15)) == Cursor(5, 15, 15)


@given(st.lists(st.one_of(st.just("ack"), st.just("sweep"), st.integers(1, 5)), max_size=60))
def test_watermarks_stay_ordered_under_any_operation_sequence(ops: list[object]) -> None:
    cursor = seed(0)
    head = 0
    for op in ops:
        if op == "ack":
            cursor, follow_up = acknowledge(cursor)
            assert follow_up is None or follow_up == cursor.last_seen
        elif op == "sweep":
            if is_pending(cursor):
                cursor = refreeze(cursor)
        else:
            assert isinstance(op, int)
            head += op
            cursor = material_update(cursor, head)
        assert cursor.last_seen <= cursor.notified <= cursor.material <= head
