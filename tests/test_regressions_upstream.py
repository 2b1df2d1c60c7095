"""Regression tests for defects a new-user adversary found in the upstream monitors.

Each test is named after the fault it pins down.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from actors import Gateway, GatewayConfig
from actors.errors import ArgumentTypeError, InvalidArgument, InvalidSessionKey
from actors.upstream.classify import classify_units
from tests._upstream_rows import NOT_A_PI_SESSION, claude_user, pi_header, pi_user
from tests.conftest import DAY_MS, WATCHER, ManualClock

TIMEOUT = 10.0


def _pi(path: Path, *rows: bytes) -> Path:
    path.write_bytes(pi_header(3) + b"".join(rows))
    return path


def _watched(gw: Gateway, key: str, path: Path, source: str = "pi") -> None:
    assert gw.adopt(key, source=source, path=path) is not None
    assert gw.watch(WATCHER, key)


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def test_missing_streaks_survive_monitor_eviction_when_links_outnumber_the_cap(
    open_gateway: Callable[..., Gateway], tmp_path: Path,
) -> None:
    gw = open_gateway(GatewayConfig(max_monitor_actors=2))
    paths = [_pi(tmp_path / f"s{i}.jsonl", pi_user("history")) for i in range(6)]
    for i, path in enumerate(paths):
        _watched(gw, f"agent:main:p{i}", path)
    paths[0].unlink()
    kinds = [[e.kind for e in gw.scan_upstream()] for _ in range(3)]
    assert kinds == [[], [], ["upstream_missing"]]


def test_a_turn_after_a_rebaseline_is_not_lost_to_an_old_dedupe_id(
    gateway: Gateway, tmp_path: Path,
) -> None:
    path = _pi(tmp_path / "s.jsonl", pi_user("history"))
    base = path.read_bytes()
    _watched(gateway, "agent:main:pi", path)
    _append(path, pi_user("first"))
    assert len(gateway.scan_upstream()) == 1
    replacement = tmp_path / "s.tmp"
    replacement.write_bytes(base)
    replacement.replace(path)  # same name, new inode, shorter: re-baseline
    assert gateway.scan_upstream() == []
    _append(path, pi_user("other"))  # ends at the same offset as "first" did
    assert [e.kind for e in gateway.scan_upstream()] == ["human_direct_message"]


def test_a_file_rewritten_in_place_that_grew_is_rebaselined_not_blinded(
    gateway: Gateway, tmp_path: Path,
) -> None:
    path = _pi(tmp_path / "s.jsonl", pi_user("one"), pi_user("two"))
    _watched(gateway, "agent:main:pi", path)
    lines = path.read_bytes().splitlines(keepends=True)
    label = b'{"type":"label","id":"x1","targetId":"y","label":"m"}\n'
    with path.open("r+b") as handle:  # same inode, every later byte shifted
        handle.write(lines[0] + label + b"".join(lines[1:]))
    assert gateway.scan_upstream() == []
    counted = 0
    for i in range(3):
        _append(path, pi_user(f"after {i}"))
        counted += len(gateway.scan_upstream())
    assert counted == 3


class HungNode:
    """A node reader that blocks until released (then answers with nothing new)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.hang = False
        self.items: list[dict[str, Any]] = [{"type": "user", "uuid": "u-1"}]

    def read_latest(self, thread_id: str, limit: int) -> Sequence[Mapping[str, Any]]:
        if self.hang:
            self.release.wait(30)
        return list(self.items)


def test_a_hung_node_reader_neither_stalls_other_links_nor_close(
    open_gateway: Callable[..., Gateway], tmp_path: Path,
) -> None:
    gw = open_gateway(GatewayConfig(ask_timeout_s=1.0))
    node = HungNode()
    try:
        assert gw.adopt_remote("agent:main:node", node_id="n1", thread_id="t", reader=node)
        assert gw.watch(WATCHER, "agent:main:node")
        path = _pi(tmp_path / "s.jsonl", pi_user("history"))
        _watched(gw, "agent:main:pi", path)
        node.hang = True
        _append(path, pi_user("typed while the node hangs"))
        started = time.monotonic()
        events = gw.scan_upstream()
        assert time.monotonic() - started < 3 * 1.0 + 1.0
        assert [e.session_key for e in events] == ["agent:main:pi"]
        assert len(gw.pending_notices(WATCHER)) == 1
        started = time.monotonic()
        gw.close(timeout=2.0)
        assert time.monotonic() - started < 4.0
    finally:
        node.release.set()  # let the abandoned daemon reader thread finish


@pytest.mark.parametrize("field", ["upstream_interval_s", "upstream_initial_delay_s",
                                   "ask_timeout_s"])
def test_infinite_intervals_are_rejected_by_the_config(field: str) -> None:
    with pytest.raises(InvalidArgument, match=field):
        GatewayConfig(**{field: float("inf")})


