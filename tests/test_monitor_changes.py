"""Change detection before any monitor (``actors.monitors.changes``): fingerprints, and a
file several links share stat'ed once per cycle."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from actors.monitors import changes
from actors.monitors.changes import StatCache, fingerprint
from persistence import UpstreamLink


def _link(source: str, path: Path, thread: str) -> UpstreamLink:
    return UpstreamLink(session_key=f"agent:main:{source}:{thread}", agent_id="main",
                        source=source, host_id="gateway:local", thread_id=thread,
                        upstream_ref={"path": str(path)}, source_key="0" * 16, marker={},
                        created_at=0, updated_at=0)


def _counting_stat(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = os.stat

    def stat(path: str) -> os.stat_result:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(changes.os, "stat", stat)
    return seen


def test_links_of_one_store_stat_it_once_per_cycle(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "crush.db"
    store.write_bytes(b"x" * 10)
    (tmp_path / "crush.db-wal").write_bytes(b"y")
    links = [_link("crush", store, f"s{i}") for i in range(25)]
    seen = _counting_stat(monkeypatch)
    cache: StatCache = {}
    prints = {fingerprint(link, cache) for link in links}
    assert len(prints) == 1
    assert sorted(seen) == [str(store), f"{store}-wal"]  # 2 stats, not 50
    seen.clear()
    assert {fingerprint(link) for link in links} == prints  # no cache: afresh each time
    assert len(seen) == 50


def test_a_cached_cycle_sees_what_a_fresh_stat_sees_and_the_next_cycle_sees_changes(
        tmp_path: Path) -> None:
    session = tmp_path / "chats" / "session-a.jsonl"
    session.parent.mkdir()
    session.write_text("{}\n")
    (tmp_path / "logs.json").write_text("[]")
    link = _link("gemini", session, "session-a")
    first: StatCache = {}
    before = fingerprint(link, first)
    assert before is not None
    assert before == fingerprint(link)
    (tmp_path / "logs.json").write_text('[{"sessionId": "a"}]')  # the side file changed
    assert fingerprint(link, first) == before  # the same cycle: its stat stands
    assert fingerprint(link, {}) != before  # the next cycle sees the change
    session.unlink()
    assert fingerprint(link, {}) is None  # a vanished source is always scanned
