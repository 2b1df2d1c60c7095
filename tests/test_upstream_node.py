"""Paired-node Claude Code threads read through a host-supplied reader (anchor §4.5 75, 78)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from actors import Gateway
from actors.upstream.claude.node import NODE_SCAN_LIMIT, scan_node
from actors.upstream.common import NO_OWN_TEXTS
from tests._upstream_rows import claude_assistant, claude_user
from tests.conftest import WATCHER

KEY = "agent:main:node:claude"


def _row(data: bytes, uuid: str | None) -> dict[str, Any]:
    row: dict[str, Any] = json.loads(data)
    if uuid is None:
        row.pop("uuid")
    else:
        row["uuid"] = uuid
    return row


class FakeNode:
    """A node transcript, newest last; ``read_latest`` answers newest first."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.calls: list[tuple[str, int]] = []
        self.fail = False

    def read_latest(self, thread_id: str, limit: int) -> Sequence[Mapping[str, Any]]:
        self.calls.append((thread_id, limit))
        if self.fail:
            raise ConnectionError("node offline")
        return list(reversed(self.items))[:limit]


def test_items_newer_than_the_marker_are_classified_and_the_marker_moves() -> None:
    node = FakeNode()
    node.items = [_row(claude_user("old"), "item-1"),
                  _row(claude_user("native prompt", timestamp="2026-07-13T10:07:00.000Z"),
                       "item-2"),
                  _row(claude_assistant("answer"), "item-3")]
    result = scan_node(node, "thread-1", {"uuid": "item-1"}, own_texts=NO_OWN_TEXTS, now=5)
    assert (result.kind, result.human_turns, result.next_marker, result.dedupe_id) == (
        "activity", 1, {"uuid": "item-3"}, "item-3")
    assert result.occurred_at == 1_783_937_220_000
    assert node.calls == [("thread-1", NODE_SCAN_LIMIT)]
    again = scan_node(node, "thread-1", {"uuid": "item-3"}, own_texts=NO_OWN_TEXTS, now=5)
    assert again.kind == "no_news"


def test_a_failing_reader_is_transient_and_never_missing() -> None:
    node = FakeNode()
    node.fail = True
    assert scan_node(node, "t", {"uuid": None}, own_texts=NO_OWN_TEXTS, now=0).kind == (
        "transient")


def test_adopt_remote_links_only_when_the_newest_item_has_a_uuid(gateway: Gateway) -> None:
    node = FakeNode()
    node.items = [_row(claude_user("no uuid"), None)]
    assert gateway.adopt_remote(KEY, node_id="n1", thread_id="t-1", reader=node) is None
    node.items = [_row(claude_user("anchored"), "u-9")]
    link = gateway.adopt_remote(KEY, node_id="n1", thread_id="t-1", reader=node)
    assert link is not None
    assert (link.host_id, link.marker) == ("node:n1", {"uuid": "u-9"})


def test_a_remote_turn_reaches_the_watcher_and_deletion_is_never_reported(
    gateway: Gateway,
) -> None:
    node = FakeNode()
    node.items = [_row(claude_user("anchored"), "u-1")]
    assert gateway.adopt_remote(KEY, node_id="n1", thread_id="t-1", reader=node) is not None
    assert gateway.watch(WATCHER, KEY)
    node.items.append(_row(claude_user("typed on the node"), "u-2"))
    assert [e.summary for e in gateway.scan_upstream()] == ["human message via claude"]
    assert len(gateway.pending_notices(WATCHER)) == 1
    node.items = []
    node.fail = True
    for _ in range(4):
        assert gateway.scan_upstream() == []


def test_scans_of_paired_node_links_reuse_the_reader_threads(gateway: Gateway) -> None:
    import threading

    node = FakeNode()
    node.items = [_row(claude_user("old"), "item-1")]
    keys = [f"{KEY}:{i}" for i in range(3)]
    for key in keys:
        assert gateway.adopt_remote(key, node_id="laptop", thread_id="t", reader=node)
        assert gateway.watch(WATCHER, key)
    gateway.scan_upstream()
    readers = {t for t in threading.enumerate() if t.name.startswith("ssa-node-reader")}
    for _ in range(5):  # paired-node links are read every cycle: no thread per read
        gateway.scan_upstream()
    after = {t for t in threading.enumerate() if t.name.startswith("ssa-node-reader")}
    assert readers
    assert after == readers
    assert len(node.calls) == 3 + 3 * 6
