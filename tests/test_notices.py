"""Notice text and the per-watcher queue, without threads (anchor §3.5)."""

from __future__ import annotations

from actors.engine.notices import NoticeQueue, notice_text

TARGET = ("agent:main:subagent:child", "main")


def test_notice_text_is_exactly_the_contract_line() -> None:
    assert notice_text("agent:main:subagent:child", 12) == (
        'Session "agent:main:subagent:child" changed (other actor). Reconcile before acting: '
        'session_status sessionKey "agent:main:subagent:child" changesSince 12.'
    )


def test_an_identical_notice_is_queued_once() -> None:
    queue = NoticeQueue()
    text = notice_text(TARGET[0], 3)
    assert queue.enqueue_notice(text, TARGET) is True
    for _ in range(19):
        assert queue.enqueue_notice(text, TARGET) is False
    assert queue.texts() == [text]


def test_a_changed_notice_replaces_the_old_one_and_moves_to_the_end() -> None:
    queue = NoticeQueue()
    queue.enqueue_notice(notice_text(TARGET[0], 3), TARGET)
    queue.enqueue_event("cron done", "cron:job-1")
    assert queue.enqueue_notice(notice_text(TARGET[0], 5), TARGET) is True
    assert queue.texts() == ["cron done", notice_text(TARGET[0], 5)]


def test_the_oldest_entry_is_dropped_past_the_limit() -> None:
    queue = NoticeQueue(limit=20)
    for i in range(21):
        queue.enqueue_notice(notice_text(f"agent:main:t{i}", 0), (f"agent:main:t{i}", "main"))
    texts = queue.texts()
    assert len(texts) == 20
    assert texts[0] == notice_text("agent:main:t1", 0)


def test_events_dedupe_on_text_and_context_and_without_context_only_against_the_last() -> None:
    queue = NoticeQueue()
    assert queue.enqueue_event("Exec completed", "EXEC:job-1") is True
    assert queue.enqueue_event("Exec completed", "exec:job-1") is False
    assert queue.enqueue_event("  plain  ") is True
    assert queue.enqueue_event("plain") is False
    assert queue.enqueue_event("   ") is False
    assert queue.texts() == ["Exec completed", "plain"]


def test_withdraw_removes_only_that_targets_notices() -> None:
    queue = NoticeQueue()
    other = ("agent:main:other", "main")
    queue.enqueue_notice(notice_text(TARGET[0], 1), TARGET)
    queue.enqueue_notice(notice_text(other[0], 1), other)
    queue.enqueue_event("keep me")
    assert queue.withdraw(TARGET) == 1
    assert queue.withdraw_all_notices() == 1
    assert queue.texts() == ["keep me"]


def test_drain_consumes_everything_in_order() -> None:
    queue = NoticeQueue()
    queue.enqueue_event("a")
    queue.enqueue_notice(notice_text(TARGET[0], 1), TARGET)
    entries = queue.drain()
    assert [e.target for e in entries] == [None, TARGET]
    assert len(queue) == 0


def _open(target: tuple[str, str], last_seen: int, material: int
          ) -> tuple[tuple[str, str], int, int, str]:
    return target, last_seen, material, notice_text(target[0], last_seen)


OTHER = ("agent:main:other", "main")


def test_reconcile_adds_open_notices_after_local_events_and_drops_consumed_ones() -> None:
    queue = NoticeQueue()
    queue.enqueue_event("cron done", "cron:1")
    queue.reconcile([_open(TARGET, 3, 4), _open(OTHER, 0, 5)])
    assert queue.texts() == ["cron done", notice_text(TARGET[0], 3), notice_text(OTHER[0], 0)]
    # Another process drained TARGET (no follow-up) and OTHER (follow-up at 5).
    queue.reconcile([_open(OTHER, 5, 6)])
    assert queue.texts() == ["cron done", notice_text(OTHER[0], 5)]
    queue.reconcile([])
    assert queue.texts() == ["cron done"]


def test_reconcile_keeps_the_place_of_a_notice_whose_text_is_unchanged() -> None:
    queue = NoticeQueue()
    queue.reconcile([_open(TARGET, 3, 4)])
    queue.enqueue_event("later event")
    queue.reconcile([_open(TARGET, 3, 9)])  # more material, same frozen text
    assert queue.texts() == [notice_text(TARGET[0], 3), "later event"]
    assert queue.entries()[0].last_seen == 3


def test_an_overflowed_notice_stays_out_until_a_drain_or_newer_material() -> None:
    queue = NoticeQueue(limit=3)
    queue.reconcile([_open(TARGET, 3, 4)])
    for i in range(3):
        queue.enqueue_event(f"filler {i}", f"f:{i}")
    assert notice_text(TARGET[0], 3) not in queue.texts()
    queue.reconcile([_open(TARGET, 3, 4)])  # still open, nothing new: stays out
    assert notice_text(TARGET[0], 3) not in queue.texts()
    queue.reconcile([_open(TARGET, 3, 5)])  # a newer material event heals it
    assert queue.texts()[-1] == notice_text(TARGET[0], 3)
    for i in range(3, 6):
        queue.enqueue_event(f"filler {i}", f"f:{i}")
    assert queue.evicted
    queue.drain()
    assert not queue.evicted
    queue.reconcile([_open(TARGET, 3, 5)])  # after a drain it is back
    assert queue.texts() == [notice_text(TARGET[0], 3)]


def test_an_overflowed_notice_comes_back_when_another_process_frees_room() -> None:
    queue = NoticeQueue(limit=2)
    first, second, third = (("agent:main:a", "main"), ("agent:main:b", "main"),
                            ("agent:main:c", "main"))
    queue.reconcile([_open(first, 0, 1), _open(second, 0, 2), _open(third, 0, 3)])
    assert queue.texts() == [notice_text("agent:main:b", 0), notice_text("agent:main:c", 0)]
    # Another process drained b and c; a is still open and now fits.
    queue.reconcile([_open(first, 0, 1)])
    assert queue.texts() == [notice_text("agent:main:a", 0)]
    assert not queue.evicted