def test_classify_reports_what_the_monitor_would_decide(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(pi_header(3) + pi_user("counted") + b"{not json}\n" + pi_user("behind")
                     + pi_user("no newline").rstrip(b"\n"))
    reasons = [(u["line"], u["human"], u["reason"]) for u in classify_units("pi", str(path))]
    # A complete invalid line is read past (issue 25 item 13); the unfinished one waits.
    assert reasons == [(0, False, "header"), (1, True, "typed"), (2, False, "invalid_json"),
                       (3, True, "typed"), (4, False, "partial_line")]
    big = tmp_path / "big.jsonl"
    big.write_bytes(claude_user("x" * 3000) + claude_user("after") + claude_user("y" * 3000)[:-1])
    assert [(u["line"], u["reason"])
            for u in classify_units("claude", str(big), scan_cap_bytes=1000)] == [
        (0, "typed"), (1, "typed"), (2, "partial_line")]  # a row for every line, long or not
    legacy = tmp_path / "legacy.jsonl"  # a v1 file (no version): read like v3
    legacy.write_bytes(pi_header(None) + pi_user("typed", version=1))
    assert [(u["human"], u["reason"]) for u in classify_units("pi", str(legacy))] == [
        (False, "header"), (True, "typed")]
    odd = tmp_path / "odd.jsonl"
    odd.write_bytes(NOT_A_PI_SESSION + pi_user("typed"))
    assert [u["human"] for u in classify_units("pi", str(odd))] == [False, False]
    assert "not_monitored: not_a_pi_session" in next(
        iter(u["reason"] for u in classify_units("pi", str(odd)) if u["line"] == 1))


def test_adopt_rejects_bad_paths_flags_and_thread_ids(gateway: Gateway, tmp_path: Path) -> None:
    path = _pi(tmp_path / "s.jsonl", pi_user("x"))
    with pytest.raises(InvalidArgument, match="NUL"):
        gateway.adopt("agent:main:a", source="pi", path=str(path) + "\x00x")
    with pytest.raises(ArgumentTypeError, match="from_start"):
        gateway.adopt("agent:main:a", source="pi", path=path, from_start="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidSessionKey, match="thread_id"):
        gateway.adopt("agent:main:a", source="pi", path=path, thread_id="t\x00")


def test_thread_ids_come_from_the_session_not_from_a_symlink_name(
    gateway: Gateway, tmp_path: Path,
) -> None:
    pi = _pi(tmp_path / "2026-06-05T05-24-28-246Z_abc.jsonl", pi_user("x"))
    link = gateway.adopt("agent:main:pi", source="pi", path=pi)
    assert link is not None
    assert link.thread_id == "019e963d-6bd6-7ade-8a49-256ac3391bdd"  # the header's id
    claude = tmp_path / "4f1c8a52.jsonl"
    claude.write_bytes(claude_user("x"))
    alias = tmp_path / "alias.jsonl"
    os.symlink(claude, alias)
    linked = gateway.adopt("agent:main:claude", source="claude", path=alias)
    assert linked is not None
    assert linked.thread_id == "4f1c8a52"
    assert linked.upstream_ref["path"] == str(claude)


class BadRowNode:
    """A node reader whose answers may contain rows that are not mappings."""

    def __init__(self) -> None:
        self.rows: list[Any] = [{"type": "user", "uuid": "u-1",
                                 "message": {"role": "user", "content": "first"}}]

    def read_latest(self, thread_id: str, limit: int) -> Sequence[Mapping[str, Any]]:
        return list(reversed(self.rows))[:limit]


def test_a_malformed_node_row_is_skipped_and_the_link_keeps_working(gateway: Gateway) -> None:
    node = BadRowNode()
    assert gateway.adopt_remote("agent:main:node", node_id="n1", thread_id="t", reader=node)
    assert gateway.watch(WATCHER, "agent:main:node")
    node.rows += [None, "junk", {"type": "user", "uuid": "u-2", "timestamp": None,
                                 "message": {"role": "user", "content": "typed later"}}]
    assert [e.summary for e in gateway.scan_upstream()] == ["human message via claude"]


def test_markers_store_a_digest_never_transcript_bytes(gateway: Gateway, tmp_path: Path,
                                                       db_path: Path) -> None:
    path = _pi(tmp_path / "s.jsonl", pi_user("zqx-private-words-zqx"))
    _watched(gateway, "agent:main:pi", path)
    _append(path, pi_user("zqx-more-private-zqx"))
    assert len(gateway.scan_upstream()) == 1
    gateway.close()
    blob = b"".join(p.read_bytes() for p in db_path.parent.iterdir() if p.is_file())
    for secret in (b"zqx-private-words-zqx", b"zqx-more-private-zqx"):
        assert secret not in blob
        assert secret.hex().encode() not in blob
        assert secret[-10:].hex().encode() not in blob


def test_a_scan_in_the_middle_of_a_rewrite_never_counts_old_turns_again(
    gateway: Gateway, tmp_path: Path,
) -> None:
    path = _pi(tmp_path / "s.jsonl", pi_user("history"))
    _watched(gateway, "agent:main:pi", path)
    _append(path, pi_user("A") + pi_user("B"))
    assert gateway.scan_upstream()[0].payload["turns"] == 2
    content = path.read_bytes()
    with path.open("r+b") as handle:
        handle.truncate(0)  # the rewriter truncated the file ...
    assert gateway.scan_upstream() == []  # ... and a scan saw it empty
    path.write_bytes(content)  # then wrote the same bytes back
    assert gateway.scan_upstream() == []
    _append(path, pi_user("C"))
    assert [(e.payload or {}).get("turns") for e in gateway.scan_upstream()] == [None]  # only C


def test_pending_watches_survive_expiry_and_dormant_ones_do_not(
    open_gateway: Callable[..., Gateway], clock: ManualClock, tmp_path: Path,
) -> None:
    gw = open_gateway()
    gw.watch(WATCHER, "agent:main:busy")
    gw.watch(WATCHER, "agent:main:quiet")
    gw.human_message("agent:main:busy", channel="x")
    gw.close()
    clock.advance(31 * DAY_MS)
    gw = open_gateway()
    assert [t.split('"')[1] for t in gw.pending_notices(WATCHER)] == ["agent:main:busy"]
    assert gw.human_message("agent:main:quiet", channel="x") is None  # its watch expired


def test_an_alias_of_an_open_database_finds_the_gateway_already_there(
        open_gateway: Callable[..., Gateway], db_path: Path) -> None:
    gw = open_gateway()
    spawned = gw.spawn_subagent("agent:main:main", "agent:main:subagent:c", run_id="r")
    assert spawned is not None
    for _ in range(3):
        gw.human_message("agent:main:subagent:c", channel="c")
    alias = db_path.with_name("alias.sqlite")
    os.symlink(db_path, alias)
    other = Gateway.open(alias, monitor=False)  # the same presence lock: not alone
    other.close()
    gw.drain("agent:main:main")
    # Not re-frozen by the alias's open: the drain leaves exactly one follow-up.
    assert len(gw.pending_notices("agent:main:main")) == 1


def test_an_unreadable_opencode_session_is_reported_once_in_plain_words(
    open_gateway: Callable[..., Gateway], tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """Adopting from an OpenCode store of an unknown layout logged two lines, one with
    SQLite's own text (``SQLError: no such column: time_archived``); now one, in words."""
    import apsw

    store = tmp_path / "opencode.db"
    conn = apsw.Connection(str(store))
    conn.execute("CREATE TABLE session (id TEXT, parent_id TEXT, directory TEXT, title TEXT,"
                 " version TEXT, time_created INTEGER, time_updated INTEGER);"
                 " INSERT INTO session VALUES ('ses_a', NULL, '/w', 't', '1', 1, 2);")
    conn.close()
    gw = open_gateway()
    with caplog.at_level("INFO", logger="actors"):
        assert gw.adopt("agent:main:opencode:a", source="opencode", path=store,
                        thread_id="ses_a") is None
        assert gw.adopt("agent:main:opencode:b", source="opencode", path=store,
                        thread_id="ses_gone") is None
    why = ("an OpenCode database of a layout this release does not read (OpenCode 1.2 or "
           "newer is read)")
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        f"cannot adopt agent:main:opencode:a: cannot read {store}: {why}",
        f"cannot adopt agent:main:opencode:b: cannot read {store}: {why}"]


def test_a_watched_opencode_store_that_turns_unreadable_is_described_in_plain_words(
    open_gateway: Callable[..., Gateway], tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """The scan's warning named SQLite's error (``SQLError: no such table: session``)."""
    import apsw

    from actors.testing.samples import write_sample_catalog

    sample = write_sample_catalog(tmp_path)["opencode"]
    gw = open_gateway()
    assert gw.adopt("agent:main:opencode:demo", source="opencode", path=sample.path,
                    thread_id=sample.thread_id) is not None
    assert gw.watch(WATCHER, "agent:main:opencode:demo")
    other = tmp_path / "other.db"
    conn = apsw.Connection(str(other))
    conn.execute("CREATE TABLE notes (x)")
    conn.close()
    os.replace(other, sample.path)
    with caplog.at_level("WARNING", logger="actors"):
        assert gw.scan_upstream() == []
    assert [r.getMessage() for r in caplog.records] == [
        f"cannot read the OpenCode store {sample.path}: not an OpenCode database (it has no "
        "OpenCode session tables); its sessions get no news until it can be read again",
        "upstream scan of agent:main:opencode:demo: its OpenCode store cannot be queried "
        "(locked, corrupt or of an unknown schema); not counted as missing"]
    caplog.clear()
    with caplog.at_level("WARNING", logger="actors"):
        assert gw.scan_upstream() == []
    assert caplog.records == []  # once per episode, not at every scan
