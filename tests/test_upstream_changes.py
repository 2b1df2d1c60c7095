"""Pay per change: idle cycles touch no monitor, file events scan one link, fallbacks cover losses.

The notification path is driven by an injected feed (``ManualFeed``): the
test says which files changed, the scan runs on the gateway's workers, and
the test waits (bounded) for the ``on_wake`` it causes. One test uses the
real ``watchfiles`` feed the same way. No sleeps: every wait is an event
with its own timeout.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import actors.monitors.link_monitor
from actors import Gateway
from actors.engine.notices import notice_text
from actors.monitors.filefeed import OnChange
from tests._upstream_rows import claude_assistant, claude_user
from tests.conftest import WATCHER, Wakes

TIMEOUT = 10.0


class ManualFeed:
    """A change feed the test drives: it records what it was told to watch."""

    def __init__(self, on_change: OnChange) -> None:
        self.on_change = on_change
        self.directories: frozenset[str] = frozenset()
        self.closed = False

    def watch(self, directories: frozenset[str]) -> None:
        self.directories = directories

    def close(self, timeout: float) -> int:
        self.closed = True
        return 0

    def emit(self, paths: set[str] | None) -> None:
        """Deliver an event as the feed's thread would (here: the test's thread)."""
        self.on_change(paths)


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts real source scans per session key."""
    counted: Counter[str] = Counter()
    original = actors.monitors.link_monitor.scan_source

    def counting(link: Any, *args: Any, **kwargs: Any) -> Any:
        counted[link.session_key] += 1
        return original(link, *args, **kwargs)

    monkeypatch.setattr(actors.monitors.link_monitor, "scan_source", counting)
    return counted


@pytest.fixture
def home(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "projects" / "-work"
    folder.mkdir(parents=True)
    paths = []
    for i in range(5):
        path = folder / f"s{i}.jsonl"
        path.write_bytes(claude_user(f"old {i}") + claude_assistant("ok"))
        paths.append(path)
    return paths


def _key(i: int) -> str:
    return f"agent:main:claude:s{i}"


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


@pytest.fixture
def watched(open_gateway: Callable[..., Gateway], home: list[Path]
            ) -> Iterator[tuple[Gateway, Wakes, ManualFeed]]:
    wakes = Wakes()
    gw = open_gateway(on_wake=wakes)
    for i, path in enumerate(home):
        assert gw.adopt(_key(i), source="claude", path=path) is not None
        assert gw.watch(WATCHER, _key(i))
    feeds: list[ManualFeed] = []

    def factory(on_change: OnChange, **_: object) -> ManualFeed:
        feeds.append(ManualFeed(on_change))
        return feeds[-1]

    gw._feed_factory = factory
    assert gw.start_upstream_notifications() is True
    assert gw.start_upstream_notifications() is True  # idempotent
    assert len(feeds) == 1
    return gw, wakes, feeds[0]


def test_an_idle_cycle_scans_no_source_and_a_change_scans_only_its_link(
    watched: tuple[Gateway, Wakes, ManualFeed], home: list[Path], scans: Counter[str],
) -> None:
    gw, wakes, _feed = watched
    gw.scan_upstream()  # first cycle: every link is read once and settles
    assert sorted(scans) == sorted(_key(i) for i in range(5))
    scans.clear()
    for _ in range(3):
        assert gw.scan_upstream() == []
    assert scans == Counter()  # nothing changed: no monitor was asked to read anything
    base = gw.session_status(_key(3)).state_version
    _append(home[3], claude_user("typed by a person"))
    events = gw.scan_upstream()
    assert [e.session_key for e in events] == [_key(3)]
    assert scans == Counter({_key(3): 1})
    assert gw.pending_notices(WATCHER) == [notice_text(_key(3), base)]
    assert wakes.calls == [WATCHER]


def test_a_file_event_scans_that_link_at_once_and_queues_its_notice(
    watched: tuple[Gateway, Wakes, ManualFeed], home: list[Path], scans: Counter[str],
) -> None:
    gw, wakes, feed = watched
    assert str(home[0].parent) in feed.directories
    gw.scan_upstream()
    scans.clear()
    _append(home[1], claude_user("typed by a person"))
    feed.emit({str(home[1])})
    assert wakes.wait_for(1)  # the scan ran on a worker and its notice woke the watcher
    assert wakes.calls == [WATCHER]
    assert scans == Counter({_key(1): 1})
    assert len(gw.pending_notices(WATCHER)) == 1
    # Events for files nobody adopted, or for an unchanged file, change nothing.
    feed.emit({str(home[0].parent / "unrelated.jsonl")})
    assert gw.scan_upstream() == []  # the fallback agrees: nothing new anywhere
    assert len(gw.pending_notices(WATCHER)) == 1


def test_one_file_event_reads_a_line_longer_than_the_cap_to_its_end(
    watched: tuple[Gateway, Wakes, ManualFeed], home: list[Path], scans: Counter[str],
) -> None:
    gw, wakes, feed = watched
    gw.scan_upstream()
    scans.clear()
    _append(home[1], claude_user("pasted " * 500_000))  # 3.5 MB: four scans of the 1 MiB cap
    feed.emit({str(home[1])})  # one event; the scans chain on their own
    assert wakes.wait_for(1)
    assert wakes.calls == [WATCHER]
    assert scans[_key(1)] >= 4
    assert gw.scan_upstream() == []  # all of it was read


def test_a_burst_of_events_for_one_link_queues_one_scan(
    watched: tuple[Gateway, Wakes, ManualFeed], home: list[Path],
) -> None:
    gw, _wakes, _feed = watched
    ident = (_key(2), "main")
    service = gw._upstream
    assert service._soon.add(ident) is True  # as if a scan were already queued
    try:
        assert service.scan_soon([ident, ident, ident]) == 0
    finally:
        service._soon.discard(ident)
    assert service.scan_soon([ident, ident]) == 1


def test_a_lost_notification_is_found_by_the_fallback_scan(
    watched: tuple[Gateway, Wakes, ManualFeed], home: list[Path],
) -> None:
    gw, wakes, _feed = watched
    gw.scan_upstream()
    _append(home[4], claude_user("typed, but the event was lost"))
    assert gw.pending_notices(WATCHER) == []  # no event arrived: nothing yet
    events = gw.scan_upstream()
    assert [e.session_key for e in events] == [_key(4)]
    assert wakes.calls == [WATCHER]


def test_an_overflowed_feed_triggers_one_whole_cycle(
    watched: tuple[Gateway, Wakes, ManualFeed], home: list[Path], scans: Counter[str],
) -> None:
    gw, wakes, feed = watched
    gw.scan_upstream()
    scans.clear()
    _append(home[0], claude_user("first"))
    _append(home[2], claude_user("second"))
    feed.emit(None)  # the kernel queue overflowed: which files changed is unknown
    assert wakes.wait_for(2)
    assert scans == Counter({_key(0): 1, _key(2): 1})  # still only the changed ones
    assert len(gw.pending_notices(WATCHER)) == 2


@pytest.mark.parametrize("how", ["replaced", "rotated"])
def test_a_file_replaced_or_rotated_while_watched_rebaselines_then_counts_new_turns(
    watched: tuple[Gateway, Wakes, ManualFeed], home: list[Path], how: str,
) -> None:
    gw, wakes, feed = watched
    gw.scan_upstream()
    path = home[1]
    if how == "replaced":  # an editor's save: write a new file, rename it over
        fresh = path.with_suffix(".tmp")
        fresh.write_bytes(claude_user("old 1") + claude_assistant("ok") + claude_user("x"))
        os.replace(fresh, path)
    else:  # log rotation: move the old file away, start a new one
        path.rename(path.with_suffix(".1"))
        path.write_bytes(claude_user("history copied into the new file"))
    feed.emit({str(path)})
    assert gw.scan_upstream() == []  # re-baselined, nothing counted
    assert wakes.calls == []
    _append(path, claude_user("typed after the swap"))
    feed.emit({str(path)})
    assert wakes.wait_for(1)
    assert len(gw.pending_notices(WATCHER)) == 1
    assert gw.scan_upstream() == []  # counted once, not again by the fallback


def test_a_link_watched_after_notifications_started_is_followed(
    watched: tuple[Gateway, Wakes, ManualFeed], tmp_path: Path,
) -> None:
    gw, wakes, feed = watched
    other = tmp_path / "elsewhere" / "late.jsonl"
    other.parent.mkdir()
    other.write_bytes(claude_user("history"))
    assert gw.adopt("agent:main:claude:late", source="claude", path=other) is not None
    assert str(other.parent) not in feed.directories  # adopted, not yet watched
    assert gw.watch(WATCHER, "agent:main:claude:late")
    assert str(other.parent) in feed.directories
    _append(other, claude_user("typed"))
    feed.emit({str(other)})
    assert wakes.wait_for(1)


def test_closing_the_gateway_closes_the_feed(
    watched: tuple[Gateway, Wakes, ManualFeed],
) -> None:
    gw, _wakes, feed = watched
    gw.close()
    assert feed.closed


def test_the_real_watchfiles_feed_reports_an_append(
    open_gateway: Callable[..., Gateway], home: list[Path],
) -> None:
    wakes = Wakes()
    gw = open_gateway(on_wake=wakes)
    assert gw.adopt(_key(0), source="claude", path=home[0]) is not None
    assert gw.watch(WATCHER, _key(0))
    gw.scan_upstream()
    if not gw.start_upstream_notifications():
        pytest.skip("file notifications are not available here")
    feed = gw._upstream._feed
    assert feed is not None
    # The watch is set up asynchronously; keep appending one turn per attempt
    # until the first notification arrives (each wait is bounded).
    for attempt in range(20):
        _append(home[0], claude_user(f"typed {attempt}"))
        if wakes.wait_for(1, timeout=0.5):
            break
    assert wakes.calls == [WATCHER]
    assert len(gw.pending_notices(WATCHER)) == 1


@pytest.mark.slow
def test_ten_thousand_pairs_touched_leave_the_thread_count_bounded(
    open_gateway: Callable[..., Gateway],
) -> None:
    gw = open_gateway()
    before = set(threading.enumerate())
    targets = [f"agent:t{t}:main" for t in range(10)]
    watchers = [f"agent:w{w}:main" for w in range(1000)]
    barrier = threading.Barrier(8, timeout=TIMEOUT)
    seen: set[threading.Thread] = set()
    lock = threading.Lock()

    def note_threads() -> None:
        with lock:
            seen.update(threading.enumerate())

    def register(part: int) -> None:
        barrier.wait()
        for i, watcher in enumerate(watchers[part::8]):
            for target in targets:
                assert gw.watch(watcher, target)
            if i % 25 == 0:
                note_threads()

    producers = [threading.Thread(target=register, args=(p,)) for p in range(8)]
    for thread in producers:
        thread.start()
    for thread in producers:
        thread.join(60)
    assert not any(t.is_alive() for t in producers)
    for target in targets:  # each change touches the target's 1,000 pairs
        assert gw.human_message(target, channel="t") is not None
        note_threads()
    assert all(len(gw.pending_notices(w)) == 10 for w in watchers[::97])
    assert len(gw._cursors) == 10_000
    ours = {t for t in seen - before if t not in producers}
    # No thread per actor: 10,000 cursor and 1,000 session actors, at most the worker pool.
    assert len(ours) <= gw.config.worker_threads, sorted(t.name for t in ours)


def test_adopt_many_adopts_watches_and_answers_in_order(
    open_gateway: Callable[..., Gateway], home: list[Path], tmp_path: Path,
) -> None:
    from actors import AdoptRequest
    from actors.errors import InvalidArgument

    gw = open_gateway()
    legacy_pi = tmp_path / "legacy.jsonl"
    legacy_pi.write_bytes(b'{"type":"note","id":"x","timestamp":"2025-01-01T00:00:00Z"}\n')
    requests = [AdoptRequest(key=_key(i), source="claude", path=p) for i, p in enumerate(home)]
    requests.insert(2, AdoptRequest(key="agent:main:gone", source="claude",
                                    path=str(tmp_path / "missing.jsonl")))
    requests.append(AdoptRequest(key="agent:main:pi:legacy", source="pi", path=legacy_pi))
    links = gw.adopt_many(requests, watcher=WATCHER)
    assert [link.session_key if link else None for link in links] == [
        _key(0), _key(1), None, _key(2), _key(3), _key(4), None]
    # Each linked session is watched (its cursor starts at the adopted event) ...
    for i in range(5):
        status = gw.session_status(_key(i), changes_since=0)
        assert status.state_changes is not None
        assert [e.kind for e in status.state_changes.events] == ["adopted"]
    assert gw.session_status("agent:main:pi:legacy").state_version > 0  # adopted, no link
    assert gw.session_status("agent:main:gone").state_version == 0  # unreadable: nothing
    _append(home[4], claude_user("typed"))
    assert [e.session_key for e in gw.scan_upstream()] == [_key(4)]
    assert gw.pending_notices(WATCHER) == [
        notice_text(_key(4), gw.session_status(_key(4), changes_since=0)
                    .state_changes.events[0].sequence)]  # type: ignore[union-attr]
    # Adopting again keeps scan progress and records nothing new.
    again = gw.adopt_many(requests[:1], watcher=WATCHER)
    assert again[0] is not None
    assert again[0].marker == links[0].marker  # type: ignore[union-attr]
    with pytest.raises(InvalidArgument):
        gw.adopt_many([AdoptRequest(key=_key(9), source="vim", path=home[0])])
    with pytest.raises(InvalidArgument):
        gw.adopt_many(requests[:1], watcher="global")
    assert gw.session_status(_key(9)).state_version == 0  # a bad request adopts nothing


def test_a_turn_typed_after_a_file_was_cut_short_counts_once_it_settled(
    watched: tuple[Gateway, Wakes, ManualFeed], home: list[Path], clock: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from actors.monitors.leases import SETTLE_MS

    gw, wakes, feed = watched
    gw.scan_upstream()
    committed = threading.Semaphore(0)
    original = actors.monitors.link_monitor.UpstreamMonitor._commit

    def commit(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        finally:
            committed.release()

    monkeypatch.setattr(actors.monitors.link_monitor.UpstreamMonitor, "_commit", commit)
    path = home[2]
    path.write_bytes(claude_user("old 2"))  # truncated: shorter than the marker
    feed.emit({str(path)})
    assert committed.acquire(timeout=TIMEOUT)  # re-baselined; a settling scan is due
    assert gw._upstream.tick() == 0  # not yet
    clock.advance(SETTLE_MS)
    assert gw._upstream.tick() == 1  # the settling scan runs now, before anyone types
    assert committed.acquire(timeout=TIMEOUT)
    assert wakes.calls == []
    _append(path, claude_user("typed after the truncation"))
    feed.emit({str(path)})
    assert wakes.wait_for(1)  # counted, not swallowed by the settling re-baseline
    assert len(gw.pending_notices(WATCHER)) == 1


def test_the_watchfiles_feed_closes_promptly_right_after_it_was_told_to_watch(
    tmp_path: Path,
) -> None:
    from actors.monitors.filefeed import WatchfilesFeed

    for _ in range(20):  # close() racing the start of a watch is never lost
        feed = WatchfilesFeed(lambda paths: None)
        feed.watch(frozenset({str(tmp_path)}))
        assert feed.close(TIMEOUT) == 0


def test_a_file_named_in_bytes_that_are_not_utf8_does_not_turn_notifications_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """Review finding: watchfiles ends the whole watch on an event for a file whose
    name is not UTF-8; the feed took that as a watch failure and turned every
    file's notifications off for ``retry_s`` after each such event."""
    import queue

    from actors.monitors.filefeed import WatchfilesFeed

    got: queue.SimpleQueue[set[str] | None] = queue.SimpleQueue()
    good = tmp_path / "good.jsonl"
    feed = WatchfilesFeed(got.put, retry_s=60)  # a failure would silence it for 60 s
    try:
        feed.watch(frozenset({str(tmp_path)}))
        assert got.get(timeout=TIMEOUT) is None  # established
        fd = os.open(os.path.join(os.fsencode(tmp_path), b"\xffbad.jsonl"),
                     os.O_CREAT | os.O_WRONLY, 0o600)
        os.write(fd, b"x")
        os.close(fd)
        assert got.get(timeout=TIMEOUT) is None  # re-established at once: a whole cycle
        good.write_text("typed\n")
        seen: set[str] = set()
        while str(good) not in seen:
            paths = got.get(timeout=TIMEOUT)
            seen |= paths or set()
    finally:
        assert feed.close(TIMEOUT) == 0
    assert "not UTF-8" in caplog.text
    assert "failed" not in caplog.text


def test_an_event_for_an_opencode_store_our_own_read_touched_queues_no_scan(
    open_gateway: Callable[..., Gateway], tmp_path: Path, scans: Counter[str],
) -> None:
    """Issue 25 item 1: reading ``opencode.db`` touches its ``-wal``/``-shm``, the feed
    reports that, and a scan for it read the store again: an idle busy-loop.

    An event whose source still has its settled fingerprint is noise and queues
    nothing; a turn a person typed changes the fingerprint and still notifies.
    """
    from actors.testing import OpenCodeTranscript, Reply, Typed
    from actors.upstream.opencode.store import open_opencode_db, read_sequences

    store = tmp_path / "opencode" / "opencode.db"
    store.parent.mkdir()
    ids = [f"ses_{i:02d}faultsAAAAAAAAAAAAAAAAAAA" for i in range(3)]
    for sid in ids:
        OpenCodeTranscript(store, session_id=sid, title=sid, directory="/w").append(
            Typed("hello"), Reply("hi"))
    wakes = Wakes()
    gw = open_gateway(on_wake=wakes)
    for sid in ids:
        assert gw.adopt(f"agent:main:opencode:{sid}", source="opencode", path=store,
                        thread_id=sid) is not None
        assert gw.watch(WATCHER, f"agent:main:opencode:{sid}")
    feeds: list[ManualFeed] = []

    def factory(on_change: OnChange, **_: object) -> ManualFeed:
        feeds.append(ManualFeed(on_change))
        return feeds[-1]

    gw._feed_factory = factory
    assert gw.start_upstream_notifications() is True
    gw.scan_upstream()  # every link settles
    scans.clear()
    queued: list[int] = []
    service = gw._upstream
    original = service.scan_soon

    def counting(idents: Any) -> int:
        queued.append(original(idents))
        return queued[-1]

    service.scan_soon = counting  # type: ignore[method-assign]
    conn = open_opencode_db(store)  # what every scan of ours does to the store
    try:
        read_sequences(conn, ids)
    finally:
        conn.close()
    feeds[0].emit({f"{store}-wal", f"{store}-shm"})  # what inotify reports for that read
    assert sum(queued) == 0
    assert scans == Counter()
    OpenCodeTranscript.resume(store, ids[1]).append(Typed("typed by a person"))
    feeds[0].emit({f"{store}-wal", f"{store}-shm"})
    assert wakes.wait_for(1)
    assert sum(queued) >= 1
    assert gw.pending_notices(WATCHER)
    assert f"opencode:{ids[1]}" in gw.pending_notices(WATCHER)[0]
